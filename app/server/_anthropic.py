"""The Anthropic Messages API: ``/v1/messages`` (any query string, e.g. ``?beta=true``), streamed in
Anthropic's event order, and ``/v1/messages/count_tokens``.

Stream: ``message_start``; per content block ``content_block_start``, its deltas (``thinking_delta``,
``text_delta``, ``input_json_delta``) and ``content_block_stop``, with indices 0, 1, 2... in order;
``message_delta`` with ``stop_reason`` (``tool_use``, ``end_turn``, ``max_tokens``, or
``stop_sequence`` when one of the request's ``stop_sequences`` ended the reply, named by
``stop_sequence``); ``message_stop``.

A final assistant message is the reply's start (Anthropic's prefill: ``TurnRequest.prefill``); the
reply holds what follows it.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from app.server._common import (
    NEVER_FETCHED,
    Turn,
    call_arguments_json,
    check_bool,
    check_image_media_type,
    check_int,
    check_stop,
    check_str,
    check_tool_name,
    declared_tool,
    image_bytes,
    image_error,
    inner_call_id,
    queue_turn,
    read_sampling,
    request_body,
    result_call_id,
    split_fragments,
    streamed,
    type_name,
)
from app.server._engine import TurnEnd, TurnRequest
from app.server._errors import ApiError, log_error, shown
from app.server._json import json_bytes, json_response

if TYPE_CHECKING:
    from starlette.requests import Request

    from app.server._state import ServerState

__all__ = ["count_tokens", "messages", "parse_messages_request"]

#: the finish reasons Anthropic names otherwise (:meth:`TurnEnd.finish_in`)
_STOP = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}


def _blocks(content: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise ApiError(
            400, f"{where} must be a string or an array of content blocks, got {type_name(content)}"
        )
    for i, b in enumerate(content):
        if not isinstance(b, dict) or not isinstance(b.get("type"), str):
            raise ApiError(400, f"{where}[{i}] must be a content block object with a type")
    return content


def _image(source: Any, where: str) -> bytes:
    """An image block's bytes: ``source`` ``{"type": "base64", "media_type": "image/png", "data":
    ...}``. A ``url`` source is a 400 (this server never fetches a URL a request names), and so is
    a ``file`` source (no Files API here)."""
    w = f"{where}.source"
    inline = '({"type": "base64", "media_type": "image/png", "data": ...})'
    if not isinstance(source, dict):
        raise image_error(w, f"must be an object, got {type_name(source)}")
    kind = source.get("type")
    if kind == "url":
        raise image_error(w, f"is a url source; {NEVER_FETCHED} {inline}")
    if kind != "base64":
        raise image_error(f"{w}.type", f"{shown(kind)} is not supported: send the image inline {inline}")
    check_image_media_type(source.get("media_type"), f"{w}.media_type")
    return image_bytes(source.get("data"), f"{w}.data")


def _result_text(content: Any, where: str) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts = []
    for i, b in enumerate(_blocks(content, where)):
        if b["type"] != "text":
            raise ApiError(400, f"{where}[{i}] is a {b['type']} block; tool results may hold text only")
        parts.append(check_str(b.get("text"), f"{where}[{i}].text") or "")
    return "".join(parts)


def _system(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    parts = []
    for i, b in enumerate(_blocks(value, "system")):
        if b["type"] != "text":
            raise ApiError(400, f"system[{i}] must be a text block, got {shown(b['type'])}")
        parts.append(check_str(b.get("text"), f"system[{i}].text") or "")
    return "\n\n".join(p for p in parts if p)


def convert_messages(messages: Any, system: Any) -> list[dict[str, Any]]:
    if not isinstance(messages, list):
        raise ApiError(400, f"messages must be an array, got {type_name(messages)}")
    if not messages:
        raise ApiError(400, "messages must contain at least one message")
    out: list[dict[str, Any]] = []
    sys_text = _system(system)
    if sys_text:
        out.append({"role": "system", "content": sys_text})
    names: dict[str, str] = {}
    for i, m in enumerate(messages):
        w = f"messages[{i}]"
        if not isinstance(m, dict):
            raise ApiError(400, f"{w} must be an object, got {type_name(m)}")
        role = m.get("role")
        if role not in ("user", "assistant"):
            raise ApiError(
                400,
                f"{w}.role {shown(role)} must be 'user' or 'assistant' (the system prompt goes in "
                "the top-level system field)",
            )
        blocks = _blocks(m.get("content"), f"{w}.content")
        if role == "assistant":
            text, thinking, calls = [], [], []
            for j, b in enumerate(blocks):
                kind = b["type"]
                if kind == "text":
                    text.append(check_str(b.get("text"), f"{w}.content[{j}].text") or "")
                elif kind == "thinking":
                    thinking.append(check_str(b.get("thinking"), f"{w}.content[{j}].thinking") or "")
                elif kind == "redacted_thinking":
                    continue
                elif kind == "tool_use":
                    cid = check_str(b.get("id"), f"{w}.content[{j}].id") or ""
                    name = check_tool_name(b.get("name"), f"{w}.content[{j}].name")
                    args = b.get("input", {})
                    if not isinstance(args, dict):
                        raise ApiError(
                            400, f"{w}.content[{j}].input must be an object, got {type_name(args)}"
                        )
                    inner = inner_call_id(cid)
                    names[inner] = name
                    calls.append({"id": inner, "name": name, "arguments": args})
                else:
                    raise ApiError(
                        400,
                        f"{w}.content[{j}] has type {shown(kind)}, which an assistant message cannot "
                        "hold here (text, thinking, tool_use)",
                    )
            d: dict[str, Any] = {
                "role": "assistant",
                "content": "".join(text),
                "reasoning": "".join(thinking),
            }
            if calls:
                d["tool_calls"] = calls
            out.append(d)
            continue
        texts: list[str] = []
        images: list[bytes] = []
        for j, b in enumerate(blocks):
            kind = b["type"]
            if kind == "text":
                texts.append(check_str(b.get("text"), f"{w}.content[{j}].text") or "")
            elif kind == "image":
                images.append(_image(b.get("source"), f"{w}.content[{j}]"))
            elif kind == "tool_result":
                cid = check_str(b.get("tool_use_id"), f"{w}.content[{j}].tool_use_id") or ""
                inner = result_call_id(cid, names, f"{w}.content[{j}]", "a tool_result")
                result = _result_text(b.get("content"), f"{w}.content[{j}].content")
                if b.get("is_error") is True:
                    result = f"Error: {result}"
                out.append({"role": "tool", "content": result, "tool_call_id": inner, "name": names[inner]})
            elif kind == "document":
                raise ApiError(
                    400, f"{w}.content[{j}] is a document block; this server reads text and images only"
                )
            else:
                raise ApiError(400, f"{w}.content[{j}] has unknown type {shown(kind)}")
        if texts or images or not any(b["type"] == "tool_result" for b in blocks):
            user: dict[str, Any] = {"role": "user", "content": "".join(texts)}
            if images:
                user["images"] = images  # bytes: the engine's Message takes them as they are
            out.append(user)
    return out


def convert_tools(tools: Any) -> list[dict[str, Any]] | None:
    if tools is None:
        return None
    if not isinstance(tools, list):
        raise ApiError(400, f"tools must be an array, got {type_name(tools)}")
    out = []
    seen: set[str] = set()
    for i, t in enumerate(tools):
        w = f"tools[{i}]"
        if not isinstance(t, dict):
            raise ApiError(400, f"{w} must be an object")
        if t.get("type") not in (None, "custom"):
            raise ApiError(
                400,
                f"{w}.type {shown(t.get('type'))} is a server tool, which this server does not run; "
                "declare client tools with name, description and input_schema",
            )
        out.append(
            declared_tool(
                t.get("name"),
                t.get("description", ""),
                t.get("input_schema"),
                where=w,
                schema_field="input_schema",
                seen=seen,
            )
        )
    return out or None


def convert_tool_choice(value: Any, tools: list[dict[str, Any]] | None) -> tuple[str, bool]:
    """(choice, parallel)"""
    if value is None:
        return "auto", True
    if not isinstance(value, dict):
        raise ApiError(400, f"tool_choice must be an object, got {type_name(value)}")
    parallel = not check_bool(
        value.get("disable_parallel_tool_use"), "tool_choice.disable_parallel_tool_use", False
    )
    kind = value.get("type")
    names = [t["function"]["name"] for t in tools or []]
    if kind in ("auto", "none"):
        return kind, parallel
    if kind == "any":
        if not names:
            raise ApiError(400, "tool_choice 'any' needs tools")
        return "required", parallel
    if kind == "tool":
        name = value.get("name")
        if name not in names:
            raise ApiError(
                400,
                f"tool_choice names the tool {shown(name)}, which is not among the declared tools "
                f"({', '.join(names) or 'none'})",
            )
        return f"function:{name}", parallel
    raise ApiError(400, f"tool_choice.type {shown(kind)} is not one of auto, any, tool, none")


def parse_messages_request(
    body: dict[str, Any], state: ServerState, *, counting: bool = False
) -> TurnRequest:
    tools = convert_tools(body.get("tools"))
    choice, parallel = convert_tool_choice(body.get("tool_choice"), tools)
    max_tokens = check_int(body.get("max_tokens"), "max_tokens", lo=1, hi=state.config.max_tokens_limit)
    if max_tokens is None:
        if not counting:
            raise ApiError(400, "max_tokens is required")
        max_tokens = 1
    sampling = read_sampling(body, (("temperature", 0.0, 1.0), ("top_p", 0.0, 1.0)), top_k=True)
    thinking = body.get("thinking")
    if thinking is not None and not isinstance(thinking, dict):
        raise ApiError(400, "thinking must be an object")
    from app.engine.thinking import anthropic_thinking

    try:
        choice_of_thinking = anthropic_thinking(thinking)  # budget_tokens: the reasoning's bound
    except ValueError as exc:
        raise ApiError(400, str(exc), param="thinking") from None
    return TurnRequest(
        model=check_str(body.get("model"), "model", allow_none=True),
        messages=convert_messages(body.get("messages"), body.get("system")),
        tools=tools,
        tool_choice=choice,
        parallel_tool_calls=parallel,
        max_tokens=max_tokens,
        max_tokens_given=True,  # (Anthropic's max_tokens is required)
        sampling=sampling,
        stop=check_stop(body.get("stop_sequences"), "stop_sequences"),
        thinking=None if choice_of_thinking.is_default else choice_of_thinking,
        prefill=True,  # a final assistant message is the reply's start (Anthropic's prefill)
    )


def _stopped(end: TurnEnd) -> dict[str, Any]:
    """``stop_reason`` and ``stop_sequence``: ``stop_sequence`` and the string when one of the
    request's ``stop_sequences`` ended the reply."""
    if end.stop_sequence is not None:
        return {"stop_reason": "stop_sequence", "stop_sequence": end.stop_sequence}
    return {"stop_reason": end.finish_in(_STOP), "stop_sequence": None}


