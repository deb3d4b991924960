"""Gemma 4 on its official templates, and its value notation."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.engine.formats import FORMATS, detect_template, tool_format_choices
from app.engine.formats.events import TextDelta, ToolCallDone
from app.engine.formats.gemma4 import parse_gemma_value
from app.engine.templates import render_template
from tests.engine.formats.harness import TOOLS

TEMPLATES = Path(__file__).resolve().parents[2] / "fixtures" / "chat_templates"
NAMES = ["gemma4.jinja", "google-gemma-4-31B-it.jinja", "google-gemma-4-31B-it-interleaved.jinja"]
G = FORMATS["gemma4"]
ARGS_W = {"city": "Zürich \"alt\" 'x' {a:b} [1] 東京", "days": 3, "metric": False}
ARGS_S = {"query": "08080", "limit": 5, "filters": {"year": 2020}, "tags": ["a b", "c"], "score": -1.5}


@pytest.mark.parametrize("name", NAMES)
def test_template_detects_as_gemma4(name):
    assert detect_template((TEMPLATES / name).read_text(), bos_token="<bos>") == "gemma4"


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("thinking", [False, True])
def test_parallel_calls_rendered_by_the_template_parse_back_typed(name, thinking):
    source = (TEMPLATES / name).read_text()
    user = [{"role": "user", "content": "Weather and search?"}]
    assistant = {
        "role": "assistant",
        "content": "",
        "reasoning_content": "Two lookups.",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": ARGS_W}},
            {"id": "c2", "type": "function", "function": {"name": "search", "arguments": ARGS_S}},
            {"id": "c3", "type": "function", "function": {"name": "get_time", "arguments": {}}},
        ],
    }
    prompt = render_template(source, user, tools=TOOLS, add_generation_prompt=True, enable_thinking=thinking)
    full = render_template(
        source, [*user, assistant], tools=TOOLS, add_generation_prompt=False, enable_thinking=thinking
    )
    turn = "<|turn>model\n"
    reply_text = full[full.rindex(turn) + len(turn) :].split("<turn|>")[0]
    reply = G.parse(reply_text, TOOLS, in_reasoning=G.opens_in_reasoning(prompt))
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("get_weather", ARGS_W),
        ("search", ARGS_S),
        ("get_time", {}),
    ], reply_text
    assert reply.content == "" and "<" not in reply.reasoning
    s = G.stream(TOOLS, in_reasoning=G.opens_in_reasoning(prompt))
    events = [e for ch in reply_text for e in s.feed(ch)] + s.finish()
    assert [e.call for e in events if isinstance(e, ToolCallDone)] == reply.tool_calls


def test_thinking_prompt_and_disabled_thinking_prompt():
    source = (TEMPLATES / "google-gemma-4-31B-it.jinja").read_text()
    user = [{"role": "user", "content": "hi"}]
    off = render_template(source, user, add_generation_prompt=True)
    assert off.endswith("<|channel>thought\n<channel|>") and not G.opens_in_reasoning(off)
    assert not G.opens_in_reasoning(
        render_template(source, user, add_generation_prompt=True, enable_thinking=True)
    )
    assert G.opens_in_reasoning(off[: -len("\n<channel|>")])


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ('<|"|>a,b}]<|"|>', "a,b}]"),
        ("{a b:1,c:[true,false,null,None],d:{}}", {"a b": 1, "c": [True, False, None, None], "d": {}}),
        ("[ 1 , -2.5e3 , 0 ]", [1, -2500.0, 0]),
        ('{<|"|>k:ey<|"|>:<|"|><|"|>}', {"k:ey": ""}),
    ],
)
def test_values(text, want):
    assert parse_gemma_value(text) == (True, want)


@pytest.mark.parametrize(
    "text", ["{a:1", "[1,]", "{a:1,a:2}", "{:1}", "01", "abc", '<|"|>open', "{a:1}}", "[" * 200 + "]" * 200]
)
def test_bad_values(text):
    assert parse_gemma_value(text) == (False, None)


def test_stop_marker_after_the_calls_is_not_content_and_streams_held():
    s = G.stream(TOOLS)
    ev = s.feed("<|channel>thought ok<channel|>Sure.<|tool_call>call:get_time{}<tool_call|><|tool_resp")
    assert "".join(e.text for e in ev if isinstance(e, TextDelta)) == "Sure."
    ev = s.feed("onse>") + s.finish()
    assert [e.call.name for e in ev if isinstance(e, ToolCallDone)] == ["get_time"]
    assert all(not isinstance(e, TextDelta) for e in ev)


def test_setting_choice_has_the_label():
    assert ("gemma4", G.label) in tool_format_choices()
