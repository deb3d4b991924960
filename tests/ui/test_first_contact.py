"""First contact and the window's look (issue 28, Must show 5; defects U4, U7, U10, U12, U13, U15,
U16, U17, U18, U19, U20): the real window, offscreen."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QEvent, QObject, QPoint, Qt
from PySide6.QtWidgets import QAbstractButton, QApplication, QDialogButtonBox, QLabel, QWidget

from app.storage.settings import Settings
from app.ui.theme import apply_theme

TIMEOUT = 60_000


@pytest.fixture
def themed():
    app = QApplication.instance()
    style, pal, sheet = app.style().name(), app.palette(), app.styleSheet()
    yield lambda theme: apply_theme(app, theme)
    apply_theme(app, "system")
    app.setStyle(style)
    app.setPalette(pal)
    app.setStyleSheet(sheet)


def _fully_shown(widget: QWidget, window: QWidget) -> bool:
    """Visible, and within the window's width (no sideways scrolling needed to reach it)."""
    if not widget.isVisible():
        return False
    left = widget.mapTo(window, QPoint(0, 0)).x()
    return left >= 0 and left + widget.width() <= window.width()


def _within_viewport(widget: QWidget, window: QWidget) -> bool:
    """Shown and not past the right edge of whatever scroll area or table holds it."""
    if not _fully_shown(widget, window):
        return False
    parent = widget.parentWidget()
    while parent is not None and parent is not window:
        left = widget.mapTo(parent, QPoint(0, 0)).x()
        if left + widget.width() > parent.width() + 1 or left < -1:
            return False
        parent = parent.parentWidget()
    return True


# -- U16 / Must show 5: with no model, the chat points to the recommended models and Import ----------------


def test_u16_with_no_model_the_empty_chat_points_to_the_recommended_models_and_import(qtbot, make_window):
    w = make_window(None, settings=Settings())
    page = w._chat_page
    assert page.no_model is not None and page.no_model.isVisible()
    assert page.recommended_button.isVisible() and page.import_button.isVisible()
    qtbot.mouseClick(page.recommended_button, Qt.MouseButton.LeftButton)
    models = w.pages["models"].widget
    assert w.stack.currentWidget() is models and models.sources.currentIndex() == 0
    picker = [w.model_picker.itemText(i) for i in range(w.model_picker.count())]
    assert "Download a model…" in picker


def test_u16_the_hint_goes_once_a_model_is_loaded(qtbot, make_window, streaming_model):
    w = make_window(streaming_model, settings=Settings())
    assert not w._chat_page.no_model.isVisible()


# -- U4: an imported model with nothing loaded: the picker does not claim it is loaded ------------------------


def test_u4_after_an_import_with_no_model_the_picker_says_no_model_is_loaded(
    qtbot, make_window, streaming_model
):
    w = make_window(None, settings=Settings())
    w.model_bar.add_to_library(streaming_model)
    qtbot.waitUntil(
        lambda: any("stream" in w.model_picker.itemText(i) for i in range(w.model_picker.count()))
    )
    assert w.model_info is None
    assert w.model_picker.currentText() == "No model loaded" and w.model_picker.currentData() is None


# -- U15: the same name in two folders ---------------------------------------------------------------------


def test_u15_two_files_of_one_name_are_told_apart(qtbot, make_window, tmp_path):
    from tests.ui.scripted_gguf import CHATML, streaming_script, write_scripted_gguf

    a, b = tmp_path / "one", tmp_path / "two"
    a.mkdir()
    b.mkdir()
    paths = [
        write_scripted_gguf(
            d / "same.gguf", chat_template=CHATML, script=streaming_script(), default_next="a"
        )
        for d in (a, b)
    ]
    s = Settings()
    s.model.recent_models = [str(p) for p in paths]
    w = make_window(None, settings=s)
    labels = [w.model_picker.itemText(i) for i in range(w.model_picker.count())]
    assert "same — one" in labels and "same — two" in labels


# -- U19: Help has About, Open log folder and Documentation --------------------------------------------------------


