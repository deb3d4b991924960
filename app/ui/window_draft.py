"""The message being written, counted in the context meter (a part of the main window): a moment
after the typing stops (or a file is attached or taken off), the worker measures the prompt the
message would make (``EngineWorker.measure_draft``) and the meter shows it, its tooltip saying the
message's share; when the engine is busy the meter keeps what it showed. So a person sees whether a
long paste fits before sending it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QTimer

from app.ui.window_part import WindowKit, WindowPart

if TYPE_CHECKING:
    from app.ui.window_chat_page import ChatPage
    from app.ui.window_files import FilesController

__all__ = ["DraftMeter"]

#: how long after the last key the message is measured (it is rendered and tokenized whole)
DELAY_MS = 400


class DraftMeter(WindowPart):
    """Counts the compose box's text and the attached files in the context meter."""

    def __init__(self, kit: WindowKit, *, page: ChatPage, files: FilesController) -> None:
        super().__init__(kit)
        self.compose, self.files = page.compose, files
        self.timer = QTimer(self)
        self.timer.setSingleShot(True)
        self.timer.setInterval(DELAY_MS)
        self.timer.timeout.connect(self.measure)
        self.compose.textChanged.connect(self.timer.start)
        self.files.pending.sig_changed.connect(self.timer.start)
        # a turn ended, or another model or session: measured again when something is being written
        self.worker.sig_done.connect(lambda _ev: self._again())
        self.worker.sig_loaded.connect(lambda _info: self._again())

    def message(self) -> str:
        """The message Send would send now: the text, and the attached files' text after it."""
        return self.files.message(self.compose.toPlainText().strip())

    def _again(self) -> None:
        if self.message():
            self.timer.start()

    def measure(self) -> bool:
        """Hand the message to the worker to be counted; False when the engine is not free now."""
        return not self.state.shut and self.worker.measure_draft(self.message())
