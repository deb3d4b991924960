"""Python's cycle collector, run on the GUI thread only.

Python collects reference cycles in whichever thread happens to allocate past its threshold. In
the window that is often a worker thread: the engine bridge streaming a reply, the check runner,
the API server, a download. A cycle that holds a Qt object (a widget and a lambda connected to it,
a failed call's traceback that reaches a dialog) freed there deletes the Qt object off the GUI
thread, and Qt may crash the process. So the window turns automatic collection off and collects
here instead, on a timer of the GUI thread, when the counts pass the thresholds Python itself would
have used (Anki, pyqtgraph and calibre do the same, each its own way).

Usage (``app.ui.application.main``)::

    collector = MainThreadCollector(app)
    collector.start()          # automatic collection off; checked every second on this thread
"""

from __future__ import annotations

import gc
import logging

from PySide6.QtCore import QObject, QTimer

__all__ = ["CHECK_INTERVAL_MS", "MainThreadCollector"]

log = logging.getLogger(__name__)

CHECK_INTERVAL_MS = 1000
#: a threshold Python does not use (3.14's incremental collector reports 0 for the oldest
#: generation): a generation is then collected after this many collections of the one before
_FALLBACK_THRESHOLD = 10


class MainThreadCollector(QObject):
    """Turns Python's automatic cycle collection off and runs it from a timer of the thread this
    object lives in (make it on the GUI thread), generation by generation as Python would.
    :meth:`close` turns automatic collection back on if it was on before :meth:`start`."""

    def __init__(self, parent: QObject | None = None, *, interval_ms: int = CHECK_INTERVAL_MS) -> None:
        super().__init__(parent)
        self._thresholds = tuple(t if t > 0 else _FALLBACK_THRESHOLD for t in gc.get_threshold())
        self._was_enabled = gc.isenabled()
        self._started = False
        self.collections = [0, 0, 0]  # collections run, by oldest generation collected
        self._timer = QTimer(self)
        self._timer.setInterval(interval_ms)
        self._timer.timeout.connect(self.check)

    def start(self) -> None:
        if self._started:
            return
        self._was_enabled = gc.isenabled()
        gc.disable()
        self._started = True
        self._timer.start()
        log.info("cycle collection runs on the GUI thread, checked every %d ms", self._timer.interval())

    def check(self) -> int | None:
        """Collect the oldest generation whose count (and every younger one's) is past its
        threshold; the generation collected, or None when none is due."""
        counts = gc.get_count()
        due = None
        for generation, (count, threshold) in enumerate(zip(counts, self._thresholds, strict=False)):
            if count <= threshold:
                break
            due = generation
        if due is None:
            return None
        gc.collect(due)
        self.collections[due] += 1
        return due

    def close(self) -> None:
        """Stop the timer, collect everything once here, and give collection back to Python as
        it was before :meth:`start`."""
        if not self._started:
            return
        self._timer.stop()
        self._started = False
        gc.collect()
        if self._was_enabled:
            gc.enable()
