"""One engine for the whole process: the loaded models and the one queue every generation waits in.

The window's chat, the local API server and the in-window check all submit :class:`Job` s to the
same :class:`EngineHost`. The host takes them in the order they came, on one thread (its own, or
a thread the caller runs :meth:`EngineHost.run` on: the window's engine QThread), and runs them
there one at a time, except the batchable ones on a model with several slots (below): the KV
cache of a model is reused by whoever asks next.

Models are kept by path, least recently used first: at most ``max_loaded`` (default 1) stay
loaded; loading one more closes the least recently used. A load is done before anything is
closed, so a load that fails changes nothing. Every change is told to the listeners
(:meth:`EngineHost.add_listener`) as a :class:`ModelChange`, with the ``owner`` of the job that
caused it: the window follows a model the server loaded in place of its own.

The queue is bounded: past ``queue_size`` waiting jobs :meth:`EngineHost.submit` raises
:class:`EngineBusy` (the server answers 429 with its ``retry_after_s``); the window's own jobs
(``bounded=False``) are always accepted and count towards the bound. A job whose ``cancel`` is
set before it starts never runs. Qt-free: the window, the server and the check use it alike.

**Slots.** A model whose engine process has several slots (``backend.parallel`` > 1, see
``app.engine.scheduler``) runs its ``batchable`` jobs side by side: the host loads (or finds) the
model on its thread, then runs the job on a slot thread of its own and goes on with the next job,
up to ``parallel`` at once; the engine process batches their generations into one decode a step.
When every slot is taken the next job waits at the head of the queue (the queue keeps its bound
and its ``EngineBusy``). Any other job (not batchable, a model to load or reload, a crashed
engine to replace) first waits for the slot threads to end, so nothing is closed under them.
A job's ``resolve`` names its model when it comes up (the window's turn names the window's model
then, and only when it may stream beside the others). :meth:`EngineHost.set_parallel` gives every
model the same slots from now on (the in-window server runs: ``server.parallel``) and loads the
loaded ones again with them. :meth:`EngineHost.wait_of` says what a job that has not started
waits for, and the watchers (:meth:`EngineHost.add_watcher`) hear each change of it: the window
says "Waiting for a free slot: 4 server requests are generating".
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from app.engine.errors import EngineBusy, JobCancelled, ModelLoadError

if TYPE_CHECKING:
    from app.engine.llm import LoadedModel, LoadSettings

__all__ = ["EngineHost", "Job", "JobWait", "ModelChange"]

log = logging.getLogger(__name__)
T = TypeVar("T")


@dataclass
class Job:
    """``run(host, model)`` is called on the host's thread once ``model`` (a path, or an object with
    a ``path``, e.g. the server's ``ModelEntry``; None: no model needed) is loaded. ``settings``
    are used when the model has to be loaded; ``exact`` reloads a model loaded with others.
    ``owner`` names who asked ("window", "server", "check"): it is in the :class:`ModelChange`
    a load causes and in :attr:`EngineHost.running_owner`. Any exception ``run`` or the load raises
    goes to ``on_error``; the host goes on with the next job."""

    run: Callable[[EngineHost, LoadedModel | None], None]
    model: Any = None
    cancel: threading.Event = field(default_factory=threading.Event)
    on_error: Callable[[BaseException], None] = lambda err: None
    owner: str = "server"
    settings: LoadSettings | None = None
    exact: bool = False
    #: may run on a slot thread beside other jobs of its model when its engine has several slots
    #: (``run`` must then be safe off the host's thread: it streams from the model and reports)
    batchable: bool = False
    #: called on the host's thread when the job comes up, before anything else: its ``model`` from
    #: what is true then, not when it was queued (None: no model needed, and no slot)
    resolve: Callable[[], Any] | None = None
    #: set by the host before ``run``: the seconds it took to load the model for this job (None:
    #: it was loaded already), what an API reports as the request's load time
    load_s: float | None = None


@dataclass(frozen=True)
class JobWait:
    """What a job that has not started waits for (:meth:`EngineHost.wait_of`). ``where``:
    ``"queued"`` (behind ``ahead``, the owners of the jobs queued before it, and ``running``, the
    owner of the job the host's thread holds, which itself waits for ``running_waits``: "slot",
    "alone" or None when it runs); ``"slot"`` (taken: every slot is busy); ``"alone"`` (taken:
    it runs alone, once the jobs on the slot threads end). ``slots``: the owners of the jobs
    running on slot threads now."""

    where: str
    slots: tuple[str, ...] = ()
    ahead: tuple[str, ...] = ()
    running: str | None = None
    running_waits: str | None = None


@dataclass(frozen=True)
class ModelChange:
    """The set of loaded models changed: ``loaded`` was loaded for a job of ``owner``; ``closed``
    are the paths closed to make room (or replaced by a reload of the same path)."""

    loaded: Path
    model: LoadedModel
    closed: tuple[Path, ...]
    owner: str


def _path_of(model: Any) -> Path:
    path = getattr(model, "path", model)
    return Path(path).expanduser().resolve()


class EngineHost:
    """The loaded models (LRU, at most ``max_loaded``) and the one job queue and thread."""

    def __init__(
        self,
        *,
        max_loaded: int = 1,
        queue_size: int = 16,
        settings: LoadSettings | None = None,
        name: str = "callisto-engine",
    ):
        if queue_size < 1:
            raise ValueError("queue_size must be at least 1")
        if max_loaded < 1:
            raise ValueError("max_loaded must be at least 1")
        from app.engine.llm import LoadSettings

        self.max_loaded = max_loaded
        self.queue_size = queue_size
        self.settings: LoadSettings = settings or LoadSettings()  # for models a job loads without its own
        self.name = name
        self._jobs: deque[Job | None] = deque()
        self._cond = threading.Condition()
        self._models: OrderedDict[Path, tuple[LoadedModel, LoadSettings]] = OrderedDict()
        self._listeners: list[Callable[[ModelChange], None]] = []
        self._thread: threading.Thread | None = None
        self._running_loop = False
        self.thread_ident: int | None = None  # the thread the jobs run on
        self.running_owner: str | None = None  # whose job runs now (None: idle)
        self.avg_job_s = 2.0  # for Retry-After
        self.jobs_run = 0
        #: the slots every model loaded gets (None: what its load asks for): :meth:`set_parallel`
        self.parallel: int | None = None
        self._slot_owners: list[str] = []  # the owners of the jobs on slot threads (guarded by _cond)
        self._head: Job | None = None  # the job the host's thread holds (guarded by _cond)
        self._head_waits: str | None = None  # "slot", "alone" or None: what the head waits for
        self._watchers: list[Callable[[], None]] = []

    # -- lifecycle ------------------------------------------------------------------------------

    def start(self) -> None:
        """Run the jobs on a thread of the host's own (idempotent)."""
        with self._cond:
            if self._thread is not None or self._running_loop:
                return
            self._thread = threading.Thread(target=self.run, name=self.name, daemon=True)
        self._thread.start()

    def run(self) -> None:
        """The loop, on the calling thread, until :meth:`stop`; closes every model at the end."""
        with self._cond:
            self._running_loop = True
        self.thread_ident = threading.get_ident()
        try:
            while True:
                with self._cond:
                    while not self._jobs:
                        self._cond.wait()
                    job = self._jobs.popleft()
                if job is None:
                    break
                self._changed()
                if job.cancel.is_set():
                    self._tell(job, JobCancelled("the job was cancelled before it ran"))
                    continue
                self._run_job(job)
        finally:
            self._drain_slots()
            self.close_all()
            with self._cond:
                self._running_loop = False

    def stop(self, timeout: float = 10.0) -> None:
        """Drop the waiting jobs (each is told by ``on_error``), end the loop after the running
        job, and join the host's own thread."""
        with self._cond:
            dropped = [j for j in self._jobs if j is not None]
            self._jobs.clear()
            self._jobs.append(None)
            self._cond.notify_all()
            thread, self._thread = self._thread, None
        for job in dropped:
            job.cancel.set()
            self._tell(job, JobCancelled("the engine is shutting down"))
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    @property
    def alive(self) -> bool:
        return self._running_loop

    # -- the queue --------------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Jobs waiting (not counting the running one)."""
        with self._cond:
            return sum(1 for j in self._jobs if j is not None)

    @property
    def busy(self) -> bool:
        return self.running_owner is not None or self.slots_busy > 0

    @property
    def slots_busy(self) -> int:
        """Batchable jobs running now on slot threads."""
        with self._cond:
            return len(self._slot_owners)

    def slot_owners(self) -> list[str]:
        """The owners of the jobs running now on slot threads."""
        with self._cond:
            return list(self._slot_owners)

    def wait_of(self, job: Job | None) -> JobWait | None:
        """What ``job`` waits for (None: a job queued now); None once it runs (or loads its
        model), or when it is not here."""
        with self._cond:
            slots = tuple(self._slot_owners)
            if job is not None and self._head is job:
                return JobWait(self._head_waits, slots) if self._head_waits is not None else None
            queued = [j for j in self._jobs if j is not None]
            at = len(queued) if job is None else next((i for i, j in enumerate(queued) if j is job), None)
            if at is None:
                return None
            head = self._head
            return JobWait(
                "queued",
                slots,
                ahead=tuple(j.owner for j in queued[:at]),
                running=head.owner if head is not None else None,
                running_waits=self._head_waits if head is not None else None,
            )

    def add_watcher(self, fn: Callable[[], None]) -> None:
        """``fn()`` is called, on whichever thread made it, after each change of the queue, the
        host's job or the slots (what :meth:`wait_of` says may have changed); it must be quick."""
        self._watchers.append(fn)

    def _changed(self) -> None:
        for fn in list(self._watchers):
            try:
                fn()
            except Exception:  # noqa: BLE001 - a watcher's failure must not stop a job
                log.exception("a host watcher failed")

    def pending_owners(self) -> list[str]:
        with self._cond:
            return [j.owner for j in self._jobs if j is not None]

    def submit(self, job: Job, *, bounded: bool = True) -> None:
        """Queue ``job``; :class:`EngineBusy` when ``bounded`` and ``queue_size`` jobs already wait
        (the head job waiting for a slot, or for the slots to end, is one of them)."""
        with self._cond:
            waiting = sum(1 for j in self._jobs if j is not None) + (self._head_waits is not None)
            if bounded and waiting >= self.queue_size:
                retry = max(1, int(self.avg_job_s * (waiting + 1) + 0.999))
                raise EngineBusy(waiting, retry)
            self._jobs.append(job)
            self._cond.notify()
        self._changed()

    def call(
        self,
        fn: Callable[[LoadedModel | None], T],
        *,
        model: Any = None,
        owner: str = "check",
        settings: LoadSettings | None = None,
        cancel: threading.Event | None = None,
    ) -> T:
        """Run ``fn(model)`` as a job and wait for its result (or raise its exception). Not on the
        host's own thread: call ``fn`` directly there."""
        if threading.get_ident() == self.thread_ident:
            raise RuntimeError("EngineHost.call from the host's own thread would wait for itself")
        done = threading.Event()
        out: list[Any] = []
        errors: list[BaseException] = []

        def run(_host: EngineHost, loaded: LoadedModel | None) -> None:
            out.append(fn(loaded))  # what it raises goes to ``failed``, which sets ``done`` after
            done.set()

        def failed(err: BaseException) -> None:
            errors.append(err)
            done.set()

        job = Job(run=run, model=model, owner=owner, settings=settings, on_error=failed)
        if cancel is not None:
            job.cancel = cancel
        self.submit(job, bounded=False)
        done.wait()
        if errors:
            raise errors[0]
        return out[0]

    def _batch_ready(self, job: Job) -> bool:
        """Whether ``job`` may join the slot threads now: batchable, for a model loaded as it asks
        whose engine lives."""
        if not job.batchable or job.model is None:
            return False
        item = self._models.get(_path_of(job.model))
        if item is None or item[0].crash is not None:
            return False
        return not (job.exact and job.settings is not None and item[1] != self._effective(job.settings))

    def _wait_slots(self, until: Callable[[], bool], waits: str | None) -> None:
        """Wait until ``until()`` (under the lock); the head job meanwhile waits for ``waits``."""
        with self._cond:
            if until():
                return
            self._head_waits = waits
        self._changed()
        with self._cond:
            while not until():
                self._cond.wait()
            self._head_waits = None

    def _drain_slots(self, waits: str | None = None) -> None:
        """Wait until no job runs on a slot thread."""
        self._wait_slots(lambda: not self._slot_owners, waits)

    def _run_slot(self, job: Job, model: LoadedModel, started: float) -> None:
        try:
            job.run(self, model)
        except Exception as exc:  # noqa: BLE001 - nothing a job does may stop the engine
            self._failed(job, exc)
        finally:
            with self._cond:
                self._slot_owners.remove(job.owner)
                self._count_job(started)
                self._cond.notify_all()
            self._changed()

    def _set_head(self, job: Job | None) -> None:
        with self._cond:
            self._head, self._head_waits = job, None

    def _run_job(self, job: Job) -> None:
        self._set_head(job)
        dispatched = False  # on a slot thread, which counts it when it ends
        started = time.monotonic()
        try:
            if job.resolve is not None:
                job.model = job.resolve()
            if not self._batch_ready(job):
                self._drain_slots("alone")  # nothing is loaded, closed or run alone under a running slot
            started = time.monotonic()
            self.running_owner = job.owner
            model = None
            if job.model is not None:
                before = self._models.get(_path_of(job.model))
                model = self.ensure(job.model, settings=job.settings, exact=job.exact, owner=job.owner)
                if before is None or before[0] is not model:
                    job.load_s = time.monotonic() - started
            slots = int(getattr(model.backend, "parallel", 1)) if model is not None else 1
            if job.batchable and model is not None and slots > 1:
                # every slot taken: this job waits at the head
                self._wait_slots(lambda: len(self._slot_owners) < slots, "slot")
                with self._cond:
                    if job.cancel.is_set():
                        raise JobCancelled("the job was cancelled before it ran")
                    self._slot_owners.append(job.owner)
                    self._head = None
                name = f"{self.name}-slot"
                threading.Thread(
                    target=self._run_slot, args=(job, model, started), name=name, daemon=True
                ).start()
                dispatched = True
                return
            job.run(self, model)
        except Exception as exc:  # noqa: BLE001 - nothing a job does may stop the engine
            self._failed(job, exc)
        finally:
            self.running_owner = None
            self._set_head(None)
            if not dispatched:
                self._count_job(started)
            self._changed()

    def _count_job(self, started: float) -> None:
        """One more job run, and the moving average of a job's time (for Retry-After)."""
        self.jobs_run += 1
        self.avg_job_s = 0.8 * self.avg_job_s + 0.2 * (time.monotonic() - started)

    def _failed(self, job: Job, exc: Exception) -> None:
        """What a job raised: logged where it is not an engine's expected error, told to the job."""
        if not _expected(exc):
            log.exception("engine job failed")
        self._tell(job, exc)

    @staticmethod
    def _tell(job: Job, exc: BaseException) -> None:
        try:
            job.on_error(exc)
        except Exception:  # noqa: BLE001 - the error handler's own failure is logged only
            log.exception("a job's error handler failed")

    # -- the models (on the host's thread) ----------------------------------------------------------

    def add_listener(self, fn: Callable[[ModelChange], None]) -> None:
        """``fn(change)`` is called on the host's thread after each load."""
        self._listeners.append(fn)

    @property
    def loaded_paths(self) -> list[Path]:
        """Loaded models, least recently used first."""
        return list(self._models)

    @property
    def current(self) -> Path | None:
        """The most recently used model's path."""
        return next(reversed(self._models), None) if self._models else None

    def model(self, path: Any) -> LoadedModel | None:
        item = self._models.get(_path_of(path))
        return item[0] if item is not None else None

    def loaded_as(self, path: Any, settings: LoadSettings | None = None) -> bool:
        """Whether the model at ``path`` is loaded, and alive, with ``settings`` as a load now would
        use them (None: with any): what a job for it would then find without a load."""
        item = self._models.get(_path_of(path))
        if item is None or item[0].crash is not None:
            return False
        return settings is None or item[1] == self._effective(settings)

    def settings_of(self, path: Any) -> LoadSettings | None:
        """What the loaded model at ``path`` was loaded with (None: it is not loaded)."""
        item = self._models.get(_path_of(path))
        return item[1] if item is not None else None

    def ensure(
        self,
        model: Any,
        *,
        settings: LoadSettings | None = None,
        exact: bool = False,
        owner: str = "server",
    ) -> LoadedModel:
        """The loaded model at ``model``'s path, loaded now if it is not (closing the least recently
        used ones past ``max_loaded``); raises ``ModelLoadError``. On the host's thread only."""
        path = _path_of(model)
        item = self._models.get(path)
        crashed: list[Path] = []
        if item is not None and item[0].crash is not None:
            # its engine process died (the request running then got the error): a fresh engine
            self._models.pop(path)
            self._close(item[0])
            item = None
            crashed.append(path)
        use = self._effective(settings or self.settings)
        if item is not None and (not exact or settings is None or item[1] == use):
            self._models.move_to_end(path)
            return item[0]
        from app.engine.llm import load_model

        loaded = load_model(path, settings=use)  # the others stay until this one has loaded
        closed: list[Path] = crashed
        if item is not None:
            self._models.pop(path)
            self._close(item[0])
            closed.append(path)
        self._models[path] = (loaded, use)
        while len(self._models) > self.max_loaded:
            old, (old_model, _s) = self._models.popitem(last=False)
            self._close(old_model)
            closed.append(old)
        self._tell_listeners(ModelChange(path, loaded, tuple(closed), owner))
        return loaded

    def _effective(self, settings: LoadSettings) -> LoadSettings:
        """``settings`` with the host's slots (:meth:`set_parallel`) where it has them."""
        return settings if self.parallel is None else replace(settings, parallel=self.parallel)

    def set_parallel(self, n: int | None, *, owner: str = "server") -> None:
        """Every model loaded from now on gets ``n`` slots (None: those its load asks for, the
        engine's default one unless it names them); the loaded models whose slots differ are
        loaded again with them by a job queued now (after the waiting ones, once the slot jobs
        end). Each load is told to the listeners as caused by ``owner``: the window follows its
        model, its conversation kept. A failed load keeps the model as it was."""
        if n is not None and n < 1:
            raise ValueError("parallel must be at least 1")
        self.parallel = n
        self.submit(Job(run=lambda host, _m: host._reslot(owner), owner=owner), bounded=False)

    def _reslot(self, owner: str) -> None:
        from app.engine.engine_process import parallel_slots

        slots = self.parallel or parallel_slots()
        for path in list(self._models):  # least recently used first: the order stays
            model, settings = self._models[path]
            want = replace(settings, parallel=self.parallel)
            if want == settings or not model.isolated:  # an in-process model has one slot
                continue
            if model.crash is None and int(getattr(model.backend, "parallel", 1)) == slots:
                self._models[path] = (model, want)  # it has them already: nothing to load
                continue
            try:
                self.ensure(path, settings=want, exact=True, owner=owner)
            except ModelLoadError as exc:
                log.warning("%s keeps its slots: %s", path.name, exc)

    def set_max_loaded(self, n: int, *, owner: str = "settings") -> None:
        """Keep at most ``n`` models from now on: the least recently used past it are closed by a
        job queued now (after the waiting ones), and the listeners are told."""
        if n < 1:
            raise ValueError("max_loaded must be at least 1")
        self.max_loaded = n
        self.submit(Job(run=lambda host, _m: host._trim(owner), owner=owner), bounded=False)

    def _trim(self, owner: str) -> None:
        closed: list[Path] = []
        while len(self._models) > self.max_loaded:
            old, (old_model, _s) = self._models.popitem(last=False)
            self._close(old_model)
            closed.append(old)
        current = self.current
        if closed and current is not None:
            self._tell_listeners(ModelChange(current, self._models[current][0], tuple(closed), owner))

    def _tell_listeners(self, change: ModelChange) -> None:
        for fn in list(self._listeners):
            try:
                fn(change)
            except Exception:  # noqa: BLE001 - a listener's failure must not fail the job that loaded
                log.exception("a model-change listener failed")

    def unload(self, path: Any) -> bool:
        """Close the model at ``path`` if it is loaded (on the host's thread); whether it was."""
        item = self._models.pop(_path_of(path), None)
        if item is not None:
            self._close(item[0])
        return item is not None

    def close_all(self) -> None:
        while self._models:
            _p, (m, _s) = self._models.popitem(last=False)
            self._close(m)

    @staticmethod
    def _close(model: LoadedModel) -> None:
        try:
            model.close()
        except Exception:  # noqa: BLE001 - closing is best effort; the model is dropped either way
            log.exception("closing a model failed")


def _expected(exc: BaseException) -> bool:
    """Errors that are a request's, not the engine's: not logged with a traceback."""
    return isinstance(exc, ModelLoadError | JobCancelled) or type(exc).__name__ == "ApiError"
