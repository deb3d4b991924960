"""A closing reasoning tag inside a call region, before the reasoning split is decided.

The *window* (``orphan_close=True``, no opening tag) and *tentative* (a call opener inside an
unclosed reasoning block) states hold text until a closing tag decides it is reasoning. There a
call region's extent is the family's scanner's decision: a closing tag inside a region that
parses as a call is the call's text. See the decision table in ``app/engine/formats/base.py``.
The per-family cases are in ``cases/*.py`` (``close_tag_in_argument_cases``); these tests cover
the cost and a few shapes those cases do not.
"""

from __future__ import annotations

import pytest

from app.engine.formats import FORMATS, Reply, fold_events
from app.engine.formats.base import OwnStreamFormat
from tests.engine.formats.harness import TOOLS, splits

Q = '<|"|>'
# One call per family whose argument holds many closing tags (and opening ones).
HUGE = {
    "hermes": lambda n: (
        '<tool_call>{"name": "set_port", "arguments": {"blob": "'
        + 'a </think> <think> \\" ' * n
        + '"}}</tool_call>'
    ),
    "qwen-xml": lambda n: (
        "<tool_call>\n<function=set_port>\n<parameter=blob>\n"
        + "a </think> <think> " * n
        + "\n</parameter>\n</function>\n</tool_call>"
    ),
    "glm": lambda n: (
        "<tool_call>set_port<arg_key>blob</arg_key><arg_value>"
        + "a </think> <think> " * n
        + "</arg_value></tool_call>"
    ),
    "mistral": lambda n: '[TOOL_CALLS]set_port[ARGS]{"blob": "' + 'a [/THINK] [THINK] \\" ' * n + '"}',
    "gemma4": lambda n: (
        f"<|tool_call>call:set_port{{blob:{Q}" + "a <channel|> <|channel>thought " * n + f"{Q}}}<tool_call|>"
    ),
    "deepseek-v3.1": lambda n: (
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>set_port<｜tool▁sep｜>"
        '{"blob": "' + 'a </think> <think> \\" ' * n + '"}<｜tool▁call▁end｜><｜tool▁calls▁end｜>'
    ),
}


def _feed_chars(fmt, text, **kw):
    truncated = kw.pop("truncated", False)
    s = fmt.stream(TOOLS, **kw)
    events = []
    for c in text:
        events += s.feed(c)
    events += s.finish(truncated=truncated)
    return s, fold_events(events)


