"""Idle models are unloaded: each model the server's requests use has a time to live, and one idle
longer than it (no request running on it, none queued for it) is closed on the engine's thread,
through the host's own :meth:`~app.engine.host.EngineHost.unload`. The next request that names it
loads it again (the host loads on a job's first use: JIT).

A model's time to live is the one its latest request asked for (Ollama's ``keep_alive``, the
OpenAI ``ttl`` field: :func:`parse_keep_alive`, :func:`parse_ttl`), else the server's default
(``ServerConfig.idle_ttl_s``, ``serve --idle-ttl``; 0: never). 0 from a request unloads the model
as soon as it is idle; :data:`FOREVER` keeps it. A model the window holds (``held``) is never
unloaded: the window's chat uses it.

:meth:`IdleReaper.sweep` is one pass, on any thread; the server runs it every ``idle_sweep_s``
on a thread of the reaper's own (:meth:`IdleReaper.start`), and at once when a request with a
time to live of 0 ends. Time is the reaper's ``clock`` (monotonic seconds; a test gives its own
and sweeps by hand).
"""

from __future__ import annotations

import logging
import math
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.engine.host import EngineHost, Job
from app.server._common import check_number, type_name
from app.server._errors import ApiError, shown

__all__ = ["FOREVER", "MAX_TTL_S", "IdleReaper", "parse_keep_alive", "parse_ttl"]

log = logging.getLogger(__name__)

FOREVER = math.inf  # a model kept loaded however long it is idle
MAX_TTL_S = 365 * 24 * 3600  # the longest ``ttl`` a request may give (a year)

