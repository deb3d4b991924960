"""Property tests (hypothesis) of every registered family, walked from the registry.

* Valid replies built from random parts (text, reasoning, calls with random nested arguments,
  unicode, quotes, every family's markers inside strings but those the wire cannot carry) parse
  to exactly those parts: no family marker leaks into content, the arguments come back exactly
  as written, and random splits stream to the same reply.
* Mutated replies (cut, characters inserted or deleted, markers duplicated or dropped in) and
  random marker soup never raise, stream to the same result for random splits, and lose and
  invent nothing (``harness.check_accounted``): every character of the input is in exactly one of
  the content, the reasoning, a call's raw, an incomplete call's raw (in the order emitted) or
  structure the family consumes by design; and each call's raw alone reads back as that call.

A family's calls are written by its ``example_call``; its cases file may set ``FUZZ`` (a
``harness.Fuzz``) where its wire needs more (a writer with variants, how a whole reply is laid
out, what its values cannot hold). Budgets are fixed and small; CI replays fixed examples
(``derandomize``, see tests/conftest.py).
"""

from __future__ import annotations

import keyword
import random
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.engine.formats import FORMATS, Format
from tests.engine.formats.harness import FUZZ_NAMES, Fuzz, case_modules, check_accounted, fold_split

MODULES = case_modules()
FAMILIES = list(FORMATS)


def spec_of(family: str) -> Fuzz:
    mod = MODULES.get(family)
    return getattr(mod, "FUZZ", None) or Fuzz()


ALL_MARKERS = tuple(sorted({m for f in FAMILIES for m in spec_of(f).all_markers(FORMATS[f])}))

SAFE_TEXT = st.text(alphabet="abcXYZ 0129.,!?-é東🌧\n", max_size=16)
RICH_CHARS = "aZ 09\"'\\\n\t<>|{}[]():,=/é東🌧"
# Argument names every wire can carry (Python-call wires: identifiers, never keywords like "as").
KEY = st.from_regex(r"[a-z][a-z0-9_]{0,6}", fullmatch=True).filter(lambda k: not keyword.iskeyword(k))
NAME = st.from_regex(r"fz_[a-z][a-z0-9_]{0,6}", fullmatch=True)  # not in TOOLS: arguments stay as written


def marked_strings(forbidden: tuple[str, ...]):
    """Strings that may hold any family's markers, except those the wire cannot carry."""
    allowed = [m for m in ALL_MARKERS if not any(f in m or m in f for f in forbidden)] or ["<"]
    piece = st.one_of(st.text(alphabet=RICH_CHARS, max_size=6), st.sampled_from(allowed))
    return st.lists(piece, max_size=4).map("".join).filter(lambda v: not any(f in v for f in forbidden))


def _values(strings):
    leaf = st.one_of(
        strings,
        st.integers(-(10**6), 10**6),
        st.booleans(),
        st.none(),
        st.floats(allow_nan=False, allow_infinity=False, width=32),
    )
    return st.recursive(
        leaf,
        lambda kids: st.one_of(st.lists(kids, max_size=3), st.dictionaries(KEY, kids, max_size=3)),
        max_leaves=6,
    )


def default_reply(fmt: Format, spec: Fuzz, calls, texts, reasoning, rnd) -> tuple[str, str, str]:
    """The reasoning block, then the texts with the calls between them (a start-only family:
    its one call opens the reply, a text may follow)."""

    def write(name: str, args: dict[str, Any]) -> str:
        return spec.write(fmt, name, args, rnd) if spec.write else fmt.example_call(name, args)

    head = "" if reasoning is None else fmt.reasoning[0] + reasoning + fmt.reasoning[1]
    if fmt.start_only:
        if not calls:
            return head + texts[0], texts[0], reasoning or ""
        return head + "".join(write(n, a) for n, a in calls) + texts[-1], texts[-1], reasoning or ""
    parts = [head]
    for i, t in enumerate(texts):
        parts.append(t)
        if i < len(calls):
            parts.append(write(*calls[i]))
    return "".join(parts), "".join(texts), reasoning or ""


@st.composite
def valid_replies(draw, family: str):
    """(text, content, reasoning, calls) of a well-formed reply of ``family``."""
    fmt, spec = FORMATS[family], spec_of(family)
    rnd = random.Random(draw(st.integers(0, 2**16)))
    strings = marked_strings(spec.forbidden)
    raw = fmt.raw_values if spec.raw_values is None else spec.raw_values
    values = strings if raw else _values(strings)
    most = 1 if fmt.start_only and spec.reply is None else spec.max_calls
    names = st.sampled_from(FUZZ_NAMES) if spec.declared else NAME
    calls = [
        (draw(names), draw(st.dictionaries(KEY, values, max_size=3)))
        for _ in range(draw(st.integers(0, most)))
    ]
    texts = [draw(SAFE_TEXT) for _ in range(len(calls) + 1)]
    reasoning = draw(SAFE_TEXT) if fmt.reasoning and draw(st.booleans()) else None
    if spec.reply is not None:
        text, content, reasoning_out = spec.reply(fmt, calls, texts, reasoning, rnd)
    else:
        text, content, reasoning_out = default_reply(fmt, spec, calls, texts, reasoning, rnd)
    return text, content, reasoning_out, calls


