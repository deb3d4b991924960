"""Every read of the remote client is bounded (N5, N20): bytes per line, bytes per reply, calls per
reply, bytes of one call's arguments, the tokens asked for (``max_tokens``), the time between pieces
of a reply and the time of a whole reply. A server past a bound gets one plain sentence, the reply
shown so far is kept, nothing it asked for is run, and the request is not sent again. Each case is
a real loopback server that misbehaves that way; none of them is waited out."""

from __future__ import annotations

import json
import threading

import pytest

from app.engine.events import DoneEvent, NoticeEvent, ReasoningEvent, TextEvent
from app.engine.remote import Provider, RemoteChatSession, RemoteError, fetch_props, list_models
from app.engine.remote._client import (
    MAX_CALL_ARGS_BYTES,
    MAX_CALLS,
    MAX_ERROR_CHARS,
    MAX_LINE_BYTES,
    MAX_MODEL_NAME_CHARS,
    MAX_MODELS,
    MAX_TOKENS_SLACK,
)
from tests.engine.remote.conftest import make_tools
from tests.engine.remote.misbehaving import MisbehavingServer, openai_chunk, sse

MIB = 1024 * 1024


def _session(url, *, kind="openai", max_tokens=32, tools=None, **provider):
    provider.setdefault("retry_backoff_s", 0.01)
    registry, dispatcher = (tools[0], tools[1]) if tools else (None, None)
    return RemoteChatSession(
        Provider(url, kind=kind, **provider),
        "m",
        parser="api",
        max_tokens=max_tokens,
        registry=registry,
        dispatcher=dispatcher,
    )


def _run(session):
    events = list(session.send("hello"))
    assert isinstance(events[-1], DoneEvent)
    assert sum(isinstance(e, DoneEvent) for e in events) == 1
    return events, events[-1]


def _text(events):
    return "".join(e.text for e in events if isinstance(e, TextEvent))


def _call_chunk(index, name, args, cid=None):
    tc = {"index": index, "type": "function", "function": {"name": name, "arguments": args}}
    if cid:
        tc["id"] = cid
    return sse({"choices": [{"index": 0, "delta": {"tool_calls": [tc]}, "finish_reason": None}]})


class Endless:
    """A handler that writes ``piece()`` until the client goes (or ``limit`` pieces): ``gone`` is
    set when the client closed the connection, ``sent`` counts what was written."""

    def __init__(self, piece, *, limit=200_000, every=0.0, head=b""):
        self.piece, self.limit, self.every, self.head = piece, limit, every, head
        self.gone = threading.Event()
        self.sent = 0
        self.stop = threading.Event()

    def __call__(self, req):
        req.start_stream("application/x-ndjson" if b'"done"' in self.piece(0) else "text/event-stream")
        if self.head and not req.send(self.head):
            self.gone.set()
            return
        for i in range(self.limit):
            data = self.piece(i)
            if not req.send(data):
                self.gone.set()
                return
            self.sent += len(data)
            if self.every and self.stop.wait(self.every):
                return


# -- N5: max_tokens, enforced here too ---------------------------------------------------------


@pytest.mark.parametrize("kind", ["openai", "anthropic", "ollama"])
def test_n5_endless_stream_is_cut_at_max_tokens(kind):
    """An endless stream of text with max_tokens 20 ends after about 20 pieces, not never."""
    piece = {
        "openai": lambda i: openai_chunk("a "),
        "anthropic": lambda i: sse(
            {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "a "}}
        ),
        "ollama": lambda i: b'{"message": {"role": "assistant", "content": "a "}, "done": false}\n',
    }[kind]
    handler = Endless(piece)
    with MisbehavingServer(handler) as srv:
        session = _session(srv.url, kind=kind, max_tokens=20)
        events, done = _run(session)
        assert handler.gone.wait(10), "the client never closed the endless stream"
        assert len(srv.requests) == 1
    assert done.finish_reason == "error" and done.error_code == "too_large"
    assert "max_tokens" in done.error and "20" in done.error
    assert "shown so far is kept" in done.error
    shown = _text(events)
    assert 20 <= shown.count("a ") <= 20 + MAX_TOKENS_SLACK
    assert session.messages[-1].role == "assistant" and session.messages[-1].content == shown


