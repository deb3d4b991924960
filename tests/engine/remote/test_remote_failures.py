"""Network failures of a remote engine, each driven by a real loopback server that misbehaves that
way: the session ends with one plain sentence, keeps what was shown, and retries only before any
token was shown, a bounded number of times. Stop closes the request."""

from __future__ import annotations

import threading

import pytest

from app.engine.events import DoneEvent, NoticeEvent, TextEvent
from app.engine.remote import Provider, RemoteChatSession
from tests.engine.remote.misbehaving import MisbehavingServer, openai_chunk, sse
from tests.support.ports import free_port as _free_port


def _session(url, kind="openai", **provider):
    provider.setdefault("retry_backoff_s", 0.01)
    return RemoteChatSession(Provider(url, kind=kind, **provider), "m", parser="api", max_tokens=32)


def _run(session, cancel=None):
    events = list(session.send("hello", cancel=cancel))
    assert isinstance(events[-1], DoneEvent)
    return events, events[-1]


def _text(events):
    return "".join(e.text for e in events if isinstance(e, TextEvent))


def test_refused_connection_is_retried_then_explained():
    port = _free_port()  # nothing listens there
    events, done = _run(_session(f"http://127.0.0.1:{port}", max_retries=1))
    assert done.finish_reason == "error"
    assert done.error.startswith(f"Could not connect to http://127.0.0.1:{port}")
    assert "Is the server running?" in done.error and "(tried 2 times)" in done.error
    assert [e.code for e in events if isinstance(e, NoticeEvent)] == ["remote_retry"]
    assert done.error_code == "refused"


def test_server_that_never_answers_times_out():
    release = threading.Event()
    with MisbehavingServer(lambda req: release.wait(10)) as srv:
        try:
            _, done = _run(_session(srv.url, timeout_s=0.3, max_retries=0))
        finally:
            release.set()
    assert done.finish_reason == "error" and "did not answer in time" in done.error


def test_tls_to_a_plain_http_server_is_named_as_tls():
    with MisbehavingServer(lambda req: req.status(200, {})) as srv:
        _, done = _run(_session(srv.url.replace("http://", "https://"), max_retries=0))
    assert done.error_code == "tls"
    assert "secure connection" in done.error and "(http or https)" in done.error


@pytest.mark.parametrize("kind", ["openai", "anthropic", "ollama"])
def test_bad_key_is_not_retried(kind):
    with MisbehavingServer(lambda req: req.status(401, {"error": {"message": "invalid api key"}})) as srv:
        session = _session(srv.url, kind, api_key="sk-wrong")
        _, done = _run(session)
        assert len(srv.requests) == 1
        sent = srv.requests[0].headers
    assert "refused the API key (HTTP 401)" in done.error and "invalid api key" in done.error
    assert (sent.get("x-api-key") if kind == "anthropic" else sent.get("Authorization")) in (
        "sk-wrong",
        "Bearer sk-wrong",
    )
    assert [m.role for m in session.messages] == ["user"]


def test_429_waits_for_retry_after_then_answers():
    def handler(req):
        if len(srv.requests) == 1:
            req.status(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"})
            return
        req.start_stream()
        req.send(openai_chunk("Hi there") + openai_chunk(finish="stop") + sse("[DONE]"))

    with MisbehavingServer(handler) as srv:
        session = _session(srv.url)
        events, done = _run(session)
        assert len(srv.requests) == 2
    assert done.finish_reason == "stop" and _text(events) == "Hi there"
    notices = [e for e in events if isinstance(e, NoticeEvent)]
    assert notices[0].code == "remote_retry" and "rate limiting requests (HTTP 429)" in notices[0].message
    assert session.messages[-1].content == "Hi there"


def test_429_with_a_long_retry_after_fails_at_once_saying_how_long():
    with MisbehavingServer(lambda req: req.status(429, None, {"Retry-After": "3600"})) as srv:
        _, done = _run(_session(srv.url))
        assert len(srv.requests) == 1
    assert done.error_code == "rate_limited" and "It asks to wait 3600 s" in done.error


def test_5xx_is_retried_a_bounded_number_of_times():
    with MisbehavingServer(lambda req: req.status(503, {"error": {"message": "overloaded"}})) as srv:
        events, done = _run(_session(srv.url, max_retries=2))
        assert len(srv.requests) == 3
    assert "server error (HTTP 503)" in done.error and "overloaded" in done.error
    assert "(tried 3 times)" in done.error
    assert len([e for e in events if isinstance(e, NoticeEvent)]) == 2


CUT = {
    "openai": openai_chunk("The answer ") + openai_chunk("is"),
    "anthropic": (
        sse({"type": "message_start", "message": {"usage": {"input_tokens": 3}}})
        + sse({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
        + sse(
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "The answer "},
            }
        )
        + sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "is"}})
    ),
    "ollama": b'{"message": {"role": "assistant", "content": "The answer "}, "done": false}\n'
    b'{"message": {"role": "assistant", "content": "is"}, "done": false}\n',
}


