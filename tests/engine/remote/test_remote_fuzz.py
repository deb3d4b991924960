"""Property tests (hypothesis) of the remote client against a misbehaving server (issue 29, N5).

Each example is a script a real loopback server plays for every request, in one of the three APIs:
text, reasoning, tool-call fragments, usage, keep-alives, blank lines, bytes that are not UTF-8 or
not JSON, JSON in shapes no API sends, over-long lines, error events, finish reasons, the end
marker, pauses, stalls, an endless stream, a cut connection, a status other than 200, a compressed
body. Whatever it plays, a turn ends with one DoneEvent and within every bound: the text shown is
a prefix of the text sent, at most ``max_reply_bytes`` of it and about ``max_tokens`` pieces;
at most ``max_calls`` tools run; a request is sent at most ``1 + max_retries`` times a round; an
error is one short sentence with a known code.

``make test`` runs a bounded number of examples; the ``slow`` tier runs many more.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.engine.events import (
    DoneEvent,
    NoticeEvent,
    ReasoningEvent,
    TextEvent,
    ToolCallFinishedEvent,
    ToolCallStartedEvent,
)
from app.engine.remote import Provider, RemoteChatSession, list_models
from app.engine.remote._client import MAX_MODEL_NAME_CHARS, MAX_TOKENS_SLACK
from tests.engine.remote.conftest import make_tools
from tests.engine.remote.misbehaving import MisbehavingServer, sse

KINDS = ["openai", "anthropic", "ollama"]
CODES = {
    "refused",
    "timeout",
    "unauthorized",
    "rate_limited",
    "server_error",
    "http_error",
    "redirect",
    "cut",
    "bad_response",
    "too_large",
}
LIMITS = {
    "max_line_bytes": 2048,
    "max_reply_bytes": 48 * 1024,
    "max_calls": 3,
    "max_call_args_bytes": 512,
    "timeout_s": 1.0,  # without a piece of the reply
    "total_timeout_s": 4.0,
    "max_retries": 1,
    "retry_backoff_s": 0.001,
}
MAX_TOKENS = 24
MAX_ROUNDS = 2

FAST = settings(
    max_examples=min(20, settings.default.max_examples),
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
SLOW = settings(FAST, max_examples=150)

# -- the scripts -------------------------------------------------------------------------------

ARGS = ['{"city": "Oslo"}', '{"city": ', '"}', "", "not json", '{"city": "' + "x" * 600 + '"}']
JUNK_KEYS = ["choices", "delta", "tool_calls", "function", "index", "usage", "type", "done", "x"]
junk_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.sampled_from(JUNK_KEYS), inner, max_size=3)
    ),
    max_leaves=8,
)
ACTION = st.one_of(
    st.tuples(st.just("text"), st.text(max_size=12)),
    st.tuples(st.just("reasoning"), st.text(max_size=12)),
    st.tuples(
        st.just("call"),
        st.integers(0, 5),
        st.sampled_from(["get_weather", "nope", None]),
        st.sampled_from(ARGS),
    ),
    st.tuples(st.just("calls"), st.integers(1, 8)),
    st.tuples(st.just("usage")),
    st.tuples(st.just("keepalive")),
    st.tuples(st.just("blank")),
    st.tuples(st.just("garbage"), st.binary(max_size=40)),
    st.tuples(st.just("json"), junk_json),
    st.tuples(st.just("long"), st.sampled_from([200, 1900, 2100, 9000, 60000])),
    st.tuples(st.just("error"), st.text(max_size=20) | st.just("e" * 5000)),
    st.tuples(st.just("finish"), st.sampled_from(["stop", "length", "tool_calls", "odd" * 30])),
    st.tuples(st.just("done")),
    st.tuples(st.just("pause"), st.sampled_from([0.0, 0.005, 0.02])),
    st.tuples(st.just("stall")),
    st.tuples(st.just("endless"), st.sampled_from(["text", "keepalive", "usage"])),
    st.tuples(st.just("cut")),
)


@dataclass(frozen=True)
class Script:
    status: int
    compressed: bool
    actions: tuple[tuple, ...]


scripts = st.builds(
    Script,
    status=st.sampled_from([200] * 10 + [204, 302, 307, 401, 404, 429, 500, 503]),
    compressed=st.sampled_from([False] * 12 + [True]),
    actions=st.lists(ACTION, max_size=14).map(tuple),
)


def _openai(action) -> bytes:
    name = action[0]

    def chunk(delta, finish=None):
        return sse({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    if name in ("text", "long"):
        return chunk({"content": action[1] if name == "text" else "b" * action[1]})
    if name == "reasoning":
        return chunk({"reasoning_content": action[1]})
    if name == "call":
        _, index, fn, args = action
        return chunk(
            {"tool_calls": [{"index": index, "id": f"c{index}", "function": {"name": fn, "arguments": args}}]}
        )
    if name == "usage":
        return sse({"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 2}})
    if name == "error":
        return sse({"error": {"message": action[1]}})
    if name == "finish":
        return chunk({}, action[1])
    if name == "done":
        return sse("[DONE]")
    raise AssertionError(name)


def _anthropic(action) -> bytes:
    name = action[0]
    if name in ("text", "long"):
        text = action[1] if name == "text" else "b" * action[1]
        return sse({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}})
    if name == "reasoning":
        delta = {"type": "thinking_delta", "thinking": action[1]}
        return sse({"type": "content_block_delta", "index": 0, "delta": delta})
    if name == "call":
        _, index, fn, args = action
        block = {"type": "tool_use", "id": f"c{index}", "name": fn}
        return sse({"type": "content_block_start", "index": index + 1, "content_block": block}) + sse(
            {
                "type": "content_block_delta",
                "index": index + 1,
                "delta": {"type": "input_json_delta", "partial_json": args},
            }
        )
    if name == "usage":
        return sse({"type": "message_delta", "delta": {}, "usage": {"output_tokens": 2}})
    if name == "error":
        return sse({"type": "error", "error": {"message": action[1]}}, event="error")
    if name == "finish":
        reason = {"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use"}.get(
            action[1], action[1]
        )
        return sse({"type": "message_delta", "delta": {"stop_reason": reason}})
    if name == "done":
        return sse({"type": "message_stop"})
    raise AssertionError(name)


def _ollama(action) -> bytes:
    name = action[0]

    def line(obj):
        return json.dumps(obj).encode() + b"\n"

    if name in ("text", "long"):
        text = action[1] if name == "text" else "b" * action[1]
        return line({"message": {"role": "assistant", "content": text}, "done": False})
    if name == "reasoning":
        return line({"message": {"role": "assistant", "thinking": action[1]}, "done": False})
    if name == "call":
        _, _index, fn, args = action
        try:
            value = json.loads(args)
        except ValueError:
            value = args
        return line(
            {"message": {"tool_calls": [{"function": {"name": fn, "arguments": value}}]}, "done": False}
        )
    if name == "usage":
        return line({"message": {}, "done": False, "eval_count": 2})
    if name == "error":
        return line({"error": action[1]})
    if name in ("finish", "done"):
        reason = action[1] if name == "finish" else "stop"
        return line({"done": True, "done_reason": reason, "eval_count": 2})
    raise AssertionError(name)


RENDER = {"openai": _openai, "anthropic": _anthropic, "ollama": _ollama}
PATHS = {"openai": "/v1/chat/completions", "anthropic": "/v1/messages", "ollama": "/api/chat"}


def _render(kind, action) -> bytes:
    """One action's bytes on the wire in ``kind``'s API (the actions every API shares)."""
    name = action[0]
    if name == "keepalive":
        return b"\n" if kind == "ollama" else b": keep-alive\n\n"
    if name == "blank":
        return b"\r\n"
    if name == "garbage":
        return action[1] + b"\n"
    if name == "json":
        data = json.dumps(action[1]).encode()
        return data + b"\n" if kind == "ollama" else b"data: " + data + b"\n\n"
    if name == "calls":  # a burst of complete calls, each a new one
        return b"".join(
            RENDER[kind](("call", 10 + i, "get_weather", '{"city": "Oslo"}')) for i in range(action[1])
        )
    return RENDER[kind](action)


def _play(kind, script, req) -> None:
    """The server's side: the script, for one request, ending when the client goes."""
    if req.path != PATHS[kind]:
        req.status(404)
        return
    if script.status != 200:
        headers = {"Location": "http://127.0.0.1:9/elsewhere", "Retry-After": "0"}
        if script.status == 204:
            req.handler.send_response(204)
            req.handler.end_headers()
            return
        req.status(script.status, {"error": {"message": f"status {script.status}"}}, headers)
        return
    h = req.handler
    h.send_response(200)
    h.send_header("Content-Type", "application/x-ndjson" if kind == "ollama" else "text/event-stream")
    if script.compressed:
        h.send_header("Content-Encoding", "gzip")
    h.send_header("Connection", "close")
    h.end_headers()
    h.close_connection = True
    for action in script.actions:
        name = action[0]
        if name == "cut":
            return
        if name == "pause":
            time.sleep(action[1])
            continue
        if name == "stall":  # longer than the time allowed without a piece
            time.sleep(LIMITS["timeout_s"] * 1.3)
            continue
        if name == "endless":
            piece = {"text": ("text", "t "), "keepalive": ("keepalive",), "usage": ("usage",)}[action[1]]
            data = _render(kind, piece)
            for _ in range(ENDLESS):
                if not req.send(data):
                    return
                if action[1] == "keepalive":
                    time.sleep(0.01)
            continue
        if not req.send(_render(kind, action)):
            return


