"""Chats written to files and read back (a part of the main window): one chat exported as
Markdown or JSON, or copied as Markdown; every chat exported at once to a new folder (File ->
*Export all chats…*); exported chats imported as new conversations, one file or many (File ->
*Import chats…*, or dropped on the window: other apps' exports too); every chat LM Studio or Jan
keeps (File -> *Import from LM Studio…* / *Import from Jan…*, or the empty list's offer). The files
are written and read off the UI thread by ``app.storage.export`` and ``app.storage.backup``; the
history is written only through ``History.restore_conversation``."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.ui.labels import chats_said
from app.ui.window_part import WindowKit, WindowPart

if TYPE_CHECKING:
    from collections.abc import Sequence

    from app.ui.window_conversations import ConversationsController

__all__ = ["ExportController"]


class ExportController(WindowPart):
    """Export, copy and import; each says in the status bar what it did, or why it could not."""

    def __init__(self, kit: WindowKit, *, conversations: ConversationsController) -> None:
        super().__init__(kit)
        self.conversations = conversations
        conversations.list.sig_export.connect(self.export_conversation)
        conversations.list.sig_copy.connect(self.copy_markdown)
        conversations.list.sig_export_many.connect(lambda ids: self.export_all(ids=ids))
        conversations.list.sig_copy_many.connect(lambda ids: self.copy_markdown(ids=ids))
        self.export_dialog: Any = None  # the open export or import file dialog, if any
        self.export_dir: str | None = None  # where the last export went (the next dialog opens there)

    def export_conversation(self, cid: int | None = None, path: str | None = None) -> bool:
        """Export conversation ``cid`` (default: the open one) to ``path`` (Markdown, or JSON for a
        ``.json`` name; ``app.storage.export``), written off the UI thread; without ``path`` a file
        dialog asks where. The status bar says where it went, or why it could not be written.
        False when there is nothing to export."""
        cid = self.state.conversation_id if cid is None else cid
        if cid is None:
            self.window.statusBar().showMessage("Nothing to export yet: this chat has no messages.", 8000)
            return False
        try:
            conv = self.state.history.load_conversation(cid, kept=True)  # (JSON keeps its versions)
        except Exception as exc:  # noqa: BLE001 - HistoryError and sqlite errors: said in the status bar
            self.window.statusBar().showMessage(f"Could not export the conversation: {exc}", 8000)
            return False
        if path is None:
            self._ask_where(conv)
            return True
        from app.storage.export import export_conversation

        def done(where: object) -> None:
            self.export_dir = str(Path(str(where)).parent)
            self.window.statusBar().showMessage(f"Exported “{conv.title}” to {where}", 8000)

        def failed(why: str) -> None:
            self.window.statusBar().showMessage(f"Could not export “{conv.title}”: {why}", 12000)

        return self.tasks.run(lambda: export_conversation(conv, path), done, failed)

    def copy_markdown(self, cid: int | None = None, *, ids: list[int] | None = None) -> bool:
        """Put conversation ``cid`` (default: the open one), or those of ``ids`` (several chosen
        in the list, one after the other), on the clipboard as the Markdown Export writes (to
        paste it in an issue, a note, a mail); the status bar says so. False when there is nothing
        to copy."""
        bar = self.window.statusBar()
        cid = self.state.conversation_id if cid is None else cid
        chosen = ids if ids is not None else [cid] if cid is not None else []
        try:
            convs = [self.state.history.load_conversation(c) for c in chosen]
        except Exception as exc:  # noqa: BLE001 - HistoryError and sqlite errors: said in the status bar
            bar.showMessage(f"Could not copy the conversation: {exc}", 8000)
            return False
        if not convs:
            bar.showMessage("Nothing to copy yet: this chat has no messages.", 8000)
            return False
        from PySide6.QtGui import QGuiApplication

        from app.storage.export import conversation_markdown

        QGuiApplication.clipboard().setText("\n\n---\n\n".join(conversation_markdown(c) for c in convs))
        bar.showMessage(f"Copied {chats_said([c.title for c in convs])} as Markdown", 8000)
        return True

    def _ask_where(self, conv: Any) -> None:
        """The file dialog (window-modal, not blocking): Markdown or JSON, named after the chat."""
        from PySide6.QtWidgets import QFileDialog

        from app.storage.export import EXPORT_FORMATS, export_file_name

        filters = {"Markdown (*.md)": "markdown", "JSON, every stored detail (*.json)": "json"}
        folder = self.export_dir or str(Path.home())
        dlg = QFileDialog(self.window, "Export chat", str(Path(folder) / export_file_name(conv)))
        dlg.setObjectName("exportChatDialog")
        dlg.setAcceptMode(QFileDialog.AcceptMode.AcceptSave)
        dlg.setNameFilters(list(filters))
        dlg.setDefaultSuffix("md")
        dlg.filterSelected.connect(lambda f: dlg.setDefaultSuffix(EXPORT_FORMATS[filters[f]].lstrip(".")))

        def chosen(path: str) -> None:
            self.export_conversation(conv.id, path)

        dlg.fileSelected.connect(chosen)
        self.export_dialog = dlg
        dlg.open()

    def export_all(self, folder: str | None = None, *, ids: list[int] | None = None) -> bool:
        """Every chat (or those of ``ids``: several chosen in the list) as JSON, what Import reads
        back, in a new folder made in ``folder`` (``app.storage.backup.export_all``), written off
        the UI thread; without ``folder`` a folder dialog asks where. The status bar says where
        they went, or how far it got."""
        if folder is None:
            from PySide6.QtWidgets import QFileDialog

            what = "all chats" if ids is None else f"{len(ids)} chats"
            dlg = QFileDialog(
                self.window, f"Export {what} to a new folder in…", self.export_dir or str(Path.home())
            )
            dlg.setObjectName("exportAllDialog")
            dlg.setFileMode(QFileDialog.FileMode.Directory)
            dlg.setOption(QFileDialog.Option.ShowDirsOnly, True)
            dlg.fileSelected.connect(lambda chosen: self.export_all(chosen, ids=ids))
            self.export_dialog = dlg
            dlg.open()
            return True
        from app.storage.backup import export_all

        bar = self.window.statusBar()

        def done(result: Any) -> None:
            self.export_dir = folder
            n = len(result.files)
            bar.showMessage(f"Exported {n} chat{'' if n == 1 else 's'} to {result.folder}", 12000)

        bar.showMessage("Exporting every chat…" if ids is None else f"Exporting {len(ids)} chats…", 8000)
        return self.tasks.run(
            lambda: export_all(self.state.history, folder, ids=ids),
            done,
            lambda why: bar.showMessage(f"Could not export the chats: {why}", 15000),
        )

    def import_conversation(self, path: str | None = None) -> bool:
        """Import a chat exported as JSON as a new conversation and open it; without ``path`` a
        file dialog asks which (one file or many: :meth:`import_conversations`)."""
        if path is not None:
            return self.import_conversations([path])
        from PySide6.QtWidgets import QFileDialog

        dlg = QFileDialog(self.window, "Import chats", self.export_dir or str(Path.home()))
        dlg.setObjectName("importChatDialog")
        dlg.setFileMode(QFileDialog.FileMode.ExistingFiles)
        dlg.setNameFilters(
            [
                "Chats: Callisto's, LM Studio's, Jan's, or an export of Open WebUI, ChatGPT, Claude "
                "(*.json *.jsonl *.zip)",
                "All files (*)",
            ]
        )
        dlg.filesSelected.connect(lambda chosen: self.import_conversations(list(chosen)))
        self.export_dialog = dlg
        dlg.open()
        return True

    def import_conversations(self, paths: Sequence[str]) -> bool:
        """Each file of ``paths`` (``app.storage.backup.read_exports``) read, checked and stored
        as new conversations off the UI thread (an export of thousands of chats, ChatGPT's, does
        not stop the window); the last one that came in is opened. The status bar says what came
        in and what did not, and why (a file that is no export is passed over)."""
        from app.storage.backup import BroughtBefore, read_exports_of

        bar, history = self.window.statusBar(), self.state.history

        def store() -> tuple[list[tuple[str, Any, int]], list[tuple[str, str]], int]:
            came: list[tuple[str, Any, int]] = []
            refused: list[tuple[str, str]] = []
            before = BroughtBefore(history)  # (a newer export of ChatGPT's brings only what is new)
            for path, app, conv in read_exports_of(paths):
                if isinstance(conv, str):
                    refused.append((path.name, conv))
                    continue
                try:
                    new = before.bring(conv, app)
                except Exception as exc:  # noqa: BLE001 - HistoryError, a picture too large, sqlite errors
                    refused.append((path.name, str(exc)))
                    continue
                if new is not None:
                    came.append((path.name, new, len(conv.messages)))
            return came, refused, before.already

        def stored(result: tuple[list[tuple[str, Any, int]], list[tuple[str, str]], int]) -> None:
            came, refused, already = result
            if came:
                self.conversations.open_new(came[-1][1].id)
            bar.showMessage(_imported(came, refused, already), 12000 if refused else 8000)

        if len(paths) > 0:
            bar.showMessage(f"Importing {'1 file' if len(paths) == 1 else f'{len(paths)} files'}…")
        return self.tasks.run(store, stored, lambda why: bar.showMessage(f"Could not import: {why}", 12000))

    def import_lmstudio(self, home: str | None = None) -> bool:
        """File -> *Import from LM Studio…*: :meth:`import_app` for LM Studio (``home``: its folder)."""
        return self.import_app("lmstudio", home)

    def import_jan(self, data: str | None = None) -> bool:
        """File -> *Import from Jan…*: :meth:`import_app` for Jan (``data``: its data folder)."""
        return self.import_app("jan", data)

    def import_app(self, key: str, where: str | None = None) -> bool:
        """Every chat of another app (``key`` of ``backup.CHAT_APPS``) from its folder ``where``
        (default: its own, found as the app finds it; not found, the person is asked where it
        is), off the UI thread; one brought before is not brought again. The status bar says what
        came and what did not."""
        from app.storage.backup import CHAT_APPS

        app = CHAT_APPS[key]
        folder = app.folder(where)
        if folder is None:
            return self._ask_folder(app, where)
        history, bar = self.state.history, self.window.statusBar()
        bar.showMessage(f"Importing {app.name}'s chats from {folder}…")

        def done(result: Any) -> None:
            self.conversations.refresh_conversations()
            bar.showMessage(_from_app(result, app.name), 12000 if result.failed or result.left else 8000)

        return self.tasks.run(
            lambda: app.bring(history, folder),
            done,
            lambda why: bar.showMessage(f"Could not import {app.name}'s chats: {why}", 12000),
        )

    def _ask_folder(self, app: Any, tried: str | None) -> bool:
        """The app's folder was not found (or has no chats): the person says where it is."""
        from PySide6.QtWidgets import QFileDialog

        bar = self.window.statusBar()
        if tried is not None:
            bar.showMessage(
                f"{tried} holds no {app.name} chats: choose the folder {app.name} keeps them in.", 12000
            )
        else:
            bar.showMessage(
                f"{app.name}'s folder was not found: choose the folder it keeps its chats in.", 12000
            )
        dlg = QFileDialog(self.window, f"Where {app.name} keeps its chats", str(Path.home()))
        dlg.setObjectName(f"{app.key}FolderDialog")
        dlg.setFileMode(QFileDialog.FileMode.Directory)
        dlg.setOption(QFileDialog.Option.ShowDirsOnly, True)
        dlg.fileSelected.connect(lambda chosen: chosen and self.import_app(app.key, chosen))
        self.export_dialog = dlg
        dlg.open()
        return False


