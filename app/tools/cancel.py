"""Cooperative cancellation and a commit point for tool calls.

The dispatcher runs every tool on a helper thread under a :class:`CallControl` with the call's
deadline. When the deadline passes it *cancels* the control. A tool that cooperates
(``Tool.cancellable``):

* calls :func:`check_cancelled` between steps, and uses :func:`remaining_time` to bound its
  own work (the file search gives the regular-expression engine this as its time limit);
* prepares any side effect where nothing can see it (e.g. a temporary file), then calls
  :func:`commit_side_effect` just before making it visible. ``commit`` and ``cancel`` are
  mutually exclusive under one lock, so either the dispatcher cancelled first (the commit
  raises :class:`ToolCancelled` and the tool leaves nothing behind), or the tool committed
  first (the dispatcher knows the effect is happening and waits for it to finish).

Outside a dispatcher (a direct call, a test) there is no control: the checks do nothing and
``remaining_time`` returns its default.
"""

from __future__ import annotations

import contextvars
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from app.tools.types import ToolError

__all__ = [
    "CallControl",
    "ToolCancelled",
    "check_cancelled",
    "commit_side_effect",
    "current_control",
    "remaining_time",
    "run_under",
    "under_control",
]

T = TypeVar("T")


class ToolCancelled(ToolError):
    """The call was cancelled (its time ran out) before it committed any side effect."""


class CallControl:
    """The deadline of one call, and the cancel/commit handshake between dispatcher and tool."""

    def __init__(self, deadline: float | None = None) -> None:
        self.deadline = deadline  # time.monotonic() value, or None for no limit
        self._lock = threading.Lock()
        self._cancelled = False
        self._committed = False
        self._expired = False

    @property
    def cancelled(self) -> bool:
        with self._lock:
            return self._cancelled

    @property
    def committed(self) -> bool:
        with self._lock:
            return self._committed

    @property
    def expired(self) -> bool:
        """True once the dispatcher gave up waiting (whether or not the tool had committed)."""
        with self._lock:
            return self._expired

    def remaining(self) -> float | None:
        """Seconds left before the deadline (never negative), or None without a deadline."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())

    def check(self) -> None:
        """Raise :class:`ToolCancelled` if the call was cancelled."""
        if self.cancelled:
            raise ToolCancelled("The tool was stopped because its time ran out.")

    def commit(self) -> None:
        """Mark the point of no return; raise :class:`ToolCancelled` if cancelled before it."""
        with self._lock:
            if self._cancelled:
                raise ToolCancelled("The tool was stopped because its time ran out; it changed nothing.")
            self._committed = True

    def cancel(self) -> bool:
        """Cancel the call. True when no side effect was committed (so none will happen)."""
        with self._lock:
            self._expired = True
            if self._committed:
                return False
            self._cancelled = True
            return True


_current: contextvars.ContextVar[CallControl | None] = contextvars.ContextVar(
    "callisto_tool_call", default=None
)


def current_control() -> CallControl | None:
    """The control of the tool call running on this thread, if any."""
    return _current.get()


@contextmanager
def under_control(control: CallControl) -> Iterator[CallControl]:
    """Run the body as a call governed by ``control`` (what the dispatcher does on its thread)."""
    token = _current.set(control)
    try:
        yield control
    finally:
        _current.reset(token)


def run_under(control: CallControl, fn: Callable[[], T]) -> T:
    with under_control(control):
        return fn()


def check_cancelled() -> None:
    """Raise :class:`ToolCancelled` if the current call was cancelled (no-op outside a call)."""
    control = _current.get()
    if control is not None:
        control.check()


def commit_side_effect() -> None:
    """The point of no return of a side effect; raises :class:`ToolCancelled` if cancelled first."""
    control = _current.get()
    if control is not None:
        control.commit()


def remaining_time(default: Any = None) -> Any:
    """Seconds left for the current call, or ``default`` outside a call or without a deadline."""
    control = _current.get()
    if control is None:
        return default
    left = control.remaining()
    return default if left is None else left