#: Go's time.ParseDuration, as Ollama reads ``keep_alive``: "5m", "1h30m", "2.5s", "-1m", "0"
_DURATION = re.compile(r"([-+]?)((?:(?:\d+\.?\d*|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+)")
_PART = re.compile(r"(\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}
_NUMBER = re.compile(r"[-+]?(?:\d+\.?\d*|\.\d+)")


def parse_keep_alive(value: Any) -> float | None:
    """Ollama's ``keep_alive`` in seconds: a duration string ("5m", "30s", "1h", "0") or a number
    of seconds; 0 unloads right after the request, a negative value keeps the model forever
    (:data:`FOREVER`); None: the server's default. Anything else is a 400 naming the field."""
    if value is None:
        return None
    seconds: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        if _NUMBER.fullmatch(text):  # a number in a string (as OLLAMA_KEEP_ALIVE takes it): seconds
            seconds = float(text)
        elif m := _DURATION.fullmatch(text):
            total = sum(float(n) * _UNIT_S[unit] for n, unit in _PART.findall(m.group(2)))
            seconds = -total if m.group(1) == "-" else total
    if seconds is None or math.isnan(seconds):
        got = shown(value) if isinstance(value, str) else type_name(value)
        raise ApiError(
            400,
            f'keep_alive must be a duration like "5m", "30s" or "1h", or a number of seconds '
            f"(0: unload after this request, negative: keep loaded), got {got}",
            param="keep_alive",
        )
    return FOREVER if seconds < 0 else seconds


def parse_ttl(value: Any) -> float | None:
    """The OpenAI API's ``ttl`` (LM Studio's name): seconds the model stays loaded once idle, from 0
    (unload right after the request) to :data:`MAX_TTL_S`; None: the server's default."""
    return check_number(value, "ttl", lo=0, hi=MAX_TTL_S)


def _path_of(model: Any) -> Path:
    return Path(getattr(model, "path", model)).expanduser().resolve()


@dataclass
class _Use:
    """What the reaper knows of one model."""

    active: int = 0  # requests queued or running on it
    last_used: float = 0.0  # when its latest request ended (the reaper's clock)
    ttl: float | None = None  # its latest request's time to live; None: the server's default
    unloading: bool = False  # a sweep queued it to be unloaded
    expiring: bool = (
        False  # asked to unload (:meth:`IdleReaper.expire`): once idle, whatever its requests say
    )


class IdleReaper:
    """Unloads the models the server's requests used once they are idle past their time to live.

    ``default_ttl()``: the server's time to live (None or 0: never). ``clock()``: monotonic seconds.
    ``held()``: the model the window holds (a path, or None), never unloaded."""

    def __init__(
        self,
        host: EngineHost,
        *,
        default_ttl: Callable[[], float | None],
        clock: Callable[[], float] = time.monotonic,
        held: Callable[[], Any] = lambda: None,
    ):
        self.host = host
        self.default_ttl = default_ttl
        self.clock = clock
        self.held = held
        self.unloads: Counter[Path] = Counter()  # how many times it unloaded each model
        self._cond = threading.Condition()
        self._uses: dict[Path, _Use] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the requests ----------------------------------------------------------------------------

    def begin(self, model: Any) -> Path:
        """A request on ``model`` is queued: it is in use until :meth:`end`."""
        path = _path_of(model)
        with self._cond:
            self._uses.setdefault(path, _Use()).active += 1
        return path

    def end(self, path: Path, ttl: float | None) -> None:
        """The request on ``path`` ended (ran, failed or was cancelled); ``ttl``: the time to live it
        asked for (None: the default). A model idle now with a time to live of 0 is unloaded now."""
        with self._cond:
            use = self._uses.get(path)
            if use is None:
                return
            use.active -= 1
            use.last_used = self.clock()
            use.ttl = 0.0 if use.expiring else ttl
            now = use.active == 0 and use.ttl == 0
        if now:
            self.sweep()

    def expire(self, model: Any) -> list[Path]:
        """Unload ``model`` as soon as no request uses it (Ollama's ``keep_alive`` 0 with nothing to
        generate): now if it is idle, else when its requests end. Returns what was unloaded now
        (waits for it, off the engine's thread)."""
        path = _path_of(model)
        with self._cond:
            use = self._uses.get(path)
            if use is None:
                if self.host.model(path) is None:
                    return []
                use = self._uses[path] = _Use(last_used=self.clock())
            use.ttl, use.expiring = 0.0, True
        return self.sweep(wait=True)

    def time_left(self, model: Any) -> float:
        """Seconds until ``model`` is unloaded if no request comes (Ollama's ``/api/ps``
        ``expires_at``): its time to live from now while a request uses it (the clock starts when
        the last one ends), what is left of it once idle, :data:`FOREVER` for a model never
        unloaded (the window's, or no time to live)."""
        path = _path_of(model)
        if path == self._held():
            return FOREVER
        with self._cond:
            use = self._uses.get(path)
            if use is None:
                return self._limit(_Use())
            limit = self._limit(use)
            if use.active:
                return limit
            return max(0.0, use.last_used + limit - self.clock())

    # -- sweeping --------------------------------------------------------------------------------

    def sweep(self, *, wait: bool = False) -> list[Path]:
        """One pass: the models idle past their time to live are unloaded by a job on the engine's
        thread. Returns them (queued); with ``wait``, once that job ran, those it unloaded (one
        a request took meanwhile stays)."""
        if not self.host.alive:
            return []
        due = self._due()
        if not due:
            return []
        done = threading.Event()
        gone: list[Path] = []

        def run(host: EngineHost, _model: Any) -> None:
            try:
                gone.extend(self._unload(host, due))
            finally:
                self._release(due)
                done.set()

        def failed(_err: BaseException) -> None:  # the engine stops: they stay until it does
            self._release(due)
            done.set()

        self.host.submit(Job(run=run, owner="server", on_error=failed), bounded=False)
        if wait and threading.get_ident() != self.host.thread_ident:
            done.wait()
            return gone
        return due

    def wait_unloaded(self, model: Any, count: int = 1, timeout: float | None = None) -> bool:
        """Wait until ``model`` was unloaded ``count`` times in all; False on ``timeout``."""
        path = _path_of(model)
        with self._cond:
            return self._cond.wait_for(lambda: self.unloads[path] >= count, timeout)

    def _limit(self, use: _Use) -> float:
        if use.ttl is not None:
            return use.ttl
        default = self.default_ttl()
        return float(default) if default and default > 0 else FOREVER

    def _idle_past(self, use: _Use, now: float) -> bool:
        return use.active == 0 and now - use.last_used >= self._limit(use)

    def _held(self) -> Path | None:
        held = self.held()
        return _path_of(held) if held else None

    def _due(self) -> list[Path]:
        now = self.clock()
        held = self._held()
        due = []
        with self._cond:
            for path, use in list(self._uses.items()):
                if use.active or use.unloading or path == held:
                    continue
                if self.host.model(path) is None:  # closed meanwhile (least recently used), or never loaded
                    del self._uses[path]
                elif self._idle_past(use, now):
                    use.unloading = True
                    due.append(path)
        return due

    def _release(self, paths: list[Path]) -> None:
        with self._cond:
            for path in paths:
                if (use := self._uses.get(path)) is not None:
                    use.unloading = False

    def _unload(self, host: EngineHost, paths: list[Path]) -> list[Path]:
        """On the engine's thread: close those of ``paths`` still idle past their time."""
        held = self._held()
        gone = []
        for path in paths:
            with self._cond:
                use = self._uses.get(path)
                if use is None or path == held or not self._idle_past(use, self.clock()):
                    continue
                del self._uses[path]
            if host.unload(path):
                log.info("unloaded %s: idle past its time to live", path.name)
                gone.append(path)
        with self._cond:
            self.unloads.update(gone)
            self._cond.notify_all()
        return gone

    # -- the sweeping thread ---------------------------------------------------------------------

    def start(self, interval_s: float) -> None:
        """Sweep every ``interval_s`` seconds on a thread of the reaper's own (0: never)."""
        if interval_s <= 0 or self._thread is not None:
            return
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._run, args=(interval_s,), name="callisto-idle", daemon=True
        )
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(timeout)

    def _run(self, interval_s: float) -> None:
        while not self._stop.wait(interval_s):
            try:
                self.sweep()
            except Exception:  # noqa: BLE001 - a failed pass is logged; the next one tries again
                log.exception("the idle sweep failed")
