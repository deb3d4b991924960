"""Harmony (gpt-oss) on the official template, and channel-aware streaming."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.engine.formats import FORMATS, detect_template, tool_format_choices
from app.engine.formats.events import ReasoningDelta, TextDelta, ToolCallDone
from app.engine.formats.harmony import parse_header, spaced
from app.engine.templates import render_template
from tests.engine.formats.harness import TOOLS

SOURCE = (
    Path(__file__).resolve().parents[2] / "fixtures" / "chat_templates" / "openai-gpt-oss-120b.jinja"
).read_text()
H = FORMATS["harmony"]
USER = [{"role": "user", "content": "Weather?"}]
ARGS = {"city": 'Zürich "alt" <|end|>-free, 東京', "days": 3, "metric": True}


def _text(events) -> str:
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def _reasoning(events) -> str:
    return "".join(e.text for e in events if isinstance(e, ReasoningDelta))


def test_template_detects_as_harmony():
    assert detect_template(SOURCE, bos_token="<|startoftext|>", eos_token="<|return|>") == "harmony"
    assert detect_template(SOURCE) == "harmony"


@pytest.mark.parametrize(
    "extra",
    [
        {},
        {
            "reasoning_effort": "high",
            "builtin_tools": ["browser", "python"],
            "model_identity": "You are Callisto.",
        },
    ],
)
def test_call_rendered_by_the_template_parses_back_with_its_reasoning(extra):
    args = {k: v for k, v in ARGS.items() if k != "city"} | {"city": 'Zürich "alt" 東京'}
    assistant = {
        "role": "assistant",
        "content": "",
        "thinking": "Need the weather.",
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": args}}
        ],
    }
    prompt = render_template(SOURCE, USER, tools=TOOLS, add_generation_prompt=True, **extra)
    full = render_template(SOURCE, [*USER, assistant], tools=TOOLS, add_generation_prompt=False, **extra)
    assert prompt.endswith("<|start|>assistant") and full.startswith(prompt)
    reply_text = full[len(prompt) :]
    reply = H.parse(reply_text, TOOLS, in_reasoning=H.opens_in_reasoning(prompt))
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [("get_weather", args)], reply_text
    assert reply.reasoning == "Need the weather." and reply.content == ""


def test_final_answer_rendered_by_the_template_is_content():
    full = render_template(
        SOURCE,
        [*USER, {"role": "assistant", "content": "It is sunny."}],
        tools=TOOLS,
        add_generation_prompt=False,
    )
    prompt = render_template(SOURCE, USER, tools=TOOLS, add_generation_prompt=True)
    reply = H.parse(full[len(prompt) :], TOOLS)
    assert (reply.content, reply.reasoning, reply.tool_calls) == ("It is sunny.", "", [])


def test_streaming_is_channel_aware():
    s = H.stream(TOOLS)
    ev = s.feed("<|channel|>analysis<|message|>The user asks about the final answer")
    assert _text(ev) == "" and _reasoning(ev) == "The user asks about the final answer"
    ev = s.feed(" <|channel|> should not confuse it<|end|>")
    assert _text(ev) == ""  # a stray channel token in analysis starts a (malformed) header, never content
    s = H.stream(TOOLS)
    ev = []
    for ch in (
        "<|channel|>analysis<|message|>secret plan<|end|><|start|>assistant<|channel|>final<|message|>Hi"
        " there<|return|>"
    ):
        ev += s.feed(ch)
        assert "secret" not in _text(ev)
    assert _reasoning(ev) == "secret plan" and _text(ev) == "Hi there"


def test_call_is_held_until_its_message_ends_then_streams_as_one_call():
    s = H.stream(TOOLS)
    ev = s.feed('<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Pa')
    assert ev == []
    ev = s.feed('ris"}<|call|>')
    assert [(e.call.name, e.call.arguments) for e in ev if isinstance(e, ToolCallDone)] == [
        ("get_weather", {"city": "Paris"})
    ]


def test_prompt_ending_in_analysis_opens_in_reasoning():
    assert H.opens_in_reasoning("<|start|>assistant<|channel|>analysis<|message|>")
    assert not H.opens_in_reasoning("<|start|>assistant")
    assert not H.opens_in_reasoning(None)


@pytest.mark.parametrize(
    ("header", "want"),
    [
        ("<|channel|>final", ("final", None)),
        (" to=functions.f<|channel|>commentary json", ("commentary", "functions.f")),
        (
            "<|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json",
            ("commentary", "functions.f"),
        ),
        ("<|channel|>final extra words", None),
        ("to=a<|channel|>commentary to=b", None),
        (
            "<|channel|>commentary to=functions.f<|channel|>commentary <|constrain|>json",
            ("commentary", "functions.f"),
        ),
        ("<|channel|>final<|channel|>final", None),
        ("<|start|><|start|>assistant<|channel|>final", ("final", None)),
        ("<|start|>assistant<|channel|>", (None, None)),
        ("json", None),
    ],
)
def test_header_grammar(header, want):
    assert parse_header(header) == want


def test_undeclared_builtin_recipient_is_a_rejected_call_not_text():
    text = "<|channel|>analysis to=python code<|message|>print(1)<|call|>"
    reply = H.parse(text, TOOLS)
    assert reply.tool_calls == [] and reply.content == ""
    assert [(c.name, c.raw, c.reason) for c in reply.incomplete_calls] == [("python", text, "undeclared")]


def test_setting_choice_has_the_label():
    assert ("harmony", H.label) in tool_format_choices()


@pytest.mark.parametrize(
    ("header", "want"),
    [
        ("<|channel|> final", True),
        ("<|start|> assistant to=functions.f<|channel|> commentary <|constrain|>  json", True),
        ("<|channel|>final", False),
        ("<|start|> assistant<|channel|>final", False),  # only the channel's space tells
        ("<|channel|>\tfinal", False),
        (" to=functions.f json", False),
    ],
)
def test_llm_jp_header_is_told_by_the_space_after_channel(header, want):
    assert spaced(header) is want


def test_llm_jp_body_space_is_held_until_the_next_character():
    s = H.stream(TOOLS)
    assert s.feed("<|channel|> final<|message|>") == []
    assert s.feed(" ") == []  # the tokenizer's space: structure, never content
    ev = s.feed(" x")
    assert _text(ev) == " x"  # a second space is the body's own
    s = H.stream(TOOLS)
    ev = s.feed("<|channel|> final<|message|>")
    ev += s.finish()
    assert ev == []


def test_gpt_oss_reply_is_byte_exact_with_a_leading_space():
    full = render_template(
        SOURCE,
        [*USER, {"role": "assistant", "content": " It is sunny.", "thinking": " Need it."}],
        tools=TOOLS,
        add_generation_prompt=False,
    )
    prompt = render_template(SOURCE, USER, tools=TOOLS, add_generation_prompt=True)
    reply = H.parse(full[len(prompt) :], TOOLS)
    assert reply.content == " It is sunny."
