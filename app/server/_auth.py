"""The server's gate, in front of every route (plain ASGI, so streams pass untouched):

* ``Host`` must name this machine: a loopback name or address, the address the server is bound
  to, or one of ``allowed_hosts``. A web page that rebinds its own DNS name to 127.0.0.1 sends
  its own name as Host, and is refused (403).
* A request that carries an ``Origin`` (a browser) is refused (403) unless the origin is in the
  CORS list; listed origins get CORS headers and their preflights are answered. CORS is off when
  the list is empty.
* With an API key set, ``Authorization: Bearer KEY`` or ``x-api-key: KEY`` must carry it (401).
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from app.server._errors import ApiError, api_of_path, error_body, log_error, shown
from app.server._json import json_bytes

__all__ = ["Gate", "host_allowed"]

_LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost"}


def _host_name(host_header: str) -> str:
    h = host_header.strip().lower()
    if h.startswith("["):  # [::1]:8453
        return h[1 : h.find("]")] if "]" in h else h
    if h.count(":") == 1:
        h = h.split(":", 1)[0]
    return h.rstrip(".")


def host_allowed(host_header: str | None, bound: str, extra: Iterable[str] = ()) -> bool:
    if not host_header:
        return False
    name = _host_name(host_header)
    if name in _LOOPBACK_NAMES or name in {e.lower() for e in extra}:
        return True
    try:
        ip = ipaddress.ip_address(name)
    except ValueError:
        return False
    if ip.is_loopback:
        return True
    return bound not in ("127.0.0.1", "localhost", "::1") and (name == bound or bound in ("0.0.0.0", "::"))


class Gate:
    def __init__(
        self,
        app: Callable[..., Awaitable[None]],
        *,
        bound_host: str,
        api_key: str | None,
        cors_origins: Iterable[str],
        allowed_hosts: Iterable[str] = (),
        on_response: Callable[[dict[str, Any]], None] | None = None,
    ):
        self.app = app
        self.bound_host = bound_host
        self.api_key = api_key or None
        self.origins = {o.rstrip("/") for o in cors_origins}
        self.allowed_hosts = list(allowed_hosts)
        self.on_response = on_response

    def _cors_headers(self, origin: str) -> list[tuple[bytes, bytes]]:
        return [
            (b"access-control-allow-origin", origin.encode()),
            (b"vary", b"Origin"),
            (
                b"access-control-allow-headers",
                b"authorization, content-type, x-api-key, anthropic-version, "
                b"anthropic-beta, openai-organization, openai-project",
            ),
            (b"access-control-allow-methods", b"GET, POST, OPTIONS"),
        ]

    async def _refuse(
        self, send, path: str, err: ApiError, extra: Sequence[tuple[bytes, bytes]] = ()
    ) -> None:
        body = json_bytes(error_body(api_of_path(path), err))
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        headers += [(k.lower().encode(), v.encode()) for k, v in err.headers.items()] + list(extra)
        await send({"type": "http.response.start", "status": err.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        path = scope.get("path", "")
        log: dict[str, Any] = {
            "method": scope.get("method", ""),
            "path": path,
            "status": 0,
            "model": "",
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "tool_calls": 0,
        }
        scope["callisto.log"] = log
        import time

        started = time.monotonic()

        async def logged_send(message) -> None:
            if message["type"] == "http.response.start":
                log["status"] = log.get("status") or message["status"]
                if cors_origin:
                    message = dict(
                        message, headers=list(message.get("headers", [])) + self._cors_headers(cors_origin)
                    )
            await send(message)
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                log["duration_s"] = time.monotonic() - started
                if self.on_response is not None:
                    self.on_response(log)

        cors_origin = None
        try:
            if not host_allowed(headers.get("host"), self.bound_host, self.allowed_hosts):
                raise ApiError(
                    403,
                    f"the Host header {shown(headers.get('host'))} does not name this machine; "
                    "requests must address the server by a loopback name or its bound address",
                )
            origin = headers.get("origin")
            if origin is not None:
                if origin.rstrip("/") not in self.origins:
                    raise ApiError(
                        403,
                        f"requests from the web origin {shown(origin)} are refused (CORS is "
                        f"{'off' if not self.origins else 'limited to the configured origins'})",
                    )
                cors_origin = origin
                if scope.get("method") == "OPTIONS":
                    log["status"] = 204
                    await logged_send({"type": "http.response.start", "status": 204, "headers": []})
                    await logged_send({"type": "http.response.body", "body": b""})
                    return
            if self.api_key is not None:
                auth = headers.get("authorization", "")
                token = (
                    auth[7:].strip() if auth.lower().startswith("bearer ") else headers.get("x-api-key", "")
                )
                if not token:
                    raise ApiError(
                        401,
                        "an API key is required: send it as 'Authorization: Bearer KEY' or 'x-api-key: KEY'",
                        code="missing_api_key",
                    )
                if not hmac.compare_digest(token.encode(), self.api_key.encode()):
                    raise ApiError(401, "the API key is not valid", code="invalid_api_key")
        except ApiError as err:
            log_error(scope, err)
            await self._refuse(logged_send, path, err)
            return
        try:
            await self.app(scope, receive, logged_send)
        finally:
            if "duration_s" not in log:  # the client went away before the response ended
                log["duration_s"] = time.monotonic() - started
                log["status"] = 499
                log.setdefault("error", "the client closed the connection before the response ended")
                if self.on_response is not None:
                    self.on_response(log)
