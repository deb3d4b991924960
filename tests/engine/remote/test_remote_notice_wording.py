"""U21 (first-run review 2): under Callisto parsing, an OpenAI-compatible endpoint whose raw
completion ignores the grammar (Callisto's own ``serve`` is one: its ``/v1/completions`` takes no
grammar) breaks a forced tool choice; the notice that names it is a sentence that starts with a
capital, not "the openai endpoint ...". A loopback server records what was sent."""

from __future__ import annotations

from app.engine.events import NoticeEvent
from app.engine.remote import Provider, RemoteChatSession
from tests.engine.remote.conftest import make_tools
from tests.engine.remote.misbehaving import MisbehavingServer, sse

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
NAMED = {"type": "function", "function": {"name": "get_time"}}


def test_u21_the_broken_choice_notice_is_a_sentence(remote_models):
    left = [CALL]

    def handle(req):  # an engine that ignores the grammar it is sent, as Callisto's serve does
        if req.path == "/v1/completions":
            req.start_stream()
            text = left.pop(0) if left else "Done."
            req.send(sse({"choices": [{"index": 0, "text": text, "finish_reason": None}]}))
            req.send(sse({"choices": [{"index": 0, "text": "", "finish_reason": "stop"}]}))
            req.send(sse("[DONE]"))
        else:
            req.status(404)

    registry, dispatcher, _ran = make_tools()
    with MisbehavingServer(handle) as srv:
        session = RemoteChatSession(
            Provider(srv.url, kind="openai", retry_backoff_s=0.01),
            "m",
            parser="callisto",
            template=remote_models["loop"],
            registry=registry,
            dispatcher=dispatcher,
            max_tokens=64,
        )
        events = list(session.send("Time?", tool_choice=NAMED))
        body = next(r.body for r in srv.requests if r.path == "/v1/completions")
    assert "get_time" in body["structured_outputs"]["grammar"]  # it was asked to hold the choice
    (notice,) = [e for e in events if isinstance(e, NoticeEvent)]
    assert notice.code == "tool_choice_broken"
    assert notice.message == (
        f"The openai endpoint at {srv.url} did not hold tool_choice: it was asked for a call to get_time, "
        "and the reply has get_weather."
    )
