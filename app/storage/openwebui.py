"""Chats exported by Open WebUI (the chat window many Ollama users use), read as Callisto
conversations (Qt-free): File -> *Import chats…* and ``history import`` take its export as they
take Callisto's own.

Open WebUI exports a JSON list of chats (Settings -> Chats -> *Export chats*, or one chat's
*Download -> Export chat*): each ``{"title", "created_at", "updated_at", "pinned", "chat": {...}}``,
the chat holding its messages as a tree (``history.messages`` by id, each with its ``parentId``
and ``childrenIds``, and ``history.currentId``, the last message shown). A bare chat (the
``chat`` object itself) is read too.

Read here: the branch the chat showed (from ``currentId`` back to its first message), each
message's text, a reply's thinking (the ``<details type="reasoning">`` blocks Open WebUI writes in
it) as its reasoning, the tools it ran (its ``<details type="tool_calls">`` blocks, each with the
call's name, arguments and result) as calls in Callisto's turn layout, who wrote it, its token
counts, and the pictures attached to a question (data URLs); a reply's regenerations (the other
replies to its question) are kept as Regenerate keeps them, to switch to. What is not brought is
said: the other branches (a question's edits), files that are not pictures. Every field is checked: a
file may come from anywhere."""

from __future__ import annotations

import html
import json
import re
import time
from collections.abc import Iterator
from typing import Any

from app.storage._others import MAX_MESSAGES, OtherChat, Turns, data_url_picture, epoch_seconds
from app.storage.history import MessageRecord

__all__ = ["conversations_from_openwebui", "is_openwebui_export"]

_ATTRIBUTE = re.compile(r'(\w+)="([^"]*)"')
_SUMMARY = re.compile(r"\A\s*<summary>.*?</summary>", re.DOTALL)
_CLOSE = "</details>"


def _blocks(text: str) -> Iterator[tuple[int, int, dict[str, str], str]]:
    """The blocks Open WebUI writes in a reply (its thinking, a tool it ran), in order: where
    each starts and ends, its attributes and its text (without its summary line). One scan of
    the text: a hostile reply costs no more than its length."""
    at = 0
    while (start := text.find("<details", at)) != -1:
        opened = text.find(">", start)
        if opened == -1:
            return
        attrs = _attributes(text[start : opened + 1])
        at = opened + 1
        if attrs.get("type") not in ("reasoning", "tool_calls"):
            continue  # (some other block: left in the text)
        close = text.find(_CLOSE, at)
        if close == -1:
            return  # (cut: left as text)
        yield start, close + len(_CLOSE), attrs, _SUMMARY.sub("", text[at:close], count=1)
        at = close + len(_CLOSE)


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


def _branch(chat: dict[str, Any]) -> tuple[list[dict[str, Any]], dict[str, Any], int]:
    """The messages the chat showed, first to last, the tree they are in (empty for a bare
    chat), and how many other first messages there were (a first question edited: its versions
    have no parent)."""
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
        return branch, tree, max(0, len(roots) - 1)
    listed = chat.get("messages")
    return (
        ([m for m in listed if isinstance(m, dict)][:MAX_MESSAGES] if isinstance(listed, list) else []),
        {},
        0,
    )


def _siblings(tree: dict[str, Any], node: dict[str, Any]) -> list[dict[str, Any]]:
    """The messages of the tree that answer what ``node`` answers (its parent's children, in
    their order): its other versions, an edit or a regeneration; none for a bare chat."""
    up = node.get("parentId")
    parent = tree.get(up) if isinstance(up, str) else None
    kids = parent.get("childrenIds") if isinstance(parent, dict) else None
    found = [tree.get(k) for k in kids[:MAX_MESSAGES] if isinstance(k, str)] if isinstance(kids, list) else []
    return [k for k in found if isinstance(k, dict)]


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


def _attributes(opening: str) -> dict[str, str]:
    """The attributes of an HTML opening tag Open WebUI wrote, their entities undone."""
    return {k: html.unescape(v) for k, v in _ATTRIBUTE.findall(opening)}


def _decoded(value: str | None) -> Any:
    """An attribute Open WebUI wrote as JSON (``arguments``, ``result``): the value, a string
    of JSON decoded once more (arguments sent as text); the text itself when it is no JSON."""
    if value is None:
        return None
    try:
        decoded = json.loads(value)
        if isinstance(decoded, str) and decoded.lstrip().startswith("{"):
            decoded = json.loads(decoded)
    except ValueError:
        return value
    return decoded