def test_n5_endless_reasoning_counts_against_max_tokens():
    handler = Endless(lambda i: sse({"choices": [{"index": 0, "delta": {"reasoning_content": "hm "}}]}))
    with MisbehavingServer(handler) as srv:
        events, done = _run(_session(srv.url, max_tokens=10))
        assert handler.gone.wait(10)
    assert done.error_code == "too_large" and "max_tokens" in done.error
    assert sum(isinstance(e, ReasoningEvent) for e in events) <= 10 + MAX_TOKENS_SLACK


# -- N5: the time between pieces, and the time of a whole reply ----------------------------


def test_n5_keepalive_trickle_hits_the_idle_bound():
    """Keep-alive comments are not pieces of the reply: a server that sends only them is cut
    after ``timeout_s`` without a piece, once, not retried."""
    handler = Endless(lambda i: b": keep-alive\n\n", every=0.05, limit=400)
    with MisbehavingServer(handler) as srv:
        _, done = _run(_session(srv.url, timeout_s=0.5, max_retries=2))
        assert handler.gone.wait(10)
        handler.stop.set()
        assert len(srv.requests) == 1
    assert done.finish_reason == "error" and done.error_code == "timeout"
    assert "sent nothing of the reply for 0.5 s" in done.error and "keep-alive" in done.error


def test_n5_empty_chunks_do_not_count_as_pieces():
    handler = Endless(lambda i: openai_chunk(""), every=0.05, limit=400)
    with MisbehavingServer(handler) as srv:
        _, done = _run(_session(srv.url, timeout_s=0.5))
        assert handler.gone.wait(10)
        handler.stop.set()
    assert done.error_code == "timeout" and "sent nothing of the reply" in done.error


def test_n5_a_reply_that_never_finishes_hits_the_total_bound():
    """Pieces keep coming (so the idle bound never fires), max_tokens is far away: the whole
    reply's time bound ends it, keeping what came."""
    handler = Endless(lambda i: openai_chunk("tick "), every=0.02, limit=5000)
    with MisbehavingServer(handler) as srv:
        events, done = _run(_session(srv.url, max_tokens=10**6, total_timeout_s=1.0, timeout_s=30))
        assert handler.gone.wait(10)
        handler.stop.set()
    assert done.finish_reason == "error" and done.error_code == "timeout"
    assert "did not finish the reply within 1 s" in done.error and "shown so far is kept" in done.error
    assert _text(events).startswith("tick ")


# -- N5: bytes per line, bytes per reply -------------------------------------------------------

LONG_HEADS = {
    "sse": ("text/event-stream", b'data: {"choices": [{"index": 0, "delta": {"content": "'),
    "ndjson": ("application/x-ndjson", b'{"message": {"role": "assistant", "content": "'),
    "json": ("application/json", b'{"id": "x", "choices": [{"index": 0, "message": {"content": "'),
}


@pytest.mark.parametrize("shape", list(LONG_HEADS))
def test_n5_a_line_without_end_is_refused_at_the_line_bound(shape):
    """64 MiB without a newline (an SSE event, an NDJSON object, a plain JSON body): refused
    after MAX_LINE_BYTES, the connection closed long before the rest is sent, not retried."""
    content_type, head = LONG_HEADS[shape]
    total = 64 * MIB
    state = {"sent": 0, "gone": threading.Event()}

    def handler(req):
        req.start_stream(content_type)
        req.send(head)
        block = b"a" * MIB
        while state["sent"] < total:
            if not req.send(block):
                state["gone"].set()
                return
            state["sent"] += len(block)

    kind = "ollama" if shape == "ndjson" else "openai"
    with MisbehavingServer(handler) as srv:
        _, done = _run(_session(srv.url, kind=kind, max_retries=2))
        assert state["gone"].wait(10)
        assert len(srv.requests) == 1
    assert state["sent"] < total
    assert done.finish_reason == "error" and done.error_code == "too_large"
    assert f"a line longer than {MAX_LINE_BYTES // MIB} MiB" in done.error


