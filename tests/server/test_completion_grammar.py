"""``/v1/completions`` holds its reply to the GBNF grammar a client sends (issue 28, U21): in
llama-server's ``grammar``, vLLM's ``structured_outputs.grammar`` / ``guided_grammar`` or SGLang's
``ebnf``, the fields Callisto's own remote client sends. So a remote session that parses in
Callisto and talks to another Callisto gets its forced call held there. The other structured
outputs those engines' clients send (a regex, a choice, a JSON Schema) hold it too, and a chat
reply.

The model has random weights: what it writes is the grammar's doing, not its own."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator

import httpx
import pytest

from app.engine.events import DoneEvent, ToolCallStartedEvent
from app.tools import Tool, ToolRegistry

HERMES_TEMPLATE = (
    "{%- if tools %}<|im_start|>system\nTools: {{ tools | tojson }}<|im_end|>\n{%- endif %}"
    "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}"
)
YES_NO = 'root ::= ("yes" | "no") " " [a-c]{2}'
ANSWER = re.compile(r"^(yes|no) [a-c]{2}$")
# a short city: the grammar closes the call whatever the random model writes inside it
CITY = {"type": "object", "properties": {"city": {"type": "string", "maxLength": 8}}, "required": ["city"]}


@pytest.fixture(scope="module")
def model_path(tmp_path_factory):
    from app.engine.models.tiny import write_tiny_gguf

    return write_tiny_gguf(
        tmp_path_factory.mktemp("grammar") / "random-hermes.gguf",
        chat_template=HERMES_TEMPLATE,
        control_tokens=["<s>", "</s>", "<|im_start|>", "<|im_end|>"],
        user_tokens=["<tool_call>", "</tool_call>"],
        bos="<s>",
        eos="<|im_end|>",
        seed=4,
    )


@pytest.fixture(scope="module")
def server(model_path) -> Iterator[object]:
    from app.server import ApiServer, ServerConfig

    srv = ApiServer(
        ServerConfig(port=0, models=[str(model_path)], use_library=False, n_ctx=2048, n_threads=1)
    )
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


def _complete(server, **fields) -> httpx.Response:
    body = {"model": "random-hermes", "prompt": "Say yes or no:", "max_tokens": 12, "temperature": 1.0}
    return httpx.post(server.url + "/v1/completions", json={**body, **fields}, timeout=120)


@pytest.mark.parametrize(
    "fields",
    [
        {"grammar": YES_NO},
        {"structured_outputs": {"grammar": YES_NO}},
        {"guided_grammar": YES_NO},
        {"ebnf": YES_NO},
        {
            "grammar": YES_NO,
            "structured_outputs": {"grammar": YES_NO},
            "guided_grammar": YES_NO,
            "ebnf": YES_NO,
        },
    ],
    ids=["grammar", "structured_outputs", "guided_grammar", "ebnf", "all-four"],
)
def test_each_grammar_field_holds_the_completion(server, fields):
    for seed in range(3):
        r = _complete(server, seed=seed, **fields)
        assert r.status_code == 200, r.text
        choice = r.json()["choices"][0]
        assert ANSWER.match(choice["text"]), choice
        assert choice["finish_reason"] == "stop"


def test_streamed_completions_are_held_too(server):
    with httpx.stream(
        "POST",
        server.url + "/v1/completions",
        json={
            "model": "random-hermes",
            "prompt": "Say:",
            "max_tokens": 12,
            "stream": True,
            "grammar": YES_NO,
        },
        timeout=120,
    ) as r:
        assert r.status_code == 200
        text = "".join(
            json.loads(line[6:])["choices"][0]["text"]
            for line in r.iter_lines()
            if line.startswith("data: {")
        )
    assert ANSWER.match(text), text


# what each structured output holds a random model's text to
SHORT = {**CITY, "additionalProperties": False}


@pytest.mark.parametrize(
    ("fields", "holds"),
    [
        ({"guided_regex": "(yes|no) [a-c]{2}"}, ANSWER.match),
        ({"structured_outputs": {"regex": "(yes|no) [a-c]{2}"}}, ANSWER.match),
        (
            {"guided_choice": ["yes", "no thanks", 'a "quoted" one']},
            {"yes", "no thanks", 'a "quoted" one'}.__contains__,
        ),
        ({"structured_outputs": {"choice": ["left", "right"]}}, {"left", "right"}.__contains__),
        ({"guided_json": SHORT}, lambda t: set(json.loads(t)) == {"city"}),
        ({"json_schema": SHORT}, lambda t: set(json.loads(t)) == {"city"}),
        ({"structured_outputs": {"json": json.dumps(SHORT)}}, lambda t: set(json.loads(t)) == {"city"}),
    ],
    ids=[
        "guided_regex",
        "outputs-regex",
        "guided_choice",
        "outputs-choice",
        "guided_json",
        "json_schema",
        "outputs-json",
    ],
)
def test_each_structured_output_holds_the_completion(server, fields, holds):
    """vLLM's, SGLang's and llama-server's other structured outputs: a regex, a choice, a JSON
    Schema, each as a grammar the random model's text is held to."""
    for seed in range(3):
        r = _complete(server, seed=seed, max_tokens=80, **fields)
        assert r.status_code == 200, r.text
        choice = r.json()["choices"][0]
        assert choice["finish_reason"] == "stop" and holds(choice["text"]), choice


