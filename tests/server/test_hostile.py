"""Malformed and hostile requests: each gets the right status and an error in its API's own shape
with a message that says what was wrong, and the server still answers afterwards.

The guarded server has an API key, a 64 KiB body limit, a 2048-token context, a queue of two and
one CORS origin; a scripted model that never stops talking is there to be cut off.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from tests.server.conftest import TOOLS, write_loop_model
from tests.support.slot_server import until
from tests.ui.scripted_gguf import CHATML, streaming_script, write_scripted_gguf

KEY = "sekret-key"
AUTH = {"Authorization": f"Bearer {KEY}"}
ORIGIN = "http://allowed.example"
LIMIT = 64 * 1024
OK_CHAT = {"model": "loop-hermes", "messages": [{"role": "user", "content": "hi"}], "tools": TOOLS}
OK_MSG = {"model": "loop-hermes", "max_tokens": 16, "messages": [{"role": "user", "content": "hi"}]}
OK_OLLAMA = {"model": "loop-hermes", "stream": False, "messages": [{"role": "user", "content": "hi"}]}


@pytest.fixture(scope="module")
def guarded(tmp_path_factory) -> Iterator[Any]:
    from app.server import ApiServer, ServerConfig

    folder = tmp_path_factory.mktemp("guarded")
    loop = write_loop_model(folder)
    talker = write_scripted_gguf(
        folder / "talker.gguf",
        chat_template=CHATML,
        script=streaming_script(),
        default_next="a",
        name="talker",
    )
    server = ApiServer(
        ServerConfig(
            port=0,
            models=[str(loop), str(talker)],
            use_library=False,
            api_key=KEY,
            max_body_bytes=LIMIT,
            n_ctx=2048,
            queue_size=2,
            n_threads=1,
            cors_origins=[ORIGIN],
            max_tokens_limit=4096,
        )
    )
    server.start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def http(guarded) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=guarded.url, timeout=60) as client:
        yield client


def chat(**changes) -> dict:
    return {**OK_CHAT, **changes}


def msg(**changes) -> dict:
    return {**OK_MSG, **changes}


def deep(n: int) -> bytes:
    return b'{"messages": ' + b"[" * n + b"]" * n + b"}"


@dataclass
class Case:
    name: str
    path: str
    body: Any  # dict -> JSON; bytes as is; None -> no body
    status: int
    says: str  # a fragment the error message must contain
    method: str = "POST"
    headers: dict[str, str] = field(default_factory=dict)
    auth: bool = True


CASES = [
    Case(
        "broken JSON (OpenAI)", "/v1/chat/completions", b'{"model": "x", "messages": [', 400, "not valid JSON"
    ),
    Case("broken JSON (Anthropic)", "/v1/messages", b"{'single': 'quotes'}", 400, "not valid JSON"),
    Case("broken JSON (Ollama)", "/api/chat", b"{,}", 400, "not valid JSON"),
    Case("body is an array", "/v1/chat/completions", b"[1, 2]", 400, "must be a JSON object"),
    Case("empty body", "/v1/messages", b"", 400, "empty"),
    Case("not UTF-8", "/v1/chat/completions", b'{"model": "\xff\xfe"}', 400, "UTF-8"),
    Case("nested too deeply", "/v1/chat/completions", deep(30000), 400, "nested"),
    Case(
        "messages not an array", "/v1/chat/completions", chat(messages="hi"), 400, "messages must be an array"
    ),
    Case("no messages", "/v1/chat/completions", chat(messages=[]), 400, "at least one message"),
    Case(
        "unknown role",
        "/v1/chat/completions",
        chat(messages=[{"role": "wizard", "content": "x"}]),
        400,
        "'wizard'",
    ),
    Case(
        "content is a number",
        "/v1/chat/completions",
        chat(messages=[{"role": "user", "content": 5}]),
        400,
        "content must be a string",
    ),
    Case(
        "unknown content part",
        "/v1/chat/completions",
        chat(messages=[{"role": "user", "content": [{"type": "hologram"}]}]),
        400,
        "unknown type",
    ),
    Case(
        "image part whose data URL is not an image",
        "/v1/chat/completions",
        chat(messages=[{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "data:,"}}]}]),
        400,
        "not an image",
    ),
    Case(
        "tool result without a call (OpenAI)",
        "/v1/chat/completions",
        chat(
            messages=[
                {"role": "user", "content": "hi"},
                {"role": "tool", "tool_call_id": "call_1", "content": "x"},
            ]
        ),
        400,
        "no assistant message",
    ),
    Case(
        "tool_result without tool_use (Anthropic)",
        "/v1/messages",
        msg(
            messages=[
                {
                    "role": "user",
                    "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "x"}],
                }
            ]
        ),
        400,
        "no earlier",
    ),
    Case(
        "tool result without a call (Ollama)",
        "/api/chat",
        {**OK_OLLAMA, "messages": [{"role": "user", "content": "hi"}, {"role": "tool", "content": "x"}]},
        400,
        "tool result",
    ),
    Case(
        "call arguments not JSON",
        "/v1/chat/completions",
        chat(
            messages=[
                {"role": "user", "content": "hi"},
                {
                    "role": "assistant",
                    "tool_calls": [
                        {
                            "id": "c1",
                            "type": "function",
                            "function": {"name": "get_weather", "arguments": "{oops"},
                        }
                    ],
                },
            ]
        ),
        400,
        "not valid JSON",
    ),
    Case("tools is a string", "/v1/chat/completions", chat(tools="all"), 400, "tools must be an array"),
    Case(
        "unknown tool type",
        "/v1/chat/completions",
        chat(tools=[{"type": "retrieval"}]),
        400,
        "only 'function'",
    ),
    Case(
        "bad tool name",
        "/v1/chat/completions",
        chat(tools=[{"type": "function", "function": {"name": "rm -rf /"}}]),
        400,
        "not a valid tool name",
    ),
    Case(
        "named tool not declared",
        "/v1/chat/completions",
        chat(tool_choice={"type": "function", "function": {"name": "launch"}}),
        400,
        "'launch'",
    ),
    Case("tool_choice a number", "/v1/chat/completions", chat(tool_choice=3), 400, "tool_choice must be"),
    Case(
        "required without tools",
        "/v1/chat/completions",
        chat(tools=None, tool_choice="required"),
        400,
        "needs tools",
    ),
    Case(
        "Anthropic undeclared tool",
        "/v1/messages",
        msg(tool_choice={"type": "tool", "name": "launch"}),
        400,
        "'launch'",
    ),
    Case(
        "Anthropic server tool",
        "/v1/messages",
        msg(tools=[{"type": "web_search_20250305", "name": "w"}]),
        400,
        "server tool",
    ),
    Case("max_tokens zero", "/v1/chat/completions", chat(max_tokens=0), 400, "at least 1"),
    Case("max_tokens past the bound", "/v1/chat/completions", chat(max_tokens=10**9), 400, "at most 4096"),
    Case("max_tokens a string", "/v1/chat/completions", chat(max_tokens="many"), 400, "must be an integer"),
    Case("temperature out of range", "/v1/chat/completions", chat(temperature=7), 400, "between"),
    Case("stream not a boolean", "/v1/chat/completions", chat(stream="yes"), 400, "true or false"),
    Case("n past the bound", "/v1/chat/completions", chat(n=17), 400, "n must be at most 16"),
    Case("n zero", "/v1/chat/completions", chat(n=0), 400, "n must be at least 1"),
    Case(
        "bad response_format",
        "/v1/chat/completions",
        chat(response_format={"type": "xml"}),
        400,
        "response_format",
    ),
    Case(
        "unschemable response schema",
        "/v1/chat/completions",
        chat(
            tools=None,
            response_format={"type": "json_schema", "json_schema": {"schema": {"$ref": "#/nowhere"}}},
        ),
        400,
        "constraint",
    ),
    Case(
        "Anthropic without max_tokens",
        "/v1/messages",
        {"model": "loop-hermes", "messages": [{"role": "user", "content": "hi"}]},
        400,
        "max_tokens is required",
    ),
    Case(
        "Anthropic system role in messages",
        "/v1/messages",
        msg(messages=[{"role": "system", "content": "x"}]),
        400,
        "top-level system",
    ),
    Case(
        "context overflow",
        "/v1/chat/completions",
        chat(messages=[{"role": "user", "content": "x" * 9000}]),
        400,
        "context holds",
    ),
    Case(
        "context overflow, streamed",
        "/v1/chat/completions",
        chat(stream=True, messages=[{"role": "user", "content": "x" * 9000}]),
        400,
        "context holds",
    ),
    Case(
        "context overflow (Anthropic stream)",
        "/v1/messages",
        msg(stream=True, messages=[{"role": "user", "content": "x" * 9000}]),
        400,
        "context holds",
    ),
    Case("unknown model", "/v1/chat/completions", chat(model="gpt-17"), 404, "loop-hermes"),
    Case("unknown model (Ollama)", "/api/chat", {**OK_OLLAMA, "model": "llama9"}, 404, "available models"),
    Case("huge body", "/v1/chat/completions", b'{"x": "' + b"a" * (LIMIT * 2) + b'"}', 413, "limit"),
    Case("foreign Host", "/v1/chat/completions", chat(), 403, "Host", headers={"Host": "evil.example:8453"}),
    Case(
        "rebinding Host without port",
        "/v1/models",
        None,
        403,
        "Host",
        method="GET",
        headers={"Host": "attacker.test"},
    ),
    Case(
        "web origin not allowed",
        "/v1/chat/completions",
        chat(),
        403,
        "origin",
        headers={"Origin": "http://evil.example"},
    ),
    Case("missing API key", "/v1/chat/completions", chat(), 401, "API key is required", auth=False),
    Case(
        "wrong API key", "/v1/messages", msg(), 401, "not valid", auth=False, headers={"x-api-key": "guess"}
    ),
    Case(
        "wrong bearer (Ollama)",
        "/api/tags",
        None,
        401,
        "not valid",
        method="GET",
        auth=False,
        headers={"Authorization": "Bearer nope"},
    ),
    Case("GET on a POST endpoint", "/v1/chat/completions", None, 405, "not allowed", method="GET"),
    Case("no such endpoint", "/v1/engines/davinci", None, 404, "no endpoint", method="GET"),
]


def check_shape(path: str, data: dict) -> str:
    """The error's message, after checking the API's error shape."""
    if path.startswith("/v1/messages"):
        assert data["type"] == "error" and isinstance(data["error"]["type"], str)
        return data["error"]["message"]
    if path.startswith("/api/") and not path.startswith(("/api/v1/", "/api/v0/")):  # Ollama's
        assert set(data) == {"error"} and isinstance(data["error"], str)
        return data["error"]
    assert isinstance(data["error"]["type"], str) and "code" in data["error"] and "param" in data["error"]
    return data["error"]["message"]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_hostile_request(guarded, http, case):
    headers = {**(AUTH if case.auth else {}), **case.headers}
    kwargs: dict[str, Any] = {"headers": headers}
    if isinstance(case.body, bytes):
        kwargs["content"] = case.body
    elif case.body is not None:
        kwargs["content"] = json.dumps(case.body).encode()
    if case.body is not None:
        headers.setdefault("Content-Type", "application/json")
    last = guarded.log[-1] if guarded.log else None
    r = http.request(case.method, case.path, **kwargs)
    assert r.status_code == case.status, r.text
    message = check_shape(case.path, r.json())
    assert case.says.lower() in message.lower(), message
    # the server's log (the Server page, serve's console) has the request as failed, and why
    assert until(lambda: guarded.log and guarded.log[-1] is not last), "the request was not logged"
    entry = guarded.log[-1]
    assert (entry.method, entry.path, entry.status) == (case.method, case.path, case.status)
    assert entry.error == message
    if case.name.startswith("unknown model"):  # the model it asked for, though there is none
        assert entry.model == case.body["model"]


def test_chunked_body_past_the_limit(http):
    def body():
        yield b'{"model": "loop-hermes", "messages": "'
        for _ in range(8):
            yield b"a" * (LIMIT // 4)
        yield b'"}'

    r = http.post("/v1/chat/completions", content=body(), headers=AUTH)
    assert r.status_code == 413 and "limit" in check_shape("/v1", r.json())


def test_allowed_origin_gets_cors_and_preflight(http):
    pre = http.options(
        "/v1/chat/completions", headers={"Origin": ORIGIN, "Access-Control-Request-Method": "POST"}
    )
    assert pre.status_code == 204 and pre.headers["access-control-allow-origin"] == ORIGIN
    r = http.post("/v1/chat/completions", json=chat(max_tokens=4), headers={**AUTH, "Origin": ORIGIN})
    assert r.status_code == 200 and r.headers["access-control-allow-origin"] == ORIGIN


def test_disconnect_mid_stream_cancels_the_generation(guarded, http):
    body = {
        "model": "talker",
        "max_tokens": 4000,
        "stream": True,
        "messages": [{"role": "user", "content": "talk"}],
    }
    with http.stream("POST", "/v1/chat/completions", json=body, headers=AUTH) as r:
        assert r.status_code == 200
        lines = r.iter_lines()
        got = [next(lines) for _ in range(6)]
        assert any('"content"' in g for g in got)
    # the queue is serial: this answer comes only after the cut stream's generation has ended
    after = http.post("/v1/chat/completions", json=chat(max_tokens=4), headers=AUTH)
    assert after.status_code == 200
    cut = next(e for e in reversed(guarded.finished) if e.finish_reason == "cancelled")
    assert cut.completion_tokens < 4000
    left = next(e for e in reversed(guarded.log) if e.status == 499)
    assert left.path == "/v1/chat/completions" and left.model == "talker"
    assert left.error == "the client closed the connection before the response ended"


def test_twenty_concurrent_clients(guarded, http):
    results: list[httpx.Response] = []
    lock = threading.Lock()
    body = {"model": "talker", "max_tokens": 300, "messages": [{"role": "user", "content": "talk"}]}
    go = threading.Event()

    def client():
        with httpx.Client(base_url=guarded.url, timeout=120) as c:
            go.wait()
            r = c.post("/v1/chat/completions", json=body, headers=AUTH)
        with lock:
            results.append(r)

    threads = [threading.Thread(target=client) for _ in range(20)]
    for t in threads:
        t.start()
    go.set()
    for t in threads:
        t.join(120)
    assert len(results) == 20
    ok = [r for r in results if r.status_code == 200]
    busy = [r for r in results if r.status_code == 429]
    assert len(ok) + len(busy) == 20 and ok and busy
    for r in busy:
        assert int(r.headers["Retry-After"]) >= 1
        assert "busy" in check_shape("/v1", r.json())
    for r in ok:
        assert r.json()["choices"][0]["finish_reason"] == "length"


def test_still_answers_after_all_that(http):
    for path, body in (
        ("/v1/chat/completions", chat(max_tokens=8)),
        ("/v1/messages", msg()),
        ("/api/chat", OK_OLLAMA),
    ):
        r = http.post(path, json=body, headers={"x-api-key": KEY})
        assert r.status_code == 200, r.text
