"""HTTP to a remote engine: providers, plain-sentence errors, bounded retries, cancellable streams.

Every read is bounded (a remote server is not trusted to end what it sends): bytes per line
(``Provider.max_line_bytes``), bytes per reply (``max_reply_bytes``), bytes of a JSON answer
(:data:`MAX_BODY_BYTES`), the time without a piece of the reply (``timeout_s``; keep-alives do not
count) and the time of a whole reply, its retries included (``total_timeout_s``). The session adds
calls per reply, bytes of a call's arguments and ``max_tokens`` (:mod:`._session`). A server past a
bound gets a :class:`RemoteError` with code ``too_large`` or ``timeout``, and is not asked again.
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import httpx

__all__ = [
    "KINDS",
    "MAX_BODY_BYTES",
    "MAX_CALLS",
    "MAX_CALL_ARGS_BYTES",
    "MAX_ERROR_CHARS",
    "MAX_LINE_BYTES",
    "MAX_MODELS",
    "MAX_MODEL_NAME_CHARS",
    "MAX_REPLY_BYTES",
    "MAX_TOKENS_SLACK",
    "MODES",
    "TOTAL_TIMEOUT_S",
    "Provider",
    "RemoteError",
    "RemoteStream",
    "ReplyGuard",
    "byte_size",
    "fetch_props",
    "list_models",
    "open_stream",
    "read_body",
    "short",
]

KINDS = ("openai", "anthropic", "ollama")
MODES = ("auto", "api", "callisto")  # auto: Callisto parsing where /props gives a known template
RETRY_AFTER_CAP_S = 30.0  # a longer Retry-After is reported, not waited for
ANTHROPIC_VERSION = "2023-06-01"

_MIB = 1024 * 1024
MAX_LINE_BYTES = 8 * _MIB  # one line of a streamed reply: an SSE line, an NDJSON object, a JSON body
MAX_REPLY_BYTES = 64 * _MIB  # everything one reply sends (keep-alives and usage lines included)
MAX_BODY_BYTES = 16 * _MIB  # one JSON answer: the model list, /props, /tokenize
MAX_ERROR_BYTES = 64 * 1024  # what is read of an error answer's body
MAX_ERROR_CHARS = 300  # what is kept of the server's own words in an error
MAX_CALLS = 64  # tool calls in one reply
MAX_CALL_ARGS_BYTES = 8 * _MIB  # one call's arguments (UTF-8)
MAX_TOKENS_SLACK = 16  # pieces past max_tokens before the reply is cut (a piece is at most a token)
TOTAL_TIMEOUT_S = 1800.0  # one reply, its retries included
BODY_TIMEOUT_S = 120.0  # one JSON answer, from the request to its last byte
MAX_MODELS = 5000  # names kept of a model list
MAX_MODEL_NAME_CHARS = 256


def short(text: str, limit: int = MAX_ERROR_CHARS) -> str:
    """``text`` on one line, at most ``limit`` characters (a server's words in an error)."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"


def byte_size(n: int) -> str:
    return f"{n // _MIB} MiB" if n >= _MIB and n % _MIB == 0 else f"{n} bytes"


def _secs(s: float) -> str:
    return f"{s:g}"


class RemoteError(Exception):
    """A request that failed, in one plain sentence. ``code``: refused, timeout, tls, unauthorized,
    rate_limited, server_error, http_error, redirect, cut, bad_response, too_large, cancelled.
    ``retry_after_s``: from a 429. ``retry``: whether sending the request again may help, where the
    code alone does not say (a timeout after the server took the request: no)."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        status: int | None = None,
        retry_after_s: float | None = None,
        retry: bool | None = None,
    ):
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.retry_after_s = retry_after_s
        self.retry = retry

    @property
    def retryable(self) -> bool:
        if self.retry is not None:
            return self.retry
        return self.code in ("refused", "timeout", "rate_limited", "server_error")

    def add(self, sentence: str) -> None:
        """Append ``sentence`` to the message (once)."""
        if sentence not in self.message:
            self.message = f"{self.message} {sentence}"
            self.args = (self.message,)


@dataclass(frozen=True)
class Provider:
    """A remote engine: its base URL (``http://host:port``; a trailing ``/v1``, or a pasted
    ``/v1/chat/completions``, is accepted), its ``kind`` (the API it speaks), an optional API key
    (never stored with the provider's settings: see :mod:`app.engine.remote.keys`) and the tool
    ``mode`` its settings choose."""

    url: str
    kind: str = "openai"
    api_key: str | None = field(default=None, repr=False)
    name: str = ""
    mode: str = "api"
    timeout_s: float = 60.0
    connect_timeout_s: float = 10.0
    max_retries: int = 2
    retry_backoff_s: float = 0.5  # the first wait before a retry; doubled each time
    verify: bool | str = True
    # the bounds of a reply (see the module's docstring); ``timeout_s`` is the longest wait for an
    # answer and for the next piece of a reply
    total_timeout_s: float = TOTAL_TIMEOUT_S
    max_line_bytes: int = MAX_LINE_BYTES
    max_reply_bytes: int = MAX_REPLY_BYTES
    max_calls: int = MAX_CALLS
    max_call_args_bytes: int = MAX_CALL_ARGS_BYTES

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown remote kind {self.kind!r} (choices: {', '.join(KINDS)})")
        if self.mode not in MODES:
            raise ValueError(f"unknown remote tool mode {self.mode!r} (choices: {', '.join(MODES)})")
        if not isinstance(self.url, str) or not self.url.startswith(("http://", "https://")):
            raise ValueError(f"a remote endpoint URL starts with http:// or https://, got {self.url!r}")
        if self.max_retries < 0:
            raise ValueError("max_retries must be 0 or more")
        for name in ("timeout_s", "connect_timeout_s", "total_timeout_s"):
            value = getattr(self, name)
            if not value > 0 or value == float("inf"):
                raise ValueError(f"{name} must be a positive number of seconds, got {value!r}")
        for name in ("max_line_bytes", "max_reply_bytes", "max_calls", "max_call_args_bytes"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be 1 or more")

    @property
    def base(self) -> str:
        """The URL without a trailing ``/v1`` (nor a pasted ``/chat/completions`` after it)."""
        url = self.url.rstrip("/").removesuffix("/chat/completions")
        return url[:-3] if url.endswith("/v1") else url

    def headers(self) -> dict[str, str]:
        # identity: a compressed body could grow a thousandfold past the bounds as it is decoded
        h = {
            "Accept": "application/json, text/event-stream, application/x-ndjson",
            "Accept-Encoding": "identity",
        }
        if self.kind == "anthropic":
            h["anthropic-version"] = ANTHROPIC_VERSION
            if self.api_key:
                h["x-api-key"] = self.api_key
        elif self.api_key:
            h["Authorization"] = f"Bearer {self.api_key}"
        return h

    def client(self) -> httpx.Client:
        import httpx

        timeout = httpx.Timeout(self.timeout_s, connect=self.connect_timeout_s)
        host = httpx.URL(self.base).host
        loopback = host in ("localhost", "127.0.0.1", "::1") or host.startswith("127.")
        # The environment's proxies apply to a hosted endpoint, never to one on this machine.
        return httpx.Client(
            timeout=timeout, verify=self.verify, headers=self.headers(), trust_env=not loopback
        )


def _where(provider: Provider) -> str:
    return provider.base


def _server_detail(provider: Provider, resp: httpx.Response) -> str:
    """The error text the server put in its body (JSON error shapes of the three APIs), short.
    At most :data:`MAX_ERROR_BYTES` of the body are read, for at most ``timeout_s``."""
    try:
        if hasattr(resp, "_content"):  # already read (a request sent without streaming)
            raw = resp.content[:MAX_ERROR_BYTES]
        else:
            raw = read_body(provider, resp, MAX_ERROR_BYTES, cut=True, within_s=provider.timeout_s)
        text = raw.decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - a body we cannot read adds nothing
        return ""
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return short(text, 200)
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, dict):
        err = err.get("message")
    msg = err if isinstance(err, str) else (data.get("message") if isinstance(data, dict) else None)
    return short(str(msg), 200) if msg else ""


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError, OverflowError):
            return None


def status_error(provider: Provider, resp: httpx.Response) -> RemoteError:
    where = _where(provider)
    code = resp.status_code
    if 300 <= code < 400:
        return redirect_error(provider, resp)
    detail = _server_detail(provider, resp)
    said = f" The server said: {detail}" if detail else ""
    if code in (401, 403):
        return RemoteError(
            "unauthorized",
            f"{where} refused the API key (HTTP {code}). Check the key set for this provider.{said}",
            status=code,
        )
    if code == 429:
        after = _retry_after(resp.headers.get("Retry-After"))
        wait = f" It asks to wait {after:.0f} s before trying again." if after is not None else ""
        return RemoteError(
            "rate_limited",
            f"{where} is rate limiting requests (HTTP 429).{wait}{said}",
            status=code,
            retry_after_s=after,
        )
    if code >= 500:
        return RemoteError(
            "server_error", f"{where} failed with a server error (HTTP {code}).{said}", status=code
        )
    if code == 404:
        return RemoteError(
            "http_error",
            f"{where} has no such endpoint or model (HTTP 404): {short(resp.request.url.path, 200)}.{said}",
            status=code,
        )
    return RemoteError("http_error", f"{where} rejected the request (HTTP {code}).{said}", status=code)


def redirect_error(provider: Provider, resp: httpx.Response) -> RemoteError:
    """A 3xx: never followed (the API key must not go to another address), named as what it is."""
    code = resp.status_code
    location = short(resp.headers.get("Location") or "", 200)
    to = f" to {location}" if location else ""
    return RemoteError(
        "redirect",
        f"{_where(provider)} answered with a redirect (HTTP {code}){to}. Redirects are not followed, "
        "so the API key goes nowhere else: if that address is the right one, use it as the endpoint.",
        status=code,
        retry=False,
    )


def transport_error(provider: Provider, exc: Exception) -> RemoteError:
    import ssl

    import httpx

    where = _where(provider)
    text = str(exc)
    if isinstance(exc, httpx.ConnectError):
        cause = exc.__cause__ or exc.__context__
        if isinstance(cause, ssl.SSLError) or "SSL" in text or "CERTIFICATE" in text.upper():
            return RemoteError(
                "tls",
                f"The secure connection to {where} failed (TLS): {short(text, 200)}. Check the "
                "address (http or https) and the server's certificate.",
            )
        return RemoteError(
            "refused",
            f"Could not connect to {where}: the connection was refused or the host "
            "cannot be reached. Is the server running?",
        )
    if isinstance(exc, httpx.TimeoutException):
        # The server took a request it did not answer (read, write): it may still be working on
        # it, so it is not sent again. A connection that could not be made may be tried again.
        taken = isinstance(exc, httpx.ReadTimeout | httpx.WriteTimeout)
        return RemoteError(
            "timeout",
            f"{where} did not answer in time ({type(exc).__name__}, {_secs(provider.timeout_s)} s).",
            retry=False if taken else None,
        )
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError):
        return RemoteError("cut", f"The connection to {where} was cut in the middle of the reply.")
    return RemoteError("http_error", f"The request to {where} failed: {short(text or type(exc).__name__)}.")


class ReplyGuard:
    """The time bounds of one reply, across its retries: ``total_s`` since it began, and
    ``provider.timeout_s`` spent waiting for the server since the latest piece (``progress()``;
    an open stream counts as one). Only time spent waiting for the server counts towards the
    second: a reader that is slow to take the reply (a paused terminal) is not the server's fault."""

    def __init__(self, provider: Provider, *, total_s: float | None = None, what: str = "the reply"):
        self.provider = provider
        self.total_s = provider.total_timeout_s if total_s is None else total_s
        self.idle_s = provider.timeout_s
        self.what = what
        self.started = time.monotonic()
        self.waited = 0.0  # seconds spent waiting for the server since the latest piece
        self.waiting_since: float | None = None  # while a read waits for the server
        self.tripped: RemoteError | None = None  # set by the watcher that shut the stream

    def progress(self) -> None:
        self.waited = 0.0
        if self.waiting_since is not None:
            self.waiting_since = time.monotonic()

    def wait_begins(self) -> None:
        self.waiting_since = time.monotonic()

    def wait_ends(self) -> None:
        if self.waiting_since is not None:
            self.waited += time.monotonic() - self.waiting_since
            self.waiting_since = None

    def idle(self) -> float:
        since = self.waiting_since
        return self.waited + (time.monotonic() - since if since is not None else 0.0)

    def remaining(self) -> float:
        return self.total_s - (time.monotonic() - self.started)

    def total_error(self) -> RemoteError:
        return RemoteError(
            "timeout",
            f"{_where(self.provider)} did not finish {self.what} within {_secs(self.total_s)} s "
            "(the limit on one reply); it was cut there.",
            retry=False,
        )

    def check(self) -> RemoteError | None:
        """The bound that is past, if any."""
        if time.monotonic() - self.started > self.total_s:
            return self.total_error()
        if self.idle() > self.idle_s:
            return RemoteError(
                "timeout",
                f"{_where(self.provider)} sent nothing of {self.what} for {_secs(self.idle_s)} s "
                "(keep-alive comments and empty chunks do not count); it was cut there.",
                retry=False,
            )
        return None


_EOL = re.compile(rb"\r\n|\r|\n")


class RemoteStream:
    """An open streaming response: ``lines()`` yields its text lines (or ``body()`` its bytes),
    each read bounded by the provider's limits and ``guard``; ``close()`` (also from another
    thread, e.g. on cancel) shuts the socket so a blocked read ends at once. A watcher thread
    shuts it too when ``cancel`` is set or a time bound of ``guard`` is past."""

    def __init__(
        self,
        provider: Provider,
        client: httpx.Client | None,
        resp: httpx.Response,
        cancel: threading.Event | None,
        guard: ReplyGuard | None = None,
    ):
        self.provider, self.client, self.resp, self.cancel = provider, client, resp, cancel
        self.guard = guard if guard is not None else ReplyGuard(provider)
        self.guard.progress()  # the answer's headers came
        self.received = 0
        self._closed = threading.Event()
        self._watch = threading.Thread(target=self._watcher, daemon=True, name="remote-watch")
        self._watch.start()

    def _watcher(self) -> None:
        while True:
            if self.cancel is not None and self.cancel.is_set():
                self._shutdown()
                return
            err = self.guard.check()
            if err is not None:
                self.guard.tripped = self.guard.tripped or err
                self._shutdown()
                return
            if self._closed.wait(0.05):
                return

    def _shutdown(self) -> None:
        stream = self.resp.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def _chunks(self, limit: int) -> Iterator[bytes]:
        """The body's bytes as they come: at most ``limit`` in all, within the guard's time."""
        encoding = (self.resp.headers.get("Content-Encoding") or "identity").strip().lower()
        if encoding not in ("identity", ""):
            raise RemoteError(
                "bad_response",
                f"{_where(self.provider)} answered with a compressed body ({short(encoding, 40)}) "
                "although none was asked for.",
                retry=False,
            )
        raw = self.resp.iter_raw()
        while True:
            self.guard.wait_begins()
            try:
                chunk = next(raw)
            except StopIteration:
                return
            finally:
                self.guard.wait_ends()
            self.received += len(chunk)
            if self.received > limit:
                raise RemoteError(
                    "too_large",
                    f"{_where(self.provider)} sent more than {byte_size(limit)} in one reply; it was cut there.",
                    retry=False,
                )
            err = self.guard.tripped or self.guard.check()
            if err is not None:
                raise err
            yield chunk

    def _read(self, chunks: Iterator[bytes]) -> Iterator[bytes]:
        """``chunks``, turning a transport failure into a RemoteError (a bound that shut the
        socket into its own); ends quietly when cancelled."""
        import httpx

        try:
            yield from chunks
        except (httpx.HTTPError, OSError) as exc:
            if self.cancel is not None and self.cancel.is_set():
                return
            if self.guard.tripped is not None:
                raise self.guard.tripped from exc
            raise transport_error(self.provider, exc) from exc
        if self.guard.tripped is not None and not (self.cancel is not None and self.cancel.is_set()):
            raise self.guard.tripped

    def lines(self) -> Iterator[str]:
        """The body's lines (``\\n``, ``\\r\\n`` or ``\\r`` end one), decoded as UTF-8 with U+FFFD
        for what is not; a line longer than ``max_line_bytes`` or a body longer than
        ``max_reply_bytes`` raises ``too_large``."""
        max_line = self.provider.max_line_bytes
        buf = bytearray()
        after_cr = False
        for chunk in self._read(self._chunks(self.provider.max_reply_bytes)):
            if not chunk:
                continue
            if after_cr and chunk[:1] == b"\n":  # the \n of a \r\n split across two reads
                chunk = chunk[1:]
            after_cr = chunk[-1:] == b"\r"
            pos = 0
            for m in _EOL.finditer(chunk):
                if len(buf) + m.start() - pos > max_line:
                    raise self._line_too_long()
                buf += chunk[pos : m.start()]
                yield buf.decode("utf-8", "replace")
                buf.clear()
                pos = m.end()
            if len(buf) + len(chunk) - pos > max_line:
                raise self._line_too_long()
            buf += chunk[pos:]
        if buf:
            yield buf.decode("utf-8", "replace")

    def _line_too_long(self) -> RemoteError:
        return RemoteError(
            "too_large",
            f"{_where(self.provider)} sent a line longer than {byte_size(self.provider.max_line_bytes)} "
            "(one event of a streamed reply, or a whole reply at once); it was cut there.",
            retry=False,
        )

    def body(self, limit: int, *, cut: bool = False) -> bytes:
        """The whole body; past ``limit`` bytes ``too_large``, or with ``cut`` its first ``limit``."""
        data = bytearray()
        try:
            for chunk in self._read(self._chunks(limit if not cut else 1 << 62)):
                data += chunk
                self.guard.progress()
                if cut and len(data) >= limit:
                    return bytes(data[:limit])
        except RemoteError as exc:
            if exc.code == "too_large" and not cut:
                raise RemoteError(
                    "too_large",
                    f"{_where(self.provider)} answered {self.resp.request.url.path} with more than "
                    f"{byte_size(limit)}; it was not read further.",
                    retry=False,
                ) from None
            raise
        return bytes(data)

    def close(self) -> None:
        self._closed.set()
        try:
            self.resp.close()
        except Exception:  # noqa: BLE001 - closing a cut connection may fail; it is closed either way
            pass
        if self.client is not None:
            self.client.close()


def read_body(
    provider: Provider,
    resp: httpx.Response,
    limit: int = MAX_BODY_BYTES,
    *,
    cut: bool = False,
    within_s: float | None = None,
) -> bytes:
    """The body of ``resp`` (sent with ``stream=True``), bounded: more than ``limit`` bytes raise
    RemoteError ``too_large`` (with ``cut``: its first ``limit`` bytes), and it must come whole
    within ``within_s`` (default: the provider's ``total_timeout_s``, at most ``BODY_TIMEOUT_S``).
    The response is closed; its client is not. Read whole, the body is the response's own too
    (``resp.content``, ``resp.text``, ``resp.json()`` and :func:`status_error` work on it)."""
    total = within_s if within_s is not None else min(provider.total_timeout_s, BODY_TIMEOUT_S)
    guard = ReplyGuard(provider, total_s=total, what="its answer")
    stream = RemoteStream(provider, None, resp, None, guard)
    try:
        data = stream.body(limit, cut=cut)
    finally:
        stream.close()
    if not cut:
        resp._content = data  # as httpx's own read() keeps it
    return data


def _sleep(seconds: float, cancel: threading.Event | None) -> bool:
    """Wait; False when cancelled meanwhile."""
    if cancel is None:
        time.sleep(seconds)
        return True
    return not cancel.wait(seconds)


def _timeout(provider: Provider, guard: ReplyGuard) -> httpx.Timeout:
    import httpx

    left = max(0.001, guard.remaining())
    return httpx.Timeout(min(provider.timeout_s, left), connect=min(provider.connect_timeout_s, left))


def open_stream(
    provider: Provider,
    path: str,
    body: dict[str, Any],
    *,
    cancel: threading.Event | None = None,
    on_retry: Callable[[RemoteError, int, float], None] | None = None,
    guard: ReplyGuard | None = None,
) -> RemoteStream:
    """POST ``body`` to ``path`` and return the open stream. Refusals, connect timeouts, 429 and 5xx
    are retried up to ``provider.max_retries`` times (429 after its ``Retry-After``, when at most
    ``RETRY_AFTER_CAP_S``), all within ``guard``'s total time; ``on_retry(error, attempt, wait_s)``
    is told before each wait. A redirect is an error, never followed."""
    import httpx

    guard = guard if guard is not None else ReplyGuard(provider)
    attempt = 0
    while True:
        if guard.remaining() <= 0:
            raise guard.total_error()
        client = provider.client()
        try:
            req = client.build_request(
                "POST", provider.base + path, json=body, timeout=_timeout(provider, guard)
            )
            resp = client.send(req, stream=True)
        except httpx.HTTPError as exc:
            client.close()
            err = transport_error(provider, exc)
        else:
            if resp.status_code < 300:
                return RemoteStream(provider, client, resp, cancel, guard)
            err = status_error(provider, resp)
            resp.close()
            client.close()
        wait = provider.retry_backoff_s * (2**attempt)
        if err.code == "rate_limited" and err.retry_after_s is not None:
            if err.retry_after_s > RETRY_AFTER_CAP_S:
                raise err
            wait = err.retry_after_s
        if not err.retryable or attempt >= provider.max_retries or wait >= guard.remaining():
            if attempt and err.retryable:
                err.add(f"(tried {attempt + 1} times)")
            raise err
        attempt += 1
        if on_retry is not None:
            on_retry(err, attempt, wait)
        if not _sleep(wait, cancel):
            raise RemoteError("cancelled", "Cancelled before the server answered.")


def _request_json(provider: Provider, method: str, path: str, body: Any = None) -> Any:
    """One JSON answer, bounded (:data:`MAX_BODY_BYTES`, within ``BODY_TIMEOUT_S``)."""
    import httpx

    with provider.client() as client:
        guard = ReplyGuard(provider, total_s=min(provider.total_timeout_s, BODY_TIMEOUT_S), what="its answer")
        try:
            req = client.build_request(
                method, provider.base + path, json=body, timeout=_timeout(provider, guard)
            )
            resp = client.send(req, stream=True)
        except httpx.HTTPError as exc:
            raise transport_error(provider, exc) from exc
        try:
            if resp.status_code >= 300:
                raise status_error(provider, resp)
            stream = RemoteStream(provider, None, resp, None, guard)
            try:
                raw = stream.body(MAX_BODY_BYTES)
            finally:
                stream.close()
        finally:
            resp.close()
    try:
        return json.loads(raw.decode("utf-8", "replace"))
    except (ValueError, RecursionError) as exc:
        raise RemoteError("bad_response", f"{provider.base}{path} did not answer with JSON.") from exc


def _get_json(provider: Provider, path: str) -> Any:
    return _request_json(provider, "GET", path)


def _model_name(value: Any) -> str | None:
    """A model name fit to show and to send back: printable (no control, format or bidirectional
    characters), at most :data:`MAX_MODEL_NAME_CHARS`, no ``.`` or ``..`` part, no backslash."""
    if not isinstance(value, str | int) or isinstance(value, bool):
        return None
    name = str(value)
    if not name or len(name) > MAX_MODEL_NAME_CHARS or not name.isprintable() or "\\" in name:
        return None
    if any(part in (".", "..") for part in name.split("/")):
        return None
    return name


def list_models(provider: Provider) -> list[str]:
    """The model names the endpoint offers (``/v1/models``; Ollama's ``/api/tags``): the first
    :data:`MAX_MODELS` distinct names that are fit to show (see ``_model_name``); others are left out."""
    if provider.kind == "ollama":
        data = _get_json(provider, "/api/tags")
        items = data.get("models") if isinstance(data, dict) else None
        key = "name"
    else:
        data = _get_json(provider, "/v1/models")
        items = data.get("data") if isinstance(data, dict) else None
        key = "id"
    if not isinstance(items, list):
        raise RemoteError("bad_response", f"{provider.base} answered the model list in an unknown shape.")
    names: dict[str, None] = {}
    for m in items:
        name = _model_name(m.get(key)) if isinstance(m, dict) else None
        if name is not None:
            names[name] = None
            if len(names) >= MAX_MODELS:
                break
    return list(names)


def fetch_props(provider: Provider, model: str | None = None) -> dict[str, Any] | None:
    """llama-server's ``/props`` (its chat template among them), or None where there is none.
    ``model``: the model the properties are asked of (``?model=``, which a server of several
    models, llama-server's router or Callisto's, reads; one of a single model ignores it)."""
    from urllib.parse import quote

    path = "/props" if not model else f"/props?model={quote(model, safe='')}"
    try:
        data = _get_json(provider, path)
    except RemoteError as exc:
        if exc.code in ("http_error", "bad_response"):
            return None
        raise
    return data if isinstance(data, dict) else None
