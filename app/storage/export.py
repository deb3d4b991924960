"""A stored conversation written out as a file (Qt-free): Markdown to read or share, or JSON that
keeps every stored field (``Conversation.to_dict``: the settings snapshot, each message's calls,
results, statistics and images as base64). :func:`conversation_from_json` reads such a JSON file
back (checking every field: it may come from anywhere) for ``History.restore_conversation``.

The Markdown reads as the window shows the chat: one heading per turn's reply naming the model
that wrote it (:func:`reply_author`, the window's reply heads use it too), its reasoning folded
away, its text, each tool call with its arguments and result, and how the reply ended when it did
not end plainly. The versions of a reply Regenerate kept aside are not written there (the chat
is the one shown); the JSON keeps them (``kept_replies``: each with the index of the user message
it answers), and an import brings them back, to switch between as before.

    from app.storage.export import export_conversation
    export_conversation(history.load_conversation(cid), "chat.md")
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import os
import re
import time
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from app.storage.atomic import atomic_write_text
from app.storage.history import (
    MESSAGE_STATUSES,
    ROLES,
    Conversation,
    KeptReply,
    MessageRecord,
    StoredToolCall,
)

__all__ = [
    "EXPORT_FORMATS",
    "MAX_IMPORT_BYTES",
    "code_fence",
    "conversation_from_json",
    "conversation_json",
    "load_export_json",
    "read_chats",
    "read_chats_of",
    "read_export",
    "read_import_bytes",
    "conversation_markdown",
    "conversations_member",
    "export_conversation",
    "export_file_name",
    "reply_author",
]

#: the formats a conversation is exported in -> the file suffix each takes
EXPORT_FORMATS = {"markdown": ".md", "json": ".json"}
#: the JSON export's ``format`` value (and ``version``: raised when a field changes meaning)
JSON_FORMAT, JSON_VERSION = "callisto.conversation", 1


def reply_author(extra: Mapping[str, Any]) -> tuple[str, str]:
    """(the reply's head, its tooltip): the model that wrote the reply, from what its record keeps
    (``TurnRecorder``: ``model``, the file or remote model; ``model_name``; ``made_model``). A made
    model reads as its own name, over its file's; a reply saved before the name was kept, as its
    file's name; one that names no model (an old record), "Assistant"."""

    def text(key: str) -> str | None:
        v = extra.get(key)
        return (" ".join(v.split()) or None) if isinstance(v, str) else None

    model, name, made = text("model"), text("model_name"), text("made_model")
    if name is None and model is not None:
        base = re.split(r"[\\/]", model)[-1]  # a Windows path read anywhere, too
        name = base[: -len(".gguf")] if base.lower().endswith(".gguf") and len(base) > 5 else base
    where = f"\n{model}" if model is not None and model != name else ""
    if made is not None:
        return made, f"Written by the made model {made}, over {name or 'its file'}{where}"
    if name is not None:
        return name, f"Written by {name}{where}"
    return "Assistant", ""


def code_fence(text: str, info: str = "") -> str:
    """``text`` in a fenced code block whose fence no backtick run in it can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text.rstrip(chr(10))}\n{fence}"


def _one_line(text: str) -> str:
    """A title or name on one Markdown line (no line breaks, no leading heading marks)."""
    return " ".join(text.split()).lstrip("#").strip()


def _when(ts: float) -> str:
    try:
        return time.strftime("%Y-%m-%d %H:%M", time.localtime(ts)) if ts > 0 else "an unknown time"
    except (OverflowError, OSError, ValueError):  # a time no clock can show
        return "an unknown time"


def _size(n: int) -> str:
    return f"{n / 1024:.1f} KB" if n < 1024 * 1024 else f"{n / (1024 * 1024):.1f} MB"


#: how a call's approval reads (``app.calls.ApprovalOutcome``; "auto": nothing was asked)
_APPROVALS = {
    "allowed_once": "allowed once",
    "always": "always allowed",
    "denied": "denied",
    "timeout": "not answered",
}


def _call(tc: StoredToolCall) -> list[str]:
    """A tool call: its name and how it went, its arguments and its result (or error)."""
    facts = []
    if tc.error is not None:
        facts.append("failed")
    elif tc.result is not None:
        facts.append("ok")
    else:
        facts.append("not run")
    if tc.duration_s:
        facts.append(f"{tc.duration_s * 1000:.0f} ms")
    if tc.approval in _APPROVALS:
        facts.append(_APPROVALS[tc.approval])
    args = tc.arguments
    shown = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, indent=2)
    out = [
        f"**Tool call: `{_one_line(tc.name)}`** ({', '.join(facts)})",
        "",
        code_fence(shown or "{}", "json"),
    ]
    if tc.error is not None:
        out += ["", "Error:", "", code_fence(tc.error)]
    elif tc.result is not None:
        out += ["", "Result:", "", code_fence(tc.result)]
    return out


_ENDINGS = {"interrupted": "*(stopped before it ended)*", "streaming": "*(being written when exported)*"}


def _reply(records: Sequence[MessageRecord]) -> list[str]:
    """One turn's reply: its assistant messages (a call's round, then the answer) under one head."""
    assistants = [m for m in records if m.role == "assistant"]
    if not assistants:
        return []
    out = [f"## {_one_line(reply_author(assistants[-1].extra)[0]) or 'Assistant'}", ""]
    for m in assistants:
        for n in m.shown_notices:
            out += [f"> **Note:** {_one_line(n.message or n.code)}", ""]
        if m.reasoning:
            out += ["<details><summary>Thinking</summary>", "", m.reasoning.strip(), "", "</details>", ""]
        if m.content:
            out += [m.content.strip(), ""]
        for inc in m.incomplete_calls:
            why = "it was cut off" if inc.reason == "truncated" else "the tool was not offered"
            out += [f"*(a call to `{_one_line(inc.name or '?')}` was not run: {why})*", ""]
        for tc in m.tool_calls:
            out += [*_call(tc), ""]
    last = assistants[-1]
    if last.status == "error":
        out += [f"*(the reply failed: {_one_line(last.error or 'unknown error')})*", ""]
    elif last.status in _ENDINGS:
        out += [_ENDINGS[last.status], ""]
    elif not any(m.content or m.tool_calls or m.reasoning for m in assistants):
        out += ["*(empty reply)*", ""]
    stats = last.extra.get("stats")
    if isinstance(stats, dict) and stats.get("finish_reason") == "length":
        out += ["*(cut off by the max-tokens limit)*", ""]
    return out


def conversation_markdown(conv: Conversation) -> str:
    """The conversation as Markdown (its messages must be loaded: ``History.load_conversation``)."""
    out = [
        f"# {_one_line(conv.title) or 'Chat'}",
        "",
        f"*Exported from Callisto on {_when(time.time())}; started {_when(conv.created)}.*",
        "",
    ]
    if conv.system_prompt:
        out += ["## System prompt (this chat's own)", "", conv.system_prompt.strip(), ""]
    turn: list[MessageRecord] = []
    for m in conv.messages:
        if m.role in ("assistant", "tool"):
            turn.append(m)
            continue
        out += _reply(turn)
        turn = []
        out += ["## You" if m.role == "user" else f"## {m.role.capitalize()}", ""]
        if m.content:
            out += [m.content.strip(), ""]
        for info in m.image_info:
            out += [f"*(an image: {info.media_type}, {_size(info.n_bytes)})*", ""]
    out += _reply(turn)
    return "\n".join(out).rstrip("\n") + "\n"


def conversation_json(conv: Conversation) -> str:
    """The conversation as JSON: every stored field (``Conversation.to_dict``), with the format's
    name and version first."""
    return json.dumps(
        {"format": JSON_FORMAT, "version": JSON_VERSION, **conv.to_dict()}, ensure_ascii=False, indent=2
    )


_RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{i}" for i in range(10)), *(f"LPT{i}" for i in range(10))}


def export_file_name(conv: Conversation, fmt: str = "markdown") -> str:
    """A file name for the conversation's export: its title, without the characters a file name
    cannot have on any desktop, and the format's suffix."""
    stem = re.sub(r'[\x00-\x1f<>:"/\\|?*]+', " ", conv.title)
    stem = " ".join(stem.split()).strip(" .")[:80].rstrip(" .") or "Chat"
    if stem.split(".")[0].upper() in _RESERVED:  # a name Windows keeps for a device
        stem += " (chat)"
    return stem + EXPORT_FORMATS[fmt]


