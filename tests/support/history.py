"""Test-only writes to a ``History`` that the app itself never makes.

The window stores turns with ``History.record_turn`` and streams replies with
``begin_assistant_message`` / ``update_partial`` / ``finish_message``; the tests below also build
conversations message by message in the chat loop's dict shape, add and complete tool calls one at
a time, and edit a message in place. Each helper takes the ``History`` as its first argument and
writes in one transaction of that store, as the store's own methods do.
"""

from __future__ import annotations

import contextlib
import json
import os
import sqlite3
import time
from collections.abc import Mapping
from typing import Any

from app.calls import ToolCall, ToolResult
from app.storage import history as _history
from app.storage.history import (
    History,
    HistoryError,
    MessageNotFound,
    MessageRecord,
    StoredToolCall,
    TurnMessage,
)

__all__ = [
    "add_tool_call",
    "call_turn",
    "append_chat_message",
    "chat_messages",
    "edit_message",
    "full_chat",
    "history_before",
    "history_of_chats",
    "update_tool_call",
]


def call_turn(
    question: str, call: ToolCall, result: str, answer: str, *, lead: str = "", reasoning: str | None = None
) -> list[TurnMessage]:
    """The messages of a turn whose reply called ``call`` (its text before the call ``lead``),
    got ``result`` and answered ``answer``: what ``History.record_turn`` stores."""
    return [
        TurnMessage("user", question),
        TurnMessage(
            "assistant",
            lead,
            reasoning=reasoning,
            tool_calls=[call],
            results={call.id: ToolResult(call.id, call.name, content=result, duration_s=0.2)},
        ),
        TurnMessage("tool", result, tool_call_id=call.id, name=call.name),
        TurnMessage("assistant", answer),
    ]


def full_chat(h: History, pictures: tuple[bytes, ...]) -> int:
    """A conversation with one of each thing a chat keeps: a system prompt, a question with
    ``pictures``, a reply that called a tool (its result, its reasoning) kept aside as version 1
    by a regenerated reply "42.", a folder ("School") and a pin; its id."""
    cid = h.create_conversation("Maths", system_prompt="Be brief.").id
    h.append_message(cid, "user", "What is in these pictures, and what is 6*7?", images=list(pictures))
    call = ToolCall("call00001", "calculator", {"expression": "6*7"}, raw="<tool_call>")
    turn = call_turn("ignored", call, "42", "It is 42.", reasoning="easy")[1:]  # the reply, its call, result
    h.record_turn(cid, h.begin_assistant_message(cid).id, turn)
    first = h.load_conversation(cid).messages[0]
    h.archive_reply(cid, first.position)  # a regenerated reply: the first is kept as a version
    h.record_turn(cid, h.begin_assistant_message(cid).id, [TurnMessage("assistant", "42.")])
    h.set_folder(cid, "School")
    h.set_pinned(cid, True)
    return cid


def history_of_chats(titles: list[str]) -> tuple[History, list[int]]:
    """The default history with one short chat (a question and its answer) per title, in order
    (so the last is the latest change); the chats' ids."""
    h = History()
    ids = []
    for title in titles:
        cid = h.create_conversation(title).id
        h.record_turn(cid, None, [TurnMessage("user", f"notes on {title}"), TurnMessage("assistant", "ok")])
        ids.append(cid)
    return h, ids


def history_before(path: str | os.PathLike[str], migration: str, rows_sql: str) -> None:
    """Write at ``path`` the history a Callisto without ``migration`` kept: every other migration
    applied (``app.storage.migrations``), then ``rows_sql`` (its rows, an SQL script)."""
    from app.storage.migrations import MIGRATIONS, apply_migrations

    db = sqlite3.connect(path, isolation_level=None)
    try:
        applied = apply_migrations(db, [m for m in MIGRATIONS if m[0] != migration])
        assert migration not in applied
        db.executescript(rows_sql)
    finally:
        db.close()


