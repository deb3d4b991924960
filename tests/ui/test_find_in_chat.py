"""Find in the chat (Ctrl+F) in the real window over a stored conversation in real SQLite: the bar
counts and marks the matches (case does not matter), brings each into view in reading order,
Enter / Shift+Enter / ↑ / ↓ step round the ends, Esc closes it and takes the marks away without
stopping anything, another conversation closes it, and a conversation opened from the list's
search shows where the searched words are. What a reply folds (its thinking, its tool calls'
details and raw text) is searched too, and the fold of the current match is opened."""

from __future__ import annotations

from PySide6.QtCore import QPoint, Qt
from PySide6.QtWidgets import QApplication, QTextEdit

from app.calls import ToolCall
from app.storage.history import History, TurnMessage
from app.ui.chat.markdown import PlainView
from tests.support.history import call_turn

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

    # found by its title alone: nothing to show in it, no bar
    lst.search.setText("zoo")
    w.conversations_ctl.search_conversations("zoo")
    assert lst.ids() == [other]
    lst.sig_open.emit(other)
    assert w.conversation_id == other and bar.isHidden()

    # opened with no search: no bar
    lst.search.setText("")
    w.conversations_ctl.search_conversations("")
    lst.sig_open.emit(long)
    assert w.conversation_id == long and bar.isHidden()


RAW = '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo"}}</tool_call>'
CALL = ToolCall("call00001", "get_weather", {"city": "Oslo"}, raw=RAW)


def _folding_history() -> tuple[History, int]:
    """A chat whose reply thought, called a tool and answered, with earlier turns above it."""
    h = History()
    conv = h.create_conversation("Trip").id
    for k in range(6):
        h.record_turn(
            conv, None, [TurnMessage("user", f"Earlier question {k}"), TurnMessage("assistant", FILLER)]
        )
    h.record_turn(
        conv,
        None,
        call_turn(
            "Plan my trip to Oslo",
            CALL,
            "Oslo: 3 C, snow",
            "It is cold in Oslo: take a warm coat." + "\n\n" + FILLER,
            reasoning="The person goes to Oslo. Check the weather in oslo first, then pack a parka.",
        ),
    )
    return h, conv


def _folding_window(qtbot, make_window):
    h, conv = _folding_history()
    w = make_window(None, history=h)
    with qtbot.waitActive(w):
        w.activateWindow()
    w.conversations_ctl.open_conversation(conv)
    reply = w.chat.current_assistant()
    (card,) = reply.cards.values()
    return w, reply, card


def test_find_searches_the_folded_thinking_and_tool_cards_and_opens_the_current_fold(qtbot, make_window):
    w, reply, card = _folding_window(qtbot, make_window)
    thinking = reply.thinking
    assert thinking.body.isHidden() and card.body.isHidden() and card.raw_view.isHidden()  # all folded
    bar = w.conversations_ctl.find_bar
    bar.open("oslo")
    # in reading order: the question, the thinking (twice), the call's arguments and result, its
    # raw text, the answer
    views = [m.view for m in bar.matches]
    assert views == [
        views[0],
        thinking.body,
        thinking.body,
        card.body,
        card.body,
        card.raw_view,
        views[-1],
    ]
    assert not isinstance(views[0], PlainView) and not isinstance(views[-1], PlainView)
    assert views[0].toPlainText() == "Plan my trip to Oslo" and views[-1].toPlainText().startswith(
        "It is cold"
    )
    assert bar.count.text() == "1 of 7"
    assert all(v.extraSelections() for v in views)  # marked, folded or not
    # the first match is shown: nothing is opened for it
    assert thinking.body.isHidden() and card.body.isHidden()

    bar.step(1)  # into the thinking: it opens, and the match is brought into view
    assert bar.count.text() == "2 of 7" and bar.current.view is thinking.body
    assert thinking.toggle.isChecked() and not thinking.body.isHidden()
    assert card.body.isHidden()  # the next fold stays shut until a match there is the current one
    qtbot.waitUntil(lambda: _in_view(w, bar.current))
    bar.step(1)
    assert bar.current.cursor.selectedText() == "oslo"  # case does not matter
    bar.step(1)  # the call's arguments: its details open, its raw text stays folded
    assert bar.current.view is card.body and card.toggle.isChecked()
    assert not card.body.isHidden() and card.raw_view.isHidden()
    qtbot.waitUntil(lambda: _in_view(w, bar.current))
    bar.step(1)
    assert bar.current.view is card.body and "Result:" in card.body.text()
    bar.step(1)  # the raw text: "Show raw" is pressed for it
    assert bar.current.view is card.raw_view and not card.raw_view.isHidden()
    assert card.btn_raw.isChecked() and card.btn_raw.text() == "Hide raw"
    qtbot.waitUntil(lambda: _in_view(w, bar.current))
    bar.step(1)
    assert bar.count.text() == "7 of 7" and bar.current.view is views[-1]

    # the folds opened stay open; the order is the same now they are shown
    bar.search()
    assert [m.view for m in bar.matches] == views and bar.count.text() == "1 of 7"
    qtbot.keyClick(bar.edit, Qt.Key.Key_Escape)
    assert bar.isHidden() and not any(v.extraSelections() for v in views)


def test_a_word_only_in_a_reply_s_thinking_is_found_from_the_conversation_search(qtbot, make_window):
    h, _conv = _folding_history()
    w = make_window(None, history=h)
    lst = w.conversations_ctl.list
    lst.search.setText("parka")
    w.conversations_ctl.search_conversations("parka")
    (conv,) = lst.ids()
    lst.sig_open.emit(conv)
    bar = w.conversations_ctl.find_bar
    reply = w.chat.current_assistant()
    assert bar.isVisible() and bar.count.text() == "1 of 1"
    assert bar.current.view is reply.thinking.body and not reply.thinking.body.isHidden()
    qtbot.waitUntil(lambda: _in_view(w, bar.current))


def test_a_folded_text_views_plain_text_grows_by_appending(qtbot):
    view = PlainView("thinkingBody")
    qtbot.addWidget(view)
    assert view.isHidden() and view.text() == ""
    pieces = ["The ", "person ", "wants ", "Oslo."]
    text = ""
    for piece in pieces:
        text += piece
        view.set_text(text)
        assert view.toPlainText() == text == view.text()
    cursor = view.document().find("Oslo")
    sel = QTextEdit.ExtraSelection()
    sel.cursor = cursor
    view.setExtraSelections([sel])
    view.set_text(text + " Then pack.")  # appended: the mark stays on its word
    assert view.extraSelections()[0].cursor.selectedText() == "Oslo"
    view.set_text("Something else")  # not a continuation: replaced
    assert view.toPlainText() == "Something else" == view.text()
