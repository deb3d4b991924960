"""A reference endpoint: an OpenAI-compatible server on loopback that answers every turn of every
scenario with exactly the calls the scenario expects (or a plain sentence where no call is correct).

It checks the harness and the scorer, not a model: run against it, the whole corpus must score 100%.
``reply_for`` can be replaced to answer differently (the tests use it to return each failure kind).
Streaming requests get Server-Sent Events with the text and the call arguments cut into small deltas.
Standard library only.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from app.check.corpus import Corpus, Scenario

__all__ = ["ReferenceServer", "Reply", "expected_reply", "find_turn"]

# A reply: {"content": str, "reasoning": str, "tool_calls": [{"name", "arguments": dict | str, "id"?}],
#           "status": int (an HTTP error when not 200), "error": str}
Reply = dict[str, Any]


def find_turn(corpus: Corpus, body: dict[str, Any]) -> tuple[Scenario, int] | None:
    """The scenario and 0-based turn a request belongs to: the last user message is the prompt, and
    each assistant message after it is one turn done."""
    messages = body.get("messages") or []
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=None)
    if last_user is None:
        return None
    prompt = messages[last_user].get("content")
    turn = sum(1 for m in messages[last_user + 1 :] if m.get("role") == "assistant")
    for s in corpus.scenarios:
        if s.prompt == prompt and turn < len(s.turns):
            return s, turn
    return None


def expected_reply(scenario: Scenario, turn: int) -> Reply:
    expect = scenario.turns[turn].expect
    if not expect:
        return {"content": "Here is my answer, without any tool.", "tool_calls": []}
    return {"content": "", "tool_calls": [{"name": e.name, "arguments": dict(e.arguments)} for e in expect]}


class ReferenceServer:
    """``with ReferenceServer(corpus) as srv: srv.url`` -> ``http://127.0.0.1:PORT/v1``."""

    def __init__(
        self,
        corpus: Corpus,
        reply_for: Callable[[Scenario, int, dict[str, Any]], Reply] | None = None,
        *,
        model: str = "reference",
    ):
        self.corpus = corpus
        self.reply_for = reply_for or (lambda s, t, body: expected_reply(s, t))
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._httpd is not None
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    def __enter__(self) -> ReferenceServer:
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def start(self) -> None:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, payload: Any, ctype: str = "application/json") -> None:
                data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(data)))
                self.send_header("Server", "callisto-reference/1")
                self.end_headers()
                try:
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client left before its reply (a check that was stopped): nothing to tell

            def do_GET(self) -> None:  # noqa: N802
                if self.path.rstrip("/").endswith("/models"):
                    self._send(
                        200,
                        {
                            "object": "list",
                            "data": [
                                {"id": server.model, "object": "model", "owned_by": "callisto-reference"}
                            ],
                        },
                    )
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                try:
                    body = json.loads(self.rfile.read(length) or b"{}")
                except ValueError:
                    self._send(400, {"error": {"message": "the body is not JSON"}})
                    return
                server.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": "not found"}})
                    return
                found = find_turn(server.corpus, body)
                if found is None:
                    self._send(400, {"error": {"message": "no scenario has this prompt"}})
                    return
                reply = server.reply_for(found[0], found[1], body)
                status = int(reply.get("status", 200))
                if status != 200:
                    self._send(status, {"error": {"message": reply.get("error", "failed")}})
                    return
                if body.get("stream"):
                    self._send(200, _sse(reply, server.model), "text/event-stream")
                else:
                    self._send(200, _completion(reply, server.model))

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        # a short poll interval: shutdown() in stop() waits up to one (0.5 s by default)
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.02,), name="check-reference", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None


def _args_text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments, ensure_ascii=False)


def _completion(reply: Reply, model: str) -> dict[str, Any]:
    calls = [
        {
            "id": c.get("id", f"call_{i:05d}"),
            "type": "function",
            "function": {"name": c["name"], "arguments": _args_text(c.get("arguments", {}))},
        }
        for i, c in enumerate(reply.get("tool_calls") or [])
    ]
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content") or None}
    if reply.get("reasoning"):
        message["reasoning_content"] = reply["reasoning"]
    if calls:
        message["tool_calls"] = calls
    return {
        "id": "chatcmpl-reference",
        "object": "chat.completion",
        "model": model,
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}],
    }


def _sse(reply: Reply, model: str) -> bytes:
    chunks: list[dict[str, Any]] = []

    def delta(d: dict[str, Any], finish: str | None = None) -> None:
        chunks.append(
            {
                "id": "chatcmpl-reference",
                "object": "chat.completion.chunk",
                "model": model,
                "choices": [{"index": 0, "delta": d, "finish_reason": finish}],
            }
        )

    delta({"role": "assistant"})
    for piece in _pieces(reply.get("reasoning") or "", 5):
        delta({"reasoning_content": piece})
    for piece in _pieces(reply.get("content") or "", 3):
        delta({"content": piece})
    calls = reply.get("stream_tool_calls") or reply.get("tool_calls") or []
    for i, c in enumerate(calls):
        delta(
            {
                "tool_calls": [
                    {
                        "index": i,
                        "id": c.get("id", f"call_{i:05d}"),
                        "type": "function",
                        "function": {"name": c["name"], "arguments": ""},
                    }
                ]
            }
        )
        for piece in _pieces(_args_text(c.get("arguments", {})), 4):
            delta({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
    delta({}, "tool_calls" if calls else "stop")
    out = b"".join(b"data: " + json.dumps(c, ensure_ascii=False).encode() + b"\n\n" for c in chunks)
    return out + b"data: [DONE]\n\n"


def _pieces(text: str, n: int) -> list[str]:
    return [text[i : i + n] for i in range(0, len(text), n)]
