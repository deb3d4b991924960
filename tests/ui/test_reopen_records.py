"""A conversation is reopened from typed history records: the chat loop's messages, the banners and
the calls not run are read without a dict round trip, and say what the dicts said."""

from __future__ import annotations

from app.calls import IncompleteCall, ToolCall, ToolResult
from app.engine.messages import Message
from app.storage.history import History, StoredNotice, TurnMessage
from app.ui.call_view import CallView
from app.ui.worker_session import messages_from_records

CALL = ToolCall("call00000", "calculator", {"expression": "6*7"}, raw='<tool_call>{"name": "calculator"}')
CUT = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par'


def _stored(tmp_path):
    h = History(tmp_path / "h.sqlite3")
    conv = h.create_conversation("t")
    h.append_message(conv.id, "user", "What is 6*7?")
    h.record_turn(
        conv.id,
        None,
        [
            TurnMessage(
                "assistant",
                "",
                reasoning="multiply",
                tool_calls=[CALL],
                results={CALL.id: ToolResult(CALL.id, CALL.name, content="42", duration_s=0.01)},
                notices=[{"code": "tool_format_override", "message": "m", "setting": "chat.tool_format"}],
            ),
            TurnMessage("tool", "42", tool_call_id=CALL.id, name=CALL.name),
            TurnMessage(
                "assistant",
                "It is 42.",
                extra={"incomplete_calls": [IncompleteCall(CUT, "get_weather").to_dict()]},
            ),
        ],
    )
    return h.load_conversation(conv.id).messages


def test_the_chat_loop_gets_the_same_messages_as_through_dicts(tmp_path):
    records = _stored(tmp_path)
    typed = messages_from_records(records)
    assert typed == [Message.from_dict(r.to_chat_dict()) for r in records]
    assert typed[1].tool_calls == [CALL] and typed[3].incomplete_calls == [IncompleteCall(CUT, "get_weather")]


def test_banners_calls_and_cut_calls_are_typed(tmp_path):
    records = _stored(tmp_path)
    assert records[1].shown_notices == [StoredNotice("tool_format_override", "m", "chat.tool_format")]
    assert records[3].incomplete_calls == [IncompleteCall(CUT, "get_weather", "truncated")]
    (stored,) = records[1].tool_calls
    view = CallView.from_stored(stored)
    assert (view.call, view.status, view.outcome.content, view.outcome.approval) == (CALL, "ok", "42", "auto")
