"""Conversation history in SQLite: named migrations, WAL, one short transaction per write.

Usage (the UI, from its main thread)::

    h = History()                       # app.storage.paths.history_path()
    conv = h.create_conversation("New chat", model_path=..., settings={...})
    h.append_message(conv.id, "user", "Hi")
    msg = h.begin_assistant_message(conv.id)      # status "streaming"
    h.update_partial(msg.id, "Hel", reasoning="")  # call periodically while streaming
    h.finish_message(msg.id, "complete")           # or "interrupted" / "error"
    h.load_conversation(conv.id).messages

A user message keeps the settings its turn was sent with (``append_message(..., turn_settings=...)``,
``MessageRecord.turn_settings``), so Regenerate and Continue use them again.

A user message keeps its images (``append_message(..., images=[png_bytes, ...])``,
``MessageRecord.images``: the same bytes, in order; ``to_chat_dict`` hands them to
``Message.from_dict``). They are stored as blobs beside the messages (``m011_message_images``), each
distinct image once, and an image over ``History.max_image_bytes`` (the ``images.max_bytes``
setting) is refused with :class:`ImageTooLargeError` before anything is written.

Regenerate keeps the reply it replaces: ``archive_reply(cid, user_position)`` stores it (its
messages, calls and results) as a numbered version of that turn; ``Conversation.versions`` says
which version each turn shows and how many it has; ``reply_version`` reads one and
``select_reply_version`` makes one the reply the conversation goes on from (the last turn's).

A message still "streaming" when the database is opened again (the app was killed mid-reply)
is marked "interrupted": every partial update is already committed, so nothing shown is lost.

The schema is built by the named migrations of ``app.storage.migrations``, each applied once.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import re
import sqlite3
import threading
import time
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Literal, TypedDict, TypeVar, Unpack

from app.calls import APPROVAL_OUTCOMES, IncompleteCall, ToolCall, ToolResult
from app.storage._trash_rows import Rows, rows_from_json, rows_to_json
from app.storage.migrations import apply_migrations
from app.storage.paths import history_path
from app.units import format_bytes

__all__ = [
    "DEFAULT_MAX_IMAGE_BYTES",
    "MAX_FOLDER_NAME",
    "MATCH_MARKS",
    "MESSAGE_STATUSES",
    "ROLES",
    "Conversation",
    "ConversationNotFound",
    "DeletedConversation",
    "History",
    "HistoryError",
    "HistoryNotice",
    "ImageTooLargeError",
    "KeptReply",
    "MessageNotFound",
    "MessageRecord",
    "StoredImage",
    "StoredNotice",
    "StoredToolCall",
    "TRASH_DAYS",
    "TrashedChat",
    "TurnMessage",
    "check_image_sizes",
    "folder_name",
    "media_type_of",
    "open_history",
]

ROLES = ("system", "user", "assistant", "tool")
MESSAGE_STATUSES = ("streaming", "complete", "interrupted", "error")
MessageStatus = Literal["streaming", "complete", "interrupted", "error"]


class HistoryError(Exception):
    """Bad input to the history API (unknown role/status, bad JSON...)."""


class ConversationNotFound(HistoryError, LookupError):
    pass


class MessageNotFound(HistoryError, LookupError):
    pass


class ImageTooLargeError(HistoryError, ValueError):
    """A message's image is larger than the history keeps (``History.max_image_bytes``)."""


#: the largest image the history keeps by default (the ``images.max_bytes`` setting's default)
DEFAULT_MAX_IMAGE_BYTES = 20 * 1024 * 1024


# ---------------------------------------------------------------------------------------------
# Records


@dataclass
class StoredToolCall:
    """A tool call as stored with its assistant message, with what came of it."""

    id: int
    message_id: int
    call_id: str
    name: str
    arguments: dict[str, Any] | list[Any] | str | None
    raw: str = ""
    result: str | None = None
    error: str | None = None
    duration_s: float | None = None
    approval: str | None = None
    position: int = 0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @property
    def call(self) -> ToolCall:
        """The call in the shape every layer uses."""
        args = self.arguments if isinstance(self.arguments, dict | str) else {}
        return ToolCall(id=self.call_id, name=self.name, arguments=args, raw=self.raw)

    @property
    def outcome(self) -> ToolResult | None:
        """What came of the call, or None when it was not run (or not yet)."""
        if self.result is None and self.error is None:
            return None
        approval: Any = self.approval if self.approval in APPROVAL_OUTCOMES else "auto"
        return ToolResult(
            call_id=self.call_id,
            name=self.name,
            content=self.result,
            error=self.error,
            duration_s=self.duration_s or 0.0,
            approval=approval,
        )


@dataclass(frozen=True, slots=True)
class StoredNotice:
    """A notice shown above a reply (a banner): its code, its words, the setting its link opens."""

    code: str
    message: str = ""
    setting: str | None = None


@dataclass(frozen=True, slots=True)
class StoredImage:
    """What the history knows of one stored image besides its bytes: the SHA-256 of its bytes
    (hex), its media type (from its first bytes; ``application/octet-stream`` when unknown) and
    its size in bytes."""

    sha256: str
    media_type: str
    n_bytes: int


# an image file's first bytes -> its media type (the history sniffs; the engine checks and decodes)
_MAGIC: tuple[tuple[int, bytes, str], ...] = (
    (0, b"\x89PNG\r\n\x1a\n", "image/png"),
    (0, b"\xff\xd8\xff", "image/jpeg"),
    (0, b"GIF87a", "image/gif"),
    (0, b"GIF89a", "image/gif"),
    (8, b"WEBP", "image/webp"),
    (0, b"BM", "image/bmp"),
)


def media_type_of(data: bytes) -> str:
    """The media type an image's first bytes name (``application/octet-stream`` when none)."""
    for offset, magic, kind in _MAGIC:
        if data[offset : offset + len(magic)] == magic and (offset == 0 or data[:4] == b"RIFF"):
            return kind
    return "application/octet-stream"


@dataclass(frozen=True)
class TurnMessage:
    """One message of a finished turn, as :meth:`History.record_turn` stores it."""

    role: str
    content: str = ""
    reasoning: str | None = None
    tool_call_id: str | None = None
    name: str | None = None
    tool_calls: Sequence[ToolCall] = ()
    results: Mapping[str, ToolResult] = field(default_factory=dict)
    notices: Sequence[Mapping[str, Any]] = ()
    extra: Mapping[str, Any] = field(default_factory=dict)  # stored as the message's extra JSON


class _ReplyFields(TypedDict, total=False):
    """The columns a reply's end may set (``finish_message``), and a new message's too."""

    reasoning: str | None
    prompt_tokens: int | None
    completion_tokens: int | None
    error: str | None


class _MessageFields(_ReplyFields, total=False):
    """The optional columns of a new message (``append_message``)."""

    status: MessageStatus
    tool_call_id: str | None
    name: str | None
    turn_settings: Mapping[str, Any] | None


class _FinishFields(_ReplyFields, total=False):
    """What ``finish_message`` may set besides the status."""

    content: str | None


def _known(fields: Mapping[str, Any], kind: Any) -> Mapping[str, Any]:
    """``fields``, checked to hold only keys of the TypedDict ``kind`` (as a signature would)."""
    unknown = set(fields) - set(kind.__optional_keys__)
    if unknown:
        raise TypeError(f"unexpected keyword arguments: {', '.join(sorted(unknown))}")
    return fields


