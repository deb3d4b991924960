"""Every conversation at once (Qt-free): written out as the JSON export Import reads back, one file a
conversation in a new folder (File -> *Export all chats…*, ``history export all FOLDER``), many
export files read back in one go (File -> *Import chats…* with several files chosen), and every
chat LM Studio or Jan keeps brought in (File -> *Import from LM Studio…* / *Import from Jan…*,
``history import --lmstudio`` / ``--jan``).

    from app.storage.backup import export_all
    done = export_all(History(), Path.home() / "Backups")   # done.folder, done.files
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from app.storage.export import export_conversation, export_file_name, read_chats_of
from app.storage.history import Conversation, ConversationNotFound, History, HistoryError
from app.storage.jan import jan_data_folder, jan_thread_folders, read_jan_thread
from app.storage.lmstudio import lmstudio_chat_files, lmstudio_home, read_lmstudio_chat

__all__ = [
    "BroughtBefore",
    "CHAT_APPS",
    "ChatApp",
    "ExportedAll",
    "ImportedChats",
    "backup_folder_name",
    "export_all",
    "import_jan",
    "import_lmstudio",
    "offered_chats",
    "read_exports",
    "read_exports_of",
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
            conv = history.load_conversation(entry.id, kept=True)
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
    return [(p, conv) for p, _app, conv in read_exports_of(paths)]


def read_exports_of(
    paths: Iterable[str | os.PathLike[str]],
) -> list[tuple[Path, str | None, Conversation | str]]:
    """:func:`read_exports`, each chat with the app whose file it is (None: Callisto's)."""
    read: list[tuple[Path, str | None, Conversation | str]] = []
    for p in map(Path, paths):
        try:
            app, chats = read_chats_of(p)
        except (OSError, ValueError) as exc:
            read.append((p, None, (exc.strerror if isinstance(exc, OSError) else None) or str(exc)))
            continue
        read += [(p, app, conv) for conv in chats]
    return read


def _made_at(conv: Conversation) -> int:
    """What tells another app's chat brought before: the moment it was made, to the millisecond."""
    return round(conv.created * 1000)


class BroughtBefore:
    """Stores the chats read from export files, passing over those of other apps' exports
    (ChatGPT's, Claude's, Open WebUI's: each export holds every chat again) that are here already,
    so that importing a newer export brings only what is new: a chat made at the same moment that
    has not changed there since it came (its last change no later than the one here). A chat
    continued in the other app comes again; Callisto's own exports always come in (a second copy
    is asked for). :attr:`already` counts those passed over."""

    def __init__(self, history: History) -> None:
        self.history = history
        self.already = 0
        self.here: dict[int, float] = {}
        for c in history.list_conversations():
            self._add(c)

    def _add(self, conv: Conversation) -> None:
        key = _made_at(conv)
        self.here[key] = max(self.here.get(key, conv.updated), conv.updated)

    def bring(self, conv: Conversation, app: str | None) -> Conversation | None:
        """Store ``conv``, read from a file of ``app`` (None: Callisto's), as a new conversation
        (``History.restore_conversation``, whose errors it raises); None when it is another app's
        chat that is here already."""
        here = self.here.get(_made_at(conv)) if app is not None else None
        if here is not None and conv.updated <= here + 0.001:
            self.already += 1
            return None
        new = self.history.restore_conversation(conv)
        self._add(new)
        return new


@dataclass(frozen=True)
class ImportedChats:
    """What :func:`import_lmstudio` or :func:`import_jan` did: the conversations it made, how many
    were there already (imported before), the files it could not read (with why), and what of the
    chats it brought it could not (each "“title”: what")."""

    imported: list[Conversation]
    already: int
    failed: list[tuple[Path, str]]
    left: list[str]


def import_lmstudio(history: History, home: str | os.PathLike[str]) -> ImportedChats:
    """Bring every chat of LM Studio's folder ``home`` (``lmstudio.lmstudio_home``) into
    ``history``, each in its folder of LM Studio's list and pinned as it was there
    (:func:`_bring`). LM Studio's files are only read."""
    files = lmstudio_chat_files(Path(home) / "conversations")
    return _bring(
        history, [(path, partial(read_lmstudio_chat, path, folder=folder)) for path, folder in files]
    )


def import_jan(history: History, data: str | os.PathLike[str]) -> ImportedChats:
    """Bring every chat of Jan's data folder ``data`` (``jan.jan_data_folder``) into ``history``,
    each pinned when it was a favourite there (:func:`_bring`). Jan's files are only read."""
    return _bring(
        history, [(folder, partial(read_jan_thread, folder)) for folder in jan_thread_folders(data)]
    )


def _bring(history: History, chats: Sequence[tuple[Path, Callable[[], Any]]]) -> ImportedChats:
    """Store each chat another app keeps (``chats``: where it is, and how it is read: a chat with
    its ``conversation`` and what was ``left``). A chat brought before (the same moment it was
    made) is not brought again; one that cannot be read is said and stops none of the others; a
    picture larger than the history keeps is left out, and said."""
    have = {_made_at(c) for c in history.list_conversations()}
    imported: list[Conversation] = []
    failed: list[tuple[Path, str]] = []
    left: list[str] = []
    already = 0
    for path, read in chats:
        try:
            chat = read()
        except (OSError, ValueError) as exc:
            failed.append((path, (exc.strerror if isinstance(exc, OSError) else None) or str(exc)))
            continue
        conv, notes = chat.conversation, list(chat.left)
        key = _made_at(conv)
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


@dataclass(frozen=True)
class ChatApp:
    """Another chat app whose chats come in whole (its own folder, not an export): its ``name``,
    the ``key`` its menu entry and ``history import --<key>`` use, the folder in its own that holds
    the chats (``holds``), and how its folder is found (``find``), its chats counted (``count``)
    and brought (``bring``)."""

    key: str
    name: str
    holds: str
    find: Callable[[], Path | None]
    count: Callable[[Path], int]
    bring: Callable[[History, Path], ImportedChats]

    def folder(self, chosen: str | os.PathLike[str] | None = None) -> Path | None:
        """The app's folder: ``chosen`` (its ``holds`` folder chosen is taken for the app's),
        else the one :attr:`find` finds; None when it holds no chats folder."""
        where = Path(chosen).expanduser() if chosen is not None else self.find()
        if where is not None and where.name == self.holds:
            where = where.parent
        return where if where is not None and (where / self.holds).is_dir() else None


CHAT_APPS = {
    "lmstudio": ChatApp(
        "lmstudio",
        "LM Studio",
        "conversations",
        lmstudio_home,
        lambda home: len(lmstudio_chat_files(home / "conversations")),
        import_lmstudio,
    ),
    "jan": ChatApp(
        "jan", "Jan", "threads", jan_data_folder, lambda data: len(jan_thread_folders(data)), import_jan
    ),
}


def offered_chats() -> list[tuple[ChatApp, int]]:
    """The other apps that keep chats on this machine, each with how many (only their folders'
    listings are read): what an empty list offers to bring."""
    found: list[tuple[ChatApp, int]] = []
    for app in CHAT_APPS.values():
        try:
            where = app.folder()
            n = app.count(where) if where is not None else 0
        except OSError:
            continue
        if n:
            found.append((app, n))
    return found
