"""Recently deleted chats (``m015_trash``), on real SQLite: a deleted chat leaves the list, the
search and the exports, is kept in the trash across restarts, and comes back as it was (its id,
messages, calls, reply versions, pictures, folder, pin, search index); the trash lists the last
deleted first, keeps a chat for TRASH_DAYS days, and forgets one, several or all on request."""

from __future__ import annotations

import math

import pytest

from app.storage._trash_rows import rows_from_json, rows_to_json
from app.storage.history import TRASH_DAYS, ConversationNotFound, History, HistoryError
from tests.support.history import full_chat, history_before
from tests.support.tiny_vision import gif_bytes, png_bytes

PNG, GIF = png_bytes(), gif_bytes()


def _count(h: History, table: str) -> int:
    return h._db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def _backdate(h: History, trash_id: int, days: float) -> None:
    """The trash entry as if deleted ``days`` ago (the clock is not waited for)."""
    h._db.execute("UPDATE trash SET deleted_at = deleted_at - ? WHERE id = ?", (days * 86400.0, trash_id))


def test_a_trashed_chat_is_gone_from_everything_and_comes_back_after_a_restart(tmp_path):
    path = tmp_path / "h.sqlite3"
    with History(path) as h:
        cid = full_chat(h, (PNG, GIF))
        other = h.create_conversation("Shared").id
        h.append_message(other, "user", "the same picture", images=[PNG])  # PNG shared, GIF not
        before = h.load_conversation(cid).to_dict()
        version = h.reply_version(cid, h.load_conversation(cid).messages[0].position, 1)

        gone = h.trash_conversation(cid)
        assert (gone.conversation_id, gone.title, gone.folder, gone.messages) == (cid, "Maths", "School", 2)
        with pytest.raises(ConversationNotFound):
            h.load_conversation(cid)
        assert [c.id for c in h.list_conversations()] == [other]
        assert h.search("pictures") == [] and h.folders() == []
        assert _count(h, "image_blobs") == 1  # the GIF's row went (kept in the trash), the PNG stays
        assert h.trashed() == [gone]

    with History(path) as h:  # the app closed and opened again
        (kept,) = h.trashed()
        assert kept == gone
        assert h.restore_trashed(kept.id) == cid
        back = h.load_conversation(cid)
        assert back.to_dict() == before  # messages, calls, results, pictures, folder, pin, prompt
        assert h.reply_version(cid, back.messages[0].position, 1) == version
        assert _count(h, "image_blobs") == 2 and [c.id for c in h.search("pictures")] == [cid]
        assert h.folders() == ["School"] and h.trashed() == []
        with pytest.raises(HistoryError, match="no longer in Recently deleted"):
            h.restore_trashed(kept.id)  # twice: refused, nothing doubled
        assert [c.id for c in h.list_conversations()] == [other, cid]


def test_the_trash_lists_the_last_deleted_first_and_forgets_on_request(tmp_path):
    with History(tmp_path / "h.sqlite3") as h:
        ids = [h.create_conversation(t).id for t in ("A", "B", "C", "D")]
        for cid in ids:
            h.append_message(cid, "user", "hello")
        trashed = [h.trash_conversation(cid) for cid in ids]
        assert [t.title for t in h.trashed()] == ["D", "C", "B", "A"]
        assert h.forget_trashed([trashed[0].id, trashed[2].id, 999_999]) == 2  # (an unknown id: none)
        assert [t.title for t in h.trashed()] == ["D", "B"]
        with pytest.raises(HistoryError, match="no longer"):
            h.restore_trashed(trashed[0].id)
        assert h.forget_trashed() == 2 and h.trashed() == []
        assert h.list_conversations() == [] and _count(h, "messages") == 0


def test_a_chat_past_its_days_in_the_trash_is_deleted_for_good(tmp_path):
    with History(tmp_path / "h.sqlite3") as h:
        old, recent, newer = (
            h.trash_conversation(h.create_conversation(t).id) for t in ("old", "recent", "new")
        )
        _backdate(h, old.id, TRASH_DAYS + 0.01)
        _backdate(h, recent.id, TRASH_DAYS - 1)
        assert h.trash_count() == 2 and _count(h, "trash") == 3  # (counted, not yet forgotten)
        assert [t.title for t in h.trashed()] == ["new", "recent"]  # listing forgets the old one
        _backdate(h, recent.id, 2)
        h.trash_conversation(h.create_conversation("another").id)  # so does a deletion
        assert [t.title for t in h.trashed()] == ["another", "new"]
        assert _count(h, "trash") == 2


def test_delete_for_good_keeps_nothing(tmp_path):
    with History(tmp_path / "h.sqlite3") as h:
        cid = h.create_conversation("Gone").id
        h.delete_conversation(cid)  # (not through the trash)
        assert h.trashed() == []
        with pytest.raises(ConversationNotFound):
            h.trash_conversation(cid)  # an unknown chat: said, and nothing is kept
        assert _count(h, "trash") == 0


def test_a_chat_whose_id_is_taken_again_or_whose_rows_are_unreadable_stays_in_the_trash(tmp_path):
    with History(tmp_path / "h.sqlite3") as h:
        a = h.create_conversation("A").id
        h.append_message(a, "user", "kept")
        entry = h.trash_conversation(a)
        # its id taken again (a conversation written with that id by hand, say): refused, kept
        h._db.execute("INSERT INTO conversations (id, title, created, updated) VALUES (?, 'x', 1, 1)", (a,))
        with pytest.raises(HistoryError, match="there already"):
            h.restore_trashed(entry.id)
        assert h.trashed() == [entry] and h.load_conversation(a).title == "x"
        h.delete_conversation(a)
        # rows that cannot be read: said, kept (so nothing more is lost)
        h._db.execute("UPDATE trash SET rows_json = 'not json' WHERE id = ?", (entry.id,))
        with pytest.raises(HistoryError, match="cannot be read"):
            h.restore_trashed(entry.id)
        assert h.trashed() == [entry]


def test_a_history_from_before_the_migration_gets_a_trash(tmp_path):
    p = tmp_path / "before.sqlite3"
    history_before(
        p,
        "m015_trash",
        "INSERT INTO conversations (id, title, created, updated) VALUES (7, 'Old chat', 1.0, 2.0);",
    )
    with History(p) as h:
        assert h.applied_migrations == ["m015_trash"]
        entry = h.trash_conversation(7)
        assert h.trashed() == [entry] and h.restore_trashed(entry.id) == 7
        assert h.get_conversation(7).title == "Old chat"


def test_rows_go_to_json_and_back_with_every_kind_of_value():
    rows = {
        "t": (["a", "b", "c", "d", "e"], [(None, 3, 0.1 + 0.2, 'é \ud800 {"b64": 1}', b"\x00\xff")]),
        "empty": (["x"], []),
    }
    back = rows_from_json(rows_to_json(rows))
    assert back == rows and isinstance(back["t"][1][0][4], bytes)
    assert math.isclose(back["t"][1][0][2], 0.1 + 0.2) and back["t"][1][0][2] == 0.1 + 0.2
    for bad in ("nonsense", '{"t": 1}', '{"t": [["a"], [[{"x": 1}]]]}'):
        with pytest.raises((ValueError, KeyError, TypeError)):
            rows_from_json(bad)
