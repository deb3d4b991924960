"""Chats exported from ChatGPT, read as Callisto conversations (Qt-free): File -> *Import chats…*
and ``history import`` take the ``conversations.json`` of ChatGPT's data export as they take
Callisto's own, so a person who moves to local models keeps their history (searchable, and a
chat can go on with a local model).

ChatGPT's export (Settings -> Data controls -> *Export data*, a zip) holds ``conversations.json``:
a list of chats, each ``{"title", "create_time", "update_time", "mapping", "current_node"}``, the
mapping a tree of nodes (``parent``, ``children``, ``message``) and ``current_node`` the last
message shown. A message has an ``author.role`` (``user``, ``assistant``, ``system``, ``tool``
with the tool's ``name``), a ``recipient`` (``all``, or the tool an assistant's message calls),
``content`` by ``content_type`` (``text`` and ``multimodal_text`` with their ``parts``, ``code``
with its ``text``, ``thoughts`` with the model's reasoning, ``execution_output``…) and
``metadata.model_slug``. Pictures are files beside ``conversations.json`` in the zip, named after
their ``asset_pointer``; the zip itself is read as well as the folder it was unzipped to.

Read here: the branch the chat showed (from ``current_node`` back to its first message), the
questions and answers, a reasoning model's thoughts as the reply's reasoning, the calls the model
made to ChatGPT's tools (Python, browsing, image making) with their results, the model that wrote
each reply, and the pictures sent when their files are in the export; a reply's regenerations
(the other answers to its question, each up to the next question) are kept as Regenerate keeps
them, to switch to. What is not brought is said: the other branches (a question's edits, what
was asked after another answer), a picture whose file is not there. The custom instructions
ChatGPT answered the chat with (hidden at its start) are its system prompt here, so it goes on
as it did; other hidden messages (the system's, the model's memory) are not brought. Every field is checked:
a file may come from anywhere."""

from __future__ import annotations

import glob
import os
import time
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from app.storage._others import (
    MAX_MESSAGES,
    MAX_PICTURE_BYTES,
    OtherChat,
    Turns,
    epoch_seconds,
    export_items,
    is_picture,
    obj,
)
from app.storage.history import MessageRecord

__all__ = [
    "Pictures",
    "conversations_from_chatgpt",
    "is_chatgpt_export",
    "pictures_in_folder",
    "pictures_in_zip",
]

_TOOL_ROLES = ("tool",)
_HIDDEN_TYPES = ("user_editable_context", "model_editable_context", "reasoning_recap", "system_error")


def _is_chat(item: Any) -> bool:
    return isinstance(item, dict) and isinstance(item.get("mapping"), dict) and "current_node" in item


def is_chatgpt_export(data: Any) -> bool:
    """Whether ``data`` (a JSON document) is ChatGPT's ``conversations.json``: a list of its
    chats, or one."""
    return export_items(data, _is_chat) is not None


def _branch(tree: dict[str, Any], at: Any) -> list[str]:
    """The nodes of the branch the chat showed that hold a message, first to last (from
    ``at``, its ``current_node``, back to its first message)."""
    seen: set[str] = set()
    branch: list[str] = []
    while isinstance(at, str) and at in tree and at not in seen and len(seen) < MAX_MESSAGES:
        seen.add(at)
        node = tree[at]
        if not isinstance(node, dict):
            break
        if isinstance(node.get("message"), dict):
            branch.append(at)
        at = node.get("parent")
    branch.reverse()
    return branch


def _children(tree: dict[str, Any], key: str) -> list[str]:
    kids = obj(tree.get(key)).get("children")
    return (
        [k for k in kids[:MAX_MESSAGES] if isinstance(k, str) and isinstance(tree.get(k), dict)]
        if isinstance(kids, list)
        else []
    )