def test_n5_many_small_lines_hit_the_reply_bound():
    """Lines that are no piece of the reply (usage chunks) still count against its bytes."""
    usage = sse({"choices": [], "usage": {"prompt_tokens": 1, "completion_tokens": 1}, "pad": "x" * 4000})
    handler = Endless(lambda i: usage, limit=100_000)
    with MisbehavingServer(handler) as srv:
        _, done = _run(_session(srv.url, max_reply_bytes=MIB, timeout_s=30))
        assert handler.gone.wait(10)
    assert handler.sent < 100_000 * len(usage)
    assert done.error_code == "too_large" and "more than 1 MiB in one reply" in done.error


# -- N5: calls per reply, bytes of a call's arguments ------------------------------------------


def test_n5_five_thousand_calls_in_one_reply_run_none():
    registry, dispatcher, ran = make_tools()

    def handler(req):
        req.start_stream()
        body = b"".join(
            _call_chunk(i, "get_weather", json.dumps({"city": "x"}), f"call_{i}") for i in range(5000)
        )
        req.send(body + openai_chunk(finish="tool_calls") + sse("[DONE]"))

    with MisbehavingServer(handler) as srv:
        _, done = _run(_session(srv.url, tools=(registry, dispatcher), max_tokens=10**6))
        assert len(srv.requests) == 1
    assert ran == []
    assert done.finish_reason == "error" and done.error_code == "too_large"
    assert f"more than {MAX_CALLS} tool calls in one reply" in done.error and "none was run" in done.error


def test_n5_huge_call_arguments_are_refused_unrun():
    registry, dispatcher, ran = make_tools()
    fragment = "x" * 65536
    count = MAX_CALL_ARGS_BYTES // len(fragment) + 8

    def handler(req):
        req.start_stream()
        req.send(_call_chunk(0, "get_weather", "", "call_1") + _call_chunk(0, None, '{"city": "'))
        for _ in range(count):
            if not req.send(_call_chunk(0, None, fragment)):
                return
        req.send(_call_chunk(0, None, '"}') + openai_chunk(finish="tool_calls") + sse("[DONE]"))

    with MisbehavingServer(handler) as srv:
        _, done = _run(_session(srv.url, tools=(registry, dispatcher), max_tokens=10**6))
    assert ran == []
    assert done.error_code == "too_large"
    assert f"arguments longer than {MAX_CALL_ARGS_BYTES // MIB} MiB" in done.error


# -- N20: redirects, error events, no answer at all, a huge model list ---------------------------


@pytest.mark.parametrize("status", [301, 302, 307, 308])
def test_n20_a_redirect_is_named_as_one_and_not_retried(status):
    def handler(req):
        req.status(status, {}, {"Location": "http://localhost:1/elsewhere/v1/chat/completions"})

    with MisbehavingServer(handler) as srv:
        _, done = _run(_session(srv.url, max_retries=2))
        assert len(srv.requests) == 1
    assert done.finish_reason == "error" and done.error_code == "redirect"
    assert f"redirect (HTTP {status})" in done.error and "http://localhost:1/elsewhere" in done.error
    assert "cut" not in done.error


def test_n20_a_huge_error_event_is_shortened():
    def handler(req):
        req.start_stream()
        req.send(openai_chunk("partial ") + sse({"error": {"message": "boom " + "x" * 100_000}}))

    with MisbehavingServer(handler) as srv:
        events, done = _run(_session(srv.url))
    assert _text(events) == "partial " and "boom x" in done.error
    assert len(done.error) < MAX_ERROR_CHARS + 400


