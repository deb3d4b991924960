"""The worker's glue to the shared engine (:class:`app.engine.host.EngineHost`).

The window owns the host: its loop runs on the worker's QThread (:class:`HostThread`), so the
window's turns, the in-window server's requests and the Check page's scenarios take turns on one
thread and one set of loaded models. Every request of the worker is a job of owner ``"window"``
(never refused by the queue's bound, counted in it). When a job of another owner loads a model in
place of the window's (``max_loaded`` reached, or the window's own loaded again with the server's
slots), the worker follows: the new model becomes the window's, its session is rebuilt with the
open conversation's messages, and the window is told.

**Slots.** A turn (send, regenerate, continue) is batchable: when it comes up and the window's
model has several slots (the in-window server runs, ``server.parallel``), it streams on a slot
thread beside the server's requests, so it never waits behind one while a slot is free. Only one
turn of the window runs at a time (the next waits for it), and never on a model whose engine died
(the turn then runs on the engine thread, which starts a fresh one). Everything else the worker
does runs on the engine thread, alone. While a job of the window waits for someone else's, the
progress area says for what, updated as it changes ("Waiting for a free slot: 4 server requests
are generating"), and is cleared when the job starts.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QThread

from app.engine.host import EngineHost, Job, JobWait, ModelChange
from app.ui.worker_session import OWNER

if TYPE_CHECKING:
    from app.ui.engine_types import EngineState
    from app.ui.worker_session import Sessions
    from app.ui.worker_signals import WorkerSignals

__all__ = ["HostJobs", "HostThread", "slot_users", "wait_text"]

log = logging.getLogger(__name__)

_OTHERS = {"server": "the server's request", "check": "the check"}
#: what a job of the owner that runs on the engine thread is waited for as
_RUNNING = {"server": "the server's request to finish", "check": "the check"}
#: a job on a slot thread, counted: (one, several)
_STREAMS = {"server": ("server request", "server requests"), "window": ("chat turn", "chat turns")}


def _streams(owners: tuple[str, ...]) -> tuple[str, int]:
    """The jobs ("4 server requests", "1 server request and 1 chat turn") and how many they are."""
    counts = Counter(owners)
    parts = []
    for owner, n in counts.items():
        one, many = _STREAMS.get(owner, (f"{owner} job", f"{owner} jobs"))
        parts.append(f"{n} {one if n == 1 else many}")
    return " and ".join(parts), sum(counts.values())


def slot_users(owners: list[str]) -> str:
    """Who uses the slots: "3 server requests and 1 chat turn" (the Server page's Active slots)."""
    return _streams(tuple(owners))[0]


def _slot_wait(slots: tuple[str, ...]) -> str:
    words, n = _streams(slots)
    return f"a free slot: {words} {'is' if n == 1 else 'are'} generating"


def wait_text(wait: JobWait | None) -> str | None:
    """What a window job waits for, in words ("a free slot: 4 server requests are generating",
    "the server's request to finish", "the check"); None when it waits for nothing, or only for
    the window's own jobs."""
    if wait is None:
        return None
    others = tuple(o for o in wait.slots if o != OWNER)
    if wait.where == "slot":
        return _slot_wait(wait.slots) if others else None
    if wait.where == "alone":
        return f"{_streams(others)[0]} to finish" if others else None
    ahead = [o for o in wait.ahead if o != OWNER]
    first: str | None = None
    if wait.running is not None and wait.running != OWNER:
        if wait.running_waits == "slot":  # a job of someone else's waits for a slot first
            first = _slot_wait(wait.slots)
            ahead.insert(0, wait.running)
        else:
            first = _RUNNING.get(wait.running, "another job")
    elif wait.running_waits == "alone" and others:  # the window's own job waits for them
        first = f"{_streams(others)[0]} to finish"
    elif ahead:
        first = _RUNNING.get(ahead.pop(0), "another job")
    if first is None:
        return None
    return f"{first} ({len(ahead)} more ahead)" if ahead else first


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
        self._lock = threading.RLock()  # guards what follows (the engine, slot and UI threads)
        self._waiting: list[Job] = []  # the window's jobs that have not started, oldest first
        self._shown: str | None = None  # the wait the progress area shows
        self._slot_turns = 0  # turns of the window given a slot and not done
        host.add_listener(self.on_model_change)
        host.add_watcher(self.show_wait)

    def idle(self) -> bool:
        """Nothing runs on the engine or waits for it: a job queued now starts at once."""
        wait = self.host.wait_of(None)
        return wait is not None and not wait.slots and not wait.ahead and wait.running is None

    def submit(
        self,
        fn: Callable[[], None],
        *,
        uses_model: bool = False,
        batchable: bool = False,
        quiet: bool = False,
        on_failed: Callable[[BaseException], None] | None = None,
    ) -> None:
        """Run ``fn()`` after the jobs already waiting (the window's own are never refused): on the
        engine thread, or, ``batchable`` (a turn), on a slot thread beside the others when the
        window's model has a free slot then. The window says what it waits for meanwhile (not for a
        ``quiet`` job: one the person did not ask for). A job that ``uses_model`` makes the window's
        model the most recently used one. ``on_failed(exc)``: the job did not run ``fn`` to its end
        (the model could not be made ready, the engine closed): for a caller waiting on ``fn``'s
        own signal."""
        on_slot = [False]  # the job names the window's model: the host streams it on a slot

        def run(_host: EngineHost, _model: Any) -> None:
            self._started(job)
            try:
                model = self.state.model
                if (
                    uses_model
                    and not on_slot[0]
                    and model is not None
                    and self.state.remote is None
                    and model.crash is None  # a dead engine is started again by the turn (Turns.revive)
                    and self.host.model(model.path) is model
                ):
                    self.host.ensure(model.path, owner=OWNER)  # loaded: only marks it as used now
                fn()
            finally:
                self._slot_done(on_slot)

        def failed(exc: BaseException) -> None:
            self._started(job)
            self._slot_done(on_slot)
            self.job_failed(exc)
            if on_failed is not None:
                on_failed(exc)

        job = Job(run=run, owner=OWNER, on_error=failed, batchable=batchable)
        if batchable:
            job.resolve = lambda: self._slot_model(on_slot)
        if not quiet:
            with self._lock:
                self._waiting.append(job)
        self.host.submit(job, bounded=False)
        self.show_wait()

    def _slot_model(self, on_slot: list[bool]) -> Any:
        """On the engine thread, when a turn comes up: the window's model's path when the turn may
        stream on a slot (a local model with several slots, alive, the host's, no other turn of
        the window on a slot), else None (it runs on the engine thread)."""
        st, model = self.state, self.state.model
        with self._lock:
            busy = self._slot_turns > 0
        if (
            busy
            or st.closing
            or st.remote is not None
            or st.session is None
            or model is None
            or model.crash is not None
            or self.host.model(model.path) is not model
            or int(getattr(model.backend, "parallel", 1)) <= 1
        ):
            return None
        with self._lock:
            self._slot_turns += 1
        on_slot[0] = True
        return model.path

    def _slot_done(self, on_slot: list[bool]) -> None:
        with self._lock:
            if on_slot[0]:
                on_slot[0] = False
                self._slot_turns -= 1

    def _started(self, job: Job) -> None:
        with self._lock:
            self._waiting = [j for j in self._waiting if j is not job]
        self.show_wait()

    def show_wait(self) -> None:
        """Say in the progress area what the first waiting job of the window waits for (any
        thread: the host's watchers call it at each change); cleared when it waits no more."""
        with self._lock:
            text = None
            for job in self._waiting:
                wait = self.host.wait_of(job)
                if wait is not None:
                    text = wait_text(wait)
                    break
            if text == self._shown:
                return
            self._shown = text
            if text is None:
                self.signals.sig_load_progress.emit(0.0, "")
            else:
                self.signals.sig_load_progress.emit(-1.0, f"Waiting for {text}…")

    def waiting_behind(self) -> str | None:
        """What the window's first waiting job waits for ("the server's request to finish"), or
        None; with none of its jobs waiting, what a job of the window queued now would wait for."""
        with self._lock:
            waiting = list(self._waiting)
        for job in waiting:
            wait = self.host.wait_of(job)
            if wait is not None:
                return wait_text(wait)
        return wait_text(self.host.wait_of(None))

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
        when the window's was closed for it (or when the window has none); the window's own file
        loaded again (``EngineHost.set_parallel``) is followed without a notice."""
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
        if change.loaded == mine:  # the same file loaded again (the server's slots): nothing to tell
            self.sessions.emit_context()
            return
        self.signals.sig_window_notice.emit(
            "engine_model_changed",
            f"{who[0].upper()}{who[1:]} loaded {change.loaded.name}: the chat goes on with it "
            "(the conversation is kept).",
            None,
        )
        self.sessions.emit_context()
