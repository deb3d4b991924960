"""Resumable, verified GGUF downloads and a background download queue.

One file at a time (:func:`download_file`):

* written to ``<dest>.part`` with a small JSON sidecar ``<dest>.part.json`` (url, size, sha256), so a
  download resumes with an HTTP ``Range`` request after a pause *or after the app was killed*;
* retried with exponential backoff on a dropped connection, a timeout or a 5xx/408/429 answer;
* free disk space checked before starting (:class:`DiskSpaceError`); a full disk while writing
  (``ENOSPC``/``EFBIG``/``EDQUOT``) stops it with :class:`DiskFullError`, keeping the partial file for
  a later resume;
* the user's Hugging Face token (``huggingface_hub.get_token()``: ``HF_TOKEN`` or ``hf auth login``)
  is sent as ``Authorization: Bearer`` to the hub endpoint only: followed redirects keep it while they
  stay on the endpoint's origin and drop it for any other host (the signed CDN URL the hub redirects
  LFS files to), as huggingface_hub does. A 401/403 (a gated or private repo) is a clear
  :class:`GatedModelError` message, not a retry;
* the sha256 of the bytes is checked against the hub's LFS sha256, and only then is the file renamed
  to its final name. A failed or cancelled download never has a ``.gguf`` name, so it is never listed
  as a model.

:class:`DownloadQueue` runs queued jobs on background threads (``max_parallel``, default 1) with
pause / resume / cancel and progress callbacks (bytes, speed, ETA) called on the worker thread.
"""

from __future__ import annotations

import errno
import hashlib
import http.client
import json
import os
import re
import shutil
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from urllib.parse import urlsplit

from app.engine.models.errors import (
    DiskFullError,
    DiskSpaceError,
    DownloadCancelled,
    DownloadError,
    HashMismatchError,
    ModelsError,
)

__all__ = [
    "DownloadJob",
    "DownloadProgress",
    "DownloadQueue",
    "DownloadState",
    "DownloadControl",
    "GatedModelError",
    "PauseRequested",
    "download_file",
    "find_interrupted",
    "part_path",
    "safe_destination",
    "safe_name",
    "sidecar_path",
]

CHUNK = 256 * 1024
PROGRESS_STEP = 1024 * 1024  # growth past the furthest point reached that earns the retries back
STOP_POLL_S = 0.1  # how often a running read looks at pause / cancel while the server is silent
DISK_MARGIN = 16 * 1024 * 1024
RETRY_STATUS = {408, 429, 500, 502, 503, 504}
_DISK_ERRNOS = {errno.ENOSPC, errno.EFBIG, getattr(errno, "EDQUOT", errno.ENOSPC)}


class DownloadState:
    QUEUED = "queued"
    RUNNING = "downloading"
    PAUSED = "paused"
    VERIFYING = "verifying"
    DONE = "done"
    FAILED = "failed"
    CANCELLED = "cancelled"


@dataclass(frozen=True)
class DownloadJob:
    url: str
    dest: Path
    size: int | None = None
    sha256: str | None = None
    repo_id: str = ""
    filename: str = ""
    revision: str = "main"

    def to_json(self) -> dict:
        d = asdict(self)
        d["dest"] = str(self.dest)
        return d

    @classmethod
    def from_json(cls, d: dict) -> DownloadJob:
        return cls(
            url=d["url"],
            dest=Path(d["dest"]),
            size=d.get("size"),
            sha256=d.get("sha256"),
            repo_id=d.get("repo_id", ""),
            filename=d.get("filename", ""),
            revision=d.get("revision", "main"),
        )


@dataclass(frozen=True)
class DownloadProgress:
    task_id: int
    job: DownloadJob
    state: str
    downloaded: int = 0
    total: int | None = None
    speed_bps: float = 0.0
    eta_s: float | None = None
    attempt: int = 0
    error: str | None = None
    resumable: bool = False

    @property
    def fraction(self) -> float | None:
        if not self.total:
            return None
        return min(1.0, self.downloaded / self.total)


