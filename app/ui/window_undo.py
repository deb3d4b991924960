"""Deleted chats (a part of the main window): a deleted chat goes to the trash
(``History.trash_conversation``), kept across restarts for ``TRASH_DAYS`` days. The chats just
deleted can be put back as they were with the status bar's *Undo* button or Ctrl+Z (⌘Z) in the
list, for :data:`UNDO_MS` after the deletion (or until the next one); any of them, later, from
File -> *Recently deleted…* (:class:`~app.ui.trash_dialog.TrashDialog`). They come back with
their ids, so nothing else needs to know they were gone."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QPushButton

from app.ui.labels import chats_said
from app.ui.window_part import WindowKit, WindowPart

if TYPE_CHECKING:
    from app.storage.history import TrashedChat
    from app.ui.trash_dialog import TrashDialog
    from app.ui.window_conversations import ConversationsController

__all__ = ["UNDO_MS", "UndoDelete"]

UNDO_MS = 30_000  # how long the Undo button stays after a deletion


class UndoDelete(WindowPart):
    """Keeps the last deletion (one chat or several) and puts it back on *Undo*; shows the trash."""

    def __init__(self, kit: WindowKit, *, conversations: ConversationsController) -> None:
        super().__init__(kit)
        self.conversations = conversations
        self.deleted: list[TrashedChat] = []  # the last deletion's chats, in the order deleted
        self.trash_dialog: TrashDialog | None = None  # File -> Recently deleted…, once opened
        self.button = QPushButton("Undo")
        self.button.setObjectName("undoDelete")
        self.button.setToolTip("Put the chats just deleted back as they were")
        self.button.clicked.connect(self.undo)
        conversations.list.list.sig_undo_key.connect(self.undo)  # Ctrl+Z (⌘Z) in the list
        self.button.hide()
        self.window.statusBar().addPermanentWidget(self.button)
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(UNDO_MS)
        self.timer.timeout.connect(self.forget)

    def deleted_now(self, gone: list[TrashedChat]) -> None:
        """``gone`` were just deleted: said in the status bar, with Undo beside it."""
        if not gone:
            return
        self.deleted = list(gone)
        self.window.statusBar().showMessage(f"Deleted {chats_said([g.title for g in gone])}.", UNDO_MS)
        self.button.show()
        self.timer.start()
        self._refresh_trash()

    def forget(self) -> None:
        self.deleted = []
        self.button.hide()
        self.timer.stop()

    def undo(self) -> int:
        """Put the last deletion's chats back; how many came back (a failure is said)."""
        gone = list(self.deleted)
        self.forget()
        bar = self.window.statusBar()
        if not gone:
            bar.showMessage("Nothing to undo: no chat was deleted just now.", 8000)
            return 0
        return self._restore(list(reversed(gone)))

    def _restore(self, chats: list[TrashedChat]) -> int:
        """Put ``chats`` back from the trash; how many came back (a failure is said, the others
        go on). The list and the trash are shown again once."""
        back: list[str] = []
        bar = self.window.statusBar()
        for one in chats:
            try:
                self.state.history.restore_trashed(one.id)
            except Exception as exc:  # noqa: BLE001 - HistoryError, sqlite errors: said, the others go on
                bar.showMessage(f"Could not bring back “{one.title}”: {exc}", 12000)
                continue
            back.append(one.title)
        self.conversations.refresh_conversations()
        self._refresh_trash()
        if back and len(back) == len(chats):  # (a failure was said instead)
            bar.showMessage(f"Brought back {chats_said(back)}.", 8000)
        return len(back)

    # -- File -> Recently deleted… -------------------------------------------------------------

    def show_trash(self) -> TrashDialog:
        """Open *Recently deleted* (or bring it forward), listing the trash as it is now."""
        if self.trash_dialog is None:
            from app.ui.trash_dialog import TrashDialog

            self.trash_dialog = TrashDialog(self.window)
            self.trash_dialog.sig_put_back.connect(self.put_back)
            self.trash_dialog.sig_forget.connect(self.forget_for_good)
        self._refresh_trash(force=True)
        self.trash_dialog.show()
        self.trash_dialog.raise_()
        self.trash_dialog.activateWindow()
        return self.trash_dialog

    def trashed_count(self) -> int:
        """How many chats are in Recently deleted (0 when the history cannot say)."""
        try:
            return self.state.history.trash_count()
        except Exception:  # noqa: BLE001 - sqlite errors (a broken file): the list says so elsewhere
            return 0

    def _trashed(self) -> list[TrashedChat] | None:
        try:
            return self.state.history.trashed()
        except Exception as exc:  # noqa: BLE001 - sqlite errors (a locked or broken file): said
            self.window.statusBar().showMessage(f"Could not read Recently deleted: {exc}", 12000)
            return None

    def _refresh_trash(self, *, force: bool = False) -> None:
        dlg = self.trash_dialog
        if dlg is not None and (force or dlg.isVisible()):
            chats = self._trashed()
            if chats is not None:
                dlg.set_chats(chats)

    def put_back(self, trash_ids: list[int]) -> int:
        """*Put back* in Recently deleted: those chats back in the list; how many came back."""
        chats = [c for c in self._trashed() or [] if c.id in trash_ids]
        if any(c.id in trash_ids for c in self.deleted):
            self.forget()  # (what Undo would bring back is back, or chosen to be)
        return self._restore(chats)

    def forget_for_good(self, trash_ids: list[int] | None) -> None:
        """*Delete for good* / *Empty* in Recently deleted (``None``: every chat there)."""
        bar = self.window.statusBar()
        try:
            n = self.state.history.forget_trashed(trash_ids)
        except Exception as exc:  # noqa: BLE001 - sqlite errors: said, nothing else changes
            bar.showMessage(f"Could not delete for good: {exc}", 12000)
            return
        if trash_ids is None or any(c.id in trash_ids for c in self.deleted):
            self.forget()  # Undo cannot bring back what is gone for good
        self._refresh_trash()
        self.conversations.refresh_conversations()  # (an empty list's offer counts them)
        bar.showMessage(f"Deleted {n} chat{'s' if n != 1 else ''} for good.", 8000)
