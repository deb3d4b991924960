"""Issue 32 on the API server, through the official clients against a real server on a loopback
port serving scripted GGUFs (real templates; what each model writes is fixed by its script):

* a reply's calls end: at most ``max_tool_calls`` (default ``DEFAULT_MAX_CALLS``, one without
  ``parallel_tool_calls``), a repeat of one of its own calls ends the list, never a duplicate,
  under ``required`` (the grammar) and ``auto`` (the chat loop), streamed and not;
* a reply that repeats a call the conversation already answered says so (header and field);
* a call the token limit cut never reaches a client as text (OpenAI, Anthropic, Ollama);
* a response format's objects are closed: no property the schema did not ask for;
* what the server does not serve is refused, never ignored (legacy function calling is served:
  ``tests/server/test_legacy_functions.py``); a tool's null
  description is no description; ``Retry-After`` is one job's time, not the queue's.
"""

from __future__ import annotations

import json
import math
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.engine.chat import DEFAULT_MAX_CALLS
from tests.server.conftest import BOUNDED_TOOLS as TOOLS
from tests.server.conftest import FAMILIES, TEMPLATES, WEATHER, call_text
from tests.ui.scripted_gguf import write_scripted_gguf

# Held to a call (``required``, a named tool), the scripted model is turned from its script and
# samples among what the grammar allows: its Hermes calls open with the ``<tool_call>`` control
# token, never with the script's one-token call. One call of at most 12 characters is under 160
# tokens even written byte by byte (escapes included), so a forced request leaves room for every
# call the reply may hold; a smaller limit cuts an unlucky reply of several byte-by-byte calls.
FORCED_ROOM = DEFAULT_MAX_CALLS * 160
CITIES = ["Oslo", "Bergen", "Tromso", "Bodo", "Alta", "Molde"]
USER = [{"role": "user", "content": "What is the weather in these cities?"}]
REQUIRED = "required"
NAMED = {"type": "function", "function": {"name": "get_weather"}}
# One user token: the reply is a Hermes call cut in the middle of its arguments.
CUT = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Par'
BEFORE_CUT = "Let me look. "


def _hermes(folder: Path, name: str, tokens: list[str], script: dict[str, str], first: str) -> Path:
    spec = FAMILIES["hermes"]
    return write_scripted_gguf(
        folder / f"{name}.gguf",
        chat_template=(TEMPLATES / spec.template).read_text(encoding="utf-8"),
        control_tokens=spec.control,
        user_tokens=tokens,
        eos=spec.eos,
        script=script,
        default_next=first,
        name=name,
    )


def _calls(cities: list[str]) -> list[str]:
    """One token per call, each after the first on a line of its own."""
    return [
        ("\n" if i else "") + call_text("hermes", [("get_weather", {"city": c})])
        for i, c in enumerate(cities)
    ]


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("call-lists")
    distinct = _calls(CITIES)  # a call for each city, then the last one again and again
    again = _calls(["Oslo", "Oslo"])  # the same call, again and again
    return {
        "cities": _hermes(
            folder,
            "cities",
            distinct,
            {
                **dict(zip(distinct, distinct[1:], strict=False)),
                distinct[-1]: distinct[-1],
            },
            distinct[0],
        ),
        "again": _hermes(folder, "again", again, {again[0]: again[1], again[1]: again[1]}, again[0]),
        "cut": _hermes(folder, "cut", [BEFORE_CUT, CUT], {BEFORE_CUT: CUT, CUT: CUT}, BEFORE_CUT),
    }


@pytest.fixture(scope="module")
def server(models) -> Iterator[Any]:
    from app.server import ApiServer, ServerConfig

    srv = ApiServer(
        ServerConfig(
            port=0,
            models=[str(p) for p in models.values()],
            use_library=False,
            n_ctx=4096,
            n_threads=1,
            queue_size=8,
        )
    )
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def openai_client(server):
    from openai import OpenAI

    return OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60)


def _cities(calls: list[tuple[str, dict]]) -> list[str]:
    assert all(name == "get_weather" for name, _ in calls)
    return [args["city"] for _, args in calls]


def _distinct(calls: list[tuple[str, dict]]) -> bool:
    keys = [(name, json.dumps(args, sort_keys=True)) for name, args in calls]
    return len(set(keys)) == len(keys)


