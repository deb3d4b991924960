"""Notices (banners) stored with the reply they were shown above, through a named migration."""

from __future__ import annotations

import sqlite3

import pytest

from app.storage.history import History, HistoryError, MessageNotFound
from app.storage.migrations import MIGRATIONS


def test_notices_are_saved_with_the_message_and_survive_reopening(tmp_path):
    p = tmp_path / "h.sqlite3"
    with History(p) as h:
        c = h.create_conversation("chat")
        h.append_message(c.id, "user", "hi")
        partial = h.begin_assistant_message(c.id)
        h.add_notice(partial.id, "no_tool_format", "No tool format found.", "chat.tool_format")
        h.add_notice(partial.id, "no_tool_format", "again")  # one per code
        h.add_notice(partial.id, "no_chat_template", "No chat template.")
        done = h.append_message(
            c.id,
            "assistant",
            "final",
            notices=[{"code": "tool_format_override", "message": "m", "setting": "chat.tool_format"}],
        )
        plain = h.append_message(c.id, "assistant", "no notices")
    with History(p) as h:  # a restart
        msgs = {m.id: m for m in h.load_conversation(c.id).messages}
        assert msgs[partial.id].notices == [
            {"code": "no_tool_format", "message": "No tool format found.", "setting": "chat.tool_format"},
            {"code": "no_chat_template", "message": "No chat template.", "setting": None},
        ]
        assert msgs[partial.id].status == "interrupted"  # the writer is gone: recovered, notices kept
        assert h.get_message(done.id).notices == [
            {"code": "tool_format_override", "message": "m", "setting": "chat.tool_format"}
        ]
        assert msgs[plain.id].notices == []
        assert msgs[done.id].to_dict()["notices"][0]["code"] == "tool_format_override"


def test_bad_notices_are_clear_errors_and_store_nothing(tmp_path):
    with History(tmp_path / "h.sqlite3") as h:
        c = h.create_conversation("chat")
        with pytest.raises(HistoryError, match="code"):
            h.append_message(c.id, "assistant", "x", notices=[{"message": "no code"}])
        assert h.load_conversation(c.id).messages == []
        m = h.append_message(c.id, "assistant", "x")
        with pytest.raises(HistoryError, match="code"):
            h.add_notice(m.id, "")
        with pytest.raises(MessageNotFound):
            h.add_notice(9999, "no_tool_format")
        assert h.get_message(m.id).notices == []


def test_database_from_before_the_notices_migration_is_upgraded(tmp_path):
    p = tmp_path / "old.sqlite3"
    db = sqlite3.connect(p, isolation_level=None)
    names = [n for n, _ in MIGRATIONS]
    k = names.index("m007_message_notices")
    for name, fn in MIGRATIONS[:k]:
        db.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
        fn(db)
        db.execute("INSERT INTO migrations VALUES (?, 1.0)", (name,))
    db.execute("INSERT INTO conversations (id, title, created, updated) VALUES (1, 'old', 1, 1)")
    db.execute(
        "INSERT INTO messages (conversation_id, position, role, content, created) "
        "VALUES (1, 0, 'assistant', 'kept', 2)"
    )
    db.close()
    with History(p) as h:
        assert h.applied_migrations == names[k:]  # the notices migration and those after it
        (msg,) = h.load_conversation(1).messages
        assert (msg.content, msg.notices) == ("kept", [])
        h.add_notice(msg.id, "no_tool_format", "later")
        assert h.get_message(msg.id).notices[0]["message"] == "later"
