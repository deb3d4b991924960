"""The host runs batchable jobs side by side on a model whose engine process has several slots
(``app.engine.host``, ``app.engine.scheduler``): real engine processes on tiny GGUFs; everything
is synchronised on events, nothing on timing."""

from __future__ import annotations

import threading
import time

import pytest

from app.engine.errors import EngineBusy, EngineCrashedError
from app.engine.generation import generate
from app.engine.host import EngineHost, Job
from app.engine.llm import LoadSettings

WAIT = 120.0  # a bound for a wait that must end: never reached when the code works


class Holder:
    """A job that streams a generation, says when its first piece came, then waits for ``release``."""

    def __init__(self, prompt: str, release: threading.Event, max_tokens: int = 40):
        self.prompt = prompt
        self.release = release
        self.max_tokens = max_tokens
        self.first = threading.Event()
        self.done = threading.Event()
        self.result = None
        self.error: BaseException | None = None

    def run(self, _host, model) -> None:
        g = generate(model, self.prompt, max_tokens=self.max_tokens, stop=())
        for i, _piece in enumerate(g):
            if i == 0:
                self.first.set()
                assert self.release.wait(WAIT)
        self.result = g.result
        self.done.set()

    def failed(self, err: BaseException) -> None:
        self.error = err
        self.first.set()
        self.done.set()

    def job(self, path) -> Job:
        return Job(run=self.run, model=path, on_error=self.failed, batchable=True)


_RELEASES: list[threading.Event] = []


def _release() -> threading.Event:
    ev = threading.Event()
    _RELEASES.append(ev)
    return ev


@pytest.fixture
def host_for(monkeypatch):
    hosts: list[EngineHost] = []

    def make(parallel: int, queue_size: int = 16) -> EngineHost:
        monkeypatch.setenv("CALLISTO_ENGINE_PARALLEL", str(parallel))
        h = EngineHost(queue_size=queue_size, settings=LoadSettings(n_ctx=512, n_threads=1))
        h.start()
        hosts.append(h)
        return h

    yield make
    for ev in _RELEASES:  # a failed test's held jobs end, so each host stops and closes its engine
        ev.set()
    _RELEASES.clear()
    for h in hosts:
        h.stop(timeout=WAIT)


def _until(cond, tries: int = 2400) -> bool:
    """Poll ``cond`` (a count bound, not a clock one)."""
    for _ in range(tries):
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def test_batchable_jobs_stream_side_by_side_on_one_engine(tiny_gguf, host_for):
    path = tiny_gguf()
    host = host_for(3)
    release = _release()
    holders = [Holder(p, release) for p in ("hello", "a b c", "zz yy")]
    for h in holders:
        host.submit(h.job(path))
    # all three have their first piece while none of them may go on: they run at once
    assert all(h.first.wait(WAIT) for h in holders)
    assert all(h.error is None for h in holders) and host.slots_busy == 3
    release.set()
    assert all(h.done.wait(WAIT) for h in holders)
    assert all(h.result is not None and h.result.generated_tokens >= 1 for h in holders)
    model = host.model(path)
    stats = model.backend.scheduler_stats()
    assert stats["slots"] == 3 and stats["max_seqs_in_batch"] >= 1


def test_a_job_past_every_slot_and_a_full_queue_is_refused(tiny_gguf, host_for):
    path = tiny_gguf()
    host = host_for(2, queue_size=1)
    release = _release()
    running = [Holder(p, release) for p in ("hello", "a b c")]
    for h in running:
        host.submit(h.job(path))
        assert h.first.wait(WAIT)  # (the first one's load holds the host meanwhile)
    third = Holder("third", release)
    host.submit(third.job(path))  # the host takes it: it waits for a slot, at the head of the queue
    assert _until(lambda: host.pending == 0 and host.wait_of(None).running_waits == "slot")
    with pytest.raises(EngineBusy):  # 2 slots busy and 1 job waiting: the queue of 1 is full
        host.submit(Holder("fourth", release).job(path))
    assert not third.first.is_set()  # every slot is taken
    release.set()
    for h in (*running, third):
        assert h.done.wait(WAIT) and h.error is None and h.result is not None


def test_an_engine_crash_with_slots_active_fails_each_job_and_a_fresh_engine_serves_the_next(
    tiny_gguf, host_for
):
    path = tiny_gguf()
    host = host_for(2)
    release = _release()
    holders = [Holder(p, release, max_tokens=300) for p in ("hello", "a b c")]
    for h in holders:
        host.submit(h.job(path))
    assert all(h.first.wait(WAIT) for h in holders)
    host.model(path).engine.kill()
    release.set()
    assert all(h.done.wait(WAIT) for h in holders)
    for h in holders:
        assert isinstance(h.error, EngineCrashedError)
        assert "crashed while generating" in str(h.error)
    nxt = Holder("again", _release(), max_tokens=3)
    nxt.release.set()
    host.submit(nxt.job(path))
    assert nxt.done.wait(WAIT) and nxt.error is None and nxt.result is not None
    assert host.model(path).crash is None


def test_a_job_that_is_not_batchable_waits_for_the_slots_to_end(tiny_gguf, host_for):
    path = tiny_gguf()
    host = host_for(2)
    release = _release()
    slot = Holder("hello", release)
    host.submit(slot.job(path))
    assert slot.first.wait(WAIT)
    ran = threading.Event()
    seen_slot_done: list[bool] = []

    def alone(_host, model) -> None:
        seen_slot_done.append(slot.done.is_set())
        ran.set()

    host.submit(Job(run=alone, model=path))
    assert _until(lambda: host.pending == 0)
    assert not ran.is_set()
    release.set()
    assert ran.wait(WAIT) and seen_slot_done == [True]