def export_conversation(conv: Conversation, path: str | os.PathLike[str], fmt: str | None = None) -> Path:
    """Write ``conv`` to ``path`` as ``fmt`` (default: by the path's suffix, ``.json`` for JSON and
    Markdown for any other), replacing the file atomically: a failed write (a full disk, a folder
    that cannot be written) leaves what was there and raises ``OSError`` saying why."""
    target = Path(path)
    if fmt is None:
        fmt = "json" if target.suffix.lower() == ".json" else "markdown"
    if fmt not in EXPORT_FORMATS:
        raise ValueError(f"unknown export format {fmt!r}: one of {', '.join(EXPORT_FORMATS)}")
    if target.is_dir():
        raise IsADirectoryError(f"{target} is a folder: name a file to export to")
    text = conversation_json(conv) if fmt == "json" else conversation_markdown(conv)
    atomic_write_text(target, text)
    return target


# -- reading an export back ---------------------------------------------------------------------

#: the largest export file read back (pictures as base64 make a chat large; this is far beyond one)
MAX_IMPORT_BYTES = 512 * 1024 * 1024


_MOST = float(2**53)  # the largest count or duration an import takes (a JSON number's exact range)
_LAST_TIME = 253402300799.0  # 9999-12-31: a time any clock can show


class _Fields:
    """One JSON object's fields, read with their types checked; errors name where they are."""

    def __init__(self, value: Any, where: str) -> None:
        if not isinstance(value, dict):
            raise ValueError(f"{where} is not a JSON object")
        self.d, self.where = value, where

    def _bad(self, key: str, what: str) -> ValueError:
        return ValueError(f"{self.where}: {key} must be {what}")

    def text(self, key: str, default: str | None = "") -> Any:
        v = self.d.get(key, default)
        if v is None and default is None:
            return None
        if not isinstance(v, str):
            raise self._bad(key, "text")
        return v

    def number(self, key: str, *, whole: bool = False, most: float = _MOST) -> Any:
        v = self.d.get(key)
        if v is None:
            return None
        ok = isinstance(v, int) if whole else isinstance(v, int | float) and math.isfinite(v)
        if not ok or isinstance(v, bool) or not 0 <= v <= most:
            raise self._bad(key, f"a {'whole ' if whole else ''}number from 0 to {most:g}")
        return v

    def obj(self, key: str) -> dict[str, Any] | None:
        v = self.d.get(key)
        if v is not None and not isinstance(v, dict):
            raise self._bad(key, "a JSON object")
        return v

    def items(self, key: str) -> list[Any]:
        v = self.d.get(key)
        if v is None:
            return []
        if not isinstance(v, list):
            raise self._bad(key, "a list")
        return v

    def choice(self, key: str, choices: Sequence[str], default: str) -> str:
        v = self.d.get(key, default)
        if v not in choices:
            raise self._bad(key, f"one of {', '.join(choices)}")
        return str(v)


