"""Labels (and the side panels' layout) the window sets up the same way in many places, and the
combo box that cuts its current item the way an elided label does."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QSize, Qt
from PySide6.QtGui import QFontMetrics, QPaintEvent, QResizeEvent
from PySide6.QtWidgets import (
    QComboBox,
    QHBoxLayout,
    QLabel,
    QStyle,
    QStyleOptionComboBox,
    QStylePainter,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

__all__ = [
    "ElidedComboBox",
    "ElidedLabel",
    "FormNote",
    "chats_said",
    "line_with_action",
    "side_panel_layout",
    "wrapped_label",
]


def chats_said(titles: list[str]) -> str:
    """Chats named in the status bar: one by its title in quotes, several by how many."""
    return f"“{titles[0]}”" if len(titles) == 1 else f"{len(titles)} chats"


def line_with_action(frame: QWidget, *, top: int = 0) -> tuple[QLabel, QToolButton]:
    """The one-line rows above the chat (its system prompt, the model it was with): small words
    that a narrow window cuts ("…"), never the action button on the right."""
    row = QHBoxLayout(frame)
    row.setContentsMargins(12, top, 12, 0)
    label = ElidedLabel(fills=True)
    label.setObjectName("msgStats")
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


class ElidedLabel(QLabel):
    """One line of plain text that a narrow row cuts with "…" at its end instead of mid-letter
    (``text()`` is still the whole text); it may shrink to nothing, so a row's buttons stay. It
    asks for its whole width, or with ``fills`` for none: such a label takes what the row has
    left (add it with a stretch), so the labels that ask keep their text longer (a reply's head
    keeps the model's name and cuts its status)."""

    def __init__(self, text: str = "", parent: QWidget | None = None, *, fills: bool = False) -> None:
        super().__init__(parent)
        self.setTextFormat(Qt.TextFormat.PlainText)
        self.setMinimumWidth(1)
        self._full = ""
        self._tip = ""  # a tooltip set for the label; else a cut text's tooltip is the whole text
        self._fills = fills
        self.setText(text)

    def setToolTip(self, tip: str) -> None:
        self._tip = tip
        self._fit()

    def text(self) -> str:  # the whole text, not the cut one shown
        return self._full

    def setText(self, text: str) -> None:
        self._full = text
        self._fit()
        self.updateGeometry()

    def _width(self, text: str) -> int:
        self.ensurePolished()  # the style sheet's font (a status in italics) is the one drawn
        margins = self.contentsMargins()
        return QFontMetrics(self.font()).horizontalAdvance(text) + margins.left() + margins.right() + 2

    def sizeHint(self) -> QSize:
        hint = super().sizeHint()
        return QSize(1 if self._fills else self._width(self._full), hint.height())

    def _fit(self) -> None:
        shown = self._full
        if self._width(shown) > self.width():
            room = max(self.contentsRect().width(), 0)
            shown = QFontMetrics(self.font()).elidedText(shown, Qt.TextElideMode.ElideRight, room)
        super().setText(shown)
        cut = shown != self._full
        super().setToolTip(self._tip or (self._full if cut else ""))
        self.setAccessibleName(self._full if cut else "")  # a screen reader reads the whole text

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._fit()

    def changeEvent(self, event: QEvent) -> None:
        super().changeEvent(event)
        if event.type() in (QEvent.Type.FontChange, QEvent.Type.StyleChange):  # text size, theme
            self.setText(self._full)


class ElidedComboBox(QComboBox):
    """A combo box that cuts a current item too long for it in the middle, with "…", where Qt
    clips its end: a model's name keeps its start and its end (the quantization, "(remote)")."""

    def _option(self) -> QStyleOptionComboBox:
        opt = QStyleOptionComboBox()
        self.initStyleOption(opt)
        return opt

    def _elided(self, opt: QStyleOptionComboBox) -> str:
        room = self.style().subControlRect(
            QStyle.ComplexControl.CC_ComboBox, opt, QStyle.SubControl.SC_ComboBoxEditField, self
        )
        return self.fontMetrics().elidedText(opt.currentText, Qt.TextElideMode.ElideMiddle, room.width())

    def shown_text(self) -> str:
        """The current item's text as drawn at the box's width."""
        return self._elided(self._option())

    def paintEvent(self, event: QPaintEvent) -> None:
        painter = QStylePainter(self)
        opt = self._option()  # one style option for the frame and the label
        painter.drawComplexControl(QStyle.ComplexControl.CC_ComboBox, opt)
        opt.currentText = self._elided(opt)
        painter.drawControl(QStyle.ControlElement.CE_ComboBoxLabel, opt)


def side_panel_layout(panel: QWidget, object_name: str) -> QVBoxLayout:
    """A side panel's (the conversation list's, the tool-call panel's) name and its column of parts,
    inside a small margin."""
    panel.setObjectName(object_name)
    lay = QVBoxLayout(panel)
    lay.setContentsMargins(6, 6, 6, 6)
    return lay