def _plain(client, **kw) -> tuple[list[tuple[str, dict]], str]:
    r = client.chat.completions.create(messages=USER, tools=TOOLS, max_tokens=FORCED_ROOM, **kw)
    choice = r.choices[0]
    calls = [(c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls or []]
    return calls, choice.finish_reason


def _streamed(client, **kw) -> tuple[list[tuple[str, dict]], str | None]:
    seen: dict[int, dict] = {}
    finish = None
    for chunk in client.chat.completions.create(
        messages=USER, tools=TOOLS, max_tokens=FORCED_ROOM, stream=True, **kw
    ):
        if not chunk.choices:
            continue
        for tc in chunk.choices[0].delta.tool_calls or []:
            entry = seen.setdefault(tc.index, {"name": tc.function.name, "args": ""})
            entry["args"] += tc.function.arguments or ""
        finish = chunk.choices[0].finish_reason or finish
    return [(v["name"], json.loads(v["args"])) for _, v in sorted(seen.items())], finish


@pytest.mark.parametrize("choice", ["auto", REQUIRED, NAMED], ids=["auto", "required", "named"])
@pytest.mark.parametrize("read", [_plain, _streamed], ids=["plain", "streamed"])
def test_i32_a_reply_holds_at_most_max_calls_distinct_calls(openai_client, choice, read):
    """The model writes a call for each of six cities and would go on: the reply stops at the bound."""
    for extra, most in (
        ({}, DEFAULT_MAX_CALLS),
        ({"extra_body": {"max_tool_calls": 2}}, 2),
        ({"parallel_tool_calls": False}, 1),
    ):
        calls, finish = read(openai_client, model="cities", tool_choice=choice, **extra)
        assert finish == "tool_calls", (choice, extra, calls)
        assert 1 <= len(calls) <= most and _distinct(calls), (choice, extra, calls)
        if choice == "auto":  # free decoding: the script decides, every call is the next city
            assert _cities(calls) == CITIES[:most]
        if choice == NAMED:
            _cities(calls)


@pytest.mark.parametrize("choice", ["auto", REQUIRED, NAMED], ids=["auto", "required", "named"])
@pytest.mark.parametrize("read", [_plain, _streamed], ids=["plain", "streamed"])
def test_i32_a_repeated_call_ends_the_list_without_the_duplicate(openai_client, choice, read):
    calls, finish = read(openai_client, model="again", tool_choice=choice)
    assert finish == "tool_calls"
    assert _distinct(calls) and 1 <= len(calls) <= DEFAULT_MAX_CALLS
    if choice == "auto":
        assert _cities(calls) == ["Oslo"]


def test_i32_max_tool_calls_is_checked(server):
    for bad in (0, -1, 1000, "two", True):
        r = httpx.post(
            server.url + "/v1/chat/completions",
            json={"model": "cities", "messages": USER, "tools": TOOLS, "max_tool_calls": bad},
            timeout=60,
        )
        assert r.status_code == 400 and "max_tool_calls" in r.text, bad


def _answered(city: str) -> list[dict]:
    return [
        USER[0],
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_earlier01",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": json.dumps({"city": city})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_earlier01", "content": "sunny"},
    ]


def test_i32_a_reply_that_repeats_an_answered_call_says_so(openai_client):
    from app.server._openai import REPEATED_CALLS_HEADER

    raw = openai_client.chat.completions.with_raw_response.create(
        model="again", messages=_answered("Oslo"), tools=TOOLS
    )
    reply = raw.parse()
    assert [c.function.name for c in reply.choices[0].message.tool_calls] == ["get_weather"]
    assert raw.headers[REPEATED_CALLS_HEADER] == "1"
    assert reply.model_extra["repeated_tool_calls"] == [reply.choices[0].message.tool_calls[0].id]

    streamed = [
        c.model_extra.get("repeated_tool_calls")
        for c in openai_client.chat.completions.create(
            model="again", messages=_answered("Oslo"), tools=TOOLS, stream=True
        )
    ]
    assert [r for r in streamed if r] and len([r for r in streamed if r]) == 1

    # an answered call with other arguments is no repeat
    other = openai_client.chat.completions.with_raw_response.create(
        model="again", messages=_answered("Paris"), tools=TOOLS
    )
    assert REPEATED_CALLS_HEADER not in other.headers
    assert "repeated_tool_calls" not in (other.parse().model_extra or {})


# -- a call cut by the token limit -------------------------------------------------------------


def test_i32_a_cut_call_never_reaches_an_openai_client_as_text(openai_client):
    r = openai_client.chat.completions.create(model="cut", messages=USER, tools=TOOLS, max_tokens=2)
    choice = r.choices[0]
    assert choice.finish_reason == "length"
    assert choice.message.content == BEFORE_CUT and not choice.message.tool_calls
    text, finish = "", None
    for chunk in openai_client.chat.completions.create(
        model="cut", messages=USER, tools=TOOLS, max_tokens=2, stream=True
    ):
        if chunk.choices:
            text += chunk.choices[0].delta.content or ""
            assert not chunk.choices[0].delta.tool_calls
            finish = chunk.choices[0].finish_reason or finish
    assert (text, finish) == (BEFORE_CUT, "length")


def test_i32_a_cut_call_never_reaches_an_anthropic_client_as_text(server):
    from anthropic import Anthropic

    client = Anthropic(base_url=server.url, api_key="unused", max_retries=0, timeout=60)
    tools = [
        {"name": t["function"]["name"], "description": "d", "input_schema": t["function"]["parameters"]}
        for t in TOOLS
    ]
    r = client.messages.create(model="cut", max_tokens=2, messages=USER, tools=tools)
    assert r.stop_reason == "max_tokens"
    assert [(b.type, b.text) for b in r.content] == [("text", BEFORE_CUT)]
    with client.messages.stream(model="cut", max_tokens=2, messages=USER, tools=tools) as stream:
        final = stream.get_final_message()
    assert final.stop_reason == "max_tokens"
    assert [(b.type, b.text) for b in final.content] == [("text", BEFORE_CUT)]


def test_i32_a_cut_call_never_reaches_an_ollama_client_as_text(server):
    import ollama

    client = ollama.Client(host=server.url, timeout=60)
    r = client.chat(model="cut", messages=USER, tools=TOOLS, options={"num_predict": 2})
    assert r.done_reason == "length"
    assert r.message.content == BEFORE_CUT and not r.message.tool_calls
    parts = list(
        client.chat(model="cut", messages=USER, tools=TOOLS, options={"num_predict": 2}, stream=True)
    )
    assert "".join(p.message.content or "" for p in parts) == BEFORE_CUT
    assert parts[-1].done_reason == "length"


# -- requests -----------------------------------------------------------------------------------


def test_i32_a_null_tool_description_is_no_description(openai_client, server):
    tool = {"type": "function", "function": {**WEATHER["function"], "description": None}}
    r = openai_client.chat.completions.create(
        model="cities", messages=USER, tools=[tool], extra_body={"max_tool_calls": 1}
    )
    assert r.choices[0].finish_reason == "tool_calls"
    assert [c.function.name for c in r.choices[0].message.tool_calls] == ["get_weather"]
    r = httpx.post(
        server.url + "/v1/messages",
        json={
            "model": "cities",
            "max_tokens": 200,
            "messages": USER,
            "tools": [
                {
                    "name": "get_weather",
                    "description": None,
                    "input_schema": WEATHER["function"]["parameters"],
                }
            ],
        },
        timeout=60,
    )
    assert r.status_code == 200 and r.json()["content"][0]["type"] == "tool_use"


@pytest.mark.parametrize(
    ("extra", "param"),
    [
        ({"top_logprobs": 2}, "top_logprobs"),  # (without logprobs: tests/server/test_logprobs.py)
        ({"modalities": ["text", "audio"]}, "modalities"),
        ({"audio": {"voice": "alloy", "format": "wav"}}, "audio"),
        ({"web_search_options": {}}, "web_search_options"),
    ],
)
def test_i32_unserved_options_are_refused_never_ignored(server, extra, param):
    r = httpx.post(
        server.url + "/v1/chat/completions", json={"model": "cities", "messages": USER, **extra}, timeout=60
    )
    assert r.status_code == 400, r.text
    err = r.json()["error"]
    assert err["param"] == param and param in err["message"]


def test_i32_logprobs_false_is_served(openai_client):
    r = openai_client.chat.completions.create(
        model="cities", messages=USER, tools=TOOLS, logprobs=False, extra_body={"max_tool_calls": 1}
    )
    assert r.choices[0].finish_reason == "tool_calls"


def test_i32_retry_after_is_one_jobs_time_not_the_queues():
    from app.engine.host import EngineHost, Job
    from app.server._engine import submit_job
    from app.server._errors import ApiError
    from tests.support.host_hold import hold

    host = EngineHost(queue_size=2)
    host.start()
    release = hold(host)
    try:
        ran: list[int] = []
        for i in range(2):
            submit_job(host, Job(run=lambda _h, _m, i=i: ran.append(i)))
        with pytest.raises(ApiError) as busy:
            submit_job(host, Job(run=lambda _h, _m: ran.append(99)))
        assert busy.value.status == 429
        # a place frees when the running job ends: one job's time, not the whole queue's
        assert int(busy.value.headers["Retry-After"]) == max(1, math.ceil(host.avg_job_s))
    finally:
        release.set()
        done = threading.Event()
        host.submit(Job(run=lambda _h, _m: done.set()), bounded=False)
        assert done.wait(30)
        host.stop()
    assert ran == [0, 1]


# -- response formats: closed objects ------------------------------------------------------------

_CHATML = (
    "{%- for m in messages -%}"
    "{{ '<s>' + m['role'] + '\\n' + (m['content'] or '') + '</s>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<s>assistant\\n' }}{%- endif -%}"
)


LOOSE = {  # properties listed, nothing said of others
    "type": "object",
    "properties": {"ok": {"type": "boolean"}, "mood": {"enum": ["calm", "busy"]}},
    "required": ["ok"],
}


def test_i32_a_response_schema_without_additional_properties_is_closed(tmp_path):
    """The grammar refuses a property the schema did not list (before: any key could follow)."""
    from app.engine.constraints import compile_constraint
    from app.engine.errors import ConstraintError
    from app.engine.llm import load_model
    from app.engine.models.tiny import write_tiny_gguf

    model = load_model(write_tiny_gguf(tmp_path / "tiny.gguf", seed=5), n_ctx=1024, n_threads=1)
    try:
        rf = {"type": "json_schema", "json_schema": {"name": "r", "schema": LOOSE}}
        c = compile_constraint(model, family=None, tools=None, tool_choice="auto", response_format=rf)
        assert c.after('{"ok": true, "mood": "calm"')
        with pytest.raises(ConstraintError):
            c.after('{"ok": true, "weather"')
        # a schema that asks for more properties gets them
        open_rf = {"type": "json_schema", "json_schema": {"schema": {**LOOSE, "additionalProperties": True}}}
        c = compile_constraint(model, family=None, tools=None, tool_choice="auto", response_format=open_rf)
        assert c.after('{"ok": true, "weather"')
    finally:
        model.close()


def test_i32_random_weights_write_only_the_schemas_properties(tmp_path):
    """A random-weight model (only the grammar decides) through OpenAI's response_format and
    Ollama's format: a reply that stops is valid JSON with the schema's properties only; one the
    limit cuts says ``length``."""
    import jsonschema
    import ollama
    from openai import OpenAI

    from app.engine.models.tiny import write_tiny_gguf
    from app.server import ApiServer, ServerConfig

    path = write_tiny_gguf(tmp_path / "random.gguf", chat_template=_CHATML, seed=11)
    srv = ApiServer(ServerConfig(port=0, models=[str(path)], use_library=False, n_ctx=2048, n_threads=1))
    srv.start()
    try:
        client = OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0, timeout=60)
        olla = ollama.Client(host=srv.url, timeout=60)
        stopped = 0
        for seed in range(6):
            r = client.chat.completions.create(
                model="random",
                messages=USER,
                max_tokens=120,
                seed=seed,
                temperature=1.0,
                response_format={"type": "json_schema", "json_schema": {"name": "r", "schema": LOOSE}},
            )
            o = olla.chat(
                model="random", messages=USER, format=LOOSE, options={"num_predict": 120, "seed": seed}
            )
            for finish, text in (
                (r.choices[0].finish_reason, r.choices[0].message.content),
                (o.done_reason, o.message.content),
            ):
                if finish == "stop":
                    stopped += 1
                    jsonschema.validate(json.loads(text), {**LOOSE, "additionalProperties": False})
                else:
                    assert finish == "length"
        assert stopped
    finally:
        srv.stop()