ENDLESS = 200_000  # pieces an endless stream sends at most, when the client never goes


def _sent_text(script) -> str:
    """The text the script sends, in order."""
    parts = []
    for a in script.actions:
        if a[0] == "text":
            parts.append(a[1])
        elif a[0] == "long":
            parts.append("b" * a[1])
        elif a == ("endless", "text"):
            parts.append("t " * ENDLESS)
    return "".join(parts)


def _segments(events) -> list[str]:
    """The text the model's replies showed, one string a round (a round's calls run between
    them). The text of calls that were not run, shown before the notice that says so, is left out."""
    out, cur = [], []
    for i, ev in enumerate(events):
        if isinstance(ev, ToolCallStartedEvent | ToolCallFinishedEvent):
            if cur:
                out.append("".join(cur))
            cur = []
        elif isinstance(ev, TextEvent):
            after = events[i + 1] if i + 1 < len(events) else None
            if isinstance(after, NoticeEvent) and after.code in ("round_limit", "calls_not_run"):
                continue
            cur.append(ev.text)
    if cur:
        out.append("".join(cur))
    return out


def check_script(kind: str, script: Script) -> None:
    registry, dispatcher, ran = make_tools()
    with MisbehavingServer(lambda req: _play(kind, script, req)) as srv:
        session = RemoteChatSession(
            Provider(srv.url, kind=kind, **LIMITS),
            "m",
            parser="api",
            registry=registry,
            dispatcher=dispatcher,
            max_tokens=MAX_TOKENS,
            max_rounds=MAX_ROUNDS,
        )
        events = list(session.send("hello"))
        requests = len(srv.requests)
    done = events[-1]
    assert isinstance(done, DoneEvent), events[-1:]
    assert sum(isinstance(e, DoneEvent) for e in events) == 1
    rounds = max(1, done.rounds)
    assert rounds <= MAX_ROUNDS
    assert requests <= rounds * (1 + LIMITS["max_retries"]), (requests, done)
    if done.finish_reason == "error":
        assert done.error_code in CODES, done
        assert isinstance(done.error, str) and 0 < len(done.error) <= 1000, done.error
        assert "\n" not in done.error
    else:
        assert done.error is None
    sent = _sent_text(script)
    for shown in _segments(events):
        assert sent.startswith(shown), (shown[:300], sent[:300])
        assert len(shown.encode("utf-8", "surrogatepass")) <= LIMITS["max_reply_bytes"]
    pieces = sum(isinstance(e, TextEvent | ReasoningEvent) for e in events)
    assert pieces <= rounds * (MAX_TOKENS + MAX_TOKENS_SLACK + 1), pieces
    assert len(ran) <= LIMITS["max_calls"], ran
    if script.status in (301, 302, 307, 308):
        assert done.error_code == "redirect" and requests == 1
    if done.kept_text is not None:
        assert sent.startswith(done.kept_text) or done.rounds > 1


