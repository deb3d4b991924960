"""The marker searches every stream runs on each piece of text agree with their definitions."""

from __future__ import annotations

import random

import pytest

from app.engine.formats.base import find_marker
from app.engine.holdback import partial_start

MARKER_SETS = [
    ("<tool_call>", "</tool_call>", "<think>", "</think>"),
    (
        "<｜DSML｜tool_calls>",
        "<｜｜DSML｜｜tool_calls>",
        "<|DSML|invoke",
        "<｜DSML｜invoke",
        "<|DSML|tool_calls\n",
    ),
    ("[TOOL_CALLS]", "[ARGS]", "[", "[T"),  # markers that are prefixes of one another
    ("<|start|>", "<|channel|>", "<|end|>", "<|call|>", "<|return|>"),
]


def _partial_by_definition(buf: str, markers: tuple[str, ...], start: int) -> int:
    for s in range(start, len(buf)):
        tail = buf[s:]
        if any(len(m) > len(tail) and m.startswith(tail) for m in markers if m):
            return s
    return len(buf)


def _find_by_definition(buf: str, markers: tuple[str, ...], start: int) -> tuple[int, str]:
    best, found = -1, ""
    for m in markers:
        i = buf.find(m, start)
        if i != -1 and (best == -1 or i < best or (i == best and len(m) > len(found))):
            best, found = i, m
    return best, found


def _texts(markers: tuple[str, ...], seed: int) -> list[str]:
    rnd = random.Random(seed)
    pieces = [*markers, *(m[: rnd.randint(1, max(1, len(m) - 1))] for m in markers), "a", " ", "|", "<", "\n"]
    return ["".join(rnd.choice(pieces) for _ in range(rnd.randint(0, 12))) for _ in range(300)]


@pytest.mark.parametrize("markers", MARKER_SETS, ids=["hermes", "dsml", "nested", "harmony"])
def test_partial_start_is_the_earliest_proper_prefix_of_a_marker(markers):
    for text in _texts(markers, 1):
        for start in (0, len(text) // 2):
            assert partial_start(text, markers, start) == _partial_by_definition(text, markers, start), text


@pytest.mark.parametrize("markers", MARKER_SETS, ids=["hermes", "dsml", "nested", "harmony"])
def test_find_marker_finds_the_earliest_and_longest_marker(markers):
    for text in _texts(markers, 2):
        pos, m, safe = find_marker(text, markers, True)
        assert (pos, m) == _find_by_definition(text, markers, 0), text
        # not final: a marker is reported only where no partial marker could start before it
        pos, m, safe = find_marker(text, markers, False)
        want_pos, want_m = _find_by_definition(text, markers, 0)
        limit = len(text) if want_pos == -1 else want_pos
        want_safe = min(limit, _partial_by_definition(text, markers, 0))
        if want_pos != -1 and want_safe < want_pos:
            want_pos, want_m = -1, ""
        assert (pos, m, safe) == (want_pos, want_m, want_safe if want_pos == -1 else want_pos), text


def test_an_empty_marker_stands_at_the_start_unless_a_longer_one_does():
    assert find_marker("ab<x>", ("", "<x>"), True)[:2] == (0, "")
    assert find_marker("<x>ab", ("", "<x>"), True)[:2] == (0, "<x>")
