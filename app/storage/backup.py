"""Every conversation at once (Qt-free): written out as the JSON export Import reads back, one file a
conversation in a new folder (File -> *Export all chats…*, ``history export all FOLDER``), many
export files read back in one go (File -> *Import chats…* with several files chosen), and every
chat LM Studio keeps brought in (File -> *Import from LM Studio…*, ``history import --lmstudio``).

    from app.storage.backup import export_all
    done = export_all(History(), Path.home() / "Backups")   # done.folder, done.files
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from app.storage.export import export_conversation, export_file_name, read_chats
from app.storage.history import Conversation, ConversationNotFound, History, HistoryError

__all__ = [
    "ExportedAll",
    "ImportedChats",
    "backup_folder_name",
    "export_all",
    "import_lmstudio",
    "read_exports",
]


@dataclass(frozen=True)
class ExportedAll:
    """What :func:`export_all` wrote: the folder it made and its files, one a conversation."""

    folder: Path
    files: list[Path]


def backup_folder_name(now: float | None = None) -> str:
    """The name of the folder an export of every chat goes in: "Callisto chats 2026-12-05 0712"."""
    return time.strftime("Callisto chats %Y-%m-%d %H%M", time.localtime(now))


def _new_folder(parent: Path, name: str) -> Path:
    """``parent / name``, made now; "name (2)", "name (3)"… where one of that name is there."""
    n = 1
    while True:
        folder = parent / (name if n == 1 else f"{name} ({n})")
        try:
            folder.mkdir()
        except FileExistsError:
            n += 1
            continue
        return folder


def export_all(
    history: History,
    parent: str | os.PathLike[str],
    *,
    ids: Sequence[int] | None = None,
    now: float | None = None,
) -> ExportedAll:
    """Write every conversation of ``history`` (or those of ``ids``) as JSON (every stored detail;
    what Import reads back), each in a file named after its title ("Trip.json", "Trip (2).json"…),
    in a new folder in ``parent`` (:func:`backup_folder_name`): nothing there is replaced. A conversation deleted
    meanwhile is passed over. OSError when ``parent`` is no folder, or when a file cannot be
    written (a full disk): the files written before it are kept, and the error says how many."""
    where = Path(parent)
    if not where.is_dir():
        raise NotADirectoryError(f"{where} is not a folder")
    folder = _new_folder(where, backup_folder_name(now))
    listed = history.list_conversations()
    if ids is not None:
        chosen = set(ids)
        listed = [c for c in listed if c.id in chosen]
    used: set[str] = set()
    files: list[Path] = []
    for entry in listed:
        try:
            conv = history.load_conversation(entry.id)
        except ConversationNotFound:
            continue
        name = export_file_name(conv, "json")
        stem, k = name.removesuffix(".json"), 2
        while name.casefold() in used:
            name, k = f"{stem} ({k}).json", k + 1
        used.add(name.casefold())
        try:
            files.append(export_conversation(conv, folder / name, "json"))
        except OSError as exc:
            why = getattr(exc.__cause__, "strerror", None) or exc.strerror or str(exc)  # (the OS's words)
            raise OSError(
                f"{len(files)} of {len(listed)} chats written to {folder}; “{name}” could not be: {why}"
            ) from exc
    return ExportedAll(folder, files)


def read_exports(paths: Iterable[str | os.PathLike[str]]) -> list[tuple[Path, Conversation | str]]:
    """Each export file of ``paths`` read and checked (``read_chats``): its conversations (one, or
    each of an Open WebUI export's), or why it cannot be read (a file that is no export, from a
    newer Callisto, unreadable). One bad file does not stop the others."""
    read: list[tuple[Path, Conversation | str]] = []
    for p in map(Path, paths):
        try:
            read += [(p, conv) for conv in read_chats(p)]
        except (OSError, ValueError) as exc:
            read.append((p, (exc.strerror if isinstance(exc, OSError) else None) or str(exc)))
    return read


@dataclass(frozen=True)
class ImportedChats:
    """What :func:`import_lmstudio` did: the conversations it made, how many were there already
    (imported before), the files it could not read (with why), and what of the chats it brought
    it could not (each "“title”: what")."""

    imported: list[Conversation]
    already: int
    failed: list[tuple[Path, str]]
    left: list[str]


def import_lmstudio(history: History, home: str | os.PathLike[str]) -> ImportedChats:
    """Bring every chat of LM Studio's folder ``home`` (``lmstudio.lmstudio_home``) into
    ``history``, each in its folder of LM Studio's list and pinned as it was there. A chat brought
    before (the same moment it was made) is not brought again; a file that cannot be read is said
    and stops none of the others; a picture larger than the history keeps is left out, and said.
    LM Studio's files are only read."""
    from app.storage.lmstudio import lmstudio_chat_files, read_lmstudio_chat

    have = {round(c.created * 1000) for c in history.list_conversations()}
    imported: list[Conversation] = []
    failed: list[tuple[Path, str]] = []
    left: list[str] = []
    already = 0
    for path, folder in lmstudio_chat_files(Path(home) / "conversations"):
        try:
            chat = read_lmstudio_chat(path, folder=folder)
        except (OSError, ValueError) as exc:
            failed.append((path, (exc.strerror if isinstance(exc, OSError) else None) or str(exc)))
            continue
        conv, notes = chat.conversation, list(chat.left)
        key = round(conv.created * 1000)
        if key in have:
            already += 1
            continue
        for m in conv.messages:
            kept = [i for i in m.images if len(i) <= history.max_image_bytes]
            if len(kept) < len(m.images):
                notes.append(f"{len(m.images) - len(kept)} picture(s) larger than the history keeps")
                m.images = kept
        try:
            new = history.restore_conversation(conv, place=True)
        except (HistoryError, ValueError) as exc:
            failed.append((path, str(exc)))
            continue
        have.add(key)
        imported.append(new)
        left += [f"“{new.title}”: {note}" for note in notes]
    return ImportedChats(imported, already, failed, left)
