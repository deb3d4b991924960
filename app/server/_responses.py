"""OpenAI's Responses API: ``POST /v1/responses``, streamed too (what openai-agents and Codex send
by default).

A request is read into the Chat Completions shape and through the same checks
(``app.server._openai.parse_chat_request``), so a turn is the same turn either way: ``input`` (a
string, or items: messages with ``input_text`` / ``input_image`` / ``output_text`` parts,
``function_call``, ``function_call_output``, ``reasoning``), ``instructions`` (the system prompt),
function ``tools`` (flat: ``name``, ``description``, ``parameters``), ``tool_choice`` (``auto``,
``none``, ``required``, ``{"type": "function", "name": ...}``, ``{"type": "allowed_tools", "mode":
..., "tools": [...]}``), ``parallel_tool_calls``,
``max_tool_calls``, ``max_output_tokens``, ``temperature``, ``top_p``, ``reasoning.effort``,
``text.format`` (``text``, ``json_object``, ``json_schema``), ``top_logprobs`` and ``include``'s
``message.output_text.logprobs`` (the text's tokens' log probabilities, in ``output_text`` and
each ``response.output_text.delta``). A 400 names the Responses field
(``input[3]``, ``max_output_tokens``), never the Chat Completions one it was read as.

The server keeps the latest responses of its run in memory (``_state.RecentResponses``: 256, 64
MiB; none sent with ``store: false``): ``previous_response_id`` continues one (its conversation
and reply; its instructions are not carried over, as OpenAI's are not), ``GET`` and ``DELETE
/v1/responses/{id}`` read and forget one. A response it does not keep (another run's, one pushed
out) is a 400 asking for the whole conversation; an ``item_reference``, ``background`` and
``conversation`` are 400s, and hosted tools (web search, file search, code interpreter, computer
use, MCP) are a 400 naming them, never silently dropped.

The answer: a ``reasoning`` item (the model's thinking, as ``reasoning_text``), a ``message`` item
(``output_text``) and a ``function_call`` item per call (``call_id`` is what the client answers
with ``function_call_output``); ``status`` ``incomplete`` (``max_output_tokens``) when the token
limit cut it. Streamed, the events are the API's: ``response.created``, ``response.in_progress``,
then per item ``response.output_item.added``, its deltas (``response.reasoning_text.delta``,
``response.content_part.added`` / ``response.output_text.delta``,
``response.function_call_arguments.delta``), their ``.done`` events and
``response.output_item.done``, and ``response.completed`` (or ``response.incomplete``) with the
whole response; each carries a ``sequence_number``.
"""

from __future__ import annotations

import copy
import re
import time
import uuid
from typing import TYPE_CHECKING, Any

from app.server._common import (
    TOOL_CHOICE_HEADER,
    call_arguments_json,
    check_str,
    queue_turn,
    request_body,
    split_fragments,
    streamed,
    type_name,
)
from app.server._errors import ApiError, log_error, shown
from app.server._json import json_bytes, json_response
from app.server._logprobs import CONTENT, LogprobBuffer, chat_logprobs

if TYPE_CHECKING:
    from starlette.requests import Request

    from app.server._engine import TurnEnd

__all__ = ["create_response", "delete_response", "get_response", "read_request"]

#: hosted tools the Responses API offers and this server does not run
_HOSTED = (
    "web_search",
    "web_search_preview",
    "file_search",
    "code_interpreter",
    "computer_use_preview",
    "computer_use",
    "mcp",
    "image_generation",
    "local_shell",
    "shell",
    "apply_patch",
    "custom",
)
#: what ``include`` names to have the text's log probabilities
_LOGPROBS = "message.output_text.logprobs"
#: Chat Completions fields the Responses fields are read as, for the words of a 400
_FIELD_NAMES = (
    ("max_completion_tokens", "max_output_tokens"),
    ("max_tokens", "max_output_tokens"),
    ("response_format", "text.format"),
    ("reasoning_effort", "reasoning.effort"),
)
_MESSAGE_AT = re.compile(r"messages\[(\d+)\]")
_CALL_AT = re.compile(r"messages\[(\d+)\]\.tool_calls\[(\d+)\](?:\.function)?(\.id\b)?")


def _fail(message: str, param: str | None = None) -> ApiError:
    return ApiError(400, message, param=param)


