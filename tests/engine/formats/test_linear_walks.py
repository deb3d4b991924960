"""Reading a reply stays linear in its length however many parameters, calls or literal closing
tags it holds: counted work, not time.

Two ways a reader turned quadratic, each counted here. A walk that looks for the earliest of
several markers from a moving position with plain ``str.find`` searches past a rare marker to the
end of the text on every step (``MarkerFinder.scanned`` counts the characters searched). A walk
that hands the rest of the text to a helper as a copy (``buf[i:]``) copies the whole rest for every
block or value (a ``str`` that counts what is sliced from it counts the copies).

The bounds are a small multiple of the text (each finder searches for three markers, and a
reply may be read more than once: the region, then the call); the quadratic walks searched or
copied about ``N / 2`` times the text.
"""

from __future__ import annotations

import pytest

import app.engine.formats.qwen_xml as qwen_xml
from app.engine.formats import FORMATS
from app.engine.formats.sections import MarkerFinder

N = 3_000
ANY = [{"type": "function", "function": {"name": "w", "parameters": {"type": "object", "properties": {}}}}]
ONE = [
    {
        "type": "function",
        "function": {"name": "w", "parameters": {"type": "object", "properties": {"x": {"type": "string"}}}},
    }
]


class Sliced(str):
    """A ``str`` that counts the characters copied out of it by slicing."""

    copied = 0

    def __getitem__(self, key):  # type: ignore[override]
        got = str.__getitem__(self, key)
        if isinstance(key, slice):
            Sliced.copied += len(got)
        return got


@pytest.fixture
def finders(monkeypatch) -> list[MarkerFinder]:
    """Every marker finder qwen-xml's reader makes, to read what each searched."""
    made: list[MarkerFinder] = []
    real = qwen_xml._marks

    def spy(text: str) -> MarkerFinder:
        made.append(real(text))
        return made[-1]

    monkeypatch.setattr(qwen_xml, "_marks", spy)
    return made


def _one_call(text: str, tools) -> dict:
    reply = FORMATS["qwen-xml"].parse(text, tools)
    assert len(reply.tool_calls) == 1 and reply.content == ""
    return reply.tool_calls[0].arguments


def test_a_value_full_of_its_closing_tag_is_searched_once(finders):
    text = (
        "<tool_call>\n<function=w>\n<parameter=x>\n"
        + "</parameter>a" * N
        + "\n</parameter>\n</function>\n</tool_call>"
    )
    assert _one_call(text, ONE) == {"x": "</parameter>a" * N}
    assert finders and sum(f.scanned for f in finders) <= 12 * len(text)


def test_a_value_full_of_undeclared_parameter_tags_is_searched_once(finders):
    value = "<parameter=nope>b" * N
    text = f"<tool_call>\n<function=w>\n<parameter=x>\n{value}\n</parameter>\n</function>\n</tool_call>"
    assert _one_call(text, ONE) == {"x": value}
    assert sum(f.scanned for f in finders) <= 12 * len(text)


def test_a_call_of_many_parameters_is_searched_once(finders):
    body = "".join(f"<parameter=p{i}>\nv\n</parameter>\n" for i in range(N))
    text = f"<tool_call>\n<function=w>\n{body}</function>\n</tool_call>"
    assert len(_one_call(text, ANY)) == N
    assert sum(f.scanned for f in finders) <= 12 * len(text)


@pytest.mark.parametrize("closed", [False, True], ids=["bare", "closed-by-stray"])
def test_a_run_of_many_bare_blocks_is_searched_once(finders, closed):
    run = "".join(f"<function=w>\n<parameter=p>\nv{i}\n</parameter>\n</function>\n" for i in range(N))
    text = run + ("</tool_call>" if closed else "")
    reply = FORMATS["qwen-xml"].parse(text, ANY)
    assert [c.arguments for c in reply.tool_calls] == [{"p": f"v{i}"} for i in range(N)]
    assert sum(f.scanned for f in finders) <= 12 * len(text)


