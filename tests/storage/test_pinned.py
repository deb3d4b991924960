"""Pinned conversations (``m013_conversation_pinned``): pinned and unpinned without changing the
conversation's last change, listed and found with the mark, not carried to a branch or an import,
and added to a history written before the migration. Real SQLite."""

from __future__ import annotations

import pytest

from app.storage.export import conversation_from_json, conversation_json
from app.storage.history import ConversationNotFound, History, TurnMessage
from tests.support.history import history_before


def _chat(h: History, title: str) -> int:
    cid = h.create_conversation(title).id
    h.record_turn(cid, None, [TurnMessage("user", f"about {title}"), TurnMessage("assistant", "sure")])
    return cid


def test_a_conversation_is_pinned_and_unpinned_and_keeps_its_last_change(tmp_path):
    with History(tmp_path / "h.sqlite3") as h:
        old, new = _chat(h, "Old plans"), _chat(h, "New plans")
        before = h.get_conversation(old).updated
        assert [c.pinned for c in h.list_conversations()] == [False, False]
        h.set_pinned(old, True)
        assert h.get_conversation(old).pinned is True and h.get_conversation(new).pinned is False
        assert h.get_conversation(old).updated == before  # pinning is no change to the chat
        # the history's order stays the latest change first (``history export last`` reads it)
        assert [(c.id, c.pinned) for c in h.list_conversations()] == [(new, False), (old, True)]
        assert [(c.id, c.pinned) for c in h.search("plans")] == [(new, False), (old, True)]
        assert h.load_conversation(old).pinned is True
        h.set_pinned(old, True)  # again: still pinned
        h.set_pinned(old, False)
        assert not h.get_conversation(old).pinned
        with pytest.raises(ConversationNotFound):
            h.set_pinned(404, True)


def test_a_branch_and_an_import_of_a_pinned_conversation_are_not_pinned(tmp_path):
    with History(tmp_path / "h.sqlite3") as h:
        cid = _chat(h, "Keep me")
        h.set_pinned(cid, True)
        branch = h.branch_conversation(cid, 0)
        assert not h.get_conversation(branch.id).pinned
        conv = h.load_conversation(cid)
        restored = h.restore_conversation(conversation_from_json(conversation_json(conv)))
        assert not h.get_conversation(restored.id).pinned
        assert h.get_conversation(cid).pinned  # the first is still pinned


def test_a_history_from_before_the_migration_gets_the_column(tmp_path):
    p = tmp_path / "before.sqlite3"
    history_before(
        p,
        "m013_conversation_pinned",
        "INSERT INTO conversations (id, title, created, updated) VALUES (1, 'Old chat', 1.0, 2.0);",
    )
    with History(p) as h:
        assert h.applied_migrations == ["m013_conversation_pinned"]
        assert h.get_conversation(1).pinned is False
        h.set_pinned(1, True)
        assert h.list_conversations()[0].pinned is True
