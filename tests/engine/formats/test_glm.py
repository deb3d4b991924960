"""GLM family on its official templates (GLM-4.6, GLM-4.7-Flash, Poolside Laguna) and specifics."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.engine.formats import FORMATS, detect_template, tool_format_choices
from app.engine.formats.events import ReasoningDelta, TextDelta, ToolCallDone
from app.engine.templates import render_template
from tests.engine.formats.harness import TOOLS

TEMPLATES = Path(__file__).resolve().parents[2] / "fixtures" / "chat_templates"
GLM = FORMATS["glm"]
# template -> the text that opens the assistant's turn
HEADERS = {
    "GLM-4.6.jinja": "<|assistant|>",
    "GLM-4.7-Flash.jinja": "<|assistant|>",
    "poolside-Laguna-S-2.1.jinja": "<assistant>",
    "poolside-Laguna-XS-2.1.jinja": "<assistant>",
    "poolside-Laguna-XS.2.jinja": "<assistant>",
}
ARGS_W = {"city": 'São Paulo "centro"\n  <tool_call> x', "days": 3, "metric": False}
ARGS_S = {"query": "08080", "limit": 5, "filters": {"year": 2020}, "tags": ["a b", "c"], "score": None}


def _assistant(args_as_objects: bool = True) -> dict:
    return {
        "role": "assistant",
        "content": "Let me check.",
        "reasoning_content": "Two lookups needed.",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": ARGS_W}},
            {"id": "c2", "type": "function", "function": {"name": "search", "arguments": ARGS_S}},
            {"id": "c3", "type": "function", "function": {"name": "get_time", "arguments": {}}},
        ],
    }


@pytest.mark.parametrize("name", sorted(HEADERS))
def test_template_detects_as_glm(name):
    assert detect_template((TEMPLATES / name).read_text(), bos_token="<s>") == "glm"


@pytest.mark.parametrize("name", sorted(HEADERS))
def test_parallel_calls_rendered_by_the_template_parse_back_typed(name):
    source = (TEMPLATES / name).read_text()
    user = [{"role": "user", "content": "Weather and search?"}]
    prompt = render_template(source, user, tools=TOOLS, add_generation_prompt=True)
    full = render_template(source, [*user, _assistant()], tools=TOOLS, add_generation_prompt=False)
    header = HEADERS[name]
    reply_text = full[full.rindex(header) + len(header) :]
    for end in ("</assistant>", "<|user|>", "<|observation|>"):
        reply_text = reply_text.split(end)[0]
    in_reasoning = GLM.opens_in_reasoning(prompt) and not reply_text.lstrip().startswith(
        ("<think>", "</think>")
    )
    reply = GLM.parse(reply_text, TOOLS, in_reasoning=in_reasoning)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [
        ("get_weather", ARGS_W),
        ("search", ARGS_S),
        ("get_time", {}),
    ], reply_text
    assert reply.content.strip() == "Let me check."
    assert "<" not in reply.content and "<" not in reply.reasoning
    # the same text, streamed one character at a time
    s = GLM.stream(TOOLS, in_reasoning=in_reasoning)
    events = [e for ch in reply_text for e in s.feed(ch)] + s.finish()
    assert [e.call for e in events if isinstance(e, ToolCallDone)] == reply.tool_calls


def test_glm47_prompt_opens_in_reasoning_and_reasoning_streams():
    source = (TEMPLATES / "GLM-4.7-Flash.jinja").read_text()
    prompt = render_template(
        source, [{"role": "user", "content": "hi"}], tools=TOOLS, add_generation_prompt=True
    )
    assert GLM.opens_in_reasoning(prompt)
    s = GLM.stream(TOOLS, in_reasoning=True)
    ev = s.feed("I need the weather first")
    assert "".join(e.text for e in ev if isinstance(e, ReasoningDelta)).startswith("I need the weather")
    ev = s.feed("</think>Sure. <tool_call>get_time</tool_call>")
    assert [e.call.name for e in ev if isinstance(e, ToolCallDone)] == ["get_time"]
    assert "".join(e.text for e in ev if isinstance(e, TextDelta)) == "Sure. "


def test_partial_opener_is_held_back_then_released_as_text():
    s = GLM.stream(TOOLS)
    out = s.feed("<think></think>Use <tool_")
    assert "".join(e.text for e in out if isinstance(e, TextDelta)) == "Use "
    out = s.feed("kit> here") + s.finish()
    assert "".join(e.text for e in out if isinstance(e, TextDelta)) == "<tool_kit> here"


def test_no_other_family_reads_a_rendered_glm_call_and_glm_reads_no_hermes_or_qwen_call():
    glm_text = "<tool_call>get_time</tool_call>"
    for name, fmt in FORMATS.items():
        if name != "glm":
            assert not fmt.parse(glm_text, TOOLS).tool_calls, name
    for text in (
        '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>',
        "<tool_call>\n<function=get_time>\n</function>\n</tool_call>",
    ):
        assert not GLM.parse(text, TOOLS).tool_calls


def test_cost_is_linear_for_a_long_value_one_character_at_a_time():
    text = (
        "<think>r</think><tool_call>set_port<arg_key>blob</arg_key><arg_value>"
        + "x<" * 20000
        + "</arg_value></tool_call>"
    )
    s = GLM.stream(TOOLS)
    for ch in text:
        s.feed(ch)
    s.finish()
    assert s.ops <= 40 * len(text)


def test_setting_choice_has_the_label():
    assert ("glm", GLM.label) in tool_format_choices()


# The plain-tag families that share GLM's pair reader or MiniMax's parameter reader
# (app/engine/formats/xml_params.py), with the closing tag of a value.
SHARED_READERS = {
    "glm": "</arg_value>",
    "iquest-coder-v2": "</arg_value>",
    "minimax": "</parameter>",
    "dots": "</parameter>",
    "seed-oss": "</parameter>",
    "step3": "</steptml:parameter>",
    "step-deepresearch": "</steptml:parameter>",
}


@pytest.mark.parametrize(("family", "value_close"), SHARED_READERS.items())
def test_a_value_left_open_before_the_next_parameter_is_text(family, value_close):
    """A value whose closing tag was left out runs into the next parameter's tags: read, the call
    would carry that markup in its value and lose the parameter, so the reply is text."""
    fmt = FORMATS[family]
    whole = fmt.example_call("get_weather", {"city": "Paris", "days": 3})
    assert [(c.name, c.arguments) for c in fmt.parse(whole, TOOLS).tool_calls] == [
        ("get_weather", {"city": "Paris", "days": 3})
    ]
    text = whole.replace("Paris" + value_close, "Paris", 1)
    reply = fmt.parse(text, TOOLS)
    assert (reply.content, reply.tool_calls) == (text, [])
    # a value holding a whole element of the wire as text, closed, is still read as written
    inner = whole.split("Paris" + value_close)[1].split("3" + value_close)[0] + "3" + value_close
    held = whole.replace("Paris" + value_close, "Paris " + inner + " ok" + value_close, 1)
    got = fmt.parse(held, TOOLS).tool_calls
    assert [(c.name, c.arguments) for c in got] == [
        ("get_weather", {"city": "Paris " + inner + " ok", "days": 3})
    ]
