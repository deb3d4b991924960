"""Text files attached to a message (Qt-free): read and checked (UTF-8 or UTF-16 text, no larger
than :data:`MAX_FILE_BYTES`), and put in the message the model reads as a labelled, fenced block
after what the person typed, so history, export, Regenerate and the APIs see the message whole.
A chat exported by Callisto or another app, or the zip of ChatGPT's or Claude's export
(:func:`is_chat_export`), is imported, not attached."""

from __future__ import annotations

import os
import zipfile
from dataclasses import dataclass
from pathlib import Path

from app.storage.export import code_fence, conversations_member
from app.units import format_bytes

__all__ = [
    "MAX_FILE_BYTES",
    "MAX_FILES",
    "AttachedFile",
    "is_chat_export",
    "message_with_files",
    "read_text_file",
]

#: the largest text file a message takes (a model's context holds far less: what does not fit is
#: refused by the context policy, with its reason, when the message is sent)
MAX_FILE_BYTES = 1 << 20
MAX_FILES = 10

#: the fence's language hint, by the file's suffix (others: none)
_LANGUAGES = {
    ".py": "python", ".js": "javascript", ".mjs": "javascript", ".ts": "typescript", ".tsx": "tsx",
    ".jsx": "jsx", ".json": "json", ".md": "markdown", ".rs": "rust", ".go": "go", ".java": "java",
    ".kt": "kotlin", ".c": "c", ".h": "c", ".cpp": "cpp", ".cc": "cpp", ".hpp": "cpp", ".cs": "csharp",
    ".rb": "ruby", ".php": "php", ".swift": "swift", ".sh": "bash", ".ps1": "powershell",
    ".sql": "sql", ".html": "html", ".css": "css", ".xml": "xml", ".yaml": "yaml", ".yml": "yaml",
    ".toml": "toml", ".ini": "ini", ".csv": "csv", ".tex": "latex", ".r": "r", ".lua": "lua",
}  # fmt: skip


@dataclass(frozen=True)
class AttachedFile:
    """A text file attached to the message being written: its name and its text."""

    name: str
    text: str
    size: int  # bytes on disk

    @property
    def label(self) -> str:
        return f"{self.name} · {format_bytes(self.size)}"


def _decode(data: bytes) -> str | None:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):  # UTF-16 with its byte-order mark
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError:
            return None
    if b"\x00" in data:  # a binary file
        return None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError:
        return None


def read_text_file(path: str | os.PathLike[str]) -> AttachedFile:
    """The text file at ``path``; ValueError (or OSError) says why it cannot be attached: too
    large, not text (a binary file, or text in another encoding than UTF-8 or UTF-16)."""
    p = Path(path)
    size = p.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ValueError(
            f"{p.name} is {format_bytes(size)}: a message takes text files up to {format_bytes(MAX_FILE_BYTES)}"
        )
    with open(p, "rb") as f:
        data = f.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:  # (it grew meanwhile)
        raise ValueError(f"{p.name} is larger than {format_bytes(MAX_FILE_BYTES)}")
    text = _decode(data)
    if text is None:
        raise ValueError(f"{p.name} is not a text file (or not UTF-8 text)")
    return AttachedFile(p.name, text.replace("\r\n", "\n").replace("\r", "\n"), len(data))


#: what begins another app's chat file (a JSON file dropped is imported when it is one, else
#: attached): LM Studio's names itself; ChatGPT's and Claude's ``conversations.json`` and Open
#: WebUI's export are told by fields no other JSON has in its first chat
_HEAD_BYTES = 64 * 1024
_OTHER_APPS_FIELDS = (
    (b'"mapping"', b'"current_node"'),
    (b'"chat_messages"', b'"sender"'),
    (b'"currentId"', b'"childrenIds"'),
)


def is_chat_export(path: str | os.PathLike[str]) -> bool:
    """``path`` is a chat exported as JSON by Callisto (its start names the format), a chat file
    of LM Studio's (``*.conversation.json``), the export of ChatGPT, Claude or Open WebUI (its first
    chat's fields), or the zip of ChatGPT's or Claude's data export (it holds a
    ``conversations.json``)."""
    p = Path(path)
    if p.suffix.lower() == ".zip":
        try:
            with zipfile.ZipFile(p) as z:
                return conversations_member(z) is not None
        except (OSError, zipfile.BadZipFile, ValueError):
            return False
    if p.suffix.lower() != ".json":
        return False
    try:
        with open(p, "rb") as f:
            head = f.read(_HEAD_BYTES)
    except OSError:
        return False
    if b'"callisto.conversation"' in head[:4096] or p.name.lower().endswith(".conversation.json"):
        return True
    return any(all(field in head for field in fields) for fields in _OTHER_APPS_FIELDS)


def message_with_files(text: str, files: list[AttachedFile]) -> str:
    """The message the model reads: ``text``, then each file as ``File `name`:`` over its text in
    a fenced block (a fence its text cannot close)."""
    parts = [text.strip()] if text.strip() else []
    for f in files:
        name = " ".join(f.name.split()).replace("`", "'")
        parts.append(
            f"File `{name}`:\n\n" + code_fence(f.text, _LANGUAGES.get(Path(f.name).suffix.lower(), ""))
        )
    return "\n\n".join(parts)
