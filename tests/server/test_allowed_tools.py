"""OpenAI's ``allowed_tools`` tool choice (``app.server._openai.allowed_tools``): every tool in the
prompt, the reply's calls held by the grammar to the allowed ones (``required``: at least one of
them; ``auto``: text, or calls to them). Through the official openai SDK against a real server of
scripted GGUFs (real templates; each model's script calls ``get_weather``). Under a grammar that
turns a scripted model from its script, what it samples is random: only what the grammar holds
is asserted (the names of the calls), never the sampled arguments."""

from __future__ import annotations

import httpx
import pytest

from tests.server.conftest import BOUNDED_TOOLS as TOOLS

openai = pytest.importorskip("openai")

USER = [{"role": "user", "content": "What is the weather in Oslo?"}]


def _allowed(mode: str, *names: str) -> dict:
    tools = [{"type": "function", "function": {"name": n}} for n in names]
    return {"type": "allowed_tools", "allowed_tools": {"mode": mode, "tools": tools}}


@pytest.fixture(scope="module")
def client(family_server):
    return openai.OpenAI(base_url=family_server.url + "/v1", api_key="unused", max_retries=0, timeout=120)


@pytest.mark.parametrize("model", ["call-hermes", "call-llama3", "call-mistral"])
def test_required_holds_the_calls_to_the_allowed_tools(client, model):
    """The script calls get_weather; only get_time is allowed: the reply calls get_time."""
    r = client.chat.completions.create(
        model=model,
        messages=USER,
        tools=TOOLS,
        tool_choice=_allowed("required", "get_time"),
        parallel_tool_calls=False,
        max_tokens=600,
    )
    (choice,) = r.choices
    assert choice.finish_reason == "tool_calls", choice
    assert [c.function.name for c in choice.message.tool_calls] == ["get_time"]


def test_auto_lets_an_allowed_call_through(client):
    r = client.chat.completions.create(
        model="call-llama3",
        messages=USER,
        tools=TOOLS,
        tool_choice=_allowed("auto", "get_weather", "get_time"),
    )
    (call,) = r.choices[0].message.tool_calls
    assert (call.function.name, call.function.arguments) == ("get_weather", '{"city": "Oslo"}')


def test_the_responses_api_takes_its_flat_form_and_says_it_back(family_server):
    choice = {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "function", "name": "get_time"}],
    }
    client = openai.OpenAI(base_url=family_server.url + "/v1", api_key="unused", max_retries=0, timeout=120)
    r = client.responses.create(
        model="call-hermes",
        input="What is the weather in Oslo?",
        tools=[{"type": "function", **t["function"]} for t in TOOLS],
        tool_choice=choice,
        parallel_tool_calls=False,
        max_output_tokens=600,
    )
    assert [o.name for o in r.output if o.type == "function_call"] == ["get_time"]
    assert r.tool_choice.model_dump(exclude_none=True) == choice


@pytest.mark.parametrize(
    ("allowed", "words"),
    [
        ({"mode": "any", "tools": [{"type": "function", "function": {"name": "get_time"}}]}, "mode must be"),
        ({"mode": "auto", "tools": []}, "non-empty array"),
        ({"mode": "auto", "tools": [{"type": "function", "function": {"name": "nope"}}]}, "not among"),
        (
            {"mode": "auto", "tools": [{"type": "function", "name": "get_time"}]},
            '{"type": "function", "function"',
        ),
        ("auto", "must be an object"),
    ],
)
def test_an_allowed_tools_choice_that_cannot_be_read_is_a_400(family_server, allowed, words):
    r = httpx.post(
        family_server.url + "/v1/chat/completions",
        json={
            "model": "call-hermes",
            "messages": USER,
            "tools": TOOLS,
            "tool_choice": {"type": "allowed_tools", "allowed_tools": allowed},
        },
        timeout=60,
    )
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == "tool_choice" and words in err["message"], err
