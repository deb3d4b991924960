"""Asking the person at the window whether a side-effecting tool may run (Qt-free).

The dispatcher calls :meth:`ApprovalBridge.ask` on the engine thread; it hands the request to
the window (``show``, a queued Qt signal) and blocks until :meth:`answer` (UI thread), the
request's timeout (-> deny), or :meth:`release` (cancel or shutdown -> deny). Remembered
approvals are the dispatcher's policy: it asks only for calls that policy does not allow.

The engine thread is shared (``app.engine.host``): while a question waits, the in-window server's
requests and the Check page's scenarios wait behind it, which the timeout bounds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from app.calls import ApprovalDecision, read_decision
from app.tools.types import ApprovalRequest

__all__ = ["ApprovalBridge"]


class ApprovalBridge:
    def __init__(self, show: Callable[[ApprovalRequest], None], default_timeout_s: float) -> None:
        self.show = show
        self.default_timeout_s = default_timeout_s
        self._lock = threading.Lock()
        self._waits: dict[str, tuple[threading.Event, list[str]]] = {}

    def ask(self, request: ApprovalRequest, *, refuse: bool = False) -> ApprovalDecision:
        """The person's decision; ``refuse``: deny without asking."""
        if refuse:
            return "deny"
        ev = threading.Event()
        answer: list[str] = []
        with self._lock:
            self._waits[request.call_id] = (ev, answer)
        try:
            self.show(request)
            if not ev.wait(request.timeout_s or self.default_timeout_s) or not answer:
                return "deny"
            return read_decision(answer[0]) or "deny"
        finally:
            with self._lock:
                self._waits.pop(request.call_id, None)

    def answer(self, call_id: str, decision: str) -> None:
        """The person's answer (anything but a decision counts as a denial)."""
        with self._lock:
            waiter = self._waits.get(call_id)
        if waiter is not None:
            waiter[1].append(decision)
            waiter[0].set()

    def release(self, decision: ApprovalDecision = "deny") -> None:
        """Answer every pending request with ``decision`` (a cancel or shutdown)."""
        with self._lock:
            waits = list(self._waits.values())
        for ev, answer in waits:
            answer.append(decision)
            ev.set()