def _parts_text(content: Any, where: str, allowed: tuple[str, ...]) -> str:
    """The text of an assistant message's or a tool output's content: a string, or parts of the
    ``allowed`` types (their ``text``; a refusal's ``refusal``)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise _fail(f"{where} must be a string or an array of content parts, got {type_name(content)}", where)
    out = []
    for i, part in enumerate(content):
        w = f"{where}[{i}]"
        if not isinstance(part, dict):
            raise _fail(f"{w} must be an object, got {type_name(part)}", where)
        kind = part.get("type")
        if kind not in allowed:
            raise _fail(f"{w} has type {shown(kind)}; here it may be {', '.join(allowed)}", where)
        key = "refusal" if kind == "refusal" else "text"
        out.append(check_str(part.get(key), f"{w}.{key}") or "")
    return "".join(out)


def _reasoning_text(item: dict[str, Any], where: str) -> str:
    """A reasoning item's words: its ``content`` (``reasoning_text``), else its ``summary``."""
    for key, kind in (("content", "reasoning_text"), ("summary", "summary_text")):
        parts = item.get(key)
        if parts:
            return _parts_text(parts, f"{where}.{key}", (kind,))
    return ""


class _Sources:
    """Which request field each Chat Completions message came from, for the words of a 400: the
    input item of each message (None: the instructions), and of each call an assistant message holds."""

    #: the place of a message of the stored conversation ``previous_response_id`` continues
    PREVIOUS = -1

    def __init__(self) -> None:
        self.messages: list[int | None] = []
        self.calls: dict[int, list[int]] = {}

    def name(self, m: int, call: int | None = None) -> str:
        if call is not None and call < len(self.calls.get(m, [])):
            return f"input[{self.calls[m][call]}]"
        if m >= len(self.messages):
            return f"input[{m}]"
        at = self.messages[m]
        if at == self.PREVIOUS:
            return "the conversation of previous_response_id"
        return "instructions" if at is None else f"input[{at}]"


def _messages(body: dict[str, Any], history: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], _Sources]:
    """``instructions``, the ``history`` a ``previous_response_id`` continues (its instructions are
    not carried over, as OpenAI's are not) and ``input`` as Chat Completions messages, and where
    each came from, so that a 400 names the item."""
    msgs: list[dict[str, Any]] = []
    sources = _Sources()
    source = sources.messages
    instructions = check_str(body.get("instructions"), "instructions", allow_none=True)
    if instructions:
        msgs.append({"role": "system", "content": instructions})
        source.append(None)
    for message in copy.deepcopy(history):  # the kept conversation is never changed by a request
        msgs.append(message)
        source.append(sources.PREVIOUS)
    value = body.get("input")
    if isinstance(value, str):
        if not value:
            raise _fail("input is empty", "input")
        msgs.append({"role": "user", "content": value})
        source.append(0)
        return msgs, sources
    if not isinstance(value, list):
        raise _fail(f"input must be a string or an array of items, got {type_name(value)}", "input")
    if not value:
        raise _fail("input must hold at least one item", "input")
    reasoning = ""  # a reasoning item's words, for the assistant turn that follows it
    for i, item in enumerate(value):
        w = f"input[{i}]"
        if not isinstance(item, dict):
            raise _fail(f"{w} must be an object, got {type_name(item)}", "input")
        kind = item.get("type", "message")
        last = msgs[-1] if msgs else None
        if kind == "message":
            role = item.get("role")
            if role == "assistant":
                text = _parts_text(
                    item.get("content"), f"{w}.content", ("output_text", "refusal", "input_text")
                )
                msgs.append({"role": "assistant", "content": text, "reasoning_content": reasoning})
                reasoning = ""
            elif role in ("user", "system", "developer"):
                msgs.append({"role": role, "content": item.get("content")})
            else:
                raise _fail(
                    f"{w}.role {shown(role)} is not one of user, system, developer, assistant", "input"
                )
        elif kind == "function_call":
            call = {
                "id": check_str(item.get("call_id"), f"{w}.call_id"),
                "type": "function",
                "function": {
                    "name": item.get("name"),
                    "arguments": check_str(item.get("arguments", ""), f"{w}.arguments"),
                },
            }
            if last is not None and last["role"] == "assistant" and not reasoning:
                last.setdefault("tool_calls", []).append(call)  # the calls of one turn, together
                continue
            msgs.append(
                {"role": "assistant", "content": "", "reasoning_content": reasoning, "tool_calls": [call]}
            )
            reasoning = ""
        elif kind == "function_call_output":
            output = _parts_text(item.get("output"), f"{w}.output", ("input_text", "output_text"))
            msgs.append({"role": "tool", "tool_call_id": item.get("call_id"), "content": output})
        elif kind == "reasoning":
            reasoning += _reasoning_text(item, w)
            continue
        elif kind == "item_reference":
            raise _fail(
                f"{w} is an item_reference, which this server does not read: send the item itself "
                "(or continue a kept response with previous_response_id)",
                "input",
            )
        else:
            raise _fail(
                f"{w} has type {shown(kind)} (expected message, function_call, function_call_output "
                "or reasoning)",
                "input",
            )
        source.append(i)
    return msgs, sources


