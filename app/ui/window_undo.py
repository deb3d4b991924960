"""Undo after deleting chats (a part of the main window): the chats just deleted can be put back
as they were, with the status bar's *Undo* button or Ctrl+Z (⌘Z) in the list, for
:data:`UNDO_MS` after the deletion (or until the next one). The rows come back through ``History.undelete_conversation``, with their
ids, so nothing else needs to know they were gone."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QPushButton

from app.ui.labels import chats_said
from app.ui.window_part import WindowKit, WindowPart

if TYPE_CHECKING:
    from app.storage.history import DeletedConversation
    from app.ui.window_conversations import ConversationsController

__all__ = ["UNDO_MS", "UndoDelete"]

UNDO_MS = 30_000  # how long the Undo button stays after a deletion


class UndoDelete(WindowPart):
    """Keeps the last deletion (one chat or several) and puts it back on *Undo*."""

    def __init__(self, kit: WindowKit, *, conversations: ConversationsController) -> None:
        super().__init__(kit)
        self.conversations = conversations
        self.deleted: list[DeletedConversation] = []  # the last deletion's chats, in the order deleted
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

    def deleted_now(self, gone: list[DeletedConversation]) -> None:
        """``gone`` were just deleted: said in the status bar, with Undo beside it."""
        if not gone:
            return
        self.deleted = list(gone)
        self.window.statusBar().showMessage(f"Deleted {chats_said([g.title for g in gone])}.", UNDO_MS)
        self.button.show()
        self.timer.start()

    def forget(self) -> None:
        self.deleted = []
        self.button.hide()
        self.timer.stop()

    def undo(self) -> int:
        """Put the last deletion's chats back; how many came back (a failure is said)."""
        gone, back = list(self.deleted), 0
        self.forget()
        bar = self.window.statusBar()
        if not gone:
            bar.showMessage("Nothing to undo: no chat was deleted just now.", 8000)
            return 0
        for one in reversed(gone):
            try:
                self.state.history.undelete_conversation(one)
            except Exception as exc:  # noqa: BLE001 - HistoryError, sqlite errors: said, the others go on
                bar.showMessage(f"Could not bring back “{one.title}”: {exc}", 12000)
                continue
            back += 1
        self.conversations.refresh_conversations()
        if back == len(gone):  # (a failure was said instead)
            bar.showMessage(f"Brought back {chats_said([g.title for g in gone])}.", 8000)
        return back
