"""The conversation list: new, rename (in place), pin, export, delete, search; the pinned ones first
under "Pinned", the others grouped by Today / Yesterday / Previous 7 days / Earlier, with a
"No matches" line when a search finds nothing."""

from __future__ import annotations

import time
from datetime import date, datetime, timedelta
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QMessageBox,
    QPushButton,
    QWidget,
)

from app.ui.labels import side_panel_layout

__all__ = ["PINNED", "ConversationList"]

PINNED = "Pinned"  # the header of the pinned conversations, first in the list
_PINNED_ROLE = Qt.ItemDataRole.UserRole + 2


def day_group(timestamp: float, today: date | None = None) -> str:
    """ "Today", "Yesterday", "Previous 7 days" or "Earlier" for a conversation's last change."""
    today = today or date.today()
    d = datetime.fromtimestamp(timestamp).date()
    if d >= today:
        return "Today"
    if d == today - timedelta(days=1):
        return "Yesterday"
    if d > today - timedelta(days=7):
        return "Previous 7 days"
    return "Earlier"


class _List(QListWidget):
    """The Delete key deletes the selected conversation (after asking)."""

    sig_delete_key = Signal()

    def keyPressEvent(self, e: QKeyEvent) -> None:  # noqa: N802 (Qt API)
        if e.key() in (Qt.Key.Key_Delete, Qt.Key.Key_Backspace) and self.currentItem() is not None:
            self.sig_delete_key.emit()
            return
        super().keyPressEvent(e)


