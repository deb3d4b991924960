"""Message shapes and prompt rendering through the official templates (Jinja sandbox)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from app.engine.llm import load_model
from app.engine.messages import Message, ToolCallRecord, is_valid_call_id, local_call_id
from app.engine.render import (
    PromptRenderError,
    render_messages,
    render_prompt,
    shape_messages,
    template_tools_mode,
)

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates"
FAMILIES = json.loads((TEMPLATES / "families.json").read_text())["templates"]
SUPPORTED = sorted(n for n, info in FAMILIES.items() if info["family"] in ("hermes", "qwen-xml", "llama3", "mistral"))

TOOLS = [{"type": "function", "function": {
    "name": "get_weather", "description": "Weather for a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
                   "required": ["city"]}}}]


def conversation() -> list[Message]:
    return [
        Message("system", "Be brief."),
        Message("user", "Weather in Paris?"),
        Message("assistant", "", reasoning="I should call the tool.",
                tool_calls=[ToolCallRecord("call_9f2b7c1e-long", "get_weather", {"city": "Paris", "days": 2})]),
        Message("tool", "sunny, 21 C", tool_call_id="call_9f2b7c1e-long", name="get_weather"),
        Message("assistant", "It is sunny."),
        Message("user", "Thanks."),
        Message("user", "And tomorrow?"),  # two user turns in a row (e.g. after a failed reply)
    ]


def test_shapes():
    shaped = shape_messages(conversation())
    call_turn = shaped[2]
    assert call_turn["content"] == "" and isinstance(call_turn["content"], str)
    call = call_turn["tool_calls"][0]
    assert call == {"id": "hist00000", "type": "function",
                    "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2}}}
    assert call_turn["reasoning_content"] == "I should call the tool."
    assert shaped[3] == {"role": "tool", "content": "sunny, 21 C", "tool_call_id": "hist00000",
                         "name": "get_weather"}
    # a valid local id is kept; a tool result without a name gets its call's name
    msgs = [Message("assistant", tool_calls=[ToolCallRecord("call00007", "f", {})]),
            Message("tool", "ok", tool_call_id="call00007")]
    shaped = shape_messages(msgs)
    assert shaped[0]["tool_calls"][0]["id"] == "call00007"
    assert shaped[1]["name"] == "f"
    assert is_valid_call_id(local_call_id(3)) and local_call_id(3) == "call00003"
    assert is_valid_call_id(local_call_id(12, "hist"))


def test_merge_consecutive_same_role_turns():
    shaped = shape_messages(conversation(), merge_turns=True)
    assert [m["role"] for m in shaped] == ["system", "user", "assistant", "tool", "assistant", "user"]
    assert shaped[-1]["content"] == "Thanks.\n\nAnd tomorrow?"


def test_message_round_trip_for_storage():
    for m in conversation():
        assert Message.from_dict(m.to_dict()) == m
    with pytest.raises(ValueError, match="unknown message role"):
        Message("robot", "hi")


@pytest.mark.parametrize("name", SUPPORTED)
def test_every_supported_template_renders_a_whole_tool_conversation(name):
    source = (TEMPLATES / name).read_text()
    rendered = render_messages(source, conversation(), tools=TOOLS, bos_token="<s>", eos_token="</s>")
    text = rendered.text
    assert "sunny, 21 C" in text
    assert "And tomorrow?" in text and "Weather in Paris?" in text
    assert "get_weather" in text
    assert rendered.tools_sent


def test_mistral_alternation_is_merged_instead_of_failing():
    source = (TEMPLATES / "mistralai-Mistral-Nemo-Instruct-2407.jinja").read_text()
    rendered = render_messages(source, conversation(), tools=TOOLS, bos_token="<s>", eos_token="</s>")
    assert rendered.merged_turns
    assert "[INST]Be brief.\n\nThanks.\n\nAnd tomorrow?[/INST]" in rendered.text
    # 9-character ids that Mistral's template insists on
    assert '"id": "hist00000"' in rendered.text
    assert '"call_id": "hist00000"' in rendered.text


def test_reasoning_is_handed_back_to_templates_that_read_it():
    source = (TEMPLATES / "Qwen-Qwen3-0.6B.jinja").read_text()
    msgs = conversation()[:4]  # the reply in progress: call turn + result after the last user turn
    text = render_messages(source, msgs, tools=TOOLS).text
    assert "<think>\nI should call the tool.\n</think>" in text


def test_phi4_mini_takes_tools_as_a_json_string_on_the_system_message():
    source = (TEMPLATES / "microsoft-Phi-4-mini-instruct.jinja").read_text()
    assert template_tools_mode(source) == "system_message"
    text = render_messages(source, [Message("user", "hi")], tools=TOOLS).text
    m = re.search(r"<\|tool\|>(.*)<\|/tool\|>", text)
    assert m and json.loads(m.group(1)) == TOOLS
    assert text.startswith("<|system|><|tool|>")
    # without tools, no tool block at all
    assert "<|tool|>" not in render_messages(source, [Message("user", "hi")]).text


def test_template_that_raises_is_a_clear_error():
    source = "{{ raise_exception('This template only supports user messages') }}"
    with pytest.raises(PromptRenderError, match="only supports user messages"):
        render_messages(source, [Message("user", "hi")])


def test_tool_use_template_is_used_when_tools_are_on(tiny_gguf):
    path = tiny_gguf(chat_template="DEFAULT{% for m in messages %}{{ m.content }}{% endfor %}",
                     named_templates={"tool_use": "TOOLS{{ tools | length }}{% for m in messages %}{{ m.content }}{% endfor %}"})
    model = load_model(path, n_ctx=256, n_threads=1)
    try:
        with_tools = render_prompt(model, [Message("user", "hi")], tools=TOOLS)
        assert (with_tools.template, with_tools.text) == ("tool_use", "TOOLS1hi")
        plain = render_prompt(model, [Message("user", "hi")])
        assert (plain.template, plain.text) == ("chat_template", "DEFAULThi")
    finally:
        model.close()


def test_fallback_template_for_a_gguf_without_one(tiny_gguf):
    model = load_model(tiny_gguf(), n_ctx=256, n_threads=1)
    try:
        r = render_prompt(model, [Message("system", "S"), Message("user", "hi")])
        assert r.template == "fallback"
        assert r.text == "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"
    finally:
        model.close()