def test_u19_help_has_about_log_folder_and_documentation(qtbot, make_window):
    from app import __version__
    from app.storage.paths import data_dir, log_dir

    w = make_window(None, settings=Settings())
    names = [a.text() for a in w.menus.help_menu.actions() if a.text()]
    assert names == ["Keyboard shortcuts", "Documentation", "Open log folder", "About Callisto"]
    opened = []
    w.menus.open_url = lambda url: opened.append(url.toLocalFile())
    w.menus.act_logs.trigger()
    w.menus.act_docs.trigger()
    assert opened[0] == str(log_dir())
    assert opened[1].endswith(("README.md", "docs"))
    box = w.menus.show_about()
    text = box.text()
    assert __version__ in text and "llama" in text and str(data_dir()) in text
    box.close()


# -- U13: the tool panel's hint fits the setup ---------------------------------------------------------------------


def test_u13_tool_panel_hint_follows_the_workspace_and_tools(qtbot, make_window, tool_model, tmp_path):
    s = Settings()
    w = make_window(tool_model("calculator", '{"expression": "6*7"}'), settings=s)
    assert "Set a workspace folder" in w.tool_panel.detail_text()
    ws = tmp_path / "ws"
    ws.mkdir()
    dlg = w.open_settings("tools.workspace")
    dlg.workspace.setText(str(ws))
    with qtbot.waitSignal(w.sig_model_ready, timeout=TIMEOUT):
        dlg.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Save).click()
    text = w.tool_panel.detail_text()
    assert str(ws) in text and "Set a workspace folder" not in text
    dlg = w.open_settings("chat.tool_format")
    dlg.tool_format.setCurrentIndex(dlg.tool_format.findData("none"))
    with qtbot.waitSignal(w.sig_model_ready, timeout=TIMEOUT):
        dlg.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Save).click()
    qtbot.waitUntil(lambda: "Tools are off" in w.tool_panel.detail_text(), timeout=TIMEOUT)


# -- U14: Required is not offered without tools -----------------------------------------------------------------


def test_u14_required_is_not_offered_when_no_tools_are_on(qtbot):
    from app.ui.tool_choice import ToolChoiceBox

    box = ToolChoiceBox("required")
    qtbot.addWidget(box)
    box.set_tools([])
    assert box.value() == "auto"
    box.set_value("required")
    assert box.value() == "auto"  # not offered: it would fail every message
    box.set_tools(["calculator"])
    box.set_value("required")
    assert box.value() == "required"


# -- U20: the Check page uses the chat's format -------------------------------------------------------------------


def test_u20_the_check_page_uses_the_chats_tool_format(qtbot, make_window):
    s = Settings()
    s.chat.tool_format = "hermes"
    w = make_window(None, settings=s)
    page = w.show_page("check")
    assert page.format_combo.currentData() == "hermes"
    dlg = w.open_settings("chat.tool_format")
    dlg.tool_format.setCurrentIndex(dlg.tool_format.findData("llama3"))
    dlg.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Save).click()
    assert page.format_combo.currentData() == "llama3"


# -- U10 / U17 / Must show 5: 800x600 on every page ---------------------------------------------------------------


def test_u10_u17_every_pages_primary_actions_are_reachable_at_800x600(qtbot, make_window, streaming_model):
    w = make_window(streaming_model, settings=Settings())
    w.tool_dock.setVisible(True)
    w.resize(800, 600)
    qtbot.waitUntil(lambda: w.width() <= 800 and w.height() <= 600)

    def check(key: str, widgets: list[QWidget]) -> None:
        w.show_page(key)
        QApplication.processEvents()
        assert w.width() <= 800, (key, w.width())  # the window did not grow past it
        for widget in widgets:
            assert _within_viewport(widget, w), (key, widget.objectName() or widget.text(), widget.geometry())

    check("chat", [w.send_button, w.tool_choice_box, w.compose])
    # U17: the message box keeps its room with the panel open (the controls go under it when narrow)
    assert w.compose.height() >= 40 and w.compose.width() >= 250, w.compose.size()
    models = w.show_page("models")
    w.model_bar.add_to_library(streaming_model)
    qtbot.waitUntil(lambda: models.library_table.rowCount() > 0, timeout=TIMEOUT)
    QApplication.processEvents()
    row = 0
    from app.engine.models.recommended import recommended_models

    download = models.recommended_button(recommended_models()[0].name)
    check("models", [models.import_button, download, models.load_button(row), models.delete_button(row)])
    server = w.show_page("server")
    check("server", [server.toggle, server.new_key, server.api_key])
    check_page = w.show_page("check")
    check("check", [check_page.run_button, check_page.stop_button])


