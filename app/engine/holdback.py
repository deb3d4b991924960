"""Holding back text that may be the start of a marker: the one rule every stream uses.

Generation holds back the tail of the decoded text that could begin a stop string; the parsers
hold back the tail that could begin a call marker or a reasoning tag. Both ask
:func:`partial_start`: the earliest position from which the rest of the text is a proper prefix
of some marker, so everything before it can be shown now.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

__all__ = ["first_stop", "partial_start"]


@lru_cache(maxsize=512)
def _prefixes(markers: tuple[str, ...]) -> tuple[frozenset[str], int]:
    """Every proper prefix of the ``markers`` (non-empty), and the longest marker's length: a
    family's markers are a handful of fixed strings, asked about on every piece of a stream."""
    return frozenset(m[:k] for m in markers for k in range(1, len(m))), max(map(len, markers))


def partial_start(buf: str, markers: Iterable[str], start: int = 0, end: int | None = None) -> int:
    """The earliest ``s`` in ``[start, end)`` with ``buf[s:end]`` a proper prefix of a marker, else ``end``.

    Looks at no more than the longest marker's length of text, so the cost does not grow with
    ``buf``.
    """
    n = len(buf) if end is None else end
    markers = tuple(m for m in markers if m)
    if not markers:
        return n
    prefixes, longest = _prefixes(markers)
    for s in range(max(start, n - longest + 1), n):
        if buf[s:n] in prefixes:
            return s
    return n


def first_stop(buf: str, stops: Iterable[str]) -> tuple[int, str] | None:
    """Where the earliest stop string in ``buf`` begins, and which it is (at one place, the first
    listed), or None when ``buf`` holds none."""
    found = [(i, n, stop) for n, stop in enumerate(stops) if stop and (i := buf.find(stop)) >= 0]
    if not found:
        return None
    at, _, stop = min(found)
    return at, stop
