"""The server's HTTP connections, bounded: slow or idle clients cannot hold it.

uvicorn's h11 protocol with three bounds added (:class:`ConnectionLimits`, set from
``ServerConfig``):

* **Header timeout**: a request's headers must arrive whole within ``header_timeout_s`` of the
  connection opening or of its first byte (a keep-alive connection's next request). A client that
  trickles headers, or opens a connection and sends nothing, gets ``408`` and is closed.
* **Body timeout**: the whole body must arrive within ``body_timeout_s`` of the end of the headers,
  whether or not the route reads it. Past it: ``408`` if no response has started, then closed.
  An upload (a ``POST`` to a path under ``upload_prefixes``: Ollama's blobs, a model file of
  gigabytes) may take longer, as long as it keeps coming: it has ``body_timeout_s`` plus a second
  for every ``upload_min_rate`` bytes received, so a client must average that rate after the first
  ``body_timeout_s`` to hold its connection; once it is answered (refused, or a file the server
  has), the rest of it has the plain body timeout.
* **Connection limit**: at most ``max_connections`` connections are open at once (fewer when the
  process may open fewer files: the limit keeps room under ``RLIMIT_NOFILE`` for the engine and
  the model). A new connection past the limit closes the oldest connection that has no request
  in progress (one still sending its headers, or idle between requests); when every connection
  has a request in progress, the new one gets ``503`` with ``Retry-After`` and is closed. So
  connections that send nothing useful cannot starve a client that sends a whole request.

Once a request is whole, nothing here limits how long its response takes (the engine's queue
and ``max_tokens`` bound that); between requests uvicorn's keep-alive timeout closes an idle
connection.

A client that closes its sending side (``shutdown(SHUT_WR)``) after its request is taken to have
gone away, as nginx takes it: TCP cannot tell that half-close from a close, and stopping the
generation at once when a client leaves is what keeps the engine free for the others.

The event loop's "socket.accept() out of system resource" report (the process ran out of file
descriptors) is logged at most once every ``ACCEPT_ERROR_LOG_S`` seconds (:func:`quiet_accept_errors`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import Any

__all__ = ["ACCEPT_ERROR_LOG_S", "ConnectionLimits", "bounded_protocol", "quiet_accept_errors"]

log = logging.getLogger(__name__)

ACCEPT_ERROR_LOG_S = 30.0
#: file descriptors kept free for everything else the process opens (model, engine pipes, logs)
FD_RESERVE = 64


@dataclass(frozen=True)
class ConnectionLimits:
    header_timeout_s: float = 10.0
    body_timeout_s: float = 60.0
    max_connections: int = 128
    #: the paths whose ``POST`` bodies are uploads (the body timeout grows as their bytes arrive)
    upload_prefixes: tuple[str, ...] = ()
    upload_min_rate: float = float(1 << 20)  # bytes a second, averaged

    def effective_max_connections(self) -> int:
        """``max_connections``, lowered so that the connections fit under the process's open-file
        limit with :data:`FD_RESERVE` to spare (at least 8)."""
        limit = self.max_connections
        try:
            import resource

            soft, _hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        except (ImportError, OSError, ValueError):  # Windows: no RLIMIT_NOFILE
            return max(1, limit)
        if soft != resource.RLIM_INFINITY:
            limit = min(limit, max(8, soft - FD_RESERVE))
        return max(1, limit)


def _raw_response(status: int, reason: str, message: str, extra: str = "") -> bytes:
    from app.server._json import json_bytes

    body = json_bytes({"error": {"message": message, "type": "invalid_request_error", "code": None}})
    head = (
        f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n{extra}\r\n"
    )
    return head.encode("ascii") + body


def bounded_protocol(limits: ConnectionLimits) -> type[asyncio.Protocol]:
    """uvicorn's h11 protocol class with ``limits`` applied (pass it as ``uvicorn.Config(http=...)``)."""
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    max_connections = limits.effective_max_connections()

    class BoundedH11Protocol(H11Protocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._header_timer: asyncio.TimerHandle | None = None
            self._body_timer: asyncio.TimerHandle | None = None
            self._idle_since = time.monotonic()
            self._refused = False
            #: the request being received is an upload: when its body began, and bytes since
            self._upload_since: float | None = None
            self._upload_bytes = 0

        # -- the connection limit --------------------------------------------------------------

        def _in_progress(self) -> bool:
            """A request on this connection was received whole or in part past its headers, and
            its response is not complete."""
            if self.conn.their_state is not h11.IDLE:
                return not (self.cycle is not None and self.cycle.response_complete)
            return self.cycle is not None and not self.cycle.response_complete

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            others = [c for c in self.connections if c is not self]
            if len(others) >= max_connections:
                idle = [c for c in others if isinstance(c, BoundedH11Protocol) and not c._in_progress()]
                if idle:
                    min(idle, key=lambda c: c._idle_since)._drop()
                else:
                    transport.write(
                        _raw_response(
                            503,
                            "Service Unavailable",
                            f"the server has {max_connections} connections open, each with a request "
                            "in progress; retry in a moment",
                            "retry-after: 1\r\n",
                        )
                    )
                    transport.close()
                    self._refused = True
                    return
            super().connection_made(transport)
            self._start_header_timer()

        def _drop(self) -> None:
            self._cancel_timers()
            if not self.transport.is_closing():
                self.transport.close()
            self.connections.discard(self)

        # -- the header and body timeouts ---------------------------------------------------------

        def _start_header_timer(self) -> None:
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(limits.header_timeout_s, self._timed_out, "headers")

        def _cancel_timers(self) -> None:
            for timer in (self._header_timer, self._body_timer):
                if timer is not None:
                    timer.cancel()
            self._header_timer = self._body_timer = None

        def data_received(self, data: bytes) -> None:
            if self._refused:
                return
            if self.conn.their_state is h11.IDLE:
                self._start_header_timer()  # the first byte of a request on a kept-alive connection
            elif self._upload_since is not None:
                self._upload_bytes += len(data)
            super().data_received(data)

        def handle_events(self) -> None:
            super().handle_events()
            their = self.conn.their_state
            if their is not h11.IDLE and self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None
                if their is h11.SEND_BODY:
                    self._upload_since = time.monotonic() if self._is_upload() else None
                    self._upload_bytes = 0
                    self._body_timer = self.loop.call_later(limits.body_timeout_s, self._timed_out, "body")
            if their is not h11.SEND_BODY:
                self._upload_since = None
                if self._body_timer is not None:
                    self._body_timer.cancel()
                    self._body_timer = None

        def _is_upload(self) -> bool:
            scope = getattr(self.cycle, "scope", None) or {}
            path = str(scope.get("path", ""))
            return scope.get("method") == "POST" and any(path.startswith(p) for p in limits.upload_prefixes)

        def _upload_goes_on(self) -> bool:
            """The upload being received has arrived at the minimum rate so far: its timer is set
            again for when it would not have."""
            if self._upload_since is None or getattr(self.cycle, "response_started", False):
                return False  # (an upload already answered, refused or known, has no more time)
            due = self._upload_since + limits.body_timeout_s + self._upload_bytes / limits.upload_min_rate
            left = due - time.monotonic()
            if left <= 0:
                return False
            self._body_timer = self.loop.call_later(left, self._timed_out, "body")
            return True

        def on_response_complete(self) -> None:
            self._idle_since = time.monotonic()
            super().on_response_complete()

        def connection_lost(self, exc: Exception | None) -> None:
            self._cancel_timers()
            if not self._refused:
                super().connection_lost(exc)

        def _timed_out(self, part: str) -> None:
            self._header_timer = self._body_timer = None
            if self.transport.is_closing() or (part == "body" and self._upload_goes_on()):
                return
            cycle = self.cycle
            # a body's deadline with its answer sent (the route did not wait for all of it): no
            # second answer; a kept-alive connection's next headers: the last cycle's answer is not theirs
            started = (
                cycle is not None
                and cycle.response_started
                and (part == "body" or not cycle.response_complete)
            )
            if cycle is not None and not cycle.response_complete:
                cycle.disconnected = True  # the app's own reply, if any, is dropped
                cycle.keep_alive = False
                cycle.message_event.set()
            if not started:
                limit = limits.header_timeout_s if part == "headers" else limits.body_timeout_s
                said = f"the request's {part} did not arrive within {limit:g} s"
                if part == "body" and self._upload_since is not None:
                    said = (
                        f"the upload did not arrive at {limits.upload_min_rate / (1 << 20):g} MiB/s "
                        f"after its first {limit:g} s"
                    )
                self.transport.write(_raw_response(408, "Request Timeout", said))
            self.transport.close()

    return BoundedH11Protocol


def quiet_accept_errors(loop: asyncio.AbstractEventLoop) -> None:
    """Log the loop's "out of system resource" accept errors at most once every
    :data:`ACCEPT_ERROR_LOG_S` seconds (the loop retries every second; each retry would log)."""
    last = [-ACCEPT_ERROR_LOG_S]
    skipped = [0]

    def handler(lp: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if "out of system resource" in str(context.get("message", "")):
            now = time.monotonic()
            if now - last[0] < ACCEPT_ERROR_LOG_S:
                skipped[0] += 1
                return
            last[0] = now
            more = f" ({skipped[0]} more since the last report)" if skipped[0] else ""
            skipped[0] = 0
            log.warning("the server cannot accept connections: %s%s", context.get("exception"), more)
            return
        lp.default_exception_handler(context)

    loop.set_exception_handler(handler)
