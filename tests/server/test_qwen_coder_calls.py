"""Qwen2.5-Coder's calls through the API server, read by the official clients: the model ships
Hermes' template (Qwen2.5's, here the real file) but writes its call as the whole reply's bare
JSON object, in a markdown fence, or between its tool-list tags ``<tools>`` (see
``app/engine/formats/hermes.py``). Each scripted GGUF writes one such reply whatever the prompt,
so every request shows what a client gets from it: calls, never the JSON as text, streamed and
not; and JSON naming no offered tool stays the answer's text."""

from __future__ import annotations

import json

import pytest

from tests.server.conftest import FAMILIES, TEMPLATES, TOOLS
from tests.server.scripted_replies import read_plain, read_streamed, reply_fixtures

USER = [{"role": "user", "content": "Weather in Oslo, and the time there?"}]
OSLO = {"city": "Oslo"}
ZONE = {"zone": "Europe/Oslo"}
BARE = json.dumps({"name": "get_weather", "arguments": OSLO})
REPLIES = {
    "coder-bare": BARE,
    "coder-fenced": "```json\n" + BARE + "\n```",
    "coder-tools": "<tools>\n"
    + json.dumps([{"name": "get_weather", "arguments": OSLO}, {"name": "get_time", "arguments": ZONE}])
    + "\n</tools>",
    # JSON that names no offered tool is the user's answer, not a call
    "coder-data": json.dumps({"name": "Oslo", "arguments": {"population": 709000}}),
}
CALLS = {
    "coder-bare": [("get_weather", OSLO)],
    "coder-fenced": [("get_weather", OSLO)],
    "coder-tools": [("get_weather", OSLO), ("get_time", ZONE)],
}


_SPEC = FAMILIES["hermes"]
server, client = reply_fixtures(
    "qwen-coder",
    (TEMPLATES / _SPEC.template).read_text(encoding="utf-8"),
    REPLIES,
    control=_SPEC.control,
    eos=_SPEC.eos,
)


def _plain(client, model: str) -> tuple[list, str | None, str]:
    return read_plain(client, model, USER, TOOLS, max_tokens=64)


def _streamed(client, model: str) -> tuple[list, str | None, str]:
    return read_streamed(client, model, USER, TOOLS, max_tokens=64)


@pytest.mark.parametrize("read", [_plain, _streamed], ids=["plain", "streamed"])
@pytest.mark.parametrize("model", sorted(CALLS))
def test_qwen_coder_calls_reach_the_client_as_calls(client, model, read):
    calls, content, finish = read(client, model)
    assert calls == CALLS[model]
    assert not content  # nothing of the call's JSON, fence or tags is shown as text
    assert finish == "tool_calls"


@pytest.mark.parametrize("read", [_plain, _streamed], ids=["plain", "streamed"])
def test_json_naming_no_offered_tool_stays_the_answer(client, read):
    calls, content, finish = read(client, "coder-data")
    assert calls == []
    assert content == REPLIES["coder-data"]
    assert finish == "stop"
