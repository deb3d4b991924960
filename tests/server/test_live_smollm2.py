"""SmolLM2-135M-Instruct behind the server with the hermes format forced: a forced tool choice
(``required``, a named function; Anthropic's ``any`` / ``tool``) always yields a valid call of the
right tool, ``auto`` answers in either form, ``none`` never returns a call."""

from __future__ import annotations

import json

import pytest

from tests.server.conftest import TOOLS

pytestmark = pytest.mark.live

USER = [{"role": "user", "content": "What is the weather like in Paris today?"}]
MODEL = "SmolLM2-135M-Instruct.Q4_1"


@pytest.fixture(scope="module")
def client(smol_server):
    from openai import OpenAI

    return OpenAI(base_url=smol_server.url + "/v1", api_key="unused", max_retries=0, timeout=120)


@pytest.mark.parametrize("choice", ["required", {"type": "function", "function": {"name": "get_time"}}])
def test_forced_choice_is_a_valid_call(client, choice):
    reply = client.chat.completions.create(
        model=MODEL,
        messages=USER,
        tools=TOOLS,
        tool_choice=choice,
        max_tokens=64,
        temperature=0,
        parallel_tool_calls=False,
    )
    c = reply.choices[0]
    assert c.finish_reason == "tool_calls", c
    (call,) = c.message.tool_calls
    want = "get_time" if isinstance(choice, dict) else None
    assert call.function.name in ({want} if want else {"get_weather", "get_time"})
    args = json.loads(call.function.arguments)
    required = next(t for t in TOOLS if t["function"]["name"] == call.function.name)["function"]["parameters"]
    assert set(required["required"]) <= set(args) and all(isinstance(v, str) for v in args.values())


def test_forced_stream_equals_plain(client):
    kw = dict(
        model=MODEL,
        messages=USER,
        tools=TOOLS,
        max_tokens=64,
        temperature=0,
        seed=7,
        tool_choice={"type": "function", "function": {"name": "get_weather"}},
        parallel_tool_calls=False,
    )
    plain = client.chat.completions.create(**kw).choices[0].message.tool_calls
    with client.chat.completions.stream(**kw) as stream:
        final = stream.get_final_completion().choices[0].message.tool_calls
    assert [(c.function.name, c.function.arguments) for c in final] == [
        (c.function.name, c.function.arguments) for c in plain
    ]


def test_auto_and_none(client):
    auto = client.chat.completions.create(
        model=MODEL, messages=USER, tools=TOOLS, max_tokens=48, temperature=0
    )
    c = auto.choices[0]
    assert c.finish_reason in ("stop", "length", "tool_calls")
    assert (c.finish_reason == "tool_calls") == bool(c.message.tool_calls)
    none = client.chat.completions.create(
        model=MODEL, messages=USER, tools=TOOLS, tool_choice="none", max_tokens=24, temperature=0
    )
    assert not none.choices[0].message.tool_calls and none.choices[0].message.content


def test_anthropic_forced_tool(smol_server):
    from anthropic import Anthropic

    client = Anthropic(base_url=smol_server.url, api_key="unused", max_retries=0, timeout=120)
    tools = [{"name": t["function"]["name"], "input_schema": t["function"]["parameters"]} for t in TOOLS]
    reply = client.messages.create(
        model=MODEL,
        max_tokens=64,
        messages=USER,
        tools=tools,
        tool_choice={"type": "tool", "name": "get_weather", "disable_parallel_tool_use": True},
    )
    assert reply.stop_reason == "tool_use"
    (use,) = [b for b in reply.content if b.type == "tool_use"]
    assert use.name == "get_weather" and isinstance(use.input.get("city"), str)


def test_response_format_json_schema(client):
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}, "sunny": {"type": "boolean"}},
        "required": ["city", "sunny"],
        "additionalProperties": False,
    }
    reply = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Is it sunny in Paris? Answer in JSON."}],
        response_format={"type": "json_schema", "json_schema": {"name": "weather", "schema": schema}},
        max_tokens=64,
        temperature=0,
    )
    data = json.loads(reply.choices[0].message.content)
    assert set(data) == {"city", "sunny"} and isinstance(data["sunny"], bool)
