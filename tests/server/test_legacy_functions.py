"""OpenAI's legacy function calling on ``/v1/chat/completions`` (``app.server._openai._from_legacy``):
``functions`` and ``function_call`` in a request, an assistant message's ``function_call`` and a
``function`` message in the history, read as the ``tools`` form; the reply's call as
``message.function_call`` (streamed as ``delta.function_call``), ``finish_reason``
``function_call``. Through the official openai SDK (which still sends these fields) against a real
server of scripted GGUFs (real templates; what each model writes is fixed by its script)."""

from __future__ import annotations

import json

import httpx
import pytest

from tests.server.conftest import ANSWER, TIME, WEATHER

openai = pytest.importorskip("openai")

FUNCTIONS = [WEATHER["function"], TIME["function"]]
USER = [{"role": "user", "content": "What is the weather in Oslo?"}]


@pytest.fixture(scope="module")
def client(family_server):
    return openai.OpenAI(base_url=family_server.url + "/v1", api_key="unused", max_retries=0, timeout=60)


@pytest.mark.parametrize("model", ["call-hermes", "call-mistral", "call-llama3", "call-harmony"])
def test_a_call_comes_back_as_function_call_whole_and_streamed(client, model):
    r = client.chat.completions.create(model=model, messages=USER, functions=FUNCTIONS)
    (choice,) = r.choices
    assert choice.finish_reason == "function_call"
    assert choice.message.tool_calls is None and choice.message.function_call is not None
    call = choice.message.function_call
    assert call.name == "get_weather" and json.loads(call.arguments) == {"city": "Oslo"}
    # streamed: the name once, then argument fragments that join to the same arguments
    name, args, finish = None, "", None
    for chunk in client.chat.completions.create(model=model, messages=USER, functions=FUNCTIONS, stream=True):
        for c in chunk.choices:
            assert c.delta.tool_calls is None
            if c.delta.function_call is not None:
                name = name or c.delta.function_call.name
                args += c.delta.function_call.arguments or ""
            finish = c.finish_reason or finish
    assert (name, json.loads(args), finish) == ("get_weather", {"city": "Oslo"}, "function_call")


def test_a_legacy_reply_holds_one_call_as_legacy_replies_did(client):
    """The model writes two calls; a ``functions`` request gets the first (one call a reply)."""
    for n in (1, 2):  # (two choices go through the server's other path)
        r = client.chat.completions.create(
            model="call-hermes-parallel",
            messages=USER,
            functions=FUNCTIONS,
            n=n,
            parallel_tool_calls=n == 2,  # (a legacy reply cannot hold a second call: asked or not, one)
        )
        for choice in r.choices:
            assert (
                choice.finish_reason == "function_call" and choice.message.function_call.name == "get_weather"
            )
    # streamed, even when the request asks for parallel calls: one function_call's name, one call
    names = [
        c.delta.function_call.name
        for chunk in client.chat.completions.create(
            model="call-hermes-parallel",
            messages=USER,
            functions=FUNCTIONS,
            parallel_tool_calls=True,
            stream=True,
        )
        for c in chunk.choices
        if c.delta.function_call is not None and c.delta.function_call.name
    ]
    assert names == ["get_weather"]


def test_a_function_result_in_the_history_answers_its_call(client):
    """The loop model answers once its prompt ends in a tool result: the legacy ``function``
    message is rendered as the template renders a tool result."""
    first = client.chat.completions.create(model="loop-hermes", messages=USER, functions=FUNCTIONS)
    call = first.choices[0].message.function_call
    history = [
        *USER,
        {
            "role": "assistant",
            "content": None,
            "function_call": {"name": call.name, "arguments": call.arguments},
        },
        {"role": "function", "name": call.name, "content": "Sunny, 21 C"},
    ]
    second = client.chat.completions.create(model="loop-hermes", messages=history, functions=FUNCTIONS)
    assert second.choices[0].message.content == ANSWER and second.choices[0].finish_reason == "stop"
    # the same history answered in the modern form too (tools), and a reply's call as tool_calls
    modern = client.chat.completions.create(model="loop-hermes", messages=history, tools=[WEATHER, TIME])
    assert modern.choices[0].message.content == ANSWER
    r = client.chat.completions.create(model="call-hermes", messages=history, tools=[WEATHER, TIME])
    assert r.choices[0].finish_reason == "tool_calls" and r.choices[0].message.function_call is None


def test_function_call_none_offers_no_function(client):
    r = client.chat.completions.create(
        model="call-hermes", messages=USER, functions=FUNCTIONS, function_call="none"
    )
    assert r.choices[0].finish_reason == "stop" and r.choices[0].message.function_call is None


@pytest.mark.parametrize(
    ("extra", "param", "words"),
    [
        ({"functions": FUNCTIONS, "tools": [WEATHER]}, "functions", "not both"),
        (
            {"functions": FUNCTIONS, "function_call": "auto", "tool_choice": "auto"},
            "function_call",
            "not both",
        ),
        ({"functions": {"name": "x"}}, "functions", "must be an array"),
        ({"functions": FUNCTIONS, "function_call": "required"}, "function_call", '"auto", "none" or'),
        ({"functions": FUNCTIONS, "function_call": {"name": "nope"}}, "function_call", "not among"),
        ({"functions": [{"name": "bad name!"}]}, "functions[0].name", "functions[0]"),
    ],
)
def test_a_legacy_request_that_cannot_be_read_is_a_400_in_its_own_words(family_server, extra, param, words):
    r = httpx.post(
        family_server.url + "/v1/chat/completions",
        json={"model": "call-hermes", "messages": USER, **extra},
        timeout=60,
    )
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == param and words in err["message"], err


@pytest.mark.parametrize(
    ("history", "words"),
    [
        ([{"role": "function", "name": "get_weather", "content": "sunny"}], "no earlier assistant message"),
        (
            [
                {
                    "role": "assistant",
                    "content": None,
                    "function_call": {"name": "get_weather", "arguments": "{}"},
                },
                {"role": "function", "name": "get_time", "content": "noon"},
            ],
            "no earlier assistant message",
        ),
        ([{"role": "assistant", "content": None, "function_call": "get_weather"}], "must be an object"),
    ],
)
def test_a_legacy_history_that_cannot_be_read_is_a_400(family_server, history, words):
    r = httpx.post(
        family_server.url + "/v1/chat/completions",
        json={"model": "call-hermes", "messages": [*USER, *history], "functions": FUNCTIONS},
        timeout=60,
    )
    assert r.status_code == 400 and words in r.json()["error"]["message"], r.text
