"""Labels (and the side panels' layout) the window sets up the same way in many places."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

__all__ = ["plain_text_label", "side_panel_layout", "wrapped_label"]


def wrapped_label(text: str = "") -> QLabel:
    """A label whose text wraps to the width it is given (a page's or a dialog's introduction)."""
    label = QLabel(text)
    label.setWordWrap(True)
    return label


def plain_text_label(object_name: str) -> QLabel:
    """A wrapping label of plain text the user may select (a reasoning block, a tool card's body
    or raw text), hidden until there is something to show."""
    label = QLabel()
    label.setObjectName(object_name)
    label.setWordWrap(True)
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    label.setVisible(False)
    return label


def side_panel_layout(panel: QWidget, object_name: str) -> QVBoxLayout:
    """A side panel's (the conversation list's, the tool-call panel's) name and its column of parts,
    inside a small margin."""
    panel.setObjectName(object_name)
    lay = QVBoxLayout(panel)
    lay.setContentsMargins(6, 6, 6, 6)
    return lay
