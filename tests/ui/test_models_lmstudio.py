"""LM Studio's models listed where they are, on the real Models page over real files: while LM
Studio's models folder holds models the library does not list, *Use LM Studio's models (N)* adds
that folder (nothing is copied) and they are listed and loadable; then the button goes."""

from __future__ import annotations

from app.engine.models.tiny import write_tiny_gguf
from tests.ui.models_page_fixture import open_models_page

TEMPLATE = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"


def test_lm_studio_s_models_are_offered_and_listed_in_place(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    for page in open_models_page(qtbot, tmp_path, "http://127.0.0.1:9"):
        button = page.library.lmstudio_button
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