def append_chat_message(
    h: History,
    conversation_id: int,
    message: Mapping[str, Any],
    *,
    status: _history.MessageStatus = "complete",
    prompt_tokens: int | None = None,
    completion_tokens: int | None = None,
) -> MessageRecord:
    """Append a message given as a dict in the chat loop's shape (``Message.to_dict()``).

    Tool calls may be ``{"id", "name", "arguments", "raw"}`` or OpenAI's
    ``{"id", "function": {"name", "arguments"}}``.
    """
    if not isinstance(message, Mapping) or "role" not in message:
        raise HistoryError(f"not a chat message: {message!r:.80}")
    calls = []
    for tc in message.get("tool_calls") or []:
        if not isinstance(tc, Mapping):
            raise HistoryError(f"not a tool call: {tc!r:.80}")
        fn = tc.get("function")
        if isinstance(fn, Mapping):
            args = fn.get("arguments")
            if isinstance(args, str):
                with contextlib.suppress(ValueError):
                    args = json.loads(args)
            calls.append(
                {"id": tc.get("id"), "name": fn.get("name"), "arguments": args, "raw": tc.get("raw", "")}
            )
        else:
            calls.append(dict(tc))
    content = message.get("content") or ""
    if not isinstance(content, str):
        raise HistoryError(f"message content must be a string, got {type(content).__name__}")
    return h.append_message(
        conversation_id,
        str(message["role"]),
        content,
        reasoning=message.get("reasoning") or message.get("reasoning_content") or None,
        status=status,
        tool_call_id=message.get("tool_call_id"),
        name=message.get("name"),
        prompt_tokens=prompt_tokens,
        completion_tokens=completion_tokens,
        tool_calls=calls,
    )


def chat_messages(h: History, conversation_id: int, *, include_errors: bool = False) -> list[dict[str, Any]]:
    """The conversation as chat-loop dicts (for ``Message.from_dict``).

    Messages with status "error" are left out unless ``include_errors``; interrupted replies
    are kept (their text was shown to the user).
    """
    conv = h.load_conversation(conversation_id)
    return [m.to_chat_dict() for m in conv.messages if include_errors or m.status != "error"]


def edit_message(h: History, message_id: int, content: str) -> None:
    """Replace a message's text."""
    with h._tx() as db:
        row = db.execute("SELECT conversation_id FROM messages WHERE id = ?", (message_id,)).fetchone()
        if row is None:
            raise MessageNotFound(f"no message with id {message_id}")
        db.execute("UPDATE messages SET content = ? WHERE id = ?", (content, message_id))
        h._touch(db, row[0], time.time())


def add_tool_call(
    h: History,
    message_id: int,
    call_id: str,
    name: str,
    arguments: Any = None,
    *,
    raw: str = "",
    result: str | None = None,
    error: str | None = None,
    duration_s: float | None = None,
    approval: str | None = None,
) -> StoredToolCall:
    """Record one more tool call of an assistant message (its outcome may come later)."""
    with h._tx() as db:
        if not db.execute("SELECT 1 FROM messages WHERE id = ?", (message_id,)).fetchone():
            raise MessageNotFound(f"no message with id {message_id}")
        (pos,) = db.execute(
            "SELECT coalesce(max(position) + 1, 0) FROM tool_calls WHERE message_id = ?", (message_id,)
        ).fetchone()
        tid = History._insert_tool_call(
            db,
            message_id,
            pos,
            {
                "call_id": call_id,
                "name": name,
                "arguments": arguments,
                "raw": raw,
                "result": result,
                "error": error,
                "duration_s": duration_s,
                "approval": approval,
            },
        )
    return _read_tool_call(h, tid)


def update_tool_call(
    h: History,
    tool_call_id: int,
    *,
    result: str | None = None,
    error: str | None = None,
    duration_s: float | None = None,
    approval: str | None = None,
) -> StoredToolCall:
    """Store a tool call's outcome (``None`` leaves a field as is)."""
    sets: list[str] = []
    params: list[Any] = []
    for col, value in (
        ("result", result),
        ("error", error),
        ("duration_s", duration_s),
        ("approval", approval),
    ):
        if value is not None:
            sets.append(f"{col} = ?")
            params.append(value)
    with h._tx() as db:
        if sets:
            cur = db.execute(f"UPDATE tool_calls SET {', '.join(sets)} WHERE id = ?", (*params, tool_call_id))
            if cur.rowcount == 0:
                raise HistoryError(f"no tool call with id {tool_call_id}")
    return _read_tool_call(h, tool_call_id)


def _read_tool_call(h: History, tool_call_id: int) -> StoredToolCall:
    rows = h._read("SELECT message_id FROM tool_calls WHERE id = ?", (tool_call_id,))
    if not rows:
        raise HistoryError(f"no tool call with id {tool_call_id}")
    return next(tc for tc in h.get_message(rows[0][0]).tool_calls if tc.id == tool_call_id)
