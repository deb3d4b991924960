"""Other apps' models listed where they are, on the real Models page over real files: while LM
Studio's models folder holds models the library does not list, *Use LM Studio's models (N)* adds
that folder; while Ollama or Jan keeps models it does not, *Use Ollama's models (N)* / *Use Jan's
models (N)* links each under its name. Nothing is copied; the models are listed and loadable; then the button goes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.engine.models.tiny import write_tiny_gguf
from tests.ui.models_page_fixture import open_models_page

TEMPLATE = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"


@pytest.fixture
def page(qtbot, tmp_path, monkeypatch):
    """The Models page, LM Studio's and Ollama's folders looked for in this test's own."""
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "ollama store"))
    yield from open_models_page(qtbot, tmp_path, "http://127.0.0.1:9")


def test_lm_studio_s_models_are_offered_and_listed_in_place(qtbot, tmp_path, page):
    button = page.library.others.lmstudio_button
    assert button.isHidden()  # no LM Studio here

    models = tmp_path / ".lmstudio" / "models" / "someone" / "Tiny-GGUF"
    models.mkdir(parents=True)
    model = write_tiny_gguf(models / "Tiny-Q8_0.gguf", chat_template=TEMPLATE)
    write_tiny_gguf(models / "mmproj-Tiny-f16.gguf")  # a projector: not a model to count
    with qtbot.waitSignal(page.sig_library_done, timeout=30_000):
        page.refresh_library()
    assert not button.isHidden() and button.text() == "Use LM Studio's models (1)"
    assert str(tmp_path / ".lmstudio" / "models") in button.toolTip()

    with qtbot.waitSignal(page.sig_library_done, timeout=30_000):
        button.click()
    assert "LM Studio's models are listed where they are" in page.status_label.text()
    row = page.library_row("Tiny-Q8_0")
    assert row is not None and page.load_button(row).isEnabled()
    assert model.is_file() and not list((tmp_path / "models").rglob("*.gguf"))  # nothing copied
    assert button.isHidden()  # listed now: nothing more to offer


def test_ollama_s_models_are_offered_and_listed_by_their_names(qtbot, tmp_path, page):
    from tests.support.ollama_store import add_ollama_model

    store = tmp_path / "ollama store"
    gguf = write_tiny_gguf(tmp_path / "tiny.gguf", chat_template=TEMPLATE).read_bytes()
    button = page.library.others.ollama_button
    assert button.isHidden()  # no Ollama here

    add_ollama_model(store, "registry.ollama.ai/library/tiny/latest", gguf)
    add_ollama_model(store, "registry.ollama.ai/someone/helper/q8", gguf + b"\0")
    with qtbot.waitSignal(page.sig_library_done, timeout=30_000):
        page.refresh_library()
    assert not button.isHidden() and button.text() == "Use Ollama's models (2)"
    assert "tiny:latest" in button.toolTip() and "someone/helper:q8" in button.toolTip()

    with qtbot.waitSignal(page.sig_library_done, timeout=30_000):
        button.click()
    assert page.status_label.text() == "Ollama's models are listed where they are (2); nothing was copied."
    for name in ("tiny-latest", "someone-helper-q8"):
        row = page.library_row(name)
        assert row is not None and page.load_button(row).isEnabled()
    assert button.isHidden()
    blobs = list((store / "blobs").iterdir())
    linked = list((tmp_path / "models" / "ollama").rglob("*.gguf"))
    assert len(linked) == 2 and all(any(os.path.samefile(p, b) for b in blobs) for p in linked)  # links

    # its row: Delete file is Ollama's to do; Remove takes the links away, Ollama keeps the model
    row = page.library_row("tiny-latest")
    assert page.library_table.item(row, 8).text() == "Ollama's (linked)"
    assert not page.delete_button(row).isEnabled()
    page.remove_button(row).click()
    assert page.status_label.text() == "Removed tiny-latest from the library; Ollama still has it."
    qtbot.waitUntil(lambda: "tiny-latest" not in {m.name for m in page.library.models}, timeout=30_000)
    assert all(b.is_file() for b in blobs) and button.text() == "Use Ollama's models (1)"

    # a model pulled in Ollama later is offered with it
    add_ollama_model(store, "registry.ollama.ai/library/newer/1b", gguf + b"\0\0")
    with qtbot.waitSignal(page.sig_library_done, timeout=30_000):
        page.refresh_library()
    assert button.text() == "Use Ollama's models (2)"


