"""Llama 4 under Meta's own template (the one transformers ships, and Llama 4 GGUFs carry): the
template is detected as ``llama4``, and the past call it renders into the prompt reads back as
the call it was, so what the model sees of its own calls is what it is held to."""

from __future__ import annotations

from pathlib import Path

from app.engine.formats import FORMATS, detect_template
from app.engine.messages import Message, ToolCall
from app.engine.render import render_messages

TEMPLATE = (
    Path(__file__).resolve().parents[2]
    / "fixtures"
    / "chat_templates"
    / "meta-llama-Llama-4-transformers.jinja"
)
WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
            "required": ["city"],
        },
    },
}
HEADER = "<|header_start|>assistant<|header_end|>\n\n"


def _past_calls(calls: list[ToolCall]) -> str:
    """The assistant turn the template renders for ``calls``: from its header to ``<|eot|>``."""
    source = TEMPLATE.read_text()
    messages = [
        Message("system", "Be brief."),
        Message("user", "Weather in Paris and Rome?"),
        Message("assistant", "", tool_calls=calls),
        Message("tool", "sunny", tool_call_id="call00000", name="get_weather"),
        Message("user", "Thanks."),
    ]
    text = render_messages(
        source, messages, tools=[WEATHER], bos_token="<|begin_of_text|>", eos_token="<|eot|>"
    ).text
    start = text.index(HEADER, text.index("Weather in Paris")) + len(HEADER)
    return text[start : text.index("<|eot|>", start)]


def test_meta_template_is_detected_as_llama4():
    assert (
        detect_template(TEMPLATE.read_text(), bos_token="<|begin_of_text|>", eos_token="<|eot|>") == "llama4"
    )


def test_the_past_calls_the_template_renders_read_back():
    calls = [
        ToolCall("call00000", "get_weather", {"city": "Paris", "days": 2}),
        ToolCall("call00001", "get_weather", {"city": "Rome"}),
    ]
    turn = _past_calls(calls)
    assert turn.startswith("<|python_start|><|python_end|>{")  # the markers empty, then the objects
    reply = FORMATS["llama4"].parse(turn, [WEATHER])
    assert [(c.name, c.arguments) for c in reply.tool_calls] == [(c.name, c.arguments) for c in calls]
    assert reply.content == ""
    assert "".join(c.raw for c in reply.tool_calls) == turn  # nothing of the turn is lost