def _tools(value: Any) -> list[dict[str, Any]] | None:
    if value is None:
        return None
    if not isinstance(value, list):
        raise _fail(f"tools must be an array, got {type_name(value)}", "tools")
    out = []
    for i, tool in enumerate(value):
        w = f"tools[{i}]"
        if not isinstance(tool, dict):
            raise _fail(f"{w} must be an object, got {type_name(tool)}", "tools")
        kind = tool.get("type")
        if kind != "function":
            if isinstance(kind, str) and kind.startswith(_HOSTED):
                raise _fail(
                    f"{w} is the hosted tool {shown(kind)}, which this server does not run: declare a "
                    "function tool and run it in the client",
                    "tools",
                )
            raise _fail(f"{w}.type must be 'function', got {shown(kind)}", "tools")
        fn = {k: tool[k] for k in ("name", "description", "parameters", "strict") if k in tool}
        out.append({"type": "function", "function": fn})
    return out


def _tool_choice(value: Any) -> Any:
    if isinstance(value, dict):
        kind = value.get("type")
        if kind == "function":
            return {"type": "function", "function": {"name": value.get("name")}}
        if kind == "allowed_tools":  # (flat tools, as the Responses API names them)
            listed = value.get("tools")
            tools = [
                {"type": t.get("type"), "function": {"name": t.get("name")}} if isinstance(t, dict) else t
                for t in (listed if isinstance(listed, list) else [])
            ]
            return {"type": "allowed_tools", "allowed_tools": {"mode": value.get("mode"), "tools": tools}}
        if kind in _HOSTED:
            raise _fail(
                f"tool_choice of type {shown(kind)} is not served: use auto, none, required or a function",
                "tool_choice",
            )
    return value


def _object(value: Any, where: str) -> dict[str, Any] | None:
    """``value`` when it is an object, None when absent; a 400 naming ``where`` otherwise."""
    if value is not None and not isinstance(value, dict):
        raise _fail(f"{where} must be an object, got {type_name(value)}", where)
    return value


def _text_format(value: Any) -> Any:
    fmt = _object((_object(value, "text") or {}).get("format"), "text.format")
    if fmt is not None and fmt.get("type") == "json_schema":
        schema = {k: fmt[k] for k in ("name", "schema", "strict", "description") if k in fmt}
        return {"type": "json_schema", "json_schema": schema}
    return fmt


def _effort(value: Any) -> Any:
    return (_object(value, "reasoning") or {}).get("effort")


def _renamed(err: ApiError, sources: _Sources) -> ApiError:
    """A 400 from the Chat Completions checks in the Responses request's words."""

    def call_at(m: re.Match[str]) -> str:
        return sources.name(int(m.group(1)), int(m.group(2))) + (".call_id" if m.group(3) else "")

    def message_at(m: re.Match[str]) -> str:
        return sources.name(int(m.group(1)))

    text = _CALL_AT.sub(call_at, err.message)
    text = _MESSAGE_AT.sub(message_at, text)
    param = err.param
    for chat, theirs in _FIELD_NAMES:
        text = text.replace(chat, theirs)
        if param == chat:
            param = theirs
    text = text.replace("messages", "input").replace(".tool_call_id", ".call_id")
    if param is not None:
        param = _MESSAGE_AT.sub("input", _CALL_AT.sub("input", param))
    return ApiError(err.status, text, param=param, code=err.code, headers=err.headers)


def _history(body: dict[str, Any], state: Any) -> list[dict[str, Any]]:
    """The conversation ``previous_response_id`` continues; a 400 when this server keeps no such
    response (it keeps the latest of this run, in memory)."""
    rid = check_str(body.get("previous_response_id"), "previous_response_id", allow_none=True)
    if rid is None:
        return []
    found = state.responses.get(rid)
    if found is None:
        raise _fail(
            f"previous_response_id {shown(rid)} is not a response this server keeps (it keeps the latest "
            f"{state.responses.max_items} of this run, in memory, and none sent with store: false): "
            "send the whole conversation in input",
            "previous_response_id",
        )
    return found[1]


