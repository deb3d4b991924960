"""Reply versions (issue 28, U22): Regenerate keeps the earlier replies of a turn, with their
calls and results, as numbered versions; the conversation goes on from the one selected."""

from __future__ import annotations

import sqlite3

import pytest

from app.calls import ToolCall, ToolResult
from app.storage.history import History, HistoryError, TurnMessage
from app.storage.migrations import MIGRATIONS

CALL = ToolCall("call00000", "calculator", {"expression": "17*23"}, raw="<tool_call>…</tool_call>")


def _turn(h: History, cid: int, text: str, *, with_call: bool = False) -> None:
    partial = h.begin_assistant_message(cid)
    msgs = []
    if with_call:
        msgs += [
            TurnMessage(
                "assistant",
                "",
                tool_calls=[CALL],
                results={CALL.id: ToolResult(CALL.id, CALL.name, content="391", duration_s=0.01)},
                extra={"call_decoding": {CALL.id: "held to its schema"}},
            ),
            TurnMessage("tool", "391", tool_call_id=CALL.id, name=CALL.name),
        ]
    msgs.append(
        TurnMessage("assistant", text, extra={"stats": {"finish_reason": "stop", "generated_tokens": 3}})
    )
    h.record_turn(cid, partial.id, msgs)


def test_the_migration_is_named_once():
    names = [name for name, _fn in MIGRATIONS]
    assert names.count("m009_reply_versions") == 1 and len(set(names)) == len(names)


def test_u22_regenerate_keeps_the_earlier_reply_with_its_calls(tmp_path):
    h = History(tmp_path / "h.sqlite3")
    cid = h.create_conversation("t").id
    user = h.append_message(cid, "user", "What is 17*23?")
    _turn(h, cid, "It is 391.", with_call=True)
    assert h.archive_reply(cid, user.position) == (2, 2)
    conv = h.load_conversation(cid)
    assert [m.role for m in conv.messages] == ["user"]
    assert conv.versions == {user.position: (2, 2)}  # the coming reply is number 2 of 2
    _turn(h, cid, "17*23 = 391")
    conv = h.load_conversation(cid)
    assert conv.versions == {user.position: (2, 2)}
    old = h.reply_version(cid, user.position, 1)
    assert [m.role for m in old] == ["assistant", "tool", "assistant"]
    (stored,) = old[0].tool_calls
    assert (stored.call, stored.result) == (CALL, "391")
    assert old[0].extra["call_decoding"] == {CALL.id: "held to its schema"}
    assert old[2].extra["stats"]["generated_tokens"] == 3
    assert [m.content for m in h.reply_version(cid, user.position, 2)] == ["17*23 = 391"]
    # a third version
    assert h.archive_reply(cid, user.position) == (3, 3)
    _turn(h, cid, "third")
    assert h.load_conversation(cid).versions == {user.position: (3, 3)}


def test_u22_the_conversation_goes_on_from_the_version_selected(tmp_path):
    h = History(tmp_path / "h.sqlite3")
    cid = h.create_conversation("t").id
    user = h.append_message(cid, "user", "What is 17*23?")
    _turn(h, cid, "first", with_call=True)
    h.archive_reply(cid, user.position)
    _turn(h, cid, "second")
    h.select_reply_version(cid, user.position, 1)
    conv = h.load_conversation(cid)
    assert conv.versions == {user.position: (1, 2)}
    assert [m.content for m in conv.messages] == ["What is 17*23?", "", "391", "first"]
    assert conv.messages[1].tool_calls[0].result == "391"
    assert [m.content for m in h.reply_version(cid, user.position, 2)] == ["second"]
    h.select_reply_version(cid, user.position, 2)
    assert [m.content for m in h.load_conversation(cid).messages] == ["What is 17*23?", "second"]
    # regenerating from version 2 makes version 3; version 1 is still there
    h.archive_reply(cid, user.position)
    _turn(h, cid, "third")
    assert h.load_conversation(cid).versions == {user.position: (3, 3)}
    assert [m.content for m in h.reply_version(cid, user.position, 1)][-1] == "first"
    # a later turn: the earlier reply's version can be read, not switched
    h.append_message(cid, "user", "and 2*2?")
    with pytest.raises(HistoryError):
        h.select_reply_version(cid, user.position, 1)


def test_u22_versions_go_with_the_message_they_answer(tmp_path):
    h = History(tmp_path / "h.sqlite3")
    cid = h.create_conversation("t").id
    user = h.append_message(cid, "user", "q")
    _turn(h, cid, "a")
    h.archive_reply(cid, user.position)
    _turn(h, cid, "b")
    h.truncate_after(cid, user.position - 1)  # edit and resend the question
    assert h.load_conversation(cid).versions == {}
    h.delete_conversation(cid)
    with sqlite3.connect(tmp_path / "h.sqlite3") as db:
        assert db.execute("SELECT count(*) FROM reply_versions").fetchone() == (0,)
