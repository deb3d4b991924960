"""Qwen's ways out of the XML wire through the API server, read by the official openai client.

Qwen3.5 and Qwen3.6 ship the XML wire (``qwen-xml``: ``<tool_call>`` ``<function=NAME>``
``<parameter=P>``...), but now and then write a call otherwise:

* as Qwen3 before them did: Hermes' JSON object between the same tags;
* with ``<parameter=NAME>`` where ``<function=NAME>`` belongs, inside the tags (ds4 #1050) or with
  no ``<tool_call>`` around it, one block or several (q27 #24);
* with closing tags of an older wrapper after the block, ``</function>`` again and
  ``</function_invocation>`` (ollama #16383);
* with the XML wire's tag fused into the JSON's first key, ``{"function=NAME", ...}`` (qvac #2677);
* inside its thinking, the block closed right after the call (vllm-mlx #433): the client gets
  the call, at the end of the stream;
* with a parameter's close written amiss (``</parameter1>``: sglang #27336): the value ends
  there, its arguments exactly what the model meant.

Each scripted GGUF here has Qwen3.5's real template and writes one reply whatever the prompt
(reasoning, then the calls), so each request shows what a client gets: calls, never the JSON or
the tags as text, streamed and not, the strays and the wire side by side."""

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


def _block(name: str, head: str = "function", **params: str) -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<{head}={name}>\n{body}</function>"


XML_TIME = "<tool_call>\n" + _block("get_time", zone="Europe/Oslo") + "\n</tool_call>"
P_WEATHER = _block("get_weather", "parameter", city="Oslo")
P_TIME = _block("get_time", "parameter", zone="Europe/Oslo")
REPLIES = {
    "qwen35-json": THOUGHT + _hermes("get_weather", OSLO),
    "qwen35-json-then-xml": THOUGHT + _hermes("get_weather", OSLO) + "\n" + XML_TIME,
    "qwen35-json-pair": THOUGHT + _hermes("get_weather", OSLO) + "\n" + _hermes("get_time", ZONE),
    "qwen36-parameter-head-bare-run": THOUGHT + P_WEATHER + "\n" + P_TIME,
    "qwen36-parameter-head-in-tags": THOUGHT + "<tool_call>\n" + P_WEATHER + "\n</tool_call>",
    "qwen36-stray-closers": THOUGHT
    + "<tool_call>\n"
    + _block("get_weather", city="Oslo")
    + "\n</function>\n</function_invocation>\n</tool_call>",
    "qwen35-fused-function-key": THOUGHT
    + '<tool_call>\n{"function=get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>',
    "qwen36-call-ends-thinking": "The weather tool.\n"
    + "<tool_call>\n"
    + _block("get_weather", city="Oslo")
    + "\n</tool_call>\n</think>\n\n",
    "qwen36-close-written-amiss": THOUGHT
    + "<tool_call>\n"
    + _block("get_weather", city="Oslo").replace("</parameter>", "</parameter1>")
    + "\n</tool_call>",
}
BOTH = [("get_weather", OSLO), ("get_time", ZONE)]
CALLS = {
    "qwen35-json": [("get_weather", OSLO)],
    "qwen35-json-then-xml": BOTH,
    "qwen35-json-pair": BOTH,
    "qwen36-parameter-head-bare-run": BOTH,
    "qwen36-parameter-head-in-tags": [("get_weather", OSLO)],
    "qwen36-stray-closers": [("get_weather", OSLO)],
    "qwen35-fused-function-key": [("get_weather", OSLO)],
    "qwen36-call-ends-thinking": [("get_weather", OSLO)],
    "qwen36-close-written-amiss": [("get_weather", OSLO)],
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


test_the_template_is_qwen_xml_s, test_qwen_s_strays_reach_the_client_as_calls = stray_wire_tests(
    TEMPLATE, "qwen-xml", CALLS, USER, TOOLS, markers=("<tool_call>", "<parameter=", "</function")
)
