"""Occupying the engine host's one thread, so that what waits behind a running job can be seen."""

from __future__ import annotations

import threading
from typing import Any

__all__ = ["hold"]


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