def _imported(came: list[tuple[str, Any, int]], refused: list[tuple[str, str]], already: int = 0) -> str:
    """What the status bar says after an import: one file's chat, or how many came in (and how
    many of another app's were here already) and the first that did not, with why."""
    if already and not came and not refused:
        return f"Nothing new: {'the chat was' if already == 1 else f'all {already} chats were'} here already."
    if len(came) + len(refused) == 1 and not already:
        if came:
            name, new, n = came[0]
            return f"Imported “{new.title}” from {name} ({n} message{'' if n == 1 else 's'})"
        return f"Could not import {refused[0][0]}: {refused[0][1]}"
    said = f"Imported {len(came)} chat{'' if len(came) == 1 else 's'}"
    if already:
        said += f" ({already} {'was' if already == 1 else 'were'} here already)"
    if refused:
        name, why = refused[0]
        more = f" (and {len(refused) - 1} more)" if len(refused) > 1 else ""
        not_in = f"could not import {name}{more}: {why}"
        said = f"{said}; {not_in}" if came else not_in[0].upper() + not_in[1:]
    return said


def _from_app(done: Any, name: str) -> str:
    """What the status bar says after another app's chats were brought (``backup.ImportedChats``)."""
    n = len(done.imported)
    said = f"Imported {n} chat{'' if n == 1 else 's'} from {name}"
    if done.already:
        said += f" ({done.already} {'was' if done.already == 1 else 'were'} here already)"
    if done.failed:
        path, why = done.failed[0]
        more = f" (and {len(done.failed) - 1} more)" if len(done.failed) > 1 else ""
        said += f"; could not import {path.name}{more}: {why}"
    if done.left:
        more = f" (and {len(done.left) - 1} more)" if len(done.left) > 1 else ""
        said += f"; not brought: {done.left[0]}{more}"
    return said + "."
