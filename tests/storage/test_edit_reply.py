"""A reply's text edited by the person (``History.edit_reply_text``): the new text is what the
conversation holds and what the search finds, its calls and reasoning are kept, the conversation's
last change is now; a user message, a reply still being written and a missing one are refused.
Real SQLite."""

from __future__ import annotations

import pytest

from app.calls import ToolCall
from app.storage.history import History, HistoryError, MessageNotFound, TurnMessage
from tests.support.history import call_turn

CALL = ToolCall("call00001", "calculator", {"expression": "6*7"}, raw="<tool_call>")


def test_a_reply_s_text_is_replaced_and_found_by_its_new_words(tmp_path):
    with History(tmp_path / "h.sqlite3") as h:
        cid = h.create_conversation("Maths").id
        h.record_turn(
            cid,
            None,
            call_turn("What is 6*7?", CALL, "42", "It is fourty-two, a zebra number.", reasoning="multiply"),
        )
        other = h.create_conversation("Later").id  # the latest change, before the edit
        msgs = h.load_conversation(cid).messages
        answer = msgs[-1]
        assert [c.id for c in h.list_conversations()] == [other, cid]
        h.edit_reply_text(answer.id, "It is forty-two, an okapi number.")
        conv = h.load_conversation(cid)
        assert conv.messages[-1].content == "It is forty-two, an okapi number."
        assert conv.messages[-1].status == answer.status and conv.messages[-1].id == answer.id
        assert conv.messages[1].tool_calls[0].result == "42" and conv.messages[1].reasoning == "multiply"
        assert [c.id for c in h.search("okapi")] == [cid] and h.search("zebra") == []
        assert [c.id for c in h.list_conversations()] == [cid, other]  # changed now: listed first


def test_what_is_no_finished_reply_is_refused_and_left_as_it_was(tmp_path):
    with History(tmp_path / "h.sqlite3") as h:
        cid = h.create_conversation("t").id
        h.record_turn(cid, None, [TurnMessage("user", "hi"), TurnMessage("assistant", "hello")])
        user = h.load_conversation(cid).messages[0]
        with pytest.raises(HistoryError, match="not a reply"):
            h.edit_reply_text(user.id, "changed")
        streaming = h.begin_assistant_message(cid).id
        with pytest.raises(HistoryError, match="still being written"):
            h.edit_reply_text(streaming, "changed")
        with pytest.raises(MessageNotFound):
            h.edit_reply_text(999_999, "changed")
        assert [m.content for m in h.load_conversation(cid).messages][:2] == ["hi", "hello"]
