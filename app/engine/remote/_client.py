"""HTTP to a remote engine: providers, plain-sentence errors, bounded retries, cancellable streams."""

from __future__ import annotations

import json
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
    "MODES",
    "Provider",
    "RemoteError",
    "RemoteStream",
    "fetch_props",
    "list_models",
    "open_stream",
]

KINDS = ("openai", "anthropic", "ollama")
MODES = ("auto", "api", "callisto")  # auto: Callisto parsing where /props gives a known template
RETRY_AFTER_CAP_S = 30.0  # a longer Retry-After is reported, not waited for
ANTHROPIC_VERSION = "2023-06-01"


class RemoteError(Exception):
    """A request that failed, in one plain sentence. ``code``: refused, timeout, tls, unauthorized,
    rate_limited, server_error, http_error, cut, bad_response. ``retry_after_s``: from a 429."""

    def __init__(
        self, code: str, message: str, *, status: int | None = None, retry_after_s: float | None = None
    ):
        super().__init__(message)
        self.code = code
        self.message = message
        self.status = status
        self.retry_after_s = retry_after_s

    @property
    def retryable(self) -> bool:
        return self.code in ("refused", "timeout", "rate_limited", "server_error")


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

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown remote kind {self.kind!r} (choices: {', '.join(KINDS)})")
        if self.mode not in MODES:
            raise ValueError(f"unknown remote tool mode {self.mode!r} (choices: {', '.join(MODES)})")
        if not isinstance(self.url, str) or not self.url.startswith(("http://", "https://")):
            raise ValueError(f"a remote endpoint URL starts with http:// or https://, got {self.url!r}")
        if self.max_retries < 0:
            raise ValueError("max_retries must be 0 or more")

    @property
    def base(self) -> str:
        """The URL without a trailing ``/v1`` (nor a pasted ``/chat/completions`` after it)."""
        url = self.url.rstrip("/").removesuffix("/chat/completions")
        return url[:-3] if url.endswith("/v1") else url

    def headers(self) -> dict[str, str]:
        h = {"Accept": "application/json, text/event-stream, application/x-ndjson"}
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


def _server_detail(resp: httpx.Response) -> str:
    """The error text the server put in its body (JSON error shapes of the three APIs), short."""
    try:
        text = resp.read().decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - a body we cannot read adds nothing
        return ""
    try:
        data = json.loads(text)
    except ValueError:
        return " ".join(text.split())[:200]
    err = data.get("error") if isinstance(data, dict) else None
    if isinstance(err, dict):
        err = err.get("message")
    msg = err if isinstance(err, str) else (data.get("message") if isinstance(data, dict) else None)
    return str(msg)[:200] if msg else ""


def _retry_after(value: str | None) -> float | None:
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        from email.utils import parsedate_to_datetime

        try:
            return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
        except (TypeError, ValueError):
            return None


def status_error(provider: Provider, resp: httpx.Response) -> RemoteError:
    where = _where(provider)
    detail = _server_detail(resp)
    said = f" The server said: {detail}" if detail else ""
    code = resp.status_code
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
            f"{where} has no such endpoint or model (HTTP 404): {resp.request.url.path}.{said}",
            status=code,
        )
    return RemoteError("http_error", f"{where} rejected the request (HTTP {code}).{said}", status=code)


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
                f"The secure connection to {where} failed (TLS): {text}. Check the "
                "address (http or https) and the server's certificate.",
            )
        return RemoteError(
            "refused",
            f"Could not connect to {where}: the connection was refused or the host "
            "cannot be reached. Is the server running?",
        )
    if isinstance(exc, httpx.TimeoutException):
        return RemoteError("timeout", f"{where} did not answer in time ({type(exc).__name__}).")
    if isinstance(exc, httpx.RemoteProtocolError | httpx.ReadError):
        return RemoteError("cut", f"The connection to {where} was cut in the middle of the reply.")
    return RemoteError("http_error", f"The request to {where} failed: {text or type(exc).__name__}.")