def test_u17_the_message_box_keeps_its_room_at_every_window_width(qtbot, make_window, streaming_model):
    """With the side panel open, the chat column of a mid-sized window was wide enough for one line
    but not for the tool choice, the thinking control and its budget beside the box: the box was a
    strip. At every width the controls go under the box before it gets that narrow."""
    w = make_window(streaming_model, settings=Settings())
    w.tool_dock.setVisible(True)
    for width in (800, 900, 1000, 1100, 1200, 1300, 1500, 1800):
        w.resize(width, 760)
        qtbot.waitUntil(lambda width=width: w.width() == width)
        QApplication.processEvents()
        assert w.compose.width() >= 300, (width, w.compose.size())
        assert _within_viewport(w.send_button, w), (width, w.send_button.geometry())


def test_u17_the_empty_chat_hint_wraps_instead_of_being_cut(qtbot, make_window, streaming_model):
    w = make_window(streaming_model, settings=Settings())
    w.tool_dock.setVisible(True)
    w.resize(800, 600)
    qtbot.waitUntil(lambda: w.width() <= 800)
    QApplication.processEvents()
    hint = w.chat.findChild(QLabel, "emptyHint")
    assert hint is not None and hint.isVisible()
    assert hint.width() <= w.chat.viewport().width()
    assert hint.height() >= hint.heightForWidth(hint.width()), (
        hint.size(),
        hint.heightForWidth(hint.width()),
    )
    assert hint.fontMetrics().horizontalAdvance(hint.text()) > hint.width()  # it does need to wrap here


# -- U7 / Must show 5: a theme switch at run time recolours every icon ------------------------------------------------


@pytest.mark.parametrize(("start", "switch_to"), [("light", "dark"), ("dark", "light")])
def test_u7_a_theme_switch_recolours_every_icon(qtbot, make_window, themed, start, switch_to):
    from app.ui.icons import icon, icon_colour

    themed(start)
    s = Settings()
    s.window.theme = start
    w = make_window(None, settings=s)
    before = {a.text(): icon_colour(a.icon()) for a in w.sidebar.actions() if not a.icon().isNull()}
    assert before
    dlg = w.open_settings("window.theme")
    dlg.theme.setCurrentIndex(dlg.theme.findData(switch_to))
    dlg.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Save).click()
    fresh = icon_colour(icon("chat"))  # an icon drawn now, as at start-up in that theme
    for action in [*w.sidebar.actions(), w.act_conversations, w.act_panel]:
        if action.icon().isNull():
            continue
        assert icon_colour(action.icon()) == fresh != before.get(action.text(), None), action.text()


# -- U18: Settings closes before the theme is applied -------------------------------------------------------------


class _PaletteWatch(QObject):
    def __init__(self, dialog: QWidget) -> None:
        super().__init__()
        self.dialog = dialog
        self.dialog_visible_then: list[bool] = []
        self.cursor_then: list = []

    def eventFilter(self, obj, event):  # noqa: N802
        if event.type() == QEvent.Type.ApplicationPaletteChange and obj is QApplication.instance():
            self.dialog_visible_then.append(self.dialog.isVisible())
            cursor = QApplication.overrideCursor()
            self.cursor_then.append(cursor.shape() if cursor is not None else None)
        return False


def test_u18_settings_closes_at_once_when_the_theme_changes(qtbot, make_window, themed):
    themed("light")
    w = make_window(None, settings=Settings())
    dlg = w.open_settings("window.theme")
    dlg.theme.setCurrentIndex(dlg.theme.findData("dark"))
    watch = _PaletteWatch(dlg)
    app = QApplication.instance()
    app.installEventFilter(watch)
    try:
        dlg.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Save).click()
    finally:
        app.removeEventFilter(watch)
    assert watch.dialog_visible_then and not any(watch.dialog_visible_then)
    assert set(watch.cursor_then) == {Qt.CursorShape.WaitCursor}  # busy while the theme is applied
    assert QApplication.overrideCursor() is None  # and no longer after
    assert app.property("callistoDark") is True