@pytest.mark.parametrize("kind", KINDS)
@FAST
@given(script=scripts)
def test_a_misbehaving_server_never_breaks_a_bound(kind, script):
    check_script(kind, script)


@pytest.mark.slow
@pytest.mark.parametrize("kind", KINDS)
@SLOW
@given(script=scripts)
def test_a_misbehaving_server_never_breaks_a_bound_more_examples(kind, script):
    check_script(kind, script)


# -- the model list ----------------------------------------------------------------------------

HOSTILE_NAMES = ["..", "../x", "a/./b", "a\\b", "\u202eexe", "x\x1b[2J", "nul\x00", "zw\u200b", "z" * 300, ""]
# each list holds at least one name unfit to show, among arbitrary ones, in any order
names = st.tuples(
    st.lists(
        st.one_of(
            st.text(max_size=20),
            st.text(alphabet="abc/.\\:-", max_size=12),
            st.integers(),
            st.none(),
            st.booleans(),
        ),
        max_size=30,
    ),
    st.lists(st.sampled_from(HOSTILE_NAMES), min_size=1, max_size=4),
).flatmap(lambda parts: st.permutations(parts[0] + parts[1]))


def check_model_list(kind: str, listed: list) -> None:
    key, field = ("models", "name") if kind == "ollama" else ("data", "id")
    body = {key: [{field: n} for n in listed] + ["junk", 3, None]}
    with MisbehavingServer(lambda req: req.status(200, body)) as srv:
        got = list_models(Provider(srv.url, kind=kind))
    assert len(got) == len(set(got))
    for name in got:
        assert isinstance(name, str) and name.isprintable() and 0 < len(name) <= MAX_MODEL_NAME_CHARS
        assert "\\" not in name and not {".", ".."} & set(name.split("/"))
    kept = [str(n) for n in listed if isinstance(n, str | int) and not isinstance(n, bool)]
    assert all(name in kept for name in got)
    plain = [n for n in listed if isinstance(n, str) and n.isalnum() and len(n) <= MAX_MODEL_NAME_CHARS]
    assert all(n in got for n in plain)
    assert not set(HOSTILE_NAMES) & set(got)


@pytest.mark.parametrize("kind", ["openai", "ollama"])
@FAST
@given(listed=names)
def test_a_model_list_keeps_only_names_fit_to_show(kind, listed):
    check_model_list(kind, listed)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["openai", "ollama"])
@SLOW
@given(listed=names)
def test_a_model_list_keeps_only_names_fit_to_show_more_examples(kind, listed):
    check_model_list(kind, listed)
