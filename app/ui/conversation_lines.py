"""The conversation list's lines (``ConversationList.list``): what each line holds (its roles), the
keys that move over the lines and fold the folders, and a conversation dragged onto a folder."""

from __future__ import annotations

from PySide6.QtCore import (
    QByteArray,
    QEvent,
    QMimeData,
    QModelIndex,
    QPersistentModelIndex,
    QRect,
    QSize,
    Qt,
    Signal,
)
from PySide6.QtGui import (
    QDrag,
    QDragEnterEvent,
    QDragMoveEvent,
    QDropEvent,
    QFont,
    QFontMetrics,
    QKeyEvent,
    QKeySequence,
    QMouseEvent,
    QPainter,
    QPalette,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QApplication,
    QListWidget,
    QListWidgetItem,
    QStyle,
    QStyledItemDelegate,
    QStyleOptionViewItem,
)

from app.storage.history import MATCH_MARKS
from app.ui.conversation_folders import FOLDER_KEYS

__all__ = [
    "CONVERSATION_MIME",
    "FOLDER_ROLE",
    "KIND_ROLE",
    "PINNED",
    "PINNED_ROLE",
    "SNIPPET_ROLE",
    "ConversationLines",
    "fit_runs",
    "snippet_runs",
]

CONVERSATION_MIME = "application/x-callisto-conversation"  # conversations dragged in the list: their ids

PINNED = "Pinned"  # the header of the pinned conversations, first in the list
KIND_ROLE = Qt.ItemDataRole.UserRole + 1  # a header's kind: "header" (a group), "folder", "more" or "offer"
PINNED_ROLE = Qt.ItemDataRole.UserRole + 2
FOLDER_ROLE = Qt.ItemDataRole.UserRole + 3  # a conversation's folder; a folder header's name
SNIPPET_ROLE = Qt.ItemDataRole.UserRole + 4  # a search's result: the words around its match


def _small(font: QFont, *, bold: bool = False) -> QFont:
    small = QFont(font)
    small.setPointSizeF(max(7.0, font.pointSizeF() * 0.85))
    small.setBold(bold)
    return small


def snippet_runs(text: str) -> list[tuple[str, bool]]:
    """A search's words (``History.search_snippets``) as runs of (text, is a match)."""
    start, end = MATCH_MARKS
    runs: list[tuple[str, bool]] = []
    bold, part = False, list[str]()
    for ch in text + start:  # (the last mark flushes the last run)
        if ch in (start, end):
            if part:
                runs.append(("".join(part), bold))
            bold, part = ch == start, []
        else:
            part.append(ch)
    return runs


def fit_runs(
    runs: list[tuple[str, bool]], width: int, normal: QFontMetrics, bold: QFontMetrics
) -> list[tuple[str, bool]]:
    """``runs`` as they fit in ``width`` pixels: all of them where there is room; else the words
    before the first match are cut from the left ("…") so that the match starts within the first
    third of the line, and what does not fit at the right is cut with "…"."""

    def wide(text: str, is_match: bool) -> int:
        return (bold if is_match else normal).horizontalAdvance(text)

    if sum(wide(text, is_match) for text, is_match in runs) <= width:
        return list(runs)
    first = next((i for i, (_text, is_match) in enumerate(runs) if is_match), None)
    if first is not None:
        before = "".join(text for text, _m in runs[:first])
        if wide(before, False) > width // 3:
            kept = before
            while kept and wide("…" + kept, False) > width // 3:
                kept = kept[1:]
            runs = [("…" + kept.lstrip(), False), *runs[first:]]
    fitted: list[tuple[str, bool]] = []
    room = width
    for text, is_match in runs:
        if wide(text, is_match) <= room:
            fitted.append((text, is_match))
            room -= wide(text, is_match)
            continue
        cut = (bold if is_match else normal).elidedText(text, Qt.TextElideMode.ElideRight, room)
        if cut:
            fitted.append((cut, is_match))
        break
    return fitted


