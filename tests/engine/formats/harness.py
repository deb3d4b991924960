"""Generic checks every tool-call family must pass, driven by a list of cases per family.

A family's cases live in ``tests/engine/formats/cases/<family_module>.py`` as ``FAMILY`` (the
registry name) and ``CASES`` (a list of :class:`Case`). ``test_families.py`` runs every check
below on every case of every module there, so adding a family's cases is all it takes:

* ``check_parse``: ``parse`` gives exactly the expected content, reasoning, typed calls and
  incomplete calls (by name); every call's ``raw`` is text of the reply; the events are well
  formed.
* ``check_splits``: folding the events of every split pattern (each character alone, every
  two-way split of short texts, random groups with fixed seeds, the whole text) equals ``parse``.
* ``check_truncation``: every prefix parsed with ``truncated=True`` never raises, returns only
  calls the whole reply has (same name, arguments and raw), never invents text, never leaves a
  call opener in content after the last complete call, and streams to the same result.
* ``check_cross_family``: no other registered family reads a call out of this family's text.
* ``check_accounted``: never lose, never invent (the fuzz suite runs it on every family).

A cases file may also set ``FUZZ`` (a :class:`Fuzz`): what the family's wire looks like to the
fuzz suite (``test_fuzz.py``) where the defaults taken from the :class:`Format` do not fit.
"""

from __future__ import annotations

import importlib
import json
import pkgutil
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from app.engine.formats import FORMATS, Format, Reply, fold_events
from app.engine.formats.detect import same_wire
from app.engine.formats.events import (
    ReasoningDelta,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallDone,
    ToolCallIncomplete,
    ToolCallStarted,
)

__all__ = [
    "FUZZ_NAMES",
    "FUZZ_TOOLS",
    "TOOLS",
    "Case",
    "Fuzz",
    "case_modules",
    "check_accounted",
    "check_cross_family",
    "check_events",
    "check_parse",
    "check_splits",
    "check_truncation",
    "close_tag_in_argument_cases",
    "fold_split",
    "splits",
    "text_case",
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
    _fn(
        "get_weather",
        {"city": {"type": "string"}, "days": {"type": "integer"}, "metric": {"type": "boolean"}},
        ["city"],
    ),
    _fn(
        "search",
        {
            "query": {"type": "string"},
            "limit": {"type": "integer"},
            "filters": {"type": "object", "properties": {"year": {"type": "integer"}}},
            "tags": {"type": "array", "items": {"type": "string"}},
            "score": {"type": ["number", "null"]},
            "mode": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
        },
        ["query"],
    ),
    _fn(
        "set_port",
        {
            "port": {"type": "string"},
            "zip": {"type": "string"},
            "flag": {"type": "string"},
            "blob": {"type": "string"},
        },
    ),
    _fn("get_time", {}),
]


# The names a fuzz writes for a family that reads only declared tools, declared without a schema
FUZZ_NAMES = ("fz_a", "fz_list", "fz_q9", "fz_b_c")
FUZZ_TOOLS: list[dict[str, Any]] = [{"type": "function", "function": {"name": n}} for n in FUZZ_NAMES]


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
    orphan_close: bool = True  # passed to parse/stream (False: a plain reply streams at once)
    tools: list[dict[str, Any]] | None = None
    # Truncated prefixes return only calls of the whole reply. False for the rare reply whose
    # calls sit in reasoning closed later by a closing tag without an opening one.
    stable_prefix: bool = True
    # Names (None where unknown) of the calls the reply holds that are not calls to run: cut by
    # the token limit, or to an undeclared tool.
    incomplete: list[str | None] = field(default_factory=list)
    # Other families that read this reply's calls too: a deviation of one family that is another's
    # wire (Qwen2.5-Coder's bare call object is a Llama 3 call written with "arguments").
    also: tuple[str, ...] = ()

    def tool_list(self) -> list[dict[str, Any]]:
        return TOOLS if self.tools is None else self.tools


