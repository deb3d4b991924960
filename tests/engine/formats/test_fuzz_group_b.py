"""Property tests (hypothesis) for the DeepSeek and Kimi families.

* Valid replies (random calls, values with quotes, backslashes, newlines, unicode and markup
  characters, text around, optional reasoning) parse to exactly the calls written; no family
  marker leaks into content; argument strings come back exactly as written.
* Argument values hold every family's markers (but those a raw value's wire cannot carry).
* Mutated replies (cut, a character or a marker inserted, a range deleted, a marker duplicated)
  and random marker soup never raise, stream to the same result as parse for random splits and
  lose and invent nothing (``check_accounted`` of test_fuzz_group_a: every character of the input
  is content, reasoning, a call's raw or structure the family consumes by design).
"""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.engine.formats import FORMATS
from tests.engine.formats.harness import TOOLS, fold_split
from tests.engine.formats.test_fuzz_group_a import check_accounted

FAMILIES = ["deepseek-v3", "deepseek-v3.1", "deepseek-dsml", "kimi-k2", "kimi-k3"]
SETTINGS = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])

D = "｜DSML｜"
MARKERS = {
    "deepseek-v3": ["<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>", "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>",
                    "<｜tool▁sep｜>"],
    "deepseek-dsml": [f"<{D}function_calls>", f"</{D}function_calls>", f"<{D}tool_calls>", f"<{D}invoke",
                      f"</{D}invoke>", f"<{D}parameter", f"</{D}parameter>"],
    "kimi-k2": ["<|tool_calls_section_begin|>", "<|tool_calls_section_end|>", "<|tool_call_begin|>",
                "<|tool_call_end|>", "<|tool_call_argument_begin|>"],
    "kimi-k3": ["<|open|>call", "<|open|>argument", "<|open|>", "<|close|>", "<|sep|>"],
}
MARKERS["deepseek-v3.1"] = MARKERS["deepseek-v3"]
THINK = ["<think>", "</think>"]
ALL_MARKERS = sorted({m for ms in MARKERS.values() for m in ms} | set(THINK))

# Argument text: everything a model writes inside a value, markup characters included.
VALUE_CHARS = st.sampled_from(list("abc xyz09\"'\\\n\t{}[]<>/|=:,.") + ["ü", "東", "🌧", "｜", "▁"])
value_text = st.text(VALUE_CHARS, max_size=12)
# Text around calls: no "<", so it never forms a marker by chance.
plain_text = st.text(st.sampled_from(list("Hello, world! 42 ü\n{}[]\"")), max_size=15)


# Markers a value cannot hold in a family's wire: a raw string value ends at its closing tag.
FORBIDDEN_IN_VALUES = {"deepseek-dsml": [f"</{D}parameter>"], "kimi-k3": ["<|close|>"]}


def marked_text(family: str):
    """Values that may hold any family's markers (and the reasoning tags, also in a reply without
    a reasoning block, where a closing tag may end reasoning never opened), except those the
    wire cannot carry."""
    forbidden = FORBIDDEN_IN_VALUES.get(family, [])
    allowed = [m for m in ALL_MARKERS if not any(f in m or m in f for f in forbidden)]
    piece = st.one_of(st.text(VALUE_CHARS, max_size=6), st.sampled_from(allowed))
    return st.lists(piece, max_size=3).map("".join).filter(lambda v: not any(f in v for f in forbidden))


@st.composite
def calls_strategy(draw, values=value_text):
    value_text = values
    out = []
    for _ in range(draw(st.integers(1, 3))):
        kind = draw(st.sampled_from(["set_port", "search", "get_time"]))
        if kind == "set_port":
            keys = draw(st.lists(st.sampled_from(["port", "zip", "flag", "blob"]), unique=True, max_size=4))
            args = {k: draw(value_text) for k in keys}
        elif kind == "search":
            args = {"query": draw(value_text)}
            if draw(st.booleans()):
                args["limit"] = draw(st.integers(-1000, 10**6))
            if draw(st.booleans()):
                args["tags"] = draw(st.lists(value_text, max_size=3))
            if draw(st.booleans()):
                args["filters"] = {"year": draw(st.integers(1900, 2100))}
        else:
            args = {}
        out.append((kind, args))
    return out


def _j(v) -> str:
    return json.dumps(v, ensure_ascii=False)


