"""Llama 3.3's calls written in Python after the python tag, through the API server.

Meta's Llama 3.1 template (Llama 3.3 ships the same) writes ``Environment: ipython`` into the
system prompt whenever tools are offered; Llama 3.3 then answers in Python after the python tag,
``<|python_tag|>get_weather(city="Oslo")`` (meta-llama/llama-models #266), or in the built-in
tools' shape the template renders, ``get_weather.call(city="Oslo")``, and ends the turn with
``<|eom_id|>``. Each scripted GGUF here has that template and writes one such reply whatever the
prompt, so each request shows what a client gets: calls, never the Python or the tag as text,
plain and streamed."""

from __future__ import annotations

from tests.server.conftest import TEMPLATES, TOOLS
from tests.server.scripted_replies import reply_fixtures, stray_wire_tests

USER = [{"role": "user", "content": "Weather in Oslo, and the time there?"}]
OSLO = {"city": "Oslo"}
ZONE = {"zone": "Europe/Oslo"}
TAG = "<|python_tag|>"
TEMPLATE = TEMPLATES / "meta-llama-Llama-3.1-8B-Instruct.jinja"
REPLIES = {
    "llama3-python": TAG + 'get_weather(city="Oslo")',
    "llama3-python-builtin-shape": TAG + 'get_weather.call(city="Oslo")',
    "llama3-python-list": TAG + '[get_weather(city="Oslo"), get_time(zone="Europe/Oslo")]',
}
CALLS = {
    "llama3-python": [("get_weather", OSLO)],
    "llama3-python-builtin-shape": [("get_weather", OSLO)],
    "llama3-python-list": [("get_weather", OSLO), ("get_time", ZONE)],
}
CONTROL = ("<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>", TAG)

server, client = reply_fixtures(
    "llama3-python", TEMPLATE.read_text(encoding="utf-8"), REPLIES, control=CONTROL, eos="<|eom_id|>"
)

test_the_template_is_llama3_s, test_llama3_s_python_calls_reach_the_client_as_calls = stray_wire_tests(
    TEMPLATE, "llama3", CALLS, USER, TOOLS, markers=(TAG, "(", ".call")
)