def test_n20_a_huge_error_body_is_read_only_in_part():
    state = {"sent": 0}

    def handler(req):
        req.handler.send_response(500)
        req.handler.send_header("Content-Type", "text/plain")
        req.handler.send_header("Connection", "close")
        req.handler.end_headers()
        while state["sent"] < 64 * MIB and req.send(b"y" * MIB):
            state["sent"] += MIB

    with MisbehavingServer(handler) as srv:
        _, done = _run(_session(srv.url, max_retries=0))
    assert done.error_code == "server_error" and "HTTP 500" in done.error
    assert state["sent"] < 64 * MIB and len(done.error) < 1000


def test_n20_no_answer_before_the_headers_is_not_sent_again():
    """A request the server took but never answered may still be running there: it times out
    once (``timeout_s``), not three times."""
    release = threading.Event()
    with MisbehavingServer(lambda req: release.wait(20)) as srv:
        try:
            _, done = _run(_session(srv.url, timeout_s=0.3, max_retries=2))
        finally:
            release.set()
        assert len(srv.requests) == 1
    assert done.error_code == "timeout" and "did not answer in time" in done.error


def test_n20_a_model_list_of_100k_names_is_bounded_and_cleaned():
    evil = [
        "evil\x1b[31mRED\x1b[0m",
        "../../../etc/passwd",
        "a/b\\c",
        "x\r\ny",
        "\u202eexe.txt",
        "nul\x00byte",
        "z" * 100_000,
        "zero\u200bwidth",
    ]
    names = evil + [f"m{i}" for i in range(100_000)]

    def handler(req):
        req.status(200, {"object": "list", "data": [{"id": n, "object": "model"} for n in names]})

    with MisbehavingServer(handler) as srv:
        got = list_models(Provider(srv.url))
    assert len(got) == MAX_MODELS
    assert got[:3] == ["m0", "m1", "m2"]
    for name in got:
        assert name.isprintable() and len(name) <= MAX_MODEL_NAME_CHARS
        assert ".." not in name.split("/") and "\\" not in name


def test_n20_a_model_list_or_props_past_the_body_bound_is_refused():
    def handler(req):
        req.handler.send_response(200)
        req.handler.send_header("Content-Type", "application/json")
        req.handler.send_header("Connection", "close")
        req.handler.end_headers()
        req.send(b'{"chat_template": "')
        for _ in range(64):
            if not req.send(b"a" * MIB):
                return

    with MisbehavingServer(handler) as srv:
        for call in (fetch_props, list_models):
            with pytest.raises(RemoteError) as info:
                call(Provider(srv.url))
            assert info.value.code == "too_large" and "MiB" in info.value.message


def test_n5_an_honest_reply_within_every_bound_is_untouched():
    """The bounds do not touch a reply within them: text, a call, usage, [DONE]."""
    registry, dispatcher, ran = make_tools()

    def handler(req):
        req.start_stream()
        if len(srv.requests) == 1:
            req.send(
                b": keep-alive\r\n\r\n"
                + openai_chunk("Looking ")
                + _call_chunk(0, "get_weather", "", "call_1")
                + _call_chunk(0, None, '{"city": "Oslo"}')
                + openai_chunk(finish="tool_calls")
                + sse("[DONE]")
            )
        else:
            req.send(openai_chunk("Sunny.") + openai_chunk(finish="stop") + sse("[DONE]"))

    with MisbehavingServer(handler) as srv:
        events, done = _run(_session(srv.url, tools=(registry, dispatcher)))
    assert done.finish_reason == "stop" and done.error is None
    assert ran == [("get_weather", {"city": "Oslo"})]
    assert _text(events) == "Looking Sunny."
    assert not [e for e in events if isinstance(e, NoticeEvent)]


