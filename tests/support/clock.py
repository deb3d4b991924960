"""A clock a test controls, for the product's real deadlines."""

from __future__ import annotations

__all__ = ["TickClock"]


class TickClock:
    """A clock that moves ``step`` seconds (10 ms) each time it is read: the code's own checks make
    the time pass, so a deadline falls after the same work on any machine at any load."""

    def __init__(self, step: float = 0.01) -> None:
        self.step = step
        self.now = 0.0
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        self.now += self.step
        return self.now