class GatedModelError(DownloadError):
    """The hub refused the file (401/403): a gated or private repository, no or an unaccepted token."""


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:
        port = None
    return scheme, (parts.hostname or "").lower(), port or _DEFAULT_PORTS.get(scheme)


def resolve_token(token: str | bool | None = None) -> str | None:
    """The token to send: an explicit string, none for ``False``, else the user's saved token."""
    if token is False:
        return None
    if isinstance(token, str):
        return token.strip() or None
    try:
        from huggingface_hub import get_token

        return get_token()
    except Exception:  # noqa: BLE001 - no token is a valid answer (public repos work without one)
        return None


class _HubAuthRedirects(urllib.request.HTTPRedirectHandler):
    """Follow redirects, re-adding ``Authorization`` only while they stay on the hub's origin.

    The header is added as an *unredirected* header, so urllib never copies it to a redirect
    itself; this handler puts it back only when the new URL has the hub's origin (scheme, host,
    port). A CDN on another host never sees the token.
    """

    def __init__(self, origin: tuple[str, str, int | None], authorization: str) -> None:
        super().__init__()
        self.origin = origin
        self.authorization = authorization

    def redirect_request(self, req, fp, code, msg, headers, newurl):  # noqa: ANN001 - urllib's signature
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        if new is not None and _origin(newurl) == self.origin:
            new.add_unredirected_header("Authorization", self.authorization)
        return new


def _gated_message(job: DownloadJob, code: int, sent_token: bool) -> str:
    name = job.filename or job.dest.name
    where = f"huggingface.co/{job.repo_id}" if job.repo_id else "huggingface.co"
    why = "your Hugging Face token was refused" if sent_token else "no Hugging Face token was sent"
    return (
        f"This model is gated: the hub refused {name} (HTTP {code}; {why}). Accept its licence on {where} "
        "and log in with `hf auth login` (or set HF_TOKEN), then resume the download."
    )


class PauseRequested(Exception):
    """Internal: the user paused; the partial file stays for a resume."""


@dataclass
class DownloadControl:
    """Flags a running download polls between chunks."""

    pause: threading.Event = field(default_factory=threading.Event)
    cancel: threading.Event = field(default_factory=threading.Event)

    def check(self) -> None:
        if self.cancel.is_set():
            raise DownloadCancelled("The download was cancelled.")
        if self.pause.is_set():
            raise PauseRequested()


_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9._+-]")


def safe_name(text: str, what: str) -> str:
    """``text`` as a plain file or folder name (anything but letters, digits and ``._+-`` is
    ``_``); :class:`DownloadError` for one that is nothing but dots (``what`` names it)."""
    name = _UNSAFE_NAME_CHARS.sub("_", text.strip())
    if not name.strip("."):  # "", ".", "..", "..." would climb or name the folder itself
        raise DownloadError(f"The {what} {text!r} cannot be used as a file or folder name.")
    return name


def safe_destination(models_dir: Path, repo_id: str, filename: str) -> Path:
    """Where a hub file is saved: ``models_dir/<org>__<name>/<file name>``, always inside ``models_dir``.

    The repository id and the file name come from the hub's listing (an ``HF_ENDPOINT`` mirror may
    be anyone's), so both are reduced to plain names: ``/`` and ``\\`` separators (Windows' too),
    ``..``, drive colons and other punctuation cannot climb out. Raises :class:`DownloadError`
    for a name that is nothing but dots.
    """
    folder = safe_name("__".join(p for p in re.split(r"[/\\]", repo_id) if p), "repository id")
    base = re.split(r"[/\\]", filename)[-1]
    name = safe_name(base, "file name")
    root = Path(models_dir)
    dest = root / folder / name
    resolved_root = root.resolve()
    if resolved_root not in dest.resolve().parents:
        raise DownloadError(f"{repo_id}/{filename} would be saved outside the models folder.")
    return dest


def part_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".part")


