"""A deleted conversation put back as it was (the window's Undo after Delete), on real SQLite: the
same id, messages, tool calls and results, reply versions, pictures, folder, pin and search index;
a picture shared with another chat is kept once; a second put-back is refused."""

from __future__ import annotations

import pytest

from app.storage.history import ConversationNotFound, History, HistoryError
from tests.support.history import full_chat
from tests.support.tiny_vision import gif_bytes, png_bytes

PNG, GIF = png_bytes(), gif_bytes()


def _count(h: History, table: str) -> int:
    return h._db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def test_a_deleted_chat_comes_back_as_it_was(tmp_path):
    h = History(tmp_path / "h.sqlite3")
    cid = full_chat(h, (PNG, GIF))
    other = h.create_conversation("Shared").id
    h.append_message(other, "user", "the same picture", images=[PNG])  # PNG is shared, GIF is not
    before = h.load_conversation(cid).to_dict()
    version = h.reply_version(cid, h.load_conversation(cid).messages[0].position, 1)
    assert [c.id for c in h.search("pictures")] == [cid]

    deleted = h.delete_conversation(cid)
    assert (deleted.id, deleted.title) == (cid, "Maths")
    with pytest.raises(ConversationNotFound):
        h.load_conversation(cid)
    assert _count(h, "image_blobs") == 1 and h.search("pictures") == []  # the GIF went, the PNG stays

    h.undelete_conversation(deleted)
    back = h.load_conversation(cid)
    assert back.to_dict() == before  # messages, calls, results, pictures, folder, pin, prompt
    assert back.versions == {back.messages[0].position: (2, 2)}
    assert h.reply_version(cid, back.messages[0].position, 1) == version  # the earlier reply, its call
    assert _count(h, "image_blobs") == 2  # the GIF back, the shared PNG once
    assert [c.id for c in h.search("pictures")] == [cid]  # the search index follows
    assert [c.id for c in h.list_conversations()] == [other, cid]

    with pytest.raises(HistoryError, match="there already"):
        h.undelete_conversation(deleted)
    h.close()
    with History(tmp_path / "h.sqlite3") as again:  # written for good
        assert again.load_conversation(cid).to_dict() == before


def test_a_chat_is_not_found_twice(tmp_path):
    h = History(tmp_path / "h.sqlite3")
    cid = h.create_conversation("x").id
    h.delete_conversation(cid)
    with pytest.raises(ConversationNotFound):
        h.delete_conversation(cid)
