"""What LM Studio keeps on this machine (Qt-free), so a person who switches brings it: its chats,
read as Callisto conversations (File -> *Import from LM Studio…*, ``history import --lmstudio``),
and its models folder, listed in place (the Models page's *Use LM Studio's models*).

LM Studio keeps each chat as ``<its folder>/conversations/[<a folder of its list>/]<ms>.conversation.json``:
a ``name``, ``createdAt`` (milliseconds), a ``systemPrompt``, and ``messages``, each a list of
``versions`` (an edit or a regeneration) with the one shown at ``currentlySelected``. A user's is
``singleStep`` (``content``: text parts, and files it keeps under ``user-files``); an assistant's
is ``multiStep``, whose ``contentBlock`` steps hold the text, the thinking (``style.type`` is
``"thinking"``), the tool calls the model made (``toolCallRequest``) and their results
(``toolCallResult``); its other steps (status lines, debug information) are the window's.

Read here: every chat's shown versions, as the person last saw the chat: the text, the thinking,
each call with its arguments and result, the files attached when LM Studio still has them (a
picture as a picture, a text file's text in the message as Callisto attaches one), who wrote
each reply, the chat's system prompt, its pin and its folder; a reply's other versions (its
regenerations) are kept as Regenerate keeps them, to switch to. What is not brought is said
(:attr:`OtherChat.left`): a question's other versions (its edits), a file that is gone or is
neither a picture nor text (a PDF: LM Studio read it for the model, the chat keeps no text).
Every field is checked: a file may come from anywhere, and a value of the wrong type is passed
over or refused with where it is, never trusted."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

from app.storage._others import (
    MAX_PICTURE_BYTES,
    OtherChat,
    Turns,
    epoch_seconds,
    is_picture,
    text_of,
    think_out,
)
from app.storage.attached_files import MAX_FILE_BYTES, MAX_FILES, AttachedFile, read_text_file
from app.storage.history import MAX_FOLDER_NAME, MessageRecord

__all__ = [
    "conversation_from_lmstudio",
    "is_lmstudio_chat",
    "lmstudio_chat_files",
    "lmstudio_home",
    "lmstudio_models_folder",
    "read_lmstudio_chat",
]

CHAT_SUFFIX = ".conversation.json"


def lmstudio_home(home: str | os.PathLike[str] | None = None) -> Path | None:
    """LM Studio's own folder, where its ``conversations`` are: the one ``~/.lmstudio-home-pointer``
    names (LM Studio moved elsewhere), else ``~/.lmstudio``, else the older ``~/.cache/lm-studio``;
    None when none of them holds a ``conversations`` folder."""
    return next((p for p in _homes(home) if (p / "conversations").is_dir()), None)


def _homes(home: str | os.PathLike[str] | None) -> list[Path]:
    """Where LM Studio's folder may be, in the order LM Studio looks (``home``: the user's)."""
    base = Path(home) if home is not None else Path.home()
    places: list[Path] = []
    try:
        pointed = (base / ".lmstudio-home-pointer").read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        pointed = ""
    if pointed:
        places.append(Path(pointed).expanduser())
    return [*places, base / ".lmstudio", base / ".cache" / "lm-studio"]


def lmstudio_models_folder(home: str | os.PathLike[str] | None = None) -> Path | None:
    """The folder LM Studio downloads its models to: the one its settings name
    (``downloadsFolder`` in ``settings.json``), else its ``models`` folder; None when there is
    none (LM Studio is not on this machine)."""
    for place in _homes(home):
        if not place.is_dir():
            continue
        try:
            chosen = json.loads((place / "settings.json").read_text(encoding="utf-8")).get("downloadsFolder")
        except (OSError, UnicodeDecodeError, ValueError, AttributeError):
            chosen = None
        for folder in ([Path(chosen).expanduser()] if isinstance(chosen, str) and chosen.strip() else []) + [
            place / "models"
        ]:
            if folder.is_dir():
                return folder
    return None


def lmstudio_chat_files(conversations: str | os.PathLike[str]) -> list[tuple[Path, str | None]]:
    """Every chat file under LM Studio's ``conversations`` folder, each with the folder of LM
    Studio's list it is in (a folder there; None at the top), oldest name first (LM Studio names
    them by when they were made)."""
    root = Path(conversations)
    found: list[tuple[Path, str | None]] = []
    for path in sorted(root.rglob(f"*{CHAT_SUFFIX}")):
        if not path.is_file():
            continue
        parts = path.relative_to(root).parts[:-1]
        name = " ".join(parts[0].split())[:MAX_FOLDER_NAME] if parts else ""
        found.append((path, name or None))
    return found


def is_lmstudio_chat(data: Any) -> bool:
    """Whether ``data`` (a JSON document) has the shape of an LM Studio chat: messages made of
    versions."""
    if not isinstance(data, dict) or not isinstance(data.get("messages"), list):
        return False
    messages = data["messages"]
    return all(isinstance(m, dict) and isinstance(m.get("versions"), list) for m in messages) and (
        bool(messages) or "createdAt" in data
    )


def _versions(entry: Any) -> tuple[list[dict[str, Any]], int]:
    """A message's versions and the index of the one the chat shows (``currentlySelected``; the
    first when that is not one of them); no versions for an entry that is no message."""
    if not isinstance(entry, dict) or not isinstance(entry.get("versions"), list):
        return [], 0
    versions = [v for v in entry["versions"] if isinstance(v, dict)]
    at = entry.get("currentlySelected")
    ok = isinstance(at, int) and not isinstance(at, bool) and 0 <= at < len(versions)
    return versions, at if ok else 0  # type: ignore[return-value]


class _Reader(Turns):
    """Builds the conversation's messages from LM Studio's, one message after another."""

    def __init__(self, created: float, files: Path | None) -> None:
        super().__init__(created, "lmstudio")
        self.files = files

    def attachment(self, part: dict[str, Any]) -> bytes | AttachedFile | None:
        """A file attached to a user's message, when LM Studio still has it: a picture's bytes, or
        a text file (its text, put in the message as Callisto attaches one); what is not brought
        (a file gone, too large, neither a picture nor text: a PDF) is said."""
        name = part.get("fileIdentifier") or part.get("identifier") or part.get("name")
        shown = part.get("name") if isinstance(part.get("name"), str) else name
        if not isinstance(name, str) or not name or Path(name).name != name or self.files is None:
            self.left.append(f"an attached file ({shown or 'no name'}) is not where LM Studio keeps files")
            return None
        path = self.files / name
        try:
            size = path.stat().st_size
            with path.open("rb") as f:
                head = f.read(16)
            if is_picture(head):
                if size > MAX_PICTURE_BYTES:
                    self.left.append(f"the attached picture {shown} is too large")
                    return None
                return path.read_bytes()
            doc = read_text_file(path)
        except OSError:
            self.left.append(f"the attached file {shown} is gone")
            return None
        except ValueError:  # (too large for a message, or a PDF, a document: not text)
            why = "is too large for a message" if size > MAX_FILE_BYTES else "is neither a picture nor text"
            self.left.append(f"the attached file {shown} {why}")
            return None
        return AttachedFile(" ".join(str(shown).split()) or doc.name, doc.text, doc.size)

    def user(self, version: dict[str, Any]) -> None:
        parts = version.get("content")
        images: list[bytes] = []
        files: list[AttachedFile] = []
        for part in parts if isinstance(parts, list) else []:
            if isinstance(part, dict) and part.get("type") in ("file", "image"):
                found = self.attachment(part)
                if isinstance(found, bytes):
                    images.append(found)
                elif found is not None:
                    files.append(found)
        self.question(text_of(parts), files[:MAX_FILES], images=images)

    def system(self, version: dict[str, Any]) -> None:
        text = text_of(version.get("content"))
        if text.strip():
            self.add("system", text)

    def assistant(self, version: dict[str, Any]) -> None:
        """One reply: a message for its text and calls, one a result, and one for what it wrote
        after them, as Callisto keeps a turn."""
        sender = version.get("senderInfo")
        name = sender.get("senderName") if isinstance(sender, dict) else None
        extra = {"model_name": " ".join(name.split())} if isinstance(name, str) and name.strip() else {}
        extra["imported_from"] = "LM Studio"
        reply: MessageRecord | None = None  # the assistant's message being read
        first = len(self.messages)
        steps = version.get("steps")
        if not isinstance(steps, list):  # (a reply kept as one step)
            steps = [{"type": "contentBlock", "content": version.get("content")}]
        for step in steps:
            if not isinstance(step, dict) or step.get("type") != "contentBlock":
                continue  # status lines, debug information: the window's
            style = step.get("style")
            thinking = isinstance(style, dict) and style.get("type") == "thinking"
            content = step.get("content")
            for part in content if isinstance(content, list) else []:
                kind = part.get("type") if isinstance(part, dict) else None
                if kind == "toolCallResult":
                    given = part.get("toolCallId") or part.get("callId") or part.get("id")
                    self.result(reply, given, part.get("content", part.get("result")))
                    continue
                if kind not in ("text", "toolCallRequest"):
                    continue
                reply = self.reply(reply, extra)
                if kind == "toolCallRequest":
                    inner = part.get("toolCallRequest")
                    req = inner if isinstance(inner, dict) else part
                    given = req.get("id") or req.get("callId") or req.get("toolCallId")
                    self.call(reply, req.get("name"), given, req.get("arguments", req.get("parameters")))
                elif isinstance(part.get("text"), str):
                    if thinking:
                        reply.reasoning = (reply.reasoning or "") + part["text"]
                    else:
                        reply.content += part["text"]
        if reply is None:
            self.add("assistant", extra=dict(extra))
        for m in self.messages[first:]:
            think_out(m)


def conversation_from_lmstudio(
    data: Any,
    *,
    folder: str | None = None,
    updated: float | None = None,
    files: str | os.PathLike[str] | None = None,
) -> OtherChat:
    """The conversation of an LM Studio chat (``data``: its JSON, read), in ``folder`` (LM Studio's
    folder of its list), last changed at ``updated`` (default: when it was made), its pictures read
    from ``files`` (LM Studio's ``user-files`` folder). ValueError for JSON that is no LM Studio
    chat."""
    if not is_lmstudio_chat(data):
        raise ValueError("the file is not an LM Studio chat (no messages made of versions)")
    now = time.time()
    created = epoch_seconds(data.get("createdAt")) or updated or now
    reader = _Reader(created, Path(files) if files is not None else None)
    for n, entry in enumerate(data["messages"]):
        versions, shown = _versions(entry)
        if not versions:
            reader.left.append(f"message {n + 1}, which has no version")
            continue
        version = versions[shown]
        role = version.get("role")
        if role == "user":
            reader.user(version)
            if len(versions) > 1:  # (its edits: the replies to them are this one's versions, if any)
                edits = len(versions) - 1
                reader.left.append(f"{edits} other version{'s' if edits > 1 else ''} of a question")
        elif role == "assistant":
            first = len(reader.messages)
            reader.assistant(version)
            others = len(versions) - 1
            if others and not reader.other_versions(first, reader.assistant, versions, shown):
                reader.left.append(f"{others} other version{'s' if others > 1 else ''} of a reply")
        elif role == "system":
            reader.system(version)
        else:
            reader.left.append(f"message {n + 1}, whose role is {str(role)[:40]!r}")
    prompt = data.get("systemPrompt")
    return reader.chat(
        data.get("name"),
        "LM Studio chat",
        updated,
        system_prompt=prompt if isinstance(prompt, str) and prompt.strip() else None,
        pinned=data.get("pinned") is True,
        folder=folder,
    )


def read_lmstudio_chat(path: str | os.PathLike[str], *, folder: str | None = None) -> OtherChat:
    """The LM Studio chat in the file ``path`` (:func:`conversation_from_lmstudio`; last changed
    when the file was, its pictures from the ``user-files`` folder beside ``conversations``).
    OSError or ValueError say why it cannot be read."""
    from app.storage.export import load_export_json, read_import_bytes

    p = Path(path)
    data = load_export_json(read_import_bytes(p))  # (the bound, the errors of any import)
    return conversation_from_lmstudio(data, folder=folder, updated=p.stat().st_mtime, files=_user_files(p))


def _user_files(chat: Path) -> Path | None:
    """LM Studio's ``user-files`` folder for the chat file ``chat``: beside the ``conversations``
    folder it is in."""
    for parent in chat.resolve().parents:
        if parent.name == "conversations":
            return parent.parent / "user-files"
    return None
