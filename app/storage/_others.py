"""What reading other apps' chats shares (``lmstudio``, ``openwebui``, ``jan``): their times, a
chat's title when the app kept none, pictures sent as data URLs, thinking kept in ``<think>``
tags, and the layout of a reply that called tools (:class:`Turns`)."""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from app.storage.attached_files import AttachedFile, message_with_files
from app.storage.history import Conversation, KeptReply, MessageRecord, StoredToolCall

__all__ = [
    "MAX_MESSAGES",
    "attached_text",
    "MAX_PICTURE_BYTES",
    "OtherChat",
    "Turns",
    "chat_title",
    "data_url_picture",
    "epoch_seconds",
    "export_items",
    "is_picture",
    "obj",
    "text_of",
    "think_out",
]

MAX_MESSAGES = 100_000  # a chat longer than this is none (a cycle, a hostile file): read no further
MAX_PICTURE_BYTES = 64 * 1024 * 1024  # a file bigger than this is not read as a picture


@dataclass(frozen=True)
class OtherChat:
    """A chat read from another app: the conversation to store (``History.restore_conversation``)
    and what of it could not be brought (each said as "2 other versions of a reply")."""

    conversation: Conversation
    left: list[str] = field(default_factory=list)


_DATA_URL = re.compile(r"\Adata:image/[\w.+-]+;base64,(?P<data>.+)\Z", re.DOTALL)


def epoch_seconds(value: Any) -> float | None:
    """A time another app wrote (milliseconds, or seconds since 1970) as seconds; None for none
    or nonsense."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value != value or value <= 0:
        return None
    seconds = value / 1000 if value > 1e11 else float(value)
    return seconds if seconds < 4e9 else None  # (after 2096: not a time)


def obj(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (a field of the wrong type read as
    none)."""
    return value if isinstance(value, dict) else {}


def export_items(data: Any, is_chat: Callable[[Any], bool]) -> list[Any] | None:
    """The chats of an app's export that is a list of them, or one (``is_chat``: whether an item
    is one); None when it is empty or any item is not."""
    items = data if isinstance(data, list) else [data]
    return items if items and all(is_chat(item) for item in items) else None


def chat_title(name: Any, messages: Sequence[MessageRecord], fallback: str) -> str:
    """The chat's title: the ``name`` the app kept (its white space folded), else its first
    question's first 60 characters, else ``fallback``."""
    if isinstance(name, str) and name.strip():
        return " ".join(name.split())
    first = next((m.content for m in messages if m.role == "user" and m.content.strip()), "")
    return " ".join(first.split())[:60] or fallback


def attached_text(name: Any, content: Any, size: Any = None) -> AttachedFile | None:
    """A document the app sent with a question as text (its ``name``, the ``content`` it read,
    its ``size`` in bytes when it kept one), to put in the message as Callisto attaches a text
    file; None when it kept no text."""
    if not isinstance(content, str) or not content:
        return None
    return AttachedFile(
        " ".join(name.split()) if isinstance(name, str) and name.strip() else "attachment.txt",
        content,
        size if isinstance(size, int) and not isinstance(size, bool) and size >= 0 else len(content.encode()),
    )


def data_url_picture(url: Any, left: list[str]) -> bytes | None:
    """The bytes of a picture sent as a data URL (``data:image/png;base64,…``); None, and why in
    ``left``, for one that is not."""
    m = _DATA_URL.match(url) if isinstance(url, str) else None
    if m is None:
        left.append("an attached picture that is not in the file (a link, not its data)")
        return None
    try:
        return base64.b64decode(m.group("data"), validate=True)
    except (binascii.Error, ValueError):
        left.append("a picture whose data is not base64")
        return None


_PICTURES = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"GIF87a", b"GIF89a")


def is_picture(data: bytes) -> bool:
    """Whether ``data`` begins as a PNG, JPEG, GIF or WebP picture does."""
    return data.startswith(_PICTURES) or (data[:4] == b"RIFF" and data[8:12] == b"WEBP")


