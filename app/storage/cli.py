"""The history's command line: list the conversations the window (and ``chat --save``) keep, export
one, import one.

    python -m app history [--search TEXT] [--json]
    python -m app history export ID|last FILE [--format markdown|json]
    python -m app history import FILE [--json]
    python -m app history delete ID...           # to Recently deleted, kept there TRASH_DAYS days
    python -m app history deleted [--json] [--empty]
    python -m app history restore ID...          # put back from Recently deleted, as it was

Export and import are the window's (``app.storage.export``): Markdown to read, JSON with every
stored field, which import brings back as a new conversation. Exit status: 0 done, 1 the
conversation is not there or the file cannot be written or read, 2 a usage error. A deleted
conversation keeps its id in Recently deleted (the window's File menu), and comes back with it.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from typing import Any

from app.terminal import terminal_text

__all__ = ["EXIT_ERROR", "EXIT_OK", "EXIT_USAGE", "add_history_parser", "run_history_command"]

EXIT_OK, EXIT_ERROR, EXIT_USAGE = 0, 1, 2


def add_history_parser(sub: Any) -> argparse.ArgumentParser:
    from app.storage.export import EXPORT_FORMATS

    p = sub.add_parser("history", help="list, export and import the conversations the window keeps")
    p.add_argument("--search", default=None, help="only the conversations whose messages hold these words")
    p.add_argument("--json", action="store_true", help="JSON: one object a conversation (a list)")
    actions = p.add_subparsers(dest="history_command")
    export = actions.add_parser("export", help="write a conversation as Markdown or JSON")
    export.add_argument(
        "id", help="the conversation's id (from the list), 'last': the latest, or 'all': every one"
    )
    export.add_argument(
        "file",
        help="the file to write (.json: JSON, any other name: Markdown); with 'all', the folder in "
        "which a new folder gets every conversation as JSON",
    )
    export.add_argument("--format", choices=list(EXPORT_FORMATS), default=None, help="(default: by the name)")
    imp = actions.add_parser(
        "import",
        help="bring back conversations exported as JSON (or other apps' chats and exports), each as a new one",
    )
    imp.add_argument(
        "file",
        nargs="*",
        help="export files (Callisto's, LM Studio's .conversation.json, Jan's messages.jsonl, the chat export of Open WebUI, ChatGPT or Claude, or the zip of ChatGPT's or Claude's; one that is none of these is passed over)",
    )
    for key, what in (
        ("lmstudio", "every chat LM Studio keeps, in its folders (default: LM Studio's own folder"),
        ("jan", "every chat Jan keeps (default: Jan's data folder"),
    ):
        imp.add_argument(
            f"--{key}",
            nargs="?",
            const="",
            default=None,
            metavar="FOLDER",
            help=f"{what}, found as the app finds it); a chat brought before is not brought again",
        )
    imp.add_argument("--json", action="store_true", help="print each new conversation as JSON, one a line")
    delete = actions.add_parser(
        "delete", help="move conversations to Recently deleted (kept there 30 days, as in the window)"
    )
    delete.add_argument("ids", nargs="+", metavar="ID", help="the conversations' ids (from the list)")
    deleted = actions.add_parser("deleted", help="list the conversations in Recently deleted")
    deleted.add_argument("--json", action="store_true", help="JSON: one object a conversation (a list)")
    deleted.add_argument("--empty", action="store_true", help="delete every one of them for good")
    restore = actions.add_parser("restore", help="put conversations back from Recently deleted, as they were")
    restore.add_argument("ids", nargs="+", metavar="ID", help="their ids (from 'history deleted')")
    return p


def _err(text: str) -> None:
    print(terminal_text(text), file=sys.stderr)


def _row(conv: Any) -> dict[str, Any]:
    return {
        "id": conv.id,
        "title": conv.title,
        "created": conv.created,
        "updated": conv.updated,
        "messages": conv.message_count,
        "model_path": conv.model_path,
        "system_prompt": conv.system_prompt,
        "pinned": conv.pinned,
        "folder": conv.folder,
    }


def _list(history: Any, args: argparse.Namespace) -> int:
    convs = history.search(args.search) if args.search else history.list_conversations()
    if args.json:
        print(json.dumps([_row(c) for c in convs], ensure_ascii=False))
        return EXIT_OK
    if not convs:
        print("No conversations match." if args.search else "No conversations yet.")
        return EXIT_OK
    for c in convs:
        print(_line(c.id, c.updated, c.message_count, c.folder, c.title, mark="pinned  " if c.pinned else ""))
    return EXIT_OK


def _line(
    cid: int, at: float, messages: int, folder: str | None, title: str, *, when: str = "", mark: str = ""
) -> str:
    """A conversation's line in a list: its id, ``when`` and a time, its message count, ``mark``,
    its folder and its title, each safe for a terminal."""
    when += time.strftime("%Y-%m-%d %H:%M", time.localtime(at))
    shown = f"[{terminal_text(folder)}] " if folder else ""
    return f"{cid:>6}  {when}  {messages:>4} msg  {mark}{shown}{terminal_text(' '.join(title.split()) or '(untitled)')}"


def _export(history: Any, args: argparse.Namespace) -> int:
    from app.storage.export import export_conversation
    from app.storage.history import ConversationNotFound

    if args.id == "all":
        return _export_all(history, args)
    if args.id == "last":
        latest = history.list_conversations(limit=1)
        if not latest:
            _err("error: there is no conversation to export yet")
            return EXIT_ERROR
        cid = latest[0].id
    else:
        try:
            cid = int(args.id)
        except ValueError:
            _err(f"error: {args.id!r} is not a conversation id (a number from the list, or 'last')")
            return EXIT_USAGE
    try:
        conv = history.load_conversation(cid, kept=True)
    except ConversationNotFound:
        _err(f"error: there is no conversation {cid} (python -m app history lists them)")
        return EXIT_ERROR
    try:
        path = export_conversation(conv, args.file, args.format)
    except (OSError, ValueError) as exc:
        _err(f"error: cannot write {args.file}: {exc}")
        return EXIT_ERROR
    print(terminal_text(f"Exported {conv.id} “{conv.title}” to {path}"))
    return EXIT_OK


def _export_all(history: Any, args: argparse.Namespace) -> int:
    from app.storage.backup import export_all

    if args.format not in (None, "json"):
        _err("error: 'all' is exported as JSON (what import reads back); leave --format out")
        return EXIT_USAGE
    try:
        done = export_all(history, args.file)
    except OSError as exc:
        _err(f"error: cannot export every conversation: {exc}")
        return EXIT_ERROR
    n = len(done.files)
    print(terminal_text(f"Exported {n} conversation{'' if n == 1 else 's'} to {done.folder}"))
    return EXIT_OK


def _import(history: Any, args: argparse.Namespace) -> int:
    """Each file as a new conversation; one that cannot be is said and the others still come in
    (exit status 1 when any could not)."""
    from app.storage.backup import BroughtBefore
    from app.storage.export import read_chats_of
    from app.storage.history import HistoryError
    from app.storage.settings import load_settings

    history.max_image_bytes = load_settings()[0].images.max_bytes  # the window's bound
    apps = [(key, chosen) for key in ("lmstudio", "jan") if (chosen := getattr(args, key)) is not None]
    if not args.file and not apps:
        _err("error: name the files to import, or --lmstudio / --jan for LM Studio's or Jan's chats")
        return EXIT_USAGE
    status = EXIT_OK
    for key, chosen in apps:
        status = max(status, _import_app(history, key, chosen, as_json=args.json))
    before = BroughtBefore(history)
    for file in args.file:
        try:
            app, chats = read_chats_of(file)  # (an Open WebUI export holds many)
        except (OSError, ValueError) as exc:
            _err(f"error: cannot import {file}: {exc}")
            status = EXIT_ERROR
            continue
        was = before.already
        for conv in chats:
            try:
                new = before.bring(conv, app)  # (None: another app's chat imported before)
            except (ValueError, HistoryError) as exc:
                _err(f"error: cannot import “{conv.title}” from {file}: {exc}")
                status = EXIT_ERROR
                continue
            if new is not None:
                _print_imported(new, as_json=args.json)
        already = before.already - was
        if already:
            _err(f"note: {_chats(already)} of {file} {'was' if already == 1 else 'were'} here already")
    return status


def _print_imported(new: Any, *, as_json: bool) -> None:
    """A conversation just imported: one JSON object a line, or a line that says it."""
    if as_json:
        print(json.dumps(_row(new), ensure_ascii=False))
    else:
        print(
            terminal_text(f"Imported “{new.title}” as conversation {new.id} ({new.message_count} messages)")
        )


def _chats(n: int) -> str:
    """ "1 chat", "2 chats"."""
    return f"{n} chat{'' if n == 1 else 's'}"


def _import_app(history: Any, key: str, chosen: str, *, as_json: bool) -> int:
    """``--lmstudio [FOLDER]`` or ``--jan [FOLDER]``: every chat of the app's folder (``chosen``,
    else its own); what could not be is said."""
    from app.storage.backup import CHAT_APPS

    app = CHAT_APPS[key]
    folder = app.folder(chosen or None)
    if folder is None:
        where = f"{chosen} has no {app.holds} folder" if chosen else f"{app.name}'s folder was not found"
        _err(f"error: {where}: name the folder {app.name} keeps its chats in (--{key} FOLDER)")
        return EXIT_ERROR
    done = app.bring(history, folder)
    for new in done.imported:
        _print_imported(new, as_json=as_json)
    for note in done.left:
        _err(f"note: not brought from {note}")
    for path, why in done.failed:
        _err(f"error: cannot import {path}: {why}")
    if not as_json:
        print(
            terminal_text(
                f"{_chats(len(done.imported))} imported from {app.name} ({folder})"
                + (
                    f"; {done.already} {'was' if done.already == 1 else 'were'} here already"
                    if done.already
                    else ""
                )
            )
        )
    return EXIT_ERROR if done.failed else EXIT_OK


def _ids(args: argparse.Namespace) -> list[int] | None:
    try:
        return [int(i) for i in args.ids]
    except ValueError:
        _err("error: name conversations by their ids (numbers, from the list)")
        return None


def _delete(history: Any, args: argparse.Namespace) -> int:
    from app.storage.history import TRASH_DAYS, ConversationNotFound

    ids = _ids(args)
    if ids is None:
        return EXIT_USAGE
    status = EXIT_OK
    for cid in ids:
        try:
            gone = history.trash_conversation(cid)
        except ConversationNotFound:
            _err(f"error: there is no conversation {cid} (python -m app history lists them)")
            status = EXIT_ERROR
            continue
        print(
            terminal_text(
                f"Deleted {cid} “{gone.title}”: in Recently deleted for {TRASH_DAYS} days "
                f"(python -m app history restore {cid})"
            )
        )
    return status


def _deleted(history: Any, args: argparse.Namespace) -> int:
    if args.empty:
        n = history.forget_trashed()
        print(f"Deleted {_chats(n)} for good.")
        return EXIT_OK
    trashed = history.trashed()
    if args.json:
        rows = [
            {
                "id": t.conversation_id,
                "title": t.title,
                "folder": t.folder,
                "messages": t.messages,
                "deleted": t.deleted_at,
            }
            for t in trashed
        ]
        print(json.dumps(rows, ensure_ascii=False))
        return EXIT_OK
    if not trashed:
        print("Recently deleted is empty.")
    for t in trashed:
        print(_line(t.conversation_id, t.deleted_at, t.messages, t.folder, t.title, when="deleted "))
    return EXIT_OK


def _restore(history: Any, args: argparse.Namespace) -> int:
    from app.storage.history import HistoryError

    ids = _ids(args)
    if ids is None:
        return EXIT_USAGE
    by_conversation = {t.conversation_id: t for t in history.trashed()}
    status = EXIT_OK
    for cid in ids:
        entry = by_conversation.get(cid)
        if entry is None:
            _err(
                f"error: conversation {cid} is not in Recently deleted (python -m app history deleted lists them)"
            )
            status = EXIT_ERROR
            continue
        try:
            history.restore_trashed(entry.id)
        except HistoryError as exc:
            _err(f"error: cannot put back {cid} “{entry.title}”: {exc}")
            status = EXIT_ERROR
            continue
        print(terminal_text(f"Put back {cid} “{entry.title}”"))
    return status


_COMMANDS = {
    "export": _export,
    "import": _import,
    "delete": _delete,
    "deleted": _deleted,
    "restore": _restore,
}


def run_history_command(args: argparse.Namespace) -> int:
    """``python -m app history ...`` on the history the window keeps (``CALLISTO_HOME``)."""
    from app.storage.history import History, HistoryError

    try:
        history = History()
    except (HistoryError, OSError) as exc:
        _err(f"error: cannot open the conversation history: {exc}")
        return EXIT_ERROR
    try:
        return _COMMANDS.get(args.history_command, _list)(history, args)
    finally:
        history.close()
