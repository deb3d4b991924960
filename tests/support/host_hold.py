"""Occupying the engine host's one thread, or one of a model's slots, so that what waits behind a
running job can be seen."""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["SlotHold", "hold"]


def hold(host: Any, owner: str = "server") -> threading.Event:
    """Run a job of ``owner`` on ``host`` that waits until the returned event is set; returns once
    it runs."""
    from app.engine.host import Job

    release, started = threading.Event(), threading.Event()

    def run(_h: Any, _m: Any) -> None:
        started.set()
        release.wait(30)

    host.submit(Job(run=run, owner=owner), bounded=False)
    assert started.wait(30), "the host did not start the job"
    return release


class SlotHold:
    """A batchable job of ``owner`` that streams a generation on ``model`` (a path) and, after its
    first piece, holds until :attr:`release` is set (``grammar``: a GBNF its text is held to, so
    that it surely writes): :attr:`streaming` once it streams,
    :attr:`ended` once it ended (:attr:`error`: what it raised), :attr:`thread` the thread it ran
    on. :meth:`submit` queues it (never refused by the bound)."""

    WAIT = 120.0  # a bound for a wait that must end: never reached when the code works

    def __init__(
        self,
        model: Any,
        *,
        owner: str = "server",
        prompt: str = "hello",
        max_tokens: int = 40,
        grammar: str | None = None,
    ):
        from app.engine.host import Job

        self.prompt, self.max_tokens, self.grammar = prompt, max_tokens, grammar
        self.release, self.streaming, self.ended = threading.Event(), threading.Event(), threading.Event()
        self.error: BaseException | None = None
        self.thread: int | None = None
        self.job = Job(run=self._run, model=model, owner=owner, batchable=True, on_error=self._failed)

    def submit(self, host: Any) -> SlotHold:
        host.submit(self.job, bounded=False)
        return self

    def _run(self, _host: Any, model: Any) -> None:
        from app.engine.generation import generate

        self.thread = threading.get_ident()
        for _piece in generate(model, self.prompt, max_tokens=self.max_tokens, stop=(), grammar=self.grammar):
            self.streaming.set()
            assert self.release.wait(self.WAIT), "the test never released its slot"
        self.ended.set()  # (what it raises ends it in ``_failed``)

    def _failed(self, err: BaseException) -> None:
        self.error = err
        self.ended.set()