def test_an_ollama_model_s_modelfile_settings_come_as_a_made_model(qtbot, tmp_path, page):
    from app.server import PresetStore, default_presets_path
    from tests.support.ollama_store import add_ollama_model

    gguf = write_tiny_gguf(tmp_path / "tiny.gguf", chat_template=TEMPLATE).read_bytes()
    add_ollama_model(
        tmp_path / "ollama store",
        "registry.ollama.ai/library/mario/latest",
        gguf,
        params=b'{"temperature": 0.8, "stop": ["<|im_end|>"]}',
        system=b"You are Mario.",
    )
    add_ollama_model(tmp_path / "ollama store", "registry.ollama.ai/library/plain/1b", gguf + b"\0")
    with qtbot.waitSignal(page.sig_library_done, timeout=30_000):
        page.refresh_library()
    with qtbot.waitSignal(page.sig_library_done, timeout=30_000):
        page.library.others.ollama_button.click()
    assert page.status_label.text() == (
        "Ollama's models are listed where they are (2); nothing was copied. With their Modelfile "
        "settings (system prompt, parameters) as made models: mario."
    )
    mario = PresetStore(default_presets_path()).get("mario")  # where the picker and the server read them
    assert mario is not None and mario.system == "You are Mario." and mario.parameters["temperature"] == 0.8
    assert Path(mario.base) == next((tmp_path / "models" / "ollama").rglob("mario-latest.gguf"))
    assert PresetStore(default_presets_path()).get("plain:1b") is None  # (only its stops: the file will do)


def test_jan_s_models_are_offered_and_linked_by_their_ids(qtbot, tmp_path, page):
    from tests.engine.models.test_jan_store import _jan_model

    data = Path(os.environ["XDG_DATA_HOME"]) / "Jan" / "data"
    button = page.library.others.jan_button
    assert button.isHidden()  # no Jan here
    _jan_model(data, "unsloth/tiny-1b")
    with qtbot.waitSignal(page.sig_library_done, timeout=30_000):
        page.refresh_library()
    assert not button.isHidden() and button.text() == "Use Jan's models (1)"
    assert "unsloth/tiny-1b" in button.toolTip()

    with qtbot.waitSignal(page.sig_library_done, timeout=30_000):
        button.click()
    assert page.status_label.text() == "Jan's models are listed where they are (1); nothing was copied."
    row = page.library_row("unsloth-tiny-1b")
    assert row is not None and page.load_button(row).isEnabled() and button.isHidden()
    assert (
        page.library_table.item(row, 8).text() == "Jan's (linked)" and not page.delete_button(row).isEnabled()
    )
    page.remove_button(row).click()
    assert page.status_label.text() == "Removed unsloth-tiny-1b from the library; Jan still has it."
    assert (data / "llamacpp" / "models" / "unsloth" / "tiny-1b" / "model.gguf").is_file()


def test_the_first_contact_hint_offers_the_models_other_apps_keep(qtbot, make_window, tmp_path, monkeypatch):
    from tests.support.ollama_store import add_ollama_model

    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("OLLAMA_MODELS", str(tmp_path / "ollama"))
    w = make_window(None)
    assert w._chat_page.no_model.isVisible() and not w._chat_page.others_button.isVisible()  # none here

    models = tmp_path / ".lmstudio" / "models" / "someone" / "Tiny-GGUF"
    models.mkdir(parents=True)
    gguf = write_tiny_gguf(models / "Tiny-Q8_0.gguf", chat_template=TEMPLATE)
    add_ollama_model(tmp_path / "ollama", "registry.ollama.ai/library/helper/1b", gguf.read_bytes() + b"\0")
    from tests.engine.models.test_jan_store import _jan_model

    _jan_model(Path(os.environ["XDG_DATA_HOME"]) / "Jan" / "data", "qwen3-4b")
    w2 = make_window(None)
    others = w2._chat_page.others_button
    assert others.isVisible() and others.text() == "Use your LM Studio, Ollama and Jan models"

    others.click()
    page = w2.models_page()
    assert w2.page_stack.current_page() == "models" and not others.isVisible()
    qtbot.waitUntil(
        lambda: {"helper-1b", "Tiny-Q8_0", "qwen3-4b"} <= {m.name for m in page.library.models},
        timeout=30_000,
    )
    said = page.status_label.text()
    assert all(f"{app}'s models are listed" in said for app in ("LM Studio", "Ollama", "Jan"))
