"""The chat's text size in the real window over a stored conversation (real SQLite): View → Larger
text (Ctrl+=), Smaller text (Ctrl+-) and Actual text size (Ctrl+0) step through the sizes and are
saved; Settings → Appearance → Chat text size sets one; the messages shown, those added later and
the message box are drawn at it (their rendered text grows taller), and a restart keeps it."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QPoint, QPointF, Qt
from PySide6.QtGui import QWheelEvent
from PySide6.QtWidgets import QApplication, QDialogButtonBox

from app.storage.history import History, TurnMessage
from app.storage.settings import Settings, load_settings
from app.ui.chat.markdown import MarkdownView
from app.ui.text_size import TEXT_SCALES, scale_choices, step_scale


def _conversation() -> History:
    h = History()
    cid = h.create_conversation("Sizes").id
    h.record_turn(
        cid, None, [TurnMessage("user", "How big is this text?"), TurnMessage("assistant", "Big enough.")]
    )
    return h


def _points(widget) -> float:
    return widget.font().pointSizeF()


def _reply_view(w) -> MarkdownView:
    return w.chat.current_assistant().findChildren(MarkdownView)[0]


def test_the_view_menu_steps_the_chat_text_size_and_settings_keep_it(qtbot, make_window):
    w = make_window(None, history=_conversation())
    base = QApplication.font().pointSizeF()
    w.conversations_ctl.open_conversation(w.history.list_conversations()[0].id)
    view = _reply_view(w)
    qtbot.waitUntil(lambda: view.height() > 10)
    height = view.height()
    assert _points(view) == pytest.approx(base) and _points(w.compose) == pytest.approx(base)

    with qtbot.waitActive(w):
        w.activateWindow()
    w.compose.setFocus()
    qtbot.keyClick(w.compose, Qt.Key.Key_Equal, Qt.KeyboardModifier.ControlModifier)
    assert w.settings.window.text_scale == 115 and "115%" in w.statusBar().currentMessage()
    assert _points(view) == pytest.approx(base * 1.15)
    assert view.document().defaultFont().pointSizeF() == pytest.approx(base * 1.15)
    assert _points(w.compose) == pytest.approx(base * 1.15)
    qtbot.waitUntil(lambda: view.height() > height)  # the rendered reply is taller
    assert load_settings()[0].window.text_scale == 115  # saved

    qtbot.keyClick(w.compose, Qt.Key.Key_Minus, Qt.KeyboardModifier.ControlModifier)
    qtbot.keyClick(w.compose, Qt.Key.Key_Minus, Qt.KeyboardModifier.ControlModifier)
    assert w.settings.window.text_scale == 90 and _points(view) == pytest.approx(base * 0.9)
    w.menus.act_actual.trigger()
    assert w.settings.window.text_scale == 100 and _points(view) == pytest.approx(base)

    # Ctrl+wheel over the chat: a notch a step; a touchpad's small turns add up; without Ctrl it scrolls
    def wheel(dy: int, mods=Qt.KeyboardModifier.ControlModifier) -> None:
        at = QPointF(w.chat.viewport().rect().center())
        ev = QWheelEvent(
            at, w.chat.viewport().mapToGlobal(at), QPoint(0, 0), QPoint(0, dy),
            Qt.MouseButton.NoButton, mods, Qt.ScrollPhase.NoScrollPhase, False,
        )  # fmt: skip
        QApplication.sendEvent(w.chat.viewport(), ev)

    wheel(120)
    assert w.settings.window.text_scale == 115 and _points(view) == pytest.approx(base * 1.15)
    wheel(-60)
    assert w.settings.window.text_scale == 115
    wheel(-60)
    assert w.settings.window.text_scale == 100
    wheel(120, Qt.KeyboardModifier.NoModifier)
    assert w.settings.window.text_scale == 100

    # Settings → Appearance → Chat text size
    dlg = w.open_settings("window.text_scale")
    box = dlg.controls["window.text_scale"][1]
    assert [box.itemData(i) for i in range(box.count())] == list(TEXT_SCALES)
    box.setCurrentIndex(box.findData(150))
    dlg.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Save).click()
    assert w.settings.window.text_scale == 150 and _points(view) == pytest.approx(base * 1.5)
    w.compose.setPlainText("later")
    w.chat.add_user("A message added later")  # new messages take the size too
    assert _points(w.chat.user_messages()[-1].view) == pytest.approx(base * 1.5)

    # a restart keeps it
    w.shutdown()
    w2 = make_window(None, settings=load_settings()[0], history=History())
    w2.conversations_ctl.open_conversation(w2.history.list_conversations()[0].id)
    assert _points(_reply_view(w2)) == pytest.approx(base * 1.5)
    assert _points(w2.compose) == pytest.approx(base * 1.5)


def test_the_steps_stop_at_the_ends_and_an_odd_size_is_kept():
    assert step_scale(100, 1) == 115 and step_scale(100, -1) == 90 and step_scale(175, 0) == 100
    assert step_scale(200, 1) == 200 and step_scale(80, -1) == 80  # the ends
    assert step_scale(120, 1) == 130 and step_scale(120, -1) == 115  # between steps: the next one
    assert step_scale(300, -1) == 200 and step_scale(50, 1) == 80
    assert [s for s, _label in scale_choices(120)] == [80, 90, 100, 115, 120, 130, 150, 175, 200]
    assert dict(scale_choices(100))[100] == "100% (default)"
    s = Settings()
    s.window.text_scale = 120  # written by hand in settings.json: offered as it is
    assert Settings.model_validate(s.model_dump()).window.text_scale == 120
    with pytest.raises(ValueError):
        Settings.model_validate({"window": {"text_scale": 1000}})
