"""Driving an ``app.engine.scheduler.Scheduler`` by hand in a test, as the engine process's loop
drives it: a step, then every reader takes its pieces (``ack``)."""

from __future__ import annotations

from typing import Any

__all__ = ["drive", "results"]


def drive(sched: Any, gids: Any, *, most: int = 5000) -> int:
    """Step ``sched`` until no generation is active, acking each of ``gids`` after every step (the
    readers take every piece at once); the steps it took. More than ``most`` steps fails the test
    (a scheduler that stops making progress)."""
    steps = 0
    while sched.active:
        sched.step()
        for gid in gids:
            sched.ack(gid)
        steps += 1
        assert steps < most, f"the scheduler still runs after {most} steps"
    return steps


def results(sent: list[tuple]) -> dict[int, Any]:
    """Each request id's result among the messages ``sent`` by the scheduler, of those that ended
    well (``("end", rid, True, (result, ...))``)."""
    return {msg[1]: msg[3][0] for msg in sent if msg[0] == "end" and msg[2]}