def read_request(
    body: dict[str, Any], state: Any, header_choice: str | None = None
) -> tuple[Any, bool, list[dict[str, Any]]]:
    """(the turn, stream?, the conversation it answers without its instructions: what a later
    ``previous_response_id`` continues) of a Responses request (the module's docstring says what
    is read)."""
    from app.server._openai import parse_chat_request

    if body.get("background") is True:
        raise _fail(
            "background responses are not served: leave background out and wait for the reply", "background"
        )
    if body.get("conversation") is not None:
        raise _fail("conversation is not served: send the whole conversation in input", "conversation")
    msgs, sources = _messages(body, _history(body, state))
    chat: dict[str, Any] = {
        "model": body.get("model"),
        "messages": msgs,
        "tools": _tools(body.get("tools")),
        "tool_choice": _tool_choice(body.get("tool_choice")),
        "parallel_tool_calls": body.get("parallel_tool_calls"),
        "max_completion_tokens": body.get("max_output_tokens"),
        "max_tool_calls": body.get("max_tool_calls"),
        "temperature": body.get("temperature"),
        "top_p": body.get("top_p"),
        "stream": body.get("stream"),
        "response_format": _text_format(body.get("text")),
        "reasoning_effort": _effort(body.get("reasoning")),
        "ttl": body.get("ttl"),
    }
    for key in ("top_k", "min_p", "seed", "stop", "chat_template_kwargs", "repeat_penalty", "top_logprobs"):
        if key in body:
            chat[key] = body[key]
    include = body.get("include")
    if include is not None and (
        not isinstance(include, list) or not all(isinstance(i, str) for i in include)
    ):
        raise _fail("include must be an array of strings", "include")
    # the text's log probabilities: asked with include (top_logprobs alone asks too)
    if _LOGPROBS in (include or []) or body.get("top_logprobs"):
        chat["logprobs"] = True
    try:
        req, stream, _usage = parse_chat_request(
            {k: v for k, v in chat.items() if v is not None}, state, header_choice
        )
    except ApiError as err:
        raise _renamed(err, sources) from None
    conversation = [m for m, at in zip(msgs, sources.messages, strict=True) if at is not None]
    return req, stream, conversation


# -- the answer ------------------------------------------------------------------------------------


def _usage(end: TurnEnd) -> dict[str, Any]:
    return {
        "input_tokens": end.prompt_tokens,
        "input_tokens_details": {"cached_tokens": end.cached_tokens},
        "output_tokens": end.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": end.reasoning_tokens},
        "total_tokens": end.prompt_tokens + end.completion_tokens,
    }


def _new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def _reasoning_item(item_id: str, text: str, status: str = "completed") -> dict[str, Any]:
    return {
        "type": "reasoning",
        "id": item_id,
        "summary": [],
        "content": [{"type": "reasoning_text", "text": text}] if text else [],
        "status": status,
    }


def _text_part(text: str, logprobs: list[Any] | None = None) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": _entries(logprobs)}


def _entries(logprobs: list[Any] | None) -> list[dict[str, Any]]:
    """The Responses API's ``logprobs`` of a text (Chat Completions' entries)."""
    return chat_logprobs(logprobs)["content"] if logprobs else []


def _message_item(
    item_id: str, text: str | None, status: str = "completed", logprobs: list[Any] | None = None
) -> dict[str, Any]:
    content = [] if text is None else [_text_part(text, logprobs)]
    return {"type": "message", "id": item_id, "status": status, "role": "assistant", "content": content}


def _call_item(item_id: str, call: Any, arguments: str, status: str = "completed") -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": item_id,
        "call_id": f"call_{call.id}",
        "name": call.name,
        "arguments": arguments,
        "status": status,
    }


