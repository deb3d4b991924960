"""Generic checks every tool-call family must pass, driven by a list of cases per family.

A family's cases live in ``tests/engine/formats/cases/<family_module>.py`` as ``FAMILY`` (the
registry name) and ``CASES`` (a list of :class:`Case`). ``test_families.py`` runs every check
below on every case of every module there, so adding a family's cases is all it takes:

* ``check_parse``: ``parse`` gives exactly the expected content, reasoning and typed calls;
  every call's ``raw`` is text of the reply; the events are well formed.
* ``check_splits``: folding the events of every split pattern (each character alone, every
  two-way split of short texts, random groups with fixed seeds, the whole text) equals ``parse``.
* ``check_truncation``: every prefix parsed with ``truncated=True`` never raises, returns only
  calls the whole reply has (same name, arguments and raw), never invents text, and streams to
  the same result.
* ``check_cross_family``: no other registered family reads a call out of this family's text.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from app.engine.formats import FORMATS, Format, Reply, fold_events
from app.engine.formats.events import ToolCallArgsDelta, ToolCallDone, ToolCallStarted

__all__ = [
    "TOOLS",
    "Case",
    "check_cross_family",
    "check_events",
    "check_parse",
    "check_splits",
    "check_truncation",
    "fold_split",
    "splits",
]


def _fn(name: str, props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"test tool {name}",
            "parameters": {"type": "object", "properties": props, "required": required or []},
        },
    }


TOOLS: list[dict[str, Any]] = [
    _fn("get_weather", {"city": {"type": "string"}, "days": {"type": "integer"}, "metric": {"type": "boolean"}},
        ["city"]),
    _fn("search", {
        "query": {"type": "string"},
        "limit": {"type": "integer"},
        "filters": {"type": "object", "properties": {"year": {"type": "integer"}}},
        "tags": {"type": "array", "items": {"type": "string"}},
        "score": {"type": ["number", "null"]},
        "mode": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
    }, ["query"]),
    _fn("set_port", {"port": {"type": "string"}, "zip": {"type": "string"}, "flag": {"type": "string"},
                     "blob": {"type": "string"}}),
    _fn("get_time", {}),
]


@dataclass
class Case:
    """One reply and what ``parse`` must make of it."""

    id: str
    text: str
    content: str = ""
    reasoning: str = ""
    calls: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    ids: list[str] | None = None  # expected call ids, when the case checks them
    in_reasoning: bool = False
    truncated: bool = False
    tools: list[dict[str, Any]] | None = None
    # Truncated prefixes return only calls of the whole reply. False for the rare reply whose
    # calls sit in reasoning closed later by a closing tag without an opening one.
    stable_prefix: bool = True

    def tool_list(self) -> list[dict[str, Any]]:
        return TOOLS if self.tools is None else self.tools


def check_events(events: list) -> None:
    """Started/ArgsDelta/Done are consistent: Done follows its Started; fragments spell the arguments."""
    started: dict[int, tuple[str, str]] = {}
    frags: dict[int, list[str]] = {}
    done = 0
    for ev in events:
        if isinstance(ev, ToolCallStarted):
            assert ev.index == done, f"call index {ev.index}, expected {done}"
            started[ev.index] = (ev.id, ev.name)
            frags[ev.index] = []
        elif isinstance(ev, ToolCallArgsDelta):
            assert ev.index in started
            frags[ev.index].append(ev.fragment)
        elif isinstance(ev, ToolCallDone):
            assert ev.index == done and started.get(ev.index) == (ev.call.id, ev.call.name)
            assert json.loads("".join(frags[ev.index])) == json.loads(json.dumps(ev.call.arguments, default=str))
            done += 1


def splits(text: str, *, seeds: int = 6) -> list[list[str]]:
    """Split patterns: whole, each character, every two-way split (short texts), random groups."""
    out = [[text], list(text)]
    if len(text) <= 400:
        out.extend([text[:i], text[i:]] for i in range(1, len(text)))
    for seed in range(seeds):
        rnd = random.Random(seed)
        parts, i = [], 0
        while i < len(text):
            k = rnd.choice((1, 2, 3, 5, 8, 13))
            parts.append(text[i:i + k])
            i += k
        out.append(parts)
    return out


def fold_split(fmt: Format, parts: list[str], tools, *, in_reasoning=False, truncated=False) -> tuple[Reply, list]:
    s = fmt.stream(tools, in_reasoning=in_reasoning)
    events: list = []
    for p in parts:
        events += s.feed(p)
    events += s.finish(truncated=truncated)
    return fold_events(events), events


def _summary(reply: Reply) -> tuple:
    return reply.content, reply.reasoning, [(c.name, c.arguments) for c in reply.tool_calls]


def check_parse(fmt: Format, case: Case) -> Reply:
    reply = fmt.parse(case.text, case.tool_list(), in_reasoning=case.in_reasoning, truncated=case.truncated)
    assert _summary(reply) == (case.content, case.reasoning, case.calls), f"{case.id}: {reply!r}"
    for call in reply.tool_calls:
        assert call.raw and call.raw in case.text, f"{case.id}: raw {call.raw!r} not in the text"
        assert isinstance(call.id, str) and call.id
    if case.ids is not None:
        assert [c.id for c in reply.tool_calls] == case.ids
    _, events = fold_split(fmt, [case.text], case.tool_list(), in_reasoning=case.in_reasoning,
                           truncated=case.truncated)
    check_events(events)
    return reply


def check_splits(fmt: Format, case: Case) -> None:
    want = fmt.parse(case.text, case.tool_list(), in_reasoning=case.in_reasoning, truncated=case.truncated)
    for parts in splits(case.text):
        got, events = fold_split(fmt, parts, case.tool_list(), in_reasoning=case.in_reasoning,
                                 truncated=case.truncated)
        assert got == want, f"{case.id}: split {parts[:6]!r}... gave {got!r}, parse gave {want!r}"
        check_events(events)


def check_truncation(fmt: Format, case: Case) -> None:
    tools = case.tool_list()
    full = fmt.parse(case.text, tools, in_reasoning=case.in_reasoning, truncated=case.truncated)
    full_calls = [(c.name, c.arguments, c.raw) for c in full.tool_calls]
    n = len(case.text)
    points = range(n + 1) if n <= 500 else sorted({round(i * n / 500) for i in range(501)})
    for p in points:
        prefix = case.text[:p]
        got = fmt.parse(prefix, tools, in_reasoning=case.in_reasoning, truncated=True)
        calls = [(c.name, c.arguments, c.raw) for c in got.tool_calls]
        if case.stable_prefix:
            assert calls == full_calls[: len(calls)], f"{case.id}: prefix {prefix!r} gave calls {calls!r}"
        for c in got.tool_calls:
            assert c.raw in prefix
        used = len(got.content) + len(got.reasoning) + sum(len(c.raw) for c in got.tool_calls)
        assert used <= len(prefix), f"{case.id}: prefix {prefix!r} invented text: {got!r}"
        if p % 7 == 0:
            streamed, _ = fold_split(fmt, list(prefix), tools, in_reasoning=case.in_reasoning, truncated=True)
            assert streamed == got, f"{case.id}: truncated prefix {prefix!r} streams differently"


def check_cross_family(owner: str, case: Case) -> None:
    for name, fmt in FORMATS.items():
        if name == owner:
            continue
        for in_reasoning in (False, True):
            got = fmt.parse(case.text, case.tool_list(), in_reasoning=in_reasoning)
            assert not got.tool_calls, f"{name} read a call out of {owner} case {case.id}: {got.tool_calls!r}"
