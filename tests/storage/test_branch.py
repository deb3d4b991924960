"""Branching a conversation (``History.branch_conversation``): a new conversation with the messages
through one reply (the versions shown), calls, results and pictures included; the first one is
not changed. Real SQLite."""

from __future__ import annotations

import pytest

from app.calls import ToolCall, ToolResult
from app.storage.history import History, MessageNotFound, TurnMessage

PNG = b"\x89PNG\r\n\x1a\n" + b"\x01" * 100


def _turn(h: History, cid: int, user: str, messages: list[TurnMessage], **kw) -> None:
    h.append_message(cid, "user", user, **kw)
    partial = h.begin_assistant_message(cid)
    h.record_turn(cid, partial.id, messages)


@pytest.fixture
def chat(tmp_path):
    with History(tmp_path / "h.sqlite3") as h:
        cid = h.create_conversation("Sums", model_path="/m/a.gguf", settings={"tool_format": "auto"}).id
        call = ToolCall(id="c1", name="calculator", arguments={"expression": "2+2"})
        _turn(
            h,
            cid,
            "2+2?",
            [
                TurnMessage(
                    "assistant",
                    "",
                    tool_calls=(call,),
                    results={"c1": ToolResult(call_id="c1", name="calculator", content="4")},
                ),
                TurnMessage("tool", "4", tool_call_id="c1", name="calculator"),
                TurnMessage("assistant", "4.", extra={"model": "/m/a.gguf"}),
            ],
            images=[PNG],
        )
        _turn(h, cid, "3+3?", [TurnMessage("assistant", "6.")])
        _turn(h, cid, "4+4?", [TurnMessage("assistant", "8.")])
        yield h, cid


def test_a_branch_holds_the_messages_through_the_reply_and_the_first_is_kept(chat):
    h, cid = chat
    before = h.load_conversation(cid)
    new = h.branch_conversation(cid, 0)
    assert new.id != cid and new.title == "Sums (branch)"
    branch = h.load_conversation(new.id)
    assert [(m.role, m.content) for m in branch.messages] == [
        ("user", "2+2?"),
        ("assistant", ""),
        ("tool", "4"),
        ("assistant", "4."),
    ]
    assert branch.messages[0].images == [PNG]
    assert [(tc.name, tc.result) for tc in branch.messages[1].tool_calls] == [("calculator", "4")]
    assert branch.messages[3].extra["model"] == "/m/a.gguf"
    assert (branch.model_path, branch.settings) == (before.model_path, before.settings)
    after = h.load_conversation(cid)
    assert [m.to_dict() for m in after.messages] == [m.to_dict() for m in before.messages]
    assert h.list_conversations()[0].id == new.id  # the newest first in the list

    middle = h.load_conversation(h.branch_conversation(cid, 1).id)
    assert [m.content for m in middle.messages if m.role == "user"] == ["2+2?", "3+3?"]
    last = h.load_conversation(h.branch_conversation(cid, 2).id)
    assert len(last.messages) == len(before.messages)


def test_a_branch_of_a_branch_is_titled_once_and_keeps_only_the_version_shown(chat):
    h, cid = chat
    user = h.load_conversation(cid).messages[0]
    h.archive_reply(cid, user.position)  # Regenerate the first reply: it becomes version 1
    partial = h.begin_assistant_message(cid)
    h.record_turn(cid, partial.id, [TurnMessage("assistant", "four")])
    first = h.branch_conversation(cid, 0)
    again = h.branch_conversation(first.id, 0)
    assert again.title == "Sums (branch)"
    branch = h.load_conversation(again.id)
    assert [m.content for m in branch.messages] == ["2+2?", "four"] and branch.versions == {}


@pytest.mark.parametrize("index", [-1, 3, 99])
def test_a_user_message_that_is_not_there_is_refused(chat, index):
    h, cid = chat
    with pytest.raises(MessageNotFound):
        h.branch_conversation(cid, index)
    assert len(h.list_conversations()) == 1
