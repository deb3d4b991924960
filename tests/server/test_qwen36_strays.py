"""Qwen3.6's and 3.8's ways out of the XML wire through the API server, read by the official
openai client.

The XML wire (``qwen-xml``) is ``<tool_call>`` ``<function=NAME>`` ``<parameter=P>``... Newer Qwen
models now and then open the function with ``<parameter=NAME>`` instead (inside the tags: ds4
#1050; with no ``<tool_call>`` around it, one block or several: q27 #24), or write closing tags of
an older wrapper after it (``</function>`` again, ``</function_invocation>``: ollama #16383).
Each scripted GGUF here has Qwen3.5's real template (Qwen3.6's wire) and writes one reply
whatever the prompt, so each request shows what a client gets: calls, never the tags as text,
streamed and not."""

from __future__ import annotations

from tests.server.conftest import TEMPLATES, TOOLS
from tests.server.scripted_replies import reply_fixtures, stray_wire_tests

USER = [{"role": "user", "content": "Weather in Oslo, and the time there?"}]
OSLO = {"city": "Oslo"}
ZONE = {"zone": "Europe/Oslo"}
THOUGHT = "The weather tool, then the clock.\n</think>\n\n"  # the prompt opened the reasoning


def _block(name: str, head: str = "function", **params: str) -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<{head}={name}>\n{body}</function>"


WEATHER = _block("get_weather", "parameter", city="Oslo")
TIME = _block("get_time", "parameter", zone="Europe/Oslo")
REPLIES = {
    "qwen36-parameter-head-bare-run": THOUGHT + WEATHER + "\n" + TIME,
    "qwen36-parameter-head-in-tags": THOUGHT + "<tool_call>\n" + WEATHER + "\n</tool_call>",
    "qwen36-stray-closers": THOUGHT
    + "<tool_call>\n"
    + _block("get_weather", city="Oslo")
    + "\n</function>\n</function_invocation>\n</tool_call>",
}
CALLS = {
    "qwen36-parameter-head-bare-run": [("get_weather", OSLO), ("get_time", ZONE)],
    "qwen36-parameter-head-in-tags": [("get_weather", OSLO)],
    "qwen36-stray-closers": [("get_weather", OSLO)],
}
CONTROL = ("<|im_start|>", "<|im_end|>", "<|endoftext|>")
TEMPLATE = TEMPLATES / "Qwen3.5-4B.jinja"


server, client = reply_fixtures(
    "qwen36",
    TEMPLATE.read_text(encoding="utf-8"),
    REPLIES,
    control=CONTROL,
    eos="<|im_end|>",
)


test_the_template_is_qwen_xml_s, test_qwen36_s_strays_reach_the_client_as_calls = stray_wire_tests(
    TEMPLATE, "qwen-xml", CALLS, USER, TOOLS, markers=("<parameter=", "</function", "<tool_call>")
)
