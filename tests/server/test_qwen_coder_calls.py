"""Qwen2.5-Coder's calls through the API server, read by the official clients: the model ships
Hermes' template (Qwen2.5's, here the real file) but writes its call as the whole reply's bare
JSON object, in a markdown fence, or between its tool-list tags ``<tools>`` (see
``app/engine/formats/hermes.py``). Each scripted GGUF writes one such reply whatever the prompt,
so every request shows what a client gets from it: calls, never the JSON as text, streamed and
not; and JSON naming no offered tool stays the answer's text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import FAMILIES, TEMPLATES, TOOLS
from tests.ui.scripted_gguf import write_scripted_gguf

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


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[Any]:
    from app.server import ApiServer, ServerConfig

    folder = tmp_path_factory.mktemp("qwen-coder")
    spec = FAMILIES["hermes"]
    paths: list[Path] = []
    for name, text in REPLIES.items():
        paths.append(
            write_scripted_gguf(
                folder / f"{name}.gguf",
                chat_template=(TEMPLATES / spec.template).read_text(encoding="utf-8"),
                control_tokens=spec.control,
                user_tokens=[text],  # the whole reply is one token, then the end of the turn
                eos=spec.eos,
                script={text: spec.eos},
                default_next=text,
                name=name,
            )
        )
    srv = ApiServer(
        ServerConfig(port=0, models=[str(p) for p in paths], use_library=False, n_ctx=2048, n_threads=1)
    )
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def client(server):
    from openai import OpenAI

    return OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60)


def _plain(client, model: str) -> tuple[list[tuple[str, dict]], str | None, str]:
    r = client.chat.completions.create(model=model, messages=USER, tools=TOOLS, max_tokens=64)
    choice = r.choices[0]
    calls = [(c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls or []]
    return calls, choice.message.content, choice.finish_reason


def _streamed(client, model: str) -> tuple[list[tuple[str, dict]], str | None, str]:
    seen: dict[int, dict] = {}
    text, finish = "", ""
    for chunk in client.chat.completions.create(
        model=model, messages=USER, tools=TOOLS, max_tokens=64, stream=True
    ):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        text += delta.content or ""
        for tc in delta.tool_calls or []:
            entry = seen.setdefault(tc.index, {"name": tc.function.name, "args": ""})
            entry["args"] += tc.function.arguments or ""
        finish = chunk.choices[0].finish_reason or finish
    calls = [(v["name"], json.loads(v["args"])) for _, v in sorted(seen.items())]
    return calls, text or None, finish


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