def _stream(
    fmt: Format,
    text: str,
    rnd: random.Random,
    *,
    truncated: bool = False,
    in_reasoning: bool = False,
    tools: list[dict[str, Any]],
):
    parts, i = [], 0
    while i < len(text):
        k = rnd.choice((1, 1, 2, 3, 7, 20))
        parts.append(text[i : i + k])
        i += k
    return fold_split(fmt, parts, tools, truncated=truncated, in_reasoning=in_reasoning)[0]


MUTATION = st.tuples(
    st.sampled_from(("cut", "insert", "delete", "marker", "dup")),
    st.integers(0, 10**6),
    st.integers(1, 12),
    st.sampled_from(ALL_MARKERS + ("<", "|", ">", "{", "[", "'", '"', "\\")),
)


def mutate(text: str, mutations) -> str:
    for op, pos, size, piece in mutations:
        p = pos % (len(text) + 1)
        if op == "cut":
            text = text[:p]
        elif op == "insert":
            text = text[:p] + piece[:1] + text[p:]
        elif op == "delete":
            text = text[:p] + text[p + size :]
        elif op == "marker":
            text = text[:p] + piece + text[p:]
        else:  # duplicate a marker the text has
            present = [m for m in ALL_MARKERS if m in text]
            if present:
                m = present[pos % len(present)]
                j = text.find(m)
                text = text[:j] + m + text[j:]
    return text


def check_any_text(family: str, text: str, truncated: bool) -> None:
    """Never raises, streams like parse, loses and invents nothing (both reasoning states)."""
    fmt, spec = FORMATS[family], spec_of(family)
    rnd = random.Random(len(text))
    for in_reasoning in (False, True):
        reply = fmt.parse(text, spec.tools(), truncated=truncated, in_reasoning=in_reasoning)
        for c in reply.tool_calls:
            assert c.raw and c.raw in text and isinstance(c.arguments, dict)
        for c in reply.incomplete_calls:
            assert c.raw and c.raw in text
        check_accounted(fmt, spec, text, truncated=truncated, in_reasoning=in_reasoning)
        streamed = _stream(fmt, text, rnd, truncated=truncated, in_reasoning=in_reasoning, tools=spec.tools())
        assert streamed == reply, text


# 40 examples per family; fewer under a profile that asks for fewer (`make test-fast`)
FUZZ = settings(
    max_examples=min(40, settings.default.max_examples),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@pytest.mark.parametrize("family", FAMILIES)
@FUZZ
@given(data=st.data())
def test_valid_replies_parse_exactly(family, data):
    fmt, spec = FORMATS[family], spec_of(family)
    text, content, reasoning, calls = data.draw(valid_replies(family))
    reply = fmt.parse(text, spec.tools())
    assert (reply.content, reply.reasoning) == (content, reasoning), (text, reply)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == calls, (text, reply)
    assert not reply.incomplete_calls, (text, reply)
    assert not any(m in reply.content for m in spec.all_markers(fmt)), (text, reply)
    check_accounted(fmt, spec, text)
    rnd = random.Random(len(text))
    for _ in range(2):
        assert _stream(fmt, text, rnd, tools=spec.tools()) == reply, text


@pytest.mark.parametrize("family", FAMILIES)
@FUZZ
@given(data=st.data())
def test_mutated_replies_are_safe(family, data):
    text = data.draw(valid_replies(family))[0]
    text = mutate(text, data.draw(st.lists(MUTATION, min_size=1, max_size=3)))
    check_any_text(family, text, data.draw(st.booleans()))


@pytest.mark.parametrize("family", FAMILIES)
@FUZZ
@given(data=st.data())
def test_marker_soup_is_safe(family, data):
    fmt, spec = FORMATS[family], spec_of(family)
    pieces = st.one_of(
        st.text(alphabet=RICH_CHARS + "ab", max_size=8), st.sampled_from(spec.all_markers(fmt) + ALL_MARKERS)
    )
    text = "".join(data.draw(st.lists(pieces, max_size=12)))
    check_any_text(family, text, data.draw(st.booleans()))


def test_every_family_is_fuzzed_with_a_writer():
    for family, fmt in FORMATS.items():
        spec = spec_of(family)
        assert spec.write is not None or spec.reply is not None or fmt.example_call("get_time", {}), family
