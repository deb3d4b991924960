"""The engine process's side of ``app.engine.engine_process``: load one model, then answer.

:func:`main` runs in the child (``python -m app --engine-child CHANNEL``). Its stderr (llama.cpp's own messages,
an ``abort()``'s last words) goes to a file the parent reads to explain a crash. Everything runs
on the child's main thread, one request at a time; while a generation streams, the requests that
arrive (a tokenize call, a cancel) are answered between two tokens.

Loaded with ``parallel`` N > 1 (the load's ``parallel``), the child keeps an
``app.engine.scheduler.Scheduler``: a ``run`` joins its slots instead of running alone, and the
loop answers what came in, then runs one decode step for every slot, until none is active; the
messages each generation sees are the same. The load's speculative decoding settings
(``ngram_draft``, ``draft_model``: ``app.engine.speculative``) reach the model's load as they
are; the slots draft n-grams only, so a draft model is loaded for one slot alone.

Requests and replies are tuples (see ``engine_process``):

* ``("call", rid, op, args)`` -> ``("reply", rid, ok, value)``: ``op`` is a name in :data:`OPS`;
* ``("run", rid, gid)`` -> ``("piece", rid, text)``\\* (``("piece", rid, text, logprobs)`` for a
  generation that asked for log probabilities: those of the tokens kept since the last piece),
  ``("progress", rid, done, total)``\\*,
  then ``("end", rid, ok, (GenerationResult, total_eval, decode_calls, busy_slots_total) | error)``;
  after each piece the app sends ``("next", rid, gid)``: the child decodes the next token
  meanwhile but keeps it only once that arrives (a cancel instead drops it);
* ``("cancel", rid, gid)`` stops the running generation ``gid``; ``("close",)`` exits.

Two more things keep the child honest (:func:`_watch`, a thread of its own, which needs no
answer from the main thread):

* a heartbeat, ``("beat", -1)`` every :data:`HEARTBEAT_S` seconds, from loading on: the parent's
  watchdog ends a child that stays silent (stopped, or stuck with the interpreter blocked) for
  ``engine_process.STALL_S`` seconds, while a long generation or load that goes on beats on;
* the parent's liveness: when the parent is gone (killed, crashed) the child exits within
  :data:`HEARTBEAT_S` seconds, even in the middle of a load or a long prompt, when it reads no
  pipe.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import pickle
import sys
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

from app.engine.backend import portable
from app.engine.engine_process import connect_child
from app.engine.errors import ConstraintError, GenerationError
from app.engine.generation import generate
from app.engine.llm import load_model_inline

__all__ = ["OPS", "main"]

_MAX_CONSTRAINTS = 256  # compiled constraints kept by handle (oldest forgotten first)
_MAX_PENDING = 64  # prepared generations not yet run
#: seconds between two heartbeats (and two checks that the parent still lives)
HEARTBEAT_S = 1.0
#: the calls a request makes on its way to its ``run``, each answered before the next is sent
_LEADS_TO_RUN = frozenset({"compile", "prepare"})
#: how long the slots wait, once such a call is answered, for the request's next message before
#: their next step: answered between two steps, a request's next message would otherwise come
#: while the next step runs and wait for all of it (at most once per call; ended by the next call
#: or run, not by the other slots' acks, which the wait handles as they come)
RUN_GRACE_S = 0.02


class _Child:
    def __init__(self, conn: Any):
        self.conn = conn
        self.model: Any = None
        self.ids = itertools.count(1)
        self.pending: OrderedDict[int, Any] = OrderedDict()  # gid -> inline Generation
        self.constraints: OrderedDict[int, Any] = OrderedDict()  # handle -> Constraint
        self.cancelled: set[int] = set()
        self.running: int | None = None
        self.unacked = False  # a piece was sent and the app has not asked for the next one yet
        self.stop = False
        self.send_lock = threading.Lock()  # the main thread and the heartbeat both send
        #: the slots of a model loaded with ``parallel`` > 1 (``app.engine.scheduler``), else None
        self.sched: Any = None
        self.batched: dict[int, int] = {}  # rid -> gid of the generations the scheduler runs
        #: until when the slots wait for a request's next message (``RUN_GRACE_S``), or None
        self.grace_until: float | None = None

    # -- plumbing ------------------------------------------------------------------------------

    def send(self, msg: tuple[Any, ...]) -> None:
        try:
            with self.send_lock:
                self.conn.send(msg)
        except (pickle.PicklingError, TypeError, AttributeError) as exc:
            # an unpicklable result or error: send its words instead
            if msg[0] in ("reply", "end") and len(msg) == 4:
                self.send((msg[0], msg[1], False, portable(RuntimeError(str(exc)))))
            else:
                raise
        except (BrokenPipeError, EOFError, OSError):
            os._exit(0)  # the parent is gone

    def serve(self) -> None:
        while not self.stop:
            sched = self.sched
            try:
                if sched is not None and sched.active:
                    # answer what came in, then one step for every slot; wait only when no slot
                    # can move (each waits for its reader to take a piece), or briefly for the
                    # next message of a request on its way to a slot
                    while self.conn.poll(self._wait_s(sched)):
                        self.handle(self.conn.recv())
                        if self.stop:
                            break
                    if not self.stop:
                        try:
                            sched.step()
                        except Exception as exc:  # noqa: BLE001 - its generations fail, the engine lives
                            sched.fail_all(portable(exc))
                    continue
                msg = self.conn.recv()
            except (EOFError, OSError):
                return
            self.handle(msg)

    def _wait_s(self, sched: Any) -> float | None:
        """How long to wait for a message before the next step: none when a slot can move (but
        what is left of a request's grace), else until one comes."""
        if not sched.runnable():
            return None
        if self.grace_until is not None:
            left = self.grace_until - time.monotonic()
            if left > 0:
                return left
            self.grace_until = None
        return 0

    def send_batched(self, msg: tuple[Any, ...]) -> None:
        """The scheduler's messages: a generation's end forgets its cancel."""
        if msg[0] == "end":
            gid = self.batched.pop(msg[1], None)
            if gid is not None:
                self.cancelled.discard(gid)
        self.send(msg)

    def handle(self, msg: tuple[Any, ...]) -> None:
        kind = msg[0]
        if kind in ("call", "run"):  # a request's next message came: no more waiting for it
            self.grace_until = None
        if kind == "call":
            _, rid, op, args = msg
            try:
                value = OPS[op](self, *args)
            except BaseException as exc:  # noqa: BLE001 - every error goes back to the caller
                if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                    raise
                self.send(("reply", rid, False, portable(exc)))
            else:
                self.send(("reply", rid, True, value))
                if op in _LEADS_TO_RUN and self.sched is not None and self.sched.active:
                    self.grace_until = time.monotonic() + RUN_GRACE_S
        elif kind == "run":
            _, rid, gid = msg
            if self.sched is not None:
                self.submit(rid, gid)
            elif self.running is not None:
                self.send(("end", rid, False, GenerationError("another generation is running")))
            else:
                self.run(rid, gid)
        elif kind == "cancel":
            self.cancelled.add(msg[2])
        elif kind == "next":
            if self.sched is not None:
                self.sched.ack(msg[2])
            elif msg[2] == self.running:
                self.unacked = False  # (a late one, for a generation that ended, is dropped)
        elif kind == "close":
            self.stop = True
            self.cancelled.update(self.batched.values())
            if self.running is not None:
                self.cancelled.add(self.running)

    def wait_ack(self, gid: int) -> bool:
        """The generation's gate (``Generation.gate``), after each decoded token: wait until the app
        has taken the previous piece (it asks for the next one) or cancels; True: cancelled.

        The token is decoded while the app handles the previous piece (the two overlap), but it
        is kept only once the app asks for it, so a cancel drops it, exactly as in-process."""
        while self.unacked and gid not in self.cancelled and not self.stop:
            try:
                msg = self.conn.recv()
            except (EOFError, OSError):
                os._exit(0)
            self.handle(msg)
        return gid in self.cancelled or self.stop

    def poll(self, gid: int) -> bool:
        """Answer what came in meanwhile; True when generation ``gid`` is to stop."""
        try:
            while self.conn.poll():
                self.handle(self.conn.recv())
        except (EOFError, OSError):
            os._exit(0)  # the parent is gone: nobody reads what we would generate
        return gid in self.cancelled or self.stop

    # -- generation ------------------------------------------------------------------------------

    def submit(self, rid: int, gid: int) -> None:
        """Give generation ``gid`` to the scheduler: it joins the other slots at the next step."""
        gen = self.pending.pop(gid, None)
        if gen is None:
            self.send(("end", rid, False, GenerationError("this generation was already run or forgotten")))
            return
        try:
            self.sched.submit(rid, gid, gen)
        except BaseException as exc:  # noqa: BLE001 - the parent raises it
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            self.send(("end", rid, False, portable(exc)))
            return
        self.batched[rid] = gid

    def run(self, rid: int, gid: int) -> None:
        gen = self.pending.pop(gid, None)
        if gen is None:
            self.send(("end", rid, False, GenerationError("this generation was already run or forgotten")))
            return
        gen.progress = lambda done, total: self.send(("progress", rid, done, total))
        gen.gate = lambda: self.wait_ack(gid)
        self.running = gid
        self.unacked = False
        sent = 0
        try:
            for piece in gen:
                self.unacked = True
                if gen.options.logprobs is None:
                    self.send(("piece", rid, piece))
                    continue
                # the log probabilities of the tokens kept since the last piece go with it
                self.send(("piece", rid, piece, gen.token_logprobs[sent:]))
                sent = len(gen.token_logprobs)
        except BaseException as exc:  # noqa: BLE001 - the parent raises it
            if isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            self.send(("end", rid, False, portable(exc)))
        else:
            backend = self.model.backend
            self.send(
                (
                    "end",
                    rid,
                    True,
                    (gen.result, backend.total_eval, backend.decode_calls, backend.busy_slots_total),
                )
            )
        finally:
            self.running = None
            self.cancelled.discard(gid)


class _Cancel:
    """The ``cancel`` a child-side Generation checks before every token: it reads the pipe."""

    def __init__(self, child: _Child, gid: int):
        self.child = child
        self.gid = gid

    def is_set(self) -> bool:
        return self.child.poll(self.gid)


# -- operations ---------------------------------------------------------------------------------


def _op_tokenize(child: _Child, text: str) -> list[int]:
    return child.model.tokenize(text)


def _op_tokenize_raw(child: _Child, text: str, special: bool) -> list[int]:
    return child.model.tokenize_text(text, special=special)


def _op_token_bytes(child: _Child, token: int) -> bytes:
    return child.model.token_bytes(int(token))


def _op_detokenize(child: _Child, tokens: list[int]) -> bytes:
    return child.model.backend.detokenize(tokens)


def _op_special_opener(child: _Child, opener: str) -> bool:
    return child.model.special_opener(opener)


def _op_validate_grammar(child: _Child, grammar: str) -> None:
    child.model.backend.validate_grammar(grammar)


def _op_reset(child: _Child) -> None:
    child.model.reset_cache()
    if child.sched is not None:
        child.sched.reset()


def _op_prepare(child: _Child, prompt: Any, kwargs: dict[str, Any]) -> tuple[int, int]:
    handle = kwargs.pop("constraint", None)
    constraint = None
    if handle is not None:
        constraint = child.constraints.get(handle)
        if constraint is None:
            raise ConstraintError("the constraint was forgotten by the engine; compile it again")
    gid = next(child.ids)
    gen = generate(child.model, prompt, constraint=constraint, cancel=_Cancel(child, gid), **kwargs)  # type: ignore[arg-type]
    child.pending[gid] = gen
    while len(child.pending) > _MAX_PENDING:
        child.pending.popitem(last=False)
    return gid, gen.n_prompt


def _keep(child: _Child, constraint: Any) -> tuple[int, str, str]:
    handle = next(child.ids)
    child.constraints[handle] = constraint
    while len(child.constraints) > _MAX_CONSTRAINTS:
        child.constraints.popitem(last=False)
    return handle, constraint.grammar, constraint.describe


def _import_for_requests() -> None:
    """Import the modules the first request runs (``_op_compile``'s) so that it does not wait for
    them: a fresh engine's first reply (a reopened conversation's, after a restart) is then as
    quick as the next one. An import that fails here fails again in the request, which reports it."""
    with contextlib.suppress(Exception):
        import app.engine.constraints.compiler  # noqa: F401 - imported for its cost, now


def _op_compile(child: _Child, kwargs: dict[str, Any]) -> tuple[int, str, str] | None:
    from app.engine.constraints.compiler import compile_inline  # the formats load on first use

    c = compile_inline(child.model, kwargs)
    return None if c is None else _keep(child, c)


def _op_constraint_after(child: _Child, handle: int, text: str) -> tuple[int, str, str]:
    c = child.constraints.get(handle)
    if c is None:
        raise ConstraintError("the constraint was forgotten by the engine; compile it again")
    return _keep(child, c.after(text))


def _op_constraint_allowed(child: _Child, handle: int) -> Any:
    c = child.constraints.get(handle)
    if c is None:
        raise ConstraintError("the constraint was forgotten by the engine; compile it again")
    return c.start().allowed()


def _op_embed(child: _Child, inputs: list[Any], truncate: bool) -> Any:
    return child.model.embed(inputs, truncate=truncate)


def _op_rerank(child: _Child, query: str, documents: list[str], truncate: bool) -> Any:
    return child.model.rerank(query, documents, truncate=truncate)


def _op_ping(child: _Child) -> int:
    return os.getpid()


def _op_scheduler_stats(child: _Child) -> dict[str, int] | None:
    """The scheduler's counts (``SchedulerStats``), None for a one-slot engine."""
    from dataclasses import asdict

    return None if child.sched is None else {"slots": child.sched.n_slots, **asdict(child.sched.stats)}


def _op_slots(child: _Child) -> list[dict[str, Any]] | None:
    """The scheduler's slots (``Scheduler.slot_states``), None for a one-slot engine."""
    return None if child.sched is None else child.sched.slot_states()


OPS: dict[str, Callable[..., Any]] = {
    "tokenize": _op_tokenize,
    "tokenize_raw": _op_tokenize_raw,
    "token_bytes": _op_token_bytes,
    "detokenize": _op_detokenize,
    "special_opener": _op_special_opener,
    "reset": _op_reset,
    "validate_grammar": _op_validate_grammar,
    "prepare": _op_prepare,
    "compile": _op_compile,
    "constraint_after": _op_constraint_after,
    "constraint_allowed": _op_constraint_allowed,
    "embed": _op_embed,
    "rerank": _op_rerank,
    "ping": _op_ping,
    "scheduler_stats": _op_scheduler_stats,
    "slots": _op_slots,
}


def _parent_gone(parent: int) -> Callable[[], bool]:
    """A check that the process ``parent`` has ended (POSIX: this child was handed to another
    parent; Windows: the parent's handle is signalled)."""
    if sys.platform == "win32":
        import _winapi

        try:
            handle = _winapi.OpenProcess(0x00100000, False, parent)  # SYNCHRONIZE
        except OSError:
            return lambda: True
        return lambda: _winapi.WaitForSingleObject(handle, 0) == 0  # WAIT_OBJECT_0
    return lambda: os.getppid() != parent


def _watch(child: _Child, parent: int | None) -> None:
    """The heartbeat and the parent's watch (see the module docstring): exits the process when
    the parent is gone."""
    gone = _parent_gone(parent) if parent else lambda: False
    while True:
        if gone():
            os._exit(0)  # nobody reads what we would make: llama.cpp's work is dropped with us
        child.send(("beat", -1))
        time.sleep(HEARTBEAT_S)


def _parent_pid() -> int | None:
    """The parent's pid, as the parent gave it (``CALLISTO_ENGINE_PARENT``): if it died before
    this child started, ``getppid()`` already names another process."""
    try:
        return int(os.environ.pop("CALLISTO_ENGINE_PARENT", ""))
    except ValueError:
        return None


def main(channel: str) -> int:
    """The child's entry point: connect, read ``("load", args)``, load the model, reply
    ``("reply", 0, ok, info)``, then serve until ``close`` or the parent goes away."""
    parent = _parent_pid()
    if threading.current_thread() is threading.main_thread():
        import signal

        # Ctrl-C in a terminal reaches the whole process group: the app decides what it stops
        # (it cancels, then closes or ends this process), so a half-done reply is never a crash
        signal.signal(signal.SIGINT, signal.SIG_IGN)
    conn = connect_child(channel)
    child = _Child(conn)
    threading.Thread(target=_watch, args=(child, parent), name="engine-heartbeat", daemon=True).start()
    try:
        msg = conn.recv()
    except (EOFError, OSError):
        return 0
    if msg[0] != "load":
        return 2
    args = dict(msg[1])
    parallel = int(args.pop("parallel", 1) or 1)
    # what the first request would otherwise import (the formats and the constraint compiler,
    # tens of ms), imported while llama.cpp loads the model (its load runs without the GIL)
    threading.Thread(target=_import_for_requests, name="engine-imports", daemon=True).start()
    try:
        if parallel > 1:
            if args.pop("draft_model", None) is not None:
                # the slots draft n-grams only (``app.engine.scheduler``): a draft model would sit idle
                print(
                    "callisto: a draft model is not used with parallel slots; n-gram drafting is",
                    file=sys.stderr,
                )
            # the scheduler's context holds every slot's KV: the model's own context (which
            # generates nothing here) is kept as small as llama.cpp allows
            n_ctx = int(args["n_ctx"])
            child.model = load_model_inline(**{**args, "n_ctx": min(256, n_ctx)}, verbose=True)
            child.model.n_ctx = n_ctx
            from app.engine.scheduler import Scheduler

            child.sched = Scheduler(child.model, parallel, child.send_batched, child.cancelled.__contains__)
        else:
            child.model = load_model_inline(**args, verbose=True)
    except BaseException as exc:  # noqa: BLE001 - the parent raises it
        if isinstance(exc, (KeyboardInterrupt, SystemExit)):
            raise
        child.send(("reply", 0, False, portable(exc)))
        return 0
    m = child.model
    info = {**m.backend.info(m.n_ctx), "parallel": parallel if child.sched is not None else 1}
    child.send(("reply", 0, True, info))
    try:
        child.serve()
    finally:
        if child.sched is not None:
            with contextlib.suppress(Exception):
                child.sched.close()  # its context goes before the model it reads
        with contextlib.suppress(Exception):
            m.close()
    return 0