def text_case(case_id: str, reply: str, **kw: Any) -> Case:
    """A reply that holds no call: its text, byte for byte."""
    return Case(case_id, reply, content=reply, **kw)


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
            assert json.loads("".join(frags[ev.index])) == json.loads(
                json.dumps(ev.call.arguments, default=str)
            )
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
            parts.append(text[i : i + k])
            i += k
        out.append(parts)
    return out


def fold_split(
    fmt: Format, parts: list[str], tools, *, in_reasoning=False, truncated=False, orphan_close=True
) -> tuple[Reply, list]:
    s = fmt.stream(tools, in_reasoning=in_reasoning, orphan_close=orphan_close)
    events: list = []
    for p in parts:
        events += s.feed(p)
    events += s.finish(truncated=truncated)
    return fold_events(events), events


def _summary(reply: Reply) -> tuple:
    return (
        reply.content,
        reply.reasoning,
        [(c.name, c.arguments) for c in reply.tool_calls],
        [c.name for c in reply.incomplete_calls],
    )


def check_parse(fmt: Format, case: Case) -> Reply:
    reply = fmt.parse(
        case.text,
        case.tool_list(),
        in_reasoning=case.in_reasoning,
        truncated=case.truncated,
        orphan_close=case.orphan_close,
    )
    assert _summary(reply) == (case.content, case.reasoning, case.calls, case.incomplete), (
        f"{case.id}: {reply!r}"
    )
    for call in reply.tool_calls:
        assert call.raw and call.raw in case.text, f"{case.id}: raw {call.raw!r} not in the text"
        assert isinstance(call.id, str) and call.id
    for inc in reply.incomplete_calls:
        assert inc.raw and inc.raw in case.text, f"{case.id}: incomplete raw {inc.raw!r} not in the text"
    if case.ids is not None:
        assert [c.id for c in reply.tool_calls] == case.ids
    _, events = fold_split(
        fmt,
        [case.text],
        case.tool_list(),
        in_reasoning=case.in_reasoning,
        truncated=case.truncated,
        orphan_close=case.orphan_close,
    )
    check_events(events)
    return reply


def check_splits(fmt: Format, case: Case) -> None:
    want = fmt.parse(
        case.text,
        case.tool_list(),
        in_reasoning=case.in_reasoning,
        truncated=case.truncated,
        orphan_close=case.orphan_close,
    )
    for parts in splits(case.text):
        got, events = fold_split(
            fmt,
            parts,
            case.tool_list(),
            in_reasoning=case.in_reasoning,
            truncated=case.truncated,
            orphan_close=case.orphan_close,
        )
        assert got == want, f"{case.id}: split {parts[:6]!r}... gave {got!r}, parse gave {want!r}"
        check_events(events)


def check_truncation(fmt: Format, case: Case) -> None:
    tools = case.tool_list()
    oc = case.orphan_close
    full = fmt.parse(
        case.text, tools, in_reasoning=case.in_reasoning, truncated=case.truncated, orphan_close=oc
    )
    full_calls = [(c.name, c.arguments, c.raw) for c in full.tool_calls]
    n = len(case.text)
    points = range(n + 1) if n <= 500 else sorted({round(i * n / 500) for i in range(501)})
    for p in points:
        prefix = case.text[:p]
        got = fmt.parse(prefix, tools, in_reasoning=case.in_reasoning, truncated=True, orphan_close=oc)
        calls = [(c.name, c.arguments, c.raw) for c in got.tool_calls]
        if case.stable_prefix:
            assert calls == full_calls[: len(calls)], f"{case.id}: prefix {prefix!r} gave calls {calls!r}"
        for c in got.tool_calls:
            assert c.raw in prefix
        for c in got.incomplete_calls:
            assert c.raw and c.raw in prefix and c.reason == "truncated" or c.reason == "undeclared"
        used = (
            len(got.content)
            + len(got.reasoning)
            + sum(len(c.raw) for c in got.tool_calls)
            + sum(len(c.raw) for c in got.incomplete_calls)
        )
        assert used <= len(prefix), f"{case.id}: prefix {prefix!r} invented text: {got!r}"
        if p % 7 == 0:
            streamed, _ = fold_split(
                fmt, list(prefix), tools, in_reasoning=case.in_reasoning, truncated=True, orphan_close=oc
            )
            assert streamed == got, f"{case.id}: truncated prefix {prefix!r} streams differently"


