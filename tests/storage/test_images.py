"""Images kept with the conversation (issue 30), on real SQLite files: a user message's images come
back as the same bytes in a reopened history, each distinct image is stored once and freed with the
last message that used it, the bound (``images.max_bytes``) refuses an image without losing
anything, and ``m011_message_images`` upgrades a history from before it."""

from __future__ import annotations

import hashlib
import json

import pytest

from app.engine.messages import Message
from app.storage.history import (
    DEFAULT_MAX_IMAGE_BYTES,
    History,
    HistoryError,
    ImageTooLargeError,
    TurnMessage,
)
from app.storage.migrations import MIGRATIONS
from app.storage.settings import Settings, load_settings, save_settings
from tests.support.history import history_before
from tests.support.tiny_vision import bmp_bytes, gif_bytes, png_bytes

PNG, GIF, BMP = png_bytes(), gif_bytes(), bmp_bytes()


def _count(h: History, table: str) -> int:
    return h._db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]


def test_the_migration_is_named_once():
    names = [name for name, _fn in MIGRATIONS]
    assert names.count("m011_message_images") == 1
    assert names.index("m011_message_images") > names.index("m010_turn_settings")


def test_a_reopened_history_gives_back_the_same_images(tmp_path):
    p = tmp_path / "h.sqlite3"
    with History(p) as h:
        cid = h.create_conversation("pictures").id
        h.append_message(cid, "user", "what is in these?", images=[PNG, GIF, BMP, PNG])
        h.append_message(cid, "assistant", "a gradient, four times")
        h.append_message(cid, "user", "and this one?", images=[bytearray(GIF)])
        assert _count(h, "image_blobs") == 3  # the PNG sent twice and the GIF sent again: once each
    with History(p) as h:
        conv = h.load_conversation(cid)
        first, reply, second = conv.messages
        assert first.images == [PNG, GIF, BMP, PNG] and all(type(i) is bytes for i in first.images)
        assert reply.images == [] and second.images == [GIF]
        assert [(i.media_type, i.n_bytes, i.sha256) for i in first.image_info] == [
            (kind, len(data), hashlib.sha256(data).hexdigest())
            for kind, data in (("image/png", PNG), ("image/gif", GIF), ("image/bmp", BMP), ("image/png", PNG))
        ]
        assert h.get_message(first.id).images == first.images
        # the chat loop's messages, as the window and the recorder rebuild them
        messages = [Message.from_dict(m.to_chat_dict()) for m in conv.messages]
        assert [m.images for m in messages] == [[PNG, GIF, BMP, PNG], [], [GIF]]
        assert (
            json.loads(json.dumps(conv.to_dict()))["messages"][2]["images"] == messages[2].to_dict()["images"]
        )


def test_an_image_over_the_bound_is_refused_and_nothing_is_lost(tmp_path):
    p = tmp_path / "h.sqlite3"
    big = png_bytes(120, 120)
    assert len(PNG) < 4096 < len(big)
    with History(p, max_image_bytes=4096) as h:
        cid = h.create_conversation("bounded").id
        h.append_message(cid, "user", "first", images=[PNG])
        h.append_message(cid, "assistant", "a gradient")
        before = h.load_conversation(cid)
        with pytest.raises(ImageTooLargeError, match=r"image 2 of 2 is .* more than .*images\.max_bytes"):
            h.append_message(cid, "user", "second", images=[GIF, big])
        with pytest.raises(HistoryError, match=r"the image is"):
            h.append_message(cid, "user", "third", images=[big])
        after = h.load_conversation(cid)
        assert [(m.position, m.role, m.content, m.images) for m in after.messages] == [
            (m.position, m.role, m.content, m.images) for m in before.messages
        ]
        assert _count(h, "image_blobs") == 1 and _count(h, "message_images") == 1  # the GIF is not kept
        h.max_image_bytes = len(big)  # the setting raised: the same image is kept
        h.append_message(cid, "user", "second", images=[GIF, big])
    with History(p) as h:
        assert h.max_image_bytes == DEFAULT_MAX_IMAGE_BYTES
        assert [m.images for m in h.load_conversation(cid).messages] == [[PNG], [], [GIF, big]]


