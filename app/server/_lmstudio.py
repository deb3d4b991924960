"""LM Studio's native chat, ``POST /api/v1/chat``, and its older REST API, ``/api/v0``.

A request names the ``model`` and sends ``input`` (a string, or items: ``{"type": "message" |
"text", "content": ...}`` and ``{"type": "image", "data_url": ...}``, one user message), with an
optional ``system_prompt``, the sampling fields (``temperature``, ``top_p``, ``top_k``, ``min_p``,
``repeat_penalty``), ``max_output_tokens``, ``reasoning`` (``off``, ``on``, ``low``, ``medium``,
``high``: the thinking choice every API here takes), ``context_length`` (a model loaded with less
is loaded again with it, as Ollama's ``num_ctx``) and ``ttl``.

Chats are stateful, as LM Studio's are: each answer has a ``response_id`` (``resp_...``, unless the
request says ``store: false``) that a later request continues with ``previous_response_id``,
sending only its new input. The server keeps the latest chats of this run in memory (as the
Responses API's, in a store of their own). A continued chat keeps its system prompt unless the
request gives a new one.

The answer is LM Studio's: ``output`` (a ``reasoning`` item, then the ``message``), ``stats``
(input and output tokens, the reasoning's tokens, tokens per second, time to first token, and the
model's load time when the request loaded it) and ``model_instance_id``. With ``stream: true`` it
comes as LM Studio's named server-sent events: ``chat.start``, ``model_load.start``/``end`` when
the model was loaded for it, ``prompt_processing.start``/``end``, ``reasoning.*`` and
``message.*`` with their deltas, and ``chat.end`` with the whole result. As on every streamed
endpoint here, the stream starts once the first token is there, so a request the engine refuses
(too long for the context, a template that fails) is an error status, never a broken stream; an
error after that is an ``error`` event, then ``chat.end`` with what was written.

``integrations`` (LM Studio's plugins and MCP servers run by the server) is refused with a 400
that says so: this server runs no tool a request names; a client gives the model tools over
``/v1/chat/completions``, ``/v1/responses`` or ``/v1/messages`` and runs them itself."""

from __future__ import annotations

import uuid
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from app.server._common import (
    check_bool,
    check_int,
    check_str,
    data_url_image,
    queue_turn,
    request_body,
    streamed,
    type_name,
)
from app.server._errors import ApiError, log_error, shown
from app.server._json import json_bytes, json_response
from app.server._load import publisher

if TYPE_CHECKING:
    from starlette.requests import Request

    from app.server._common import Turn
    from app.server._engine import TurnEnd

__all__ = ["chat", "v0_chat_completions", "v0_completions", "v0_get_model", "v0_models"]

#: the request's fields (LM Studio's, and ``ttl`` as every API here takes it)
_FIELDS = (
    "model",
    "input",
    "system_prompt",
    "integrations",
    "stream",
    "temperature",
    "top_p",
    "top_k",
    "min_p",
    "repeat_penalty",
    "max_output_tokens",
    "reasoning",
    "context_length",
    "store",
    "previous_response_id",
    "ttl",
)
#: the sampling fields, read as Chat Completions reads them (same names)
_SAMPLING = ("temperature", "top_p", "top_k", "min_p", "repeat_penalty")
_REASONING = ("off", "on", "low", "medium", "high")


def _fail(message: str, param: str) -> ApiError:
    return ApiError(400, message, param=param)