@pytest.mark.parametrize("kind", list(CUT))
def test_stream_cut_mid_reply_keeps_what_was_shown_and_is_not_retried(kind):
    def handler(req):
        req.start_stream("application/x-ndjson" if kind == "ollama" else "text/event-stream")
        req.send(CUT[kind])  # then the connection closes without an end of reply

    with MisbehavingServer(handler) as srv:
        session = _session(srv.url, kind)
        events, done = _run(session)
        assert len(srv.requests) == 1
    assert _text(events) == "The answer is"
    assert done.finish_reason == "error" and done.error_code == "cut"
    assert "cut in the middle of the reply" in done.error and "shown so far is kept" in done.error
    assert [(m.role, m.content) for m in session.messages] == [
        ("user", "hello"),
        ("assistant", "The answer is"),
    ]


def test_stream_cut_before_any_token_is_retried():
    def handler(req):
        req.start_stream()
        if len(srv.requests) == 1:
            return  # headers only, then the connection closes
        req.send(openai_chunk("Fine") + openai_chunk(finish="stop") + sse("[DONE]"))

    with MisbehavingServer(handler) as srv:
        events, done = _run(_session(srv.url))
        assert len(srv.requests) == 2
    assert done.finish_reason == "stop" and _text(events) == "Fine"


def test_an_error_event_in_the_stream_is_reported_with_the_servers_words():
    def handler(req):
        req.start_stream()
        req.send(openai_chunk("Par") + sse({"error": {"message": "out of memory on the GPU"}}))

    with MisbehavingServer(handler) as srv:
        session = _session(srv.url)
        events, done = _run(session)
    assert _text(events) == "Par" and "out of memory on the GPU" in done.error
    assert session.messages[-1].content == "Par"


def test_stop_closes_the_remote_request():
    gone = threading.Event()

    def handler(req):
        req.start_stream()
        while req.send(openai_chunk("tick ")):  # a reply that never ends, until the client goes
            if gone.wait(0.02):
                return
        gone.set()

    cancel = threading.Event()
    with MisbehavingServer(handler) as srv:
        session = _session(srv.url)
        events = []
        for ev in session.send("go", cancel=cancel):
            events.append(ev)
            if isinstance(ev, TextEvent):
                cancel.set()
        assert gone.wait(10), "the server never saw the request closed"
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "cancelled"
    assert _text(events).startswith("tick ")
    assert session.messages[-1].role == "assistant" and session.messages[-1].content.startswith("tick ")


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/", "/v1/chat/completions", "/v1/chat/completions/"])
def test_a_base_url_with_v1_or_a_pasted_completions_url_reaches_the_same_endpoint(suffix):
    def handler(req):
        req.start_stream()
        req.send(openai_chunk("Hi there") + openai_chunk(finish="stop") + sse("[DONE]"))

    with MisbehavingServer(handler) as srv:
        events, done = _run(_session(srv.url + suffix))
        paths = [r.path for r in srv.requests]
    assert done.finish_reason == "stop" and _text(events) == "Hi there"
    assert paths == ["/v1/chat/completions"]