class ConversationList(QWidget):
    sig_new = Signal()
    sig_open = Signal(int)
    sig_rename = Signal(int, str)
    sig_delete = Signal(int)
    sig_export = Signal(int)  # Export… from the list's menu: the conversation's id
    sig_pin = Signal(int, bool)  # Pin / Unpin from the list's menu: the id, pinned or not
    sig_copy = Signal(int)  # Copy as Markdown from the list's menu: the conversation's id
    sig_search = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = side_panel_layout(self, "conversationList")
        self.btn_new = QPushButton("+ New chat")
        self.btn_new.setObjectName("newChat")
        self.btn_new.setToolTip("New chat (Ctrl+N)")
        self.btn_new.clicked.connect(self.sig_new.emit)
        lay.addWidget(self.btn_new)
        self.search = QLineEdit()
        self.search.setObjectName("conversationSearch")
        self.search.setPlaceholderText("Search conversations…")
        self.search.setClearButtonEnabled(True)
        self._search_timer = QTimer(self)
        self._search_timer.setSingleShot(True)
        self._search_timer.setInterval(200)
        self._search_timer.timeout.connect(lambda: self.sig_search.emit(self.search.text().strip()))
        self.search.textChanged.connect(lambda _t: self._search_timer.start())
        self.search.returnPressed.connect(lambda: self.sig_search.emit(self.search.text().strip()))
        lay.addWidget(self.search)
        self.list = _List()
        self.list.setObjectName("conversations")
        # a click opens, only Rename (or F2) edits: a double-click no longer starts a rename by accident
        self.list.setEditTriggers(QAbstractItemView.EditTrigger.EditKeyPressed)
        self.list.sig_delete_key.connect(self.delete_selected)
        self.list.currentItemChanged.connect(lambda *_a: self._update_buttons())
        # long titles end in "…" (the full title is in the tooltip) instead of a horizontal scroll bar
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.TextElideMode.ElideRight)
        self.list.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.list.customContextMenuRequested.connect(self._on_list_menu)
        self.list.itemClicked.connect(self._on_list_item_clicked)
        self.list.itemChanged.connect(self._on_list_item_changed)
        lay.addWidget(self.list, 1)
        row = QHBoxLayout()
        self.btn_rename = QPushButton("Rename")
        self.btn_delete = QPushButton("Delete")
        self.btn_rename.clicked.connect(self.rename_selected)
        self.btn_delete.clicked.connect(self.delete_selected)
        row.addWidget(self.btn_rename)
        row.addWidget(self.btn_delete)
        lay.addLayout(row)
        self._filling = False
        self.current_id: int | None = None
        self._update_buttons()

    def _update_buttons(self) -> None:
        on = self._selected_id() is not None
        self.btn_rename.setEnabled(on)
        self.btn_delete.setEnabled(on)

    def _header(self, text: str) -> None:
        item = QListWidgetItem(text)
        item.setFlags(Qt.ItemFlag.NoItemFlags)  # not selectable, not editable
        item.setData(Qt.ItemDataRole.UserRole + 1, "header")
        f = item.font()
        f.setBold(True)
        f.setPointSizeF(max(7.0, f.pointSizeF() * 0.85))
        item.setFont(f)
        self.list.addItem(item)

    def set_conversations(self, conversations: list[Any]) -> None:
        self._filling = True
        self.list.clear()
        group = None
        # the pinned first (in the order given: the latest change first), then the others by day
        ordered = [c for c in conversations if c.pinned] + [c for c in conversations if not c.pinned]
        for c in ordered:
            g = PINNED if c.pinned else day_group(c.updated or time.time())
            if g != group:
                group = g
                self._header(g)
            item = QListWidgetItem(c.title or "Untitled")
            item.setData(Qt.ItemDataRole.UserRole, int(c.id))
            item.setData(_PINNED_ROLE, bool(c.pinned))
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsEditable)
            when = datetime.fromtimestamp(c.updated).strftime("%d %b %Y, %H:%M") if c.updated else ""
            item.setToolTip(f"{c.title or 'Untitled'}\n{c.message_count} messages · {when}")
            self.list.addItem(item)
            if c.id == self.current_id:
                self.list.setCurrentItem(item)
        if not conversations:
            self._header("No matches" if self.search.text().strip() else "No conversations yet")
        self._filling = False
        self._update_buttons()

    def _conversation_items(self) -> list[QListWidgetItem]:
        items = (self.list.item(i) for i in range(self.list.count()))
        return [it for it in items if it.data(Qt.ItemDataRole.UserRole) is not None]

    def ids(self) -> list[int]:
        return [it.data(Qt.ItemDataRole.UserRole) for it in self._conversation_items()]

    def pinned_ids(self) -> list[int]:
        """The pinned conversations, as listed (first)."""
        return [
            it.data(Qt.ItemDataRole.UserRole) for it in self._conversation_items() if it.data(_PINNED_ROLE)
        ]

    def headers(self) -> list[str]:
        """The group headers shown, in order ("Pinned", "Today", …)."""
        items = (self.list.item(i) for i in range(self.list.count()))
        return [it.text() for it in items if it.data(Qt.ItemDataRole.UserRole + 1) == "header"]

    def titles(self) -> list[str]:
        return [it.text() for it in self._conversation_items()]

    def placeholder(self) -> str | None:
        """The "No matches" / "No conversations yet" line, when the list shows one."""
        if self.ids() or self.list.count() != 1:
            return None
        return self.list.item(0).text()

    def item_for(self, cid: int) -> QListWidgetItem | None:
        for i in range(self.list.count()):
            if self.list.item(i).data(Qt.ItemDataRole.UserRole) == cid:
                return self.list.item(i)
        return None

    def select(self, cid: int | None) -> None:
        self.current_id = cid
        item = self.item_for(cid) if cid is not None else None
        self._filling = True
        self.list.setCurrentItem(item)  # type: ignore[arg-type]  # None clears the selection
        self._filling = False

    def _selected_id(self) -> int | None:
        it = self.list.currentItem()
        return it.data(Qt.ItemDataRole.UserRole) if it is not None else None

    def _on_list_item_clicked(self, item: QListWidgetItem) -> None:
        cid = item.data(Qt.ItemDataRole.UserRole)
        if cid is not None:
            self.sig_open.emit(cid)

    def _on_list_item_changed(self, item: QListWidgetItem) -> None:
        if self._filling or item.data(Qt.ItemDataRole.UserRole) is None:
            return
        title = item.text().strip()
        if title:
            self.sig_rename.emit(item.data(Qt.ItemDataRole.UserRole), title)

    def rename_selected(self) -> None:
        it = self.list.currentItem()
        if it is not None:
            self.list.editItem(it)

    def delete_selected(self) -> None:
        cid = self._selected_id()
        if cid is None:
            return
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Delete conversation",
            f"Delete “{self.list.currentItem().text()}” and all its messages? This cannot be undone.",
            QMessageBox.StandardButton.Cancel,
            self,
        )
        box.setObjectName("confirmDelete")
        delete = box.addButton("Delete", QMessageBox.ButtonRole.DestructiveRole)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)

        def finished(_result: int) -> None:
            if box.clickedButton() is delete:
                self.sig_delete.emit(cid)

        box.finished.connect(finished)
        box.open()
        self.confirm_box = box

    def _on_list_menu(self, pos) -> None:
        it = self.list.itemAt(pos)
        if it is None or it.data(Qt.ItemDataRole.UserRole) is None:
            return
        self.list.setCurrentItem(it)
        menu = QMenu(self)
        self.fill_menu(menu, it)
        menu.exec(self.list.mapToGlobal(pos))

    def fill_menu(self, menu: QMenu, it: QListWidgetItem) -> None:
        """The actions of a conversation's menu in the list."""
        cid, pinned = it.data(Qt.ItemDataRole.UserRole), bool(it.data(_PINNED_ROLE))
        pin = menu.addAction("Unpin" if pinned else "Pin to top", lambda: self.sig_pin.emit(cid, not pinned))
        pin.setObjectName("unpinConversation" if pinned else "pinConversation")
        menu.addAction("Rename", self.rename_selected)
        menu.addAction("Copy as Markdown", lambda: self.sig_copy.emit(cid))
        menu.addAction("Export…", lambda: self.sig_export.emit(cid))
        menu.addAction("Delete", self.delete_selected)