def _user_message(value: Any) -> dict[str, Any]:
    """``input`` as one user message (text, or text and image parts)."""
    if isinstance(value, str):
        return {"role": "user", "content": value}
    if not isinstance(value, list) or not value:
        raise _fail(f"input must be a string or a non-empty array of items, got {type_name(value)}", "input")
    parts: list[dict[str, Any]] = []
    for i, item in enumerate(value):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise _fail(f"{where} must be an object, got {type_name(item)}", where)
        kind = item.get("type")
        if kind in ("message", "text"):
            text = item.get("content")
            if not isinstance(text, str):
                raise _fail(f"{where}.content must be a string, got {type_name(text)}", f"{where}.content")
            parts.append({"type": "text", "text": text})
        elif kind == "image":
            url = item.get("data_url")
            data_url_image(url, f"{where}.data_url")  # a 400 naming it for what is no image data
            parts.append({"type": "image_url", "image_url": {"url": url}})
        else:
            raise _fail(
                f"{where}.type {shown(kind)} is not one of 'message', 'text', 'image'", f"{where}.type"
            )
    if all(p["type"] == "text" for p in parts):
        return {"role": "user", "content": "\n".join(p["text"] for p in parts)}
    return {"role": "user", "content": parts}


def _history(body: dict[str, Any], state: Any) -> list[dict[str, Any]]:
    """The kept chat ``previous_response_id`` continues (none: a new chat)."""
    rid = check_str(body.get("previous_response_id"), "previous_response_id", allow_none=True)
    if rid is None:
        return []
    if not rid.startswith("resp_"):
        raise _fail(f"previous_response_id must start with 'resp_', got {shown(rid)}", "previous_response_id")
    found = state.chats.get(rid)
    if found is None:
        raise ApiError(
            404,
            f"previous_response_id {shown(rid)} is not a chat this server keeps (it keeps the latest "
            f"{state.chats.max_items} of this run, in memory, and none sent with store: false)",
            param="previous_response_id",
            code="response_not_found",
        )
    return found[1]


def read_request(body: dict[str, Any], state: Any) -> tuple[Any, bool, list[dict[str, Any]]]:
    """(the turn, stream?, the chat it answers: what a later request continues)."""
    from app.server._openai import parse_chat_request

    unknown = sorted(k for k in body if k not in _FIELDS)
    if unknown:
        raise _fail(
            f"unknown field {shown(unknown[0])}; the fields are: {', '.join(_FIELDS)}", unknown[0][:64]
        )
    if body.get("integrations") not in (None, []):
        raise _fail(
            "integrations are not served: this server runs no plugin or MCP server a request names; "
            "give the model tools over /v1/chat/completions, /v1/responses or /v1/messages and run "
            "them in the client",
            "integrations",
        )
    check_str(body.get("model"), "model")
    if "input" not in body:
        raise _fail("input is required", "input")
    reasoning = body.get("reasoning")
    if reasoning is not None and reasoning not in _REASONING:
        raise _fail(f"reasoning must be one of {', '.join(_REASONING)}, got {shown(reasoning)}", "reasoning")
    system = check_str(body.get("system_prompt"), "system_prompt", allow_none=True)
    limit = state.config.max_tokens_limit
    max_tokens = check_int(body.get("max_output_tokens"), "max_output_tokens", lo=1, hi=limit)
    n_ctx = check_int(body.get("context_length"), "context_length", lo=1, hi=2**24)
    check_bool(body.get("store"), "store", True)
    history = [m for m in _history(body, state) if system is None or m.get("role") != "system"]
    if system is not None:
        history = [{"role": "system", "content": system}, *history]
    messages = [*history, _user_message(body["input"])]
    chat: dict[str, Any] = {
        "model": body.get("model"),
        "messages": messages,
        "stream": body.get("stream"),
        "max_completion_tokens": max_tokens,
        "reasoning_effort": reasoning,
        "ttl": body.get("ttl"),
        **{k: body[k] for k in _SAMPLING if k in body},
    }
    req, stream, _usage = parse_chat_request({k: v for k, v in chat.items() if v is not None}, state)
    if n_ctx is not None:
        req = replace(req, n_ctx=n_ctx)
    return req, stream, messages


def _writing(end: TurnEnd) -> tuple[float, float]:
    """(the seconds the reply took after its first token, its tokens a second then)."""
    writing = end.elapsed_s - (end.ttft_s or 0.0)
    return writing, end.completion_tokens / writing if writing > 0 else 0.0


