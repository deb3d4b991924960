"""The conversation list's folders: a folder's header line, its menu (rename, remove), a
conversation's "Move to folder" menu, and the dialog that asks a folder's name. A folder is the name
its conversations share (``History.set_folder``): filing a conversation in a new name makes the
folder, and a folder removed puts its conversations back among the others."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QInputDialog, QLineEdit, QMenu, QWidget

from app.storage.history import MAX_FOLDER_NAME

if TYPE_CHECKING:
    from app.ui.conversation_list import ConversationList

__all__ = [
    "FOLDER_KEYS",
    "ask_folder_name",
    "fill_folder_menu",
    "fill_many_menu",
    "fill_move_menu",
    "folder_header_text",
    "folder_key",
]

#: the keys on a folder's line in the list, and what each asks (:func:`folder_key`)
FOLDER_KEYS: dict[int, str] = {
    Qt.Key.Key_Left: "fold",
    Qt.Key.Key_Right: "unfold",
    Qt.Key.Key_Return: "toggle",
    Qt.Key.Key_Enter: "toggle",
    Qt.Key.Key_Space: "toggle",
    Qt.Key.Key_F2: "rename",
}


def folder_header_text(name: str, count: int, folded: bool) -> str:
    """A folder's line in the list: its arrow (▸ folded, ▾ open), its name and how many it holds."""
    return f"{'▸' if folded else '▾'} {name} ({count})"


def ask_folder_name(parent: QWidget, title: str, text: str, done: Callable[[str], object]) -> QInputDialog:
    """A dialog asking a folder's name (``text`` proposed), opened without blocking: ``done(name)``
    when one is given (a blank one is no answer). Returns the dialog (open)."""
    dialog = QInputDialog(parent)
    dialog.setObjectName("folderName")
    dialog.setWindowTitle(title)
    dialog.setLabelText("Folder name:")
    dialog.setTextValue(text)
    dialog.setOkButtonText("OK")
    edit = dialog.findChild(QLineEdit)
    if edit is not None:
        edit.setMaxLength(MAX_FOLDER_NAME)

    def chosen(value: str) -> None:
        if value.strip():
            done(value)

    dialog.textValueSelected.connect(chosen)
    dialog.open()
    return dialog


def fill_move_menu(owner: ConversationList, menu: QMenu, ids: list[int]) -> None:
    """The "Move to folder" menu of the conversations ``ids`` (one, or several chosen): each folder
    (the one they are in, checked and off), a new folder, and out of their folder."""
    menu.setObjectName("moveToFolder")
    theirs = {owner.folder_of(cid) for cid in ids}
    current = next(iter(theirs)) if len(theirs) == 1 else None

    def file(name: str | None) -> None:
        owner.sig_folder.emit(list(ids), name)

    for name in owner.folders:
        act = menu.addAction(name, partial(file, name))
        act.setCheckable(True)
        act.setChecked(name == current)
        act.setEnabled(name != current)
    if owner.folders:
        menu.addSeparator()
    new = menu.addAction("New folder…", lambda: owner.ask_folder_name("New folder", "", file))
    new.setObjectName("newFolder")
    if theirs - {None}:
        out = menu.addAction(
            f"Remove from “{current}”" if current else "Out of their folders", lambda: file(None)
        )
        out.setObjectName("outOfFolder")


def fill_many_menu(owner: ConversationList, menu: QMenu, ids: list[int]) -> None:
    """The menu of several conversations chosen (Ctrl/Shift+click): pin (or unpin), move, name,
    copy, export, delete them."""
    n = len(ids)
    pinned = set(owner.pinned_ids()).issuperset(ids)  # all of them: they are unpinned together

    pin = menu.addAction(
        f"Unpin {n} chats" if pinned else f"Pin {n} chats to top",
        lambda: owner.sig_pin.emit(list(ids), not pinned),
    )
    pin.setObjectName("unpinMany" if pinned else "pinMany")
    fill_move_menu(owner, menu.addMenu(f"Move {n} chats to folder"), ids)

    name = menu.addAction(f"Name {n} chats with the model", lambda: owner.sig_name_many.emit(list(ids)))
    name.setObjectName("nameManyWithModel")
    copy = menu.addAction(f"Copy {n} chats as Markdown", lambda: owner.sig_copy_many.emit(list(ids)))
    copy.setObjectName("copyMany")
    export = menu.addAction(f"Export {n} chats…", lambda: owner.sig_export_many.emit(list(ids)))
    export.setObjectName("exportMany")
    menu.addAction(f"Delete {n} chats…", owner.delete_selected).setObjectName("deleteMany")


def fill_folder_menu(owner: ConversationList, menu: QMenu, name: str) -> None:
    """A folder's menu (right-click on its line): a new chat that goes in it, fold or unfold,
    rename, remove (its conversations are kept)."""
    folded = name in owner.collapsed
    new = menu.addAction("New chat here", lambda: owner.sig_new_in_folder.emit(name))
    new.setObjectName("newChatInFolder")
    fold = menu.addAction("Unfold" if folded else "Fold", lambda: owner.toggle_folder(name))
    fold.setEnabled(not owner.search.text().strip())  # a search's results are shown unfolded
    rename = menu.addAction(
        "Rename folder…",
        lambda: owner.ask_folder_name(
            "Rename folder", name, lambda new: owner.sig_rename_folder.emit(name, new)
        ),
    )
    rename.setObjectName("renameFolder")
    remove = menu.addAction("Remove folder (keep its chats)", lambda: owner.sig_remove_folder.emit(name))
    remove.setObjectName("removeFolder")


def folder_key(owner: ConversationList, name: str, what: str) -> None:
    """A key on the folder's line (:data:`FOLDER_KEYS`), as a tree's: fold; unfold, or when it is
    open already go to its first chat; toggle; rename (the dialog). The line stays the current one
    (the list keeps it so when it is shown again)."""
    if what == "rename":
        owner.ask_folder_name("Rename folder", name, lambda new: owner.sig_rename_folder.emit(name, new))
        return
    lst = owner.list
    folded = name in owner.collapsed and not owner.search.text().strip()
    if what == "unfold" and not folded:
        below = lst.item(lst.currentRow() + 1)
        if (
            below is not None
            and below.data(Qt.ItemDataRole.UserRole) is not None
            and owner.folder_of(below.data(Qt.ItemDataRole.UserRole)) == name
        ):
            lst.setCurrentItem(below)
    elif what == "toggle" or folded == (what == "unfold"):
        owner.toggle_folder(name)