class _Shell:
    """The response object around the items: the request's settings echoed, as the API does."""

    def __init__(self, body: dict[str, Any], req: Any):
        self.id = _new_id("resp")
        self.created = int(time.time())
        self.body = body
        self.req = req

    def response(self, model: str, output: list[dict[str, Any]], end: TurnEnd | None) -> dict[str, Any]:
        body = self.body
        status, incomplete = "in_progress", None
        if end is not None:
            cut = end.finish_in() == "length"
            status = "incomplete" if cut else "completed"
            incomplete = {"reason": "max_output_tokens"} if cut else None
        choice = self.req.tool_choice
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "error": None,
            "incomplete_details": incomplete,
            "instructions": body.get("instructions"),
            "max_output_tokens": body.get("max_output_tokens"),
            "max_tool_calls": body.get("max_tool_calls"),
            "model": model,
            "output": output,
            "parallel_tool_calls": self.req.parallel_tool_calls,
            "previous_response_id": body.get("previous_response_id"),
            "reasoning": {"effort": (body.get("reasoning") or {}).get("effort"), "summary": None},
            "store": body.get("store") is not False,
            "temperature": body.get("temperature", 1.0),
            "text": {"format": (body.get("text") or {}).get("format") or {"type": "text"}},
            "tool_choice": (
                {"type": "function", "name": choice.split(":", 1)[1]}
                if choice.startswith("function:")
                else body["tool_choice"]  # (allowed_tools: as the request gave it)
                if self.req.allowed_tools is not None
                else choice
            ),
            "tools": body.get("tools") or [],
            "top_p": body.get("top_p", 1.0),
            "top_logprobs": self.req.options.logprobs,
            "truncation": "disabled",
            "usage": None if end is None else _usage(end),
            "metadata": body.get("metadata") if isinstance(body.get("metadata"), dict) else {},
        }


def _remember(
    state: Any,
    body: dict[str, Any],
    response: dict[str, Any],
    conversation: list[dict[str, Any]],
    reply: tuple[str, str, list[Any]],
) -> None:
    """Keep the response and the conversation it ends (its reply as an assistant message) for a
    later ``previous_response_id``, unless the request said ``store: false``."""
    if body.get("store") is False:
        return
    text, reasoning, calls = reply
    assistant: dict[str, Any] = {"role": "assistant", "content": text, "reasoning_content": reasoning}
    if calls:
        assistant["tool_calls"] = [
            {
                "id": f"call_{c.id}",
                "type": "function",
                "function": {"name": c.name, "arguments": call_arguments_json(c)},
            }
            for c in calls
        ]
    kept = [*conversation, assistant]
    size = len(json_bytes(kept)) + len(json_bytes(response))
    state.responses.put(response, kept, size)