def _stats(end: TurnEnd, load_s: float | None) -> dict[str, Any]:
    stats: dict[str, Any] = {
        "input_tokens": end.prompt_tokens,
        "total_output_tokens": end.completion_tokens,
        "reasoning_output_tokens": end.reasoning_tokens,
        "tokens_per_second": _writing(end)[1],
        "time_to_first_token_seconds": round(end.ttft_s or 0.0, 3),
    }
    if load_s is not None:
        stats["model_load_time_seconds"] = round(load_s, 3)
    return stats


def _result(turn: Turn, text: str, reasoning: str, end: TurnEnd | None, rid: str | None) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if reasoning:
        output.append({"type": "reasoning", "content": reasoning})
    if text or not reasoning:
        output.append({"type": "message", "content": text})
    result: dict[str, Any] = {"model_instance_id": turn.model_id, "output": output}
    if end is not None:
        result["stats"] = _stats(end, turn.load_s)
    if rid is not None:
        result["response_id"] = rid
    return result


def _keep(
    state: Any,
    rid: str | None,
    result: dict[str, Any],
    messages: list[dict[str, Any]],
    text: str,
    reasoning: str,
) -> None:
    """Keep the chat, its reply as an assistant message, for a later ``previous_response_id``."""
    if rid is None:
        return
    kept = [*messages, {"role": "assistant", "content": text, "reasoning_content": reasoning}]
    state.chats.put({**result, "id": rid}, kept, len(json_bytes(kept)) + len(json_bytes(result)))


async def chat(request: Request):
    state, body = await request_body(request)
    req, stream, messages = read_request(body, state)
    rid = None if body.get("store") is False else f"resp_{uuid.uuid4().hex}"
    turn = await queue_turn(state, req)
    if not stream:
        text, reasoning, calls, end = await turn.collect(request)
        turn.log(request, end, len(calls))
        result = _result(turn, text, reasoning, end, rid)
        _keep(state, rid, result, messages, text, reasoning)
        return json_response(result)

    def event(kind: str, **data: Any) -> bytes:
        return b"event: " + kind.encode() + b"\ndata: " + json_bytes({"type": kind, **data}) + b"\n\n"

    async def gen():
        said: dict[str, list[str]] = {"text": [], "reasoning": []}
        open_kind: list[str] = []  # the block being streamed: "text" or "reasoning"
        names = {"text": "message", "reasoning": "reasoning"}
        end = None

        def closing(kept: str | None) -> list[bytes]:
            """The open block's end, then ``chat.end`` with the whole result (kept as ``kept``)."""
            out = [event(f"{names[open_kind.pop()]}.end")] if open_kind else []
            text, reasoning = "".join(said["text"]), "".join(said["reasoning"])
            result = _result(turn, text, reasoning, end, kept)
            _keep(state, kept, result, messages, text, reasoning)
            return [*out, event("chat.end", result=result)]

        try:
            yield event("chat.start", model_instance_id=turn.model_id)
            if turn.load_s is not None:  # (known once the model is loaded: before the first token)
                yield event("model_load.start", model_instance_id=turn.model_id)
                yield event(
                    "model_load.end", model_instance_id=turn.model_id, load_time_seconds=round(turn.load_s, 3)
                )
            yield event("prompt_processing.start")
            yield event("prompt_processing.end")
            async for kind, value in turn.events():
                if kind in ("text", "reasoning"):
                    if open_kind != [kind]:
                        if open_kind:
                            yield event(f"{names[open_kind.pop()]}.end")
                        open_kind.append(kind)
                        yield event(f"{names[kind]}.start")
                    said[kind].append(value)
                    yield event(f"{names[kind]}.delta", content=value)
                elif kind == "end":
                    end = value
            for b in closing(rid):
                yield b
        except ApiError as err:
            log_error(request.scope, err)
            kind = "invalid_request" if err.status == 400 else "internal_error"
            yield event("error", error={"type": kind, "message": err.message, "param": err.param})
            for b in closing(None):  # what was written, not kept: the chat did not end
                yield b
        finally:
            turn.cancel.set()  # a client that went away stops the generation at the next token
            turn.log(request, end, 0)

    return await streamed(turn, request, gen())


