"""Chats exported from Claude (claude.ai), read as Callisto conversations (Qt-free): File ->
*Import chats…* and ``history import`` take the ``conversations.json`` of its data export as they
take Callisto's own.

Claude's export (Settings -> Privacy -> *Export data*, a zip) holds ``conversations.json``: a list
of chats, each ``{"uuid", "name", "created_at", "updated_at", "chat_messages"}`` (times as ISO 8601
text), the messages in order, each with its ``sender`` (``human`` or ``assistant``), its
``text``, its ``content`` blocks (``text``, ``thinking``, ``tool_use`` with the tool's ``name``
and ``input``, ``tool_result`` with its ``content``), and the ``attachments`` and ``files`` sent.

Read here: each message's text, a reply's thinking as its reasoning, the calls it made with their
results (laid out as Callisto keeps a turn, so the side panel shows them), and when each was
written, and the text of the documents attached (``extracted_content``), in the message as
Callisto puts an attached text file. What is not brought is said: the pictures and other files
sent (the export holds only their names). Every field is checked: a file may come from
anywhere."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

from app.storage._others import (
    MAX_MESSAGES,
    OtherChat,
    Turns,
    attached_text,
    epoch_seconds,
    export_items,
    text_of,
)
from app.storage.attached_files import MAX_FILES
from app.storage.history import MessageRecord

__all__ = ["conversations_from_claude", "is_claude_export"]


def _is_chat(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("chat_messages"), list) and "uuid" in item


def is_claude_export(data: Any) -> bool:
    """Whether ``data`` (a JSON document) is Claude's ``conversations.json``: a list of its
    chats, or one."""
    return export_items(data, _is_chat) is not None


def _when(value: Any) -> float | None:
    """A time Claude wrote (ISO 8601 text, "2025-03-01T09:30:00.123456Z") as seconds since 1970."""
    if not isinstance(value, str):
        return epoch_seconds(value)
    try:
        return epoch_seconds(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp())
    except ValueError:
        return None


class _Reader(Turns):
    def __init__(self, created: float) -> None:
        super().__init__(created, "claude")

    def user(self, message: dict[str, Any], created: float | None) -> None:
        blocks = message.get("content")
        texts = (
            [b.get("text") for b in blocks if isinstance(b, dict) and b.get("type") == "text"]
            if isinstance(blocks, list)
            else []
        )
        text = "".join(t for t in texts if isinstance(t, str)) or text_of(message.get("text"))
        files, sent = [], 0
        for key in ("attachments", "files"):
            listed = message.get(key)
            for f in listed[:MAX_FILES] if isinstance(listed, list) else []:
                if not isinstance(f, dict):
                    continue
                # an attached document's text, as Claude read it
                doc = attached_text(f.get("file_name"), f.get("extracted_content"), f.get("file_size"))
                if doc is not None:
                    files.append(doc)
                else:
                    sent += 1
        self.question(text, files, created=created)
        if sent:
            self.left.append(
                f"{sent} picture{'s' if sent > 1 else ''} or file{'s' if sent > 1 else ''} sent "
                "(the export keeps only their names)"
            )

    def assistant(self, message: dict[str, Any], created: float | None) -> None:
        """A reply's blocks in order: its thinking, its text, each call and its result."""
        blocks = message.get("content")
        if not isinstance(blocks, list) or not blocks:
            blocks = [{"type": "text", "text": message.get("text")}]
        reply: MessageRecord | None = None
        extra = {"imported_from": "Claude"}
        for block in blocks:
            kind = block.get("type") if isinstance(block, dict) else None
            if kind == "tool_result":
                self.result(reply, block.get("tool_use_id"), block.get("content"))
                continue
            if kind not in ("text", "thinking", "tool_use") or (
                kind == "tool_use" and not self.named(block.get("name"))
            ):
                continue
            reply = self.reply(reply, extra)
            reply.created = created or self.created
            if kind == "tool_use":
                self.call(reply, block["name"], block.get("id"), block.get("input"))
            elif kind == "thinking" and isinstance(block.get("thinking"), str):
                reply.reasoning = (reply.reasoning or "") + block["thinking"]
            elif isinstance(block.get("text"), str):
                reply.content += block["text"]
        if reply is None:
            self.add("assistant", extra=dict(extra), created=created)


def _conversation(chat: dict[str, Any]) -> OtherChat:
    created = _when(chat.get("created_at")) or time.time()
    reader = _Reader(created)
    for n, message in enumerate(chat["chat_messages"][:MAX_MESSAGES]):
        if not isinstance(message, dict):
            continue
        sender, at = message.get("sender"), _when(message.get("created_at"))
        if sender in ("human", "user"):
            reader.user(message, at)
        elif sender == "assistant":
            reader.assistant(message, at)
        else:
            reader.left.append(f"message {n + 1}, whose sender is {str(sender)[:40]!r}")
    return reader.chat(chat.get("name"), "Claude chat", _when(chat.get("updated_at")))


def conversations_from_claude(data: Any) -> list[OtherChat]:
    """Every chat of Claude's ``conversations.json`` (``data``: its JSON, read), in its order.
    ValueError for JSON that is no such export."""
    items = export_items(data, _is_chat)
    if items is None:
        raise ValueError("the file is not Claude's conversations.json")
    return [_conversation(item) for item in items]