class _SnippetLines(QStyledItemDelegate):
    """A search's result is two lines: its title, and under it, smaller and paler, the words around
    the match, the match in bold and in view (:data:`SNIPPET_ROLE`, :func:`fit_runs`); any other
    line is drawn as usual."""

    def paint(
        self, painter: QPainter, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex
    ) -> None:
        snippet = index.data(SNIPPET_ROLE)
        if not snippet:
            super().paint(painter, option, index)
            return
        opt = QStyleOptionViewItem(option)
        self.initStyleOption(opt, index)
        title, opt.text = opt.text, ""
        widget = opt.widget  # type: ignore[attr-defined]
        style = widget.style() if widget is not None else QApplication.style()
        style.drawControl(QStyle.ControlElement.CE_ItemViewItem, opt, painter, widget)
        margin = style.pixelMetric(QStyle.PixelMetric.PM_FocusFrameHMargin, None, widget) + 1  # (Qt's own)
        rect = style.subElementRect(QStyle.SubElement.SE_ItemViewItemText, opt, widget).adjusted(
            margin, 0, -margin, 0
        )
        selected = bool(opt.state & QStyle.StateFlag.State_Selected)  # type: ignore[attr-defined]
        palette = opt.palette  # type: ignore[attr-defined]
        line = QFontMetrics(opt.font).lineSpacing()  # type: ignore[attr-defined]
        small = _small(opt.font)  # type: ignore[attr-defined]
        painter.save()
        painter.setPen(
            palette.color(QPalette.ColorRole.HighlightedText if selected else QPalette.ColorRole.Text)
        )
        painter.setFont(opt.font)  # type: ignore[attr-defined]
        head = QRect(rect.left(), rect.top() + 2, rect.width(), line)
        flags = int(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        painter.drawText(
            head, flags, QFontMetrics(opt.font).elidedText(title, Qt.TextElideMode.ElideRight, rect.width())
        )  # type: ignore[attr-defined]
        if not selected:
            painter.setPen(palette.color(QPalette.ColorRole.PlaceholderText))
        strong = _small(opt.font, bold=True)  # type: ignore[attr-defined]
        x, height = rect.left(), QFontMetrics(small).lineSpacing()
        for text, is_match in fit_runs(
            snippet_runs(str(snippet)), rect.width(), QFontMetrics(small), QFontMetrics(strong)
        ):
            font = strong if is_match else small
            painter.setFont(font)
            painter.drawText(QRect(x, head.bottom() + 1, rect.right() - x + 1, height), flags, text)
            x += QFontMetrics(font).horizontalAdvance(text)
        painter.restore()

    def sizeHint(self, option: QStyleOptionViewItem, index: QModelIndex | QPersistentModelIndex) -> QSize:
        size = super().sizeHint(option, index)
        if index.data(SNIPPET_ROLE):
            size.setHeight(size.height() + QFontMetrics(_small(option.font)).lineSpacing() + 4)  # type: ignore[attr-defined]
        return size


_NOT_A_TARGET = object()  # a drop there files the conversation nowhere new


def _drop_folder(item: QListWidgetItem | None) -> object:
    """The folder a conversation dropped on ``item`` goes in: a folder's line or a chat in it gives
    that folder, a day's line, a chat in none or the space below the list gives None (out of its
    folder); the pinned chats are no target (:data:`_NOT_A_TARGET`)."""
    if item is None:
        return None
    if item.data(KIND_ROLE) == "folder":
        return item.data(FOLDER_ROLE)
    if item.data(PINNED_ROLE) or (item.data(KIND_ROLE) == "header" and item.text() == PINNED):
        return _NOT_A_TARGET
    return item.data(FOLDER_ROLE) if item.data(Qt.ItemDataRole.UserRole) is not None else None


class ConversationLines(QListWidget):
    """Several lines may be selected (Ctrl+click, Shift+click); the Delete key deletes the selected
    conversations (after asking); conversations dragged onto a folder (its line or a chat in it)
    move there, onto the chats in no folder out of theirs. Files dragged from outside are the
    window's (``window_drops``)."""

    sig_delete_key = Signal()
    sig_undo_key = Signal()  # Ctrl+Z (⌘Z) in the list: the last deletion put back
    sig_unchoose_key = Signal()  # Esc with several chosen: back to the open chat alone
    sig_drop_folder = Signal(list, object)  # the conversations dropped: their ids, the folder (None: none)
    sig_open_key = Signal(int)  # Enter on a conversation: its id
    sig_folder_key = Signal(str, str)  # a key on a folder's line: its name, what (see FOLDER_KEYS)

    def __init__(self) -> None:
        super().__init__()
        self.setDragEnabled(True)
        self.setAcceptDrops(True)
        self.setDragDropMode(QAbstractItemView.DragDropMode.DragDrop)
        self.setDropIndicatorShown(True)
        # Ctrl+click and Shift+click (Shift+Up/Down) choose several, for Move, Export and Delete
        self.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.setItemDelegate(_SnippetLines(self))

    #: a click being handled was made with Ctrl or Shift held: it chooses lines, it opens nothing
    choosing = False

    def mouseReleaseEvent(self, e: QMouseEvent) -> None:  # noqa: N802 (Qt API)
        mods = e.modifiers()
        self.choosing = bool(mods & (Qt.KeyboardModifier.ControlModifier | Qt.KeyboardModifier.ShiftModifier))
        try:
            super().mouseReleaseEvent(e)  # (itemClicked, read by the list)
        finally:
            self.choosing = False

    def event(self, e: QEvent) -> bool:
        """Esc with several chats chosen is the list's (it leaves them), not the window's Stop."""
        if e.type() == QEvent.Type.ShortcutOverride and self._unchooses(e):  # type: ignore[arg-type]
            e.accept()
            return True
        return super().event(e)

    def _unchooses(self, e: QKeyEvent) -> bool:
        return e.key() == Qt.Key.Key_Escape and len(self.selectedItems()) > 1

    def keyPressEvent(self, e: QKeyEvent) -> None:  # noqa: N802 (Qt API)
        """As a tree's keys: on a folder's line Left folds, Right unfolds (then goes to its first
        chat), Enter or Space folds or unfolds, F2 renames; on a chat in a folder Left goes to the
        folder's line; Enter opens a chat; the Menu key (Shift+F10) opens the line's menu; Ctrl+Z
        (⌘Z) puts back the chats just deleted; Esc leaves several chosen (Ctrl+A: every chat)."""
        it, key = self.currentItem(), e.key()
        if e.matches(QKeySequence.StandardKey.Undo):
            self.sig_undo_key.emit()
            return
        if self._unchooses(e):
            self.sig_unchoose_key.emit()
            return
        if it is None:
            super().keyPressEvent(e)
            return
        shift = bool(e.modifiers() & Qt.KeyboardModifier.ShiftModifier)
        folder, cid = it.data(FOLDER_ROLE), it.data(Qt.ItemDataRole.UserRole)
        is_folder = it.data(KIND_ROLE) == "folder"
        if key == Qt.Key.Key_Menu or (key == Qt.Key.Key_F10 and shift):
            self.customContextMenuRequested.emit(self.visualItemRect(it).center())
        elif key in (Qt.Key.Key_Delete, Qt.Key.Key_Backspace):
            self.sig_delete_key.emit()
        elif is_folder and key in FOLDER_KEYS:
            self.sig_folder_key.emit(folder, FOLDER_KEYS[key])
        elif cid is not None and key in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            self.sig_open_key.emit(cid)
        elif cid is not None and key == Qt.Key.Key_Left and folder and not it.data(PINNED_ROLE):
            self.setCurrentItem(self.folder_line(folder))  # type: ignore[arg-type]  # (listed with it)
        else:
            super().keyPressEvent(e)

    def folder_line(self, name: str) -> QListWidgetItem | None:
        """The header line of the folder ``name``, when listed."""
        items = (self.item(i) for i in range(self.count()))
        return next(
            (it for it in items if it.data(KIND_ROLE) == "folder" and it.data(FOLDER_ROLE) == name), None
        )

    def item_for(self, cid: int) -> QListWidgetItem | None:
        """The line of conversation ``cid``, if listed."""
        items = (self.item(i) for i in range(self.count()))
        return next((it for it in items if it.data(Qt.ItemDataRole.UserRole) == cid), None)

    def mimeTypes(self) -> list[str]:  # noqa: N802 (Qt API)
        return [CONVERSATION_MIME]

    def mimeData(self, items) -> QMimeData:  # noqa: N802 (Qt API)
        ids = [
            str(it.data(Qt.ItemDataRole.UserRole))
            for it in items
            if it.data(Qt.ItemDataRole.UserRole) is not None
        ]
        data = QMimeData()
        data.setData(CONVERSATION_MIME, QByteArray(",".join(ids).encode("ascii")))
        return data

    def startDrag(self, actions) -> None:  # noqa: N802 (Qt API)
        """The drag of the selected conversations; the list is never changed by it (the history
        is, and the list is shown again from it)."""
        items = [it for it in self.selectedItems() if it.data(Qt.ItemDataRole.UserRole) is not None]
        if not items:
            return
        drag = QDrag(self)
        drag.setMimeData(self.mimeData(items))
        drag.exec(Qt.DropAction.MoveAction)

    def _dropped(self, e: QDropEvent) -> tuple[list[int], object] | None:
        """The conversations a drag holds that a drop at its place would file in another folder,
        and that folder; None when it would move none."""
        mime = e.mimeData()
        if mime is None or not mime.hasFormat(CONVERSATION_MIME):
            return None
        try:
            ids = [
                int(part) for part in bytes(mime.data(CONVERSATION_MIME).data()).decode("ascii").split(",")
            ]
        except (ValueError, UnicodeDecodeError):
            return None
        folder = _drop_folder(self.itemAt(e.position().toPoint()))
        if folder is _NOT_A_TARGET:
            return None
        sources = ((cid, self.item_for(cid)) for cid in ids)
        moved = [cid for cid, it in sources if it is not None and it.data(FOLDER_ROLE) != folder]
        return (moved, folder) if moved else None

    def dragEnterEvent(self, e: QDragEnterEvent) -> None:  # noqa: N802 (Qt API)
        mime = e.mimeData()
        if mime is None or not mime.hasFormat(CONVERSATION_MIME):
            e.ignore()  # files from outside: the window's
            return
        e.acceptProposedAction()

    def dragMoveEvent(self, e: QDragMoveEvent) -> None:  # noqa: N802 (Qt API)
        if self._dropped(e) is None:
            e.ignore()
            return
        super().dragMoveEvent(e)  # (the drop indicator)
        e.acceptProposedAction()

    def dropEvent(self, e: QDropEvent) -> None:  # noqa: N802 (Qt API)
        found = self._dropped(e)
        if found is None:
            e.ignore()
            return
        e.setDropAction(Qt.DropAction.CopyAction)  # (nothing for the drag to take away)
        e.accept()
        ids, folder = found
        self.sig_drop_folder.emit(list(ids), folder)
