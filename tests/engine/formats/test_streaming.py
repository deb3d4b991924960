"""Streaming specifics: holdback timing, linear cost, robustness; schema typing; the registry."""

from __future__ import annotations

import random

import pytest

from app.engine.formats import FORMATS, fold_events, tool_format_choices
from app.engine.formats.events import TextDelta, ToolCallDone
from app.json_schema import type_arguments, type_value
from tests.engine.formats.harness import TOOLS


def _text(events) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def test_partial_marker_is_held_back_then_released():
    s = FORMATS["qwen-xml"].stream(TOOLS, in_reasoning=False)
    ev = s.feed("<think></think>Hello <tool_")
    assert _text(ev) == "Hello "
    ev = s.feed("box> done")
    assert _text(ev) == "<tool_box> done"
    assert fold_events(s.finish()).content == ""


def test_mistral_marker_held_and_call_streams_when_complete():
    s = FORMATS["mistral"].stream(TOOLS)
    ev = s.feed("[THINK]x[/THINK]Sure [TOOL_CA")
    assert _text(ev) == "Sure "
    ev = s.feed("LLS]get_time[ARGS]{}")
    assert [e.call.name for e in ev if isinstance(e, ToolCallDone)] == ["get_time"]
    assert "[TOOL" not in _text(ev)


def test_llama_reply_streams_as_text_unless_it_opens_as_a_call():
    s = FORMATS["llama3"].stream(TOOLS)
    assert _text(s.feed("The answer")) == "The answer"
    s = FORMATS["llama3"].stream(TOOLS)
    assert _text(s.feed('{"name": "get_time", "parameters": {}}')) == ""
    assert [e.call.name for e in s.finish() if isinstance(e, ToolCallDone)] == ["get_time"]


def test_reasoning_streams_before_the_reply_ends():
    s = FORMATS["hermes"].stream(TOOLS, in_reasoning=True)
    ev = s.feed("step one, step two")
    assert "".join(e.text for e in ev if not isinstance(e, TextDelta) and hasattr(e, "text")).startswith(
        "step one"
    )


