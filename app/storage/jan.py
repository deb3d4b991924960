"""What Jan keeps on this machine (Qt-free), so a person who switches brings it: its chats (Jan
calls them threads), read as Callisto conversations (File -> *Import from Jan…*, ``history import
--jan``).

Jan keeps its data in a folder of its own (``data_folder`` in its ``settings.json``, by default
``Jan/data`` in the system's folder for application data; Jan before 0.6 used ``~/jan``), each chat
as ``threads/<id>/thread.json`` (``title``, ``assistants`` with the model and the instructions,
``metadata.is_favorite``) and ``threads/<id>/messages.jsonl``, one message a line: its ``role``,
``created_at`` and ``content``, a list of parts (``text`` and ``reasoning`` with a
``text.value``, ``image_url`` with a ``url``, ``tool_call`` with the call's ``tool_name``,
``input`` and ``output``). Older messages keep their thinking in ``<think>`` tags and their calls
in ``metadata.tool_calls`` (each ``tool.function`` with its ``response``); newer ones may keep a
call's result as a ``tool`` message of its own. A chat with versions (an edit, a regeneration)
links each message to the one before it (``metadata.parentId``), and the version shown is the
parent's ``metadata.activeChildId``, else the newest.

Read here: the version of the chat Jan shows, the text, the thinking, each call with its
arguments and result, pictures sent as data URLs, the model that wrote the replies, the
instructions (as the system prompt) and the favourite mark (as the pin); a reply's regenerations
(the other replies to its question) are kept as Regenerate keeps them, to switch to. What is not
brought is said (:attr:`OtherChat.left`): a question's other versions (its edits), replies that
were errors. The documents Jan sent as text (``metadata.inline_file_contents``) are in the
question as Callisto attaches a text file. Every field is checked: a file may come from anywhere."""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path
from typing import Any

from app.storage._others import (
    MAX_MESSAGES,
    OtherChat,
    Turns,
    attached_text,
    data_url_picture,
    epoch_seconds,
    obj,
    think_out,
)
from app.storage.attached_files import MAX_FILES
from app.storage.history import MessageRecord

__all__ = [
    "conversation_from_jan",
    "jan_data_folder",
    "jan_thread_folders",
    "read_jan_thread",
]


def _system_data_dir(platform: str, home: Path) -> Path:
    """The system's folder for application data, as Jan's (Rust ``dirs::data_dir``) finds it."""
    if platform == "darwin":
        return home / "Library" / "Application Support"
    if platform == "win32":
        appdata = os.environ.get("APPDATA")
        return Path(appdata) if appdata else home / "AppData" / "Roaming"
    xdg = os.environ.get("XDG_DATA_HOME")
    return Path(xdg) if xdg else home / ".local" / "share"


def _places(home: Path, platform: str) -> list[Path]:
    """Where Jan's data folder may be, in the order Jan looks."""
    data = _system_data_dir(platform, home)
    configs = [data / "Jan" / "settings.json", data / "jan.ai.app" / "settings.json"]
    if platform not in ("darwin", "win32"):
        xdg = os.environ.get("XDG_CONFIG_HOME")
        configs.append((Path(xdg) if xdg else home / ".config") / "Jan" / "settings.json")
    places: list[Path] = []
    for config in configs:
        try:
            chosen = json.loads(config.read_text(encoding="utf-8")).get("data_folder")
        except (OSError, UnicodeDecodeError, ValueError, AttributeError):
            continue
        if isinstance(chosen, str) and chosen.strip():
            places.append(Path(chosen).expanduser())
    return [*places, data / "Jan" / "data", home / "jan"]


def jan_data_folder(
    home: str | os.PathLike[str] | None = None, *, platform: str | None = None, holding: str = "threads"
) -> Path | None:
    """Jan's data folder, where its ``threads`` (or what ``holding`` names: its models,
    ``llamacpp/models``) are: the one its settings name, else its default, else the older
    ``~/jan``; None when none of them holds it (Jan is not on this machine). ``home``: the user's
    folder; ``platform``: ``sys.platform``'s value."""
    base = Path(home) if home is not None else Path.home()
    return next((p for p in _places(base, platform or sys.platform) if (p / holding).is_dir()), None)


