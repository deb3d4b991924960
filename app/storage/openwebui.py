"""Chats exported by Open WebUI (the chat window many Ollama users use), read as Callisto
conversations (Qt-free): File -> *Import chats…* and ``history import`` take its export as they
take Callisto's own.

Open WebUI exports a JSON list of chats (Settings -> Chats -> *Export chats*, or one chat's
*Download -> Export chat*): each ``{"title", "created_at", "updated_at", "pinned", "chat": {...}}``,
the chat holding its messages as a tree (``history.messages`` by id, each with its ``parentId``
and ``childrenIds``, and ``history.currentId``, the last message shown). A bare chat (the
``chat`` object itself) is read too.

Read here: the branch the chat showed (from ``currentId`` back to its first message), each
message's text, a reply's thinking (the ``<details type="reasoning">`` block Open WebUI writes at
its start) as its reasoning, who wrote it, its token counts, and the pictures attached to a
question (data URLs). What is not brought is said: the other branches (edits, regenerations),
files that are not pictures. Every field is checked: a file may come from anywhere."""

from __future__ import annotations

import re
import time
from typing import Any

from app.storage._others import OtherChat, chat_title, data_url_picture, epoch_seconds
from app.storage.history import Conversation, MessageRecord

__all__ = ["conversations_from_openwebui", "is_openwebui_export"]

MAX_MESSAGES = 100_000  # a branch longer than this is no chat (a cycle, a hostile file)
_REASONING = re.compile(
    r'\A\s*<details\b[^>]*\btype="reasoning"[^>]*>\s*(?:<summary>.*?</summary>)?(?P<body>.*?)</details>\s*',
    re.DOTALL,
)


def _chat_of(item: Any) -> dict[str, Any] | None:
    """The chat object of an export's entry (``{"chat": {...}}``), or the entry itself when it is
    a bare chat; None for anything else."""
    if not isinstance(item, dict):
        return None
    chat = item.get("chat", item)
    if not isinstance(chat, dict):
        return None
    history = chat.get("history")
    if isinstance(history, dict) and isinstance(history.get("messages"), dict):
        return chat
    return chat if isinstance(chat.get("messages"), list) and "models" in chat else None


def is_openwebui_export(data: Any) -> bool:
    """Whether ``data`` (a JSON document) is an Open WebUI export: a list of its chats, or one."""
    items = data if isinstance(data, list) else [data]
    return bool(items) and all(_chat_of(item) is not None for item in items)


def _branch(chat: dict[str, Any]) -> tuple[list[dict[str, Any]], int]:
    """The messages the chat showed, first to last, and how many other branches there were (a
    message's siblings: an edit, a regeneration)."""
    history = chat.get("history")
    tree = history.get("messages") if isinstance(history, dict) else None
    if isinstance(tree, dict) and tree:
        at = history.get("currentId") if isinstance(history, dict) else None
        branch: list[dict[str, Any]] = []
        seen: set[str] = set()
        while isinstance(at, str) and at in tree and at not in seen and len(branch) < MAX_MESSAGES:
            seen.add(at)
            node = tree[at]
            if not isinstance(node, dict):
                break
            branch.append(node)
            at = node.get("parentId")
        branch.reverse()
        roots = [n for n in tree.values() if isinstance(n, dict) and n.get("parentId") not in tree]
        others = max(0, len(roots) - 1)  # (a first question edited: its versions have no parent)
        for node in branch:
            parent = tree.get(node.get("parentId")) if isinstance(node.get("parentId"), str) else None
            kids = parent.get("childrenIds") if isinstance(parent, dict) else None
            others += max(0, len(kids) - 1) if isinstance(kids, list) else 0
        return branch, others
    listed = chat.get("messages")
    return ([m for m in listed if isinstance(m, dict)][:MAX_MESSAGES] if isinstance(listed, list) else []), 0


def _pictures(files: Any, left: list[str]) -> list[bytes]:
    """The pictures of a question's ``files`` (data URLs); what is not one is said."""
    out: list[bytes] = []
    for f in files if isinstance(files, list) else []:
        if not isinstance(f, dict):
            continue
        url = f.get("url")
        if not (isinstance(url, str) and url.startswith("data:image/")):
            inner = f.get("file")
            name = f.get("name") or (inner.get("filename") if isinstance(inner, dict) else None)
            left.append(
                f"an attached file ({name or f.get('type') or 'no name'}) that is no picture in the file"
            )
            continue
        data = data_url_picture(url, left)
        if data is not None:
            out.append(data)
    return out


def _message(node: dict[str, Any], n: int, created: float, left: list[str]) -> MessageRecord | None:
    role, content = node.get("role"), node.get("content")
    if role not in ("user", "assistant", "system"):
        left.append(f"message {n + 1}, whose role is {str(role)[:40]!r}")
        return None
    text = content if isinstance(content, str) else ""
    m = MessageRecord(id=0, conversation_id=0, position=n, role=role, content=text)
    m.created = epoch_seconds(node.get("timestamp")) or created
    if role == "user":
        m.images = _pictures(node.get("files"), left)
    elif role == "assistant":
        found = _REASONING.match(text)
        if found is not None:
            m.reasoning = "\n".join(
                line.removeprefix("> ").removeprefix(">") for line in found.group("body").strip().splitlines()
            )
            m.content = text[found.end() :]
        name = node.get("modelName") or node.get("model")
        if isinstance(name, str) and name.strip():
            m.extra = {"model_name": " ".join(name.split()), "imported_from": "Open WebUI"}
        usage = node.get("usage")
        if isinstance(usage, dict):
            for key in ("prompt_tokens", "completion_tokens"):
                v = usage.get(key)
                if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                    setattr(m, key, v)
    return m


def _conversation(item: dict[str, Any], chat: dict[str, Any]) -> OtherChat:
    left: list[str] = []
    created = epoch_seconds(item.get("created_at")) or epoch_seconds(chat.get("timestamp")) or time.time()
    updated = max(epoch_seconds(item.get("updated_at")) or created, created)
    branch, others = _branch(chat)
    messages = [m for n, node in enumerate(branch) if (m := _message(node, n, created, left)) is not None]
    for i, m in enumerate(messages):
        m.position = i
    if others:
        left.append(f"{others} other version{'s' if others > 1 else ''} of its messages")
    title = item.get("title") if isinstance(item.get("title"), str) else chat.get("title")
    conv = Conversation(
        id=0,
        title=chat_title(title, messages, "Open WebUI chat"),
        created=created,
        updated=updated,
        message_count=len(messages),
        pinned=item.get("pinned") is True,
        messages=messages,
    )
    return OtherChat(conv, left)


def conversations_from_openwebui(data: Any) -> list[OtherChat]:
    """Every chat of an Open WebUI export (``data``: its JSON, read), in its order. ValueError for
    JSON that is no such export."""
    if not is_openwebui_export(data):
        raise ValueError("the file is not a chat export of Open WebUI")
    items = data if isinstance(data, list) else [data]
    return [_conversation(item, _chat_of(item)) for item in items]  # type: ignore[arg-type]
