"""A conversation's own system prompt (``m012_conversation_system_prompt``): kept with the
conversation, cleared back to the one in Settings, carried by a branch, an export and an import,
and added to a history written before it. Real SQLite."""

from __future__ import annotations

import json

import pytest

from app.storage.export import conversation_from_json, conversation_json, conversation_markdown
from app.storage.history import ConversationNotFound, History, TurnMessage
from tests.support.history import history_before


def test_a_conversation_keeps_its_own_system_prompt_until_it_is_cleared(tmp_path):
    with History(tmp_path / "h.sqlite3") as h:
        cid = h.create_conversation("Pirate", system_prompt="Answer as a pirate.").id
        other = h.create_conversation("Plain").id
        assert h.load_conversation(cid).system_prompt == "Answer as a pirate."
        assert h.get_conversation(other).system_prompt is None
        h.set_system_prompt(other, "Be brief.")
        assert [c.system_prompt for c in h.list_conversations()] == ["Be brief.", "Answer as a pirate."]
        h.set_system_prompt(cid, "  \n ")  # only white space: back to the one in Settings
        assert h.get_conversation(cid).system_prompt is None
        h.set_system_prompt(other, None)
        assert h.get_conversation(other).system_prompt is None
        with pytest.raises(ConversationNotFound):
            h.set_system_prompt(99, "x")


def test_a_branch_an_export_and_an_import_carry_it(tmp_path):
    with History(tmp_path / "h.sqlite3") as h:
        cid = h.create_conversation("Pirate", system_prompt="Answer as a pirate.").id
        h.append_message(cid, "user", "Hi")
        h.record_turn(cid, h.begin_assistant_message(cid).id, [TurnMessage("assistant", "Arr.")])
        branch = h.load_conversation(h.branch_conversation(cid, 0).id)
        assert branch.system_prompt == "Answer as a pirate."
        conv = h.load_conversation(cid)
        md = conversation_markdown(conv)
        assert "## System prompt (this chat's own)\n\nAnswer as a pirate.\n\n## You" in md
        data = json.loads(conversation_json(conv))
        assert data["system_prompt"] == "Answer as a pirate."
        back = h.load_conversation(h.restore_conversation(conversation_from_json(json.dumps(data))).id)
        assert back.system_prompt == "Answer as a pirate."
        data["system_prompt"] = None
        assert h.restore_conversation(conversation_from_json(json.dumps(data))).system_prompt is None
        assert "System prompt" not in conversation_markdown(
            h.load_conversation(h.create_conversation("x").id)
        )
        data["system_prompt"] = ["x"]
        with pytest.raises(ValueError, match="system_prompt must be text"):
            conversation_from_json(json.dumps(data))


def test_a_history_from_before_the_migration_gets_the_column(tmp_path):
    p = tmp_path / "before.sqlite3"
    history_before(
        p,
        "m012_conversation_system_prompt",
        "INSERT INTO conversations (id, title, created, updated) VALUES (1, 'Old chat', 1.0, 2.0);",
    )
    with History(p) as h:
        assert h.applied_migrations == ["m012_conversation_system_prompt"]
        assert h.get_conversation(1).system_prompt is None
        h.set_system_prompt(1, "Now its own.")
        assert h.load_conversation(1).system_prompt == "Now its own."