def test_n5_read_body_bounds_an_answer_read_without_streaming():
    """``read_body``: the bounded read for a caller that asks for a whole answer (the check's
    reference request): past its limit ``too_large``; within it, the response reads as usual."""
    from app.engine.remote._client import read_body, status_error

    big = {"choices": [{"message": {"content": "a" * (2 * MIB)}}]}
    with MisbehavingServer(lambda req: req.status(500 if req.path == "/err" else 200, big)) as srv:
        provider = Provider(srv.url)
        with provider.client() as client:
            resp = client.send(client.build_request("POST", srv.url + "/ok", json={}), stream=True)
            with pytest.raises(RemoteError) as info:
                read_body(provider, resp, MIB)
            assert info.value.code == "too_large" and "more than 1 MiB" in info.value.message
            resp = client.send(client.build_request("POST", srv.url + "/ok", json={}), stream=True)
            assert len(read_body(provider, resp, 4 * MIB)) > 2 * MIB
            assert resp.json() == big
            resp = client.send(client.build_request("POST", srv.url + "/err", json={}), stream=True)
            read_body(provider, resp, 4 * MIB)
            assert "HTTP 500" in status_error(provider, resp).message


def _llama_server(template, completion):
    """A loopback llama-server: /props gives the scripted model's template, /completion runs
    ``completion(req)``."""

    def handle(req):
        if req.path.split("?")[0] == "/props":
            req.status(200, {"chat_template": template.chat_template, "eos_token": "</s>"})
        elif req.path == "/tokenize":
            req.status(200, {"tokens": []})
        elif req.path == "/completion":
            completion(req)
        else:
            req.status(404)

    return MisbehavingServer(handle)


def _callisto_session(url, registry, dispatcher, max_tokens=10**6):
    return RemoteChatSession(
        Provider(url, retry_backoff_s=0.01),
        "m",
        parser="callisto",
        registry=registry,
        dispatcher=dispatcher,
        max_tokens=max_tokens,
    )


def test_n5_callisto_parsing_bounds_calls_per_reply(remote_models):
    """Raw text parsed by Callisto: more than MAX_CALLS calls in one completion run none."""
    from app.engine.remote import load_template

    template = load_template(remote_models["loop"])
    registry, dispatcher, ran = make_tools()

    def completion(req):
        req.start_stream()
        for i in range(MAX_CALLS + 50):
            call = {"name": "get_weather", "arguments": {"city": f"c{i}"}}
            text = "<tool_call>\n" + json.dumps(call) + "\n</tool_call>\n"
            if not req.send(sse({"content": text, "stop": False})):
                return
        req.send(sse({"content": "", "stop": True, "stop_type": "eos"}))

    with _llama_server(template, completion) as srv:
        _, done = _run(_callisto_session(srv.url, registry, dispatcher))
    assert ran == []
    assert done.error_code == "too_large" and f"more than {MAX_CALLS} tool calls" in done.error


def test_n5_callisto_parsing_cuts_an_endless_completion_at_max_tokens(remote_models):
    from app.engine.remote import load_template

    template = load_template(remote_models["loop"])
    registry, dispatcher, ran = make_tools()
    handler = Endless(lambda i: sse({"content": "a ", "stop": False}))
    with _llama_server(template, handler) as srv:
        events, done = _run(_callisto_session(srv.url, registry, dispatcher, max_tokens=30))
        assert handler.gone.wait(10)
    assert done.error_code == "too_large" and "max_tokens" in done.error
    assert 30 <= _text(events).count("a") <= 30 + MAX_TOKENS_SLACK


def test_n5_a_slow_reader_is_not_counted_as_the_servers_idle_time():
    """Only time spent waiting for the server counts towards ``timeout_s``: a reader that takes
    its time with each piece (a paused terminal) still gets the whole reply."""
    import time

    def handler(req):
        req.start_stream()
        req.send(openai_chunk("one ") + openai_chunk("two ") + openai_chunk("three"))
        req.send(openai_chunk(finish="stop") + sse("[DONE]"))

    with MisbehavingServer(handler) as srv:
        session = _session(srv.url, timeout_s=0.3)
        events = []
        for ev in session.send("hello"):
            events.append(ev)
            if isinstance(ev, TextEvent):
                time.sleep(0.6)  # longer than timeout_s, in the reader
    done = events[-1]
    assert done.finish_reason == "stop" and done.error is None
    assert _text(events) == "one two three"