def _stored_call(value: Any, where: str) -> StoredToolCall:
    f = _Fields(value, where)
    call_id, name = f.text("call_id"), f.text("name")
    if not call_id or not name:
        raise ValueError(f"{where}: a call needs its call_id and name")
    return StoredToolCall(
        id=0,
        message_id=0,
        call_id=call_id,
        name=name,
        arguments=f.d.get("arguments"),
        raw=f.text("raw"),
        result=f.text("result", None),
        error=f.text("error", None),
        duration_s=f.number("duration_s"),
        approval=f.text("approval", None),
        position=0,
    )


def _image(value: Any, where: str) -> bytes:
    if not isinstance(value, str):
        raise ValueError(f"{where} is not base64 text")
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise ValueError(f"{where} is not base64 text") from None


#: what a reply's extra JSON keeps (``TurnRecorder``) -> its type; anything else an imported file
#: holds there is not kept, so nothing reads a field of a shape it does not expect
_EXTRA_SHAPES: dict[str, type] = {
    "model": str,
    "model_name": str,
    "made_model": str,
    "settings": dict,
    "stats": dict,
    "incomplete_calls": list,
    "call_decoding": dict,
    "call_parsers": dict,
}


def _extra(value: dict[str, Any] | None) -> dict[str, Any]:
    out = {k: v for k, v in (value or {}).items() if isinstance(v, _EXTRA_SHAPES.get(k, ()))}
    calls = out.get("incomplete_calls")
    if isinstance(calls, list):
        out["incomplete_calls"] = [c for c in calls if isinstance(c, dict)]
    return out