class RemoteStream:
    """An open streaming response: ``lines()`` yields its text lines; ``close()`` (also from
    another thread, e.g. on cancel) shuts the socket so a blocked read ends at once."""

    def __init__(
        self, provider: Provider, client: httpx.Client, resp: httpx.Response, cancel: threading.Event | None
    ):
        self.provider, self.client, self.resp, self.cancel = provider, client, resp, cancel
        self._closed = threading.Event()
        self._watch: threading.Thread | None = None
        if cancel is not None:
            self._watch = threading.Thread(target=self._watcher, daemon=True, name="remote-cancel")
            self._watch.start()

    def _watcher(self) -> None:
        assert self.cancel is not None
        while not self._closed.is_set():
            if self.cancel.wait(0.05):
                self._shutdown()
                return

    def _shutdown(self) -> None:
        stream = self.resp.extensions.get("network_stream")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if isinstance(sock, socket.socket):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def lines(self) -> Iterator[str]:
        import httpx

        try:
            yield from self.resp.iter_lines()
        except (httpx.HTTPError, OSError) as exc:
            if self.cancel is not None and self.cancel.is_set():
                return
            raise transport_error(self.provider, exc) from exc

    def close(self) -> None:
        self._closed.set()
        try:
            self.resp.close()
        except Exception:  # noqa: BLE001 - closing a cut connection may fail; it is closed either way
            pass
        self.client.close()


def _sleep(seconds: float, cancel: threading.Event | None) -> bool:
    """Wait; False when cancelled meanwhile."""
    if cancel is None:
        time.sleep(seconds)
        return True
    return not cancel.wait(seconds)


def open_stream(
    provider: Provider,
    path: str,
    body: dict[str, Any],
    *,
    cancel: threading.Event | None = None,
    on_retry: Callable[[RemoteError, int, float], None] | None = None,
) -> RemoteStream:
    """POST ``body`` to ``path`` and return the open stream. Refusals, timeouts, 429 and 5xx are
    retried up to ``provider.max_retries`` times (429 after its ``Retry-After``, when at most
    ``RETRY_AFTER_CAP_S``); ``on_retry(error, attempt, wait_s)`` is told before each wait."""
    import httpx

    attempt = 0
    while True:
        client = provider.client()
        try:
            req = client.build_request("POST", provider.base + path, json=body)
            resp = client.send(req, stream=True)
        except httpx.HTTPError as exc:
            client.close()
            err = transport_error(provider, exc)
        else:
            if resp.status_code < 400:
                return RemoteStream(provider, client, resp, cancel)
            err = status_error(provider, resp)
            resp.close()
            client.close()
        wait = provider.retry_backoff_s * (2**attempt)
        if err.code == "rate_limited" and err.retry_after_s is not None:
            if err.retry_after_s > RETRY_AFTER_CAP_S:
                raise err
            wait = err.retry_after_s
        if not err.retryable or attempt >= provider.max_retries:
            if attempt and err.retryable:
                err.message += f" (tried {attempt + 1} times)"
                err.args = (err.message,)
            raise err
        attempt += 1
        if on_retry is not None:
            on_retry(err, attempt, wait)
        if not _sleep(wait, cancel):
            raise RemoteError("cancelled", "Cancelled before the server answered.")


def _get_json(provider: Provider, path: str) -> Any:
    import httpx

    with provider.client() as client:
        try:
            resp = client.get(provider.base + path)
        except httpx.HTTPError as exc:
            raise transport_error(provider, exc) from exc
        if resp.status_code >= 400:
            raise status_error(provider, resp)
        try:
            return resp.json()
        except ValueError as exc:
            raise RemoteError("bad_response", f"{provider.base}{path} did not answer with JSON.") from exc


def list_models(provider: Provider) -> list[str]:
    """The model names the endpoint offers (``/v1/models``; Ollama's ``/api/tags``)."""
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
    return [str(m[key]) for m in items if isinstance(m, dict) and m.get(key)]


def fetch_props(provider: Provider) -> dict[str, Any] | None:
    """llama-server's ``/props`` (its chat template among them), or None where there is none."""
    try:
        data = _get_json(provider, "/props")
    except RemoteError as exc:
        if exc.code in ("http_error", "bad_response"):
            return None
        raise
    return data if isinstance(data, dict) else None
