"""The window's jobs and the server's requests share a model's slots (``app.engine.host``, issue
31): a window job streams beside a server request while a slot is free, waits when none is, and
the host says what it waits for (``EngineHost.wait_of``, heard through its watchers); while the
server runs every model gets its slots (``EngineHost.set_parallel``). Real engine processes on
tiny GGUFs; everything is synchronised on events and on the host's watchers, nothing on time."""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import SimpleNamespace

import pytest

from app.engine.host import EngineHost, JobWait
from app.engine.llm import LoadSettings
from tests.support.host_hold import SlotHold

WAIT = SlotHold.WAIT
SETTINGS = LoadSettings(n_ctx=512, n_threads=1)


@pytest.fixture
def engine(monkeypatch):
    """``engine.host(parallel)``: a started host whose models get ``parallel`` slots (None: the
    engine's one); ``engine.slot(path, owner, prompt)``: a :class:`SlotHold` released at the end."""
    monkeypatch.delenv("CALLISTO_ENGINE_PARALLEL", raising=False)
    hosts: list[EngineHost] = []
    holds: list[SlotHold] = []

    def host(parallel: int | None) -> EngineHost:
        h = EngineHost(settings=LoadSettings(n_ctx=512, n_threads=1, parallel=parallel))
        h.start()
        hosts.append(h)
        return h

    def slot(path, owner: str = "server", prompt: str = "hello") -> SlotHold:
        held = SlotHold(path, owner=owner, prompt=prompt)
        holds.append(held)
        return held

    yield SimpleNamespace(host=host, slot=slot)
    for held in holds:  # a failed test's held jobs end, so each host stops and closes its models
        held.release.set()
    for h in hosts:
        h.stop(timeout=WAIT)


def _when(host: EngineHost, cond: Callable[[], bool]) -> bool:
    """Whether ``cond()`` holds now or after one of the host's changes (heard by a watcher)."""
    seen = threading.Event()
    host.add_watcher(lambda: seen.set() if cond() else None)
    return cond() or seen.wait(WAIT)


def _ended_well(*holds: SlotHold) -> bool:
    return all(h.ended.wait(WAIT) and h.error is None for h in holds)


def test_a_window_job_streams_beside_a_server_request_while_a_slot_is_free(tiny_gguf, engine):
    path = tiny_gguf()
    host = engine.host(2)
    server = engine.slot(path).submit(host)
    assert server.streaming.wait(WAIT)  # the request streams and is held open
    window = engine.slot(None, "window", "a b c")
    window.job.resolve = lambda: path  # the window names its model when its job comes up
    window.submit(host)
    assert window.streaming.wait(WAIT)  # the window's job streams before the request ends
    assert not server.ended.is_set() and sorted(host.slot_owners()) == ["server", "window"]
    assert window.thread not in (host.thread_ident, server.thread)
    server.release.set()
    window.release.set()
    assert _ended_well(server, window)
    assert host.model(path).backend.parallel == 2


def test_with_one_slot_the_window_job_waits_and_the_host_names_the_server(tiny_gguf, engine):
    path = tiny_gguf()
    host = engine.host(1)
    server = engine.slot(path).submit(host)
    assert server.streaming.wait(WAIT)
    window = engine.slot(path, "window", "a b c").submit(host)
    assert _when(host, lambda: host.wait_of(window.job) == JobWait("queued", running="server"))
    assert not window.streaming.is_set()
    server.release.set()
    assert window.streaming.wait(WAIT) and server.ended.is_set()  # it ran once the request ended
    assert host.wait_of(window.job) is None
    window.release.set()
    assert _ended_well(server, window)


def test_with_every_slot_taken_the_window_job_waits_for_a_free_one_and_says_so(tiny_gguf, engine):
    path = tiny_gguf()
    host = engine.host(2)
    first, second = engine.slot(path).submit(host), engine.slot(path, prompt="a b c").submit(host)
    assert first.streaming.wait(WAIT) and second.streaming.wait(WAIT)
    third = engine.slot(path, prompt="zz yy").submit(host)  # a request that waits for a slot first
    window = engine.slot(path, "window", "x y z").submit(host)
    behind = JobWait("queued", ("server", "server"), running="server", running_waits="slot")
    assert _when(host, lambda: host.wait_of(window.job) == behind)

    first.release.set()  # its slot goes to the request ahead of the window's job
    assert third.streaming.wait(WAIT)
    assert _when(host, lambda: host.wait_of(window.job) == JobWait("slot", ("server", "server")))
    assert not window.streaming.is_set()

    second.release.set()  # the next slot is the window's, while the third request still streams
    assert window.streaming.wait(WAIT) and not third.ended.is_set()
    assert host.wait_of(window.job) is None
    third.release.set()
    window.release.set()
    assert _ended_well(first, second, third, window)


def test_set_parallel_loads_the_models_again_with_the_slots_and_back(tiny_gguf, engine):
    path = tiny_gguf()
    host = engine.host(None)
    changes = []
    one = host.call(lambda m: m, model=path, owner="window")
    assert one.backend.parallel == 1
    host.add_listener(changes.append)

    host.set_parallel(2, owner="server")
    two = host.call(lambda m: m, model=path)
    assert two is not one and one.closed and two.backend.parallel == 2
    assert [(c.owner, c.loaded, c.closed) for c in changes] == [("server", path.resolve(), (path.resolve(),))]
    # a load that asks for its own settings gets the slots too: the model is found as it is
    again = host.call(lambda _m: host.ensure(path, settings=SETTINGS, exact=True, owner="window"))
    assert again is two
    host.set_parallel(2)  # it has them: nothing is loaded
    host.call(lambda _m: None)
    assert len(changes) == 1 and host.model(path) is two

    host.set_parallel(None, owner="server")  # the server stopped: one slot again
    back = host.call(lambda m: m, model=path)
    assert back is not two and two.closed and back.backend.parallel == 1 and len(changes) == 2
    with pytest.raises(ValueError):
        host.set_parallel(0)
