"""The engine process's slots wait briefly, once a request's ``compile`` / ``prepare`` is answered,
for that request's next message before their next step (``RUN_GRACE_S``): answered between two
steps, the request's ``run`` would otherwise arrive while the next step runs and wait for all of it,
so a new request's first token would wait a whole step of the others. The wait is bounded, ended
by the request's next call or run, and kept through the other slots' acks. On a fake clock."""

from __future__ import annotations

from typing import Any

import pytest

from app.engine import engine_child
from app.engine.engine_child import OPS, RUN_GRACE_S, _Child


class _Conn:
    def __init__(self) -> None:
        self.sent: list[tuple[Any, ...]] = []

    def send(self, msg: tuple[Any, ...]) -> None:
        self.sent.append(msg)


class _Slots:
    """What the child asks of its scheduler here."""

    def __init__(self, active: bool = True) -> None:
        self.active = active
        self.acked: list[int] = []

    def runnable(self) -> bool:
        return True

    def ack(self, gid: int) -> None:
        self.acked.append(gid)


class _Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def child(monkeypatch) -> tuple[_Child, _Clock]:
    clock = _Clock()
    monkeypatch.setattr(engine_child.time, "monotonic", clock)
    monkeypatch.setitem(OPS, "prepare", lambda _child, *_args: (7, 12))
    monkeypatch.setitem(OPS, "compile", lambda _child, *_args: (3, "g", "d"))
    monkeypatch.setitem(OPS, "count", lambda _child, *_args: 5)
    c = _Child(_Conn())
    c.sched = _Slots()
    return c, clock


def test_a_prepared_request_is_waited_for_until_its_run(child):
    c, clock = child
    assert c._wait_s(c.sched) == 0  # nothing on its way: the next step at once
    c.handle(("call", 1, "prepare", ("prompt", {})))
    assert c.conn.sent == [("reply", 1, True, (7, 12))]
    assert c._wait_s(c.sched) == pytest.approx(RUN_GRACE_S)
    clock.now += RUN_GRACE_S / 2
    c.handle(("next", 9, 4))  # another slot's reader took a piece: still waiting
    assert c.sched.acked == [4] and c._wait_s(c.sched) == pytest.approx(RUN_GRACE_S / 2)
    c.handle(("run", 2, 7))  # it came: no more waiting
    assert c._wait_s(c.sched) == 0


def test_the_wait_is_bounded_and_each_step_of_the_way_has_one(child):
    c, clock = child
    c.handle(("call", 1, "compile", ({},)))  # a held call compiles, then prepares, then runs
    assert c._wait_s(c.sched) == pytest.approx(RUN_GRACE_S)
    c.handle(("call", 2, "prepare", ("prompt", {})))
    assert c._wait_s(c.sched) == pytest.approx(RUN_GRACE_S)
    clock.now += RUN_GRACE_S  # the run did not come in time: the slots go on
    assert c._wait_s(c.sched) == 0
    assert c._wait_s(c.sched) == 0


def test_no_wait_without_busy_slots_or_for_other_calls(child):
    c, _clock = child
    c.handle(("call", 1, "count", ()))  # a call that leads to no run
    assert c._wait_s(c.sched) == 0
    c.handle(("call", 2, "prepare", ("p", {})))
    c.handle(("call", 3, "count", ()))  # the request's next message was another call
    assert c._wait_s(c.sched) == 0
    c.sched.active = False  # no slot generates: nothing to hold up, nothing to wait for
    c.handle(("call", 4, "prepare", ("p", {})))
    assert c._wait_s(c.sched) == 0


def test_a_failed_prepare_is_not_waited_for(child, monkeypatch):
    c, _clock = child

    def fails(_child, *_args):
        raise ValueError("no")

    monkeypatch.setitem(OPS, "prepare", fails)
    c.handle(("call", 1, "prepare", ("p", {})))
    assert c.conn.sent[0][:3] == ("reply", 1, False)
    assert c._wait_s(c.sched) == 0
