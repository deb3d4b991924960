"""The conversation list: new, rename (in place), pin, file in a folder, export, delete, search; the
pinned ones first under "Pinned", then each folder (folded or not, by a click on its name), the
others grouped by Today / Yesterday / Previous 7 days / Earlier, with a "No matches" line when a
search finds nothing."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from datetime import date, datetime, timedelta
from functools import partial
from typing import Any

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QPalette
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHBoxLayout,
    QLineEdit,
    QListWidgetItem,
    QMenu,
    QMessageBox,
    QPushButton,
    QWidget,
)

from app.storage.history import TRASH_DAYS
from app.ui.conversation_folders import (
    ask_folder_name,
    fill_folder_menu,
    fill_many_menu,
    fill_move_menu,
    folder_header_text,
    folder_key,
)
from app.ui.conversation_lines import (
    CONVERSATION_MIME,
    FOLDER_ROLE,
    KIND_ROLE,
    PINNED,
    PINNED_ROLE,
    SNIPPET_ROLE,
    ConversationLines,
    snippet_runs,
)
from app.ui.labels import side_panel_layout

__all__ = ["CONVERSATION_MIME", "PINNED", "SEARCH_SHOWN", "ConversationList"]

SEARCH_SHOWN = 100  # the most chats a search lists (the latest that match); more are said at the end


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


class ConversationList(QWidget):
    sig_new = Signal()
    sig_open = Signal(int)
    sig_rename = Signal(int, str)
    sig_delete = Signal(list)  # the ids of the chats to delete (asked first)
    sig_export = Signal(int)  # Export… from the list's menu: the conversation's id
    sig_pin = Signal(list, bool)  # Pin / Unpin from the list's menu: the ids, pinned or not
    sig_copy = Signal(int)  # Copy as Markdown from the list's menu: the conversation's id
    sig_folder = Signal(list, object)  # Move to folder: the ids and the folder's name (None: out of it)
    sig_rename_folder = Signal(str, str)  # a folder's menu: its name, the new one
    sig_remove_folder = Signal(str)  # a folder's menu: its name (its conversations are kept)
    sig_collapsed = Signal(list)  # the folders now folded (their names), after a click on one
    sig_new_in_folder = Signal(str)  # a folder's menu: New chat here (its name)
    sig_name = Signal(int)  # Name with the model from the list's menu: the conversation's id
    sig_name_many = Signal(list)  # Name N chats with the model (several chosen): their ids
    sig_offer = Signal(str)  # an empty list's offer ("Import your N chats from LM Studio…") clicked: its key
    sig_duplicate = Signal(int)  # Duplicate from the list's menu: the conversation's id
    sig_export_many = Signal(list)  # Export N chats… (several chosen): their ids
    sig_copy_many = Signal(list)  # Copy N chats as Markdown (several chosen): their ids
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
        self.list = ConversationLines()
        self.list.setObjectName("conversations")
        # a click opens, only Rename (or F2) edits: a double-click no longer starts a rename by accident
        self.list.setEditTriggers(QAbstractItemView.EditTrigger.EditKeyPressed)
        self.list.sig_delete_key.connect(self.delete_selected)
        self.list.sig_drop_folder.connect(self.sig_folder.emit)
        self.list.sig_open_key.connect(self.sig_open.emit)
        self.list.sig_unchoose_key.connect(lambda: self.select(self.current_id))
        self.list.sig_folder_key.connect(partial(folder_key, self))
        self.list.currentItemChanged.connect(lambda *_a: self._update_buttons())
        self.list.itemSelectionChanged.connect(self._update_buttons)
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
        self.folders: list[str] = []  # every folder in the history, by name (Move to folder lists them)
        self.collapsed: set[str] = set()  # the folders shown folded
        self.folder_dialog: Any = None  # the open folder name dialog, if any
        self.snippets: dict[int, str] = {}  # the search's words around its match, per conversation
        self._update_buttons()

    def _update_buttons(self) -> None:
        n, it = len(self.selected_ids()), self.list.currentItem()
        self.btn_rename.setEnabled(n == 1 or (n == 0 and it is not None and it.data(KIND_ROLE) == "folder"))
        self.btn_delete.setEnabled(n > 0)
        self.btn_delete.setText(f"Delete {n}" if n > 1 else "Delete")

    def _header(self, text: str, kind: str = "header") -> QListWidgetItem:
        item = QListWidgetItem(text)
        item.setFlags(Qt.ItemFlag.NoItemFlags)  # not selectable, not editable
        item.setData(KIND_ROLE, kind)
        f = item.font()
        f.setBold(kind not in ("more", "offer"))
        f.setItalic(kind == "more")
        f.setUnderline(kind == "offer")  # ("more": a search's last line, saying it listed the latest only)
        f.setPointSizeF(max(7.0, f.pointSizeF() * 0.85))
        item.setFont(f)
        self.list.addItem(item)
        return item

    def _folder_header(self, name: str, count: int, folded: bool) -> None:
        item = self._header(folder_header_text(name, count, folded), "folder")
        # a click folds or unfolds it; selectable so that the keyboard's cursor shows on it
        item.setFlags(Qt.ItemFlag.ItemIsEnabled | Qt.ItemFlag.ItemIsSelectable)
        item.setData(FOLDER_ROLE, name)
        item.setToolTip(f"{name}: click to fold or unfold; right-click to rename or remove the folder")

    def _add(self, c: Any, *, hidden: bool = False) -> None:
        item = QListWidgetItem(c.title or "Untitled")
        item.setData(Qt.ItemDataRole.UserRole, int(c.id))
        item.setData(PINNED_ROLE, bool(c.pinned))
        item.setData(FOLDER_ROLE, c.folder)
        item.setFlags(item.flags() | Qt.ItemFlag.ItemIsEditable)
        when = datetime.fromtimestamp(c.updated).strftime("%d %b %Y, %H:%M") if c.updated else ""
        place = f" · in {c.folder}" if c.folder else ""
        snippet = self.snippets.get(int(c.id))
        item.setData(SNIPPET_ROLE, snippet)  # a search's result: drawn under its title
        found = "\n" + "".join(text for text, _match in snippet_runs(snippet)) if snippet else ""
        item.setToolTip(f"{c.title or 'Untitled'}\n{c.message_count} messages · {when}{place}{found}")
        self.list.addItem(item)
        item.setHidden(hidden)
        if c.id == self.current_id:
            self.list.setCurrentItem(item)

    def set_conversations(
        self,
        conversations: list[Any],
        folders: Sequence[str] | None = None,
        snippets: Mapping[int, str] | None = None,
        *,
        more: bool = False,
        offers: Sequence[tuple[str, str, str]] = (),
    ) -> None:
        """Show ``conversations`` (the latest change first): the pinned under "Pinned", then each
        folder's by name (folded ones hidden, except in a search's results), then the others by day.
        ``folders``: every folder in the history (default: those of ``conversations``);
        ``snippets``: a search's words around its match, per conversation, shown under its title;
        ``more``: a search found more than these (the latest :data:`SEARCH_SHOWN`): said at the end;
        ``offers``: under an empty list's "No conversations yet", lines to click (:attr:`sig_offer`),
        each its key, its text and its tooltip."""
        self.snippets = dict(snippets or {})
        self._filling = True
        cursor = self.list.currentItem()  # a folder's line the keyboard is on stays the current one
        on_folder = (
            cursor.data(FOLDER_ROLE) if cursor is not None and cursor.data(KIND_ROLE) == "folder" else None
        )
        chosen = self.selected_ids()  # several chosen stay chosen (a reply saved meanwhile shows it again)
        self.list.clear()
        searching = bool(self.search.text().strip())
        filed: dict[str, list[Any]] = {}
        loose: list[Any] = []
        for c in conversations:
            if not c.pinned:
                (filed.setdefault(c.folder, []) if c.folder else loose).append(c)
        known = set(folders) if folders is not None else set(filed)
        self.folders = sorted(known | set(filed), key=lambda n: (n.casefold(), n))
        pinned = [c for c in conversations if c.pinned]
        if pinned:
            self._header(PINNED)
        for c in pinned:
            self._add(c)
        for name in sorted(filed, key=lambda n: (n.casefold(), n)):
            folded = name in self.collapsed and not searching
            self._folder_header(name, len(filed[name]), folded)
            for c in filed[name]:
                self._add(c, hidden=folded)
        group = None
        for c in loose:
            g = day_group(c.updated or time.time())
            if g != group:
                group = g
                self._header(g)
            self._add(c)
        if not conversations:
            self._header("No matches" if searching else "No conversations yet")
            for key, text, tip in offers if not searching else ():
                offered = self._header(text, kind="offer")
                offered.setData(FOLDER_ROLE, key)  # (the offer's key, where a folder's line keeps its name)
                offered.setFlags(Qt.ItemFlag.ItemIsEnabled)  # (clicked, never chosen)
                offered.setForeground(self.palette().color(QPalette.ColorRole.Link))
                offered.setToolTip(tip)
        if more:
            end = self._header(f"Showing the {len(conversations)} latest matches", kind="more")
            end.setToolTip("More chats match: add a word to the search to find the older ones")
        line = self.list.folder_line(on_folder) if on_folder is not None else None
        if line is not None:
            self.list.setCurrentItem(line)
        if len(chosen) > 1:
            self.list.clearSelection()
            for cid in chosen:
                it = self.item_for(cid)
                if it is not None and not it.isHidden():
                    it.setSelected(True)
        self._filling = False
        self._update_buttons()

    def toggle_folder(self, name: str) -> None:
        """Fold the folder ``name`` (its conversations hidden), or unfold it. A search's results are
        shown unfolded: there it changes nothing."""
        if self.search.text().strip():
            return
        self.collapsed ^= {name}
        for i in range(self.list.count()):
            it = self.list.item(i)
            if it.data(FOLDER_ROLE) != name or it.data(PINNED_ROLE):
                continue
            folded = name in self.collapsed
            if it.data(KIND_ROLE) == "folder":
                count = sum(
                    1
                    for c in self._conversation_items()
                    if c.data(FOLDER_ROLE) == name and not c.data(PINNED_ROLE)
                )
                it.setText(folder_header_text(name, count, folded))
            else:
                it.setHidden(folded)
        self.sig_collapsed.emit(sorted(self.collapsed))

    def _conversation_items(self) -> list[QListWidgetItem]:
        items = (self.list.item(i) for i in range(self.list.count()))
        return [it for it in items if it.data(Qt.ItemDataRole.UserRole) is not None]

    def ids(self) -> list[int]:
        return [it.data(Qt.ItemDataRole.UserRole) for it in self._conversation_items()]

    def shown_ids(self) -> list[int]:
        """The conversations listed and not folded away, in order."""
        return [it.data(Qt.ItemDataRole.UserRole) for it in self._conversation_items() if not it.isHidden()]

    def folder_of(self, cid: int) -> str | None:
        item = self.item_for(cid)
        return item.data(FOLDER_ROLE) if item is not None else None

    def pinned_ids(self) -> list[int]:
        """The pinned conversations, as listed (first)."""
        return [
            it.data(Qt.ItemDataRole.UserRole) for it in self._conversation_items() if it.data(PINNED_ROLE)
        ]

    def headers(self) -> list[str]:
        """The group headers shown, in order ("Pinned", "Today", …)."""
        items = (self.list.item(i) for i in range(self.list.count()))
        return [it.text() for it in items if it.data(KIND_ROLE) in ("header", "folder")]

    def folder_item(self, name: str) -> QListWidgetItem | None:
        """The header of the folder ``name``, when the list shows it."""
        return self.list.folder_line(name)

    def titles(self) -> list[str]:
        return [it.text() for it in self._conversation_items()]

    def placeholder(self) -> str | None:
        """The "No matches" / "No conversations yet" line, when the list shows one."""
        first = self.list.item(0)
        if self.ids() or first is None or first.data(KIND_ROLE) != "header":
            return None
        return first.text()

    def item_for(self, cid: int) -> QListWidgetItem | None:
        return self.list.item_for(cid)

    def select(self, cid: int | None) -> None:
        """Mark the open chat ``cid``, chosen alone (none: nothing chosen is left behind for Delete)."""
        self.current_id = cid
        item = self.item_for(cid) if cid is not None else None
        self._filling = True
        self.list.clearSelection()
        self.list.setCurrentItem(item)  # type: ignore[arg-type]  # (None: no current line)
        self._filling = False
        self._update_buttons()

    def selected_ids(self) -> list[int]:
        """The conversations selected, as listed: the current one, or several (Ctrl/Shift+click)."""
        return [it.data(Qt.ItemDataRole.UserRole) for it in self._conversation_items() if it.isSelected()]

    def _on_list_item_clicked(self, item: QListWidgetItem) -> None:
        cid = item.data(Qt.ItemDataRole.UserRole)
        if self.list.choosing:
            return  # Ctrl/Shift+click chooses several: nothing opens
        if cid is not None:
            self.sig_open.emit(cid)
        elif item.data(KIND_ROLE) == "offer":
            self.sig_offer.emit(item.data(FOLDER_ROLE))
        elif item.data(KIND_ROLE) == "folder":
            self.toggle_folder(item.data(FOLDER_ROLE))
            self.select(self.current_id)  # the open chat stays the one marked

    def _on_list_item_changed(self, item: QListWidgetItem) -> None:
        if self._filling or item.data(Qt.ItemDataRole.UserRole) is None:
            return
        title = item.text().strip()
        if title:
            self.sig_rename.emit(item.data(Qt.ItemDataRole.UserRole), title)

    def rename_selected(self) -> None:
        """Rename the current line: a conversation in place (one chosen, not several), a folder in
        the folder name dialog."""
        it, ids = self.list.currentItem(), self.selected_ids()
        if it is not None and it.data(KIND_ROLE) == "folder":
            folder_key(self, it.data(FOLDER_ROLE), "rename")
        elif len(ids) == 1 and (line := self.item_for(ids[0])) is not None:
            self.list.editItem(line)

    def delete_selected(self) -> None:
        """Delete the selected conversations, once the person says so (a dialog that does not block)."""
        ids = self.selected_ids()
        if not ids:
            return
        line = self.item_for(ids[0])
        asked = (
            f"Delete “{line.text() if line is not None else ''}” and all its messages?"
            if len(ids) == 1
            else f"Delete these {len(ids)} conversations and all their messages?"
        )
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Delete conversation" if len(ids) == 1 else "Delete conversations",
            f"{asked}\n\nThey stay in Recently deleted (File menu) for {TRASH_DAYS} days; "
            "Undo in the status bar brings them back now."
            if len(ids) > 1
            else f"{asked}\n\nIt stays in Recently deleted (File menu) for {TRASH_DAYS} days; "
            "Undo in the status bar brings it back now.",
            QMessageBox.StandardButton.Cancel,
            self,
        )
        box.setObjectName("confirmDelete")
        delete = box.addButton("Delete", QMessageBox.ButtonRole.DestructiveRole)
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)

        def finished(_result: int) -> None:
            if box.clickedButton() is delete:
                self.sig_delete.emit(list(ids))

        box.finished.connect(finished)
        box.open()
        self.confirm_box = box

    def _on_list_menu(self, pos) -> None:
        it = self.list.itemAt(pos)
        menu = self.menu_for(it) if it is not None else None
        if menu is not None:
            menu.exec(self.list.mapToGlobal(pos))

    def menu_for(self, it: QListWidgetItem) -> QMenu | None:
        """The right-click menu of line ``it``: a conversation's (when it is one of several chosen:
        theirs), a folder's, or None for a day's line."""
        menu = QMenu(self)
        ids = self.selected_ids()
        if it.data(Qt.ItemDataRole.UserRole) is not None and it.isSelected() and len(ids) > 1:
            fill_many_menu(self, menu, ids)
        elif it.data(Qt.ItemDataRole.UserRole) is not None:
            self.list.setCurrentItem(it)
            self.fill_menu(menu, it)
        elif it.data(KIND_ROLE) == "folder":
            fill_folder_menu(self, menu, it.data(FOLDER_ROLE))
        else:
            return None
        return menu

    def ask_folder_name(self, title: str, text: str, done: Any) -> None:
        """Ask for a folder's name (``text`` proposed), without blocking; ``done(name)`` once given."""
        self.folder_dialog = ask_folder_name(self, title, text, done)

    def fill_menu(self, menu: QMenu, it: QListWidgetItem) -> None:
        """The actions of a conversation's menu in the list."""
        cid, pinned = it.data(Qt.ItemDataRole.UserRole), bool(it.data(PINNED_ROLE))
        pin = menu.addAction(
            "Unpin" if pinned else "Pin to top", lambda: self.sig_pin.emit([cid], not pinned)
        )
        pin.setObjectName("unpinConversation" if pinned else "pinConversation")
        fill_move_menu(self, menu.addMenu("Move to folder"), [cid])
        menu.addAction("Rename", self.rename_selected)
        menu.addAction("Duplicate", lambda: self.sig_duplicate.emit(cid)).setObjectName(
            "duplicateConversation"
        )
        menu.addAction("Name with the model", lambda: self.sig_name.emit(cid)).setObjectName("nameWithModel")
        menu.addAction("Copy as Markdown", lambda: self.sig_copy.emit(cid))
        menu.addAction("Export…", lambda: self.sig_export.emit(cid))
        menu.addAction("Delete", self.delete_selected)