@dataclass
class MessageRecord:
    id: int
    conversation_id: int
    position: int
    role: str
    content: str
    reasoning: str | None = None
    status: str = "complete"
    created: float = 0.0
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    tool_call_id: str | None = None
    name: str | None = None
    error: str | None = None
    tool_calls: list[StoredToolCall] = field(default_factory=list)
    # notices shown above this reply (banners): dicts with code, message and setting
    notices: list[dict[str, Any]] = field(default_factory=list)
    # incomplete_calls, stats, model, settings (see TurnMessage.extra)
    extra: dict[str, Any] = field(default_factory=dict)
    # a user message's: the settings its turn was sent with (what Regenerate and Continue use
    # again); None for a turn sent before they were kept, and for every other message
    turn_settings: dict[str, Any] | None = None
    # a user message's images: the bytes of each, in order (what ``Message.images`` holds), and
    # what the history knows of each (``image_info[i]`` is ``images[i]``'s)
    images: list[bytes] = field(default_factory=list)
    image_info: list[StoredImage] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The record as JSON-ready values (images as base64 text)."""
        d = asdict(self)
        d["tool_calls"] = [tc.to_dict() for tc in self.tool_calls]
        d["images"] = [base64.b64encode(i).decode("ascii") for i in self.images]
        return d

    @property
    def shown_notices(self) -> list[StoredNotice]:
        """The notices shown above this reply (``notices``, typed)."""
        return [
            StoredNotice(str(n.get("code") or ""), str(n.get("message") or ""), n.get("setting") or None)
            for n in self.notices
            if isinstance(n, dict)
        ]

    @property
    def incomplete_calls(self) -> list[IncompleteCall]:
        """The calls the model wrote in this reply that were not run (cut off, or undeclared)."""
        stored = self.extra.get("incomplete_calls") or []
        return [IncompleteCall.from_dict(c) for c in stored if isinstance(c, dict)]

    def to_chat_dict(self) -> dict[str, Any]:
        """The message as the chat loop's ``Message.from_dict`` expects (role, content, ...)."""
        d: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.reasoning:
            d["reasoning"] = self.reasoning
        if self.tool_calls:
            d["tool_calls"] = [tc.call.to_dict() for tc in self.tool_calls]
        if self.tool_call_id is not None:
            d["tool_call_id"] = self.tool_call_id
        if self.name is not None:
            d["name"] = self.name
        if self.extra.get("incomplete_calls"):
            d["incomplete_calls"] = list(self.extra["incomplete_calls"])
        if self.images:
            d["images"] = [base64.b64encode(i).decode("ascii") for i in self.images]
        return d


@dataclass
class Conversation:
    id: int
    title: str
    created: float
    updated: float
    model_path: str | None = None
    settings: dict[str, Any] | None = None  # snapshot of the settings used
    message_count: int = 0
    # the conversation's own system prompt, in place of the one in Settings; None: that one
    system_prompt: str | None = None
    #: pinned to the top of the conversation list (a property of the list: a branch or an import
    #: of a pinned conversation is not pinned)
    pinned: bool = False
    #: the folder it is listed in (its name), or None; a branch stays in its folder, an import
    #: goes in none
    folder: str | None = None
    messages: list[MessageRecord] = field(default_factory=list)  # filled by load_conversation
    # the reply versions Regenerate kept, by the position of the user message they answer:
    # (the number of the version in the conversation, how many there are); filled by load_conversation
    versions: dict[int, tuple[int, int]] = field(default_factory=dict)
    #: those versions themselves, for an export or a copy that keeps them (filled by
    #: ``load_conversation(..., kept=True)``; stored again by ``restore_conversation``)
    kept_replies: list[KeptReply] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["messages"] = [m.to_dict() for m in self.messages]
        d["kept_replies"] = [k.to_dict() for k in self.kept_replies]
        return d


@dataclass
class KeptReply:
    """A version of a reply Regenerate kept aside, as an export carries it: the user message it
    answers (its index in the conversation's messages, which an import renumbers), its number,
    when it was kept, and its messages (None: it is the version in the conversation)."""

    user_index: int
    number: int
    created: float
    messages: list[MessageRecord] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "user_index": self.user_index,
            "number": self.number,
            "created": self.created,
            "messages": None if self.messages is None else [m.to_dict() for m in self.messages],
        }


# ---------------------------------------------------------------------------------------------
# The store


_BRANCH = " (branch)"  # a branched conversation's title ends so (once, however often it is branched)
_COPY = " (copy)"  # a duplicated conversation's title ends so
_POSITIONS = "SELECT position FROM messages WHERE conversation_id = ? ORDER BY position"
_LIVE_TOKENS: set[str] = set()  # tokens of the History objects open in this process
_LIVE_LOCK = threading.Lock()


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    import psutil

    try:
        return psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def _writer_alive(writer: str | None) -> bool:
    """Is the History that began this streaming message still open (in any process)?"""
    if not writer:
        return False
    pid_text, _, token = writer.partition(":")
    try:
        pid = int(pid_text)
    except ValueError:
        return False
    if pid == os.getpid():
        with _LIVE_LOCK:
            return token in _LIVE_TOKENS
    return _pid_alive(pid)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _valid_text(value: Any) -> Any:
    """``value`` with lone surrogates (text UTF-8 cannot encode; models can write them as
    ``\\ud800`` escapes) replaced by U+FFFD, so SQLite can store it; other values unchanged."""
    if isinstance(value, str) and _SURROGATE.search(value):
        return _SURROGATE.sub("\ufffd", value)
    return value


class _ValidTextWriter:
    """The connection inside a write transaction: every bound text is made valid first."""

    __slots__ = ("_db",)

    def __init__(self, db: sqlite3.Connection) -> None:
        self._db = db

    def execute(self, sql: str, params: Sequence[Any] = ()) -> sqlite3.Cursor:
        return self._db.execute(sql, tuple(_valid_text(p) for p in params))

    def executemany(self, sql: str, rows: Any) -> sqlite3.Cursor:
        return self._db.executemany(sql, (tuple(_valid_text(p) for p in row) for row in rows))


def _dumps(value: Any, what: str) -> str | None:
    if value is None:
        return None
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError) as exc:
        raise HistoryError(f"{what} is not JSON-serialisable: {exc}") from exc


