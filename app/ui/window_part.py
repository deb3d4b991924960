"""The base of the window's controllers: a child of the window that reads the state the parts
share (:class:`~app.ui.window_state.WindowState`) and talks to the engine worker."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMainWindow

    from app.ui.window_state import WindowState
    from app.ui.worker import EngineWorker

__all__ = ["WindowPart"]


class WindowPart(QObject):
    """A controller of the window; whatever else it needs comes in its own constructor."""

    def __init__(self, window: QMainWindow, state: WindowState, worker: EngineWorker) -> None:
        super().__init__(window)
        self.window = window
        self.state = state
        self.worker = worker