def jan_thread_folders(data: str | os.PathLike[str]) -> list[Path]:
    """Every chat of Jan's data folder ``data``: its ``threads`` folders that hold messages."""
    threads = Path(data) / "threads"
    try:
        folders = sorted(p for p in threads.iterdir() if p.is_dir())
    except OSError:
        return []
    found = []
    for folder in folders:
        try:
            if (folder / "messages.jsonl").stat().st_size > 0:
                found.append(folder)
        except OSError:
            continue  # (a chat begun and never written to)
    return found


def _meta(message: dict[str, Any]) -> dict[str, Any]:
    return obj(message.get("metadata"))


_UNLINKED = object()  # a message of a chat with versions that names no parent (not even none)


def _parent(message: dict[str, Any]) -> Any:
    """The message's parent: an id, None for a first message, or ``_UNLINKED``."""
    meta = _meta(message)
    parent = meta.get("parentId", _UNLINKED)
    return parent if parent is None or isinstance(parent, str) else _UNLINKED


_Children = dict[Any, list[dict[str, Any]]]  # a chat's messages by their parent's id (None: first ones)


def _shown(messages: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], _Children]:
    """The messages Jan shows, first to last, and every message by its parent's id (empty for a
    chat without versions). A chat
    without versions is shown as it was written; one with them, from the newest first message
    along each message's active (else newest) next one. A reply that lost its link (a bug of
    Jan's that Jan mends when it opens the chat) is linked as Jan links it: to the question
    before it, and the next question that hung from that question to it."""
    if not any("parentId" in _meta(m) or "activeChildId" in _meta(m) for m in messages):
        return messages, {}
    order = {id(m): n for n, m in enumerate(messages)}

    def when(m: dict[str, Any]) -> tuple[float, int]:
        return (epoch_seconds(m.get("created_at")) or 0.0, order[id(m)])

    ordered = sorted(messages, key=when)
    parents = {id(m): _parent(m) for m in messages}
    for i, reply in enumerate(ordered):
        if reply.get("role") != "assistant" or isinstance(parents[id(reply)], str):
            continue
        asked = next((m for m in reversed(ordered[:i]) if m.get("role") == "user"), None)
        if asked is None or not isinstance(asked.get("id"), str):
            continue
        parents[id(reply)] = asked["id"]
        after = next(
            (m for m in ordered[i + 1 :] if m.get("role") == "user" and parents[id(m)] == asked["id"]), None
        )
        if after is not None and isinstance(reply.get("id"), str):
            parents[id(after)] = reply["id"]
    children: _Children = {}
    for m in ordered:
        if parents[id(m)] is not _UNLINKED:
            children.setdefault(parents[id(m)], []).append(m)
    if not children.get(None):
        return messages, {}
    return _along(children, children[None][-1], set()), children


def _along(
    children: _Children, at: dict[str, Any] | None, shown: set[int], *, until_user: bool = False
) -> list[dict[str, Any]]:
    """The messages from ``at`` on as Jan shows them: each message's active next one (else one
    in ``shown``, else the newest); ``until_user``: only up to the next question (a reply)."""
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    while at is not None and len(out) < MAX_MESSAGES:
        if until_user and at.get("role") == "user":
            break
        out.append(at)
        mid = at.get("id")
        if not isinstance(mid, str) or mid in seen:
            break
        seen.add(mid)
        kids = children.get(mid, [])
        active = _meta(at).get("activeChildId")
        at = next(
            (k for k in kids if k.get("id") == active),
            next((k for k in kids if id(k) in shown), kids[-1] if kids else None),
        )
    return out


def _is_error(message: dict[str, Any]) -> bool:
    return message.get("role") == "assistant" and bool(
        _meta(message).get("error") or message.get("status") == "error"
    )


def _parts(message: dict[str, Any]) -> list[dict[str, Any]]:
    content = message.get("content")
    if isinstance(content, str):
        return [{"type": "text", "text": {"value": content}}]
    return [p for p in content if isinstance(p, dict)] if isinstance(content, list) else []


def _value(part: dict[str, Any]) -> str:
    """A text part's text (``text.value``; a bare string too)."""
    text = part.get("text")
    if isinstance(text, dict):
        text = text.get("value")
    return text if isinstance(text, str) else ""


