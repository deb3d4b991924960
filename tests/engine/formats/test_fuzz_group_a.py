"""Property tests (hypothesis) of the glm, harmony, gemma4 and pythonic families.

* Valid replies built from random parts (text, reasoning, calls with random nested arguments,
  unicode, quotes, other families' markers inside strings) parse to exactly those parts: no
  family marker leaks into content, and argument strings hold a marker only where the generated
  argument did.
* Random and mutated replies (truncated, characters inserted or deleted, markers duplicated or
  dropped in) never raise, stream to the same result for random splits, and lose and invent
  nothing (:func:`check_accounted`): every character of the input is in exactly one of the
  content, the reasoning, a call's raw (in the order emitted) or structure the family consumes by
  design; and each call's raw alone reads back as that call.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.engine.formats import FORMATS, fold_events
from app.engine.formats.events import ReasoningDelta, TextDelta, ToolCallDone
from tests.engine.formats.harness import TOOLS

FAMILIES = ("glm", "harmony", "gemma4", "pythonic")

MARKERS = {
    "glm": ("<tool_call>", "</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>",
            "<think>", "</think>"),
    "harmony": ("<|start|>", "<|channel|>", "<|message|>", "<|constrain|>", "<|end|>", "<|call|>", "<|return|>"),
    "gemma4": ("<|tool_call>", "<tool_call|>", '<|"|>', "<|channel>", "<channel|>", "<|tool_response>"),
    "pythonic": ("<|python_start|>", "<|python_end|>"),
}
ALL_MARKERS = tuple(sorted({m for ms in MARKERS.values() for m in ms}))
# Markers an argument string cannot hold in a family's wire (special tokens or the value's own end).
FORBIDDEN_IN_ARGS = {
    "glm": ("</arg_value>",),
    "harmony": MARKERS["harmony"],
    "gemma4": ('<|"|>',),
    "pythonic": (),
}

# -- never lose, never invent: every character accounted for ---------------------------------------

_DS_B, _DS_E = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
_K2_B, _K2_E = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
_DSML = "｜DSML｜"
_THINK = (re.escape("<think>"), re.escape("</think>"))
_H_CHANNEL = r"<\|channel\|>[ \t]*[A-Za-z_]\w*[ \t]*"
# What each family consumes by design: it is structure, never content, reasoning or a call's raw.
# Whitespace may be structure too (between calls of a section, around a list).
STRUCTURE: dict[str, tuple[str, ...]] = {
    "glm": _THINK,
    # A message header without recipient (a call's header is in its raw), and the end tokens.
    "harmony": (r"(?:<\|start\|>[ \t]*assistant[ \t]*(?:" + _H_CHANNEL + r")?|" + _H_CHANNEL + r")"
                r"(?:<\|constrain\|>[ \t]*)?(?:[A-Za-z_][\w\-]*)?[ \t]*<\|message\|>",
                r"<\|end\|>", r"<\|call\|>", r"<\|return\|>"),
    # a <|tool_response> straight after a call is consumed with it (the 31B template renders it there)
    "gemma4": (re.escape("<|channel>thought"), re.escape("<channel|>"), re.escape("<|tool_response>")),
    "pythonic": (re.escape("<|python_start|>"), re.escape("<|python_end|>"), r"\[", r"\]", ","),
    "deepseek-v3": (*_THINK, re.escape(_DS_B), re.escape(_DS_E)),
    "deepseek-v3.1": (*_THINK, re.escape(_DS_B), re.escape(_DS_E)),
    "deepseek-dsml": (*_THINK, "</?" + re.escape(_DSML) + "(?:function_calls|tool_calls| calls)>"),
    "kimi-k2": (*_THINK, re.escape(_K2_B), re.escape(_K2_E)),
    "kimi-k3": _THINK,
}
# (before, after): what makes one call's raw a reply of its own that reads back as that call.
WRAP = {"pythonic": ("[", "]"), "deepseek-v3": (_DS_B, _DS_E), "deepseek-v3.1": (_DS_B, _DS_E),
        "deepseek-dsml": (f"<{_DSML}function_calls>", f"</{_DSML}function_calls>"), "kimi-k2": (_K2_B, _K2_E)}


def check_accounted(family: str, text: str, *, in_reasoning: bool = False, truncated: bool = False) -> None:
    """Never lose, never invent, for any input: the pieces ``parse`` emits (content and reasoning
    deltas, each call's raw), in the order emitted, spell ``text`` exactly once structure the family
    consumes by design (its markers, message headers, whitespace) is put back between them; and
    every call's raw, alone, reads back as that very call (its arguments come from its own text)."""
    fmt = FORMATS[family]
    s = fmt.stream(TOOLS, in_reasoning=in_reasoning)
    events = s.feed(text) + s.finish(truncated=truncated)
    pieces: list[str] = []
    for ev in events:
        if isinstance(ev, (TextDelta, ReasoningDelta)):
            pieces.append(ev.text)
        elif isinstance(ev, ToolCallDone):
            pieces.append(ev.call.raw)
    gaps = [re.compile(r"\s"), *(re.compile(g) for g in STRUCTURE[family])]

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
        assert reach, f"{family}: piece {k} {piece!r} is not the input's next text: {text!r} -> {pieces!r}"
    assert len(text) in reach, f"{family}: input text lost: {text!r} -> {pieces!r}"
    before, after = WRAP.get(family, ("", ""))
    for ev in events:
        if isinstance(ev, ToolCallDone):
            alone = fmt.parse(before + ev.call.raw + after, TOOLS)
            assert [(c.name, c.arguments) for c in alone.tool_calls] == [(ev.call.name, ev.call.arguments)], \
                (text, ev.call)


SAFE_TEXT = st.text(alphabet="abcXYZ 0129.,!?-é東🌧\n", max_size=16)
RICH_CHARS = "aZ 09\"'\\\n\t<>|{}[]():,=/é東🌧"
RICH_TEXT = st.lists(st.one_of(st.text(alphabet=RICH_CHARS, max_size=6), st.sampled_from(ALL_MARKERS)),
                     max_size=4).map("".join)
KEY = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True)
NAME = st.from_regex(r"fz_[a-z][a-z0-9_]{0,6}", fullmatch=True)  # not in TOOLS: arguments stay as written


