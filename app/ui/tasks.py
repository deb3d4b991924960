"""The window's one way to run blocking work (disk scans, network look-ups) off the UI thread.

``BackgroundTasks.run(fn, ok, failed)`` calls ``fn()`` on a small thread pool; its result (or the
error's text) comes back to ``ok`` / ``failed`` on the UI thread through a queued Qt signal. The
engine's own thread (``worker.EngineWorker``) is separate: it owns the model, not short tasks.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

__all__ = ["BackgroundTasks"]


class _Reply(QObject):
    ok = Signal(object)
    failed = Signal(str)


class _Task(QRunnable):
    def __init__(self, fn: Callable[[], Any], reply: _Reply) -> None:
        super().__init__()
        self.fn, self.reply = fn, reply

    def run(self) -> None:
        try:
            result = self.fn()
        except Exception as exc:  # noqa: BLE001 - any failure is handed to the caller's ``failed``
            self.reply.failed.emit(str(exc) or type(exc).__name__)
        else:
            self.reply.ok.emit(result)


class BackgroundTasks(QObject):
    """A thread pool whose results are delivered on the thread that owns this object (the UI's)."""

    def __init__(self, parent: QObject | None = None, *, threads: int = 1) -> None:
        super().__init__(parent)
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(threads)
        self._pending: set[_Reply] = set()
        self._closed = False

    @property
    def pending(self) -> int:
        """Tasks started whose result has not been delivered yet."""
        return len(self._pending)

    def run(
        self, fn: Callable[[], Any], ok: Callable[[Any], None], failed: Callable[[str], None] | None = None
    ) -> bool:
        """Start ``fn`` on the pool; False (and nothing runs) once :meth:`close` was called."""
        if self._closed:
            return False
        reply = _Reply(self)
        self._pending.add(reply)

        def done_ok(result: Any) -> None:
            self._pending.discard(reply)
            ok(result)

        def done_failed(message: str) -> None:
            self._pending.discard(reply)
            if failed is not None:
                failed(message)

        reply.ok.connect(done_ok)
        reply.failed.connect(done_failed)
        self._pool.start(_Task(fn, reply))
        return True

    def close(self, timeout_ms: int = 10_000) -> bool:
        """Start nothing more and wait for the running tasks; True if they ended in time."""
        self._closed = True
        return bool(self._pool.waitForDone(timeout_ms))