# Families that read another family's wire where their models stray into it, and what a call of
# that wire they read looks like: Qwen3.5 and 3.6 (``qwen-xml``) write Hermes' tagged single
# calls now and then. Such a family may read those calls out of that wire's cases, and no others.
READS_WIRE: dict[str, tuple[str, re.Pattern[str]]] = {
    "qwen-xml": ("hermes", re.compile(r"<tool_call>\s*\{")),
}


def check_cross_family(owner: str, case: Case) -> None:
    """No other family reads a call out of ``case``: none but those that write the same wire
    (``detect.WIRE_OF``: Phi-4-mini writes FireFunction's calls; they differ in their templates),
    and those that read it as a deviation (:data:`READS_WIRE`) only its calls in their shape."""
    for name, fmt in FORMATS.items():
        if name == owner or same_wire(name, owner) or name in case.also:
            continue
        stray = READS_WIRE.get(name)
        for in_reasoning in (False, True):
            got = fmt.parse(case.text, case.tool_list(), in_reasoning=in_reasoning)
            if stray is not None and same_wire(owner, stray[0]):
                mine = FORMATS[owner].parse(case.text, case.tool_list(), in_reasoning=in_reasoning)
                for c in got.tool_calls:
                    assert stray[1].match(c.raw), f"{name} read {c.raw!r} out of {owner} case {case.id}"
                    assert any((c.name, c.arguments) == (m.name, m.arguments) for m in mine.tool_calls), (
                        f"{name} read {c!r} out of {owner} case {case.id}, which {owner} does not"
                    )
                continue
            assert not got.tool_calls, f"{name} read a call out of {owner} case {case.id}: {got.tool_calls!r}"