def test_i32_the_tool_choice_header_serves_clients_without_one(server):
    """``X-Callisto-Tool-Choice: once``: a call first, then (a tool result after the last user
    message) no call; the body's ``tool_choice`` wins; an unknown value is a 400."""
    import ollama
    from openai import OpenAI

    client = OpenAI(
        base_url=server.url + "/v1",
        api_key="unused",
        max_retries=0,
        timeout=60,
        default_headers={"X-Callisto-Tool-Choice": "once"},
    )
    first = client.chat.completions.create(model="cut", messages=USER, tools=TOOLS, max_tokens=FORCED_ROOM)
    assert first.choices[0].finish_reason == "tool_calls"  # the script alone would write text first
    after = client.chat.completions.create(
        model="cities", messages=_answered("Oslo"), tools=TOOLS, max_tokens=8
    )
    assert not after.choices[0].message.tool_calls
    body_wins = client.chat.completions.create(
        model="cities",
        messages=_answered("Oslo"),
        tools=TOOLS,
        tool_choice="required",
        max_tokens=FORCED_ROOM,
    )
    assert body_wins.choices[0].finish_reason == "tool_calls"

    # The ollama client sends a property's type, description, items and enum only: it drops
    # ``maxLength``, and an unbounded string may run past any limit. An enum bounds the argument.
    enum_tools = [
        {
            **t,
            "function": {
                **t["function"],
                "parameters": {
                    "type": "object",
                    "properties": {arg: {"type": "string", "enum": CITIES[:3]}},
                    "required": [arg],
                },
            },
        }
        for t in TOOLS
        for arg in t["function"]["parameters"]["required"]
    ]
    olla = ollama.Client(host=server.url, timeout=60, headers={"X-Callisto-Tool-Choice": "get_time"})
    r = olla.chat(model="cities", messages=USER, tools=enum_tools, options={"num_predict": FORCED_ROOM})
    assert r.message.tool_calls and {c.function.name for c in r.message.tool_calls} == {"get_time"}

    bad = httpx.post(
        server.url + "/v1/chat/completions",
        json={"model": "cities", "messages": USER, "tools": TOOLS},
        headers={"X-Callisto-Tool-Choice": "always"},
        timeout=60,
    )
    assert bad.status_code == 400 and "X-Callisto-Tool-Choice" in bad.text