def _loads(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text  # keep what was stored rather than losing it


def _fts_query(text: str) -> str:
    """Turn free text into a safe FTS5 query: every word quoted, prefix-matched, AND-ed."""
    terms = [t for t in text.split() if t]
    return " ".join('"' + t.replace('"', '""') + '"*' for t in terms)


#: the rows of one conversation (its id the one parameter), in the order they are put back
_CONVERSATION_ROWS = (
    ("conversations", "id = ?"),
    ("messages", "conversation_id = ?"),
    ("tool_calls", "message_id IN (SELECT id FROM messages WHERE conversation_id = ?)"),
    ("reply_versions", "conversation_id = ?"),
    (
        "image_blobs",
        "sha256 IN (SELECT i.sha256 FROM message_images i JOIN messages m ON m.id = i.message_id "
        "WHERE m.conversation_id = ?)",
    ),
    ("message_images", "message_id IN (SELECT id FROM messages WHERE conversation_id = ?)"),
)


def _take_conversation(db: sqlite3.Connection, conversation_id: int) -> Rows:
    """Delete a conversation (cascade) in ``db``'s transaction; every row of it that went."""
    rows: Rows = {}
    for table, where in _CONVERSATION_ROWS:
        cur = db.execute(f"SELECT * FROM {table} WHERE {where}", (conversation_id,))
        rows[table] = ([d[0] for d in cur.description], cur.fetchall())
    if db.execute("DELETE FROM conversations WHERE id = ?", (conversation_id,)).rowcount == 0:
        raise ConversationNotFound(f"no conversation with id {conversation_id}")
    return rows


def _put_back(db: sqlite3.Connection, conversation_id: int, rows: Rows) -> None:
    """Insert the rows :func:`_take_conversation` took, in ``db``'s transaction (the search index
    follows by its triggers); HistoryError when a conversation of that id is there again."""
    if db.execute("SELECT 1 FROM conversations WHERE id = ?", (conversation_id,)).fetchone():
        raise HistoryError(f"a conversation with id {conversation_id} is there already")
    for table, _where in _CONVERSATION_ROWS:
        cols, values = rows.get(table, ([], []))
        if not values:
            continue
        verb = "INSERT OR IGNORE" if table == "image_blobs" else "INSERT"  # (blobs are shared)
        marks = ",".join("?" * len(cols))
        db.executemany(f"{verb} INTO {table} ({', '.join(cols)}) VALUES ({marks})", values)


def _row_value(rows: Rows, column: str) -> Any:
    """The conversation's ``column`` in the rows :func:`_take_conversation` took."""
    cols, values = rows["conversations"]
    return values[0][cols.index(column)]


def _purge_trash(db: sqlite3.Connection, now: float) -> None:
    db.execute("DELETE FROM trash WHERE deleted_at < ?", (now - TRASH_DAYS * 86400.0,))


#: how long a deleted chat stays in the trash (Recently deleted) before it is deleted for good
TRASH_DAYS = 30


@dataclass(frozen=True)
class TrashedChat:
    """A chat in the trash: the trash's id for it, the conversation's id (it comes back with it),
    its title, folder and message count, and when it was deleted (epoch seconds)."""

    id: int
    conversation_id: int
    title: str
    folder: str | None
    messages: int
    deleted_at: float


@dataclass(frozen=True)
class DeletedConversation:
    """A conversation :meth:`History.delete_conversation` deleted: its id, its title, and every row
    of it that went (per table: the column names and the rows), to put back."""

    id: int
    title: str
    rows: dict[str, tuple[list[str], list[tuple[Any, ...]]]] = field(repr=False)


#: what marks a search's match in :meth:`History.search_snippets`' words: before it, after it
MATCH_MARKS = ("\x02", "\x03")


def _around(text: str, word: str, reach: int = 40) -> str:
    """A few words of ``text`` around the first ``word`` in it (case aside), the word marked
    (:data:`MATCH_MARKS`), cut with "…"."""
    text = text.replace(MATCH_MARKS[0], "").replace(MATCH_MARKS[1], "")
    at = text.casefold().find(word.casefold())
    if at < 0:
        return text[: 2 * reach] + ("…" if len(text) > 2 * reach else "")
    start, end = max(0, at - reach), min(len(text), at + len(word) + reach)
    found = MATCH_MARKS[0] + text[at : at + len(word)] + MATCH_MARKS[1]
    return (
        ("…" if start else "")
        + text[start:at]
        + found
        + text[at + len(word) : end]
        + ("…" if end < len(text) else "")
    )


def _like_pattern(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


_R = TypeVar("_R")

_CONV_COLS = (
    "c.id, c.title, c.created, c.updated, c.model_path, c.settings_json, "
    "(SELECT count(*) FROM messages m WHERE m.conversation_id = c.id), c.system_prompt, c.pinned, c.folder"
)
_MSG_COLS = (
    "id, conversation_id, position, role, content, reasoning, status, created, "
    "prompt_tokens, completion_tokens, tool_call_id, name, error, notices_json, extra_json, turn_settings_json"
)
_TC_COLS = "id, message_id, call_id, name, arguments_json, raw, result, error, duration_s, approval, position"


def _record(cls: Callable[..., _R], row: sqlite3.Row | tuple, *json_at: int) -> _R:
    """A record made of ``row``'s columns in order, those at ``json_at`` read as JSON."""
    return cls(*(_loads(v) if i in json_at else v for i, v in enumerate(row)))


MAX_FOLDER_NAME = 80  # characters in a folder's name


def folder_name(text: str) -> str:
    """A folder's name as kept: its words with one space between them. ValueError when there are
    none or it is over :data:`MAX_FOLDER_NAME` characters."""
    name = " ".join(text.split())
    if not name:
        raise ValueError("a folder needs a name")
    if len(name) > MAX_FOLDER_NAME:
        raise ValueError(
            f"a folder's name has at most {MAX_FOLDER_NAME} characters (this one has {len(name)})"
        )
    return name


def _own_prompt(text: str | None) -> str | None:
    """A conversation's own system prompt as kept: None for none (or only white space)."""
    return text if isinstance(text, str) and text.strip() else None


def _conv(row: sqlite3.Row | tuple) -> Conversation:
    conv = _record(Conversation, row, 5)
    conv.pinned = bool(conv.pinned)
    return conv


def _rowid(cur: sqlite3.Cursor) -> int:
    """The id of the row an INSERT just wrote."""
    rowid = cur.lastrowid
    if rowid is None:  # pragma: no cover - sqlite3 sets it after every INSERT
        raise HistoryError("the database did not report the new row's id")
    return rowid


def _msg(row: sqlite3.Row | tuple) -> MessageRecord:
    notices, extra, turn = _loads(row[13]), _loads(row[14]), _loads(row[15])
    record = _record(MessageRecord, row[:13])
    record.notices = notices if isinstance(notices, list) else []
    record.extra = extra if isinstance(extra, dict) else {}
    record.turn_settings = turn if isinstance(turn, dict) else None
    return record


def _notice_dict(notice: Mapping[str, Any]) -> dict[str, Any]:
    if not isinstance(notice, Mapping) or not isinstance(notice.get("code"), str) or not notice["code"]:
        raise HistoryError(f"a notice needs a non-empty string 'code', got {notice!r:.80}")
    setting = notice.get("setting")
    return {
        "code": notice["code"],
        "message": str(notice.get("message") or ""),
        "setting": str(setting) if setting else None,
    }


def _tc(row: sqlite3.Row | tuple) -> StoredToolCall:
    return _record(StoredToolCall, row, 4)


class History:
    """The conversation store. Safe to share between threads (one connection, one lock).

    ``max_image_bytes``: the largest image a message may keep (the ``images.max_bytes`` setting;
    an attribute the window may change while the store is open)."""

    def __init__(
        self,
        path: str | os.PathLike[str] | None = None,
        *,
        timeout: float = 10.0,
        max_image_bytes: int = DEFAULT_MAX_IMAGE_BYTES,
    ) -> None:
        self.max_image_bytes = max_image_bytes
        self.path = Path(path) if path is not None else history_path()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._writer = f"{os.getpid()}:{uuid.uuid4().hex}"
        self._db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None, check_same_thread=False)
        try:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA foreign_keys=ON")
            self._db.execute("PRAGMA synchronous=NORMAL")
            self.applied_migrations = apply_migrations(self._db)
            self.has_fts = bool(
                self._db.execute("SELECT 1 FROM sqlite_master WHERE name = 'messages_fts'").fetchone()
            )
            self.recovered_messages = self._recover_streaming()
        except BaseException:
            self._db.close()
            raise
        with _LIVE_LOCK:
            _LIVE_TOKENS.add(self._writer.partition(":")[2])

    # -- plumbing ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        """One short write transaction, under the lock (text with lone surrogates is made valid)."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield _ValidTextWriter(self._db)  # type: ignore[misc]
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _read(self, sql: str, params: Sequence[Any] = ()) -> list[tuple]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def close(self) -> None:
        with _LIVE_LOCK:
            _LIVE_TOKENS.discard(self._writer.partition(":")[2])
        with self._lock:
            self._db.close()

    def __enter__(self) -> History:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _recover_streaming(self) -> int:
        """Mark "streaming" messages whose writer is gone (killed, crashed, closed) "interrupted"."""
        with self._tx() as db:
            rows = db.execute("SELECT id, writer FROM messages WHERE status = 'streaming'").fetchall()
            dead = [(mid,) for mid, writer in rows if not _writer_alive(writer)]
            db.executemany("UPDATE messages SET status = 'interrupted', writer = NULL WHERE id = ?", dead)
            return len(dead)

    @staticmethod
    def _touch(db: sqlite3.Connection, conversation_id: int, now: float) -> None:
        db.execute("UPDATE conversations SET updated = ? WHERE id = ?", (now, conversation_id))

    # -- conversations ----------------------------------------------------------------------

    def create_conversation(
        self,
        title: str = "",
        *,
        model_path: str | os.PathLike[str] | None = None,
        settings: dict[str, Any] | None = None,
        system_prompt: str | None = None,
    ) -> Conversation:
        """A new conversation; ``system_prompt``: its own, in place of the one in Settings."""
        now = time.time()
        settings_json = _dumps(settings, "settings snapshot")
        mp = os.fspath(model_path) if model_path is not None else None
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO conversations (title, created, updated, model_path, settings_json, system_prompt) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (title, now, now, mp, settings_json, _own_prompt(system_prompt)),
            )
            cid = _rowid(cur)
        return self.get_conversation(cid)

    def restore_conversation(self, conv: Conversation, *, place: bool = False) -> Conversation:
        """Store ``conv`` (read from an export: ``app.storage.export.conversation_from_json``) as a
        new conversation with its times, messages, calls, results, images and the reply versions
        it kept (``kept_replies``), in one transaction:
        all of it or nothing. The messages' ids and positions are new; a reply that was being
        written when it was exported is kept as interrupted. An image over
        :attr:`max_image_bytes` raises :class:`ImageTooLargeError` and nothing is written.
        ``place``: listed in ``conv.folder`` and pinned as ``conv.pinned`` say (another app's
        chats, brought with their place in its list); else in no folder, not pinned."""
        name = folder_name(conv.folder) if place and conv.folder is not None else None
        with self._tx() as db:
            cid = self._restore(db, conv)
            if place:
                db.execute(
                    "UPDATE conversations SET folder = ?, pinned = ? WHERE id = ?",
                    (name, 1 if conv.pinned else 0, cid),
                )
        return self.get_conversation(cid)

    def _restore(self, db: sqlite3.Connection, conv: Conversation) -> int:
        """:meth:`restore_conversation`'s write, in the caller's transaction; the new id."""
        for m in conv.messages:
            self._check(m.role, m.status)
        images = [self._check_images(m.role, m.images) for m in conv.messages]
        cid = _rowid(
            db.execute(
                "INSERT INTO conversations (title, created, updated, model_path, settings_json, "
                "system_prompt) VALUES (?, ?, ?, ?, ?, ?)",
                (
                    conv.title,
                    conv.created,
                    conv.updated,
                    conv.model_path,
                    _dumps(conv.settings, "settings"),
                    _own_prompt(conv.system_prompt),
                ),
            )
        )
        for m, blobs in zip(conv.messages, images, strict=True):
            mid = self._insert_record(db, cid, m)
            db.execute("UPDATE messages SET created = ? WHERE id = ?", (m.created, mid))
            self._insert_images(db, mid, blobs)
        if conv.kept_replies:
            positions = [r[0] for r in db.execute(_POSITIONS, (cid,))]
            db.executemany(
                "INSERT INTO reply_versions (conversation_id, user_position, number, created, messages_json) "
                "VALUES (?, ?, ?, ?, ?)",
                [
                    (
                        cid,
                        positions[k.user_index],
                        k.number,
                        k.created,
                        None
                        if k.messages is None
                        else _dumps([m.to_dict() for m in k.messages], "reply version"),
                    )
                    for k in conv.kept_replies
                    if 0 <= k.user_index < len(positions) and conv.messages[k.user_index].role == "user"
                ],
            )
        db.execute("UPDATE conversations SET updated = ? WHERE id = ?", (conv.updated, cid))
        return cid

    def duplicate_conversation(self, conversation_id: int) -> Conversation:
        """A copy of the conversation, whole (its messages, calls, results, pictures, the reply
        versions Regenerate kept aside, its system prompt, settings and folder), titled
        "<title> (copy)", made now (so listed first) and not pinned; one transaction. This one is
        not changed. A reply being written is copied as interrupted."""
        conv = self.load_conversation(conversation_id, kept=True)
        now = time.time()
        copy = replace(conv, title=conv.title + _COPY, created=now, updated=now)
        with self._tx() as db:
            cid = self._restore(db, copy)
            db.execute("UPDATE conversations SET folder = ? WHERE id = ?", (conv.folder, cid))
        return self.get_conversation(cid)

    def branch_conversation(self, conversation_id: int, user_index: int) -> Conversation:
        """A new conversation holding this one's messages through the reply to its
        ``user_index``-th user message (0-based; the reply versions shown), titled
        "<title> (branch)", to go on from there another way. This one is not changed.
        MessageNotFound when it has no such user message."""
        conv = self.load_conversation(conversation_id)
        users = [i for i, m in enumerate(conv.messages) if m.role == "user"]
        if not 0 <= user_index < len(users):
            raise MessageNotFound(f"conversation {conversation_id} has no user message {user_index}")
        end = users[user_index + 1] if user_index + 1 < len(users) else len(conv.messages)
        base = conv.title[: -len(_BRANCH)] if conv.title.endswith(_BRANCH) else conv.title
        now = time.time()
        branch = replace(conv, title=base + _BRANCH, created=now, updated=now, messages=conv.messages[:end])
        made = self.restore_conversation(branch)
        if conv.folder is not None:  # the same work: listed beside the conversation it came from
            self.set_folder(made.id, conv.folder)
            made.folder = conv.folder
        return made

    def get_conversation(self, conversation_id: int) -> Conversation:
        rows = self._read(f"SELECT {_CONV_COLS} FROM conversations c WHERE c.id = ?", (conversation_id,))
        if not rows:
            raise ConversationNotFound(f"no conversation with id {conversation_id}")
        return _conv(rows[0])

    def rename_conversation(self, conversation_id: int, title: str) -> None:
        self.update_conversation(conversation_id, title=title)

    def update_conversation(
        self,
        conversation_id: int,
        *,
        title: str | None = None,
        model_path: str | os.PathLike[str] | None = None,
        settings: dict[str, Any] | None = None,
    ) -> None:
        """Change the title, model path and/or settings snapshot (``None`` leaves a field as is)."""
        sets: list[str] = []
        params: list[Any] = []
        if title is not None:
            sets.append("title = ?")
            params.append(title)
        if model_path is not None:
            sets.append("model_path = ?")
            params.append(os.fspath(model_path))
        if settings is not None:
            sets.append("settings_json = ?")
            params.append(_dumps(settings, "settings snapshot"))
        sets.append("updated = ?")
        params.append(time.time())
        with self._tx() as db:
            cur = db.execute(
                f"UPDATE conversations SET {', '.join(sets)} WHERE id = ?", (*params, conversation_id)
            )
            if cur.rowcount == 0:
                raise ConversationNotFound(f"no conversation with id {conversation_id}")

    def set_system_prompt(self, conversation_id: int, text: str | None) -> None:
        """Give the conversation its own system prompt (``text``), or (None, or only white space)
        take it back to the one in Settings."""
        with self._tx() as db:
            cur = db.execute(
                "UPDATE conversations SET system_prompt = ? WHERE id = ?",
                (_own_prompt(text), conversation_id),
            )
            if cur.rowcount == 0:
                raise ConversationNotFound(f"no conversation with id {conversation_id}")

    def set_pinned(self, conversation_id: int, pinned: bool) -> None:
        """Pin the conversation to the top of the list, or unpin it. Its last change is kept: the
        list's order by day does not move it."""
        with self._tx() as db:
            cur = db.execute(
                "UPDATE conversations SET pinned = ? WHERE id = ?", (1 if pinned else 0, conversation_id)
            )
            if cur.rowcount == 0:
                raise ConversationNotFound(f"no conversation with id {conversation_id}")

    def set_folder(self, conversation_id: int, folder: str | None) -> None:
        """List the conversation in ``folder`` (a name: a new one makes the folder), or in none
        (None). Its last change is kept. ValueError for a name that is blank or over
        :data:`MAX_FOLDER_NAME` characters (white space is folded to one space)."""
        name = None if folder is None else folder_name(folder)
        with self._tx() as db:
            cur = db.execute("UPDATE conversations SET folder = ? WHERE id = ?", (name, conversation_id))
            if cur.rowcount == 0:
                raise ConversationNotFound(f"no conversation with id {conversation_id}")

    def folders(self) -> list[str]:
        """The folders that hold conversations, by name (case does not matter to the order)."""
        rows = self._read("SELECT DISTINCT folder FROM conversations WHERE folder IS NOT NULL")
        return sorted((r[0] for r in rows), key=lambda n: (n.casefold(), n))

    def rename_folder(self, old: str, new: str) -> int:
        """Name the folder ``old`` ``new`` (into that folder, when there is one already). Returns the
        conversations moved; ValueError for a name :meth:`set_folder` refuses."""
        name = folder_name(new)
        with self._tx() as db:
            return db.execute("UPDATE conversations SET folder = ? WHERE folder = ?", (name, old)).rowcount

    def remove_folder(self, folder: str) -> int:
        """The folder's conversations are listed in none (they are kept); returns how many."""
        with self._tx() as db:
            return db.execute("UPDATE conversations SET folder = NULL WHERE folder = ?", (folder,)).rowcount

    def delete_conversation(self, conversation_id: int) -> DeletedConversation:
        """Delete a conversation with its messages, tool calls, reply versions and pictures
        (cascade), for good. Returns every row that went, for :meth:`undelete_conversation`."""
        with self._tx() as db:
            rows = _take_conversation(db, conversation_id)
        return DeletedConversation(conversation_id, _row_value(rows, "title"), rows)

    def undelete_conversation(self, deleted: DeletedConversation) -> None:
        """Put a conversation :meth:`delete_conversation` deleted back as it was: the same id, its
        messages, calls, reply versions and pictures (the search index follows by its triggers).
        HistoryError when a conversation of that id is there again."""
        with self._tx() as db:
            _put_back(db, deleted.id, deleted.rows)

    # -- recently deleted ----------------------------------------------------------------------

    def trash_conversation(self, conversation_id: int) -> TrashedChat:
        """Delete a conversation (as :meth:`delete_conversation`) and keep its rows in the trash,
        in the same transaction, to be put back by :meth:`restore_trashed` for
        :data:`TRASH_DAYS` days. Chats longer there are deleted for good first."""
        now = time.time()
        with self._tx() as db:
            _purge_trash(db, now)
            rows = _take_conversation(db, conversation_id)
            title, folder = _row_value(rows, "title"), _row_value(rows, "folder") or None
            count = len(rows["messages"][1])
            cur = db.execute(
                "INSERT INTO trash (conversation_id, title, folder, messages, deleted_at, rows_json) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (conversation_id, title, folder, count, now, rows_to_json(rows)),
            )
            return TrashedChat(_rowid(cur), conversation_id, title, folder, count, now)

    def trashed(self) -> list[TrashedChat]:
        """The chats in the trash, the last deleted first (those past :data:`TRASH_DAYS` days are
        deleted for good first)."""
        with self._tx() as db:
            _purge_trash(db, time.time())
        rows = self._read(
            "SELECT id, conversation_id, title, folder, messages, deleted_at FROM trash "
            "ORDER BY deleted_at DESC, id DESC"
        )
        return [TrashedChat(*r) for r in rows]

    def trash_count(self) -> int:
        """How many chats the trash holds that are within their :data:`TRASH_DAYS` days (a read:
        nothing is written, so it never waits on another writer)."""
        since = time.time() - TRASH_DAYS * 86400.0
        return int(self._read("SELECT count(*) FROM trash WHERE deleted_at >= ?", (since,))[0][0])

    def restore_trashed(self, trash_id: int) -> int:
        """Put a chat in the trash back as it was (its id, messages, calls, versions, pictures,
        folder and pin) and take it out of the trash; its conversation id. HistoryError when it
        is no longer in the trash, or a conversation of its id is there again."""
        with self._tx() as db:
            row = db.execute(
                "SELECT conversation_id, rows_json FROM trash WHERE id = ?", (trash_id,)
            ).fetchone()
            if row is None:
                raise HistoryError("that chat is no longer in Recently deleted")
            try:
                rows = rows_from_json(row[1])
            except (ValueError, KeyError, TypeError) as exc:
                raise HistoryError(f"that chat's saved rows cannot be read: {exc}") from exc
            _put_back(db, row[0], rows)
            db.execute("DELETE FROM trash WHERE id = ?", (trash_id,))
            return int(row[0])

    def forget_trashed(self, trash_ids: Iterable[int] | None = None) -> int:
        """Delete chats in the trash for good (``None``: all of them, emptying it); how many."""
        with self._tx() as db:
            if trash_ids is None:
                return db.execute("DELETE FROM trash").rowcount
            return sum(db.execute("DELETE FROM trash WHERE id = ?", (t,)).rowcount for t in trash_ids)

    def list_conversations(self, limit: int | None = None, offset: int = 0) -> list[Conversation]:
        """Conversations, most recently updated first."""
        sql = f"SELECT {_CONV_COLS} FROM conversations c ORDER BY c.updated DESC, c.id DESC"
        params: list[Any] = []
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params += [limit, offset]
        return [_conv(r) for r in self._read(sql, params)]

    def search(self, query: str, limit: int = 100) -> list[Conversation]:
        """Conversations whose title and folder, or whose messages' text, match ``query`` (most
        recent first).

        Every word must match: in the title or the folder's name (as a substring), or in the text
        (as a word prefix with FTS5, as a substring without it).
        """
        words = query.split()
        if not words:
            return []
        title_where = " AND ".join(
            "(c.title LIKE ? ESCAPE '\\' OR coalesce(c.folder, '') LIKE ? ESCAPE '\\')" for _ in words
        )
        title_params = [p for w in words for p in (_like_pattern(w), _like_pattern(w))]
        matching, msg_params = self._matching_messages(query)
        msg_sql = f"SELECT m.conversation_id FROM {matching}"
        sql = (
            f"SELECT {_CONV_COLS} FROM conversations c WHERE ({title_where}) OR c.id IN ({msg_sql}) "
            "ORDER BY c.updated DESC, c.id DESC LIMIT ?"
        )
        return [_conv(r) for r in self._read(sql, [*title_params, *msg_params, limit])]

    def _matching_messages(self, query: str) -> tuple[str, list[Any]]:
        """The messages whose text has every word of ``query`` (as a word prefix with FTS5, as a
        substring of the content or the reasoning without it): ``FROM`` and ``WHERE`` clauses over
        ``messages m`` (with FTS5, joined to ``messages_fts``), and their parameters."""
        words = query.split()
        if self.has_fts:
            return "messages_fts f JOIN messages m ON m.id = f.rowid WHERE messages_fts MATCH ?", [
                _fts_query(query)
            ]
        where = " AND ".join(
            "(m.content LIKE ? ESCAPE '\\' OR coalesce(m.reasoning, '') LIKE ? ESCAPE '\\')" for _ in words
        )
        return f"messages m WHERE {where}", [p for w in words for p in (_like_pattern(w), _like_pattern(w))]

    def search_snippets(self, query: str, ids: Iterable[int]) -> dict[int, str]:
        """For each conversation of ``ids`` whose messages match ``query`` (as :meth:`search`
        matches them), a few words around the match in its first such message, on one line, cut
        with "…", each matching word between :data:`MATCH_MARKS` (a conversation found by its
        title or folder alone has none)."""
        words, chosen = query.split(), list(ids)
        if not words or not chosen:
            return {}
        marks = ",".join("?" * len(chosen))
        matching, params = self._matching_messages(query)
        if self.has_fts:
            words_of = "snippet(messages_fts, -1, char(2), char(3), '…', 8)"  # the match marked
            lead: list[Any] = []
        else:
            words_of = "CASE WHEN m.content LIKE ? ESCAPE '\\' THEN m.content ELSE m.reasoning END"
            lead = [_like_pattern(words[0])]
        sql = (
            f"SELECT m.conversation_id, {words_of} FROM {matching} "
            f"AND m.conversation_id IN ({marks}) ORDER BY m.position"
        )
        rows = self._read(sql, [*lead, *params, *chosen])
        if not self.has_fts:  # the text whole: the words around the first word, marked here
            rows = [(cid, _around(text or "", words[0])) for cid, text in rows]
        found: dict[int, str] = {}
        for cid, text in rows:
            found.setdefault(cid, " ".join(str(text).split()))
        return found

    def load_conversation(self, conversation_id: int, *, kept: bool = False) -> Conversation:
        """The conversation with its messages (in position order) and their tool calls; ``kept``:
        with the reply versions Regenerate kept aside (``Conversation.kept_replies``: for an
        export or a copy that keeps everything)."""
        with self._lock:
            conv = self.get_conversation(conversation_id)
            msgs = [
                _msg(r)
                for r in self._db.execute(
                    f"SELECT {_MSG_COLS} FROM messages WHERE conversation_id = ? ORDER BY position",
                    (conversation_id,),
                )
            ]
            by_id = {m.id: m for m in msgs}
            for r in self._db.execute(
                f"SELECT {', '.join('t.' + c.strip() for c in _TC_COLS.split(','))} FROM tool_calls t "
                "JOIN messages m ON m.id = t.message_id WHERE m.conversation_id = ? ORDER BY t.position, t.id",
                (conversation_id,),
            ):
                tc = _tc(r)
                by_id[tc.message_id].tool_calls.append(tc)
            counts: dict[int, list[int]] = {}
            for upos, number, live in self._db.execute(
                "SELECT user_position, number, messages_json IS NULL FROM reply_versions "
                "WHERE conversation_id = ? ORDER BY user_position, number",
                (conversation_id,),
            ):
                shown_count = counts.setdefault(upos, [0, 0])
                shown_count[1] += 1
                if live:
                    shown_count[0] = number
            self._attach_images(msgs)
            if kept:
                conv.kept_replies = self._kept_replies(conversation_id, msgs)
        conv.messages = msgs
        conv.versions = {upos: (shown, count) for upos, (shown, count) in counts.items() if shown}
        return conv

    def _kept_replies(self, conversation_id: int, msgs: list[MessageRecord]) -> list[KeptReply]:
        index = {m.position: i for i, m in enumerate(msgs) if m.role == "user"}
        return [
            KeptReply(index[upos], number, created, None if data is None else _records_from_json(data))
            for upos, number, created, data in self._db.execute(
                "SELECT user_position, number, created, messages_json FROM reply_versions "
                "WHERE conversation_id = ? ORDER BY user_position, number",
                (conversation_id,),
            )
            if upos in index
        ]

    # -- messages ---------------------------------------------------------------------------

    @staticmethod
    def _check(role: str | None = None, status: str | None = None) -> None:
        if role is not None and role not in ROLES:
            raise HistoryError(f"unknown role {role!r} (expected one of {', '.join(ROLES)})")
        if status is not None and status not in MESSAGE_STATUSES:
            raise HistoryError(f"unknown status {status!r} (expected one of {', '.join(MESSAGE_STATUSES)})")

    def append_message(
        self,
        conversation_id: int,
        role: str,
        content: str = "",
        *,
        tool_calls: Sequence[dict[str, Any]] = (),
        notices: Sequence[Mapping[str, Any]] = (),
        images: Sequence[bytes] = (),
        **fields: Unpack[_MessageFields],
    ) -> MessageRecord:
        """Append a message at the end of the conversation (one transaction, tool calls and images
        included).

        ``fields``: ``reasoning``, ``status`` ("complete" unless given), ``tool_call_id``, ``name``,
        ``prompt_tokens``, ``completion_tokens``, ``error`` and ``turn_settings`` (a user message's:
        the settings its turn is sent with, a JSON object). ``tool_calls``: dicts with ``call_id`` (or ``id``), ``name``, ``arguments`` and optionally
        ``raw``, ``result``, ``error``, ``duration_s``, ``approval``. ``notices``: dicts with
        ``code``, ``message`` and optionally ``setting`` (the banners shown above the message).
        ``images``: a user message's images, the bytes of each in order; one larger than
        :attr:`max_image_bytes` raises :class:`ImageTooLargeError` and nothing is written.
        """
        self._check(role, fields.get("status", "complete"))
        blobs = self._check_images(role, images)
        with self._tx() as db:
            mid = self._insert_message(
                db, conversation_id, role, content, tool_calls=tool_calls, notices=notices, **fields
            )
            self._insert_images(db, mid, blobs)
        return self.get_message(mid)

    def _check_images(self, role: str, images: Sequence[bytes]) -> list[bytes]:
        """``images`` as bytes, checked against the bound (HistoryError says what is wrong)."""
        if images and role != "user":
            raise HistoryError(f"only a user message keeps images, not a {role} message")
        return check_image_sizes(images, self.max_image_bytes)

    @staticmethod
    def _insert_images(db: sqlite3.Connection, message_id: int, blobs: Sequence[bytes]) -> None:
        """Store ``blobs`` as message ``message_id``'s images (each distinct image once)."""
        for position, data in enumerate(blobs):
            digest = hashlib.sha256(data).hexdigest()
            db.execute(
                "INSERT OR IGNORE INTO image_blobs (sha256, data, media_type, n_bytes) VALUES (?, ?, ?, ?)",
                (digest, data, media_type_of(data), len(data)),
            )
            db.execute(
                "INSERT INTO message_images (message_id, position, sha256) VALUES (?, ?, ?)",
                (message_id, position, digest),
            )

    def _attach_images(self, msgs: Sequence[MessageRecord]) -> None:
        """Fill the ``images`` of ``msgs`` (user messages) from the database (under the lock)."""
        users = {m.id: m for m in msgs if m.role == "user"}
        if not users:
            return
        ids = list(users)
        for start in range(0, len(ids), 500):  # SQLite's bound on a statement's variables
            chunk = ids[start : start + 500]
            for mid, data, digest, media_type, n_bytes in self._db.execute(
                "SELECT i.message_id, b.data, b.sha256, b.media_type, b.n_bytes FROM message_images i "
                f"JOIN image_blobs b ON b.sha256 = i.sha256 WHERE i.message_id IN ({','.join('?' * len(chunk))}) "
                "ORDER BY i.message_id, i.position",
                chunk,
            ):
                users[mid].images.append(bytes(data))
                users[mid].image_info.append(StoredImage(digest, media_type, n_bytes))

    def _insert_message(
        self,
        db: sqlite3.Connection,
        conversation_id: int,
        role: str,
        content: str,
        *,
        tool_calls: Sequence[ToolCall | Mapping[str, Any]] = (),
        results: Mapping[str, ToolResult] | None = None,
        notices: Sequence[Mapping[str, Any]] = (),
        extra: Mapping[str, Any] | None = None,
        **fields: Unpack[_MessageFields],
    ) -> int:
        cols = _known(fields, _MessageFields)
        status = cols.get("status", "complete")
        notices_json = _dumps([_notice_dict(n) for n in notices], "notices") if notices else None
        extra_json = _dumps(dict(extra), "message extra") if extra else None
        turn = cols.get("turn_settings")
        turn_json = _dumps(dict(turn), "turn settings") if turn else None
        now = time.time()
        if not db.execute("SELECT 1 FROM conversations WHERE id = ?", (conversation_id,)).fetchone():
            raise ConversationNotFound(f"no conversation with id {conversation_id}")
        (pos,) = db.execute(
            "SELECT coalesce(max(position) + 1, 0) FROM messages WHERE conversation_id = ?",
            (conversation_id,),
        ).fetchone()
        cur = db.execute(
            "INSERT INTO messages (conversation_id, position, role, content, reasoning, status, created, "
            "prompt_tokens, completion_tokens, tool_call_id, name, error, writer, notices_json, extra_json, "
            "turn_settings_json) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            (
                conversation_id,
                pos,
                role,
                content,
                cols.get("reasoning"),
                status,
                now,
                cols.get("prompt_tokens"),
                cols.get("completion_tokens"),
                cols.get("tool_call_id"),
                cols.get("name"),
                cols.get("error"),
                self._writer if status == "streaming" else None,
                notices_json,
                extra_json,
                turn_json,
            ),
        )
        mid = _rowid(cur)
        for i, tc in enumerate(tool_calls):
            outcome = results.get(tc.id) if results and isinstance(tc, ToolCall) else None
            self._insert_tool_call(db, mid, i, tc, outcome)
        self._touch(db, conversation_id, now)
        return mid

    def record_turn(
        self, conversation_id: int, partial_id: int | None, messages: Sequence[TurnMessage]
    ) -> None:
        """Store a finished turn in one transaction: the streaming reply ``partial_id`` (and anything
        after it) is replaced by ``messages``. A failed save changes nothing, so the partial reply
        already saved is kept."""
        for m in messages:
            self._check(m.role)
        with self._tx() as db:
            if partial_id is not None:
                row = db.execute(
                    "SELECT conversation_id, position FROM messages WHERE id = ?", (partial_id,)
                ).fetchone()
                if row is None:
                    raise MessageNotFound(f"no message with id {partial_id}")
                if row[0] != conversation_id:
                    raise HistoryError(f"message {partial_id} is not in conversation {conversation_id}")
                db.execute(
                    "DELETE FROM messages WHERE conversation_id = ? AND position >= ?",
                    (conversation_id, row[1]),
                )
            for m in messages:
                self._insert_message(
                    db,
                    conversation_id,
                    m.role,
                    m.content,
                    tool_calls=m.tool_calls,
                    results=m.results,
                    notices=m.notices,
                    extra=m.extra,
                    reasoning=m.reasoning or None,
                    tool_call_id=m.tool_call_id,
                    name=m.name,
                )

    def begin_assistant_message(self, conversation_id: int, *, reasoning: str | None = None) -> MessageRecord:
        """Start a streaming assistant reply (status "streaming"); fill it with ``update_partial``."""
        return self.append_message(conversation_id, "assistant", "", reasoning=reasoning, status="streaming")

    def update_partial(self, message_id: int, content: str, reasoning: str | None = None) -> None:
        """Save the reply so far (whole text, not a delta). Its own committed transaction."""
        now = time.time()
        with self._tx() as db:
            row = db.execute("SELECT conversation_id FROM messages WHERE id = ?", (message_id,)).fetchone()
            if row is None:
                raise MessageNotFound(f"no message with id {message_id}")
            if reasoning is None:
                db.execute("UPDATE messages SET content = ? WHERE id = ?", (content, message_id))
            else:
                db.execute(
                    "UPDATE messages SET content = ?, reasoning = ? WHERE id = ?",
                    (content, reasoning, message_id),
                )
            self._touch(db, row[0], now)

    def finish_message(
        self,
        message_id: int,
        status: MessageStatus = "complete",
        *,
        extra: Mapping[str, Any] | None = None,
        **fields: Unpack[_FinishFields],
    ) -> MessageRecord:
        """Mark a message complete / interrupted / error, optionally with its final text and counts
        (``fields``: ``content``, ``reasoning``, ``prompt_tokens``, ``completion_tokens``, ``error``;
        ``extra``: keys added to the message's extra JSON, e.g. its statistics)."""
        self._check(status=status)
        if status == "streaming":
            raise HistoryError("finish_message needs a final status: complete, interrupted or error")
        sets = ["status = ?", "writer = NULL"]
        params: list[Any] = [status]
        for col, value in _known(fields, _FinishFields).items():
            if value is not None:
                sets.append(f"{col} = ?")
                params.append(value)
        now = time.time()
        with self._tx() as db:
            row = db.execute("SELECT conversation_id FROM messages WHERE id = ?", (message_id,)).fetchone()
            if row is None:
                raise MessageNotFound(f"no message with id {message_id}")
            db.execute(f"UPDATE messages SET {', '.join(sets)} WHERE id = ?", (*params, message_id))
            if extra:
                (current,) = db.execute(
                    "SELECT extra_json FROM messages WHERE id = ?", (message_id,)
                ).fetchone()
                merged = _loads(current)
                merged = {**(merged if isinstance(merged, dict) else {}), **dict(extra)}
                db.execute(
                    "UPDATE messages SET extra_json = ? WHERE id = ?",
                    (_dumps(merged, "message extra"), message_id),
                )
            self._touch(db, row[0], now)
        return self.get_message(message_id)

    def add_notice(self, message_id: int, code: str, message: str = "", setting: str | None = None) -> None:
        """Record a notice (banner) shown above a message; one per code (a repeat is ignored)."""
        notice = _notice_dict({"code": code, "message": message, "setting": setting})
        with self._tx() as db:
            row = db.execute("SELECT notices_json FROM messages WHERE id = ?", (message_id,)).fetchone()
            if row is None:
                raise MessageNotFound(f"no message with id {message_id}")
            current = _loads(row[0])
            current = current if isinstance(current, list) else []
            if any(isinstance(n, dict) and n.get("code") == code for n in current):
                return
            db.execute(
                "UPDATE messages SET notices_json = ? WHERE id = ?",
                (_dumps([*current, notice], "notices"), message_id),
            )

    def edit_reply_text(self, message_id: int, content: str) -> None:
        """Replace the text of a finished reply (an assistant message): what the model reads from
        now on, as the person corrected it; the conversation's last change is now. Its calls,
        reasoning and statistics are kept. MessageNotFound for no such message, HistoryError for a
        message that is no reply or one still being written."""
        with self._tx() as db:
            row = db.execute(
                "SELECT conversation_id, role, status FROM messages WHERE id = ?", (message_id,)
            ).fetchone()
            if row is None:
                raise MessageNotFound(f"no message with id {message_id}")
            if row[1] != "assistant":
                raise HistoryError(f"message {message_id} is a {row[1]} message, not a reply")
            if row[2] == "streaming":
                raise HistoryError(f"message {message_id} is still being written")
            db.execute("UPDATE messages SET content = ? WHERE id = ?", (content, message_id))
            self._touch(db, row[0], time.time())

    def get_message(self, message_id: int) -> MessageRecord:
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_MSG_COLS} FROM messages WHERE id = ?", (message_id,)
            ).fetchall()
            if not rows:
                raise MessageNotFound(f"no message with id {message_id}")
            msg = _msg(rows[0])
            msg.tool_calls = [
                _tc(r)
                for r in self._db.execute(
                    f"SELECT {_TC_COLS} FROM tool_calls WHERE message_id = ? ORDER BY position, id",
                    (message_id,),
                )
            ]
            self._attach_images([msg])
        return msg

    def truncate_after(self, conversation_id: int, position: int) -> int:
        """Delete every message after ``position`` (edit-and-resend); returns how many were deleted.

        ``truncate_after(cid, p - 1)`` also removes the message at ``p`` itself.
        """
        with self._tx() as db:
            if not db.execute("SELECT 1 FROM conversations WHERE id = ?", (conversation_id,)).fetchone():
                raise ConversationNotFound(f"no conversation with id {conversation_id}")
            deleted = self._drop_after(db, conversation_id, position)
            self._touch(db, conversation_id, time.time())
            return deleted

    # -- reply versions (Regenerate) ----------------------------------------------------------

    def archive_reply(self, conversation_id: int, user_position: int) -> tuple[int, int]:
        """Regenerate: the reply to the user message at ``user_position`` (its assistant and tool
        messages) is kept as a version and leaves the conversation, with every later message.
        Returns (the number the coming reply will have, how many versions there will be)."""
        with self._tx() as db:
            self._user_at(db, conversation_id, user_position)
            reply = self._reply_rows(db, conversation_id, user_position)
            rows = db.execute(
                "SELECT number, messages_json IS NULL FROM reply_versions "
                "WHERE conversation_id = ? AND user_position = ? ORDER BY number",
                (conversation_id, user_position),
            ).fetchall()
            top = rows[-1][0] if rows else 0
            if reply:
                self._keep_version(db, conversation_id, user_position, reply, top)
                top += 1 if not any(live for _n, live in rows) else 0
                db.execute(
                    "INSERT INTO reply_versions (conversation_id, user_position, number, created, messages_json) "
                    "VALUES (?, ?, ?, ?, NULL)",
                    (conversation_id, user_position, top + 1, time.time()),
                )
                top += 1
            self._drop_after(db, conversation_id, user_position)
            self._touch(db, conversation_id, time.time())
            return (top, top) if top else (1, 1)

    def reply_version(self, conversation_id: int, user_position: int, number: int) -> list[MessageRecord]:
        """The messages of version ``number`` of the reply to the user message at ``user_position``
        (the version in the conversation is read from it)."""
        with self._lock:
            _id, messages_json = self._version(self._db, conversation_id, user_position, number)
            if messages_json is None:
                ids = [r.id for r in self._reply_rows(self._db, conversation_id, user_position)]
                return [self.get_message(mid) for mid in ids]
        return _records_from_json(messages_json)

    def select_reply_version(self, conversation_id: int, user_position: int, number: int) -> None:
        """Make version ``number`` the reply in the conversation (the conversation goes on from it);
        the reply there is kept as its own version. Only the last turn's reply: HistoryError when
        a later user message follows."""
        with self._tx() as db:
            self._user_at(db, conversation_id, user_position)
            if db.execute(
                "SELECT 1 FROM messages WHERE conversation_id = ? AND role = 'user' AND position > ?",
                (conversation_id, user_position),
            ).fetchone():
                raise HistoryError("only the last reply's version can be switched")
            chosen = self._version(db, conversation_id, user_position, number)
            if chosen[1] is None:
                return  # it is the one shown
            reply = self._reply_rows(db, conversation_id, user_position)
            top = db.execute(
                "SELECT max(number) FROM reply_versions WHERE conversation_id = ? AND user_position = ?",
                (conversation_id, user_position),
            ).fetchone()[0]
            self._keep_version(db, conversation_id, user_position, reply, top)
            db.execute(
                "DELETE FROM messages WHERE conversation_id = ? AND position > ?",
                (conversation_id, user_position),
            )
            for m in _records_from_json(chosen[1]):
                self._insert_record(db, conversation_id, m)
            db.execute("UPDATE reply_versions SET messages_json = NULL WHERE id = ?", (chosen[0],))
            self._touch(db, conversation_id, time.time())

    @staticmethod
    def _drop_after(db: Any, conversation_id: int, position: int) -> int:
        """Delete the messages after ``position`` and the versions of the replies to those that went;
        returns how many messages went."""
        cur = db.execute(
            "DELETE FROM messages WHERE conversation_id = ? AND position > ?", (conversation_id, position)
        )
        db.execute(
            "DELETE FROM reply_versions WHERE conversation_id = ? AND user_position > ?",
            (conversation_id, position),
        )
        return int(cur.rowcount)

    @staticmethod
    def _version(db: Any, conversation_id: int, user_position: int, number: int) -> tuple[int, str | None]:
        """The row id and the messages (JSON; None for the version in the conversation) of version
        ``number`` of the reply to the user message at ``user_position``."""
        row = db.execute(
            "SELECT id, messages_json FROM reply_versions WHERE conversation_id = ? AND user_position = ? "
            "AND number = ?",
            (conversation_id, user_position, number),
        ).fetchone()
        if row is None:
            raise MessageNotFound(f"no version {number} of the reply at {user_position}")
        return row[0], row[1]

    @staticmethod
    def _user_at(db: sqlite3.Connection, conversation_id: int, user_position: int) -> None:
        row = db.execute(
            "SELECT role FROM messages WHERE conversation_id = ? AND position = ?",
            (conversation_id, user_position),
        ).fetchone()
        if row is None or row[0] != "user":
            raise MessageNotFound(
                f"no user message at position {user_position} of conversation {conversation_id}"
            )

    def _reply_rows(self, db: Any, conversation_id: int, user_position: int) -> list[MessageRecord]:
        """The reply to the user message at ``user_position``: the messages up to the next user one."""
        out: list[MessageRecord] = []
        for r in db.execute(
            f"SELECT {_MSG_COLS} FROM messages WHERE conversation_id = ? AND position > ? ORDER BY position",
            (conversation_id, user_position),
        ).fetchall():
            m = _msg(r)
            if m.role == "user":
                break
            m.tool_calls = [
                _tc(t)
                for t in db.execute(
                    f"SELECT {_TC_COLS} FROM tool_calls WHERE message_id = ? ORDER BY position, id", (m.id,)
                ).fetchall()
            ]
            out.append(m)
        return out

    @staticmethod
    def _keep_version(
        db: Any, conversation_id: int, user_position: int, reply: list[MessageRecord], top: int
    ) -> None:
        """Store ``reply`` (the one in the conversation) in its version row (a new one, ``top`` + 1,
        when it has none yet)."""
        data = _dumps([m.to_dict() for m in reply], "reply version")
        cur = db.execute(
            "UPDATE reply_versions SET messages_json = ? WHERE conversation_id = ? AND user_position = ? "
            "AND messages_json IS NULL",
            (data, conversation_id, user_position),
        )
        if cur.rowcount == 0:
            db.execute(
                "INSERT INTO reply_versions (conversation_id, user_position, number, created, messages_json) "
                "VALUES (?, ?, ?, ?, ?)",
                (conversation_id, user_position, top + 1, time.time(), data),
            )

    def _insert_record(self, db: sqlite3.Connection, conversation_id: int, m: MessageRecord) -> int:
        """Store a message read back (a reply version, an imported chat) at the conversation's end,
        as it was: its calls with what came of them, its notices, extra and columns. One that was
        being written is kept as interrupted: no writer goes on with it."""
        cols = {k: getattr(m, k) for k in _MessageFields.__optional_keys__}
        if m.status == "streaming":
            cols["status"] = "interrupted"
        return self._insert_message(
            db,
            conversation_id,
            m.role,
            m.content,
            tool_calls=[tc.to_dict() for tc in m.tool_calls],
            notices=m.notices,
            extra=m.extra,
            **cols,
        )

    # -- tool calls -------------------------------------------------------------------------

    @staticmethod
    def _insert_tool_call(
        db: sqlite3.Connection,
        message_id: int,
        position: int,
        tc: ToolCall | Mapping[str, Any],
        outcome: ToolResult | None = None,
    ) -> int:
        if isinstance(tc, ToolCall):
            tc = {
                "call_id": tc.id,
                "name": tc.name,
                "arguments": tc.arguments,
                "raw": tc.raw,
                **(
                    {
                        "result": outcome.content,
                        "error": outcome.error,
                        "duration_s": outcome.duration_s,
                        "approval": outcome.approval,
                    }
                    if outcome is not None
                    else {}
                ),
            }
        call_id = tc.get("call_id", tc.get("id"))
        name = tc.get("name")
        if not call_id or not name:
            raise HistoryError(f"a tool call needs a call id and a name, got {tc!r}")
        cur = db.execute(
            "INSERT INTO tool_calls (message_id, position, call_id, name, arguments_json, raw, result, error, "
            "duration_s, approval) VALUES (?,?,?,?,?,?,?,?,?,?)",
            (
                message_id,
                position,
                str(call_id),
                str(name),
                _dumps(tc.get("arguments"), "tool call arguments"),
                tc.get("raw") or "",
                tc.get("result"),
                tc.get("error"),
                tc.get("duration_s"),
                tc.get("approval"),
            ),
        )
        return _rowid(cur)