def _message(value: Any, i: int) -> MessageRecord:
    where = f"message {i + 1}"
    f = _Fields(value, where)
    role = f.choice("role", ROLES, "")
    images = [_image(v, f"{where}: image {n + 1}") for n, v in enumerate(f.items("images"))]
    if images and role != "user":
        raise ValueError(f"{where}: only a user message has images")
    notices = f.items("notices")
    for n, notice in enumerate(notices):
        nf = _Fields(notice, f"{where}: notice {n + 1}")
        if not nf.text("code"):
            raise ValueError(f"{where}: notice {n + 1} needs its code")
        nf.text("message")  # (each checked to be text)
        nf.text("setting", None)
    return MessageRecord(
        id=0,
        conversation_id=0,
        position=i,
        role=role,
        content=f.text("content"),
        reasoning=f.text("reasoning", None),
        status=f.choice("status", MESSAGE_STATUSES, "complete"),
        created=f.number("created", most=_LAST_TIME) or 0.0,
        prompt_tokens=f.number("prompt_tokens", whole=True),
        completion_tokens=f.number("completion_tokens", whole=True),
        tool_call_id=f.text("tool_call_id", None),
        name=f.text("name", None),
        error=f.text("error", None),
        tool_calls=[_stored_call(c, f"{where}: call {n + 1}") for n, c in enumerate(f.items("tool_calls"))],
        notices=notices,
        extra=_extra(f.obj("extra")),
        turn_settings=f.obj("turn_settings"),
        images=images,
    )


def load_export_json(text: str | bytes) -> Any:
    """A file's ``text`` as the JSON an import reads (Callisto's export, LM Studio's chat, Open
    WebUI's export): ValueError for one too large, that is not JSON, or nested too deeply."""
    if len(text) > MAX_IMPORT_BYTES:
        raise ValueError(f"the file is larger than {MAX_IMPORT_BYTES // (1024 * 1024)} MiB")
    try:
        data = json.loads(text)
        json.dumps(data)  # what is stored is written as JSON again: no deeper than that can go
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"the file is not JSON ({exc})") from None
    except RecursionError:
        raise ValueError("the file's JSON is nested too deeply") from None
    return data


def read_import_bytes(path: Path) -> bytes:
    """The bytes of the file an import reads; one too large is refused before it is read."""
    if path.stat().st_size > MAX_IMPORT_BYTES:
        raise ValueError(f"the file is larger than {MAX_IMPORT_BYTES // (1024 * 1024)} MiB")
    return path.read_bytes()


def conversation_from_json(text: str | bytes) -> Conversation:
    """The conversation in a JSON export (:func:`conversation_json`), every field checked: a
    ValueError says what is wrong and where (a file that is no Callisto export, one from a newer
    Callisto, a message whose field has the wrong type, an image that is not base64). An LM Studio
    chat is read as ``app.storage.lmstudio`` reads it (no pictures: no folder to find them)."""
    return _conversation_of(load_export_json(text))


