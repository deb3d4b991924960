"""The conversation list: new, rename (in place), delete, search."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMenu,
    QMessageBox,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

__all__ = ["ConversationList"]


class ConversationList(QWidget):
    sig_new = Signal()
    sig_open = Signal(int)
    sig_rename = Signal(int, str)
    sig_delete = Signal(int)
    sig_search = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("conversationList")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 6)
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
        self.list = QListWidget()
        self.list.setObjectName("conversations")
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

    def set_conversations(self, conversations: list[Any]) -> None:
        self._filling = True
        self.list.clear()
        for c in conversations:
            item = QListWidgetItem(c.title or "Untitled")
            item.setData(Qt.ItemDataRole.UserRole, int(c.id))
            item.setFlags(item.flags() | Qt.ItemFlag.ItemIsEditable)
            item.setToolTip(f"{c.title or 'Untitled'}\n{c.message_count} messages")
            self.list.addItem(item)
            if c.id == self.current_id:
                self.list.setCurrentItem(item)
        self._filling = False

    def ids(self) -> list[int]:
        return [self.list.item(i).data(Qt.ItemDataRole.UserRole) for i in range(self.list.count())]

    def titles(self) -> list[str]:
        return [self.list.item(i).text() for i in range(self.list.count())]

    def item_for(self, cid: int) -> QListWidgetItem | None:
        for i in range(self.list.count()):
            if self.list.item(i).data(Qt.ItemDataRole.UserRole) == cid:
                return self.list.item(i)
        return None

    def select(self, cid: int | None) -> None:
        self.current_id = cid
        item = self.item_for(cid) if cid is not None else None
        self._filling = True
        self.list.setCurrentItem(item)
        self._filling = False

    def _selected_id(self) -> int | None:
        it = self.list.currentItem()
        return it.data(Qt.ItemDataRole.UserRole) if it is not None else None

    def _on_list_item_clicked(self, item: QListWidgetItem) -> None:
        self.sig_open.emit(item.data(Qt.ItemDataRole.UserRole))

    def _on_list_item_changed(self, item: QListWidgetItem) -> None:
        if self._filling:
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
        box = QMessageBox(QMessageBox.Icon.Question, "Delete conversation",
                          f"Delete “{self.list.currentItem().text()}” and all its messages?",
                          QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No, self)
        box.setObjectName("confirmDelete")
        box.finished.connect(lambda r: r == QMessageBox.StandardButton.Yes and self.sig_delete.emit(cid))
        box.open()

    def _on_list_menu(self, pos) -> None:
        it = self.list.itemAt(pos)
        if it is None:
            return
        self.list.setCurrentItem(it)
        menu = QMenu(self)
        menu.addAction("Rename", self.rename_selected)
        menu.addAction("Delete", self.delete_selected)
        menu.exec(self.list.mapToGlobal(pos))
