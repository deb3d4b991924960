"""The history database's schema, as named migrations applied once each, in order (simonw/llm's way).

Each migration is a function decorated with ``@migration``; its name is the function's own
``__name__``, recorded in the ``migrations`` table when it is applied. A database opened again
applies only the migrations it has not recorded. So: never rename or edit a migration that has
shipped (users' databases know it by that name); change the schema by adding a new function at
the end.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable, Sequence

__all__ = ["MIGRATIONS", "Migration", "apply_migrations", "migration"]

MigrationFn = Callable[[sqlite3.Connection], None]
Migration = tuple[str, MigrationFn]

MIGRATIONS: list[Migration] = []  # (name, function), in the order they are applied


def migration(fn: MigrationFn) -> MigrationFn:
    """Register ``fn`` as the next migration, named after the function."""
    MIGRATIONS.append((fn.__name__, fn))
    return fn


def _fts5_available(db: sqlite3.Connection) -> bool:
    """Whether this SQLite has FTS5 (without it ``m005_message_fts`` adds no full-text index)."""
    try:
        db.execute("CREATE VIRTUAL TABLE temp._fts5_probe USING fts5(x)")
        db.execute("DROP TABLE temp._fts5_probe")
        return True
    except sqlite3.OperationalError:
        return False


# ---------------------------------------------------------------------------------------------
# The migrations, oldest first


@migration
def m001_initial(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE conversations (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            title TEXT NOT NULL DEFAULT '',
            created REAL NOT NULL,
            updated REAL NOT NULL,
            model_path TEXT
        )"""
    )
    db.execute(
        """CREATE TABLE messages (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            role TEXT NOT NULL,
            content TEXT NOT NULL DEFAULT '',
            created REAL NOT NULL,
            UNIQUE (conversation_id, position)
        )"""
    )


@migration
def m002_message_details(db: sqlite3.Connection) -> None:
    db.execute("ALTER TABLE conversations ADD COLUMN settings_json TEXT")
    for col in (
        "reasoning TEXT",
        "status TEXT NOT NULL DEFAULT 'complete'",
        "prompt_tokens INTEGER",
        "completion_tokens INTEGER",
        "tool_call_id TEXT",
        "name TEXT",
        "error TEXT",
    ):
        db.execute(f"ALTER TABLE messages ADD COLUMN {col}")
    db.execute("CREATE INDEX messages_status ON messages(status)")


@migration
def m003_tool_calls(db: sqlite3.Connection) -> None:
    db.execute(
        """CREATE TABLE tool_calls (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            position INTEGER NOT NULL DEFAULT 0,
            call_id TEXT NOT NULL,
            name TEXT NOT NULL,
            arguments_json TEXT,
            raw TEXT NOT NULL DEFAULT '',
            result TEXT,
            error TEXT,
            duration_s REAL,
            approval TEXT
        )"""
    )
    db.execute("CREATE INDEX tool_calls_message ON tool_calls(message_id)")


@migration
def m004_indexes(db: sqlite3.Connection) -> None:
    db.execute("CREATE INDEX conversations_updated ON conversations(updated DESC, id DESC)")


@migration
def m005_message_fts(db: sqlite3.Connection) -> None:
    """Full-text index of message text (FTS5, kept in sync by triggers); skipped without FTS5."""
    if not _fts5_available(db):
        return
    db.execute(
        "CREATE VIRTUAL TABLE messages_fts USING fts5("
        "content, reasoning, content='messages', content_rowid='id', tokenize='unicode61')"
    )
    db.execute(
        "INSERT INTO messages_fts(rowid, content, reasoning) SELECT id, content, coalesce(reasoning, '') FROM messages"
    )
    db.execute(
        """CREATE TRIGGER messages_fts_ai AFTER INSERT ON messages BEGIN
            INSERT INTO messages_fts(rowid, content, reasoning)
            VALUES (new.id, new.content, coalesce(new.reasoning, ''));
        END"""
    )
    db.execute(
        """CREATE TRIGGER messages_fts_ad AFTER DELETE ON messages BEGIN
            INSERT INTO messages_fts(messages_fts, rowid, content, reasoning)
            VALUES ('delete', old.id, old.content, coalesce(old.reasoning, ''));
        END"""
    )
    db.execute(
        """CREATE TRIGGER messages_fts_au AFTER UPDATE OF content, reasoning ON messages BEGIN
            INSERT INTO messages_fts(messages_fts, rowid, content, reasoning)
            VALUES ('delete', old.id, old.content, coalesce(old.reasoning, ''));
            INSERT INTO messages_fts(rowid, content, reasoning)
            VALUES (new.id, new.content, coalesce(new.reasoning, ''));
        END"""
    )


@migration
def m006_message_writer(db: sqlite3.Connection) -> None:
    """Who is streaming a message ("<pid>:<token>"), so opening the file elsewhere does not
    mark another live window's reply as interrupted."""
    db.execute("ALTER TABLE messages ADD COLUMN writer TEXT")


@migration
def m007_message_notices(db: sqlite3.Connection) -> None:
    """The notices (banners) shown above a reply, as a JSON list, so a reopened conversation
    shows them again."""
    db.execute("ALTER TABLE messages ADD COLUMN notices_json TEXT")