@pytest.mark.parametrize("family", sorted(HUGE))
def test_huge_argument_full_of_closing_tags_is_one_call_in_linear_cost(family):
    fmt = FORMATS[family]
    call = HUGE[family](2_000)
    close = fmt.reasoning[1]
    for prefix, kw, reasoning in (
        ("", {}, ""),  # window
        ("", {"orphan_close": False}, ""),
        ("plan\n", {"in_reasoning": True}, "plan\n"),  # tentative
    ):
        text = prefix + call
        s, got = _feed_chars(fmt, text, **kw)
        assert s.ops <= 40 * len(text), f"{family} {kw}: {s.ops} characters examined for {len(text)}"
        assert got == fmt.parse(text, TOOLS, **kw)
        assert got.reasoning == reasoning and got.content == ""
        assert [c.name for c in got.tool_calls] == ["set_port"]
        assert got.tool_calls[0].arguments["blob"].count(close) == 2_000
    # Closed after the call: all of it was reasoning (still linear, same as parse).
    text = "plan " + call + " no" + close + "Hi"
    for kw in ({}, {"in_reasoning": True}):
        s, got = _feed_chars(fmt, text, **kw)
        assert s.ops <= 40 * len(text)
        assert got == fmt.parse(text, TOOLS, **kw) == Reply(content="Hi", reasoning="plan " + call + " no")
    # Cut inside the argument: no call; the region is plain text and its first tag closes
    # reasoning; the closing tags after it are markup in the answer (dropped).
    cut = text[: len(text) // 2]
    for kw in ({}, {"in_reasoning": True}):
        s, got = _feed_chars(fmt, cut, truncated=True, **kw)
        assert s.ops <= 40 * len(cut)
        assert got == fmt.parse(cut, TOOLS, truncated=True, **kw)
        assert not got.tool_calls and close not in got.reasoning
        rest = cut[len(got.reasoning) + len(close) :]
        assert close in rest and cut.startswith(got.reasoning + close)
        # a tag spelt as an XML closing tag is dropped; another family's marker stays text
        assert got.content == (rest.replace(close, "") if close.startswith("</") else rest)


def test_region_that_is_no_call_is_text_and_its_closing_tag_ends_reasoning():
    fmt = FORMATS["hermes"]
    # The opener starts a region up to </tool_call>; it is not JSON, so no call: the </think>
    # inside it closes the reasoning and what follows is read after reasoning (a real call).
    call = '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>'
    text = "use <tool_call> like </think>Sure." + call
    for kw in ({}, {"in_reasoning": True}):
        got = fmt.parse(text, TOOLS, **kw)
        assert (got.reasoning, got.content) == ("use <tool_call> like ", "Sure.")
        assert [c.name for c in got.tool_calls] == ["get_time"]
        for parts in splits(text):
            s = fmt.stream(TOOLS, **kw)
            events = [e for p in parts for e in s.feed(p)] + s.finish()
            assert fold_events(events) == got, parts


def test_no_call_region_with_a_large_tail_is_read_once_more_only():
    fmt = FORMATS["hermes"]
    # A region that is no call and ends far away (its </tool_call>): the text after its </think>
    # is read again once, after reasoning; the cost stays linear.
    text = "x <tool_call> y </think>" + "words <b> " * 5_000 + "</tool_call> end"
    s, got = _feed_chars(fmt, text)
    assert s.ops <= 40 * len(text)
    assert got == fmt.parse(text, TOOLS)
    assert got.reasoning == "x <tool_call> y " and got.content.startswith("words <b> ")


def test_many_calls_in_the_window_then_no_close_keep_every_call():
    fmt = FORMATS["hermes"]
    one = '<tool_call>{"name": "set_port", "arguments": {"blob": "</think>"}}</tool_call>'
    text = "t " + (one + " ") * 500
    s, got = _feed_chars(fmt, text)
    assert s.ops <= 40 * len(text)
    assert len(got.tool_calls) == 500 and got.reasoning == ""
    assert got == fmt.parse(text, TOOLS)


# A closing reasoning tag written again in the answer, after the reply's block closed (ds4 #678:
# DeepSeek V4 drafts a second round in the answer and closes it so; Qwen3.6): markup, dropped
# where the family spells it as an XML closing tag; another family's marker stays text.
STRAY_FAMILIES = sorted(n for n, f in FORMATS.items() if f.reasoning and f.reasoning[1].startswith("</"))


@pytest.mark.parametrize("family", STRAY_FAMILIES)
def test_closing_tag_again_after_the_block_closed_is_dropped_at_every_split(family):
    fmt = FORMATS[family]
    open_tag, close = fmt.reasoning
    for text, kw, reasoning in (
        (f"{open_tag}plan{close}Draft.{close}\n\nAnswer.", {}, "plan"),
        (f"plan{close}Draft.{close}{close}Answer.", {"in_reasoning": True}, "plan"),
        (f"plan{close}Draft.\n{close}\nAnswer.", {"orphan_close": True}, "plan"),
    ):
        expected = fmt.parse(text, TOOLS, **kw)
        assert expected.reasoning == reasoning, family
        assert expected.content == text.split(close, 1)[1].replace(close, "")
        assert "Draft." in expected.content and "Answer." in expected.content
        for parts in splits(text):
            s = fmt.stream(TOOLS, **kw)
            events = [ev for part in parts for ev in s.feed(part)] + s.finish()
            assert fold_events(events) == expected, (family, parts)


@pytest.mark.parametrize("family", STRAY_FAMILIES)
def test_closing_tag_with_no_block_closed_stays_text(family):
    fmt = FORMATS[family]
    close = fmt.reasoning[1]
    text = f"Use {close} to end a block."
    assert fmt.parse(text, TOOLS, orphan_close=False) == Reply(content=text)


@pytest.mark.parametrize("family", ["mistral", "gemma4", "apriel"])
def test_a_closing_marker_that_is_no_xml_tag_stays_text_after_the_block(family):
    fmt = FORMATS[family]
    open_tag, close = fmt.reasoning
    reply = fmt.parse(f"{open_tag}plan{close}Draft.{close}Answer.", TOOLS)
    assert reply.reasoning == "plan" and close in reply.content


@pytest.mark.parametrize("family", STRAY_FAMILIES)
def test_closing_tag_after_a_block_the_prompt_closed_is_dropped_at_every_split(family):
    fmt = FORMATS[family]
    close = fmt.reasoning[1]
    assert fmt.closes_in_prompt("<|im_start|>assistant\n" + fmt.reasoning[0] + "\n\n" + close + "\n\n")
    text = f"First.{close}Final."
    expected = fmt.parse(text, TOOLS, orphan_close=False, after_reasoning=True)
    assert expected == Reply(content="First.Final."), family
    for parts in splits(text):
        s = fmt.stream(TOOLS, orphan_close=False, after_reasoning=True)
        events = [ev for part in parts for ev in s.feed(part)] + s.finish()
        assert fold_events(events) == expected, (family, parts)


# An opening reasoning tag right after the reply's calls, with nothing after it to the reply's end
# (Qwen3.8 opens a block after its calls and stops: llama.cpp #28914): markup, dropped; the calls
# stand. With words after it the tag stays text, as anywhere in an answer.
OPEN_AFTER_CALL_FAMILIES = sorted(
    n for n, f in FORMATS.items() if f.reasoning and not isinstance(f, OwnStreamFormat)
)


@pytest.mark.parametrize("family", OPEN_AFTER_CALL_FAMILIES)
def test_an_opening_tag_after_the_calls_with_nothing_after_it_is_dropped_at_every_split(family):
    fmt = FORMATS[family]
    open_tag = fmt.reasoning[0]
    call = fmt.example_call("get_weather", {"city": "Paris"})
    for tail, truncated in (("\n" + open_tag, False), ("\n\n" + open_tag + "\n", False), (open_tag, True)):
        text = call + tail
        expected = fmt.parse(text, TOOLS, truncated=truncated)
        assert [(c.name, c.arguments) for c in expected.tool_calls] == [("get_weather", {"city": "Paris"})]
        assert expected.content == tail[: tail.index(open_tag)] and not expected.reasoning, family
        for parts in splits(text):
            s = fmt.stream(TOOLS)
            events = [ev for part in parts for ev in s.feed(part)] + s.finish(truncated)
            assert fold_events(events) == expected, (family, parts)
    for tail in (f"\n{open_tag}Then more.", f"\n{open_tag}\n\nThen more."):
        reply = fmt.parse(call + tail, TOOLS)
        assert len(reply.tool_calls) == 1 and reply.content == tail, family
    # before any call the tag is what it was: text after an answer's words
    assert fmt.parse(f"Done.\n{open_tag}", TOOLS, orphan_close=False).content == f"Done.\n{open_tag}"