def check_image_sizes(images: Sequence[bytes], max_bytes: int) -> list[bytes]:
    """``images`` as bytes, each at most ``max_bytes`` (the ``images.max_bytes`` setting):
    :class:`ImageTooLargeError` names the first that is larger, HistoryError one that is not bytes."""
    blobs = []
    for i, image in enumerate(images, 1):
        if not isinstance(image, bytes | bytearray | memoryview):
            raise HistoryError(f"an image must be bytes, got {type(image).__name__}")
        blobs.append(bytes(image))
        if len(blobs[-1]) > max_bytes:
            which = f"image {i} of {len(images)}" if len(images) > 1 else "the image"
            raise ImageTooLargeError(
                f"{which} is {format_bytes(len(blobs[-1]))}, more than the {format_bytes(max_bytes)} an image "
                "may be in the history (setting images.max_bytes): the message was not saved"
            )
    return blobs


def _records_from_json(text: str) -> list[MessageRecord]:
    """The messages of a stored reply version."""
    data = _loads(text)
    out = []
    for d in data if isinstance(data, list) else []:
        if not isinstance(d, dict):
            continue
        calls = [StoredToolCall(**tc) for tc in d.get("tool_calls") or [] if isinstance(tc, dict)]
        m = MessageRecord(**{k: v for k, v in d.items() if k in _RECORD_FIELDS})
        m.tool_calls = calls
        out.append(m)
    return out


