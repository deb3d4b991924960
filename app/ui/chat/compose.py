"""The message box (Enter sends, Shift+Enter inserts a new line; an image pasted or dropped on it is
attached to the message, other files are handed to the window) and the box that edits a sent message."""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QMimeData, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QPlainTextEdit, QWidget

from app.ui.chat.attachments import mime_has_images

__all__ = ["ComposeEdit", "EditBox"]


class ComposeEdit(QPlainTextEdit):
    """The message box: Enter sends, Shift+Enter inserts a new line. An image pasted or dropped
    on it (image data, or image files) is not inserted as text: ``sig_images`` hands its mime data
    to whoever attaches images (when ``takes_images``)."""

    sig_submit = Signal()
    sig_images = Signal(object)  # QMimeData holding an image or image files (read it at once)
    sig_files = Signal(object)  # QMimeData holding files the window takes (``takes_files``; read it at once)
    sig_edit_last = Signal()  # Up in the empty box (with ``up_edits_last``): edit the last message

    def __init__(
        self,
        parent: QWidget | None = None,
        *,
        name: str = "compose",
        placeholder: str = "Message the model…  (Enter sends, Shift+Enter new line)",
        height: int = 76,
    ) -> None:
        super().__init__(parent)
        self.setObjectName(name)
        self.setPlaceholderText(placeholder)
        self.setTabChangesFocus(True)
        self.setFixedHeight(height)
        self.takes_images = False  # set by the window: the message box attaches images
        self.up_edits_last = False  # set by the window: Up in the empty box edits the last message
        #: which pastes and drops hold files the window takes (models, chats, text to attach): set
        #: by the window; such mime data is not text to insert here, ``sig_files`` hands it over
        self.takes_files: Callable[[QMimeData], bool] | None = None

    def _files(self, source: QMimeData) -> bool:
        return self.takes_files is not None and self.takes_files(source)

    def canInsertFromMimeData(self, source: QMimeData) -> bool:  # noqa: N802 (Qt API)
        return (
            self._files(source)
            or (self.takes_images and mime_has_images(source))
            or super().canInsertFromMimeData(source)
        )

    def insertFromMimeData(self, source: QMimeData) -> None:  # noqa: N802 (Qt API)
        if self._files(source):  # (with its images, if any)
            self.sig_files.emit(source)
            return
        if self.takes_images and mime_has_images(source):
            self.sig_images.emit(source)
            return
        super().insertFromMimeData(source)

    #: the window's shortcuts a text box would otherwise take (Ctrl+K deletes to the end of the line)
    WINDOW_KEYS = (Qt.Key.Key_K, Qt.Key.Key_N, Qt.Key.Key_Q, Qt.Key.Key_T, Qt.Key.Key_B)

    def event(self, e) -> bool:
        if (
            e.type() == e.Type.ShortcutOverride
            and e.modifiers() == Qt.KeyboardModifier.ControlModifier
            and e.key() in self.WINDOW_KEYS
        ):
            e.ignore()  # the window's shortcut runs
            return True
        return super().event(e)

    def keyPressEvent(self, e: QKeyEvent) -> None:  # noqa: N802 (Qt API)
        if e.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            if e.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                self.insertPlainText("\n")
                return
            if not (e.modifiers() & Qt.KeyboardModifier.AltModifier):  # Enter or Ctrl+Enter
                self.sig_submit.emit()
                return
        if (
            self.up_edits_last
            and e.key() == Qt.Key.Key_Up
            and e.modifiers() == Qt.KeyboardModifier.NoModifier
            and not self.toPlainText()
        ):
            self.sig_edit_last.emit()
            return
        super().keyPressEvent(e)


class EditBox(ComposeEdit):
    """Editing a sent message: as the compose box (Enter sends, Shift+Enter new line), and Esc cancels."""

    sig_cancel = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent, name="editBox", placeholder="", height=90)

    def event(self, e) -> bool:
        # Esc belongs to this box while it has the focus (the window's Esc stops a reply)
        if e.type() == e.Type.ShortcutOverride and e.key() == Qt.Key.Key_Escape:
            e.accept()
            return True
        return super().event(e)

    def keyPressEvent(self, e: QKeyEvent) -> None:  # noqa: N802 (Qt API)
        if e.key() == Qt.Key.Key_Escape:
            self.sig_cancel.emit()
            return
        super().keyPressEvent(e)