def test_i32_a_json_object_reply_is_bounded_so_that_it_closes(tmp_path):
    """``json_object`` (and Ollama's ``json``) hold the reply to any object within bounds: nesting,
    width and string length, so a model that goes on nesting or writing is made to close."""
    from app.engine.constraints import compile_constraint
    from app.engine.constraints.json_object import JSON_OBJECT_DEPTH, JSON_OBJECT_WIDTH, JSON_STRING_CHARS
    from app.engine.errors import ConstraintError
    from app.engine.llm import load_model
    from app.engine.models.tiny import write_tiny_gguf
    from app.server._common import json_response_format
    from app.server._ollama import _format
    from app.server._openai import _response_format

    assert _response_format({"type": "json_object"}) == _format("json") == json_response_format(None)
    model = load_model(write_tiny_gguf(tmp_path / "tiny.gguf", seed=5), n_ctx=1024, n_threads=1)
    try:
        rf = json_response_format(None)
        c = compile_constraint(model, family=None, tools=None, tool_choice="auto", response_format=rf)
        deepest = '{"a": ' * JSON_OBJECT_DEPTH
        assert c.after(deepest + "1")
        with pytest.raises(ConstraintError):
            c.after(deepest + "{")
        assert c.after('{"s": "' + "x" * JSON_STRING_CHARS)
        with pytest.raises(ConstraintError):
            c.after('{"s": "' + "x" * (JSON_STRING_CHARS + 1))
        wide = "{" + ", ".join(f'"k{i}": {i}' for i in range(JSON_OBJECT_WIDTH))
        assert c.after(wide)
        with pytest.raises(ConstraintError):
            c.after(wide + ', "more"')
        assert c.after('{"list": [1, 2.5, "x", true, null, {"in": 0}]}')
    finally:
        model.close()
