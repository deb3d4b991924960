"""llama.cpp in an engine process of its own: one supervised child process per loaded model.

A model file comes from a stranger; llama.cpp answers some bad files and some bugs with
``abort()`` or a segfault, and the operating system answers memory exhaustion by killing the
process. Running llama.cpp inside the window's process would take the window, its unsaved
state and every other model down with it. So :func:`app.engine.llm.load_model` starts an
:class:`EngineProcess`: a fresh interpreter (``python -m app --engine-child``, or the bundle's
own executable with ``--engine-child``: the caller's main module is never re-imported) that
loads the model with llama-cpp-python and runs everything that touches llama.cpp, on one thread
(llama.cpp's CPU thread team stays on the thread that loaded the model):

* tokenizing, detokenizing, grammar validation;
* constraint compilation and the llguidance token mask (``app.engine.constraints``): the mask
  must sit next to the logits, so the compiled constraint stays in the child and the parent
  holds a handle (:class:`ProcessConstraint`);
* generation, streamed back piece by piece (:meth:`ProcessBackend.stream`), with prompt progress;
  with ``parallel`` N > 1 slots (the load's ``parallel``, else :func:`parallel_slots`) up to N
  generations stream at once, batched in the child (``app.engine.scheduler``), and
  ``ProcessBackend.stream`` no longer serialises them.

The protocol is ``multiprocessing.connection`` messages (small pickled tuples) over a socket
pair (a named pipe on Windows); the parent's reader thread routes each reply to
the request that waits for it, so a tokenize call from one thread may run while another thread
streams a generation (the child answers such calls between two tokens). Cancelling is a message
the child reads before every token. :class:`ProcessBackend` is the parent's side, one of the two
backends of a ``LoadedModel`` (``app.engine.backend``): callers do not know where llama.cpp runs.

When the child dies (abort, segfault, out of memory, killed), every waiting call raises
:class:`~app.engine.errors.EngineCrashedError` (a ``GenerationError``) whose message says
in plain words what happened and to which model, e.g. "The model crashed while generating:
llama.cpp aborted (SIGABRT)". The parent is untouched and can load the model again. When the
parent dies, the child sees its pipe close, or its watch thread sees the parent gone, and exits.

**No call waits forever.** The child sends a heartbeat every second (``engine_child.HEARTBEAT_S``)
from a thread of its own, whatever its main thread does (loading, reading a long prompt,
compiling a constraint, generating). The parent's watchdog (a thread per engine, one tick a
second) ends a child that sent nothing for :data:`STALL_S` seconds while using no CPU time: a
process stopped (SIGSTOP, a debugger) or stuck (a deadlock). Every waiting call then raises
``EngineCrashedError`` ("... stopped answering for 30 s ..."), within ``STALL_S`` plus a tick
or two, and the next load starts a fresh child. A generation or a load that runs long but lives
is never cut: its heartbeat goes on. ``CALLISTO_ENGINE_STALL_S`` overrides the bound (tests).
A consumer interrupted by Ctrl-C (``KeyboardInterrupt``, ``SystemExit``) waits at most
:data:`INTERRUPT_GRACE_S` for the child to stop, then ends it. At exit every engine process
still open is closed (:func:`_close_at_exit`); the child ignores SIGINT (a terminal sends Ctrl-C to
the whole group: the app decides) and exits by itself when its parent is gone.

The child's stderr (llama.cpp's own messages, read back to describe a crash) goes to a file in
the temp folder, ``callisto-engine-<the app's pid>-<random>.log``, deleted when the engine is
closed. An app that never got to close it (killed, crashed, the machine switched off) leaves it
behind, so the first engine an app starts deletes the logs of apps that no longer run
(:func:`sweep_orphan_logs`): a temp folder that nothing empties (Windows') does not fill with them.
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import logging
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.engine.errors import EngineCrashedError, EngineError, GenerationError, GrammarError, ModelLoadError

if TYPE_CHECKING:
    from app.engine.embedding import Embeddings, Scores
    from app.engine.generation import Generation
    from app.engine.llm import LoadedModel

__all__ = [
    "connect_child",
    "EngineProcess",
    "ProcessBackend",
    "ProcessConstraint",
    "describe_exit",
    "plain_reason",
    "sweep_orphan_logs",
]

log = logging.getLogger(__name__)

_STDERR_TAIL = 8192  # bytes of the child's stderr kept to explain a crash

#: seconds an engine process may stay silent (no heartbeat, no reply) while using no CPU time
#: before the watchdog ends it as stopped or hung (``CALLISTO_ENGINE_STALL_S`` overrides it)
STALL_S = 30.0
#: seconds between two looks of the watchdog
WATCH_TICK_S = 1.0
#: seconds a generation interrupted by Ctrl-C waits for the child to stop before it is ended
INTERRUPT_GRACE_S = 2.0
#: slots of an engine process when its load does not say (``app.engine.scheduler``; 1: one
#: generation at a time, no scheduler); ``CALLISTO_ENGINE_PARALLEL`` overrides it
PARALLEL = 1


def parallel_slots() -> int:
    """:data:`PARALLEL`, or ``CALLISTO_ENGINE_PARALLEL`` when it holds a whole number >= 1."""
    try:
        value = int(os.environ.get("CALLISTO_ENGINE_PARALLEL", ""))
    except ValueError:
        return PARALLEL
    return value if value >= 1 else PARALLEL


#: every engine process started here and not closed yet (closed at exit, see :func:`_close_at_exit`)
_LIVE: weakref.WeakSet[EngineProcess] = weakref.WeakSet()


def _close_at_exit() -> None:
    """At interpreter exit, stop every engine process still open: a model's own finalizer closes
    its engine, but one that is still loading (no model yet) or whose model is held past the end
    (a thread stuck on a stopped engine) is closed here, so none outlives this process."""
    for engine in list(_LIVE):
        with contextlib.suppress(Exception):
            engine.close(timeout=1.0)
    # one still being started on another thread (forked, not yet known here) is ended too
    with contextlib.suppress(Exception):
        import psutil

        for child in psutil.Process().children():
            with contextlib.suppress(psutil.Error):
                if _CHILD_FLAG in child.cmdline():
                    child.kill()


atexit.register(_close_at_exit)

#: an engine's stderr log in the temp folder; the number is the pid of the app that started it
_LOG_PREFIX = "callisto-engine-"
_LOG_NAME = re.compile(re.escape(_LOG_PREFIX) + r"(\d+)-\w+\.log")
_swept = threading.Event()


def sweep_orphan_logs(folder: str | os.PathLike[str] | None = None) -> list[Path]:
    """Delete the engine logs in ``folder`` (the temp folder) whose app no longer runs (see the
    module docstring); returns those deleted. A log of a running app, this one's included, and
    every other file are kept; one that cannot be deleted (another user's, still open on
    Windows) is left for a later sweep."""
    import psutil

    root = Path(folder if folder is not None else tempfile.gettempdir())
    removed: list[Path] = []
    try:
        entries = list(os.scandir(root))
    except OSError:
        return removed
    for entry in entries:
        m = _LOG_NAME.fullmatch(entry.name)
        if m is None:
            continue
        pid = int(m.group(1))
        if pid == os.getpid():
            continue
        try:
            if psutil.pid_exists(pid) or not entry.is_file(follow_symlinks=False):
                continue
            os.unlink(entry.path)
        except (OSError, ValueError, OverflowError, psutil.Error):  # (a pid past what the OS knows)
            continue
        removed.append(Path(entry.path))
    if removed:
        log.info("Deleted %d engine log(s) left by apps that no longer run", len(removed))
    return removed


def stall_seconds() -> float:
    """:data:`STALL_S`, or ``CALLISTO_ENGINE_STALL_S`` when it holds a positive number."""
    try:
        value = float(os.environ.get("CALLISTO_ENGINE_STALL_S", ""))
    except ValueError:
        return STALL_S
    return value if 0 < value < float("inf") else STALL_S


_WINDOWS_CODES = {
    3: "llama.cpp aborted",
    0xC0000005: "llama.cpp crashed (access violation)",
    0xC00000FD: "llama.cpp crashed (stack overflow)",
    0xC0000409: "llama.cpp aborted (stack buffer check)",
    0xC0000017: "the system ran out of memory",
}


def describe_exit(exitcode: int | None) -> str:
    """How a child process ended, in words: ``llama.cpp aborted (SIGABRT)``, ``it was killed
    (SIGKILL: out of memory, or stopped by another program)``, ``it exited with code 3``."""
    if exitcode is None:
        return "it stopped answering"
    if exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        if name == "SIGABRT":
            return "llama.cpp aborted (SIGABRT)"
        if name in ("SIGSEGV", "SIGBUS", "SIGILL", "SIGFPE"):
            return f"llama.cpp crashed ({name})"
        if name == "SIGKILL":
            return "it was killed (SIGKILL: out of memory, or stopped by another program)"
        return f"it was stopped by {name}"
    if sys.platform == "win32" and exitcode in _WINDOWS_CODES:
        return _WINDOWS_CODES[exitcode]
    if exitcode > 0xFFFF:
        return f"it crashed (exit code 0x{exitcode:08X})"
    return f"it exited with code {exitcode}"


def _reason_from_stderr(text: str) -> str | None:
    """The line of llama.cpp's output that says why it stopped, if it wrote one (from the
    ``GGML_ASSERT`` on, without the source path in front)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    for marker in ("GGML_ASSERT", "GGML_ABORT", "terminate called", "what():", "error loading model"):
        for ln in reversed(lines):
            at = ln.find(marker)
            if at >= 0:
                return ln[at:][:300]
    return None


