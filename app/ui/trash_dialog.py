"""*Recently deleted* (File menu): the chats deleted in the last ``TRASH_DAYS`` days, the last
deleted first, each with its folder, its message count and when it was deleted; *Put back*
(or a double-click) brings the chosen ones back as they were, *Delete for good…* and *Empty…*
forget them after asking. A view: the window does the work (``sig_put_back``, ``sig_forget``)
and calls :meth:`TrashDialog.set_chats` after."""

from __future__ import annotations

import time
from datetime import date, datetime, timedelta
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QDialog,
    QDialogButtonBox,
    QHeaderView,
    QLabel,
    QMessageBox,
    QPushButton,
    QTreeWidget,
    QTreeWidgetItem,
    QVBoxLayout,
    QWidget,
)

from app.storage.history import TRASH_DAYS

if TYPE_CHECKING:
    from app.storage.history import TrashedChat

__all__ = ["TrashDialog", "deleted_when"]

_ID = Qt.ItemDataRole.UserRole


def deleted_when(timestamp: float, now: float | None = None) -> str:
    """When a chat was deleted, as a list says it: "Today, 14:03", "Yesterday, 09:12", the
    weekday in the last week ("Mon, 18:40"), else the date ("30 Nov", "30 Nov 2025")."""
    at = datetime.fromtimestamp(timestamp)
    today = datetime.fromtimestamp(time.time() if now is None else now).date()
    clock = f"{at.hour:02d}:{at.minute:02d}"
    day = at.date()
    if day >= today:
        return f"Today, {clock}"
    if day == today - timedelta(days=1):
        return f"Yesterday, {clock}"
    if day > today - timedelta(days=7):
        return f"{at.strftime('%a')}, {clock}"
    return f"{day.day} {at.strftime('%b')}" + ("" if day.year == today.year else f" {day.year}")


def _gone_on(timestamp: float) -> str:
    day: date = datetime.fromtimestamp(timestamp + TRASH_DAYS * 86400.0).date()
    return f"Deleted for good on {day.day} {day.strftime('%B %Y')}"


class _TrashList(QTreeWidget):
    """The trash's rows; Delete (or Backspace, the Mac's delete key) asks to delete the chosen
    ones for good."""

    sig_delete_key = Signal()

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt's name
        if event.key() in (Qt.Key.Key_Delete, Qt.Key.Key_Backspace):
            self.sig_delete_key.emit()
            return
        super().keyPressEvent(event)