def test_a_run_of_many_bare_blocks_is_scanned_without_copying_its_rest():
    run = "".join(f"<function=w>\n<parameter=p>\nv{i}\n</parameter>\n</function>\n" for i in range(N))
    scanner = qwen_xml._BareRun()
    Sliced.copied = 0
    end, ended = scanner.scan(Sliced(run[len(qwen_xml.F_OPEN) :] + "</tool_call>"), True)
    assert ended and end == len(run) - len(qwen_xml.F_OPEN) + len("</tool_call>")
    assert Sliced.copied <= 2 * len(run)  # a copy of the rest per block: about N / 2 times the run


def test_a_region_of_many_values_is_scanned_without_copying_its_rest():
    body = "".join(f"<parameter=p{i}>\nv\n</parameter>\n" for i in range(N)) + "</function>"
    scanner = qwen_xml._block_scanner()
    Sliced.copied = 0
    end, ended = scanner.scan(Sliced(body), True)
    assert ended and end == len(body)
    assert Sliced.copied <= 2 * len(body)


def test_the_finder_answers_as_find_does_from_any_position():
    text = "a<x>b</y>c<x>d</z></y>" * 3
    marks = MarkerFinder(text, ("<x>", "</y>", "</z>", "<none>"))
    for j in [*range(len(text) + 1), 7, 3, 0, len(text), 11]:  # forward, then back
        want = min(
            ((text.find(m, j), m) for m in ("<x>", "</y>", "</z>", "<none>") if text.find(m, j) != -1),
            default=None,
        )
        assert marks.first(j) == want, j


SOURCES = [
    '[get_weather(city="Paris"), search(query="x", limit=3)]',
    '[f(a="é東京"), g(b=[1, 2,\n  3]),\r\n h(c={"k": "v\\n"})]',
    'f(\n    a=1,\r    b="two",\n)',
    "[f(x='''multi\nline'''), g()]",
]


@pytest.mark.parametrize("src", SOURCES)
def test_source_segments_are_what_ast_says(src):
    import ast

    from app.engine.formats.pycalls import SourceSegments

    segments = SourceSegments(src)
    nodes = [n for n in ast.walk(ast.parse(src, mode="eval")) if hasattr(n, "end_lineno")]
    assert nodes
    for node in nodes:
        assert segments.segment(node) == ast.get_source_segment(src, node)


def test_a_pythonic_list_of_many_calls_takes_each_call_once():
    from app.engine.formats import pycalls

    made: list[pycalls.SourceSegments] = []
    real = pycalls.SourceSegments

    class Spy(real):  # type: ignore[misc, valid-type]
        def __init__(self, source: str) -> None:
            super().__init__(source)
            made.append(self)

    text = "[" + ", ".join(f'w(p="v{i}")' for i in range(N)) + "]"
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pycalls, "SourceSegments", Spy)
        reply = FORMATS["pythonic"].parse(text, ANY)
    assert [c.arguments for c in reply.tool_calls] == [{"p": f"v{i}"} for i in range(N)]
    assert [c.raw for c in reply.tool_calls[:2]] == ['w(p="v0")', 'w(p="v1")']
    assert made and sum(s.touched for s in made) <= 2 * len(text)


@pytest.mark.parametrize("streamed", [False, True], ids=["parsed", "streamed"])
def test_a_held_reply_is_read_again_in_pieces(monkeypatch, streamed):
    """A reply that opens with no reasoning tag is held in case a closing tag follows, and read
    again at its end. Read again in one feed, the stream held the whole reply in its buffer and
    copied the rest of it at every text or call it took out (a reply of many calls: quadratic);
    fed in pieces, as a stream is, the buffer never holds much more than a piece."""
    from app.engine.formats import base

    held: list[int] = []
    real = base.Stream._consume

    def spy(self, n: int) -> str:
        held.append(len(self._buf))
        return real(self, n)

    monkeypatch.setattr(base.Stream, "_consume", spy)
    text = '<tool_call>\n{"name": "w", "arguments": {}}\n</tool_call>\nok ' * N
    if streamed:
        s = FORMATS["hermes"].stream(ANY)
        events = [e for i in range(0, len(text), 7) for e in s.feed(text[i : i + 7])] + s.finish()
        reply = base.fold_events(events)
    else:
        reply = FORMATS["hermes"].parse(text, ANY)
    assert len(reply.tool_calls) == N and reply.content == "\nok " * N
    assert held and max(held) <= 2 * base._PARSE_PIECE  # in one feed: the whole reply, 231 KB