@pytest.mark.slow
@pytest.mark.parametrize("family", ["hermes", "qwen-xml", "mistral", "llama3"])
def test_cost_is_linear_one_character_at_a_time(family):
    """200 KB fed one character at a time: characters examined stay within a constant factor."""
    chunk = {
        "hermes": '<tool_call>{"name": "set_port", "arguments": {"blob": "'
        + "x" * 1000
        + '"}}</tool_call> text < ',
        "qwen-xml": "<tool_call>\n<function=set_port>\n<parameter=blob>\n"
        + "y" * 1000
        + "\n</parameter>\n</function>\n</tool_call> text [",
        "mistral": '[TOOL_CALLS]set_port[ARGS]{"blob": "' + "z" * 1000 + '"} and [T',
        "llama3": "plain words " * 100,
    }[family]
    text = (chunk * (200_000 // len(chunk) + 1))[:200_000]
    for in_reasoning in (False, True):
        s = FORMATS[family].stream(TOOLS, in_reasoning=in_reasoning)
        events = []
        for c in text:
            events += s.feed(c)
        events += s.finish()
        assert s.ops <= 40 * len(text), f"{family}: {s.ops} characters examined for {len(text)}"
        assert fold_events(events) == FORMATS[family].parse(text, TOOLS, in_reasoning=in_reasoning)


def test_one_huge_call_one_character_at_a_time_is_linear():
    text = '<tool_call>{"name": "set_port", "arguments": {"blob": "' + 'a\\"b' * 50_000 + '"}}</tool_call>'
    s = FORMATS["hermes"].stream(TOOLS)
    events = []
    for c in text:
        events += s.feed(c)
    events += s.finish()
    assert s.ops <= 40 * len(text)
    assert len(fold_events(events).tool_calls) == 1


ALPHABET = [
    "<tool_call>",
    "</tool_call>",
    "<think>",
    "</think>",
    "[TOOL_CALLS]",
    "[ARGS]",
    "[CALL_ID]",
    "[THINK]",
    "[/THINK]",
    "<|python_tag|>",
    "<function=",
    "<parameter=",
    "</parameter>",
    "</function>",
    "{",
    "}",
    "[",
    "]",
    '"',
    "\\",
    ",",
    ":",
    "name",
    "arguments",
    "parameters",
    "get_time",
    " ",
    "\n",
    "x",
    "1",
    "true",
    "```",
]


@pytest.mark.parametrize("family", ["hermes", "qwen-xml", "mistral", "llama3"])
def test_random_garbage_never_raises_and_streams_like_parse(family):
    fmt = FORMATS[family]
    rnd = random.Random(family)
    for _ in range(150):
        text = "".join(rnd.choice(ALPHABET) for _ in range(rnd.randint(0, 40)))
        for truncated in (False, True):
            for in_reasoning in (False, True):
                want = fmt.parse(text, TOOLS, in_reasoning=in_reasoning, truncated=truncated)
                s = fmt.stream(TOOLS, in_reasoning=in_reasoning)
                events = []
                i = 0
                while i < len(text):
                    k = rnd.randint(1, 6)
                    events += s.feed(text[i : i + k])
                    i += k
                events += s.finish(truncated=truncated)
                assert fold_events(events) == want, text
                used = len(want.content) + len(want.reasoning) + sum(len(c.raw) for c in want.tool_calls)
                assert used <= len(text)


def test_opens_in_reasoning():
    assert FORMATS["qwen-xml"].opens_in_reasoning("<|im_start|>assistant\n<think>\n")
    assert not FORMATS["qwen-xml"].opens_in_reasoning("<|im_start|>assistant\n<think>\n\n</think>\n\n")
    assert not FORMATS["hermes"].opens_in_reasoning("<|im_start|>assistant\n")
    assert FORMATS["mistral"].opens_in_reasoning("[INST]hi[/INST][THINK]")
    assert not FORMATS["llama3"].opens_in_reasoning("<think>")


def test_registry_entries_and_setting_choices():
    for name in ("qwen-xml", "hermes", "llama3", "mistral"):
        fmt = FORMATS[name]
        assert fmt.name == name and fmt.label and fmt.detail and fmt.openers
    assert FORMATS["llama3"].start_only and "{" not in FORMATS["llama3"].anywhere
    # Hermes' tag opens a call anywhere; only its strays (a bare or fenced call) are start-only
    assert "<tool_call>" in FORMATS["hermes"].anywhere and "{" not in FORMATS["hermes"].anywhere
    assert FORMATS["ernie45"].openers[0] == "<tool_call>" and not FORMATS["ernie45"].start_only
    # what counts as a call begun in an answer (a thinking budget re-holds only a fresh answer)
    hermes, llama3 = FORMATS["hermes"], FORMATS["llama3"]
    assert hermes.call_begun('Sure. <tool_call>\n{"na') and hermes.call_begun("<tools>[")
    assert hermes.call_begun('\n{"name": "get_weather"') and hermes.call_begun("```json\n{")
    assert not hermes.call_begun("Use {x} or ```code``` here") and not hermes.call_begun("")
    assert llama3.call_begun("Let me check.<|python_tag|>{") and not llama3.call_begun("Let me {check}")
    assert FORMATS["qwen-xml"].call_begun("x <function=f>") and not FORMATS["qwen-xml"].call_begun("x {")
    choices = tool_format_choices()
    assert choices[0] == ("auto", "Automatic (from the model's template)")
    assert choices[-1] == ("none", "No tools")
    assert [v for v, _ in choices[1:-1]] == list(FORMATS)


def test_feed_after_finish_is_an_error_and_finish_twice_is_empty():
    s = FORMATS["hermes"].stream(TOOLS)
    s.finish()
    assert s.finish() == []
    with pytest.raises(RuntimeError):
        s.feed("x")


# -- schema typing ----------------------------------------------------------------------------


def test_raw_wire_typing():
    schema = {
        "type": "object",
        "properties": {
            "port": {"type": "string"},
            "n": {"type": "integer"},
            "x": {"type": "number"},
            "b": {"type": "boolean"},
            "o": {"type": "object"},
            "a": {"type": "array"},
            "u": {"anyOf": [{"type": "null"}, {"type": "integer"}]},
            "t": {"type": ["boolean", "string"]},
            "z": {"type": "null"},
        },
    }
    got = type_arguments(
        {
            "port": "8080",
            "n": "10",
            "x": "2.5",
            "b": "True",
            "o": '{"a": 1}',
            "a": "[1, 2]",
            "u": "None",
            "t": "false",
            "z": "null",
            "extra": "7",
        },
        schema,
        raw=True,
    )
    assert got == {
        "port": "8080",
        "n": 10,
        "x": 2.5,
        "b": True,
        "o": {"a": 1},
        "a": [1, 2],
        "u": None,
        "t": False,
        "z": None,
        "extra": "7",
    }


def test_json_wire_typing_keeps_strings_for_string_properties():
    schema = {
        "type": "object",
        "properties": {
            "zip": {"type": "string"},
            "flag": {"type": "string"},
            "blob": {"type": "string"},
            "n": {"type": "integer"},
            "m": {"type": ["integer", "string"]},
            "deep": {"type": "object", "properties": {"k": {"type": "integer"}}},
        },
    }
    got = type_arguments(
        {"zip": "02139", "flag": "true", "blob": '{"a": 1}', "n": "10", "m": "5", "deep": {"k": "3"}}, schema
    )
    assert got == {"zip": "02139", "flag": "true", "blob": '{"a": 1}', "n": 10, "m": "5", "deep": {"k": 3}}


def test_untypable_values_are_kept_as_written():
    assert type_value("ten", {"type": "integer"}) == "ten"
    assert type_value("1.5", {"type": "integer"}) == "1.5"
    assert type_value("yes", {"type": "boolean"}, raw=True) == "yes"
    assert type_value(5, {"type": "string"}) == 5
    assert type_value("[1,", {"type": "array"}) == "[1,"


# -- linear cost: Harmony, Gemma 4, pythonic -------------------------------------------------------

_LINEAR_CHUNKS = {
    # Analysis, a call whose JSON string holds Harmony's own markers, a final message, and a
    # stray end token inside analysis (text of the same channel).
    "harmony": (
        "<|start|>assistant<|channel|>analysis<|message|>" + "think <|call|> more " * 20 + "<|end|>"
        "<|start|>assistant<|channel|>commentary to=functions.set_port <|constrain|>json<|message|>"
        '{"blob": "' + "a <|call|> <|end|> b " * 50 + '"}<|call|>'
        "<|start|>assistant<|channel|>final<|message|>" + "words " * 100 + "<|end|>"
    ),
    "gemma4": (
        "<|channel>thought"
        + "hmm " * 50
        + "<channel|>"
        + "text < " * 30
        + '<|tool_call>call:set_port{blob:<|"|>'
        + "q <tool_call|> " * 60
        + '<|"|>}<tool_call|>'
    ),
    # Text with calls inside <|python_start|> anywhere (strings holding brackets and quotes).
    "pythonic": (
        "some text [not a call] "
        + "<|python_start|>[set_port(blob='"
        + "x ] ) \\' \" " * 80
        + "'), get_time()]<|python_end|> "
    ),
}


def _feed_chars(fmt, text, *, truncated=False, in_reasoning=False):
    s = fmt.stream(TOOLS, in_reasoning=in_reasoning)
    events = []
    for c in text:
        events += s.feed(c)
    events += s.finish(truncated=truncated)
    return s, fold_events(events)


@pytest.mark.slow
@pytest.mark.parametrize("family", ["harmony", "gemma4", "pythonic"])
def test_cost_is_linear_one_character_at_a_time_channel_and_list_families(family):
    """200 KB fed one character at a time: characters examined stay within a constant factor."""
    chunk = _LINEAR_CHUNKS[family]
    text = (chunk * (200_000 // len(chunk) + 1))[:200_000]
    fmt = FORMATS[family]
    for in_reasoning, truncated in ((False, False), (True, True)):
        s, got = _feed_chars(fmt, text, truncated=truncated, in_reasoning=in_reasoning)
        assert s.ops <= 40 * len(text), f"{family}: {s.ops} characters examined for {len(text)}"
        assert got == fmt.parse(text, TOOLS, in_reasoning=in_reasoning, truncated=truncated)
    assert len(fmt.parse(text, TOOLS).tool_calls) >= len(text) // len(chunk)


@pytest.mark.slow
@pytest.mark.parametrize(
    "family,text,truncated",
    [
        (
            "harmony",
            "<|channel|>commentary to=functions.set_port<|message|>"
            '{"blob": "' + "x <|call|> y " * 16_000 + '"}<|call|>',
            False,
        ),
        # Never closes: at the end the body falls back to ending at its first end marker, and what
        # follows is read again once (later bodies are then not JSON-aware).
        (
            "harmony",
            '<|channel|>commentary to=functions.set_port<|message|>{"blob": "x"<|call|>'
            + "<|start|>assistant<|channel|>commentary to=functions.get_time<|message|>{<|call|>" * 2_500,
            True,
        ),
        ("harmony", "<|channel|>analysis<|message|>" + "a <|end|> b " * 12_000, False),
        (
            "gemma4",
            '<|tool_call>call:set_port{blob:<|"|>' + "z <tool_call|> { " * 12_000 + '<|"|>}<tool_call|>',
            False,
        ),
        ("pythonic", "[set_port(blob='" + "a ] ) \\' " * 20_000 + "')]", False),
        # One long list of calls, cut at max_tokens in its last call.
        ("pythonic", "[" + "get_time(), " * 16_000 + "set_port(blob='cut", True),
    ],
)
def test_one_huge_message_one_character_at_a_time_is_linear(family, text, truncated):
    fmt = FORMATS[family]
    s, got = _feed_chars(fmt, text, truncated=truncated)
    assert s.ops <= 40 * len(text), f"{family}: {s.ops} characters examined for {len(text)}"
    assert got == fmt.parse(text, TOOLS, truncated=truncated)
    if family == "pythonic" and truncated:
        # The list is one unit: cut before its close it is one incomplete call, no call runs.
        assert not got.tool_calls and got.content == ""
        assert [(c.name, c.raw) for c in got.incomplete_calls] == [("set_port", text)]


@pytest.mark.parametrize("family", list(FORMATS))
def test_every_registered_family_streams_in_linear_cost(family):
    """About 50 KB of text and calls written by the family's own writer (values holding markup
    characters), fed one character at a time: characters examined stay within a constant factor,
    and the stream equals parse."""
    fmt = FORMATS[family]
    call = fmt.example_call("set_port", {"blob": "x < y | z > " * 30 + "</parameter> </function>"})
    chunk = "Some words < [ { " + call + " more text.\n"
    text = chunk * (50_000 // len(chunk) + 1)
    s, got = _feed_chars(fmt, text)
    assert s.ops <= 40 * len(text), f"{family}: {s.ops} characters examined for {len(text)}"
    assert got == fmt.parse(text, TOOLS)