def test_only_a_user_message_keeps_images(tmp_path):
    with History(tmp_path / "h.sqlite3") as h:
        cid = h.create_conversation("t").id
        with pytest.raises(HistoryError, match="only a user message"):
            h.append_message(cid, "assistant", "look", images=[PNG])
        with pytest.raises(HistoryError, match="must be bytes"):
            h.append_message(cid, "user", "look", images=["iVBORw0KGgo="])  # type: ignore[list-item]
        assert h.load_conversation(cid).messages == []


def test_images_go_with_the_last_message_that_used_them(tmp_path):
    with History(tmp_path / "h.sqlite3") as h:
        a = h.create_conversation("a").id
        b = h.create_conversation("b").id
        h.append_message(a, "user", "one", images=[PNG, GIF])
        h.append_message(a, "assistant", "ok")
        h.append_message(a, "user", "two", images=[BMP])
        h.append_message(b, "user", "shared", images=[PNG])
        assert _count(h, "image_blobs") == 3
        h.truncate_after(a, 1)  # edit-and-resend cuts "two" and its BMP
        assert _count(h, "image_blobs") == 2
        h.delete_conversation(a)  # the GIF goes; the PNG stays, b still uses it
        assert _count(h, "image_blobs") == 1 and _count(h, "message_images") == 1
        assert h.load_conversation(b).messages[0].images == [PNG]
        h.delete_conversation(b)
        assert _count(h, "image_blobs") == 0


def test_regenerate_search_and_a_recorded_turn_keep_the_users_images(tmp_path):
    with History(tmp_path / "h.sqlite3") as h:
        cid = h.create_conversation("t").id
        user = h.append_message(cid, "user", "describe the zebra picture", images=[PNG])
        partial = h.begin_assistant_message(cid)
        h.record_turn(cid, partial.id, [TurnMessage("assistant", "stripes")])
        h.archive_reply(cid, user.position)
        h.record_turn(cid, h.begin_assistant_message(cid).id, [TurnMessage("assistant", "a horse")])
        h.select_reply_version(cid, user.position, 1)
        conv = h.load_conversation(cid)
        assert [(m.role, m.content, m.images) for m in conv.messages] == [
            ("user", "describe the zebra picture", [PNG]),
            ("assistant", "stripes", []),
        ]
        assert [m.content for m in h.reply_version(cid, user.position, 2)] == ["a horse"]
        assert [c.id for c in h.search("zebra")] == [cid]


def test_a_history_from_before_the_migration_keeps_its_conversations(tmp_path):
    p = tmp_path / "before.sqlite3"
    history_before(
        p,
        "m011_message_images",
        """
        INSERT INTO conversations (id, title, created, updated) VALUES (1, 'Old chat', 1.0, 2.0);
        INSERT INTO messages (conversation_id, position, role, content, created)
            VALUES (1, 0, 'user', 'what is a zebra', 1.0);
        INSERT INTO messages (conversation_id, position, role, content, created)
            VALUES (1, 1, 'assistant', 'a striped horse', 2.0);
        """,
    )
    with History(p) as h:
        assert h.applied_migrations == ["m011_message_images"]
        conv = h.load_conversation(1)
        assert [(m.role, m.content, m.images) for m in conv.messages] == [
            ("user", "what is a zebra", []),
            ("assistant", "a striped horse", []),
        ]
        h.append_message(1, "user", "and this?", images=[GIF])
    with History(p) as again:
        assert again.applied_migrations == []
        assert [m.images for m in again.load_conversation(1).messages] == [[], [], [GIF]]
        assert [c.title for c in again.search("zebra")] == ["Old chat"]


def test_the_image_settings_default_round_trip_and_refuse_bad_values(tmp_path):
    s = Settings()
    assert (s.images.max_bytes, s.images.store) == (20 * 1024 * 1024, "original")
    assert DEFAULT_MAX_IMAGE_BYTES == s.images.max_bytes
    assert all(f.description for f in type(s.images).model_fields.values())
    s.images.store = "reencoded"
    s.images.max_bytes = 5 * 1024 * 1024
    path = tmp_path / "settings.json"
    save_settings(s, path)
    back, notice = load_settings(path)
    assert notice is None and (back.images.max_bytes, back.images.store) == (5 * 1024 * 1024, "reencoded")
    path.write_text(json.dumps({"schema_version": 2, "images": {"store": "webp", "max_bytes": 7000}}))
    salvaged, notice = load_settings(path)
    assert notice is not None and salvaged.images.store == "original" and salvaged.images.max_bytes == 7000
