"""Llama 4's calls through the API server, read by the official openai client.

Meta's Llama 4 template teaches ``{"name": ..., "parameters": {...}}`` and renders a past call
as ``<|python_start|>TEXT<|python_end|>{...}``; Llama 4 writes its calls bare (omlx #1153),
between the markers (vLLM #16214) or after the markers left empty, as the template renders them.
Each scripted GGUF here has that template and writes one such reply whatever the prompt, so each
request shows what a client gets: calls, never the JSON or the markers as text, plain and
streamed."""

from __future__ import annotations

import json

from tests.server.conftest import TEMPLATES, TOOLS
from tests.server.scripted_replies import reply_fixtures, stray_wire_tests

USER = [{"role": "user", "content": "Weather in Oslo, and the time there?"}]
OSLO = {"city": "Oslo"}
ZONE = {"zone": "Europe/Oslo"}
START, END = "<|python_start|>", "<|python_end|>"
WEATHER = json.dumps({"name": "get_weather", "parameters": OSLO})
TIME = json.dumps({"name": "get_time", "parameters": ZONE})
TEMPLATE = TEMPLATES / "meta-llama-Llama-4-transformers.jinja"
REPLIES = {
    "llama4-bare": WEATHER,
    "llama4-bare-two": WEATHER + TIME,
    "llama4-marked": START + WEATHER + END,
    "llama4-empty-markers": START + END + WEATHER + TIME,
}
CALLS = {
    "llama4-bare": [("get_weather", OSLO)],
    "llama4-bare-two": [("get_weather", OSLO), ("get_time", ZONE)],
    "llama4-marked": [("get_weather", OSLO)],
    "llama4-empty-markers": [("get_weather", OSLO), ("get_time", ZONE)],
}
CONTROL = ("<|begin_of_text|>", "<|header_start|>", "<|header_end|>", "<|eot|>", "<|eom|>", START, END)

server, client = reply_fixtures(
    "llama4", TEMPLATE.read_text(encoding="utf-8"), REPLIES, control=CONTROL, eos="<|eot|>"
)

test_the_template_is_llama4_s, test_llama4_s_calls_reach_the_client_as_calls = stray_wire_tests(
    TEMPLATE, "llama4", CALLS, USER, TOOLS, markers=(START, END, '"parameters"')
)