# a stored reply version's messages are replies (no images): what it may hold of them is not read back
_RECORD_FIELDS = frozenset(MessageRecord.__dataclass_fields__) - {"tool_calls", "images", "image_info"}


# -- start-up -------------------------------------------------------------------------------


@dataclass(frozen=True)
class HistoryNotice:
    """Why the history in use is not the usual one (told to the user in the window).

    ``code``: ``"corrupt"`` (the file could not be read as a history: moved to ``backup_path``
    and a new one started), ``"unavailable"`` (it could not be opened, e.g. locked by another
    program or a read-only folder: this session's conversations are kept in memory only).
    """

    code: Literal["corrupt", "unavailable"]
    message: str
    backup_path: Path | None = None


def _move_aside(path: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backup = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while os.path.lexists(backup):
        n += 1
        backup = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    os.replace(path, backup)
    for suffix in ("-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if os.path.lexists(side):
            os.replace(side, backup.with_name(backup.name + suffix))
    return backup


def open_history(
    path: str | os.PathLike[str] | None = None, *, timeout: float = 10.0
) -> tuple[History, HistoryNotice | None]:
    """Open the history for the app's start-up: never raises for a bad file or folder.

    A file that is not a readable history (garbage, a folder, a pipe or device) is moved aside as
    ``<name>.corrupt-<time>`` and a new history is started; when no history can be opened at all
    (locked by another program, a read-only folder, a full disk) the session's conversations are
    kept in memory. Either way the notice says what happened, in words for the window.
    """
    import stat as _stat

    p = Path(path) if path is not None else history_path()
    unreadable: str | None = None
    try:
        st = os.stat(p)
        if not _stat.S_ISREG(st.st_mode):  # sqlite would fail on a folder and block on a FIFO
            unreadable = "it is a folder" if _stat.S_ISDIR(st.st_mode) else "it is not a regular file"
    except FileNotFoundError:
        pass
    except OSError as exc:  # its folder cannot be reached (a file in the way, no permission)
        return _memory_history(p, exc.strerror or str(exc))
    if unreadable is None:
        try:
            return History(p, timeout=timeout), None
        except (sqlite3.DatabaseError, HistoryError) as exc:
            text = str(exc)
            if (
                "locked" in text
                or "busy" in text
                or isinstance(exc, sqlite3.OperationalError)
                and ("unable to open" in text or "readonly" in text or "disk" in text)
            ):
                return _memory_history(p, f"{text}")
            unreadable = text
        except OSError as exc:
            return _memory_history(p, exc.strerror or str(exc))
    try:
        backup = _move_aside(p)
    except OSError as exc:
        return _memory_history(p, f"{unreadable}; it could not be moved aside: {exc.strerror or exc}")
    try:
        fresh = History(p, timeout=timeout)
    except (sqlite3.DatabaseError, HistoryError, OSError) as exc:
        return _memory_history(p, f"{unreadable}; a new one could not be started: {exc}")
    return fresh, HistoryNotice(
        "corrupt",
        f"The conversation history could not be read ({unreadable}). It was saved as {backup.name} and a new, "
        "empty history was started.",
        backup,
    )


def _memory_history(p: Path, problem: str) -> tuple[History, HistoryNotice]:
    return History(":memory:"), HistoryNotice(
        "unavailable",
        f"The conversation history {p} could not be opened ({problem}). Conversations of this session are "
        "kept in memory only and will not be saved.",
    )