def _other_apps(data: Any, files: Any = None) -> tuple[str, list[Any]] | None:
    """The chats of another app's file (``data``: its JSON): LM Studio's one chat, or each chat of
    an export of Open WebUI, ChatGPT or Claude (its pictures, where the export keeps them apart,
    from ``files``: a folder, or ``chatgpt.pictures_in_zip``), with the app's name; None for
    Callisto's own export and for a file of none of them."""
    from app.storage.chatgpt import conversations_from_chatgpt, is_chatgpt_export
    from app.storage.claude import conversations_from_claude, is_claude_export
    from app.storage.lmstudio import conversation_from_lmstudio, is_lmstudio_chat
    from app.storage.openwebui import conversations_from_openwebui, is_openwebui_export

    if isinstance(data, dict) and data.get("format") == JSON_FORMAT:
        return None
    if is_lmstudio_chat(data):  # a chat file of LM Studio's: read as its import reads it
        return "LM Studio", [conversation_from_lmstudio(data)]
    if is_openwebui_export(data):
        return "Open WebUI", conversations_from_openwebui(data)
    if is_chatgpt_export(data):
        return "ChatGPT", conversations_from_chatgpt(data, files)
    if is_claude_export(data):
        return "Claude", conversations_from_claude(data)
    return None


def _one(app: str, chats: list[Any]) -> Conversation:
    """The one chat of another app's file; ValueError for a file of several."""
    if len(chats) != 1:
        raise ValueError(f"the file holds {len(chats)} chats of {app}: import it with Import chats…")
    return chats[0].conversation  # type: ignore[no-any-return]


def _conversation_of(data: Any) -> Conversation:
    """:func:`conversation_from_json`'s reading of the JSON ``data``."""
    found = _other_apps(data)
    if found is not None:  # (read_chats reads an export of many)
        return _one(*found)
    if not isinstance(data, dict) or data.get("format") != JSON_FORMAT:
        raise ValueError(
            "the file is not a chat exported by Callisto (its format is not callisto.conversation) "
            "nor one of LM Studio's, Open WebUI's, ChatGPT's or Claude's"
        )
    version = data.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError("the file's version is not a whole number")
    if version > JSON_VERSION:
        raise ValueError(
            f"the file was exported by a newer Callisto (format version {version}): update Callisto"
        )
    f = _Fields(data, "the chat")
    messages = [_message(m, i) for i, m in enumerate(f.items("messages"))]
    kept = _kept_replies(f.items("kept_replies"), messages)
    now = time.time()
    created = f.number("created", most=_LAST_TIME) or now
    return Conversation(
        id=0,
        title=" ".join(f.text("title").split()) or "Imported chat",
        created=created,
        updated=max(f.number("updated", most=_LAST_TIME) or created, created),
        model_path=f.text("model_path", None),
        settings=f.obj("settings"),
        message_count=len(messages),
        system_prompt=f.text("system_prompt", None),
        messages=messages,
        kept_replies=kept,
    )


#: the most versions an import keeps of one reply (Regenerate makes one a click)
MAX_KEPT_VERSIONS = 1000


def _kept_replies(values: list[Any], messages: list[MessageRecord]) -> list[KeptReply]:
    """The reply versions an export kept (``Conversation.kept_replies``), checked: each answers
    a user message of the chat, a number once per message, the one in the chat (no messages)
    once, its messages a reply's (no user message, no picture)."""
    out: list[KeptReply] = []
    seen: set[tuple[int, int]] = set()
    shown: set[int] = set()
    for n, value in enumerate(values):
        where = f"kept reply {n + 1}"
        f = _Fields(value, where)
        user = f.number("user_index", whole=True, most=max(len(messages) - 1, 0))
        if user is None or not messages or messages[user].role != "user":
            raise ValueError(f"{where}: user_index must name a user message of the chat")
        number = f.number("number", whole=True, most=MAX_KEPT_VERSIONS)
        if not number or (user, number) in seen:
            raise ValueError(f"{where}: number must be a version number from 1 to {MAX_KEPT_VERSIONS}, once")
        seen.add((user, number))
        raw = f.d.get("messages")
        if raw is None:
            if user in shown:
                raise ValueError(f"{where}: only one version of a reply is the one in the chat")
            shown.add(user)
            records = None
        else:
            records = [_message(m, i) for i, m in enumerate(f.items("messages"))]
            if any(m.role not in ("assistant", "tool") for m in records):
                raise ValueError(f"{where}: a reply's messages are the assistant's and its tools'")
        out.append(KeptReply(user, number, f.number("created", most=_LAST_TIME) or 0.0, records))
    return out


