"""The small parts of a conversation's messages: the person's message (its images as thumbnails,
copy, edit and resend), the Thinking block of a reply, and the small action buttons both kinds of message show."""

from __future__ import annotations

import time
from collections.abc import Sequence
from datetime import datetime

from PySide6.QtCore import Qt, QTimer, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.ui.chat.attachments import ImageStrip
from app.ui.chat.compose import EditBox
from app.ui.chat.markdown import MarkdownView, PlainView
from app.ui.chat.turn_settings import TurnSettings

__all__ = [
    "COPIED_MS",
    "FOLD_LINES",
    "FOLDED_LINES",
    "ThinkingBlock",
    "UserMessage",
    "copy_with_feedback",
    "small_button",
    "when_text",
]

#: a message of the person's taller than this many lines is folded (a pasted document, a log)...
FOLD_LINES = 24
#: ...to its first this many lines, with "Show all" under it
FOLDED_LINES = 12


class ThinkingBlock(QFrame):
    """The model's reasoning, collapsed by default behind a "Thinking" toggle (Find in chat still
    searches it, and opens it for a match inside)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("thinking")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 2, 6, 2)
        self.toggle = QToolButton()
        self.toggle.setObjectName("thinkingToggle")
        self.toggle.setText("Thinking")
        self.toggle.setCheckable(True)
        self.toggle.setChecked(False)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setArrowType(Qt.ArrowType.RightArrow)
        self.toggle.toggled.connect(self._on_toggle_toggled)
        lay.addWidget(self.toggle)
        self.body = PlainView("thinkingBody")
        self.body.fold_owner = self
        self.body.unfold = lambda: self.toggle.setChecked(True)
        lay.addWidget(self.body)
        self.text = ""  # the reasoning so far (the body shows it from the next render)

    def set_text(self, text: str) -> None:
        """The reasoning so far: shown at the next :meth:`render_text` (the reply's paced rendering), or
        at once when the block is opened."""
        self.text = text

    def render_text(self) -> None:
        self.body.set_text(self.text)  # folded too: Find in chat searches it

    def _on_toggle_toggled(self, on: bool) -> None:
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)
        if on:
            self.render_text()
        self.body.setVisible(on)


def when_text(timestamp: float) -> str:
    """A message's time as its head's tooltip says it: "5 Dec 2026, 14:03" (the computer's time zone)."""
    return datetime.fromtimestamp(timestamp).strftime("%d %b %Y, %H:%M").lstrip("0")


def small_button(text: str, tip: str) -> QToolButton:
    b = QToolButton()
    b.setObjectName("msgAction")
    b.setText(text)
    b.setToolTip(tip)
    b.setAutoRaise(True)
    b.setFocusPolicy(Qt.FocusPolicy.ClickFocus)  # Tab goes compose -> send -> lists, not every message button
    return b


COPIED_MS = 1500


def copy_with_feedback(button: QToolButton, text: str) -> None:
    """Put ``text`` on the clipboard and say "Copied ✓" on the button for a moment."""
    QGuiApplication.clipboard().setText(text)
    label = button.property("idleText") or button.text()
    button.setProperty("idleText", label)
    button.setText("Copied ✓")
    QTimer.singleShot(COPIED_MS, button, lambda: button.setText(label))


class UserMessage(QFrame):
    """A user message: its images (thumbnails; a click opens one larger), copy, and edit-and-resend
    (the edited message keeps the images). A long one (a pasted document or log) is folded to its
    first lines with "Show all" under it, so that the conversation around it stays readable; Copy,
    Edit and Find in chat always have the whole text (Find opens the fold of a match in it)."""

    sig_edit_resend = Signal(object, str)  # (self, new text)
    sig_edit_requested = Signal(object)  # self: the view starts the edit, saying what it discards
    sig_edit_ended = Signal()  # the edit was sent or cancelled

    def __init__(self, text: str, parent: QWidget | None = None, images: Sequence[bytes] = ()) -> None:
        super().__init__(parent)
        self.setObjectName("userMessage")
        self.role = "user"
        self.text = text
        self.images = list(images)  # the image files' bytes, as sent
        # the settings its turn was sent with: what Regenerate and Continue send again (U3)
        self.turn_settings = TurnSettings()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(12, 8, 12, 8)
        head = QHBoxLayout()
        self.who = QLabel("You")
        self.who.setObjectName("roleLabel")
        self.set_time(time.time())
        head.addWidget(self.who)
        head.addStretch(1)
        self.btn_copy = small_button("Copy", "Copy this message")
        self.btn_copy.clicked.connect(lambda: copy_with_feedback(self.btn_copy, self.text))
        self.btn_edit = small_button("Edit", "Edit this message and send it again")
        self.btn_edit.clicked.connect(lambda: self.sig_edit_requested.emit(self))
        head.addWidget(self.btn_copy)
        head.addWidget(self.btn_edit)
        lay.addLayout(head)
        self.image_strip = ImageStrip(self.images)
        lay.addWidget(self.image_strip)
        self.view = MarkdownView()
        self._folded = True  # (a long message starts folded; a short one is never cut)
        self.fold = small_button("Show all", "Show the whole message")
        self.fold.setObjectName("foldToggle")
        self.fold.setVisible(False)
        self.fold.clicked.connect(self._on_fold_clicked)
        self.view.uncap = self.unfold
        self.view.set_markdown_text(text)
        lay.addWidget(self.view)
        lay.addWidget(self.fold, 0, Qt.AlignmentFlag.AlignLeft)
        self.view.setVisible(bool(text))  # a message of images alone shows no empty text
        self.editor = EditBox()
        self.editor.setVisible(False)
        self.editor.sig_submit.connect(self._on_resend_clicked)
        self.editor.sig_cancel.connect(self.cancel_edit)
        lay.addWidget(self.editor)
        self.discard_note = QLabel("")
        self.discard_note.setObjectName("msgStats")
        self.discard_note.setWordWrap(True)
        self.discard_note.setVisible(False)
        lay.addWidget(self.discard_note)
        row = QHBoxLayout()
        self.btn_resend = QPushButton("Send")
        self.btn_cancel_edit = QPushButton("Cancel")
        self.btn_resend.clicked.connect(self._on_resend_clicked)
        self.btn_cancel_edit.clicked.connect(self.cancel_edit)
        row.addStretch(1)
        row.addWidget(self.btn_cancel_edit)
        row.addWidget(self.btn_resend)
        self.edit_row = QWidget()
        self.edit_row.setLayout(row)
        self.edit_row.setVisible(False)
        lay.addWidget(self.edit_row)
        self.view.on_fit = self._update_fold  # (each fit from now on: the message is built)
        self._update_fold()

    @property
    def long(self) -> bool:
        """Whether the message is tall enough to fold (:data:`FOLD_LINES`)."""
        return self.view.content_height > FOLD_LINES * self.view.fontMetrics().lineSpacing()

    @property
    def folded(self) -> bool:
        """Whether only the start of the message shows."""
        return self.view.cap is not None

    def _update_fold(self) -> None:
        """Fold or unfold the view to what the message's height and the person's choice say."""
        long = self.long
        line = self.view.fontMetrics().lineSpacing()
        cap = FOLDED_LINES * line + 4 if long and self._folded else None
        self.fold.setVisible(long and not self.editing)
        more = max(1, round((self.view.content_height - FOLDED_LINES * line - 4) / line))
        self.fold.setText(f"Show all ({more} more lines)" if self._folded else "Show less")
        self.fold.setToolTip("Show the whole message" if self._folded else "Fold the message to its start")
        if cap != self.view.cap:
            self.view.cap = cap
            self.view._fit()  # (it calls back here: the cap is then what it should be)

    def _on_fold_clicked(self) -> None:
        self._folded = not self._folded
        self._update_fold()

    def unfold(self) -> None:
        """Show the whole message."""
        if self._folded:
            self._folded = False
            self._update_fold()

    def start_edit(self, later_messages: int = 0) -> None:
        """Edit in place; ``later_messages``: how many messages after this one sending it discards."""
        self.editor.setPlainText(self.text)
        self.view.setVisible(False)
        self.fold.setVisible(False)
        self.editor.setVisible(True)
        self.edit_row.setVisible(True)
        self.discard_note.setText(
            f"Sending replaces the reply and discards the {later_messages} later message(s) of this chat."
            if later_messages
            else ""
        )
        self.discard_note.setVisible(bool(later_messages))
        self.editor.setFocus()

    @property
    def editing(self) -> bool:
        return self.editor.isVisibleTo(self)

    def cancel_edit(self) -> None:
        was_editing = self.editing
        self.view.setVisible(bool(self.text))
        self.editor.setVisible(False)
        self.fold.setVisible(self.long)
        self.edit_row.setVisible(False)
        self.discard_note.setVisible(False)
        if was_editing:
            self.sig_edit_ended.emit()

    def _on_resend_clicked(self) -> None:
        new = self.editor.toPlainText().strip()
        if not new:
            return
        self.cancel_edit()
        self.sig_edit_resend.emit(self, new)

    def set_time(self, timestamp: float) -> None:
        """When it was sent (its head's tooltip)."""
        self.who.setToolTip(f"Sent {when_text(timestamp)}")

    def set_actions_enabled(self, on: bool) -> None:
        self.btn_edit.setEnabled(on)