# -- /api/v0 ---------------------------------------------------------------------------------------

#: the engine's finish reasons in LM Studio's words (its ``stopReason``)
_STOP_REASONS = {
    "stop": "eosFound",
    "length": "maxPredictedTokensReached",
    "deadline": "maxPredictedTokensReached",
    "tool_calls": "toolCalls",
    "cancelled": "userStopped",
}


def _v0_model(state: Any, entry: Any) -> dict[str, Any]:
    """One model as ``/api/v0/models`` lists it (``publisher``: the repository's owner for a
    model downloaded into the library; ``max_context_length``: what it was trained for)."""
    model = state.host.model(entry.path)
    if model is not None and not getattr(model, "generates", True):
        kind = "embeddings"
    else:
        kind = "vlm" if state.has_vision(entry) else "llm"
    return {
        "id": entry.id,
        "object": "model",
        "type": kind,
        "publisher": publisher(entry),
        "arch": entry.architecture,
        "compatibility_type": "gguf",
        "quantization": entry.quantization,
        "state": "loaded" if model is not None else "not-loaded",
        "max_context_length": entry.context_length or (int(model.n_ctx) if model is not None else None),
    }


async def v0_models(request: Request):
    from starlette.concurrency import run_in_threadpool

    state = request.app.state.callisto

    def listed() -> list[dict[str, Any]]:
        return [_v0_model(state, e) for e in state.catalog.entries(refresh=True)]

    return json_response({"object": "list", "data": await run_in_threadpool(listed)})


async def v0_get_model(request: Request):
    """One model; an unknown name is a 404 that lists the names."""
    from starlette.concurrency import run_in_threadpool

    state = request.app.state.callisto
    name = request.path_params["model"]
    return json_response(await run_in_threadpool(lambda: _v0_model(state, state.catalog.resolve(name))))


def _runtime() -> dict[str, Any]:
    from importlib.metadata import PackageNotFoundError, version

    try:
        engine = version("llama_cpp_python")
    except PackageNotFoundError:  # pragma: no cover - the engine is a dependency
        engine = "unknown"
    return {"name": "llama.cpp (llama-cpp-python)", "version": engine, "supported_formats": ["gguf"]}


async def _with_v0_fields(request: Request, response: Any) -> Any:
    """An OpenAI reply (not streamed, not an error) with LM Studio's ``stats``, ``model_info`` and
    ``runtime`` added; anything else as it is."""
    import json

    from starlette.responses import StreamingResponse

    turn = request.scope.get("callisto.turn")
    if isinstance(response, StreamingResponse) or response.status_code != 200 or turn is None:
        return response
    end = turn.last_end
    if end is None:
        return response
    state = request.app.state.callisto
    body = json.loads(response.body)
    writing, per_second = _writing(end)
    stop = (
        "stopStringFound"
        if end.stop_sequence is not None
        else _STOP_REASONS.get(end.finish_reason, "eosFound")
    )
    body["stats"] = {
        "tokens_per_second": per_second,
        "time_to_first_token": round(end.ttft_s or 0.0, 3),
        "generation_time": round(writing, 3),
        "stop_reason": stop,
    }
    entry = turn.entry
    model = state.host.model(entry.path)
    body["model_info"] = {
        "arch": entry.architecture,
        "quant": entry.quantization,
        "format": "gguf",
        "context_length": int(model.n_ctx) if model is not None else entry.context_length,
    }
    body["runtime"] = _runtime()
    return json_response(body)


async def v0_chat_completions(request: Request):
    from app.server._openai import chat_completions

    return await _with_v0_fields(request, await chat_completions(request))


async def v0_completions(request: Request):
    from app.server._openai import completions

    return await _with_v0_fields(request, await completions(request))