# -- U12 / Must show 5: disabled controls look disabled in both themes ----------------------------------------------


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_u12_disabled_buttons_look_disabled(qtbot, make_window, themed, theme):
    themed(theme)
    w = make_window(None, settings=Settings())
    w.new_chat()
    off = [b for b in w.findChildren(QAbstractButton) if b.text() in ("Rename", "Delete") and b.isVisible()]
    assert off and all(not b.isEnabled() for b in off)  # an unsaved chat cannot be renamed or deleted

    def text_contrast(b: QAbstractButton) -> int:
        """How far the button's farthest colour (its text) is from its own background."""
        img = b.grab().toImage()
        bg = img.pixelColor(img.width() // 2, 3)
        far = 0
        for y in range(img.height()):
            for x in range(img.width()):
                c = img.pixelColor(x, y)
                far = max(
                    far, abs(c.red() - bg.red()) + abs(c.green() - bg.green()) + abs(c.blue() - bg.blue())
                )
        return far

    page = w.show_page("check")
    assert page.run_button.isEnabled() and not page.stop_button.isEnabled()
    on = text_contrast(page.run_button)
    for b in [page.stop_button, *off]:
        assert text_contrast(b) < on * 0.75, (theme, b.text(), on, text_contrast(b))


@pytest.mark.parametrize(("start", "switch_to"), [("light", "dark"), ("dark", "light")])
def test_must_show_5_every_page_is_readable_after_a_theme_switch(
    qtbot, make_window, themed, start, switch_to
):
    """The contrast check of every page, after the theme was switched at run time (not at start-up)."""
    from app.ui.icons import icon, icon_colour
    from tests.ui.test_theme_contrast import assert_labels_readable

    themed(start)
    s = Settings()
    s.window.theme = start
    w = make_window(None, settings=s)
    for key in ("models", "server", "check", "chat"):  # each built in the first theme
        w.show_page(key)
    dlg = w.open_settings("window.theme")
    dlg.theme.setCurrentIndex(dlg.theme.findData(switch_to))
    dlg.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Save).click()
    checked = 0
    for key in ("chat", "models", "server", "check"):
        w.show_page(key)
        checked += assert_labels_readable(w, f"{key} page after switching to {switch_to}")
    assert checked > 10
    fresh = icon_colour(icon("chat"))
    assert all(icon_colour(a.icon()) == fresh for a in w.sidebar.actions() if not a.icon().isNull())


def test_u20_a_long_row_name_keeps_the_all_column_in_view(qtbot, make_window, tmp_path):
    from app.check.reference import expected_reply
    from tests.ui.test_check_page import _result

    w = make_window(None, settings=Settings())
    w.resize(1200, 760)
    page = w.show_page("check")
    name = "a-model-with-a-very-long-name-" * 5
    assert page.open_result(_result(tmp_path, name, lambda s, t, b: expected_reply(s, t))) == 0
    QApplication.processEvents()
    m = page.matrix
    last = m.columnCount() - 1
    assert m.horizontalHeaderItem(last).text() == "all"
    right = m.columnViewportPosition(last) + m.columnWidth(last)
    assert m.columnViewportPosition(last) >= 0 and right <= m.viewport().width(), (
        right,
        m.viewport().width(),
    )
    assert m.verticalHeaderItem(0).toolTip().startswith(name)


def test_u4_a_model_imported_with_none_loaded_loads(qtbot, make_window, streaming_model):
    """U4: no model; Models → Import GGUF… → "Use it where it is": the imported model loads, and the
    picker shows it as loaded (not only listed)."""
    w = make_window(None, settings=Settings())
    page = w.show_page("models")
    with qtbot.waitSignal(w.sig_model_ready, timeout=TIMEOUT):
        page.import_file(streaming_model)
    assert w.model_info is not None and w.model_info.path == str(streaming_model)
    assert w.model_picker.currentData() == str(streaming_model)
    w.compose.setPlainText("hello")
    assert w.send()
    w.stop()
    qtbot.waitUntil(lambda: not w.busy, timeout=TIMEOUT)
