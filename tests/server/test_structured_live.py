"""Issue 32 with the demo model (SmolLM2-135M-Instruct, hermes calls) behind the server, on the
fixed prompts of the engine's live constraint test:

* Must show 1: under ``required`` every reply ends by itself with ``finish_reason: tool_calls``
  within the token limit, its calls distinct and at most ``DEFAULT_MAX_CALLS``, streamed and not;
* Must show 4: ``response_format`` ``json_object`` and ``json_schema`` and Ollama's ``format``
  (``json`` and a schema) give valid JSON within the token limit (a schema whose longest reply
  fits it; a ``json_object`` reply is closed by the engine before the limit); a reply the limit cuts says
  ``length`` and is never presented as valid JSON (the openai SDK's ``parse`` refuses it).
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from app.engine.chat import DEFAULT_MAX_CALLS
from tests.engine.test_constraints_live import PROMPTS
from tests.server.conftest import TOOLS

pytestmark = pytest.mark.live

MODEL = "SmolLM2-135M-Instruct.Q4_1"
LIMIT = 320
ADD = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two numbers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "number"}, "b": {"type": "number"}},
            "required": ["a", "b"],
        },
    },
}
ALL_TOOLS = [*TOOLS, ADD]
# Nothing said of other properties: the grammar closes the object. At most 40 characters of six bytes
# each (a \uXXXX escape), so even the longest reply the schema allows is under LIMIT tokens.
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string", "maxLength": 40}, "sure": {"type": "boolean"}},
    "required": ["answer", "sure"],
}
CLOSED = {**SCHEMA, "additionalProperties": False}  # what a reply to SCHEMA must also satisfy
JSON_PROMPTS = PROMPTS[:6]


@pytest.fixture(scope="module")
def client(smol_server):
    from openai import OpenAI

    return OpenAI(base_url=smol_server.url + "/v1", api_key="unused", max_retries=0, timeout=120)


def _distinct(calls) -> bool:
    keys = [(c.function.name, json.dumps(json.loads(c.function.arguments), sort_keys=True)) for c in calls]
    return len(set(keys)) == len(keys)


@pytest.mark.parametrize("i", range(len(PROMPTS)))
def test_i32_required_ends_with_tool_calls_within_the_limit(client, i):
    reply = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": PROMPTS[i]}],
        tools=ALL_TOOLS,
        tool_choice="required",
        max_tokens=LIMIT,
        temperature=0,
    )
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls", (PROMPTS[i], choice)
    calls = choice.message.tool_calls
    assert 1 <= len(calls) <= DEFAULT_MAX_CALLS and _distinct(calls), (PROMPTS[i], calls)
    assert reply.usage.completion_tokens < LIMIT


@pytest.mark.parametrize("i", range(0, len(PROMPTS), 4))
def test_i32_required_streamed_ends_with_tool_calls(client, i):
    with client.chat.completions.stream(
        model=MODEL,
        messages=[{"role": "user", "content": PROMPTS[i]}],
        tools=ALL_TOOLS,
        tool_choice="required",
        max_tokens=LIMIT,
        temperature=0,
    ) as stream:
        final = stream.get_final_completion()
    choice = final.choices[0]
    assert choice.finish_reason == "tool_calls", (PROMPTS[i], choice)
    assert 1 <= len(choice.message.tool_calls) <= DEFAULT_MAX_CALLS and _distinct(choice.message.tool_calls)


@pytest.mark.parametrize("prompt", JSON_PROMPTS)
def test_i32_response_formats_give_valid_json_within_the_limit(client, smol_server, prompt):
    import ollama

    messages = [{"role": "user", "content": prompt + " Answer in JSON."}]
    for fmt, schema in (
        ({"type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA}}, CLOSED),
        ({"type": "json_object"}, {"type": "object"}),
    ):
        reply = client.chat.completions.create(
            model=MODEL, messages=messages, response_format=fmt, max_tokens=LIMIT, temperature=0
        )
        choice = reply.choices[0]
        assert choice.finish_reason == "stop", (prompt, fmt["type"], choice.message.content)
        jsonschema.validate(json.loads(choice.message.content), schema)

    olla = ollama.Client(host=smol_server.url, timeout=120)
    for fmt, schema in ((SCHEMA, CLOSED), ("json", {"type": "object"})):
        r = olla.chat(
            model=MODEL, messages=messages, format=fmt, options={"temperature": 0, "num_predict": LIMIT}
        )
        assert r.done_reason == "stop", (prompt, fmt, r.message.content)
        jsonschema.validate(json.loads(r.message.content), schema)


def test_i32_a_cut_json_reply_says_length_and_is_never_valid(client, smol_server):
    import ollama
    from openai import LengthFinishReasonError
    from pydantic import BaseModel

    messages = [{"role": "user", "content": PROMPTS[1] + " Answer in JSON."}]
    fmt = {"type": "json_schema", "json_schema": {"name": "answer", "schema": SCHEMA}}
    reply = client.chat.completions.create(
        model=MODEL, messages=messages, response_format=fmt, max_tokens=4, temperature=0
    )
    assert reply.choices[0].finish_reason == "length"
    with pytest.raises(json.JSONDecodeError):
        json.loads(reply.choices[0].message.content)

    class Answer(BaseModel):
        answer: str
        sure: bool

    with pytest.raises(LengthFinishReasonError):
        client.chat.completions.parse(model=MODEL, messages=messages, response_format=Answer, max_tokens=4)

    r = ollama.Client(host=smol_server.url, timeout=120).chat(
        model=MODEL, messages=messages, format=SCHEMA, options={"temperature": 0, "num_predict": 4}
    )
    assert r.done_reason == "length"
    with pytest.raises(json.JSONDecodeError):
        json.loads(r.message.content)
