"""The worker's glue to the shared engine (:class:`app.engine.host.EngineHost`).

The window owns the host: its loop runs on the worker's QThread (:class:`HostThread`), so the
window's turns, the in-window server's requests and the Check page's scenarios take turns on one
thread and one set of loaded models. Every request of the worker is a job of owner ``"window"``
(never refused by the queue's bound, counted in it). When a job of another owner loads a model in
place of the window's (``max_loaded`` reached), the worker follows: the new model becomes the
window's, its session is rebuilt with the open conversation's messages, and the window is told.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QThread

from app.engine.host import EngineHost, Job, ModelChange
from app.ui.worker_session import OWNER

if TYPE_CHECKING:
    from app.ui.engine_types import EngineState
    from app.ui.worker_session import Sessions
    from app.ui.worker_signals import WorkerSignals

__all__ = ["WAITING_TEXT", "HostJobs", "HostThread"]

log = logging.getLogger(__name__)

WAITING_TEXT = "Waiting for the server's request…"
_OTHERS = {"server": "the server's request", "check": "the check"}


class HostThread(QThread):
    """The QThread the host's loop runs on (the window's engine thread)."""

    def __init__(self, host: EngineHost) -> None:
        super().__init__()
        self.host = host
        self.setObjectName("callisto-engine")

    def run(self) -> None:  # noqa: D401 - QThread API
        self.host.run()


class HostJobs:
    """The worker's requests as host jobs, and following the host's model changes."""

    def __init__(
        self, host: EngineHost, state: EngineState, *, signals: WorkerSignals, sessions: Sessions
    ) -> None:
        self.host = host
        self.state = state
        self.signals = signals
        self.sessions = sessions
        host.add_listener(self.on_model_change)

    def submit(self, fn: Callable[[], None], *, uses_model: bool = False) -> None:
        """Run ``fn()`` on the engine thread after the jobs already waiting (the window's own are
        never refused); says so in the window when it waits behind someone else's job. A job that
        ``uses_model`` makes the window's model the most recently used one."""
        ahead = self.waiting_behind()
        progress = self.signals.sig_load_progress
        if ahead is not None:
            progress.emit(-1.0, f"Waiting for {ahead}…")

        def run(_host: EngineHost, _model: Any) -> None:
            if ahead is not None:
                progress.emit(0.0, "")
            model = self.state.model
            if (
                uses_model
                and model is not None
                and self.state.remote is None
                and model.crash is None  # a dead engine is started again by the turn (Turns.revive)
                and self.host.model(model.path) is model
            ):
                self.host.ensure(model.path, owner=OWNER)  # loaded: only marks it as used now
            fn()

        self.host.submit(Job(run=run, owner=OWNER, on_error=self.job_failed), bounded=False)

    def waiting_behind(self) -> str | None:
        """What a window job submitted now waits for ("the server's request"), or None."""
        owners = [o for o in [self.host.running_owner, *self.host.pending_owners()] if o and o != OWNER]
        return _OTHERS.get(owners[0], "another job") if owners else None

    def job_failed(self, exc: BaseException) -> None:
        from app.engine.errors import JobCancelled

        if isinstance(exc, JobCancelled) or self.state.closing:
            return
        log.error("a window job failed: %s", exc)
        sig = self.signals
        sig.sig_error.emit(f"The engine failed: {exc}")
        if self.state.busy.is_set():  # a turn that failed before it began: the window is not left waiting
            from app.engine.events import DoneEvent

            self.state.busy.clear()
            sig.sig_busy.emit(False)
            sig.sig_done.emit(DoneEvent(finish_reason="error", error=str(exc)))

    def on_model_change(self, change: ModelChange) -> None:
        """On the engine thread, inside the job that loaded: follow a model someone else loaded
        when the window's was closed for it (or when the window has none)."""
        st = self.state
        if change.owner == OWNER or st.remote is not None or st.closing:
            return
        mine = Path(st.model.path).resolve() if st.model is not None else None
        if mine is not None and mine not in change.closed:
            return  # the window's model is still loaded (max_loaded > 1): it stays the window's
        messages = list(st.session.messages) if st.session is not None else []
        if not self.sessions.adopt(change.model, messages):
            return
        who = _OTHERS.get(change.owner, "another job")
        st.info = self.sessions.model_info()
        self.signals.sig_loaded.emit(st.info)
        self.signals.sig_window_notice.emit(
            "engine_model_changed",
            f"{who[0].upper()}{who[1:]} loaded {change.loaded.name}: the chat goes on with it "
            "(the conversation is kept).",
            None,
        )
        self.sessions.emit_context()