def sidecar_path(dest: Path) -> Path:
    return dest.with_name(dest.name + ".part.json")


def _write_sidecar(job: DownloadJob) -> None:
    side = sidecar_path(job.dest)
    tmp = side.with_name(side.name + ".tmp")
    tmp.write_text(json.dumps(job.to_json()))
    os.replace(tmp, side)


def _remove_partial(job: DownloadJob) -> None:
    for p in (part_path(job.dest), sidecar_path(job.dest)):
        try:
            p.unlink()
        except FileNotFoundError:
            pass


def find_interrupted(folder: Path) -> list[tuple[DownloadJob, int]]:
    """Downloads left half-done under ``folder`` (e.g. the app was killed): (job, bytes already there)."""
    out: list[tuple[DownloadJob, int]] = []
    folder = Path(folder)
    if not folder.is_dir():
        return out
    for side in sorted(folder.rglob("*.part.json")):
        try:
            job = DownloadJob.from_json(json.loads(side.read_text()))
        except (OSError, ValueError, KeyError, TypeError):
            continue
        part = part_path(job.dest)
        have = part.stat().st_size if part.exists() else 0
        out.append((job, have))
    return out


def _hash_existing(path: Path, upto: int, cancel: DownloadControl | None) -> hashlib._Hash:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        remaining = upto
        while remaining > 0:
            block = f.read(min(CHUNK * 4, remaining))
            if not block:
                break
            h.update(block)
            remaining -= len(block)
    return h


def _disk_error(exc: OSError, job: DownloadJob) -> DiskFullError:
    return DiskFullError(
        f"The disk is full (or a file size limit was hit) while writing {job.dest.name} "
        f"({os.strerror(exc.errno or errno.ENOSPC)}). Free some space and resume the download."
    )


def check_disk_space(job: DownloadJob, already: int = 0) -> None:
    if not job.size:
        return
    folder = job.dest.parent
    probe = folder
    while not probe.exists() and probe != probe.parent:
        probe = probe.parent
    free = shutil.disk_usage(probe).free
    need = job.size - already + DISK_MARGIN
    if free < need:
        gib = 1024**3
        raise DiskSpaceError(
            f"Not enough disk space for {job.dest.name}: it needs {need / gib:.2f} GiB more, "
            f"{free / gib:.2f} GiB free on {probe}."
        )


class _StopWatcher:
    """While a response is read: a pause or cancel shuts its socket, so a read blocked on a
    silent server returns at once instead of after the socket timeout."""

    def __init__(self, resp: object, control: DownloadControl) -> None:
        self.resp = resp
        self.control = control
        self.done = threading.Event()
        self.thread = threading.Thread(target=self._watch, name="download-stop-watcher", daemon=True)

    def __enter__(self) -> _StopWatcher:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.done.set()
        self.thread.join()

    def _socket(self):  # noqa: ANN202 - a socket.socket or None
        fp = getattr(self.resp, "fp", None)
        raw = getattr(fp, "raw", None)
        return getattr(raw, "_sock", None)

    def _watch(self) -> None:
        while not self.done.wait(STOP_POLL_S):
            if self.control.cancel.is_set() or self.control.pause.is_set():
                sock = self._socket()
                try:
                    if sock is not None:
                        import socket

                        sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
                return


class _Speed:
    """Speed over the last few seconds."""

    def __init__(self) -> None:
        self.samples: list[tuple[float, int]] = []

    def add(self, t: float, total_bytes: int) -> float:
        self.samples.append((t, total_bytes))
        while len(self.samples) > 2 and t - self.samples[0][0] > 5.0:
            self.samples.pop(0)
        t0, b0 = self.samples[0]
        return (total_bytes - b0) / (t - t0) if t > t0 else 0.0


