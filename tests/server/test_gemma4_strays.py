"""Gemma 4's ways out of its call notation through the API server, read by the official openai
client.

Gemma 4 writes ``<|tool_call>call:NAME{key:<|"|>value<|"|>}<tool_call|>``, and real checkpoints
stray from it: a string's opening delimiter left out (sglang #39240), Python's ``=`` after a key
(ollama #17882), a quoted string closed again with Gemma's delimiter (ollama #15315), the comma
after a string left out (yzma #243), the closing marker written twice (ollama #15370), the call
word left out (vLLM #54778), a declared tool's name in a namespace it made up (omlx #1830), its
only call inside the thought channel it then closes (omlx #1854). Each scripted GGUF here has Gemma 4's real template and writes one
such reply whatever the prompt, so each request shows what a client gets: calls, never Gemma's
markers or notation as text, plain and streamed."""

from __future__ import annotations

from tests.server.conftest import TEMPLATES, TOOLS
from tests.server.scripted_replies import reply_fixtures, stray_wire_tests

USER = [{"role": "user", "content": "Weather in Oslo, and the time there?"}]
OSLO = {"city": "Oslo"}
ZONE = {"zone": "Europe/Oslo"}
Q = '<|"|>'
OPEN, CLOSE = "<|tool_call>", "<tool_call|>"
THOUGHT = "<|channel>thought\nThe weather tool, then the clock.<channel|>"
TEMPLATE = TEMPLATES / "google-gemma-4-31B-it.jinja"

REPLIES = {
    "gemma4-opening-left-out": f"{THOUGHT}{OPEN}call:get_weather{{city:Oslo{Q}}}{CLOSE}",
    "gemma4-equals": f"{OPEN}call:get_weather{{city={Q}Oslo{Q}}}{CLOSE}{OPEN}call:get_time{{zone='Europe/Oslo'}}{CLOSE}",
    "gemma4-closed-twice": f"{OPEN}call:get_time{{zone:'Europe/Oslo'{Q}}}{CLOSE}{CLOSE}",
    "gemma4-no-call-word": f"{THOUGHT}{OPEN}get_weather{{city:{Q}Oslo{Q}}}{CLOSE}",
    "gemma4-name-in-a-namespace": f"{OPEN}call:google:mcp:get_weather{{city:{Q}Oslo{Q}}}{CLOSE}",
    "gemma4-call-ends-thought": f"<|channel>thought\nThe weather tool.\n{OPEN}call:get_weather{{city:{Q}Oslo{Q}}}{CLOSE}<channel|>",
}
CALLS = {
    "gemma4-opening-left-out": [("get_weather", OSLO)],
    "gemma4-equals": [("get_weather", OSLO), ("get_time", ZONE)],
    "gemma4-closed-twice": [("get_time", ZONE)],
    "gemma4-no-call-word": [("get_weather", OSLO)],
    "gemma4-name-in-a-namespace": [("get_weather", OSLO)],
    "gemma4-call-ends-thought": [("get_weather", OSLO)],
}
CONTROL = (
    "<bos>",
    "<|turn>",
    "<turn|>",
    OPEN,
    CLOSE,
    Q,
    "<|channel>",
    "<channel|>",
    "<|tool_response>",
    "<tool_response|>",
    "<|tool>",
    "<tool|>",
    "<|think|>",
)

server, client = reply_fixtures(
    "gemma4", TEMPLATE.read_text(encoding="utf-8"), REPLIES, control=CONTROL, eos="<turn|>"
)


test_the_template_is_gemma_4_s, test_gemma4_s_strays_reach_the_client_as_calls = stray_wire_tests(
    TEMPLATE, "gemma4", CALLS, USER, TOOLS, markers=(OPEN, CLOSE, Q)
)
