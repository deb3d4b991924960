"""The Models page for a newcomer: what a newcomer meets, on the real page, a real local hub
(HTTP on 127.0.0.1, ``tests/support/fake_hub.py``) and real files; and the recommended list."""

from __future__ import annotations

import json
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from PySide6.QtCore import Qt  # noqa: E402

from app.engine.detection import detect_tool_format  # noqa: E402
from app.engine.models.recommended import recommended_models  # noqa: E402
from app.engine.models.tiny import write_tiny_gguf  # noqa: E402
from tests.support.fake_hub import FakeHub  # noqa: E402
from tests.ui.models_page_fixture import open_models_page  # noqa: E402

TEMPLATE = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates"
QWEN = "Qwen/Qwen3-0.6B-GGUF"
BIG = "someone/Huge-70B-GGUF"


@pytest.fixture
def hub(tmp_path):
    def model(seed: int) -> bytes:
        return write_tiny_gguf(tmp_path / f"src{seed}.gguf", seed=seed, chat_template=TEMPLATE).read_bytes()

    h = FakeHub()
    h.add_repo(QWEN, {"Qwen3-0.6B-Q8_0.gguf": model(0), "Qwen3-0.6B-Q4_K_M.gguf": model(1)}, downloads=10)
    h.add_repo(
        BIG,
        {"Huge-70B-Q4_K_M.gguf": model(2)},
        downloads=5,
        declared_sizes={"Huge-70B-Q4_K_M.gguf": 40 * 1024**4},
    )
    h.start()
    yield h
    h.stop()


@pytest.fixture
def page(qtbot, hub, tmp_path):
    yield from open_models_page(qtbot, tmp_path, hub.url, size=(1100, 760), backoff_base=0.01)


def _search_and_open(qtbot, page, text, row=0):
    page.search_edit.setText(text)
    with qtbot.waitSignal(page.sig_search_done, timeout=30_000):
        page.search_button.click()
    with qtbot.waitSignal(page.sig_files_done, timeout=30_000):
        page.results_list.setCurrentRow(row)


def test_recommended_list_is_data_with_a_detected_tool_format_for_each_model():
    models = recommended_models()
    names = " ".join(m.name for m in models)
    for wanted in (
        "Qwen3 0.6B",
        "Qwen3 1.7B",
        "Qwen3 4B",
        "Qwen3.5 4B",
        "Llama 3.2 3B",
        "Granite 4",
        "Gemma 4",
        "gpt-oss 20B",
        "Mistral Small",
    ):
        assert wanted in names
    for m in models:
        assert m.why and m.quantization and m.size_gb > 0 and m.file.endswith(".gguf")
        template = (FIXTURES / m.template).read_text(encoding="utf-8")
        assert detect_tool_format(template) == m.tool_format, m.name


def test_recommended_model_downloads_in_one_click_with_its_fit_badge(qtbot, page, hub):
    t = page.recommended_table
    assert t.rowCount() == len(recommended_models())
    fits = {t.item(r, 3).text() for r in range(t.rowCount())}
    assert fits <= {"fits", "tight", "too large"} and "fits" in fits
    assert page.sources.currentIndex() == 0 and "Recommended" in page.sources.tabText(0)
    with qtbot.waitSignal(page.sig_library_done, timeout=30000, check_params_cb=lambda: bool(page._local)):
        page.recommended_button("Qwen3 0.6B").click()
    assert (tid := next(iter(page._rows))) is not None and page.download_status(tid) == "done"
    assert hub.count("GET", "Qwen3-0.6B-Q8_0.gguf") >= 1 and hub.count("GET", "Q4_K_M") == 0
    # now it is in the library: the row offers to load it instead of downloading again
    qtbot.waitUntil(lambda: page.recommended_button("Qwen3 0.6B").text() == "Load now", timeout=30_000)


def test_recommended_reasons_wrap_whole_at_any_width(qtbot, page):
    from PySide6.QtWidgets import QApplication

    t = page.recommended_table

    def heights() -> list[int]:
        QApplication.processEvents()
        return [t.rowHeight(r) for r in range(t.rowCount())]

    def fitted() -> bool:  # each row as tall as its reason needs at the table's width now
        return heights() == [t.sizeHintForRow(r) for r in range(t.rowCount())]

    page.window().resize(1600, 760)
    qtbot.waitUntil(lambda: t.viewport().width() > 1000 and fitted())
    wide = heights()
    page.window().resize(800, 600)
    qtbot.waitUntil(lambda: t.viewport().width() < 800 and fitted())
    narrow = heights()
    # a narrow window makes the long reasons taller
    pairs = list(zip(narrow, wide, strict=True))
    assert all(n >= w for n, w in pairs) and any(n > w for n, w in pairs)
    assert t.textElideMode() == Qt.TextElideMode.ElideRight  # where it is cut at all, at its end