def _reply_from(tree: dict[str, Any], key: str, shown: set[str]) -> list[dict[str, Any]]:
    """The messages of a reply that starts at node ``key``, up to the next question: along the
    branch shown where it goes, else along the newest child."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    at: str | None = key
    while at is not None and at not in seen and len(out) < MAX_MESSAGES:
        seen.add(at)
        message = tree[at].get("message")
        if isinstance(message, dict):
            if obj(message.get("author")).get("role") == "user":
                break
            out.append(message)
        kids = _children(tree, at)
        at = next((k for k in kids if k in shown), kids[-1]) if kids else None
    return out


def _shown_to_person(message: dict[str, Any]) -> bool:
    """Whether ChatGPT shows the message in the chat (not the system's, not a hidden one)."""
    meta, content = obj(message.get("metadata")), obj(message.get("content"))
    role = obj(message.get("author")).get("role")
    if meta.get("is_visually_hidden_from_conversation") or content.get("content_type") in _HIDDEN_TYPES:
        return False
    return role in ("user", "assistant", *_TOOL_ROLES)


def _parts_text(content: dict[str, Any]) -> str:
    """The text of a message's content, whatever its type: its text ``parts``, or ``text``, or
    ``result``."""
    parts = content.get("parts")
    if isinstance(parts, list):
        return "\n".join(p for p in parts if isinstance(p, str))
    for key in ("text", "result"):
        if isinstance(content.get(key), str):
            return str(content[key])
    return ""


Pictures = Callable[[str], "bytes | None"]  # the picture whose file's name begins so, if there is one


def pictures_in_folder(folder: str | os.PathLike[str]) -> Pictures:
    """The pictures of an export unzipped in ``folder``: a file there whose name begins with the
    picture's name, when it is a picture."""
    where = Path(folder)

    def find(name: str) -> bytes | None:
        for path in sorted(where.glob(f"{glob.escape(name)}*")):
            try:
                if path.is_file() and path.stat().st_size <= MAX_PICTURE_BYTES:
                    data = path.read_bytes()
                    if is_picture(data):
                        return data
            except OSError:
                continue
        return None

    return find


def pictures_in_zip(archive: zipfile.ZipFile, folder: str = "") -> Pictures:
    """The pictures of an export still in its zip (``folder``: where its ``conversations.json``
    is in it), read from the zip (each no larger than a picture may be)."""
    members = sorted(
        (m for m in archive.infolist() if not m.is_dir() and m.filename.startswith(folder)),
        key=lambda m: m.filename,
    )

    def find(name: str) -> bytes | None:
        for member in members:
            if member.filename[len(folder) :].startswith(name) and member.file_size <= MAX_PICTURE_BYTES:
                with archive.open(member) as f:
                    data = f.read(MAX_PICTURE_BYTES + 1)
                if len(data) <= MAX_PICTURE_BYTES and is_picture(data):
                    return data
        return None

    return find


class _Reader(Turns):
    """Builds the conversation's messages from ChatGPT's, one message after another."""

    def __init__(self, created: float, pictures: Pictures | None) -> None:
        super().__init__(created, "chatgpt")
        self.pictures = pictures
        self.reply_at: MessageRecord | None = None

    def picture(self, part: dict[str, Any]) -> bytes | None:
        """A picture sent (an ``image_asset_pointer``): its file in the export, when it is there;
        else said."""
        pointer = part.get("asset_pointer")
        name = pointer.rsplit("/", 1)[-1] if isinstance(pointer, str) else ""
        data = self.pictures(name) if name and self.pictures is not None and Path(name).name == name else None
        if data is None:
            self.left.append(f"a picture whose file ({name or 'no name'}) is not in the export")
        return data

    def user(self, message: dict[str, Any], created: float | None) -> None:
        content = obj(message.get("content"))
        text, images, parts = "", [], content.get("parts")
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, str):
                text += part
            elif isinstance(part, dict) and part.get("content_type") == "image_asset_pointer":
                data = self.picture(part)
                if data is not None:
                    images.append(data)
        self.add("user", text, images=images, created=created)
        self.reply_at = None

    def assistant(self, message: dict[str, Any], created: float | None) -> None:
        """One of the reply's messages: its text, its thoughts, or a call to one of ChatGPT's
        tools (``recipient``): each goes in the reply being built, as Callisto keeps a turn."""
        content = obj(message.get("content"))
        kind = content.get("content_type")
        model = obj(message.get("metadata")).get("model_slug")
        extra: dict[str, Any] = {"imported_from": "ChatGPT"}
        if isinstance(model, str) and model.strip():
            extra["model_name"] = " ".join(model.split())
        reply = self.reply(self.reply_at, extra)
        reply.created = created or reply.created
        self.reply_at = reply
        recipient = message.get("recipient")
        if isinstance(recipient, str) and recipient not in ("all", ""):
            self.call(reply, recipient, None, _parts_text(content))
        elif kind == "thoughts":
            thoughts = content.get("thoughts")
            said = [
                "\n".join(s for s in (t.get("summary"), t.get("content")) if isinstance(s, str) and s)
                for t in (thoughts if isinstance(thoughts, list) else [])
                if isinstance(t, dict)
            ]
            reply.reasoning = "\n\n".join(filter(None, [reply.reasoning or "", *said])) or None
        else:
            text = _parts_text(content)
            reply.content += f"\n\n{text}" if reply.content and text else text

    def tool(self, message: dict[str, Any]) -> None:
        """A tool's answer: the result of the call the reply made before it."""
        content = obj(message.get("content"))
        name = obj(message.get("author")).get("name")
        waiting = [c for c in self.reply_at.tool_calls if c.result is None] if self.reply_at else []
        call = next((c for c in waiting if c.name == name), None)
        self.result(self.reply_at, call.call_id if call is not None else None, _parts_text(content))