def _value(strings):
    leaf = st.one_of(strings, st.integers(-10**6, 10**6), st.booleans(), st.none(),
                     st.floats(allow_nan=False, allow_infinity=False, width=32))
    return st.recursive(leaf, lambda kids: st.one_of(st.lists(kids, max_size=3),
                                                     st.dictionaries(KEY, kids, max_size=3)), max_leaves=6)


def _has_forbidden(v: Any, forbidden: tuple[str, ...]) -> bool:
    if isinstance(v, str):
        return any(m in v for m in forbidden)
    if isinstance(v, list):
        return any(_has_forbidden(x, forbidden) for x in v)
    if isinstance(v, dict):
        return any(_has_forbidden(k, forbidden) or _has_forbidden(x, forbidden) for k, x in v.items())
    return False


# -- wire writers ---------------------------------------------------------------------------------

def _gemma_value(v: Any) -> str:
    if isinstance(v, str):
        return '<|"|>' + v + '<|"|>'
    if isinstance(v, bool):
        return "true" if v else "false"
    if v is None:
        return "null"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, list):
        return "[" + ",".join(_gemma_value(x) for x in v) + "]"
    return "{" + ",".join(f"{k}:{_gemma_value(x)}" for k, x in v.items()) + "}"


def _write_call(family: str, name: str, args: dict[str, Any], rnd: random.Random, first: bool) -> str:
    if family == "glm":
        nl = "\n" if rnd.random() < 0.5 else ""
        inner = "".join(f"{nl}<arg_key>{k}</arg_key>{nl}<arg_value>{v}</arg_value>" for k, v in args.items())
        return f"<tool_call>{name}{inner}{nl}</tool_call>"
    if family == "harmony":
        start = "" if first else "<|start|>assistant"
        body = json.dumps(args, ensure_ascii=rnd.random() < 0.5)
        if rnd.random() < 0.5:
            return f"{start}<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{body}<|call|>"
        return f"{start} to=functions.{name}<|channel|>commentary json<|message|>{body}<|call|>"
    if family == "gemma4":
        return f"<|tool_call>call:{name}" + _gemma_value(args) + "<tool_call|>"
    return f"{name}(" + ", ".join(f"{k}={v!r}" for k, v in args.items()) + ")"


@st.composite
def valid_replies(draw, family: str):
    """(text, content, reasoning, calls) of a well-formed reply of ``family``."""
    rnd = random.Random(draw(st.integers(0, 2**16)))
    forbidden = FORBIDDEN_IN_ARGS[family]
    with_reasoning = family != "pythonic" and draw(st.booleans())
    strings = RICH_TEXT.filter(lambda s: not any(m in s for m in forbidden))
    if family == "glm":
        arg_values = strings  # a raw wire: every value is text
    else:
        arg_values = _value(strings)
    ncalls = draw(st.integers(0, 3))
    calls = [(draw(NAME), draw(st.dictionaries(KEY, arg_values, max_size=3))) for _ in range(ncalls)]
    texts = [draw(SAFE_TEXT) for _ in range(ncalls + 1)]
    reasoning = draw(SAFE_TEXT) if with_reasoning else ""
    if family == "pythonic":
        listing = "[" + ", ".join(_write_call(family, n, a, rnd, False) for n, a in calls) + "]"
        if not calls:
            return texts[0], texts[0], "", []
        if draw(st.booleans()):  # the list opens the reply
            lead = draw(st.sampled_from(["", " ", "\n"]))
            wrapped = f"<|python_start|>{listing}<|python_end|>" if draw(st.booleans()) else listing
            return lead + wrapped + texts[1], lead + texts[1], "", calls
        text = texts[0] + "<|python_start|>" + listing + "<|python_end|>" + texts[1]
        return text, texts[0] + texts[1], "", calls
    parts: list[str] = []
    if family == "harmony":
        if with_reasoning:
            parts.append(f"<|channel|>analysis<|message|>{reasoning}<|end|>")
        for i, t in enumerate(texts):
            first = not parts
            if t:
                parts.append(("" if first else "<|start|>assistant") + f"<|channel|>final<|message|>{t}<|end|>")
            if i < ncalls:
                parts.append(_write_call(family, *calls[i], rnd, not parts))
        return "".join(parts), "".join(texts), reasoning, calls
    if with_reasoning:
        parts.append("<think>" + reasoning + "</think>" if family == "glm"
                     else "<|channel>thought" + reasoning + "<channel|>")
    for i, t in enumerate(texts):
        parts.append(t)
        if i < ncalls:
            parts.append(_write_call(family, *calls[i], rnd, False))
    return "".join(parts), "".join(texts), reasoning, calls


