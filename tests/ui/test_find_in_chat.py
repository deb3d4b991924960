"""Find in the chat (Ctrl+F) in the real window over a stored conversation in real SQLite: the bar
counts and marks the matches (case does not matter), brings each into view in reading order,
Enter / Shift+Enter / ↑ / ↓ step round the ends, Esc closes it and takes the marks away without
stopping anything, another conversation closes it, and a conversation opened from the list's
search shows where the searched words are."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication

from app.storage.history import History, TurnMessage

FILLER = "\n\n".join(f"Paragraph {k} of filler text about nothing much." for k in range(5))


def _history() -> tuple[History, int, int]:
    h = History()
    long = h.create_conversation("Animals").id
    for k in range(12):
        animal = {2: "a Zebra crossing", 7: "the zebra's stripes", 11: "ZEBRA at the end"}.get(k, "a cat")
        h.record_turn(
            long,
            None,
            [TurnMessage("user", f"Question {k}: tell me about {animal}"), TurnMessage("assistant", FILLER)],
        )
    other = h.create_conversation("Zoo trip").id
    h.record_turn(
        other, None, [TurnMessage("user", "Where is the giraffe?"), TurnMessage("assistant", "Over there.")]
    )
    return h, long, other


def _window(qtbot, make_window):
    h, long, other = _history()
    w = make_window(None, history=h)
    with qtbot.waitActive(w):
        w.activateWindow()
    return w, long, other


def _in_view(w, match) -> bool:
    """The match's text is inside the chat's visible area."""
    rect = match.view.cursorRect(match.cursor)
    top_left = match.view.viewport().mapTo(w.chat.viewport(), rect.topLeft())
    return w.chat.viewport().rect().contains(top_left + QPoint(1, 1))


def test_ctrl_f_finds_marks_and_steps_through_the_matches(qtbot, make_window):
    w, long, other = _window(qtbot, make_window)
    w.conversations_ctl.open_conversation(long)
    bar = w.conversations_ctl.find_bar
    assert bar.isHidden()
    qtbot.keyClick(w.compose, Qt.Key.Key_F, Qt.KeyboardModifier.ControlModifier)
    assert bar.isVisible()
    qtbot.waitUntil(lambda: QApplication.focusWidget() is bar.edit)

    qtbot.keyClicks(bar.edit, "zebra")
    assert bar.count.text() == "1 of 3"
    texts = [m.cursor.selectedText() for m in bar.matches]
    assert texts == ["Zebra", "zebra", "ZEBRA"]  # case does not matter, in reading order
    assert all(m.view.extraSelections() for m in bar.matches)  # every match is marked
    w.chat.verticalScrollBar().setValue(w.chat.verticalScrollBar().maximum())  # away from the first
    bar.step(0)  # (shown again where it is)
    qtbot.waitUntil(lambda: _in_view(w, bar.current))

    qtbot.keyClick(bar.edit, Qt.Key.Key_Return)
    assert bar.count.text() == "2 of 3" and bar.current.cursor.selectedText() == "zebra"
    qtbot.waitUntil(lambda: _in_view(w, bar.current))
    qtbot.keyClick(bar.edit, Qt.Key.Key_Down)
    assert bar.count.text() == "3 of 3"
    qtbot.waitUntil(lambda: _in_view(w, bar.current))
    qtbot.keyClick(bar.edit, Qt.Key.Key_Return)
    assert bar.count.text() == "1 of 3"  # round the end
    qtbot.keyClick(bar.edit, Qt.Key.Key_Return, Qt.KeyboardModifier.ShiftModifier)
    assert bar.count.text() == "3 of 3"
    qtbot.keyClick(bar.edit, Qt.Key.Key_Up)
    assert bar.count.text() == "2 of 3"
    qtbot.mouseClick(bar.btn_next, Qt.MouseButton.LeftButton)
    assert bar.count.text() == "3 of 3"

    bar.edit.setText("okapi")
    assert bar.count.text() == "No matches" and bar.edit.property("found") == "no" and not bar.matches
    bar.edit.setText("paragraph 4")
    assert bar.count.text() == "1 of 12"  # a phrase, in every reply

    marked = [m.view for m in bar.matches]
    qtbot.keyClick(bar.edit, Qt.Key.Key_Escape)
    assert bar.isHidden() and not any(v.extraSelections() for v in marked)
    assert w.conversation_id == long and not w.busy  # Esc closed the bar and nothing else

    w.conversations_ctl.find_in_chat("cat")
    assert bar.isVisible() and bar.matches
    w.conversations_ctl.open_conversation(other)  # another conversation: the bar closes
    assert bar.isHidden() and bar.matches == []

    # found the moment a conversation opens (still being laid out): the match ends up in view
    w.conversations_ctl.open_conversation(long)
    w.conversations_ctl.find_in_chat("zebra")
    bar.step(1)
    assert bar.current.view.toPlainText().startswith("Question 7")
    qtbot.waitUntil(lambda: _in_view(w, bar.current) and w.chat.verticalScrollBar().value() > 0)


def test_a_conversation_opened_from_the_search_shows_where_the_words_are(qtbot, make_window):
    w, long, other = _window(qtbot, make_window)
    lst = w.conversations_ctl.list
    lst.search.setText("stripes")
    w.conversations_ctl.search_conversations("stripes")
    assert lst.ids() == [long]
    lst.sig_open.emit(long)
    bar = w.conversations_ctl.find_bar
    assert w.conversation_id == long and bar.isVisible()
    assert bar.edit.text() == "stripes" and bar.count.text() == "1 of 1"
    qtbot.waitUntil(lambda: _in_view(w, bar.current))

    # words found apart: the longest of them is shown
    lst.search.setText("giraffe where")
    w.conversations_ctl.search_conversations("giraffe where")
    lst.sig_open.emit(other)
    assert w.conversation_id == other and bar.edit.text() == "giraffe" and bar.count.text() == "1 of 1"

    # opened with no search: no bar
    lst.search.setText("")
    w.conversations_ctl.search_conversations("")
    lst.sig_open.emit(long)
    assert w.conversation_id == long and bar.isHidden()
