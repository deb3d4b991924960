"""The pace of the chat view's rendering: a streaming reply's text is rendered by a throttled timer
whose interval grows with the cost of the previous render, and the common code lexers are warmed
one at a time while nothing streams (see :mod:`app.ui.chat.markdown`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from PySide6.QtCore import QObject, QTimer

from app.ui.markdown_render import WARM_LANGUAGES, is_warm, warm_up
from app.ui.theme import is_dark

if TYPE_CHECKING:
    from collections.abc import Callable

    from app.ui.chat.messages import AssistantMessage

__all__ = ["RenderPacer"]


class RenderPacer(QObject):
    """Renders what changed in the reply ``current()`` gives, at most every ``interval`` ms, and
    warms the lexers while no reply streams."""

    MIN_INTERVAL_MS = 40
    MAX_INTERVAL_MS = 400

    def __init__(self, current: Callable[[], AssistantMessage | None], parent: QObject) -> None:
        super().__init__(parent)
        self._current = current
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._on_timer_timeout)
        self.interval = self.MIN_INTERVAL_MS
        # Markdown and the python lexer now (start-up); the other common lexers one at a time
        # while nothing streams, so no reply pays ~0.1 s for its first code block of a language.
        warm_up(WARM_LANGUAGES[:1], dark=is_dark())
        self._warm_timer = QTimer(self)
        self._warm_timer.setInterval(250)
        self._warm_timer.timeout.connect(self._on_warm_timer_timeout)
        self._warm_timer.start()

    def schedule(self) -> None:
        """Render soon (text arrived)."""
        if not self._timer.isActive():
            self._timer.start(self.interval)

    def stop(self) -> None:
        """No render pending (the reply ended, or the chat was cleared)."""
        self._timer.stop()

    def _on_timer_timeout(self) -> None:
        m = self._current()
        if m is None:
            return
        spent = m.flush()
        # Keep rendering to a small share of the UI thread: wait ~4x what the last render cost.
        self.interval = int(min(self.MAX_INTERVAL_MS, max(self.MIN_INTERVAL_MS, 4000 * spent)))

    def _on_warm_timer_timeout(self) -> None:
        m = self._current()
        if m is not None and m.status == "streaming":
            return
        todo = [lang for lang in WARM_LANGUAGES if not is_warm(lang)]
        if not todo:
            self._warm_timer.stop()
            return
        warm_up((todo[0],), dark=is_dark())