class _Reader(Turns):
    """Builds the conversation's messages from Jan's, one message after another."""

    def __init__(self, created: float, model: str | None) -> None:
        super().__init__(created, "jan")
        self.extra: dict[str, Any] = {"imported_from": "Jan"}
        if model:
            self.extra["model_name"] = model
        self.reply_at: MessageRecord | None = None  # the last reply, whose calls a tool message answers

    def user(self, message: dict[str, Any], created: float | None) -> None:
        text, images = "", []
        for part in _parts(message):
            if part.get("type") == "text":
                text += _value(part)
            elif part.get("type") == "image_url":
                url = part.get("image_url")
                picture = data_url_picture(url.get("url") if isinstance(url, dict) else url, self.left)
                if picture is not None:
                    images.append(picture)
        listed = _meta(message).get("inline_file_contents")  # documents Jan sent as text
        files = [
            doc
            for f in (listed[:MAX_FILES] if isinstance(listed, list) else [])
            if isinstance(f, dict) and (doc := attached_text(f.get("name"), f.get("content"))) is not None
        ]
        self.question(text, files, images=images, created=created)  # (Jan adds them to what it sends)
        self.reply_at = None

    def system(self, message: dict[str, Any], created: float | None) -> None:
        text = "".join(_value(p) for p in _parts(message) if p.get("type") == "text")
        if text.strip():
            self.add("system", text, created=created)

    def tool(self, message: dict[str, Any]) -> None:
        """A call's result kept as a message of its own: with the call it answers."""
        text = "".join(_value(p) for p in _parts(message) if p.get("type") == "text")
        self.result(self.reply_at, message.get("tool_call_id"), text)

    def assistant(self, message: dict[str, Any], created: float | None) -> None:
        """One reply: its thinking, its text and its calls in the order Jan kept them (the text
        written after a call's result is a message of its own, as Callisto keeps a turn)."""
        first = len(self.messages)
        reply: MessageRecord | None = None
        for part in _parts(message):
            kind = part.get("type")
            if kind not in ("text", "reasoning", "tool_call") or (
                kind == "tool_call" and not self.named(part.get("tool_name"))
            ):
                continue
            reply = self.reply(reply, self.extra)
            reply.created = created or self.created
            if kind == "text":
                reply.content += _value(part)
            elif kind == "reasoning":
                reply.reasoning = (reply.reasoning or "") + _value(part)
            else:
                self.call(reply, part.get("tool_name"), part.get("tool_call_id"), part.get("input"))
                if part.get("output") is not None:
                    self.result(reply, part.get("tool_call_id"), _output(part.get("output")))
        calls = _meta(message).get("tool_calls")  # (Jan before its calls were parts)
        for old in calls if isinstance(calls, list) else []:
            if not isinstance(old, dict):
                continue
            tool = obj(old.get("tool")) or old
            function = obj(tool.get("function"))
            name = function.get("name", old.get("name"))
            if not self.named(name):
                continue
            reply = self.reply(reply, self.extra)
            call = self.call(reply, name, tool.get("id"), function.get("arguments"))
            response = old.get("response")
            if call is not None and isinstance(response, dict):
                self.result(reply, call.call_id, _output(response))
        if reply is None:
            reply = self.reply(None, self.extra)
            reply.created = created or self.created
        for m in self.messages[first:]:
            think_out(m)
        self.reply_at = next((m for m in reversed(self.messages[first:]) if m.tool_calls), reply)


def _output(value: Any) -> Any:
    """A call's result as Jan kept it (an MCP result, ``{"content": [{"type": "text", "text":
    …}]}``, or text) as the text the model read."""
    if isinstance(value, dict) and isinstance(value.get("content"), list):
        texts = [p.get("text") for p in value["content"] if isinstance(p, dict)]
        if texts and all(isinstance(t, str) for t in texts):
            return "".join(texts)  # type: ignore[arg-type]
        error = value.get("error")
        if isinstance(error, str) and error:
            return error
    return value


