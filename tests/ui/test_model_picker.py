"""The model picker lists the models library (models folder, added folders, imports), follows
the Models page (a finished download, an import) and loads what is picked on the worker."""

from __future__ import annotations

from pathlib import Path

import pytest
from PySide6.QtCore import Qt

from app.engine.models.tiny import write_tiny_gguf
from app.storage import paths
from app.storage.settings import Settings
from tests.support.fake_hub import FakeHub
from tests.ui.scripted_gguf import CHATML, streaming_script, write_scripted_gguf

TIMEOUT = 30_000
REPO = "acme/Picker-Tiny-GGUF"


def _stream_model(path: Path) -> Path:
    return write_scripted_gguf(path, chat_template=CHATML, script=streaming_script(), default_next="a")


def _labels(w) -> list[str]:
    return [w.model_picker.itemText(i) for i in range(w.model_picker.count())]


def _settings() -> Settings:
    s = Settings()
    s.sampling.max_tokens = 4
    return s


def test_picker_lists_the_library_and_switching_loads_on_the_worker(qtbot, make_window, tmp_path):
    models = paths.models_dir()
    alpha = _stream_model(models / "alpha.gguf")
    beta = _stream_model(models / "sub" / "beta.gguf")
    (models / "broken.gguf").write_bytes(b"GGUF but not really")
    w = make_window(alpha, settings=_settings())
    qtbot.waitUntil(lambda: "beta" in _labels(w), timeout=TIMEOUT)
    labels = _labels(w)
    assert labels.index("alpha") < labels.index("beta")
    assert "broken" not in labels  # a corrupt file is listed on the Models page with its error, not here
    assert labels[-1] == "Open a GGUF file…"
    assert w.model_picker.currentText() == "alpha" and w.model_picker.currentData() == str(alpha)
    # pick beta with the keyboard: the worker loads it, the picker and the chat follow
    w.model_picker.setFocus()
    with qtbot.waitSignal(w.sig_model_ready, timeout=TIMEOUT) as blocker:
        qtbot.keyClick(w.model_picker, Qt.Key.Key_Down)
    assert Path(blocker.args[0].path).resolve() == beta.resolve()
    assert Path(str(w.worker.model.path)).resolve() == beta.resolve()
    assert w.model_picker.currentText() == "beta"
    w.compose.setPlainText("hi")
    with qtbot.waitSignal(w.sig_turn_done, timeout=TIMEOUT):
        assert w.send()
    assert w.chat.current_assistant().text() == "abcd"


def test_the_models_page_says_loading_while_the_picker_loads_and_loaded_after(qtbot, make_window):
    models = paths.models_dir()
    alpha = _stream_model(models / "alpha.gguf")
    _stream_model(models / "beta.gguf")
    w = make_window(alpha, settings=_settings())
    w.act_models.trigger()
    page = w.stack.currentWidget()
    qtbot.waitUntil(lambda: {m.name for m in page.library.models} >= {"alpha", "beta"}, timeout=TIMEOUT)
    qtbot.waitUntil(lambda: page.load_button(page.library_row("alpha")).text() == "Loaded", timeout=TIMEOUT)

    def label(name: str) -> str:
        return page.load_button(page.library_row(name)).text()

    seen: list[tuple[str, str]] = []  # each time a load began, ended or failed: what the page said
    w.model_bar.sig_state_changed.connect(lambda: seen.append((label("alpha"), label("beta"))))
    assert _labels(w).index("beta") == _labels(w).index("alpha") + 1
    w.model_picker.setFocus()
    with qtbot.waitSignal(w.sig_model_ready, timeout=TIMEOUT):
        qtbot.keyClick(w.model_picker, Qt.Key.Key_Down)  # picks beta
    assert seen[0] == ("Loaded", "Loading…")  # alpha still answers until beta is in
    assert seen[-1] == ("Load now", "Loaded") == (label("alpha"), label("beta"))
    assert not page.load_button(page.library_row("beta")).isEnabled()


def test_picker_follows_an_import_on_the_models_page(qtbot, make_window, tmp_path):
    alpha = _stream_model(paths.models_dir() / "alpha.gguf")
    gamma = _stream_model(tmp_path / "elsewhere" / "gamma.gguf")
    w = make_window(alpha, settings=_settings())
    qtbot.waitUntil(lambda: "alpha" in _labels(w), timeout=TIMEOUT)
    assert "gamma" not in _labels(w)
    w.act_models.trigger()
    page = w.stack.currentWidget()
    page.import_file(gamma)  # in place, as the Import button does
    qtbot.waitUntil(lambda: "gamma" in _labels(w), timeout=TIMEOUT)
    i = _labels(w).index("gamma")
    assert Path(w.model_picker.itemData(i)).resolve() == gamma.resolve()
    assert w.model_picker.currentText() == "alpha"  # listing it does not load it


@pytest.fixture
def hub(tmp_path, monkeypatch):
    h = FakeHub()
    data = write_tiny_gguf(tmp_path / "src.gguf", chat_template=CHATML).read_bytes()
    h.add_repo(REPO, {"Picker-Tiny-Q8_0.gguf": data}, downloads=1)
    h.start()
    monkeypatch.setenv("HF_ENDPOINT", h.url)
    yield h
    h.stop()


def test_picker_follows_a_finished_download(qtbot, make_window, hub):
    alpha = _stream_model(paths.models_dir() / "alpha.gguf")
    w = make_window(alpha, settings=_settings())
    qtbot.waitUntil(lambda: "alpha" in _labels(w), timeout=TIMEOUT)
    w.act_models.trigger()
    page = w.stack.currentWidget()
    page.search_edit.setText("picker")
    with qtbot.waitSignal(page.sig_search_done, timeout=TIMEOUT):
        page.search_button.click()
    with qtbot.waitSignal(page.sig_files_done, timeout=TIMEOUT):
        page.results_list.setCurrentRow(0)
    assert "Picker-Tiny-Q8_0" not in _labels(w)
    page.files_table.cellWidget(0, 5).click()  # Download
    qtbot.waitUntil(lambda: "Picker-Tiny-Q8_0" in _labels(w), timeout=TIMEOUT)
    i = _labels(w).index("Picker-Tiny-Q8_0")
    assert paths.models_dir().resolve() in Path(w.model_picker.itemData(i)).resolve().parents