def test_d29_library_name_column_is_never_squeezed_and_errors_are_an_icon(qtbot, page, tmp_path):
    from PySide6.QtWidgets import QApplication

    folder = tmp_path / "mine"
    folder.mkdir()
    write_tiny_gguf(folder / "SmolLM2-135M-Instruct.Q4_1.gguf", chat_template=TEMPLATE)
    (folder / "truncated.gguf").write_bytes(b"GGUF\x03\x00")
    page.manager.library.add_folder(folder)
    with qtbot.waitSignal(page.sig_library_done, timeout=30_000):
        page.refresh_library()
    t = page.library_table
    for width in (1400, 520):  # 520: the page's share of an 800 x 600 window
        page.resize(width, 600)
        QApplication.processEvents()  # the resize and the header's layout of its sections
        page._fit_library_columns()
        QApplication.processEvents()
        assert page.width() == width
        assert t.horizontalScrollBar().maximum() == 0 or not t.horizontalScrollBar().isVisible()
        assert t.columnWidth(0) >= page.NAME_MIN_WIDTH  # "SmolLM2-135M-Instruct.Q4_1", not "Sm…"
        for r in range(t.rowCount()):
            assert not t.isColumnHidden(9) and t.cellWidget(r, 9) is not None  # Load stays reachable
    bad = page.library_row("truncated")
    assert not t.item(bad, 0).icon().isNull() and "GGUF" in t.item(bad, 0).toolTip()
    assert all("GGUF" not in (t.item(bad, c).text() if t.item(bad, c) else "") for c in range(1, 9))
    assert not page.load_button(bad).isEnabled()


def test_d30_too_large_model_asks_before_downloading(qtbot, page, hub):
    _search_and_open(qtbot, page, "huge")
    assert page.files_table.item(0, 4).text() == "too large"
    asked = []
    page.confirm = lambda title, text: asked.append(text) or False
    page.files_table.cellWidget(0, 5).click()
    assert asked and "more than this computer has" in asked[0]
    assert page._rows == {} and hub.count("GET", ".gguf") == 0  # no model file (the card, README.md, is read)


def test_d31_files_already_in_the_library_are_marked_in_search_results(qtbot, page, hub):
    _search_and_open(qtbot, page, "qwen")
    row = next(
        r
        for r in range(page.files_table.rowCount())
        if page.files_table.item(r, 0).text() == "Qwen3-0.6B-Q8_0"
    )
    with qtbot.waitSignal(page.sig_library_done, timeout=30000, check_params_cb=lambda: bool(page._local)):
        page.files_table.cellWidget(row, 5).click()
    row = next(
        r
        for r in range(page.files_table.rowCount())
        if page.files_table.item(r, 0).text() == "Qwen3-0.6B-Q8_0"
    )
    assert page.files_table.cellWidget(row, 5).text() == "Load now"
    before = hub.count("GET", "Qwen3-0.6B-Q8_0.gguf")
    with qtbot.waitSignal(page.sig_load_requested, timeout=30_000):
        page.files_table.cellWidget(row, 5).click()  # loads; no second download
    assert hub.count("GET", "Qwen3-0.6B-Q8_0.gguf") == before


def test_d33_remove_from_library_keeps_the_file_and_delete_defaults_to_cancel(qtbot, page, tmp_path):
    src = write_tiny_gguf(tmp_path / "mine.gguf", chat_template=TEMPLATE)
    with qtbot.waitSignal(page.sig_library_done, timeout=30_000):
        page.import_file(src)
    row = page.library_row("mine")
    assert page.delete_button(row).text() == "Delete file"
    assert page.remove_button(row).text() == "Remove"
    assert page.remove_button(row).toolTip().startswith("Remove from library")
    with qtbot.waitSignal(page.sig_library_done, timeout=30_000):
        page.remove_button(row).click()
    assert src.exists() and all(m.path != src for m in page._local)
    # the confirmation's default button is Cancel
    from PySide6.QtCore import QTimer
    from PySide6.QtWidgets import QApplication, QMessageBox

    seen = {}

    def answer() -> None:
        box = next(w for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible())
        seen["default"] = box.defaultButton() is box.button(QMessageBox.StandardButton.Cancel)
        box.defaultButton().click()

    QTimer.singleShot(200, answer)
    assert page._confirm_dialog("Delete model", "Delete it?") is False
    assert seen["default"] is True


def test_d7_deleting_the_loaded_model_says_so(qtbot, page, tmp_path):
    _search_and_open(qtbot, page, "qwen")
    with qtbot.waitSignal(page.sig_library_done, timeout=30000, check_params_cb=lambda: bool(page._local)):
        page.files_table.cellWidget(0, 5).click()
    m = next(m for m in page._local if m.usable)
    page.set_loaded_path(str(m.path))
    row = page.library_row(m.name)
    assert page.load_button(row).text() == "Loaded" and not page.load_button(row).isEnabled()
    asked = []
    page.confirm = lambda title, text: asked.append(text) or False
    page.delete_button(row).click()
    assert "uses now" in asked[0] and m.path.exists()


