"""How the chat view follows the latest message: it keeps to the bottom as messages and the reply
being written grow, stays where the person scrolled to otherwise, and then shows "↓ Latest" over
its bottom edge (one click, or Ctrl+End in the chat, goes back down and follows again). A search
(``find``) brings a place into view and holds the view there."""

from __future__ import annotations

from PySide6.QtCore import QEvent, QObject, Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QScrollArea, QToolButton

__all__ = ["FollowLatest"]


class FollowLatest(QObject):
    """The following of ``view``'s latest message, and its "↓ Latest" button (``button``)."""

    sig_scrolled_by_hand = Signal()  # the person scrolled (wheel, keys, scroll bar, ↓ Latest)

    def __init__(self, view: QScrollArea) -> None:
        super().__init__(view)
        self.view = view
        self.following = True  # at the latest message, keeping to it as the chat grows
        self.button = b = QToolButton(view)
        b.setObjectName("jumpToLatest")
        b.setText("↓  Latest")
        b.setToolTip("Go to the latest message (Ctrl+End in the chat)")
        b.setCursor(Qt.CursorShape.PointingHandCursor)
        b.setFocusPolicy(Qt.FocusPolicy.NoFocus)  # the message box keeps the focus
        b.clicked.connect(self.scroll_to_latest)
        b.hide()
        bar = view.verticalScrollBar()
        bar.rangeChanged.connect(self._on_range_changed)
        bar.valueChanged.connect(self._on_value_changed)
        bar.actionTriggered.connect(lambda _action: self.sig_scrolled_by_hand.emit())
        view.installEventFilter(self)

    def _on_range_changed(self, _lo: int, hi: int) -> None:
        if self.following:
            self.view.verticalScrollBar().setValue(hi)
        self._update_button()

    def _on_value_changed(self, v: int) -> None:
        self.following = v >= self.view.verticalScrollBar().maximum() - 8
        self._update_button()

    def scroll_to_latest(self) -> None:
        """Down to the latest message, following the reply being written from there."""
        self.sig_scrolled_by_hand.emit()
        self.following = True
        bar = self.view.verticalScrollBar()
        bar.setValue(bar.maximum())
        self._update_button()

    def show_place(self, x: int, y: int, margin_y: int) -> None:
        """Bring the point (``x``, ``y``) of the messages into view, ``margin_y`` from the edges; the
        view then stays there (it no longer follows the latest message)."""
        self.following = False
        self.view.ensureVisible(x, y, 40, margin_y)
        self.following = False  # (even when that point is at the end)
        self._update_button()

    def _update_button(self) -> None:
        show = not self.following and self.view.verticalScrollBar().maximum() > 0
        if show:
            self._place_button()
            self.button.raise_()
        self.button.setVisible(show)

    def _place_button(self) -> None:
        b, vp = self.button, self.view.viewport().geometry()
        b.adjustSize()
        b.move(vp.x() + (vp.width() - b.width()) // 2, vp.y() + vp.height() - b.height() - 12)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.Resize and self.button.isVisible():
            self._place_button()
        elif (
            isinstance(event, QKeyEvent)
            and event.type() == QEvent.Type.KeyPress
            and event.key() == Qt.Key.Key_End
            and event.modifiers() == Qt.KeyboardModifier.ControlModifier
        ):
            self.scroll_to_latest()
            return True
        return super().eventFilter(obj, event)
