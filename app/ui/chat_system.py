"""A conversation's own system prompt in the window: the line above the chat that says which system
prompt the chat uses (its own, or the one in Settings or the made model's), and the dialog that
edits it. The conversations controller (``app.ui.window_conversations``) keeps it in history and
hands it to the worker."""

from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QDialog,
    QDialogButtonBox,
    QFrame,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.ui.labels import line_with_action

__all__ = ["SystemPromptBar", "SystemPromptDialog", "system_line"]

#: how much of a chat's own prompt the line shows (the tooltip has all of it)
SHOWN_CHARS = 90


def system_line(own: str | None) -> str:
    """The line's words: the chat's own prompt on one line, cut; or where the prompt comes from."""
    if not own:
        return "System prompt: the one in Settings (or the made model's)"
    one = " ".join(own.split())
    return f"System prompt (this chat): “{one if len(one) <= SHOWN_CHARS else one[: SHOWN_CHARS - 1] + '…'}”"


class SystemPromptBar(QFrame):
    """The line above the chat, with Edit… (``sig_edit``)."""

    sig_edit = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chatSystemBar")
        self.label, self.edit_button = line_with_action(self, top=4)
        self.edit_button.setText("Edit…")
        self.edit_button.setToolTip("Give this chat its own system prompt, or go back to the one in Settings")
        self.edit_button.clicked.connect(self.sig_edit.emit)
        self.own: str | None = None
        self.show_prompt(None)

    def show_prompt(self, own: str | None) -> None:
        self.own = own or None
        self.label.setText(system_line(self.own))
        self.label.setToolTip(
            self.own or "This chat uses the system prompt in Settings → Chat, or the made model's."
        )


class SystemPromptDialog(QDialog):
    """Edit a chat's own system prompt: Save keeps what is written (nothing written: the one in
    Settings), *Use the one in Settings* clears it. ``sig_chosen`` gives the text, or None."""

    sig_chosen = Signal(object)

    def __init__(self, own: str | None, in_use: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chatSystemDialog")
        self.setWindowTitle("This chat's system prompt")
        self.resize(520, 320)
        lay = QVBoxLayout(self)
        note = QLabel(
            "What the model is told before this chat, in place of the system prompt in Settings "
            "(or a made model's) for this chat only."
        )
        note.setWordWrap(True)
        lay.addWidget(note)
        self.text = QPlainTextEdit()
        self.text.setPlainText(own or "")
        self.text.setPlaceholderText(in_use or "(no system prompt)")  # what the chat uses now
        lay.addWidget(self.text, 1)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        self.use_settings = QPushButton("Use the one in Settings")
        buttons.addButton(self.use_settings, QDialogButtonBox.ButtonRole.ResetRole)
        self.use_settings.clicked.connect(lambda: self._choose(None))
        buttons.accepted.connect(lambda: self._choose(self.text.toPlainText()))
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)

    def _choose(self, text: str | None) -> None:
        self.sig_chosen.emit(text if text and text.strip() else None)
        self.accept()