def read_export(path: str | os.PathLike[str]) -> Conversation:
    """The one conversation in the export file at ``path`` (:func:`read_chats`); ValueError for
    an export of several chats (Open WebUI's, ChatGPT's, Claude's)."""
    chats = read_chats(path)
    if len(chats) != 1:
        raise ValueError(f"the file holds {len(chats)} chats: import it with Import chats…")
    return chats[0]


def read_chats(path: str | os.PathLike[str]) -> list[Conversation]:
    """Every conversation in the file at ``path`` (:func:`read_chats_of`)."""
    return read_chats_of(path)[1]


def read_chats_of(path: str | os.PathLike[str]) -> tuple[str | None, list[Conversation]]:
    """The app that wrote the file at ``path`` (None: Callisto) and every conversation in it,
    read once: a Callisto export
    (:func:`conversation_from_json`), an LM Studio chat (``read_lmstudio_chat``: with its pictures
    and its time), a Jan chat (its ``messages.jsonl`` or ``thread.json``: ``read_jan_thread``), an
    export of Open WebUI, ChatGPT or Claude (each of its chats; ChatGPT's pictures from the files
    beside it), or the zip ChatGPT's or Claude's export came in. A file too large is refused
    before it is read. OSError or ValueError say why it cannot be read."""
    p = Path(path)
    if p.name.endswith(".conversation.json"):  # LM Studio's
        from app.storage.lmstudio import read_lmstudio_chat

        return "LM Studio", [read_lmstudio_chat(p).conversation]
    if p.name in ("messages.jsonl", "thread.json") and p.parent.parent.name == "threads":  # Jan's
        from app.storage.jan import read_jan_thread

        return "Jan", [read_jan_thread(p.parent).conversation]
    if zipfile.is_zipfile(p):
        return _read_zip(p)
    data = load_export_json(read_import_bytes(p))
    found = _other_apps(data, p.parent)
    if found is None:
        return None, [_conversation_of(data)]
    return found[0], [c.conversation for c in found[1]]


def conversations_member(archive: zipfile.ZipFile) -> zipfile.ZipInfo | None:
    """The ``conversations.json`` of the zip ChatGPT's or Claude's data export came in (the one
    nearest its top), or None when it holds none."""
    found = [m for m in archive.infolist() if PurePosixPath(m.filename).name == "conversations.json"]
    return min(found, key=lambda m: (m.filename.count("/"), m.filename)) if found else None


def _read_zip(path: Path) -> tuple[str, list[Conversation]]:
    """The chats of an export still in the zip it came in (ChatGPT's, Claude's): its
    ``conversations.json`` (the one nearest the top), bounded as any import file, and ChatGPT's
    pictures read from the zip."""
    from app.storage.chatgpt import pictures_in_zip

    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, ValueError) as exc:
        raise ValueError(f"the zip cannot be read ({exc})") from None
    with archive:
        member = conversations_member(archive)
        if member is None:
            raise ValueError(
                "the zip holds no conversations.json (the chats of ChatGPT's or Claude's export)"
            )
        if member.file_size > MAX_IMPORT_BYTES:
            raise ValueError(f"its conversations.json is larger than {MAX_IMPORT_BYTES // (1024 * 1024)} MiB")
        try:
            with archive.open(member) as f:
                text = f.read(MAX_IMPORT_BYTES + 1)
        except (zipfile.BadZipFile, NotImplementedError, RuntimeError) as exc:  # (bad data, encrypted)
            raise ValueError(f"its conversations.json cannot be read ({exc})") from None
        data = load_export_json(text)
        folder = member.filename[: -len("conversations.json")]
        chats = _other_apps(data, pictures_in_zip(archive, folder))
        if chats is None or chats[0] not in ("ChatGPT", "Claude"):
            raise ValueError("the zip's conversations.json is not ChatGPT's or Claude's")
        return chats[0], [c.conversation for c in chats[1]]