class TrashDialog(QDialog):
    """The chats in the trash, a row each (several can be chosen); *Put back*, *Delete for good…*,
    *Empty…*; a line saying how long chats are kept, or that there are none."""

    sig_put_back = Signal(list)  # the trash ids chosen
    sig_forget = Signal(object)  # the trash ids chosen, or None: all of them

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Recently deleted")
        self.setObjectName("trashDialog")
        self.resize(620, 380)
        lay = QVBoxLayout(self)
        self.about = QLabel()
        self.about.setObjectName("trashAbout")
        self.about.setWordWrap(True)
        lay.addWidget(self.about)
        self.tree = _TrashList()
        self.tree.setObjectName("trashList")
        self.tree.setHeaderLabels(["Chat", "Folder", "Messages", "Deleted"])
        self.tree.setRootIsDecorated(False)
        self.tree.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.tree.setUniformRowHeights(True)
        header = self.tree.header()
        header.setStretchLastSection(False)
        header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
        for col in (1, 2, 3):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        self.tree.itemSelectionChanged.connect(self._update_buttons)
        self.tree.itemDoubleClicked.connect(lambda _item, _col: self.put_back())
        self.tree.sig_delete_key.connect(self.forget_chosen)  # (Enter: Put back, the default button)
        lay.addWidget(self.tree, 1)
        self.put_back_button = QPushButton("Put back")
        self.put_back_button.setToolTip("Bring the chosen chats back to the list, as they were")
        self.forget_button = QPushButton("Delete for good…")
        self.empty_button = QPushButton("Empty…")
        self.empty_button.setToolTip("Delete every chat here for good")
        self.put_back_button.clicked.connect(self.put_back)
        self.forget_button.clicked.connect(self.forget_chosen)
        self.empty_button.clicked.connect(self.empty)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        for b in (self.put_back_button, self.forget_button, self.empty_button):
            buttons.addButton(b, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)
        self.confirm_box: QMessageBox | None = None  # the open "Delete for good?" question, if any
        self.set_chats([])

    def set_chats(self, chats: list[TrashedChat], *, now: float | None = None) -> None:
        """Show ``chats`` (the last deleted first), keeping the chosen ones that stay."""
        chosen = set(self.chosen())
        self.tree.clear()
        for chat in chats:
            item = QTreeWidgetItem(
                [chat.title, chat.folder or "", str(chat.messages), deleted_when(chat.deleted_at, now)]
            )
            item.setData(0, _ID, chat.id)
            item.setToolTip(0, chat.title)
            item.setToolTip(3, _gone_on(chat.deleted_at))
            item.setTextAlignment(2, Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
            self.tree.addTopLevelItem(item)
            item.setSelected(chat.id in chosen)
        if chats and not self.tree.selectedItems():
            self.tree.setCurrentItem(self._items()[0])
        self.tree.setVisible(bool(chats))
        self.about.setAlignment(
            Qt.AlignmentFlag.AlignLeft if chats else Qt.AlignmentFlag.AlignCenter
        )  # (alone in the dialog: in its middle)
        self.about.setText(
            f"Deleted chats stay here for {TRASH_DAYS} days, then they are deleted for good."
            if chats
            else f"No chats were deleted in the last {TRASH_DAYS} days."
        )
        self._update_buttons()

    def _items(self) -> list[QTreeWidgetItem]:
        items = (self.tree.topLevelItem(i) for i in range(self.tree.topLevelItemCount()))
        return [item for item in items if item is not None]

    def ids(self) -> list[int]:
        """Every chat shown, in order (trash ids)."""
        return [item.data(0, _ID) for item in self._items()]

    def titles(self) -> list[str]:
        return [item.text(0) for item in self._items()]

    def chosen(self) -> list[int]:
        """The chosen chats' trash ids, in the list's order."""
        return [item.data(0, _ID) for item in self._items() if item.isSelected()]

    def select(self, trash_ids: list[int]) -> None:
        for item in self._items():
            item.setSelected(item.data(0, _ID) in trash_ids)

    def put_back(self) -> None:
        ids = self.chosen()
        if ids:
            self.sig_put_back.emit(ids)

    def forget_chosen(self) -> None:
        ids = self.chosen()
        if ids:
            n = len(ids)
            what = f"“{self._title_of(ids[0])}”" if n == 1 else f"these {n} chats"
            self._confirm(f"Delete {what} for good? This cannot be undone.", ids)

    def empty(self) -> None:
        n = self.tree.topLevelItemCount()
        if n:
            what = "the chat" if n == 1 else f"all {n} chats"
            self._confirm(f"Delete {what} in Recently deleted for good? This cannot be undone.", None)

    def _title_of(self, trash_id: int) -> str:
        return next(t for t, i in zip(self.titles(), self.ids(), strict=True) if i == trash_id)

    def _confirm(self, question: str, ids: list[int] | None) -> None:
        box = QMessageBox(
            QMessageBox.Icon.Warning, "Delete for good", question, QMessageBox.StandardButton.Cancel, self
        )
        box.setObjectName("confirmForget")
        delete = box.addButton("Delete for good", QMessageBox.ButtonRole.DestructiveRole)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        delete.clicked.connect(lambda: self.sig_forget.emit(ids))
        box.finished.connect(lambda _r: setattr(self, "confirm_box", None))
        self.confirm_box = box
        box.open()

    def _update_buttons(self) -> None:
        some = bool(self.tree.selectedItems())
        self.put_back_button.setEnabled(some)
        self.forget_button.setEnabled(some)
        self.empty_button.setEnabled(self.tree.topLevelItemCount() > 0)
        self.put_back_button.setDefault(some)
