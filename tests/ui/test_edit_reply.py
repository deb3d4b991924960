"""Editing a reply's text in the real window (⋯ → Edit reply text): a box over the reply's text
(Enter a new line, Ctrl+Enter saves, Esc cancels); saved, the text is the reply's in the chat, in
the real history and in the real worker's conversation, so the next turn reads it; nothing is
generated. A reply whose text is split by its tool calls, or an older version shown by the pager,
is refused with why, and a reply being written cannot be edited. A save that fails says why and
keeps the box and its text."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QGuiApplication

from app.calls import ToolCall
from app.storage.history import History
from tests.support.history import call_turn
from tests.ui.turns import alphabet_window, send_turn

TIMEOUT = 30_000
EDITED = "The answer is **42**.\nAsk me more."


def _editing(qtbot, make_window, text: str):
    """A window with one turn written, its reply's edit box open holding ``text``: (the window,
    the reply, the box)."""
    w = alphabet_window(qtbot, make_window)
    send_turn(qtbot, w, "first", timeout=TIMEOUT)
    reply = w.chat.current_assistant()
    reply.act_edit.trigger()
    editor = w.reply_edit.editor
    editor.box.setPlainText(text)
    return w, reply, editor


def _assistant_texts(w) -> list[str]:
    return [
        m.content for m in w.history.load_conversation(w.conversation_id).messages if m.role == "assistant"
    ]


def test_a_reply_s_text_is_edited_saved_and_read_by_the_next_turn(qtbot, make_window):
    w = alphabet_window(qtbot, make_window)
    send_turn(qtbot, w, "first", timeout=TIMEOUT)
    send_turn(qtbot, w, "second", timeout=TIMEOUT)
    first = w.chat.assistant_messages()[0]
    assert first.text() == "abc" and first.act_edit.isEnabled()
    first.act_edit.trigger()
    editor = w.reply_edit.editor
    assert editor is not None and editor.isVisibleTo(w) and editor.box.toPlainText() == "abc"
    assert not editor.run.isVisibleTo(w)  # the box is over the reply's text
    qtbot.waitUntil(lambda: QGuiApplication.focusObject() is editor.box)

    editor.box.selectAll()
    qtbot.keyClicks(editor.box, "The answer is **42**.")
    qtbot.keyClick(editor.box, Qt.Key.Key_Return)  # a new line, not Save
    assert w.reply_edit.editor is editor
    qtbot.keyClicks(editor.box, "Ask me more.")
    qtbot.keyClick(editor.box, Qt.Key.Key_Return, Qt.KeyboardModifier.ControlModifier)  # saves

    assert w.reply_edit.editor is None and first.text() == EDITED
    assert "The answer is 42." in first.blocks[-1].views[0].toPlainText()  # rendered as Markdown
    assert first.blocks[-1].isVisibleTo(w) and "Reply saved" in w.statusBar().currentMessage()
    assert _assistant_texts(w) == [EDITED, "abc"]
    qtbot.waitUntil(
        lambda: [m.content for m in w.worker.session.messages if m.role == "assistant"] == [EDITED, "abc"],
        timeout=TIMEOUT,
    )
    assert w.chat.assistant_messages()[1].text() == "abc"  # nothing generated again

    done = send_turn(qtbot, w, "third", timeout=TIMEOUT)  # the conversation goes on from the edit
    assert done is not None and _assistant_texts(w) == [EDITED, "abc", "abc"]
    w.new_chat()
    w.open_conversation(w.history.list_conversations()[0].id)
    assert w.chat.assistant_messages()[0].text() == EDITED  # reopened: the edit is kept


def test_esc_or_cancel_closes_the_box_and_changes_nothing(qtbot, make_window):
    w, reply, editor = _editing(qtbot, make_window, "not this")
    qtbot.keyClick(editor.box, Qt.Key.Key_Escape)
    assert w.reply_edit.editor is None and reply.text() == "abc" and reply.blocks[-1].isVisibleTo(w)
    reply.act_edit.trigger()
    w.reply_edit.editor.box.setPlainText("   ")
    w.reply_edit.editor.btn_save.click()  # a blank text is not saved: the box stays
    assert w.reply_edit.editor is not None
    w.reply_edit.editor.btn_cancel.click()
    assert w.reply_edit.editor is None and _assistant_texts(w) == ["abc"]


def test_an_older_version_shown_by_the_pager_is_not_edited(qtbot, make_window):
    w = alphabet_window(qtbot, make_window)
    send_turn(qtbot, w, "first", timeout=TIMEOUT)
    with qtbot.waitSignal(w.sig_turn_done, timeout=TIMEOUT):
        w.chat.current_assistant().btn_regen.click()
    send_turn(qtbot, w, "second", timeout=TIMEOUT)
    older = w.chat.assistant_messages()[0]
    assert older.version == (2, 2)
    older.btn_prev.click()  # version 1, read only: the chat went on from version 2
    older = w.chat.assistant_messages()[0]
    assert older.version == (1, 2)
    older.act_edit.trigger()
    assert w.reply_edit.editor is None and "another version" in w.statusBar().currentMessage()
    older.btn_next.click()
    older = w.chat.assistant_messages()[0]
    older.act_edit.trigger()  # the version the chat went on from: edited
    assert w.reply_edit.editor is not None


def test_a_reply_split_by_its_calls_and_a_reply_being_written_are_refused(qtbot, make_window):
    h = History()
    cid = h.create_conversation("Maths").id
    call = ToolCall("call00001", "calculator", {"expression": "6*7"}, raw="<tool_call>")
    h.record_turn(cid, None, call_turn("What is 6*7?", call, "42", "It is 42.", lead="Let me compute it."))
    w = alphabet_window(qtbot, make_window, history=h)
    w.open_conversation(cid)
    reply = w.chat.current_assistant()
    reply.act_edit.trigger()
    assert w.reply_edit.editor is None and "in parts between its tool calls" in w.statusBar().currentMessage()

    w.new_chat()
    w.settings.sampling.max_tokens = 400
    w.compose.setPlainText("a long one")
    assert w.send()
    qtbot.waitUntil(lambda: w.chat.current_assistant() is not None and w.busy)
    reply = w.chat.current_assistant()
    assert not reply.act_edit.isEnabled()  # off while it is written
    w.reply_edit.start(0, reply)  # (asked all the same: refused)
    assert w.reply_edit.editor is None and "being written" in w.statusBar().currentMessage()
    with qtbot.waitSignal(w.sig_turn_done, timeout=TIMEOUT):
        w.stop()


def test_a_save_that_fails_says_why_and_keeps_the_box_and_its_text(qtbot, make_window):
    w, reply, editor = _editing(qtbot, make_window, "my better answer")
    with History() as other:  # the chat deleted meanwhile (another window, the CLI)
        other.delete_conversation(w.conversation_id)
    editor.btn_save.click()
    assert "Could not save the reply" in w.statusBar().currentMessage()
    assert w.reply_edit.editor is editor and editor.isVisibleTo(w)
    assert editor.box.toPlainText() == "my better answer" and reply.text() == "abc"