@migration
def m008_message_extra(db: sqlite3.Connection) -> None:
    """What else a reply carries, as a JSON object: calls it did not finish (cut off or to an
    undeclared tool), its statistics (tokens, tokens/s, time to first token) and the model and
    settings it was made with."""
    db.execute("ALTER TABLE messages ADD COLUMN extra_json TEXT")


@migration
def m009_reply_versions(db: sqlite3.Connection) -> None:
    """The versions of a reply that Regenerate kept (``number`` 1, 2, ... in the order they were
    made), per the user message they answer (its ``user_position``). The version in the
    conversation itself has its row with ``messages_json`` NULL; every other row holds its
    messages (the replies, their calls with results, the tool results) as a JSON list."""
    db.execute(
        """CREATE TABLE reply_versions (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            conversation_id INTEGER NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
            user_position INTEGER NOT NULL,
            number INTEGER NOT NULL,
            created REAL NOT NULL,
            messages_json TEXT,
            UNIQUE (conversation_id, user_position, number)
        )"""
    )


@migration
def m010_turn_settings(db: sqlite3.Connection) -> None:
    """The settings a turn was sent with (its thinking choice, sampling, max_tokens and tool
    choice), as a JSON object on its user message, so Regenerate and Continue use them again
    (issue 28, U3), in a reopened conversation too. NULL for a turn sent before it."""
    db.execute("ALTER TABLE messages ADD COLUMN turn_settings_json TEXT")


@migration
def m011_message_images(db: sqlite3.Connection) -> None:
    """The images of a user message (issue 30), kept beside the messages rather than inside their
    JSON: ``image_blobs`` holds each distinct image once (by the SHA-256 of its bytes, with its
    media type and size), ``message_images`` says which images a message has, in order. A blob no
    message uses any more is deleted with the last row that used it (the trigger), so deleting a
    conversation or cutting it short frees its images."""
    db.execute(
        """CREATE TABLE image_blobs (
            sha256 TEXT PRIMARY KEY,
            data BLOB NOT NULL,
            media_type TEXT NOT NULL,
            n_bytes INTEGER NOT NULL
        )"""
    )
    db.execute(
        """CREATE TABLE message_images (
            message_id INTEGER NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
            position INTEGER NOT NULL,
            sha256 TEXT NOT NULL REFERENCES image_blobs(sha256),
            PRIMARY KEY (message_id, position)
        )"""
    )
    db.execute("CREATE INDEX message_images_sha256 ON message_images(sha256)")
    db.execute(
        """CREATE TRIGGER message_images_gc AFTER DELETE ON message_images BEGIN
            DELETE FROM image_blobs WHERE sha256 = old.sha256
                AND NOT EXISTS (SELECT 1 FROM message_images WHERE sha256 = old.sha256);
        END"""
    )


@migration
def m012_conversation_system_prompt(db: sqlite3.Connection) -> None:
    """A conversation's own system prompt, in place of the one in Settings (or a made model's)
    for that conversation only. NULL: the one in Settings."""
    db.execute("ALTER TABLE conversations ADD COLUMN system_prompt TEXT")


@migration
def m013_conversation_pinned(db: sqlite3.Connection) -> None:
    """Pinned conversations: the conversation list shows them first, under "Pinned" (0: not)."""
    db.execute("ALTER TABLE conversations ADD COLUMN pinned INTEGER NOT NULL DEFAULT 0")


@migration
def m014_conversation_folder(db: sqlite3.Connection) -> None:
    """Folders in the conversation list: a conversation's folder by its name (NULL: in none). A
    folder is the name its conversations share: it has no row of its own."""
    db.execute("ALTER TABLE conversations ADD COLUMN folder TEXT")


@migration
def m015_trash(db: sqlite3.Connection) -> None:
    """Recently deleted chats: a deleted conversation's rows (every table's, as JSON, bytes in
    base64) kept for a while to be put back as they were; its title, folder, message count and
    when it was deleted to list it. Nothing else reads these rows: a chat in the trash is gone
    from the list, the search and the exports."""
    db.execute(
        """CREATE TABLE trash (
            id INTEGER PRIMARY KEY AUTOINCREMENT,
            conversation_id INTEGER NOT NULL,
            title TEXT NOT NULL,
            folder TEXT,
            messages INTEGER NOT NULL,
            deleted_at REAL NOT NULL,
            rows_json TEXT NOT NULL
        )"""
    )
    db.execute("CREATE INDEX trash_deleted_at ON trash(deleted_at)")


def apply_migrations(db: sqlite3.Connection, migrations: Sequence[Migration] = MIGRATIONS) -> list[str]:
    """Apply each not-yet-applied migration in order, each in its own transaction.

    ``db`` must be in autocommit mode (``isolation_level=None``). Returns the names applied.
    """
    db.execute("CREATE TABLE IF NOT EXISTS migrations (name TEXT PRIMARY KEY, applied_at REAL NOT NULL)")
    applied: list[str] = []
    for name, fn in migrations:
        db.execute("BEGIN IMMEDIATE")
        try:
            # checked inside the write lock: two processes opening at once apply each migration once
            if db.execute("SELECT 1 FROM migrations WHERE name = ?", (name,)).fetchone():
                db.execute("COMMIT")
                continue
            fn(db)
            db.execute("INSERT INTO migrations (name, applied_at) VALUES (?, ?)", (name, time.time()))
            db.execute("COMMIT")
        except BaseException:
            db.execute("ROLLBACK")
            raise
        applied.append(name)
    return applied
