"""A model's call arguments that hold a lone surrogate (the JSON escape ``\\ud800``, which decodes to a
code point UTF-8 cannot encode) never break a reply: each API, streamed and not, answers with valid
UTF-8 JSON that the official clients (strict parsers among them) accept, the lone surrogate
replaced by U+FFFD in every one, and the rest of the arguments as the model wrote them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.server.conftest import FAMILIES, TEMPLATES, TOOLS
from tests.ui.scripted_gguf import write_scripted_gguf

# what the model writes: a lone high surrogate, and one in a key, beside text that is plain UTF-8
CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo \\ud800 \u00e6", "\\udfff": 1}}\n</tool_call>'
WRITTEN = {"city": "Oslo \ud800 \u00e6", "\udfff": 1}
EXPECTED = {"city": "Oslo \ufffd \u00e6", "\ufffd": 1}
USER = [{"role": "user", "content": "Weather in Oslo?"}]


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[object]:
    from app.server import ApiServer, ServerConfig

    spec = FAMILIES["hermes"]
    model = write_scripted_gguf(
        Path(tmp_path_factory.mktemp("surrogate")) / "lone-surrogate.gguf",
        chat_template=(TEMPLATES / spec.template).read_text(encoding="utf-8"),
        control_tokens=spec.control,
        user_tokens=[CALL],
        eos=spec.eos,
        script={CALL: spec.eos},
        default_next=CALL,
        name="lone-surrogate",
    )
    srv = ApiServer(ServerConfig(port=0, models=[str(model)], use_library=False, n_ctx=2048, n_threads=1))
    srv.start()
    yield srv
    srv.stop()


def test_the_scripted_call_holds_a_lone_surrogate():
    assert json.loads(CALL.split("\n")[1])["arguments"] == WRITTEN  # what the parser reads
    with pytest.raises(UnicodeEncodeError):
        json.dumps(WRITTEN, ensure_ascii=False).encode()  # what used to fail the reply


@pytest.mark.parametrize("stream", [False, True])
def test_openai(server, stream):
    from openai import OpenAI

    client = OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60)
    if stream:
        with client.chat.completions.stream(
            model="lone-surrogate", messages=USER, tools=TOOLS, tool_choice="auto"
        ) as s:
            reply = s.get_final_completion()
    else:
        reply = client.chat.completions.create(model="lone-surrogate", messages=USER, tools=TOOLS)
    (call,) = reply.choices[0].message.tool_calls
    assert call.function.name == "get_weather" and json.loads(call.function.arguments) == EXPECTED
    assert reply.choices[0].finish_reason == "tool_calls"


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic(server, stream):
    from anthropic import Anthropic

    client = Anthropic(base_url=server.url, api_key="unused", max_retries=0, timeout=60)
    tools = [
        {"name": t["function"]["name"], "description": "", "input_schema": t["function"]["parameters"]}
        for t in TOOLS
    ]
    kwargs = dict(model="lone-surrogate", max_tokens=200, messages=USER, tools=tools)
    if stream:
        with client.messages.stream(**kwargs) as s:
            msg = s.get_final_message()
    else:
        msg = client.messages.create(**kwargs)
    (use,) = [b for b in msg.content if b.type == "tool_use"]
    assert use.name == "get_weather" and use.input == EXPECTED and msg.stop_reason == "tool_use"


@pytest.mark.parametrize("stream", [False, True])
def test_ollama(server, stream):
    import ollama

    client = ollama.Client(host=server.url, timeout=60)
    if stream:
        calls = [
            c
            for part in client.chat(model="lone-surrogate", messages=USER, tools=TOOLS, stream=True)
            for c in part.message.tool_calls or []
        ]
    else:
        calls = client.chat(
            model="lone-surrogate", messages=USER, tools=TOOLS, stream=False
        ).message.tool_calls
    (call,) = calls
    assert call.function.name == "get_weather" and dict(call.function.arguments) == EXPECTED


def test_the_encoder_replaces_only_lone_surrogates():
    from app.server._json import json_bytes, json_text

    assert json_text({"a": "\ud800x\u00e6"}) == '{"a": "\ufffdx\u00e6"}'
    assert json.loads(json_bytes({"\udfff": ["\ud83d\ude00", "\U0001f600"]}).decode("utf-8")) == {
        "\ufffd": ["\U0001f600", "\U0001f600"]  # two halves written together are read as their pair
    }