def text_of(value: Any) -> str:
    """The text of a content list (its ``text`` parts, in order), or of a string."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list):
        return ""
    return "".join(p["text"] for p in value if isinstance(p, dict) and isinstance(p.get("text"), str))


def _tool_arguments(value: Any) -> dict[str, Any] | str:
    """A call's arguments as another app kept them: an object, or JSON text of one; other text is
    kept as it was written (the side panel shows it), anything else is none."""
    if isinstance(value, dict):
        return value
    if isinstance(value, str):
        try:
            parsed = json.loads(value)
        except json.JSONDecodeError:
            return value  # kept as it was written
        return parsed if isinstance(parsed, dict) else value
    return {}


def think_out(m: MessageRecord) -> None:
    """A reply that begins with its thinking in ``<think>`` tags (as LM Studio and Jan kept it
    before they kept thinking apart): the thinking as its reasoning, the rest as its text. An
    unclosed tag is left as text (the reply was cut while it thought)."""
    text = m.content.lstrip()
    if m.role != "assistant" or m.reasoning is not None or not text.startswith("<think>"):
        return
    end = text.find("</think>")
    if end == -1:
        return
    m.reasoning = text[len("<think>") : end].strip()
    m.content = text[end + len("</think>") :].lstrip()


class Turns:
    """A chat's messages in Callisto's layout, built one message after another: a reply that
    called tools is its message (text and calls), a ``tool`` message for each result, then a new
    message for what it wrote after them, as Callisto keeps a turn (so the side panel shows the
    calls)."""

    def __init__(self, created: float, app: str) -> None:
        self.created, self.app = created, app
        self.messages: list[MessageRecord] = []
        self.left: list[str] = []
        self.kept: list[KeptReply] = []  # the other versions of its replies
        self.first_words: str | None = None  # what its first question said (a chat's title)
        self._calls = 0

    def question(self, text: str, files: list[AttachedFile], **kw: Any) -> MessageRecord:
        """A user's message: ``text``, and the documents sent with it as text put in it as
        Callisto attaches a text file (so it reads, and goes on, as it did). The first one's
        words (else its files' names) title a chat the app named not."""
        if self.first_words is None and (text.strip() or files):
            self.first_words = " ".join((text or " ".join(f.name for f in files)).split())[:60]
        return self.add("user", message_with_files(text, files) if files else text, **kw)

    def other_versions(
        self, first: int, read: Callable[[Any], object], versions: Sequence[Any], shown: int
    ) -> bool:
        """Keep the versions of the reply just read (from message ``first`` on) other than
        ``shown`` (its index in ``versions``, the app's order), as Regenerate keeps them: each
        read by ``read`` into the messages and taken out again, numbered from 1 in that order,
        the shown one left in the chat. Only a reply right after a user message has versions
        here: False (nothing kept) for one that is not."""
        user = first - 1
        if user < 0 or self.messages[user].role != "user" or any(k.user_index == user for k in self.kept):
            return False
        for number, version in enumerate(versions, 1):
            if number == shown + 1:
                self.kept.append(KeptReply(user, number, self.created, None))
                continue
            first = len(self.messages)
            read(version)
            records, self.messages[first:] = self.messages[first:], []
            self.kept.append(KeptReply(user, number, self.created, records))
        return True

    def add(self, role: str, content: str = "", **kw: Any) -> MessageRecord:
        created = kw.pop("created", None)
        m = MessageRecord(
            id=0, conversation_id=0, position=len(self.messages), role=role, content=content, **kw
        )
        m.created = created or self.created
        self.messages.append(m)
        return m

    def reply(self, current: MessageRecord | None, extra: dict[str, Any]) -> MessageRecord:
        """The reply message text or a call goes in: ``current`` while it is the last message,
        else a new one (after the calls' results)."""
        if current is not None and self.messages and self.messages[-1] is current:
            return current
        return self.add("assistant", extra=dict(extra))

    def chat(self, name: Any, fallback: str, updated: float | None, **more: Any) -> OtherChat:
        """The chat read: its conversation (titled ``name``, else by its first question, else
        ``fallback``; last changed at ``updated``; ``more`` of its fields) and what was left."""
        named = name if isinstance(name, str) and name.strip() else self.first_words
        conv = Conversation(
            id=0,
            title=chat_title(named, self.messages, fallback),
            created=self.created,
            updated=max(updated or self.created, self.created),
            message_count=len(self.messages),
            messages=self.messages,
            kept_replies=self.kept,
            **more,
        )
        return OtherChat(conv, self.left)

    def named(self, name: Any) -> bool:
        """Whether a call's ``name`` is one; said when it is not (the call is not brought)."""
        if isinstance(name, str) and name.strip():
            return True
        self.left.append("a tool call with no name")
        return False

    def call(self, reply: MessageRecord, name: Any, given: Any, arguments: Any) -> StoredToolCall | None:
        """A call the reply made (``given``: the app's id for it, or none); None, and said, for
        one with no name."""
        if not self.named(name):
            return None
        self._calls += 1
        call_id = given if isinstance(given, str) and given.strip() else f"{self.app}{self._calls:05d}"
        call = StoredToolCall(
            id=0,
            message_id=0,
            call_id=call_id,
            name=name.strip(),
            arguments=_tool_arguments(arguments),
            position=len(reply.tool_calls),
        )
        reply.tool_calls.append(call)
        return call

    def result(self, reply: MessageRecord | None, given: Any, value: Any) -> None:
        """A call's result: kept with the call (the one ``given`` names, else the first without
        one) and as the tool's message the model read; said when there is no call."""
        waiting = [c for c in reply.tool_calls if c.result is None] if reply is not None else []
        call = next((c for c in waiting if c.call_id == given), waiting[0] if waiting else None)
        if call is None:
            self.left.append("a tool result with no call")
            return
        text = json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else text_of(value)
        call.result = text
        self.add("tool", text, tool_call_id=call.call_id, name=call.name)