def test_a_chat_reply_is_held_by_a_structured_output_too(server):
    """On /v1/chat/completions: a JSON Schema is a response format; a choice, a regex or a grammar
    holds the whole reply, so it takes no tools; beside response_format it is a 400."""
    chat = {"model": "random-hermes", "messages": [{"role": "user", "content": "Pick."}], "max_tokens": 80}
    url = server.url + "/v1/chat/completions"
    for seed in range(3):
        r = httpx.post(url, json={**chat, "seed": seed, "guided_choice": ["left", "right"]}, timeout=120)
        assert r.status_code == 200 and r.json()["choices"][0]["message"]["content"] in ("left", "right"), (
            r.text
        )
        r = httpx.post(url, json={**chat, "seed": seed, "guided_json": SHORT}, timeout=120)
        assert set(json.loads(r.json()["choices"][0]["message"]["content"])) == {"city"}, r.text
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": CITY}}]
    r = httpx.post(url, json={**chat, "guided_regex": "a+", "tools": tools}, timeout=60)
    assert r.status_code == 400 and "cannot be combined with tools" in r.json()["error"]["message"]
    r = httpx.post(
        url, json={**chat, "guided_regex": "a+", "tools": tools, "tool_choice": "none"}, timeout=120
    )
    assert r.status_code == 200 and set(r.json()["choices"][0]["message"]["content"]) == {"a"}, r.text
    r = httpx.post(
        url, json={**chat, "guided_json": SHORT, "response_format": {"type": "json_object"}}, timeout=60
    )
    assert r.status_code == 400 and r.json()["error"]["param"] == "guided_json"


@pytest.mark.parametrize(
    ("fields", "words"),
    [
        ({"grammar": 'root ::= ( "a"'}, "not valid GBNF"),
        ({"grammar": "x ::= [a]"}, "no 'root' rule"),
        ({"grammar": ""}, "non-empty GBNF"),
        ({"ebnf": 3}, "non-empty GBNF"),
        ({"grammar": YES_NO, "ebnf": 'root ::= "x"'}, "ask for different outputs"),
        ({"guided_json": {"type": "object"}, "guided_regex": "a+"}, "ask for different outputs"),
        (
            {"structured_outputs": {"structural_tag": {}}},
            "structured_outputs.structural_tag is not supported",
        ),
        ({"structured_outputs": "grammar"}, "structured_outputs must be an object"),
        ({"guided_regex": "(?=a)b"}, "guided_regex cannot be applied"),
        ({"guided_regex": ""}, "non-empty regular expression"),
        ({"guided_choice": []}, "non-empty array of non-empty strings"),
        ({"guided_choice": ["a", 3]}, "non-empty array of non-empty strings"),
        ({"guided_json": "{not json"}, "guided_json is not valid JSON"),
        ({"json_schema": [1]}, "json_schema must be a JSON Schema object"),
    ],
)
def test_a_grammar_the_server_cannot_hold_is_a_clear_400(server, fields, words):
    r = _complete(server, **fields)
    assert r.status_code == 400, r.text
    assert words in r.json()["error"]["message"]


def test_a_remote_session_parsing_in_callisto_gets_its_forced_call_held(server, model_path):
    """The remote client sends the forced call's grammar with the raw completion; the serving
    Callisto holds the random model to it, so the reply is a call, read by the session."""
    from app.engine.remote import Provider, RemoteChatSession

    for seed in range(3):
        registry = ToolRegistry()
        registry.register(
            Tool(
                name="get_weather", description="The weather.", parameters=CITY, handler=lambda city: "Sunny"
            )
        )
        session = RemoteChatSession(
            Provider(server.url, kind="openai"),
            "random-hermes",
            parser="callisto",
            template=str(model_path),
            tool_format="hermes",  # the template names no format; the model's tokens are Hermes's
            registry=registry,
            max_tokens=200,
            max_rounds=2,  # the first round's call runs; the second is cut by the round limit
            tool_choice="required",
            sampling={"temperature": 1.0, "seed": seed},
        )
        events = list(session.send("Weather in Oslo?"))
        calls = [e.call for e in events if isinstance(e, ToolCallStartedEvent)]
        assert calls and calls[0].name == "get_weather", [str(e)[:300] for e in events]
        assert isinstance(events[-1], DoneEvent)


def test_a_thinking_models_chat_reply_held_by_a_choice_is_the_choice(family_server):
    """Qwen 3's template and a model whose script reasons first: a grammar holds the reply from its
    first token, so the template's thinking is off unless the request asks for it."""
    r = httpx.post(
        family_server.url + "/v1/chat/completions",
        json={
            "model": "think-hermes",
            "messages": [{"role": "user", "content": "Yes or no?"}],
            "guided_choice": ["yes", "no"],
            "max_tokens": 40,
        },
        timeout=120,
    )
    assert r.status_code == 200, r.text
    message = r.json()["choices"][0]["message"]
    assert message["content"] in ("yes", "no") and not message.get("reasoning_content"), message
