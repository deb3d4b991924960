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
import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QThread

from app.engine.host import EngineHost, Job, ModelChange

if TYPE_CHECKING:
    from app.engine.llm import LoadedModel

__all__ = ["WAITING_TEXT", "HostGlue", "HostThread"]

log = logging.getLogger(__name__)

WAITING_TEXT = "Waiting for the server's request…"
OWNER = "window"
_OTHERS = {"server": "the server's request", "check": "the check"}


class HostThread(QThread):
    """The QThread the host's loop runs on (the window's engine thread)."""

    def __init__(self, host: EngineHost) -> None:
        super().__init__()
        self.host = host
        self.setObjectName("callisto-engine")

    def run(self) -> None:  # noqa: D401 - QThread API
        self.host.run()


class HostGlue:
    """Part of :class:`app.ui.worker.EngineWorker`: its requests as host jobs, and following the
    host's model changes."""

    host: EngineHost
    model: LoadedModel | None
    remote: tuple[Any, str, Any] | None
    session: Any
    _closing: bool
    _cancel: threading.Event
    _busy: threading.Event
    sig_busy: Any
    sig_done: Any
    sig_loaded: Any
    sig_window_notice: Any
    sig_load_progress: Any
    sig_error: Any
    info: Any
    # and, from SessionPart: _build_session, _model_info, _emit_context

    def _submit(self, fn: Callable[[], None], *, uses_model: bool = False) -> None:
        """Run ``fn()`` on the engine thread after the jobs already waiting (the window's own are
        never refused); says so in the window when it waits behind someone else's job. A job that
        ``uses_model`` makes the window's model the most recently used one."""
        ahead = self.waiting_behind()
        if ahead is not None:
            self.sig_load_progress.emit(-1.0, f"Waiting for {ahead}…")

        def run(_host: EngineHost, _model: Any) -> None:
            if ahead is not None:
                self.sig_load_progress.emit(0.0, "")
            model = self.model
            if (
                uses_model
                and model is not None
                and self.remote is None
                and model.crash is None  # a dead engine is started again by the turn (TurnPart._revive)
                and self.host.model(model.path) is model
            ):
                self.host.ensure(model.path, owner=OWNER)  # loaded: only marks it as used now
            fn()

        self.host.submit(Job(run=run, owner=OWNER, on_error=lambda exc: self._job_failed(exc)), bounded=False)

    def waiting_behind(self) -> str | None:
        """What a window job submitted now waits for ("the server's request"), or None."""
        owners = [o for o in [self.host.running_owner, *self.host.pending_owners()] if o and o != OWNER]
        return _OTHERS.get(owners[0], "another job") if owners else None

    def _job_failed(self, exc: BaseException) -> None:
        from app.engine.host import JobCancelled

        if isinstance(exc, JobCancelled) or self._closing:
            return
        log.error("a window job failed: %s", exc)
        self.sig_error.emit(f"The engine failed: {exc}")
        if self._busy.is_set():  # a turn that failed before it began: the window is not left waiting
            from app.engine.events import DoneEvent

            self._busy.clear()
            self.sig_busy.emit(False)
            self.sig_done.emit(DoneEvent(finish_reason="error", error=str(exc)))

    def _on_model_change(self, change: ModelChange) -> None:
        """On the engine thread, inside the job that loaded: follow a model someone else loaded
        when the window's was closed for it (or when the window has none)."""
        if change.owner == OWNER or self.remote is not None or self._closing:
            return
        mine = Path(self.model.path).resolve() if self.model is not None else None
        if mine is not None and mine not in change.closed:
            return  # the window's model is still loaded (max_loaded > 1): it stays the window's
        messages = list(self.session.messages) if self.session is not None else []
        self.model, self.session = change.model, None
        try:
            self._build_session(messages=messages)
        except Exception as exc:  # noqa: BLE001 - a template or tool problem: said in the window, the model stays
            self.sig_error.emit(f"The model loaded but a chat session could not start: {exc}")
            return
        who = _OTHERS.get(change.owner, "another job")
        self.info = self._model_info()
        self.sig_loaded.emit(self.info)
        self.sig_window_notice.emit(
            "engine_model_changed",
            f"{who[0].upper()}{who[1:]} loaded {change.loaded.name}: the chat goes on with it "
            "(the conversation is kept).",
            None,
        )
        self._emit_context()
