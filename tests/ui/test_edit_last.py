"""Up in the empty message box edits the last message sent, as chat apps do: its edit box opens in
view with the focus; Esc gives the focus back to the message box; Enter sends the edit, which
replaces the reply (the real worker and scripted GGUF write it). Up in a box with text moves the
cursor as ever, and while a reply is being written it does nothing."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QApplication

from tests.ui.turns import alphabet_window, send_turn

TIMEOUT = 30_000


def test_up_in_the_empty_box_edits_the_last_message_and_enter_sends_it(qtbot, make_window):
    w = alphabet_window(qtbot, make_window)
    send_turn(qtbot, w, "first", timeout=TIMEOUT)
    send_turn(qtbot, w, "second", timeout=TIMEOUT)
    first, last = w.chat.user_messages()
    w.compose.setFocus()

    qtbot.keyClick(w.compose, Qt.Key.Key_Up)
    assert last.editing and not first.editing
    assert last.editor.toPlainText() == "second"
    qtbot.waitUntil(lambda: QApplication.focusWidget() is last.editor)
    qtbot.keyClick(last.editor, Qt.Key.Key_Escape)  # cancelled: back to the message box
    assert not last.editing and last.text == "second"
    qtbot.waitUntil(lambda: QApplication.focusWidget() is w.compose)

    qtbot.keyClick(w.compose, Qt.Key.Key_Up)
    last.editor.setPlainText("second, edited")
    with qtbot.waitSignal(w.sig_turn_done, timeout=TIMEOUT):
        qtbot.keyClick(last.editor, Qt.Key.Key_Return)
    assert [m.text for m in w.chat.user_messages()] == ["first", "second, edited"]
    assert w.chat.current_assistant().text() == "abc"
    stored = w.history.load_conversation(w.conversation_id).messages
    assert [m.content for m in stored if m.role == "user"] == ["first", "second, edited"]
    qtbot.waitUntil(lambda: QApplication.focusWidget() is w.compose)


def test_up_with_text_moves_the_cursor_and_up_while_busy_does_nothing(qtbot, make_window):
    w = alphabet_window(qtbot, make_window)
    qtbot.keyClick(w.compose, Qt.Key.Key_Up)  # nothing sent yet: nothing to edit
    assert w.chat.user_messages() == []
    send_turn(qtbot, w, "hello", timeout=TIMEOUT)
    (sent,) = w.chat.user_messages()

    w.compose.setPlainText("line one\nline two")
    w.compose.setFocus()
    cursor = w.compose.textCursor()
    cursor.movePosition(cursor.MoveOperation.End)
    w.compose.setTextCursor(cursor)
    qtbot.keyClick(w.compose, Qt.Key.Key_Up)
    assert not sent.editing and w.compose.textCursor().blockNumber() == 0  # the cursor went up a line
    w.compose.clear()
    qtbot.keyClick(w.compose, Qt.Key.Key_Up, Qt.KeyboardModifier.ShiftModifier)
    assert not sent.editing  # only a plain Up

    # a reply is being written (the model never ends by itself): messages cannot be edited now
    w.state.settings.sampling.max_tokens = 3900
    w.settings_ctl.apply_settings(w.state.settings)
    w.compose.setPlainText("write on")
    assert w.send()
    qtbot.waitUntil(lambda: len(w.chat.current_assistant().text()) > 0, timeout=TIMEOUT)
    assert w.busy
    w.compose.setFocus()
    qtbot.keyClick(w.compose, Qt.Key.Key_Up)
    assert not any(m.editing for m in w.chat.user_messages())
    with qtbot.waitSignal(w.sig_turn_done, timeout=TIMEOUT):
        w.stop()
    assert w.last_done.finish_reason == "cancelled", w.last_done  # it was still being written
    qtbot.keyClick(w.compose, Qt.Key.Key_Up)
    assert w.chat.user_messages()[-1].editing and not sent.editing
