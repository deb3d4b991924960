"""A real HTTP server on a free loopback port that misbehaves on purpose, one behaviour per test.

``MisbehavingServer(handler)`` runs ``handler(request)`` for each request in its own thread;
``request`` has ``path``, ``body`` (decoded JSON) and ``wfile`` / ``send`` for raw writes, so a
handler can answer with a status, stream some events and then cut the connection, or stall.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.support.quiet_http import QuietHTTPServer

__all__ = ["MisbehavingServer", "Request", "sse", "openai_chunk"]


def sse(obj: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    return (head + "data: " + (obj if isinstance(obj, str) else json.dumps(obj)) + "\n\n").encode()


def openai_chunk(text: str | None = None, finish: str | None = None) -> bytes:
    delta = {"content": text} if text is not None else {}
    return sse({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


class Request:
    def __init__(self, handler: BaseHTTPRequestHandler, body: Any):
        self.handler, self.path, self.body = handler, handler.path, body
        self.headers = dict(handler.headers)

    def status(self, code: int, body: Any = None, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(body if body is not None else {"error": {"message": f"status {code}"}}).encode()
        self.handler.send_response(code)
        for k, v in (headers or {}).items():
            self.handler.send_header(k, v)
        self.handler.send_header("Content-Type", "application/json")
        self.handler.send_header("Content-Length", str(len(data)))
        self.handler.end_headers()
        self.handler.wfile.write(data)

    def start_stream(self, content_type: str = "text/event-stream") -> None:
        """Headers of a streamed answer without a length: the body ends when the connection does."""
        self.handler.send_response(200)
        self.handler.send_header("Content-Type", content_type)
        self.handler.send_header("Connection", "close")
        self.handler.end_headers()
        self.handler.close_connection = True

    def send(self, data: bytes) -> bool:
        """Write and flush; False when the client has gone."""
        try:
            self.handler.wfile.write(data)
            self.handler.wfile.flush()
            return True
        except OSError:
            return False


class MisbehavingServer:
    def __init__(self, handler: Callable[[Request], None]):
        self.handler = handler
        self.requests: list[Request] = []
        outer = self

        class _H(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def _body(self) -> Any:
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n) if n else b""
                try:
                    return json.loads(raw) if raw else None
                except ValueError:
                    return raw

            def do_GET(self) -> None:
                self._handle()

            def do_POST(self) -> None:
                self._handle()

            def _handle(self) -> None:
                req = Request(self, self._body())
                outer.requests.append(req)
                outer.handler(req)

        self.httpd = QuietHTTPServer(("127.0.0.1", 0), _H)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, args=(0.02,), daemon=True)

    def __enter__(self) -> MisbehavingServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
