"""The settings a turn was sent with, kept with its user message (issue 28, Must show 3: U3), so
Regenerate and Continue use them again in a reopened conversation; the migration that adds their
column (``m010_turn_settings``) upgrades a history from before it, on real SQLite files."""

from __future__ import annotations

from app.engine.events import DoneEvent
from app.engine.messages import Message
from app.engine.recorder import TurnRecorder
from app.storage.history import History, TurnMessage
from app.storage.migrations import MIGRATIONS
from tests.support.history import history_before

SENT_WITH = {
    "tool_format": "auto",
    "tool_choice": "none",
    "thinking": {"mode": "off", "effort": None, "budget": None, "budget_message": "Time to answer."},
    "sampling": {"temperature": 0.3, "seed": 11},
    "max_tokens": 6,
}


def test_u3_the_migration_is_named_once_after_the_reply_versions():
    names = [name for name, _fn in MIGRATIONS]
    assert names.count("m010_turn_settings") == 1
    assert names.index("m010_turn_settings") == names.index("m009_reply_versions") + 1


def test_u3_a_history_from_before_the_migration_opens_and_keeps_turn_settings(tmp_path):
    """U3: a database written before ``m010_turn_settings`` (a turn, its reply with the settings it
    was made with in its extra JSON, and a kept version) gets the column; its rows read as before
    (no turn record), and new turns keep theirs."""
    p = tmp_path / "before.sqlite3"
    history_before(
        p,
        "m010_turn_settings",
        """
        INSERT INTO conversations (id, title, created, updated) VALUES (1, 'Old chat', 1.0, 2.0);
        INSERT INTO messages (conversation_id, position, role, content, created)
            VALUES (1, 0, 'user', 'what is a zebra', 1.0);
        INSERT INTO messages (conversation_id, position, role, content, created, extra_json)
            VALUES (1, 1, 'assistant', 'a striped horse', 2.0,
                    '{"settings": {"tool_choice": "auto", "max_tokens": 64, "sampling": {}}}');
        INSERT INTO reply_versions (conversation_id, user_position, number, created, messages_json)
            VALUES (1, 0, 1, 1.5, '[{"id": 9, "conversation_id": 1, "position": 1, "role": "assistant",
                                     "content": "a horse", "extra": {}}]');
        INSERT INTO reply_versions (conversation_id, user_position, number, created, messages_json)
            VALUES (1, 0, 2, 2.0, NULL);
        """,
    )
    with History(p) as h:
        assert h.applied_migrations == ["m010_turn_settings"]
        conv = h.load_conversation(1)
        assert [(m.role, m.content, m.turn_settings) for m in conv.messages] == [
            ("user", "what is a zebra", None),
            ("assistant", "a striped horse", None),
        ]
        assert conv.messages[1].extra["settings"]["max_tokens"] == 64  # the reply's record stays
        assert conv.versions == {0: (2, 2)}
        assert [m.content for m in h.reply_version(1, 0, 1)] == ["a horse"]
        assert h.reply_version(1, 0, 1)[0].turn_settings is None

        # a new turn keeps the settings it is sent with, with its user message
        user = h.append_message(1, "user", "and a okapi?", turn_settings=SENT_WITH)
        assert user.turn_settings == SENT_WITH
        h.append_message(1, "assistant", "a forest giraffe")
        assert h.load_conversation(1).messages[2].turn_settings == SENT_WITH
    with History(p) as again:
        assert again.applied_migrations == []
        assert again.load_conversation(1).messages[2].turn_settings == SENT_WITH


def test_u3_regenerate_and_a_version_switch_leave_the_turns_settings_with_it(tmp_path):
    """U3: the record belongs to the user message: archiving its reply (Regenerate) and choosing
    another version of it keep it; the recorder writes it when the turn is sent."""
    with History(tmp_path / "h.sqlite3") as h:
        cid = h.create_conversation("t").id
        rec = TurnRecorder(h, cid, settings=SENT_WITH)
        rec.user_message("Hi")
        rec.begin()
        messages = [Message(role="user", content="Hi"), Message(role="assistant", content="Hello.")]
        assert rec.finish(DoneEvent(finish_reason="stop"), messages)
        user = h.load_conversation(cid).messages[0]
        assert user.turn_settings == SENT_WITH
        assert h.load_conversation(cid).messages[1].extra["settings"] == SENT_WITH
        assert h.archive_reply(cid, user.position) == (2, 2)
        partial = h.begin_assistant_message(cid)
        h.record_turn(cid, partial.id, [TurnMessage("assistant", "Hi there.")])
        h.select_reply_version(cid, user.position, 1)
        conv = h.load_conversation(cid)
        assert [(m.content, m.turn_settings) for m in conv.messages] == [
            ("Hi", SENT_WITH),
            ("Hello.", None),
        ]


def test_every_reply_of_a_turn_keeps_what_wrote_it(tmp_path):
    """The file, the name shown for it and the made model chatted with go with each reply: a
    finished turn's (its reply after a call, too) and a stopped one's. Keys other than those two,
    and empty values, are not kept."""
    author = {"model_name": "Alpha 1B", "made_model": "helper", "settings": "not an author key", "x": "y"}
    with History(tmp_path / "h.sqlite3") as h:
        cid = h.create_conversation("t").id
        rec = TurnRecorder(h, cid, model="/models/alpha.gguf", author=author)
        rec.user_message("Hi")
        rec.begin()
        messages = [Message(role="user", content="Hi"), Message(role="assistant", content="Hello.")]
        assert rec.finish(DoneEvent(finish_reason="stop"), messages)
        rec = TurnRecorder(
            h, cid, model="/models/alpha.gguf", author={"model_name": "Alpha 1B", "made_model": ""}
        )
        rec.user_message("Again")
        rec.begin()
        assert rec.finish(
            DoneEvent(finish_reason="cancelled"), [*messages, Message(role="user", content="Again")]
        )
        replies = [m for m in h.load_conversation(cid).messages if m.role == "assistant"]
        assert [m.status for m in replies] == ["complete", "interrupted"]
        assert [{k: m.extra.get(k) for k in ("model", "model_name", "made_model")} for m in replies] == [
            {"model": "/models/alpha.gguf", "model_name": "Alpha 1B", "made_model": "helper"},
            {"model": "/models/alpha.gguf", "model_name": "Alpha 1B", "made_model": None},
        ]
        assert "x" not in replies[0].extra and replies[0].extra.get("settings") is None