def download_file(
    job: DownloadJob,
    *,
    control: DownloadControl | None = None,
    progress: Callable[[int, int | None, float, int], None] | None = None,
    retries: int = 5,
    backoff_base: float = 0.5,
    backoff_max: float = 30.0,
    timeout: float = 30.0,
    headers: dict[str, str] | None = None,
    token: str | bool | None = None,
    endpoint: str | None = None,
) -> Path:
    """Download ``job`` to ``job.dest`` (resuming a ``.part`` if there is one) and return the path.

    ``progress(downloaded, total, speed_bps, attempt)`` is called as bytes arrive.
    ``token``: the Hugging Face token (None: the user's saved one, False: none). It is sent only
    when ``job.url`` is on the hub ``endpoint``'s origin (default: ``HF_ENDPOINT`` or
    huggingface.co), and only to redirects that stay there.
    Raises :class:`DownloadError` subclasses (:class:`GatedModelError` for 401/403),
    :class:`DownloadCancelled` or :class:`PauseRequested`.
    """
    from app.engine.models._endpoint import default_endpoint

    extra = {k: v for k, v in (headers or {}).items() if k.lower() != "authorization"}
    hub_origin = _origin(endpoint or default_endpoint())
    secret = resolve_token(token) if _origin(job.url) == hub_origin else None
    handlers: list[urllib.request.BaseHandler] = []
    if secret:
        handlers.append(_HubAuthRedirects(hub_origin, f"Bearer {secret}"))
    opener = urllib.request.build_opener(*handlers)
    control = control or DownloadControl()
    dest = Path(job.dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = part_path(dest)
    side = sidecar_path(dest)

    # A sidecar from another file version means the partial bytes are useless.
    if side.exists():
        try:
            old = DownloadJob.from_json(json.loads(side.read_text()))
            if (old.sha256, old.size) != (job.sha256, job.size):
                _remove_partial(job)
        except (OSError, ValueError, KeyError, TypeError):
            _remove_partial(job)
    elif part.exists():
        part.unlink()  # no sidecar: we do not know what these bytes are
    have = part.stat().st_size if part.exists() else 0
    if job.size is not None and have > job.size:
        part.unlink()
        have = 0
    check_disk_space(job, have)
    try:
        _write_sidecar(job)
    except OSError as exc:
        if exc.errno in _DISK_ERRNOS:
            raise _disk_error(exc, job) from exc
        raise DownloadError(f"Cannot write to {dest.parent}: {exc.strerror or exc}.") from exc

    hasher = _hash_existing(part, have, control) if have else hashlib.sha256()
    total = job.size
    speed = _Speed()
    attempt = 0
    high_water = have
    last_report = 0.0
    if progress:
        progress(have, total, 0.0, attempt)

    while True:
        control.check()
        if total is not None and have >= total:
            break
        req = urllib.request.Request(job.url, headers=extra)
        if secret:
            req.add_unredirected_header("Authorization", f"Bearer {secret}")
        req.add_header("User-Agent", "Callisto")
        req.add_header("Accept-Encoding", "identity")
        if have:
            req.add_header("Range", f"bytes={have}-")
        overflow = False
        try:
            with opener.open(req, timeout=timeout) as resp:
                status = resp.status
                if have and status == 200:
                    # The server ignored the Range: start again from zero.
                    have = 0
                    hasher = hashlib.sha256()
                    with open(part, "wb"):
                        pass
                elif status == 206:
                    crange = resp.headers.get("Content-Range", "")
                    start = crange.split(" ", 1)[-1].split("-", 1)[0]
                    if start.isdigit() and int(start) != have:
                        raise DownloadError(f"The server resumed {dest.name} at the wrong offset ({crange}).")
                length = resp.headers.get("Content-Length")
                if total is None and length and length.isdigit():
                    total = have + int(length)
                try:
                    f = open(part, "ab")
                except OSError as exc:
                    if exc.errno in _DISK_ERRNOS:
                        raise _disk_error(exc, job) from exc
                    raise DownloadError(f"Cannot write {part}: {exc.strerror or exc}.") from exc
                with f, _StopWatcher(resp, control):
                    while True:
                        control.check()
                        block = resp.read1(CHUNK)
                        control.check()  # a pause or cancel may have cut the connection
                        if not block:
                            break
                        if total is not None and have + len(block) > total:
                            # The server sends more than the announced size: keep the announced
                            # bytes (the hash decides) and stop reading; never fill the disk.
                            block = block[: total - have]
                            overflow = True
                        try:
                            f.write(block)
                            f.flush()
                        except OSError as exc:
                            if exc.errno in _DISK_ERRNOS:
                                raise _disk_error(exc, job) from exc
                            raise DownloadError(f"Cannot write {part}: {exc.strerror or exc}.") from exc
                        hasher.update(block)
                        have += len(block)
                        now = time.monotonic()
                        bps = speed.add(now, have)
                        if progress and (now - last_report >= 0.1 or (total and have >= total)):
                            last_report = now
                            progress(have, total, bps, attempt)
                        if overflow:
                            break
            if total is None or have >= total:
                break
            raise http.client.IncompleteRead(b"", (total - have) if total else None)
        except urllib.error.HTTPError as exc:
            if exc.code == 416 and total is not None and have >= total:
                break
            if exc.code in (401, 403):
                raise GatedModelError(_gated_message(job, exc.code, bool(secret))) from exc
            if exc.code not in RETRY_STATUS:
                raise DownloadError(
                    f"The server refused {job.filename or dest.name}: HTTP {exc.code} {exc.reason}."
                ) from exc
            error: BaseException = exc
        except (DownloadError, PauseRequested):
            raise
        except (urllib.error.URLError, http.client.HTTPException, ConnectionError, TimeoutError) as exc:
            error = exc
        except OSError as exc:
            if exc.errno in _DISK_ERRNOS:
                raise _disk_error(exc, job) from exc
            error = exc
        control.check()  # a pause or cancel that cut the connection is not a network error
        # Only real progress earns the retries back: the file must grow past the furthest point any
        # earlier response reached, by a whole step. A server that ignores Range and sends short
        # bodies restarts from zero every time, so it never resets the count and fails in the end.
        if have >= high_water + PROGRESS_STEP or (total is not None and have >= total):
            attempt = 0
        high_water = max(high_water, have)
        attempt += 1
        if attempt > retries:
            raise DownloadError(
                f"Downloading {dest.name} failed after {retries} retries: {_reason(error)}. "
                "The partial file is kept: resume to continue."
            ) from error
        delay = min(backoff_max, backoff_base * (2 ** (attempt - 1)))
        if progress:
            progress(have, total, 0.0, attempt)
        # Wait for the backoff, but wake up at once on pause/cancel.
        if control.cancel.wait(delay) or control.pause.is_set():
            control.check()

    if total is not None and have != total:
        raise DownloadError(f"{dest.name}: got {have} bytes, expected {total}.")
    if job.sha256:
        digest = hasher.hexdigest()
        if digest.lower() != job.sha256.lower():
            _remove_partial(job)
            raise HashMismatchError(
                f"{dest.name} is corrupt: its sha256 {digest[:12]}… does not match the hub's "
                f"{job.sha256[:12]}…. The file was deleted; download it again."
            )
    os.replace(part, dest)
    try:
        side.unlink()
    except FileNotFoundError:
        pass
    return dest


def _reason(exc: BaseException) -> str:
    if isinstance(exc, urllib.error.HTTPError):
        return f"HTTP {exc.code} {exc.reason}"
    if isinstance(exc, urllib.error.URLError):
        return str(exc.reason)
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


@dataclass
class _Task:
    task_id: int
    job: DownloadJob
    progress: DownloadProgress
    control: DownloadControl = field(default_factory=DownloadControl)
    done: threading.Event = field(default_factory=threading.Event)


class DownloadQueue:
    """Queue of downloads run on background threads, ``max_parallel`` at a time.

    ``on_progress(DownloadProgress)`` and ``on_finished(DownloadProgress)`` are called on worker
    threads (a UI marshals them to its own thread). ``on_finished`` sees DONE, FAILED, CANCELLED
    or PAUSED.
    """

    def __init__(
        self,
        *,
        max_parallel: int = 1,
        on_progress: Callable[[DownloadProgress], None] | None = None,
        on_finished: Callable[[DownloadProgress], None] | None = None,
        on_complete: Callable[[DownloadJob, Path], None] | None = None,
        retries: int = 5,
        backoff_base: float = 0.5,
        timeout: float = 30.0,
        token: str | bool | None = None,
        endpoint: str | None = None,
    ) -> None:
        self.max_parallel = max(1, int(max_parallel))
        self.token = token  # None: the user's saved token, read when each download starts
        self.endpoint = endpoint
        self.on_progress = on_progress
        self.on_finished = on_finished
        self.on_complete = on_complete
        self.retries = retries
        self.backoff_base = backoff_base
        self.timeout = timeout
        self._lock = threading.Condition()
        self._tasks: dict[int, _Task] = {}
        self._pending: list[int] = []
        self._running: set[int] = set()
        self._next_id = 1
        self._closed = False
        self._workers: list[threading.Thread] = []
        for i in range(self.max_parallel):
            t = threading.Thread(target=self._worker, name=f"callisto-download-{i}", daemon=True)
            t.start()
            self._workers.append(t)

    # -- public API -----------------------------------------------------------------------------
    def add(self, job: DownloadJob, *, start_paused: bool = False) -> int:
        with self._lock:
            if self._closed:
                raise ModelsError("The download queue is shut down.")
            for t in self._tasks.values():
                if t.job.dest == job.dest and t.progress.state in (
                    DownloadState.QUEUED,
                    DownloadState.RUNNING,
                    DownloadState.PAUSED,
                    DownloadState.VERIFYING,
                ):
                    return t.task_id  # already queued
            tid = self._next_id
            self._next_id += 1
            part = part_path(job.dest)
            have = part.stat().st_size if part.exists() and sidecar_path(job.dest).exists() else 0
            state = DownloadState.PAUSED if start_paused else DownloadState.QUEUED
            task = _Task(tid, job, DownloadProgress(tid, job, state, have, job.size, resumable=have > 0))
            self._tasks[tid] = task
            if not start_paused:
                self._pending.append(tid)
                self._lock.notify_all()
        self._emit(task.progress)
        return tid

    def restore_interrupted(self, folder: Path, *, autostart: bool = False) -> list[int]:
        """Re-list downloads left half-done in ``folder`` (paused unless ``autostart``)."""
        return [self.add(job, start_paused=not autostart) for job, _have in find_interrupted(folder)]

    def pause(self, task_id: int) -> None:
        with self._lock:
            task = self._tasks[task_id]
            if task.progress.state == DownloadState.QUEUED:
                self._pending.remove(task_id)
                self._set(task, state=DownloadState.PAUSED)
            elif task.progress.state == DownloadState.RUNNING:
                task.control.pause.set()
            else:
                return
        self._emit(task.progress)

    def resume(self, task_id: int) -> None:
        with self._lock:
            task = self._tasks[task_id]
            if task.progress.state not in (DownloadState.PAUSED, DownloadState.FAILED):
                return
            task.control = DownloadControl()
            task.done.clear()
            self._set(task, state=DownloadState.QUEUED, error=None)
            self._pending.append(task_id)
            self._lock.notify_all()
        self._emit(task.progress)

    def cancel(self, task_id: int) -> None:
        with self._lock:
            task = self._tasks[task_id]
            state = task.progress.state
            if state == DownloadState.RUNNING:
                task.control.cancel.set()
                return
            if state in (DownloadState.DONE, DownloadState.CANCELLED):
                return
            if task_id in self._pending:
                self._pending.remove(task_id)
            _remove_partial(task.job)
            self._set(task, state=DownloadState.CANCELLED, downloaded=0, resumable=False)
            task.done.set()
        self._emit(task.progress)
        if self.on_finished:
            self.on_finished(task.progress)

    def get(self, task_id: int) -> DownloadProgress:
        with self._lock:
            return self._tasks[task_id].progress

    def tasks(self) -> list[DownloadProgress]:
        with self._lock:
            return [t.progress for t in self._tasks.values()]

    def wait(self, task_id: int, timeout: float | None = None) -> DownloadProgress:
        """Block until the task stops (done, failed, cancelled or paused)."""
        with self._lock:
            task = self._tasks[task_id]
        task.done.wait(timeout)
        return self.get(task_id)

    def shutdown(self, *, wait: bool = True) -> None:
        """Pause running downloads (their partial files stay for next time) and stop the workers."""
        with self._lock:
            self._closed = True
            for tid in self._running:
                self._tasks[tid].control.pause.set()
            self._lock.notify_all()
        if wait:
            for t in self._workers:
                t.join(timeout=60)

    # -- internals ------------------------------------------------------------------------------
    def _set(self, task: _Task, **changes) -> None:
        task.progress = replace(task.progress, **changes)

    def _emit(self, progress: DownloadProgress) -> None:
        if self.on_progress:
            try:
                self.on_progress(progress)
            except Exception:  # noqa: BLE001 - a UI callback must not kill the worker
                pass

    def _worker(self) -> None:
        while True:
            with self._lock:
                while not self._pending and not self._closed:
                    self._lock.wait()
                if self._closed:
                    return
                tid = self._pending.pop(0)
                task = self._tasks[tid]
                self._running.add(tid)
                self._set(task, state=DownloadState.RUNNING, error=None)
            self._emit(task.progress)
            self._run(task)
            with self._lock:
                self._running.discard(tid)
                task.done.set()
            if self.on_finished:
                try:
                    self.on_finished(task.progress)
                except Exception:  # noqa: BLE001
                    pass

    def _run(self, task: _Task) -> None:
        def report(done: int, total: int | None, bps: float, attempt: int) -> None:
            eta = (total - done) / bps if total and bps > 0 else None
            with self._lock:
                self._set(task, downloaded=done, total=total, speed_bps=bps, eta_s=eta, attempt=attempt)
                snap = task.progress
            self._emit(snap)

        try:
            path = download_file(
                task.job,
                control=task.control,
                progress=report,
                retries=self.retries,
                backoff_base=self.backoff_base,
                timeout=self.timeout,
                token=self.token,
                endpoint=self.endpoint,
            )
        except PauseRequested:
            part = part_path(task.job.dest)
            have = part.stat().st_size if part.exists() else 0
            with self._lock:
                self._set(
                    task,
                    state=DownloadState.PAUSED,
                    downloaded=have,
                    speed_bps=0.0,
                    eta_s=None,
                    resumable=True,
                )
        except DownloadCancelled:
            _remove_partial(task.job)
            with self._lock:
                self._set(task, state=DownloadState.CANCELLED, downloaded=0, speed_bps=0.0, eta_s=None)
        except (DiskFullError, DownloadError) as exc:
            part = part_path(task.job.dest)
            keep = part.exists()
            with self._lock:
                self._set(
                    task,
                    state=DownloadState.FAILED,
                    error=str(exc),
                    speed_bps=0.0,
                    eta_s=None,
                    resumable=keep,
                    downloaded=part.stat().st_size if keep else 0,
                )
        except Exception as exc:  # noqa: BLE001 - never lose the worker thread
            with self._lock:
                self._set(
                    task, state=DownloadState.FAILED, error=f"{type(exc).__name__}: {exc}", speed_bps=0.0
                )
        else:
            if self.on_complete:
                try:
                    self.on_complete(task.job, path)
                except Exception as exc:  # noqa: BLE001
                    with self._lock:
                        self._set(
                            task, state=DownloadState.FAILED, error=f"Registering the model failed: {exc}"
                        )
                    self._emit(task.progress)
                    return
            with self._lock:
                self._set(
                    task, state=DownloadState.DONE, downloaded=path.stat().st_size, speed_bps=0.0, eta_s=0.0
                )
        self._emit(task.progress)