def close_tag_in_argument_cases(
    tags: tuple[str, str], call_text: str, call: tuple[str, dict[str, Any]], opener: str
) -> list[Case]:
    """Cases of a call whose argument holds the family's closing reasoning tag, in every state
    of the reasoning split (see the decision table in ``app/engine/formats/base.py``).

    ``tags``: the family's (open, close) reasoning tags; ``call_text``: one call (a whole section
    where the family has one) with the closing tag inside an argument; ``call``: what it parses to;
    ``opener``: the family's call opener, used for a region that is not a call.
    """
    open_tag, close_tag = tags
    assert close_tag in call_text
    k, p = call_text, call
    cut = call_text[: call_text.index(close_tag) + len(close_tag)]
    bare = opener + " here"  # an opener that starts no call: its region is plain text
    cases = [
        Case("close-tag-in-arg", k, calls=[p]),
        Case("close-tag-in-arg-no-orphan", k, calls=[p], orphan_close=False),
        Case("close-tag-in-arg-text-around", "Sure. " + k + " Done.", content="Sure.  Done.", calls=[p]),
        Case(
            "close-tag-in-arg-text-around-no-orphan",
            "Sure. " + k + " Done.",
            content="Sure.  Done.",
            calls=[p],
            orphan_close=False,
        ),
        # Qwen3.5: a call opener ends an unclosed (prefilled or opened) reasoning block.
        Case(
            "close-tag-in-arg-prefilled-unclosed",
            "plan\n" + k,
            in_reasoning=True,
            reasoning="plan\n",
            calls=[p],
        ),
        Case(
            "close-tag-in-arg-prefilled-unclosed-no-orphan",
            "plan\n" + k,
            in_reasoning=True,
            reasoning="plan\n",
            calls=[p],
            orphan_close=False,
        ),
        Case("close-tag-in-arg-opened-unclosed", open_tag + "plan\n" + k, reasoning="plan\n", calls=[p]),
        Case(
            "close-tag-in-arg-prefilled-unclosed-parallel",
            "plan\n" + k + "\n" + k,
            in_reasoning=True,
            reasoning="plan\n",
            content="\n",
            calls=[p, p],
        ),
        # A block the model closes after the call: the call was reasoning.
        Case(
            "close-tag-in-arg-prefilled-closed-after",
            "plan " + k + " no." + close_tag + "Answer",
            in_reasoning=True,
            reasoning="plan " + k + " no.",
            content="Answer",
            stable_prefix=False,
        ),
        Case(
            "close-tag-in-arg-orphan-closed-after",
            "plan " + k + " no." + close_tag + "Answer",
            reasoning="plan " + k + " no.",
            content="Answer",
            stable_prefix=False,
        ),
        # Without orphan closes a later closing tag is text, the call counts.
        Case(
            "close-tag-in-arg-no-orphan-tag-after",
            "plan " + k + " no." + close_tag + "Answer",
            content="plan  no." + close_tag + "Answer",
            calls=[p],
            orphan_close=False,
        ),
        # Reasoning closed before the call: the usual split.
        Case("close-tag-in-arg-after-reasoning", open_tag + "r" + close_tag + k, reasoning="r", calls=[p]),
        Case(
            "close-tag-in-arg-prefilled-closed-before",
            "r" + close_tag + k,
            in_reasoning=True,
            reasoning="r",
            calls=[p],
        ),
        Case("close-tag-in-arg-orphan-closed-before", "r" + close_tag + k, reasoning="r", calls=[p]),
        # A cut call is no call: its region is plain text and the tag in it closes reasoning.
        Case("close-tag-in-arg-cut", cut, truncated=True, reasoning=cut[: -len(close_tag)]),
        Case(
            "close-tag-in-arg-prefilled-cut",
            "plan\n" + cut,
            in_reasoning=True,
            truncated=True,
            reasoning="plan\n" + cut[: -len(close_tag)],
        ),
        # An opener that starts no call: the closing tag after it still closes reasoning.
        Case(
            "close-tag-after-bare-opener",
            "I'd use " + bare + close_tag + "Answer",
            reasoning="I'd use " + bare,
            content="Answer",
        ),
        Case(
            "close-tag-after-bare-opener-prefilled",
            "I'd use " + bare + close_tag + "Answer",
            in_reasoning=True,
            reasoning="I'd use " + bare,
            content="Answer",
        ),
    ]
    return cases


