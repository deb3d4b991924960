"""MiniCPM3-4B's own template (vLLM publishes it) through the server: its Python calls in a fence.

The template teaches a thought, then Python calls in a ```` ```python ```` fence between
``<|tool_call_start|>`` and ``<|tool_call_end|>``. Each scripted GGUF here carries it and writes
one such reply whatever the prompt: the client gets the calls, plain and streamed, with nothing of
the region or the fence in the text."""

from __future__ import annotations

from tests.server.conftest import TEMPLATES, TOOLS
from tests.server.scripted_replies import reply_fixtures, stray_wire_tests

USER = [{"role": "user", "content": "Weather in Oslo, and the time there?"}]
OSLO = {"city": "Oslo"}
ZONE = {"zone": "Europe/Oslo"}
THOUGHT = "<|thought_start|>\nThe user asks for the weather.\n<|thought_end|>\n"
REPLIES = {
    "minicpm3-one": THOUGHT
    + '<|tool_call_start|>\n```python\nget_weather(city="Oslo")\n```\n<|tool_call_end|>',
    "minicpm3-two": "<|tool_call_start|>\n```python\nget_weather(city='Oslo')\n"
    "get_time(zone='Europe/Oslo')\n```\n<|tool_call_end|>",
}
CALLS = {
    "minicpm3-one": [("get_weather", OSLO)],
    "minicpm3-two": [("get_weather", OSLO), ("get_time", ZONE)],
}
TEMPLATE = TEMPLATES / "vllm-minicpm3.jinja"

server, client = reply_fixtures(
    "minicpm3",
    TEMPLATE.read_text(encoding="utf-8"),
    REPLIES,
    control=("<|im_start|>", "<|im_end|>"),
    eos="<|im_end|>",
)

test_the_template_is_minicpm3, test_fenced_calls_reach_the_client_as_calls = stray_wire_tests(
    TEMPLATE, "minicpm3", CALLS, USER, TOOLS, markers=("tool_call", "```", "get_weather(")
)


def test_the_thought_reaches_the_client_as_reasoning(client) -> None:
    r = client.chat.completions.create(model="minicpm3-one", messages=USER, tools=TOOLS, max_tokens=128)
    message = r.choices[0].message
    extra = message.model_extra or {}
    reasoning = getattr(message, "reasoning_content", None) or extra.get("reasoning_content")
    assert reasoning is not None and "The user asks for the weather." in reasoning
    assert "thought" not in (message.content or "")
