"""A conversation duplicated whole (``History.duplicate_conversation``, the list's *Duplicate*) on
real SQLite: every message, call, result, picture, reply version kept aside, the system prompt,
settings and folder; titled "… (copy)", listed first, not pinned; the first one unchanged and
each found by the search. A chat deleted meanwhile is said, and nothing is written."""

from __future__ import annotations

import pytest

from app.storage.history import ConversationNotFound, History, TurnMessage
from tests.support.history import full_chat
from tests.support.tiny_vision import gif_bytes, png_bytes

PNG, GIF = png_bytes(), gif_bytes()


def _count(h: History, table: str) -> int:
    return h._db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def _same(d: dict) -> dict:
    """A conversation's dict without what a copy has of its own (id, title, times, pin)."""
    out = {k: v for k, v in d.items() if k not in {"id", "title", "created", "updated", "pinned"}}
    out["messages"] = [
        {k: v for k, v in m.items() if k not in {"id", "conversation_id"}} for m in d["messages"]
    ]
    return out


def test_a_duplicate_holds_the_whole_chat_and_the_first_is_kept(tmp_path):
    h = History(tmp_path / "h.sqlite3")
    cid = full_chat(h, (PNG, GIF))
    later = h.create_conversation("Later").id  # changed after Maths: listed above it
    before = h.load_conversation(cid).to_dict()
    blobs = _count(h, "image_blobs")

    copy = h.duplicate_conversation(cid)
    assert copy.id not in (cid, later) and copy.title == "Maths (copy)"
    assert copy.folder == "School" and not copy.pinned
    assert [c.id for c in h.list_conversations()][0] == copy.id  # made now: first
    made = h.load_conversation(copy.id)
    assert _same(made.to_dict()) == _same(before)  # messages, calls, results, pictures, prompt, folder
    assert made.system_prompt == "Be brief." and made.settings == before["settings"]
    first = made.messages[0].position
    assert made.versions == {first: (2, 2)}
    # the version kept aside is the first reply, with its call and result
    kept = h.reply_version(copy.id, first, 1)
    assert kept == h.reply_version(cid, before["messages"][0]["position"], 1)
    assert [m.role for m in kept] == ["assistant", "tool", "assistant"] and kept[0].tool_calls
    assert _count(h, "image_blobs") == blobs  # the pictures are shared, not stored twice
    assert h.load_conversation(cid).to_dict() == before  # the first is not changed
    assert sorted(c.id for c in h.search("pictures")) == sorted([cid, copy.id])

    # each goes its own way: a version chosen, a message added, the first deleted
    h.select_reply_version(copy.id, first, 1)
    h.record_turn(copy.id, None, [TurnMessage("user", "and 7*8?"), TurnMessage("assistant", "56.")])
    assert h.load_conversation(cid).to_dict() == before
    h.delete_conversation(cid)
    roles = [m.role for m in h.load_conversation(copy.id).messages]
    assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant"]  # version 1, then 7*8
    assert _count(h, "image_blobs") == blobs  # still the copy's
    h.close()
    with History(tmp_path / "h.sqlite3") as again:  # written for good
        assert again.load_conversation(copy.id).title == "Maths (copy)"


def test_a_copy_of_a_copy_and_of_a_reply_being_written(tmp_path):
    h = History(tmp_path / "h.sqlite3")
    cid = h.create_conversation("Notes").id
    h.append_message(cid, "user", "Write a poem")
    h.begin_assistant_message(cid)  # the reply is being written when the chat is duplicated
    copy = h.duplicate_conversation(cid)
    assert [m.status for m in h.load_conversation(copy.id).messages][-1] == "interrupted"
    assert h.duplicate_conversation(copy.id).title == "Notes (copy) (copy)"


def test_a_chat_deleted_meanwhile_is_said_and_nothing_is_written(tmp_path):
    h = History(tmp_path / "h.sqlite3")
    cid = h.create_conversation("Gone").id
    h.delete_conversation(cid)
    with pytest.raises(ConversationNotFound):
        h.duplicate_conversation(cid)
    assert h.list_conversations() == []
