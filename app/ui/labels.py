"""Labels (and the side panels' layout) the window sets up the same way in many places."""

from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QResizeEvent
from PySide6.QtWidgets import QHBoxLayout, QLabel, QToolButton, QVBoxLayout, QWidget

__all__ = ["FormNote", "chats_said", "line_with_action", "side_panel_layout", "wrapped_label"]


def chats_said(titles: list[str]) -> str:
    """Chats named in the status bar: one by its title in quotes, several by how many."""
    return f"“{titles[0]}”" if len(titles) == 1 else f"{len(titles)} chats"


def line_with_action(frame: QWidget, *, top: int = 0) -> tuple[QLabel, QToolButton]:
    """The one-line rows above the chat (its system prompt, the model it was with): small words
    that a narrow window cuts, never the action button on the right."""
    row = QHBoxLayout(frame)
    row.setContentsMargins(12, top, 12, 0)
    label = QLabel()
    label.setObjectName("msgStats")
    label.setMinimumWidth(1)
    label.setTextFormat(Qt.TextFormat.PlainText)
    row.addWidget(label, 1)
    button = QToolButton()
    button.setObjectName("msgAction")
    button.setAutoRaise(True)
    row.addWidget(button)
    return label, button


def wrapped_label(text: str = "") -> QLabel:
    """A label whose text wraps to the width it is given (a page's or a dialog's introduction)."""
    label = QLabel(text)
    label.setWordWrap(True)
    return label


class FormNote(QLabel):
    """A wrapped note in a form's row (``form.addRow("", FormNote(text))``): once laid out, its size
    hints are as tall as its text at the width it was given. QFormLayout sizes a row without a
    label by its field's size hint, not by height-for-width, and a wrapped QLabel's size hint is
    its text at a narrow guessed width: the row came out lines taller than the text, an empty band
    around it. Until the note has a width its hints are QLabel's."""

    def __init__(self, text: str = "", parent: QWidget | None = None) -> None:
        super().__init__(text, parent)
        self.setWordWrap(True)
        self._laid_out = False

    def _fitted(self, hint: QSize) -> QSize:
        return QSize(hint.width(), self.heightForWidth(self.width())) if self._laid_out else hint

    def sizeHint(self) -> QSize:
        return self._fitted(super().sizeHint())

    def minimumSizeHint(self) -> QSize:
        return self._fitted(super().minimumSizeHint())

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        if event.size().width() != event.oldSize().width() or not self._laid_out:
            self._laid_out = True
            self.updateGeometry()  # the height for this width: the layout asks again


def side_panel_layout(panel: QWidget, object_name: str) -> QVBoxLayout:
    """A side panel's (the conversation list's, the tool-call panel's) name and its column of parts,
    inside a small margin."""
    panel.setObjectName(object_name)
    lay = QVBoxLayout(panel)
    lay.setContentsMargins(6, 6, 6, 6)
    return lay