async def create_response(request: Request):
    state, body = await request_body(request)
    req, stream, conversation = read_request(body, state, request.headers.get(TOOL_CHOICE_HEADER))
    turn = await queue_turn(state, req)
    shell = _Shell(body, req)
    if not stream:
        text, reasoning, calls, end = await turn.collect(request)
        turn.log(request, end, len(calls))
        output: list[dict[str, Any]] = []
        if reasoning:
            output.append(_reasoning_item(_new_id("rs"), reasoning))
        if text or not calls:
            cut = end.finish_in() == "length"  # the token limit ended the text
            entries = turn.logprob_entries(CONTENT)
            output.append(_message_item(_new_id("msg"), text, "incomplete" if cut else "completed", entries))
        output += [_call_item(_new_id("fc"), c, call_arguments_json(c)) for c in calls]
        answer = shell.response(turn.model_id, output, end)
        _remember(state, body, answer, conversation, (text, reasoning, calls))
        return json_response(answer)

    seq = iter(range(1 << 62))

    def event(kind: str, **data: Any) -> bytes:
        payload = {"type": kind, "sequence_number": next(seq), **data}
        return b"event: " + kind.encode() + b"\ndata: " + json_bytes(payload) + b"\n\n"

    async def gen():
        output: list[dict[str, Any]] = []
        open_kind: str | None = None  # the item being streamed: "text" or "reasoning"
        parts: list[str] = []
        said: dict[str, list[str]] = {"text": [], "reasoning": []}  # the whole reply, kept
        made: list[Any] = []
        end = None
        ncalls = 0
        held = LogprobBuffer()  # the text's log probabilities: each delta's, then the item's
        item_logprobs: list[Any] = []

        def close(status: str = "completed") -> list[bytes]:
            """The events that end the open item; it joins the output."""
            nonlocal open_kind
            if open_kind is None:
                return []
            at = len(output)
            whole = "".join(parts)
            extra: dict[str, Any]
            if open_kind == "reasoning":
                item = _reasoning_item(item_id, whole, status)
                done, extra, part = (
                    "response.reasoning_text.done",
                    {},
                    {"type": "reasoning_text", "text": whole},
                )
            else:
                item_logprobs.extend(held.take())  # those of the tokens after its last delta
                item = _message_item(item_id, whole, status, item_logprobs)
                done, extra = "response.output_text.done", {"logprobs": _entries(item_logprobs)}
                part = _text_part(whole, item_logprobs)
                item_logprobs.clear()
            where = {"item_id": item_id, "output_index": at, "content_index": 0}
            out = [
                event(done, **where, text=whole, **extra),
                event("response.content_part.done", **where, part=part),
                event("response.output_item.done", output_index=at, item=item),
            ]
            output.append(item)
            open_kind = None
            parts.clear()
            return out

        try:
            yield event("response.created", response=shell.response(turn.model_id, [], None))
            yield event("response.in_progress", response=shell.response(turn.model_id, [], None))
            item_id = ""
            async for kind, value in turn.events():
                if kind == "logprobs":
                    held.add(value)
                elif kind in ("text", "reasoning"):
                    if open_kind != kind:
                        for b in close():
                            yield b
                        open_kind = kind
                        at = len(output)
                        if kind == "reasoning":
                            item_id = _new_id("rs")
                            added = _reasoning_item(item_id, "", "in_progress")
                            yield event("response.output_item.added", output_index=at, item=added)
                            yield event(
                                "response.content_part.added",
                                item_id=item_id,
                                output_index=at,
                                content_index=0,
                                part={"type": "reasoning_text", "text": ""},
                            )
                        else:
                            item_id = _new_id("msg")
                            yield event(
                                "response.output_item.added",
                                output_index=at,
                                item=_message_item(item_id, None, "in_progress"),
                            )
                            yield event(
                                "response.content_part.added",
                                item_id=item_id,
                                output_index=at,
                                content_index=0,
                                part=_text_part(""),
                            )
                    parts.append(value)
                    said[kind].append(value)
                    delta_kind = (
                        "response.reasoning_text.delta"
                        if kind == "reasoning"
                        else "response.output_text.delta"
                    )
                    extra: dict[str, Any] = {}
                    if kind == "text":
                        entries = held.take()
                        item_logprobs.extend(entries)
                        extra["logprobs"] = _entries(entries)
                    yield event(
                        delta_kind,
                        item_id=item_id,
                        output_index=len(output),
                        content_index=0,
                        delta=value,
                        **extra,
                    )
                elif kind == "call":
                    for b in close():
                        yield b
                    ncalls += 1
                    made.append(value)
                    at = len(output)
                    call_id = _new_id("fc")
                    arguments = call_arguments_json(value)
                    yield event(
                        "response.output_item.added",
                        output_index=at,
                        item=_call_item(call_id, value, "", "in_progress"),
                    )
                    for frag in split_fragments(arguments):
                        yield event(
                            "response.function_call_arguments.delta",
                            item_id=call_id,
                            output_index=at,
                            delta=frag,
                        )
                    yield event(
                        "response.function_call_arguments.done",
                        item_id=call_id,
                        output_index=at,
                        name=value.name,
                        arguments=arguments,
                    )
                    item = _call_item(call_id, value, arguments)
                    yield event("response.output_item.done", output_index=at, item=item)
                    output.append(item)
                elif kind == "end":
                    end = value
            assert end is not None
            for b in close("incomplete" if end.finish_in() == "length" else "completed"):
                yield b
            final = shell.response(turn.model_id, output, end)
            reply = ("".join(said["text"]), "".join(said["reasoning"]), made)
            _remember(state, body, final, conversation, reply)
            yield event(f"response.{final['status']}", response=final)
        except ApiError as err:
            log_error(request.scope, err)
            yield event("error", code=err.code, message=err.message, param=err.param)
        finally:
            turn.cancel.set()  # a client that went away stops the generation at the next token
            turn.log(request, end, ncalls)

    return await streamed(turn, request, gen())


async def get_response(request: Request):
    """``GET /v1/responses/{id}``: a response this server keeps (the latest of this run)."""
    found = request.app.state.callisto.responses.get(request.path_params["response_id"])
    if found is None:
        raise ApiError(404, _not_kept(request.path_params["response_id"]), param="response_id")
    return json_response(found[0])


async def delete_response(request: Request):
    """``DELETE /v1/responses/{id}``: forget a kept response (a later request cannot continue it)."""
    rid = request.path_params["response_id"]
    if not request.app.state.callisto.responses.delete(rid):
        raise ApiError(404, _not_kept(rid), param="response_id")
    return json_response({"id": rid, "object": "response.deleted", "deleted": True})


def _not_kept(rid: str) -> str:
    return f"no response {shown(rid)} is kept here (this server keeps the latest of this run, in memory)"
