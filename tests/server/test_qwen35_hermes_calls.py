"""Qwen3.5's strays into Hermes' wire through the API server, read by the official openai client.

Qwen3.5 and Qwen3.6 ship the XML wire (``qwen-xml``: ``<tool_call>`` ``<function=NAME>``
``<parameter=P>``...), but now and then write the call as Qwen3 before them did: Hermes' JSON
object between the same tags. Each scripted GGUF here has Qwen3.5's real template and writes one
reply whatever the prompt (reasoning, then the calls), so each request shows what a client gets:
calls, never the JSON or the tags as text, streamed and not, JSON and XML calls side by side."""

from __future__ import annotations

import json
from typing import Any

from tests.server.conftest import TEMPLATES, TOOLS
from tests.server.scripted_replies import reply_fixtures, stray_wire_tests

USER = [{"role": "user", "content": "Weather in Oslo, and the time there?"}]
OSLO = {"city": "Oslo"}
ZONE = {"zone": "Europe/Oslo"}
THOUGHT = "The weather tool, then the clock.\n</think>\n\n"  # the prompt opened the reasoning


def _hermes(name: str, args: dict[str, Any]) -> str:
    return "<tool_call>\n" + json.dumps({"name": name, "arguments": args}) + "\n</tool_call>"


XML_TIME = (
    "<tool_call>\n<function=get_time>\n<parameter=zone>\nEurope/Oslo\n</parameter>\n</function>\n</tool_call>"
)
REPLIES = {
    "qwen35-json": THOUGHT + _hermes("get_weather", OSLO),
    "qwen35-json-then-xml": THOUGHT + _hermes("get_weather", OSLO) + "\n" + XML_TIME,
    "qwen35-json-pair": THOUGHT + _hermes("get_weather", OSLO) + "\n" + _hermes("get_time", ZONE),
}
CALLS = {
    "qwen35-json": [("get_weather", OSLO)],
    "qwen35-json-then-xml": [("get_weather", OSLO), ("get_time", ZONE)],
    "qwen35-json-pair": [("get_weather", OSLO), ("get_time", ZONE)],
}
CONTROL = ("<|im_start|>", "<|im_end|>", "<|endoftext|>")
TEMPLATE = TEMPLATES / "Qwen3.5-4B.jinja"


server, client = reply_fixtures(
    "qwen35",
    TEMPLATE.read_text(encoding="utf-8"),
    REPLIES,
    control=CONTROL,
    eos="<|im_end|>",
)


test_the_template_is_qwen_xml_s, test_qwen35_s_hermes_calls_reach_the_client_as_calls = stray_wire_tests(
    TEMPLATE, "qwen-xml", CALLS, USER, TOOLS, markers=("<tool_call>",)
)