# what a llama.cpp check is about, in a user's words (first match wins)
_PLAIN = (
    (("n_layer", "LLAMA_MAX_LAYERS", "block_count"), "llama.cpp rejected its layer count"),
    (("norm_eps", "norm_rms_eps", "epsilon"), "llama.cpp rejected its norm epsilon"),
    (("n_head", "n_embd_head", "head_count"), "llama.cpp rejected its attention head sizes"),
    (("n_ctx", "context"), "llama.cpp rejected its context size"),
    (("vocab", "token", "scores"), "llama.cpp rejected its vocabulary"),
    (("tensor", "ggml_nbytes", "ne["), "llama.cpp rejected one of its weight tensors"),
    (("alloc", "out of memory", "bad_alloc"), "the engine ran out of memory"),
)


def plain_reason(reason: str | None, how: str) -> str:
    """A one-phrase account of a crash: what llama.cpp's last words were about, else ``how``."""
    if reason:
        for words, phrase in _PLAIN:
            if any(w in reason for w in words):
                return phrase
    return how


@dataclass(frozen=True)
class ProcessConstraint:
    """A constraint compiled inside the engine process: ``grammar`` and ``describe`` as for
    :class:`app.engine.constraints.Constraint`; ``handle`` names it in the child."""

    engine: EngineProcess
    handle: int
    grammar: str
    describe: str

    def after(self, text: str) -> ProcessConstraint:
        """This constraint with ``text`` already written (see ``Constraint.after``)."""
        handle, grammar, describe = self.engine.call("constraint_after", self.handle, text)
        return ProcessConstraint(self.engine, handle, grammar, describe)

    def start(self, budget: int | None = None) -> _ProcessRun:
        """A view of a fresh run: ``allowed()`` is the first token mask (computed in the child;
        the child's own run gets the budget of the reply it generates)."""
        return _ProcessRun(self)

    def __repr__(self) -> str:
        return f"Constraint({self.describe})"


