"""Errors of the API server, written in the error shape of the API a request used."""

from __future__ import annotations

from collections.abc import MutableMapping
from typing import Any

from app.engine.errors import (
    EmbeddingInputError,
    EmbeddingModelError,
    EmbeddingOnlyError,
    EngineCrashedError,
    EngineError,
    GenerationError,
    ImageError,
    JobCancelled,
    ModelLoadError,
    NoProjectorError,
    TokenIdError,
)
from app.server._json import json_bytes

__all__ = [
    "ENGINE_ERRORS",
    "ApiError",
    "api_of_path",
    "client_message",
    "engine_api_error",
    "error_body",
    "error_response",
    "log_error",
    "shown",
    "shown_number",
]

#: the OpenAI error type of a status; any other status is an ``invalid_request_error``
_OPENAI_TYPES = {
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "server_error",
    503: "server_error",
}
#: where the Anthropic error type of a status is not the OpenAI one
_ANTHROPIC_TYPES = {413: "request_too_large", 500: "api_error", 503: "overloaded_error"}


#: how much of a client's value an error message quotes
SHOWN_CHARS = 100


def shown_number(n: int) -> str:
    """An integer for an error message: as is up to 20 digits, else how many digits it has."""
    if n.bit_length() > 64:
        return f"a number of about {int(n.bit_length() * 0.30103) + 1} digits"
    return str(n)


def shown(value: Any, limit: int = SHOWN_CHARS) -> str:
    """A client's value for an error message: ``repr(value)``, cut to about ``limit`` characters
    (a 1 MB model name is not echoed back whole)."""
    if isinstance(value, int) and not isinstance(value, bool):
        return shown_number(value)
    try:
        text = repr(value)
    except (RecursionError, ValueError):
        return f"a {type(value).__name__} nested too deeply to show"
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text)} characters)"


#: the longest engine message a client is sent
CLIENT_MESSAGE_CHARS = 500


def client_message(exc: BaseException) -> str:
    """An engine error's message for a client: its first line, without a native library's
    backtrace, a panic said in words, at most :data:`CLIENT_MESSAGE_CHARS` characters."""
    text = str(exc).strip().split("\n", 1)[0]
    for marker in (" <backtrace>", "<backtrace>", "stack backtrace:"):
        text = text.split(marker, 1)[0]
    head, panic, _ = text.partition("panic:")
    if panic:
        text = head.rstrip(" :") + ": the constraint engine cannot hold it (too large or too complex)"
    text = text.strip()
    if len(text) > CLIENT_MESSAGE_CHARS:
        text = text[:CLIENT_MESSAGE_CHARS] + "…"
    return text


class ApiError(Exception):
    """A request that cannot be served: ``status`` and a message that says what was wrong."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        param: str | None = None,
        code: str | None = None,
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.status = status
        self.message = message
        self.param = param
        self.code = code
        self.headers = dict(headers or {})
        #: the model the request named, where the error is that it cannot be had (the log shows it)
        self.model: str | None = None


#: the engine's errors in HTTP terms, first match wins: (error class, status, error code)
ENGINE_ERRORS: tuple[tuple[type[EngineError], int, str | None], ...] = (
    # a request's image the model cannot read: no projector (its message names the model and the
    # mmproj file it needs), or an image that is damaged, too large or not an image
    (NoProjectorError, 400, "model_has_no_projector"),
    (ImageError, 400, "invalid_image"),
    (EmbeddingInputError, 400, "invalid_input"),  # an input an embedding request cannot use
    (EmbeddingModelError, 400, "model_cannot_embed"),  # a reranking model
    (EmbeddingOnlyError, 400, "model_cannot_generate"),  # an embedding model asked for a reply
    (TokenIdError, 400, None),  # a prompt's or a logit_bias's token id outside the vocabulary
    (ModelLoadError, 500, "model_load_failed"),
    (JobCancelled, 503, None),
    (EngineCrashedError, 500, "engine_crashed"),  # the next request gets a fresh engine
    (GenerationError, 500, None),
)


def engine_api_error(exc: BaseException) -> ApiError:
    """What the engine raised for a request's job, in the server's terms (:data:`ENGINE_ERRORS`)."""
    if isinstance(exc, ApiError):
        return exc
    for kind, status, code in ENGINE_ERRORS:
        if isinstance(exc, kind):
            return ApiError(status, client_message(exc), param=getattr(exc, "param", None), code=code)
    return ApiError(500, f"the engine failed: {client_message(exc)}")


def api_of_path(path: str) -> str:
    """Which API's error shape a path answers in: ``anthropic``, ``ollama`` or ``openai``."""
    if path.startswith("/v1/messages"):
        return "anthropic"
    if path.startswith(("/api/v1/", "/api/v0/")):  # LM Studio's: its errors are objects, as OpenAI's
        return "openai"
    if path.startswith("/api/"):
        return "ollama"
    return "openai"


def error_body(api: str, err: ApiError) -> dict[str, Any]:
    openai_type = _OPENAI_TYPES.get(err.status, "invalid_request_error")
    anthropic_type = _ANTHROPIC_TYPES.get(err.status, openai_type)
    if api == "anthropic":
        return {"type": "error", "error": {"type": anthropic_type, "message": err.message}}
    if api == "ollama":
        return {"error": err.message}
    return {"error": {"message": err.message, "type": openai_type, "param": err.param, "code": err.code}}


def log_error(scope: MutableMapping[str, Any], err: ApiError) -> None:
    """Record in a request's log entry (its ASGI scope's ``callisto.log``) that it failed, and why.

    The server's log, the window's Server page and ``serve``'s console show the message: the client
    got it, and the person running the server reads it there. A stream's status was already sent
    as 200; its entry takes the error's status, because the reply did not complete."""
    entry = scope.setdefault("callisto.log", {})
    entry["status"] = err.status
    entry["error"] = err.message
    if err.model and not entry.get("model"):
        entry["model"] = err.model


def error_response(api: str, err: ApiError):
    from starlette.responses import Response

    return Response(
        json_bytes(error_body(api, err)),
        status_code=err.status,
        media_type="application/json",
        headers=err.headers,
    )