def _stream(family: str, text: str, rnd: random.Random, *, truncated: bool = False):
    s = FORMATS[family].stream(TOOLS)
    events: list = []
    i = 0
    while i < len(text):
        k = rnd.choice((1, 1, 2, 3, 7, 20))
        events += s.feed(text[i:i + k])
        i += k
    events += s.finish(truncated=truncated)
    return fold_events(events)


def _check_valid(family: str, sample) -> None:
    text, content, reasoning, calls = sample
    reply = FORMATS[family].parse(text, TOOLS)
    assert reply.content == content, (text, reply)
    assert reply.reasoning == reasoning, (text, reply)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == calls, (text, reply)
    assert not any(m in reply.content for m in MARKERS[family]), (text, reply)
    check_accounted(family, text)
    for (_name, args), call in zip(calls, reply.tool_calls, strict=True):
        for m in ALL_MARKERS:  # a marker in a parsed argument only where the written argument had it
            assert (m in json.dumps(call.arguments, ensure_ascii=False)) == (m in json.dumps(args, ensure_ascii=False))
    rnd = random.Random(len(text))
    for _ in range(2):
        assert _stream(family, text, rnd) == reply


MUTATION = st.tuples(st.sampled_from(("cut", "insert", "delete", "marker", "dup")), st.integers(0, 10**6),
                     st.integers(1, 12), st.sampled_from(ALL_MARKERS + ("<", "|", ">", "{", "[", "'", '"', "\\")))


def _mutate(text: str, mutations) -> str:
    for op, pos, size, piece in mutations:
        p = pos % (len(text) + 1)
        if op == "cut":
            text = text[:p]
        elif op == "insert":
            text = text[:p] + piece[:1] + text[p:]
        elif op == "delete":
            text = text[:p] + text[p + size:]
        elif op == "marker":
            text = text[:p] + piece + text[p:]
        else:  # duplicate a marker the text has
            present = [m for m in ALL_MARKERS if m in text]
            if present:
                m = present[pos % len(present)]
                j = text.find(m)
                text = text[:j] + m + text[j:]
    return text


def _check_mutated(family: str, text: str, truncated: bool) -> None:
    fmt = FORMATS[family]
    reply = fmt.parse(text, TOOLS, truncated=truncated)
    for c in reply.tool_calls:
        assert c.raw and c.raw in text and isinstance(c.arguments, dict)
    check_accounted(family, text, truncated=truncated)  # nothing lost, nothing invented
    rnd = random.Random(len(text))
    for _ in range(2):
        assert _stream(family, text, rnd, truncated=truncated) == reply, text
    check_accounted(family, text, in_reasoning=True, truncated=truncated)


FUZZ = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                         HealthCheck.filter_too_much])


def _valid_test(family: str):
    @FUZZ
    @given(valid_replies(family))
    def test(sample):
        _check_valid(family, sample)
    return test


def _mutated_test(family: str):
    @FUZZ
    @given(valid_replies(family), st.lists(MUTATION, min_size=1, max_size=3), st.booleans())
    def test(sample, mutations, truncated):
        _check_mutated(family, _mutate(sample[0], mutations), truncated)
    return test


def _random_test(family: str):
    @FUZZ
    @given(st.lists(st.one_of(st.text(alphabet=RICH_CHARS + "ab", max_size=8), st.sampled_from(ALL_MARKERS)),
                    max_size=12).map("".join), st.booleans())
    def test(text, truncated):
        _check_mutated(family, text, truncated)
    return test


test_glm_valid_replies_parse_exactly = _valid_test("glm")
test_glm_mutated_replies_are_safe = _mutated_test("glm")
test_glm_random_text_is_safe = _random_test("glm")
test_harmony_valid_replies_parse_exactly = _valid_test("harmony")
test_harmony_mutated_replies_are_safe = _mutated_test("harmony")
test_harmony_random_text_is_safe = _random_test("harmony")
test_gemma4_valid_replies_parse_exactly = _valid_test("gemma4")
test_gemma4_mutated_replies_are_safe = _mutated_test("gemma4")
test_gemma4_random_text_is_safe = _random_test("gemma4")
test_pythonic_valid_replies_parse_exactly = _valid_test("pythonic")
test_pythonic_mutated_replies_are_safe = _mutated_test("pythonic")
test_pythonic_random_text_is_safe = _random_test("pythonic")