def conversation_from_jan(thread: Any, messages: list[Any], *, updated: float | None = None) -> OtherChat:
    """The conversation of a Jan chat: ``thread`` (its ``thread.json``, read; {} when there is
    none) and ``messages`` (each line of its ``messages.jsonl``, read), last changed at
    ``updated``. ValueError when it holds no message."""
    info = thread if isinstance(thread, dict) else {}
    listed = [m for m in messages if isinstance(m, dict)][:MAX_MESSAGES]
    if not listed:
        raise ValueError("the chat holds no messages")
    shown, children = _shown(listed)
    assistants = info.get("assistants")
    first = (
        assistants[0]
        if isinstance(assistants, list) and assistants and isinstance(assistants[0], dict)
        else {}
    )
    model = first.get("model")
    model_id = model.get("id") if isinstance(model, dict) else None
    model_name = " ".join(model_id.split()) if isinstance(model_id, str) and model_id.strip(" *") else None
    times = [t for m in shown if (t := epoch_seconds(m.get("created_at"))) is not None]
    created = min(times) if times else epoch_seconds(info.get("created")) or updated or time.time()
    reader = _Reader(created, model_name)
    errors = 0
    on_branch = {id(m) for m in shown}
    brought = len(shown)  # the messages read, those of the replies' other versions too
    asked: tuple[int, list[list[dict[str, Any]]], int] | None = None  # a regenerated reply's question

    def read(n: int, message: dict[str, Any]) -> None:
        nonlocal errors
        role, at = message.get("role"), epoch_seconds(message.get("created_at"))
        if _is_error(message):
            errors += 1  # (Jan does not send them to the model either)
        elif role == "user":
            reader.user(message, at)
        elif role == "assistant":
            reader.assistant(message, at)
        elif role == "tool":
            reader.tool(message)
        elif role == "system":
            reader.system(message, at)
        else:
            reader.left.append(f"message {n + 1}, whose role is {str(role)[:40]!r}")

    def read_reply(messages: list[dict[str, Any]]) -> None:
        for message in messages:
            if message.get("role") in ("assistant", "tool"):
                read(0, message)

    def keep_versions() -> None:
        """The replies to the question just answered other than the one shown (its regenerations),
        kept as Regenerate keeps them."""
        nonlocal brought
        if asked is not None and reader.other_versions(asked[0], read_reply, asked[1], asked[2]):
            brought += sum(len(v) for n, v in enumerate(asked[1]) if n != asked[2])

    for n, message in enumerate(shown):
        if message.get("role") == "user":
            keep_versions()
            read(n, message)
            mid = message.get("id")
            kids = children.get(mid, []) if isinstance(mid, str) else []
            failed = [
                k for k in kids if _is_error(k) and id(k) not in on_branch and not children.get(k.get("id"))
            ]
            errors += len(failed)  # (said as errors, as one on the branch is)
            brought += len(failed)
            kids = [k for k in kids if not _is_error(k)]
            replies = [_along(children, k, on_branch, until_user=True) for k in kids]
            at = next((i for i, k in enumerate(kids) if id(k) in on_branch), None)
            regenerated = len(kids) > 1 and at is not None and all(k.get("role") == "assistant" for k in kids)
            asked = (len(reader.messages), replies, at) if regenerated and at is not None else None
        else:
            read(n, message)
    keep_versions()
    others = max(0, len(listed) - brought) if children else 0
    if errors:
        reader.left.append(
            f"{errors} repl{'ies' if errors > 1 else 'y'} that {'were errors' if errors > 1 else 'was an error'}"
        )
    if others:
        reader.left.append(f"{others} other version{'s' if others > 1 else ''} of its messages")
    meta = obj(info.get("metadata"))
    prompt = first.get("instructions")
    last = max((m.created for m in reader.messages), default=created)
    return reader.chat(
        info.get("title"),
        "Jan chat",
        max(updated or last, last),
        system_prompt=prompt if isinstance(prompt, str) and prompt.strip() else None,
        pinned=meta.get("is_favorite") is True,
    )


def read_jan_thread(folder: str | os.PathLike[str]) -> OtherChat:
    """The Jan chat in the thread folder ``folder`` (:func:`conversation_from_jan`; last changed
    when its messages were). A line that is not JSON is passed over and said; OSError or
    ValueError say why the chat cannot be read."""
    from app.storage.export import load_export_json, read_import_bytes

    p = Path(folder)
    try:
        thread = load_export_json(read_import_bytes(p / "thread.json"))
    except FileNotFoundError:
        thread = {}  # (the title comes from the first question)
    messages_file = p / "messages.jsonl"
    raw = read_import_bytes(messages_file)
    messages: list[Any] = []
    bad = 0
    for line in raw.splitlines():
        if not line.strip():
            continue
        try:
            messages.append(load_export_json(line))
        except ValueError:
            bad += 1
    chat = conversation_from_jan(thread, messages, updated=messages_file.stat().st_mtime)
    if bad:
        chat.left.append(
            f"{bad} line{'s' if bad > 1 else ''} of its messages that {'are' if bad > 1 else 'is'} not JSON"
        )
    return chat