def _usage(end: TurnEnd | None) -> dict[str, Any]:
    if end is None:
        return {"input_tokens": 0, "output_tokens": 0}
    return {
        "input_tokens": end.prompt_tokens - end.cached_tokens,
        "output_tokens": end.completion_tokens,
        "cache_read_input_tokens": end.cached_tokens,
        "cache_creation_input_tokens": 0,
    }


def _event(name: str, data: dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: ".encode() + json_bytes(data) + b"\n\n"


async def messages(request: Request):
    state, body = await request_body(request)
    req = parse_messages_request(body, state)
    stream = check_bool(body.get("stream"), "stream", False)
    turn = await queue_turn(state, req)
    mid = f"msg_{uuid.uuid4().hex[:24]}"
    if not stream:
        text, reasoning, calls, end = await turn.collect(request)
        turn.log(request, end, len(calls))
        content: list[dict[str, Any]] = []
        if reasoning:
            content.append({"type": "thinking", "thinking": reasoning, "signature": ""})
        if text:
            content.append({"type": "text", "text": text})
        for c in calls:
            content.append(
                {
                    "type": "tool_use",
                    "id": f"toolu_{c.id}",
                    "name": c.name,
                    "input": c.arguments if isinstance(c.arguments, dict) else {},
                }
            )
        return json_response(
            {
                "id": mid,
                "type": "message",
                "role": "assistant",
                "model": turn.model_id,
                "content": content,
                **_stopped(end),
                "usage": _usage(end),
            }
        )

    async def gen():
        end = None
        ncalls = 0
        index = -1
        open_kind: str | None = None
        try:
            yield _event(
                "message_start",
                {
                    "type": "message_start",
                    "message": {
                        "id": mid,
                        "type": "message",
                        "role": "assistant",
                        "model": turn.model_id,
                        "content": [],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": _usage(None),
                    },
                },
            )

            def delta(body: dict[str, Any]) -> bytes:
                """A ``content_block_delta`` event for the open block."""
                return _event(
                    "content_block_delta", {"type": "content_block_delta", "index": index, "delta": body}
                )

            def close() -> list[bytes]:
                nonlocal open_kind
                if open_kind is None:
                    return []
                out = []
                if open_kind == "thinking":
                    out.append(delta({"type": "signature_delta", "signature": ""}))
                out.append(_event("content_block_stop", {"type": "content_block_stop", "index": index}))
                open_kind = None
                return out

            def open_block(kind: str, block: dict[str, Any]) -> list[bytes]:
                nonlocal index, open_kind
                out = close()
                index += 1
                open_kind = kind
                out.append(
                    _event(
                        "content_block_start",
                        {"type": "content_block_start", "index": index, "content_block": block},
                    )
                )
                return out

            async for kind, value in turn.events():
                if kind == "text":
                    if open_kind != "text":
                        for b in open_block("text", {"type": "text", "text": ""}):
                            yield b
                    yield delta({"type": "text_delta", "text": value})
                elif kind == "reasoning":
                    if open_kind != "thinking":
                        for b in open_block(
                            "thinking", {"type": "thinking", "thinking": "", "signature": ""}
                        ):
                            yield b
                    yield delta({"type": "thinking_delta", "thinking": value})
                elif kind == "call":
                    ncalls += 1
                    for b in open_block(
                        "tool_use",
                        {"type": "tool_use", "id": f"toolu_{value.id}", "name": value.name, "input": {}},
                    ):
                        yield b
                    for frag in split_fragments(call_arguments_json(value)):
                        yield delta({"type": "input_json_delta", "partial_json": frag})
                    for b in close():
                        yield b
                elif kind == "end":
                    end = value
            for b in close():
                yield b
            assert end is not None
            yield _event(
                "message_delta",
                {
                    "type": "message_delta",
                    "delta": _stopped(end),
                    "usage": {"output_tokens": end.completion_tokens},
                },
            )
            yield _event("message_stop", {"type": "message_stop"})
        except ApiError as err:
            from app.server._errors import error_body

            log_error(request.scope, err)
            yield _event("error", error_body("anthropic", err))
        finally:
            turn.cancel.set()
            turn.log(request, end, ncalls)

    return await streamed(turn, request, gen())


async def count_tokens(request: Request):

    from app.server._engine import count_tokens as count

    state, body = await request_body(request)
    req = parse_messages_request(body, state, counting=True)
    turn = Turn(state, req)
    tool_format = state.config.tool_format
    # (turn.req: with a made model's settings, as the reply would render)
    value = await turn.run(request, lambda model, _cancel: count(model, turn.req, tool_format))
    turn.log(request, None, 0)
    return json_response({"input_tokens": value})