def render(family: str, calls) -> tuple[str, str]:
    """(call text, content that text adds between calls)."""
    if family == "deepseek-v3":
        body = "\n".join(f"<｜tool▁call▁begin｜>function<｜tool▁sep｜>{n}\n```json\n{_j(a)}\n```<｜tool▁call▁end｜>"
                         for n, a in calls)
        return "<｜tool▁calls▁begin｜>" + body + "<｜tool▁calls▁end｜>", ""
    if family == "deepseek-v3.1":
        body = "".join(f"<｜tool▁call▁begin｜>{n}<｜tool▁sep｜>{_j(a)}<｜tool▁call▁end｜>" for n, a in calls)
        return "<｜tool▁calls▁begin｜>" + body + "<｜tool▁calls▁end｜>", ""
    if family == "kimi-k2":
        body = "".join(f"<|tool_call_begin|>functions.{n}:{i}<|tool_call_argument_begin|>{_j(a)}<|tool_call_end|>"
                       for i, (n, a) in enumerate(calls))
        return "<|tool_calls_section_begin|>" + body + "<|tool_calls_section_end|>", ""
    if family == "deepseek-dsml":
        parts = [f"<{D}tool_calls>\n"]
        for n, a in calls:
            parts.append(f'<{D}invoke name="{n}">\n')
            for k, v in a.items():
                flag, text = ("true", v) if isinstance(v, str) else ("false", _j(v))
                parts.append(f'<{D}parameter name="{k}" string="{flag}">{text}</{D}parameter>\n')
            parts.append(f"</{D}invoke>\n")
        parts.append(f"</{D}tool_calls>")
        return "".join(parts), ""
    types = {str: "string", int: "integer", list: "array", dict: "object"}
    frames = []
    for n, a in calls:
        args = "".join(f'<|open|>argument key="{k}" type="{types[type(v)]}"<|sep|>{v if isinstance(v, str) else _j(v)}'
                       "<|close|>" for k, v in a.items())
        frames.append(f'<|open|>call tool="{n}"<|sep|>{args}<|close|>')
    return "\n".join(frames), "\n" * (len(calls) - 1)


@st.composite
def valid_reply(draw, family):
    reasoning = draw(st.one_of(st.none(), plain_text))
    calls = draw(calls_strategy(marked_text(family)))
    before, after = draw(plain_text), draw(plain_text)
    body, between = render(family, calls)
    text = ("" if reasoning is None else f"<think>{reasoning}</think>") + before + body + after
    return text, calls, before + between + after, reasoning or ""


def _cuts(draw, text):
    points = sorted(set(draw(st.lists(st.integers(0, len(text)), max_size=8))))
    bounds = [0, *points, len(text)]
    return [text[a:b] for a, b in zip(bounds, bounds[1:], strict=False)]


def _check_stream(fmt, text, parts, truncated=False):
    want = fmt.parse(text, TOOLS, truncated=truncated)
    got, _ = fold_split(fmt, parts, TOOLS, truncated=truncated)
    assert got == want, (text, parts)
    for c in want.tool_calls:
        assert c.raw in text
    # Nothing lost, nothing invented: every character is content, reasoning, a call's raw or
    # structure the family consumes; each call reads back from its own raw.
    check_accounted(fmt.name, text, truncated=truncated)
    return want


def _family_test(family):
    fmt = FORMATS[family]

    @SETTINGS
    @given(data=st.data())
    def valid(data):
        text, calls, content, reasoning = data.draw(valid_reply(family))
        reply = _check_stream(fmt, text, _cuts(data.draw, text))
        # Exactly the arguments written: a marker is in an argument only where it was written.
        assert [(c.name, c.arguments) for c in reply.tool_calls] == calls, text
        assert reply.content == content and reply.reasoning == reasoning
        for m in MARKERS[family] + THINK:
            assert m not in reply.content, (m, text)

    @SETTINGS
    @given(data=st.data())
    def mutated(data):
        text, _calls, _c, _r = data.draw(valid_reply(family))
        kind = data.draw(st.sampled_from(["cut", "insert", "delete", "dup", "marker"]))
        i = data.draw(st.integers(0, len(text)))
        if kind == "cut":
            text = text[:i]
        elif kind == "insert":
            text = text[:i] + data.draw(VALUE_CHARS) + text[i:]
        elif kind == "delete":
            text = text[:i] + text[i + data.draw(st.integers(1, 12)):]
        elif kind == "marker":
            text = text[:i] + data.draw(st.sampled_from(MARKERS[family] + THINK)) + text[i:]
        else:
            m = data.draw(st.sampled_from(MARKERS[family]))
            j = text.find(m)
            text = text if j == -1 else text[:j] + m + text[j:]
        truncated = data.draw(st.booleans())
        _check_stream(fmt, text, _cuts(data.draw, text), truncated=truncated)

    @SETTINGS
    @given(data=st.data())
    def soup(data):
        pieces = st.one_of(st.sampled_from(MARKERS[family] + THINK + ['{"a": 1}', "function", "```json\n",
                                                                      ' name="x"', ">", '"', "\n"]), value_text)
        text = "".join(data.draw(st.lists(pieces, max_size=14)))
        _check_stream(fmt, text, _cuts(data.draw, text), truncated=data.draw(st.booleans()))

    return valid, mutated, soup


for _family in FAMILIES:
    _v, _m, _s = _family_test(_family)
    _key = _family.replace("-", "_").replace(".", "")
    globals()[f"test_valid_replies_parse_exactly_{_key}"] = _v
    globals()[f"test_mutated_replies_stream_like_parse_{_key}"] = _m
    globals()[f"test_marker_soup_never_raises_{_key}"] = _s