@dataclass(frozen=True)
class _ProcessRun:
    constraint: ProcessConstraint

    def allowed(self) -> Any:
        """The next token mask, a boolean array of the vocabulary's size."""
        return self.constraint.engine.call("constraint_allowed", self.constraint.handle)


class EngineProcess:
    """One child process holding one llama.cpp model (see the module docstring)."""

    def __init__(self, model_name: str):
        self.model_name = model_name
        self._conn: Any = None
        self._proc: Any = None
        self._ids = itertools.count(1)
        self._lock = threading.Lock()  # guards _waiters and _dead
        self._send_lock = threading.Lock()
        self._waiters: dict[int, queue.SimpleQueue[tuple[Any, ...]]] = {}
        self._dead: EngineCrashedError | None = None
        self._closing = False
        self._loaded = False
        self._stderr_path: str | None = None
        self._reader: threading.Thread | None = None
        self.stall_s = stall_seconds()
        self._heard = 0  # messages received (heartbeats included): the watchdog's sign of life
        self._stalled: float | None = None  # the silence (s) after which the watchdog ended it

    # -- lifecycle -----------------------------------------------------------------------------

    @classmethod
    def start(cls, model_name: str, load_args: dict[str, Any]) -> tuple[EngineProcess, dict[str, Any]]:
        """Start a child, load the model in it and return ``(engine, info)``; raises
        ``ModelLoadError`` as an in-process load would, with a crash described in its problem."""
        self = cls(model_name)
        if not _swept.is_set():  # once an app: the logs that apps killed before it left behind
            _swept.set()
            with contextlib.suppress(Exception):
                sweep_orphan_logs()
        fd, self._stderr_path = tempfile.mkstemp(prefix=f"{_LOG_PREFIX}{os.getpid()}-", suffix=".log")
        try:
            with os.fdopen(fd, "wb") as log_file:
                self._proc, self._conn = _spawn(log_file)
        except OSError as exc:
            self._cleanup_files()
            raise ModelLoadError(load_args["path"], f"the engine process could not start ({exc})") from exc
        _LIVE.add(self)
        rid, q = self._register(0)
        self._reader = threading.Thread(target=self._read, name=f"engine-reader {model_name}", daemon=True)
        self._reader.start()
        threading.Thread(target=self._watch, name=f"engine-watchdog {model_name}", daemon=True).start()
        try:
            try:
                self._send(("load", load_args))
            except (OSError, ValueError):
                pass  # it died already: the reader says how
            msg = q.get()
        except BaseException:  # Ctrl-C while it loads: nobody will use this child
            self.kill()
            raise
        finally:
            self._unregister(rid)
        if msg[0] == "dead":
            crash = self._crash_error("loading")
            self.close()
            raise ModelLoadError(load_args["path"], str(crash)) from crash
        _, _, ok, value = msg
        if not ok:
            self.close()
            if isinstance(value, EngineError):
                raise value
            # not an engine error (llama.cpp's library missing or broken, an OSError...): one
            # sentence naming the file, as every failed load says
            raise ModelLoadError(load_args["path"], _load_problem(value)) from value
        self._loaded = True
        return self, value

    @property
    def pid(self) -> int | None:
        return None if self._proc is None else self._proc.pid

    @property
    def alive(self) -> bool:
        return self._dead is None and self._proc is not None and self._proc.poll() is None

    @property
    def crash(self) -> EngineCrashedError | None:
        """The error of a child that died, None while it lives (or after a clean close)."""
        return None if self._closing else self._dead

    def close(self, timeout: float = 5.0) -> None:
        """Stop the child (it frees the model) and wait for it; kill it if it does not stop within
        ``timeout`` seconds, at once when it is stopped (SIGSTOP) or when the wait is interrupted."""
        self._closing = True
        proc, self._proc = self._proc, None
        _LIVE.discard(self)
        if proc is None:
            return
        with contextlib.suppress(OSError, ValueError):
            self._send(("close",))
        try:
            if _is_stopped(proc.pid):
                raise subprocess.TimeoutExpired(proc.args, 0)
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            _kill(proc)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout)
        except BaseException:  # Ctrl-C while it closes: end it, never leave it behind
            _kill(proc)
            raise
        with contextlib.suppress(OSError):
            self._conn.close()
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(timeout)
        self._cleanup_files()

    def interrupt(self) -> None:
        """The user is leaving (Ctrl-C): close the child with :data:`INTERRUPT_GRACE_S` to stop,
        so that no wait for it (a generation being drained, a close) outlasts that."""
        self.close(timeout=INTERRUPT_GRACE_S)

    def kill(self) -> None:
        """End the child now (it is stuck, or nobody waits for it any more); the waiting calls get
        ``EngineCrashedError`` from the reader, as for any death."""
        proc = self._proc
        if proc is not None:
            _kill(proc)

    def _watch(self) -> None:
        """The watchdog (see the module docstring): ends a child that stays silent for
        ``stall_s`` seconds without using CPU time. Counts ticks, not the clock, so a parent that
        was itself suspended (a laptop asleep) never ends a healthy child on waking."""
        import psutil

        proc = self._proc
        if proc is None:
            return
        try:
            ps = psutil.Process(proc.pid)
        except psutil.Error:
            return
        ticks_needed = max(1, round(self.stall_s / WATCH_TICK_S))
        heard, cpu, silent = -1, -1.0, 0
        while self._proc is proc and self._dead is None:
            time.sleep(WATCH_TICK_S)
            try:
                times = ps.cpu_times()
                now_cpu = times.user + times.system
            except psutil.Error:
                return  # it is gone: the reader says how
            if self._heard != heard or now_cpu > cpu + 0.05:
                heard, cpu, silent = self._heard, now_cpu, 0
                continue
            silent += 1
            if silent >= ticks_needed and self._proc is proc and self._dead is None:
                self._stalled = self.stall_s
                log.warning("engine %s sent nothing for %g s: ending it", self.model_name, self.stall_s)
                _kill(proc)
                return

    def _cleanup_files(self) -> None:
        if self._stderr_path:
            with contextlib.suppress(OSError):
                os.unlink(self._stderr_path)

    # -- requests ------------------------------------------------------------------------------

    def _register(self, rid: int | None = None) -> tuple[int, queue.SimpleQueue[tuple[Any, ...]]]:
        q: queue.SimpleQueue[tuple[Any, ...]] = queue.SimpleQueue()
        with self._lock:
            if self._dead is not None:
                raise self._dead
            if rid is None:
                rid = next(self._ids)
            self._waiters[rid] = q
        return rid, q

    def _unregister(self, rid: int) -> None:
        with self._lock:
            self._waiters.pop(rid, None)

    def _send(self, msg: tuple[Any, ...]) -> None:
        with self._send_lock:
            self._conn.send(msg)

    def _send_checked(self, msg: tuple[Any, ...]) -> None:
        try:
            self._send(msg)
        except (OSError, ValueError, EOFError):
            self._wait_dead()
            raise self._crash_error("generating") from None

    def call(self, op: str, *args: Any) -> Any:
        """Run ``op`` in the child (see ``engine_child.OPS``) and return its result or raise its
        error; :class:`EngineCrashedError` if the child dies meanwhile."""
        rid, q = self._register()
        try:
            self._send_checked(("call", rid, op, args))
            msg = q.get()
        finally:
            self._unregister(rid)
        if msg[0] == "dead":
            raise self._crash_error("generating")
        _, _, ok, value = msg
        if ok:
            return value
        raise value

    # -- the reader thread ----------------------------------------------------------------------

    def _read(self) -> None:
        conn = self._conn
        while True:
            try:
                msg = conn.recv()
            except (EOFError, OSError, ValueError):
                break
            except Exception:  # noqa: BLE001 - an unpicklable reply must not kill the reader
                log.exception("engine %s sent an unreadable message", self.model_name)
                continue
            self._heard += 1
            if msg[0] == "beat":
                continue
            with self._lock:
                q = self._waiters.get(msg[1])
            if q is not None:
                q.put(msg)
        self._on_exit()

    def _on_exit(self) -> None:
        proc = self._proc
        exitcode = None
        if proc is not None:
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(5.0)
            exitcode = proc.returncode
        how = describe_exit(exitcode)
        stage = "generating" if self._loaded else "loading"
        reason = _reason_from_stderr(self._stderr_tail())
        plain = plain_reason(reason, how)
        if self._stalled is not None:
            how = plain = f"it stopped answering for {self._stalled:g} s (stopped or hung), so it was ended"
            reason = None
        details = how if plain != how else ""
        if reason:
            details = f"{details}; llama.cpp said: {reason}" if details else f"llama.cpp said: {reason}"
        message = f"The model {self.model_name} crashed while {stage}: {plain}"
        if details:
            message += f" ({details})"
        err = EngineCrashedError(message, stage=stage, exit=how, model=self.model_name)
        with self._lock:
            self._dead = err
            waiters = list(self._waiters.values())
        for q in waiters:
            q.put(("dead",))
        if not self._closing:
            log.info("%s", message)

    def _wait_dead(self) -> None:
        if self._reader is not None and self._reader is not threading.current_thread():
            self._reader.join(10.0)

    def _crash_error(self, stage: str) -> EngineCrashedError:
        err = self._dead
        if err is None:
            err = EngineCrashedError(
                f"The model crashed while {stage}: its engine process stopped ({self.model_name})",
                stage=stage,
                model=self.model_name,
            )
        if self._closing:
            return EngineCrashedError(
                f"the model {self.model_name} is closed", stage=stage, model=self.model_name
            )
        return err

    def _stderr_tail(self) -> str:
        if not self._stderr_path:
            return ""
        try:
            with open(self._stderr_path, "rb") as fh:
                fh.seek(0, os.SEEK_END)
                size = fh.tell()
                fh.seek(max(0, size - _STDERR_TAIL))
                return fh.read().decode("utf-8", "replace")
        except OSError:
            return ""


