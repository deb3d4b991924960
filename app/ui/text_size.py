"""The chat's text size (Settings → Appearance → Chat text size, View → Larger / Smaller text,
Ctrl+wheel over the chat): the messages and the message box drawn at a percentage of the system's
font size."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtGui import QFont, QWheelEvent
from PySide6.QtWidgets import QApplication, QWidget

from app.ui.window_part import WindowKit, WindowPart

__all__ = ["DEFAULT_SCALE", "TEXT_SCALES", "TextSize", "scale_choices", "scaled_font", "step_scale"]

#: the sizes the View menu steps through and Settings offers, in percent
TEXT_SCALES = (80, 90, 100, 115, 130, 150, 175, 200)
DEFAULT_SCALE = 100


def step_scale(current: int, delta: int) -> int:
    """The size one step larger (``delta`` 1) or smaller (-1) than ``current``, within the steps
    (a size between two steps goes to the next one that way); ``delta`` 0: the default."""
    if delta == 0:
        return DEFAULT_SCALE
    if delta > 0:
        return next((s for s in TEXT_SCALES if s > current), max(TEXT_SCALES[-1], min(current, 300)))
    return next((s for s in reversed(TEXT_SCALES) if s < current), min(TEXT_SCALES[0], max(current, 50)))


def scale_choices(current: int) -> list[tuple[int, str]]:
    """(size, label) for Settings' box: the steps, and ``current`` where it is none of them."""
    sizes = sorted({*TEXT_SCALES, current})
    return [(s, f"{s}%" + (" (default)" if s == DEFAULT_SCALE else "")) for s in sizes]


def scaled_font(scale: int) -> QFont:
    """The application's font at ``scale`` percent of its size."""
    font = QFont(QApplication.font())
    if font.pointSizeF() > 0:
        font.setPointSizeF(font.pointSizeF() * scale / 100)
    elif font.pixelSize() > 0:
        font.setPixelSize(max(1, round(font.pixelSize() * scale / 100)))
    return font


class TextSize(WindowPart):
    """Draws ``targets`` (the chat's messages, the message box) at the size the settings say, at
    once when they change; the View menu's Larger / Smaller / Actual text size step it."""

    def __init__(self, kit: WindowKit, *, targets: Sequence[QWidget], wheel: QWidget | None = None) -> None:
        super().__init__(kit)
        self.targets = list(targets)
        self.scale: int | None = None
        self._wheel = 0  # Ctrl+wheel turned this far (in eighths of a degree) since its last step
        if wheel is not None:  # Ctrl+wheel over it steps the size, as in a browser
            wheel.installEventFilter(self)
        self.state.store.subscribe(lambda _sections: self.apply())
        self.apply()

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if isinstance(event, QWheelEvent) and event.modifiers() == Qt.KeyboardModifier.ControlModifier:
            self._wheel += event.angleDelta().y()
            while abs(self._wheel) >= 120:  # one notch of a mouse wheel (a touchpad sends less, often)
                self.step(1 if self._wheel > 0 else -1)
                self._wheel -= 120 if self._wheel > 0 else -120
            return True  # (the chat does not scroll while the size changes)
        return super().eventFilter(obj, event)

    def apply(self) -> None:
        scale = self.state.settings.window.text_scale
        if scale != self.scale:
            self.scale = scale
            font = scaled_font(scale)
            for widget in self.targets:
                widget.setFont(font)  # (children take it: the messages shown and those to come)

    def step(self, delta: int) -> int:
        """Larger text (``delta`` 1), smaller (-1), the usual size (0): saved, and shown at once;
        the status bar says the size. Returns it."""
        scale = step_scale(self.state.settings.window.text_scale, delta)
        if scale != self.state.settings.window.text_scale:
            self.state.settings.window.text_scale = scale
            self.save_settings()  # the store tells every part: apply
        self.window.statusBar().showMessage(f"Chat text size: {scale}%", 3000)
        return scale
