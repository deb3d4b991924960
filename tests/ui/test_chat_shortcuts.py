"""The chat's keyboard shortcuts in the real window: Ctrl+R regenerates the last reply (typed in
the message box too; kept as a version), Ctrl+Shift+; copies the replies' last code block (and
says so, or that there is none), Ctrl+/ shows the shortcuts; each is in the Edit or Help menu and
in the list the Help menu shows."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import QApplication, QMessageBox

from app.storage.history import History, TurnMessage
from app.ui.window_menus import SHORTCUTS
from tests.ui.turns import alphabet_window, send_turn

TIMEOUT = 30_000
CTRL = Qt.KeyboardModifier.ControlModifier


def test_ctrl_r_regenerates_the_last_reply_from_the_message_box(qtbot, make_window):
    w = alphabet_window(qtbot, make_window)
    assert w.menus.act_regenerate.shortcut().toString() == "Ctrl+R"
    qtbot.keyClick(w.compose, Qt.Key.Key_R, CTRL)  # no reply yet: nothing happens
    assert not w.busy and w.chat.messages == []
    send_turn(qtbot, w, "first", timeout=TIMEOUT)
    w.compose.setFocus()
    w.compose.setPlainText("a draft")
    with qtbot.waitSignal(w.sig_turn_done, timeout=TIMEOUT):
        qtbot.keyClick(w.compose, Qt.Key.Key_R, CTRL)
    reply = w.chat.current_assistant()
    assert reply.version == (2, 2) and reply.text() == "abc"
    w.page_stack.show_models_page()  # another page: Ctrl+R does nothing there
    w.menus.act_regenerate.trigger()
    assert not w.busy and w.chat.current_assistant().version == (2, 2)
    w.page_stack.show_chat_page()
    assert w.compose.toPlainText() == "a draft"  # the message being written is left alone
    assert len([m for m in w.history.load_conversation(w.conversation_id).messages if m.role == "user"]) == 1


def test_ctrl_shift_semicolon_copies_the_last_code_block(qtbot, make_window):
    h = History()
    cid = h.create_conversation("Code").id
    h.record_turn(
        cid,
        None,
        [
            TurnMessage("user", "Two functions please"),
            TurnMessage(
                "assistant",
                "First:\n\n```python\ndef one():\n    return 1\n```\n\nThen:\n\n```js\nconst two = 2;\n```\n",
            ),
            TurnMessage("user", "Thanks, no code now"),
            TurnMessage("assistant", "You are welcome."),
        ],
    )
    empty = h.create_conversation("Words").id
    h.record_turn(empty, None, [TurnMessage("user", "hi"), TurnMessage("assistant", "hello")])
    w = alphabet_window(qtbot, make_window, history=h)
    w.open_conversation(cid)
    QGuiApplication.clipboard().setText("before")
    w.compose.setFocus()
    qtbot.keyClick(w.compose, Qt.Key.Key_Semicolon, CTRL | Qt.KeyboardModifier.ShiftModifier)
    # the newest reply with code: the earlier one's last block (the last reply has none)
    assert QGuiApplication.clipboard().text() == "const two = 2;"
    assert w.statusBar().currentMessage() == "Copied the last code block (1 line)."
    w.open_conversation(empty)
    QGuiApplication.clipboard().setText("kept")
    w.menus.act_copy_code.trigger()
    assert QGuiApplication.clipboard().text() == "kept" and "No code block" in w.statusBar().currentMessage()


def test_ctrl_slash_shows_the_shortcuts_and_the_list_names_the_new_ones(qtbot, make_window):
    w = make_window(None)
    with qtbot.waitActive(w):
        w.activateWindow()
    keys = [k for k, _what in SHORTCUTS]
    assert {"Ctrl+R", "Ctrl+Shift+;", "Ctrl+/"} <= set(keys)
    qtbot.keyClick(w.compose, Qt.Key.Key_Slash, CTRL)
    qtbot.waitUntil(lambda: isinstance(QApplication.activeModalWidget(), QMessageBox))
    box = QApplication.activeModalWidget()
    assert box.objectName() == "shortcutsBox" and "Regenerate the last reply" in box.text()
    box.close()