@dataclass
class Fuzz:
    """How the fuzz suite writes and checks a family's replies (every field has a default taken
    from the family's :class:`Format`).

    * ``markers``: marker strings of the wire besides the openers and reasoning tags (they are
      sprinkled into argument values, mutations and random text);
    * ``structure``: regular expressions of text the family consumes by design (besides
      whitespace and its reasoning tags): never content, reasoning or a call's raw;
    * ``wrap``: ``(before, after)`` that make one call's raw a reply of its own;
    * ``forbidden``: what an argument string cannot hold on this wire (a raw value's end);
    * ``write(fmt, name, arguments, rnd)``: one call as the model writes it (default
      ``fmt.example_call``);
    * ``reply(fmt, calls, texts, reasoning, rnd)``: a whole reply ``(text, content, reasoning)``
      with the calls, the texts around them and the reasoning (default: the reasoning block, then
      the texts with the calls between them; a start-only family's calls open the reply);
    * ``raw_values``: argument values are strings only (default ``fmt.raw_values``);
    * ``max_calls``: how many calls a reply may hold;
    * ``declared``: the family reads a call only to a declared tool (its wire has no marker), so
      the fuzz declares the names it writes (:data:`FUZZ_NAMES`, tools without a schema: their
      arguments stay as written) and draws its names from them.
    """

    markers: tuple[str, ...] = ()
    structure: tuple[str, ...] = ()
    wrap: tuple[str, str] = ("", "")
    forbidden: tuple[str, ...] = ()
    write: Callable[..., str] | None = None
    reply: Callable[..., tuple[str, str, str]] | None = None
    raw_values: bool | None = None
    max_calls: int = 3
    declared: bool = False

    def tools(self) -> list[dict[str, Any]]:
        """The tools the fuzz parses with."""
        return TOOLS + FUZZ_TOOLS if self.declared else TOOLS

    @staticmethod
    def tags(fmt: Format) -> tuple[str, ...]:
        pairs = ((fmt.reasoning,) if fmt.reasoning else ()) + tuple(fmt.reasoning_alt)
        return tuple(dict.fromkeys(t for pair in pairs for t in pair))

    def all_markers(self, fmt: Format) -> tuple[str, ...]:
        return tuple(dict.fromkeys((*fmt.openers, *fmt.anywhere, *self.tags(fmt), *self.markers)))

    def gaps(self, fmt: Format) -> list[re.Pattern[str]]:
        tags = tuple(re.escape(t) for t in self.tags(fmt))
        return [re.compile(r"\s"), *(re.compile(g) for g in (*tags, *self.structure))]


def check_accounted(
    fmt: Format, spec: Fuzz, text: str, *, in_reasoning: bool = False, truncated: bool = False
) -> None:
    """Never lose, never invent, for any input: the pieces ``parse`` emits (content and reasoning
    deltas, each call's raw, each incomplete call's raw), in the order emitted, spell ``text``
    exactly once structure the family consumes by design (its markers, message headers,
    whitespace) is put back between them; and every call's raw, alone, reads back as that very
    call (its arguments come from its own text)."""
    tools = spec.tools()
    s = fmt.stream(tools, in_reasoning=in_reasoning)
    events = s.feed(text) + s.finish(truncated=truncated)
    pieces: list[str] = []
    for ev in events:
        if isinstance(ev, (TextDelta, ReasoningDelta)):
            pieces.append(ev.text)
        elif isinstance(ev, (ToolCallDone, ToolCallIncomplete)):
            pieces.append(ev.call.raw)
    gaps = spec.gaps(fmt)

    def close(points: set[int]) -> set[int]:
        todo, seen = list(points), set(points)
        while todo:
            p = todo.pop()
            for g in gaps:
                m = g.match(text, p)
                if m and m.end() > p and m.end() not in seen:
                    seen.add(m.end())
                    todo.append(m.end())
        return seen

    reach = close({0})
    for k, piece in enumerate(pieces):
        reach = close({p + len(piece) for p in reach if text.startswith(piece, p)})
        assert reach, f"{fmt.name}: piece {k} {piece!r} is not the input's next text: {text!r} -> {pieces!r}"
    assert len(text) in reach, f"{fmt.name}: input text lost: {text!r} -> {pieces!r}"
    before, after = spec.wrap
    for ev in events:
        if isinstance(ev, ToolCallDone):
            alone = fmt.parse(before + ev.call.raw + after, tools)
            assert [(c.name, c.arguments) for c in alone.tool_calls] == [(ev.call.name, ev.call.arguments)], (
                text,
                ev.call,
            )


def case_modules() -> dict[str, Any]:
    """The cases module of each family, by registry name (``FAMILY``), from ``tests/engine/formats/cases``."""
    from tests.engine.formats import cases as pkg

    out: dict[str, Any] = {}
    for info in sorted(pkgutil.iter_modules(pkg.__path__), key=lambda i: i.name):
        mod = importlib.import_module(f"{pkg.__name__}.{info.name}")
        out[mod.FAMILY] = mod
    return out