def _quote_out(body: str) -> str:
    """A reasoning block's text: Open WebUI quotes each line ("> ")."""
    return "\n".join(line.removeprefix("> ").removeprefix(">") for line in body.strip().splitlines())


def _reply(reader: Turns, node: dict[str, Any], text: str, created: float) -> None:
    """An assistant's message: its text, and the blocks Open WebUI wrote in it (its thinking, each
    tool it ran with the result), laid out as Callisto keeps a turn."""
    name = node.get("modelName") or node.get("model")
    extra: dict[str, Any] = {"imported_from": "Open WebUI"}
    if isinstance(name, str) and name.strip():
        extra["model_name"] = " ".join(name.split())
    reply: MessageRecord | None = None
    at, chained = 0, False  # chained: the block before was a call, with no text between
    for start, end, attrs, body in _blocks(text):
        before, at = text[at:start].strip(), end
        if before:
            reply = reader.reply(reply, extra)
            reply.content += f"\n\n{before}" if reply.content else before
            chained = False
        call_block = attrs.get("type") == "tool_calls"
        if call_block and not reader.named(attrs.get("name")):
            continue
        if not (call_block and chained and reply is not None):  # (calls in a row: one message's)
            reply = reader.reply(reply, extra)
        reply.created = created
        chained = call_block
        if not call_block:
            thought = _quote_out(body)
            reply.reasoning = f"{reply.reasoning}\n\n{thought}" if reply.reasoning else thought
            continue
        call = reader.call(reply, attrs["name"], attrs.get("id"), _decoded(attrs.get("arguments")))
        if call is not None and "result" in attrs:
            result = _decoded(attrs["result"])
            reader.result(
                reply, call.call_id, result if isinstance(result, str | dict) else json.dumps(result)
            )
    rest = text[at:].strip() if at else text
    if rest or reply is None:
        reply = reader.reply(reply, extra)
        reply.created = created
        reply.content += f"\n\n{rest}" if reply.content and rest else rest
    usage = node.get("usage")
    if isinstance(usage, dict):
        for key in ("prompt_tokens", "completion_tokens"):
            v = usage.get(key)
            if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
                setattr(reply, key, v)


def _conversation(item: dict[str, Any], chat: dict[str, Any]) -> OtherChat:
    created = epoch_seconds(item.get("created_at")) or epoch_seconds(chat.get("timestamp")) or time.time()
    reader = Turns(created, "openwebui")
    branch, tree, others = _branch(chat)

    def reply(node: dict[str, Any]) -> None:
        content = node.get("content")
        _reply(
            reader,
            node,
            content if isinstance(content, str) else "",
            epoch_seconds(node.get("timestamp")) or created,
        )

    for n, node in enumerate(branch):
        role, content = node.get("role"), node.get("content")
        text = content if isinstance(content, str) else ""
        at = epoch_seconds(node.get("timestamp")) or created
        siblings = _siblings(tree, node)
        if role == "user":
            reader.add("user", text, images=_pictures(node.get("files"), reader.left), created=at)
        elif role == "system":
            reader.add("system", text, created=at)
        elif role == "assistant":
            first = len(reader.messages)
            reply(node)
            shown = next((i for i, sib in enumerate(siblings) if sib is node), None)
            regenerated = len(siblings) > 1 and all(sib.get("role") == "assistant" for sib in siblings)
            if regenerated and shown is not None and reader.other_versions(first, reply, siblings, shown):
                siblings = []  # (kept: the reply's versions, to switch to)
        else:
            reader.left.append(f"message {n + 1}, whose role is {str(role)[:40]!r}")
        others += max(0, len(siblings) - 1)
    if others:
        reader.left.append(f"{others} other version{'s' if others > 1 else ''} of its messages")
    title = item.get("title") if isinstance(item.get("title"), str) else chat.get("title")
    return reader.chat(
        title, "Open WebUI chat", epoch_seconds(item.get("updated_at")), pinned=item.get("pinned") is True
    )


def conversations_from_openwebui(data: Any) -> list[OtherChat]:
    """Every chat of an Open WebUI export (``data``: its JSON, read), in its order. ValueError for
    JSON that is no such export."""
    if not is_openwebui_export(data):
        raise ValueError("the file is not a chat export of Open WebUI")
    items = data if isinstance(data, list) else [data]
    return [_conversation(item, _chat_of(item)) for item in items]  # type: ignore[arg-type]