def _conversation(chat: dict[str, Any], pictures: Pictures | None) -> OtherChat:
    created = epoch_seconds(chat.get("create_time")) or time.time()
    reader = _Reader(created, pictures)
    tree: dict[str, Any] = chat["mapping"]
    branch = _branch(tree, chat.get("current_node"))
    shown, kept = set(branch), set[int]()  # kept: the messages brought as reply versions (ids)
    asked: tuple[int, list[list[dict[str, Any]]], int] | None = None  # a regenerated reply's question

    prompt: str | None = None  # the custom instructions ChatGPT answered this chat with

    def read(message: dict[str, Any]) -> None:
        nonlocal prompt
        if not _shown_to_person(message):
            prompt = prompt or _instructions(message)
            return
        role = obj(message.get("author")).get("role")
        at = epoch_seconds(message.get("create_time"))
        if role == "user":
            reader.user(message, at)
        elif role == "assistant":
            reader.assistant(message, at)
        else:
            reader.tool(message)

    def read_reply(messages: list[dict[str, Any]]) -> None:
        reader.reply_at = None
        for message in messages:
            read(message)

    def keep_versions() -> None:
        """The replies to the question just answered other than the one shown (its regenerations),
        kept as Regenerate keeps them."""
        if asked is None:
            return
        first, versions, at = asked
        if reader.other_versions(first, read_reply, versions, at):
            kept.update(id(m) for version in versions for m in version)

    for key in branch:
        message = tree[key]["message"]
        if obj(message.get("author")).get("role") == "user" and _shown_to_person(message):
            keep_versions()
            read(message)
            replies = [(k, _reply_from(tree, k, shown)) for k in _children(tree, key)]
            replies = [(k, r) for k, r in replies if k in shown or any(map(_shown_to_person, r))]
            at = next((i for i, (k, _r) in enumerate(replies) if k in shown), None)
            asked = (
                (len(reader.messages), [r for _k, r in replies], at)
                if len(replies) > 1 and at is not None
                else None
            )
        else:
            read(message)
    keep_versions()
    others = sum(
        1
        for key, node in tree.items()
        if key not in shown
        and isinstance(node, dict)
        and _shown_to_person(obj(node.get("message")))
        and id(node.get("message")) not in kept
    )
    if others:
        reader.left.append(
            f"{others} message{'s' if others > 1 else ''} of other branches (edits, regenerations)"
        )
    return reader.chat(
        chat.get("title"), "ChatGPT chat", epoch_seconds(chat.get("update_time")), system_prompt=prompt
    )


def _instructions(message: dict[str, Any]) -> str | None:
    """The person's custom instructions (what ChatGPT should know about them, how it should
    answer) that ChatGPT kept hidden at a chat's start, as a system prompt; None for any other
    message."""
    content = obj(message.get("content"))
    if content.get("content_type") != "user_editable_context":
        return None
    said = [  # (as ChatGPT wrote them for the model: each says what it is)
        text.strip()
        for key in ("user_profile", "user_instructions")
        if isinstance(text := content.get(key), str) and text.strip()
    ]
    return "\n\n".join(said) or None


def conversations_from_chatgpt(
    data: Any, pictures: Pictures | str | os.PathLike[str] | None = None
) -> list[OtherChat]:
    """Every chat of ChatGPT's ``conversations.json`` (``data``: its JSON, read), in its order,
    their pictures found by ``pictures`` (:func:`pictures_in_zip`, or a folder: the unzipped
    export's). ValueError for JSON that is no such export."""
    items = export_items(data, _is_chat)
    if items is None:
        raise ValueError("the file is not ChatGPT's conversations.json")
    find = pictures_in_folder(pictures) if isinstance(pictures, str | os.PathLike) else pictures
    return [_conversation(item, find) for item in items]