def test_the_model_being_loaded_says_loading_everywhere_it_is_offered(qtbot, page, tmp_path):
    from PySide6.QtWidgets import QMenu

    _search_and_open(qtbot, page, "qwen")
    with qtbot.waitSignal(page.sig_library_done, timeout=30000, check_params_cb=lambda: bool(page._local)):
        page.files_table.cellWidget(0, 5).click()
    m = next(m for m in page._local if m.usable)
    row = page.library_row(m.name)
    assert (
        page.load_button(row).text() == "Load now" and page.files_table.cellWidget(0, 5).text() == "Load now"
    )

    page.set_loaded_path(None, str(m.path))  # the chat began loading it: a second click would load it again
    row = page.library_row(m.name)
    for button in (page.load_button(row), page.files_table.cellWidget(0, 5)):
        assert button.text() == "Loading…" and not button.isEnabled()
    assert page.load_button(row).toolTip() == "The chat is loading this model."
    menu = QMenu(page.library)
    page.library.fill_menu(menu, page.library.models[row])
    (loading,) = [a for a in menu.actions() if a.text() == "Loading…"]
    assert not loading.isEnabled()

    page.set_loaded_path(str(m.path))  # it loaded
    row = page.library_row(m.name)
    for button in (page.load_button(row), page.files_table.cellWidget(0, 5)):
        assert button.text() == "Loaded" and not button.isEnabled()
    page.set_loaded_path(None)  # it failed, or another model took its place
    assert page.load_button(page.library_row(m.name)).text() == "Load now"
    assert page.load_button(page.library_row(m.name)).isEnabled()


def test_d35_clear_finished_downloads(qtbot, page, hub):
    _search_and_open(qtbot, page, "qwen")
    with qtbot.waitSignal(page.sig_library_done, timeout=30000, check_params_cb=lambda: bool(page._local)):
        page.files_table.cellWidget(0, 5).click()
    assert page.downloads_table.rowCount() == 1
    page.clear_button.click()
    assert page.downloads_table.rowCount() == 0 and page.status_label.text() == ""


def test_d32_download_indicator_and_quit_warning(qtbot, page, hub):
    hub.hold_after["Qwen3-0.6B-Q8_0.gguf"] = 1000
    seen = []
    page.sig_downloads.connect(lambda n, f: seen.append(n))
    _search_and_open(qtbot, page, "qwen")
    row = next(
        r
        for r in range(page.files_table.rowCount())
        if page.files_table.item(r, 0).text() == "Qwen3-0.6B-Q8_0"
    )
    page.files_table.cellWidget(row, 5).click()
    qtbot.waitUntil(lambda: hub.held.is_set() and bool(page.running_downloads()), timeout=30_000)
    assert seen and seen[-1] == 1
    asked = []
    page.confirm = lambda title, text: asked.append(text) or False
    assert page.confirm_quit() is False and "still downloading" in asked[0]
    hub.release.set()
    qtbot.waitUntil(lambda: not page.running_downloads(), timeout=30_000)
    assert page.confirm_quit() is True
    assert json.dumps(seen[-1]) == "0"


def test_a_models_menu_shows_it_in_its_folder_copies_its_path_and_loads_it(qtbot, page, tmp_path):
    from PySide6.QtWidgets import QApplication, QMenu

    from app.ui.models_page.library import reveal_command

    src = write_tiny_gguf(tmp_path / "my models" / "mine.gguf", chat_template=TEMPLATE)
    with qtbot.waitSignal(page.sig_library_done, timeout=30_000):
        page.import_file(src)
    lib = page.library
    model = lib.models[page.library_row("mine")]
    menu = QMenu(lib)
    lib.fill_menu(menu, model)
    actions = {a.text(): a for a in menu.actions() if a.text()}
    assert list(actions) == ["Load now", "Show in folder", "Copy path", "Remove from library", "Delete file…"]

    shown: list[Path] = []
    lib.reveal = shown.append
    actions["Show in folder"].trigger()
    assert shown == [src.resolve()]
    actions["Copy path"].trigger()
    assert QApplication.clipboard().text() == str(src.resolve())
    assert "Copied the path of mine" in page.status_label.text()
    with qtbot.waitSignal(page.sig_load_requested, timeout=5_000) as load:
        actions["Load now"].trigger()
    assert load.args == [str(src.resolve())]

    page.set_loaded_path(str(src.resolve()))
    menu = QMenu(lib)
    lib.fill_menu(menu, lib.models[page.library_row("mine")])
    (loaded,) = [a for a in menu.actions() if a.text() == "Loaded"]
    assert not loaded.isEnabled()

    # the file selected in the desktop's own file manager; elsewhere its folder opens
    path = Path("C:/Users/ann/My Models/mine.gguf")
    assert reveal_command(path, "win32") == ("explorer", ["/select,", str(path)])
    assert reveal_command(path, "darwin") == ("open", ["-R", str(path)])
    assert reveal_command(path, "linux") is None
    opened = []
    from app.ui.models_page.library import reveal

    reveal(src, open_url=opened.append, platform="linux")
    assert [u.toLocalFile() for u in opened] == [str(src.parent)]