def _load_problem(exc: BaseException) -> str:
    """What went wrong in a load that failed with an error that is not the engine's own."""
    text = " ".join(str(exc).split())[:500] or type(exc).__name__
    if "shared library" in text.lower() or isinstance(exc, ImportError):
        where = os.environ.get("LLAMA_CPP_LIB_PATH")
        hint = f" (LLAMA_CPP_LIB_PATH is {where})" if where else ""
        return f"the llama.cpp library could not be loaded{hint}: {text}"
    return f"the engine failed ({type(exc).__name__}: {text})"


def _is_stopped(pid: int) -> bool:
    """Whether process ``pid`` is stopped (SIGSTOP, a debugger): it cannot answer or exit."""
    import psutil

    try:
        return psutil.Process(pid).status() in (psutil.STATUS_STOPPED, psutil.STATUS_TRACING_STOP)
    except psutil.Error:
        return False


def _kill(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL (TerminateProcess on Windows); a stopped process dies of it too."""
    with contextlib.suppress(OSError):
        proc.kill()


_CHILD_FLAG = "--engine-child"


def _child_command(channel: str) -> list[str]:
    """The command that starts an engine process: the bundle's own executable when frozen
    (PyInstaller), else this Python running ``python -m app --engine-child``."""
    if getattr(sys, "frozen", False):
        return [sys.executable, _CHILD_FLAG, channel]
    return [sys.executable, "-m", "app", _CHILD_FLAG, channel]


def _child_env() -> dict[str, str]:
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parents[2])  # the folder holding the ``app`` package
    env["PYTHONPATH"] = os.pathsep.join(p for p in (root, env.get("PYTHONPATH", "")) if p)
    env["CALLISTO_ENGINE_PARENT"] = str(os.getpid())  # the child exits when this process is gone
    return env


def _spawn(log_file: Any) -> tuple[subprocess.Popen[bytes], Any]:
    """Start the child with stderr to ``log_file``; return it and the parent's connection.

    POSIX: a socket pair, the child's end passed as an inherited descriptor. Windows: a named
    pipe listener (``multiprocessing.connection``) with a random key given in the environment."""
    from multiprocessing.connection import Connection

    common: dict[str, Any] = {
        "stdin": subprocess.DEVNULL,
        "stdout": subprocess.DEVNULL,
        "stderr": log_file,
        "env": _child_env(),
    }
    if sys.platform != "win32":
        import socket

        ours, theirs = socket.socketpair()
        try:
            proc = subprocess.Popen(
                _child_command(f"fd:{theirs.fileno()}"),
                pass_fds=[theirs.fileno()],
                start_new_session=False,
                **common,
            )
        finally:
            theirs.close()
        return proc, Connection(ours.detach())

    import secrets
    from multiprocessing.connection import Listener

    key = secrets.token_bytes(32)
    listener = Listener(family="AF_PIPE", authkey=key)
    common["env"]["CALLISTO_ENGINE_KEY"] = key.hex()
    proc = subprocess.Popen(
        _child_command(f"pipe:{listener.address}"),
        creationflags=getattr(subprocess, "CREATE_NO_WINDOW", 0),
        **common,
    )
    accepted: list[Any] = []

    def accept() -> None:
        with contextlib.suppress(OSError, EOFError):
            accepted.append(listener.accept())

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    while t.is_alive() and proc.poll() is None:
        t.join(0.05)
    if not accepted:
        listener.close()
        raise OSError(f"the engine process ended before it connected (exit code {proc.poll()})")
    listener.close()
    return proc, accepted[0]


def connect_child(channel: str) -> Any:
    """The child's end of the connection named by ``channel`` (see :func:`_spawn`)."""
    from multiprocessing.connection import Client, Connection

    kind, _, value = channel.partition(":")
    if kind == "fd":
        return Connection(int(value))
    if kind == "pipe":
        return Client(
            value, family="AF_PIPE", authkey=bytes.fromhex(os.environ.pop("CALLISTO_ENGINE_KEY", ""))
        )
    raise ValueError(f"unknown engine channel {channel!r}")


class ProcessBackend:
    """The backend of a model whose llama.cpp runs in an :class:`EngineProcess` (see
    ``app.engine.backend``): every call is a request to the child."""

    llm = None
    isolated = True

    def __init__(self, engine: EngineProcess, info: dict[str, Any]):
        self.engine: EngineProcess | None = engine
        self.lock = threading.RLock()
        self.total_eval = 0
        # the engine's decodes and the generations they held, as its last generation's end said
        self.decode_calls = 0
        self.busy_slots_total = 0
        self.eog_ids = frozenset(info["eog_ids"])
        #: the engine's slots: above 1, generations stream at the same time, batched in the child
        self.parallel = int(info.get("parallel", 1))
        #: whether its generations draft tokens (``InProcessBackend.drafts``)
        self.drafts = bool(info.get("drafts", False))

    @classmethod
    def start(cls, model_name: str, load_args: dict[str, Any]) -> tuple[ProcessBackend, dict[str, Any]]:
        """Start an engine process that loads the model (``EngineProcess.start``); ``parallel``
        in ``load_args`` (else :func:`parallel_slots`) is its number of slots."""
        load_args = dict(load_args)
        load_args.setdefault("parallel", parallel_slots())
        engine, info = EngineProcess.start(model_name, load_args)
        return cls(engine, info), info

    def _engine(self) -> EngineProcess:
        engine = self.engine
        if engine is None:
            raise GenerationError("the model is closed")
        return engine

    def call(self, op: str, *args: Any) -> Any:
        return self._engine().call(op, *args)

    # -- the model's state -------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self.engine is None

    @property
    def crash(self) -> EngineCrashedError | None:
        return None if self.engine is None else self.engine.crash

    def close(self) -> None:
        engine, self.engine = self.engine, None
        if engine is not None:
            engine.close()

    def reset_cache(self) -> None:
        with self.lock:
            self.call("reset")

    def embed(self, inputs: list[str | Sequence[int]], *, truncate: bool, n_ctx: int) -> Embeddings:
        # answered between two tokens of a running generation, or between two steps of the slots
        return self.call("embed", inputs, truncate)

    def rerank(self, query: str, documents: list[str], *, truncate: bool, n_ctx: int) -> Scores:
        return self.call("rerank", query, documents, truncate)

    # -- the vocabulary ----------------------------------------------------------------------------

    def is_eog(self, token: int) -> bool:
        return int(token) in self.eog_ids

    def token_bytes(self, token: int) -> bytes:
        return self.call("token_bytes", int(token))

    def detokenize(self, tokens: Sequence[int]) -> bytes:
        return self.call("detokenize", [int(t) for t in tokens])

    def tokenize(self, text: str) -> list[int]:
        return self.call("tokenize", text)

    def tokenize_text(self, text: str, special: bool) -> list[int]:
        return self.call("tokenize_raw", text, special)

    def special_opener(self, opener: str) -> bool:
        return bool(self.call("special_opener", opener))

    # -- grammars and constraints ------------------------------------------------------------------

    def validate_grammar(self, grammar: str) -> None:
        self.call("validate_grammar", grammar)

    def compile_constraint(self, model: LoadedModel, kwargs: dict[str, Any]) -> ProcessConstraint | None:
        engine = self._engine()
        res = engine.call("compile", kwargs)
        return None if res is None else ProcessConstraint(engine, *res)

    # -- generation ---------------------------------------------------------------------------------

    def prepare(self, gen: Generation, prompt: str | Sequence[int]) -> None:
        """The child prepares (and checks) the generation now; :meth:`stream` runs it there."""
        engine = self._engine()
        handle = None
        if gen.constraint is not None:
            if gen.grammar is not None:
                raise GrammarError("pass either a grammar or a constraint, not both")
            if getattr(gen.constraint, "engine", None) is not engine:
                raise GenerationError("the constraint was compiled for another model")
            handle = gen.constraint.handle
        kwargs = {
            "max_tokens": gen.max_tokens,
            "sampling": gen.sampling,
            "grammar": gen.grammar,
            "deadline_s": gen.deadline_s,
            "stop": gen.stop,
            "constraint": handle,
            "options": gen.options,
        }
        body = prompt if isinstance(prompt, str) else [int(t) for t in prompt]
        gen.handle, gen.n_prompt = engine.call("prepare", body, kwargs)

    def scheduler_stats(self) -> dict[str, int] | None:
        """The engine's scheduler counts (decode calls, most sequences in one decode...), None
        for a one-slot engine: for tests and diagnostics."""
        return self.call("scheduler_stats")

    def slot_states(self) -> list[dict[str, Any]] | None:
        """The engine's slots as llama-server's ``/slots`` shows them (``Scheduler.slot_states``),
        None for a one-slot engine."""
        return self.call("slots")

    def stream(self, gen: Generation) -> Iterator[str]:
        engine, model = self._engine(), gen.model
        # one slot: generations take turns; several: each streams now, the child batches them
        lock = self.lock if self.parallel <= 1 else contextlib.nullcontext()
        lock.__enter__()
        rid: int | None = None
        ended = False
        cancel_sent = False
        interrupted = False
        cancel = gen.cancel
        try:
            rid, q = engine._register()
            engine._send_checked(("run", rid, gen.handle))
            while True:
                if not cancel_sent and cancel is not None and cancel.is_set():
                    engine._send_checked(("cancel", rid, gen.handle))
                    cancel_sent = True
                try:
                    msg = q.get(timeout=0.02 if (cancel is not None and not cancel_sent) else None)
                except queue.Empty:
                    continue
                kind = msg[0]
                if kind == "piece":
                    if len(msg) > 3:  # the log probabilities of the tokens kept since the last piece
                        gen.token_logprobs.extend(msg[3])
                    # the child holds the next token until asked for it: no piece follows a cancel
                    yield msg[2]
                    if cancel is None or not cancel.is_set():
                        engine._send_checked(("next", rid, gen.handle))
                elif kind == "progress":
                    model.prompt_progress = (msg[2], msg[3])
                    if gen.progress is not None:
                        gen.progress(msg[2], msg[3])
                elif kind == "end":
                    ended = True
                    self._end(gen, msg)
                    if cancel_sent and gen.result is not None:
                        # cancelled while the child ended by itself: as in-process, the cancel wins
                        gen.result.finish_reason = "cancelled"
                    return
                elif kind == "dead":
                    ended = True
                    raise engine._crash_error("generating")
        except (KeyboardInterrupt, SystemExit):
            interrupted = True  # Ctrl-C, SIGTERM: the user waits, so the child gets a short grace
            raise
        finally:
            if not ended and rid is not None:
                # the consumer stopped early: stop the child's generation and wait for its end
                self._drain(engine, gen, rid, cancel_sent, grace=INTERRUPT_GRACE_S if interrupted else None)
            if rid is not None:
                engine._unregister(rid)
            model.prompt_progress = None
            lock.__exit__(None, None, None)

    def _end(self, gen: Generation, msg: tuple[Any, ...]) -> None:
        _, _, ok, value = msg
        if not ok:
            raise value
        result, total_eval, decode_calls, busy_slots_total = value
        gen.result = result
        if result.logprobs is not None:
            gen.token_logprobs[:] = result.logprobs  # with those of a last piece held back, if any
        self.total_eval = total_eval
        # (the largest: ends of batched generations may be read out of order)
        self.decode_calls = max(self.decode_calls, decode_calls)
        self.busy_slots_total = max(self.busy_slots_total, busy_slots_total)
        gen.model.last_prompt_eval = result.prompt_tokens_evaluated

    def _drain(
        self, engine: EngineProcess, gen: Generation, rid: int, cancel_sent: bool, grace: float | None = None
    ) -> None:
        """Cancel the child's generation and wait for its end: until the watchdog ends a silent
        child, or with ``grace`` (an interrupted consumer) that many seconds, then end the child."""
        with engine._lock:
            q = engine._waiters.get(rid)
        if q is None:
            return
        try:
            if not cancel_sent:
                engine._send(("cancel", rid, gen.handle))
        except (OSError, ValueError):
            return
        pid = engine.pid
        if pid is not None and _is_stopped(pid):
            grace = 0.0  # it cannot answer: end it now rather than when the watchdog would
        until = None if grace is None else time.monotonic() + grace
        while True:
            try:
                if until is None:
                    msg = q.get()  # the end, or "dead" (the watchdog bounds a silent child)
                else:
                    msg = q.get(timeout=max(0.0, until - time.monotonic()))
            except queue.Empty:
                engine.kill()  # it did not stop in time, and the user is leaving
                return
            except BaseException:  # a second Ctrl-C: leave now, and leave no child behind
                engine.kill()
                raise
            if msg[0] == "end":
                with contextlib.suppress(Exception):
                    self._end(gen, msg)
                return
            if msg[0] == "dead":
                return
