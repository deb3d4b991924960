"""The three APIs on the wire: requests built from Callisto's messages, streams read into pieces.

A piece is a tuple: ``("text", s)``, ``("reasoning", s)``, ``("call", key, id, name, args)`` (a
call or a fragment of one: ``args`` is JSON text to append, or a whole dict), ``("usage", prompt,
completion)``, ``("finish", reason)`` or ``("error", message)``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any, ParamSpec

from app.engine.messages import Message
from app.engine.remote._client import short

__all__ = [
    "add_grammar",
    "add_options",
    "chat_request",
    "read_anthropic",
    "read_ollama",
    "read_openai",
    "read_raw",
    "raw_request",
]

Piece = tuple[Any, ...]
_P = ParamSpec("_P")


def _args_text(args: dict[str, Any] | str) -> str:
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


def _args_dict(args: dict[str, Any] | str) -> dict[str, Any]:
    if isinstance(args, dict):
        return dict(args)
    try:
        parsed = json.loads(args)
    except ValueError:
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "assistant":
            d: dict[str, Any] = {"role": "assistant", "content": m.content or ""}
            if m.tool_calls:
                d["tool_calls"] = [
                    {
                        "id": c.id,
                        "type": "function",
                        "function": {"name": c.name, "arguments": _args_text(c.arguments)},
                    }
                    for c in m.tool_calls
                ]
            out.append(d)
        elif m.role == "tool":
            out.append({"role": "tool", "content": m.content, "tool_call_id": m.tool_call_id or ""})
        else:
            out.append({"role": m.role, "content": m.content})
    return out


def _anthropic_messages(messages: Sequence[Message]) -> tuple[str, list[dict[str, Any]]]:
    system = "\n\n".join(m.content for m in messages if m.role == "system" and m.content)
    out: list[dict[str, Any]] = []

    def add(role: str, blocks: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for m in messages:
        if m.role == "system":
            continue
        if m.role == "tool":
            add("user", [{"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": m.content}])
        elif m.role == "assistant":
            blocks: list[dict[str, Any]] = [{"type": "text", "text": m.content}] if m.content.strip() else []
            blocks += [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": _args_dict(c.arguments)}
                for c in m.tool_calls
            ]
            if blocks:
                add("assistant", blocks)
        else:
            add("user", [{"type": "text", "text": m.content}])
    return system, out


def _ollama_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for m in messages:
        d: dict[str, Any] = {"role": m.role, "content": m.content}
        if m.role == "assistant" and m.tool_calls:
            d["tool_calls"] = [
                {"function": {"name": c.name, "arguments": _args_dict(c.arguments)}} for c in m.tool_calls
            ]
        if m.role == "tool" and m.name:
            d["tool_name"] = m.name
        out.append(d)
    return out


def _sampling(kind: str, sampling: dict[str, Any]) -> dict[str, Any]:
    keep = {k: v for k, v in sampling.items() if k in ("temperature", "top_p", "top_k", "seed", "stop")}
    if kind == "anthropic":
        keep.pop("seed", None)
        if "stop" in keep:
            keep["stop_sequences"] = keep.pop("stop")
    return keep


def chat_request(
    kind: str,
    model: str,
    messages: Sequence[Message],
    *,
    tools: list[dict[str, Any]] | None,
    tool_choice: Any,
    max_tokens: int,
    sampling: dict[str, Any],
) -> tuple[str, dict[str, Any]]:
    """(path, body) of one streamed chat request in ``kind``'s API, tools as JSON."""
    if kind == "openai":
        body: dict[str, Any] = {
            "model": model,
            "messages": _openai_messages(messages),
            "stream": True,
            "max_tokens": max_tokens,
            "stream_options": {"include_usage": True},
            **_sampling(kind, sampling),
        }
        if tools:
            body["tools"] = tools
            body["tool_choice"] = tool_choice
        return "/v1/chat/completions", body
    if kind == "anthropic":
        system, msgs = _anthropic_messages(messages)
        body = {
            "model": model,
            "messages": msgs,
            "stream": True,
            "max_tokens": max_tokens,
            **_sampling(kind, sampling),
        }
        if system:
            body["system"] = system
        if tools:
            body["tools"] = [
                {
                    "name": t["function"]["name"],
                    "description": t["function"].get("description", ""),
                    "input_schema": t["function"].get("parameters") or {"type": "object"},
                }
                for t in tools
            ]
            if isinstance(tool_choice, dict):
                body["tool_choice"] = {"type": "tool", "name": tool_choice["function"]["name"]}
            elif tool_choice == "required":
                body["tool_choice"] = {"type": "any"}
            elif tool_choice == "none":
                body["tool_choice"] = {"type": "none"}
        return "/v1/messages", body
    options = {k: v for k, v in _sampling(kind, sampling).items()}
    options["num_predict"] = max_tokens
    body = {"model": model, "messages": _ollama_messages(messages), "stream": True, "options": options}
    if tools:
        body["tools"] = tools
    return "/api/chat", body


def add_options(kind: str, body: dict[str, Any], options: dict[str, Any]) -> None:
    """``parallel_tool_calls`` and ``response_format`` in ``kind``'s shape (Anthropic takes neither)."""
    if kind == "openai":
        if "parallel_tool_calls" in options and body.get("tools"):
            body["parallel_tool_calls"] = bool(options["parallel_tool_calls"])
        if options.get("response_format") is not None:
            body["response_format"] = options["response_format"]
    elif kind == "ollama" and options.get("response_format") is not None:
        rf = options["response_format"]
        schema = (rf.get("json_schema") or {}).get("schema") if isinstance(rf, dict) else None
        body["format"] = schema if isinstance(schema, dict) else "json"


def raw_request(
    kind: str, model: str, prompt: str, *, max_tokens: int, sampling: dict[str, Any], llama_server: bool
) -> tuple[str, dict[str, Any]]:
    """(path, body) of a raw-text completion of ``prompt`` (the prompt rendered by Callisto)."""
    if kind == "ollama":
        options = dict(_sampling(kind, sampling), num_predict=max_tokens)
        return "/api/generate", {
            "model": model,
            "prompt": prompt,
            "raw": True,
            "stream": True,
            "options": options,
        }
    if llama_server:  # llama-server's own endpoint: special tokens are kept in the text
        return "/completion", {
            "model": model,  # a server of several models (llama-server's router, Callisto's) reads it
            "prompt": prompt,
            "n_predict": max_tokens,
            "stream": True,
            "cache_prompt": True,
            **_sampling(kind, sampling),
        }
    # vLLM / SGLang keep special tokens with skip_special_tokens=false; others ignore the key.
    return "/v1/completions", {
        "model": model,
        "prompt": prompt,
        "max_tokens": max_tokens,
        "stream": True,
        "skip_special_tokens": False,
        "stream_options": {"include_usage": True},
        **_sampling(kind, sampling),
    }


def add_grammar(body: dict[str, Any], grammar: str, *, llama_server: bool) -> None:
    """A GBNF grammar the engine holds the raw completion to: llama-server's ``/completion`` takes
    ``grammar``; on ``/v1/completions`` vLLM takes ``structured_outputs.grammar`` (``guided_grammar``
    before 0.12) and SGLang ``ebnf``; each ignores the others' fields."""
    if llama_server:
        body["grammar"] = grammar
        return
    body["structured_outputs"] = {"grammar": grammar}
    body["guided_grammar"] = grammar
    body["ebnf"] = grammar


def _sse_data(lines: Iterator[str]) -> Iterator[tuple[str, Any]]:
    """(event name, decoded JSON) per SSE event; ``[DONE]`` ends it."""
    event = ""
    for line in lines:
        if line.startswith("event:"):
            event = line[6:].strip()[:100]
            continue
        if not line.startswith("data:"):
            if not line.strip():
                event = ""
            continue
        data = line[5:].strip()
        if data == "[DONE]":
            return
        try:
            yield event, json.loads(data)
        except (ValueError, RecursionError):
            yield (
                "error",
                {"error": {"message": f"the server sent a line that is not JSON: {short(data, 80)}"}},
            )


def _error_text(obj: Any) -> str | None:
    if not isinstance(obj, dict):
        return None
    err = obj.get("error")
    if isinstance(err, dict):
        return short(str(err.get("message") or err))
    if isinstance(err, str) and err:
        return short(err)
    return None


class _Shape(Exception):
    """A part of a reply in a shape no API sends."""


def _obj(value: Any) -> dict[str, Any]:
    """A JSON object of the reply; {} for null; _Shape for anything else."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _Shape
    return value


def _list(value: Any) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise _Shape
    return value


def _str(value: Any) -> str:
    """Text of the reply ("" for null or empty); _Shape for anything else."""
    if value is None:
        return ""
    if not isinstance(value, str):
        raise _Shape
    return value


def _key(value: Any, default: Any = 0) -> Any:
    """A call's index: an integer or a string."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | str):
        raise _Shape
    return value


def _args(value: Any) -> str | dict[str, Any]:
    if value is None:
        return ""
    if not isinstance(value, str | dict):
        raise _Shape
    return value


def _reason(value: Any) -> str:
    return short(str(value), 40)


class _Failed(Exception):
    """The server reported an error in the reply: its text."""


def _checked(value: Any) -> dict[str, Any]:
    """A JSON object of the reply (``_obj``); one that reports an error ends the reply (_Failed)."""
    obj = _obj(value)
    err = _error_text(obj)
    if err:
        raise _Failed(err)
    return obj


def _objects(lines: Iterator[str]) -> Iterator[dict[str, Any]]:
    """The JSON object of each SSE event (``_checked``)."""
    for _event, obj in _sse_data(lines):
        yield _checked(obj)


def _usage(obj: dict[str, Any]) -> Iterator[Piece]:
    """The token counts of an OpenAI chunk, where it has them."""
    usage = obj.get("usage")
    if isinstance(usage, dict):
        yield ("usage", usage.get("prompt_tokens"), usage.get("completion_tokens"))


def _choices(obj: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for choice in _list(obj.get("choices")):
        yield _obj(choice)


def _shaped(reader: Callable[_P, Iterator[Piece]]) -> Callable[_P, Iterator[Piece]]:
    """``reader`` whose pieces end with an error where the server reports one in the reply or
    sends a part of it in a shape no API sends."""

    @functools.wraps(reader)
    def read(*args: _P.args, **kwargs: _P.kwargs) -> Iterator[Piece]:
        try:
            yield from reader(*args, **kwargs)
        except _Failed as exc:
            yield ("error", str(exc))
        except _Shape:
            yield ("error", "the server sent a part of the reply in a shape this API does not have")

    return read


@_shaped
def read_openai(lines: Iterator[str]) -> Iterator[Piece]:
    for obj in _objects(lines):
        yield from _usage(obj)
        for choice in _choices(obj):
            delta = _obj(choice.get("delta"))
            reasoning = _str(delta.get("reasoning_content") or delta.get("reasoning"))
            if reasoning:
                yield ("reasoning", reasoning)
            content = _str(delta.get("content"))
            if content:
                yield ("text", content)
            for tc in _list(delta.get("tool_calls")):
                tc = _obj(tc)
                fn = _obj(tc.get("function"))
                yield (
                    "call",
                    _key(tc.get("index")),
                    tc.get("id"),
                    fn.get("name"),
                    _args(fn.get("arguments")),
                )
            if choice.get("finish_reason"):
                yield ("finish", _reason(choice["finish_reason"]))


@_shaped
def read_anthropic(lines: Iterator[str]) -> Iterator[Piece]:
    prompt = 0
    for event, obj in _sse_data(lines):
        obj = _obj(obj)
        kind = obj.get("type") or event
        if kind == "error" or _error_text(obj):
            yield ("error", _error_text(obj) or "the server reported an error")
            return
        if kind == "message_start":
            prompt = _obj(_obj(obj.get("message")).get("usage")).get("input_tokens") or 0
        elif kind == "content_block_start":
            block = _obj(obj.get("content_block"))
            if block.get("type") == "tool_use":
                yield ("call", _key(obj.get("index")), block.get("id"), block.get("name"), "")
            elif block.get("type") == "text" and block.get("text"):
                yield ("text", _str(block["text"]))
        elif kind == "content_block_delta":
            delta = _obj(obj.get("delta"))
            if delta.get("type") == "text_delta":
                yield ("text", _str(delta.get("text")))
            elif delta.get("type") == "thinking_delta":
                yield ("reasoning", _str(delta.get("thinking")))
            elif delta.get("type") == "input_json_delta":
                yield ("call", _key(obj.get("index")), None, None, _str(delta.get("partial_json")))
        elif kind == "message_delta":
            usage = _obj(obj.get("usage"))
            if "output_tokens" in usage:
                yield ("usage", prompt, usage["output_tokens"])
            reason = _obj(obj.get("delta")).get("stop_reason")
            if reason:
                yield (
                    "finish",
                    {
                        "end_turn": "stop",
                        "stop_sequence": "stop",
                        "tool_use": "tool_calls",
                        "max_tokens": "length",
                    }.get(reason, _reason(reason))
                    if isinstance(reason, str)
                    else _reason(reason),
                )
        elif kind == "message_stop":
            return


@_shaped
def read_ollama(lines: Iterator[str]) -> Iterator[Piece]:
    n = 0
    for line in lines:
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except (ValueError, RecursionError):
            yield ("error", f"the server sent a line that is not JSON: {short(line, 80)}")
            return
        obj = _checked(value)
        msg = _obj(obj.get("message"))
        thinking = _str(msg.get("thinking") or obj.get("thinking"))
        if thinking:
            yield ("reasoning", thinking)
        text = _str(msg.get("content") or obj.get("response"))
        if text:
            yield ("text", text)
        for tc in _list(msg.get("tool_calls")):
            fn = _obj(_obj(tc).get("function"))
            yield ("call", f"o{n}", _obj(tc).get("id"), fn.get("name"), _args(fn.get("arguments")) or {})
            n += 1
        if obj.get("done"):
            yield ("usage", obj.get("prompt_eval_count"), obj.get("eval_count"))
            yield ("finish", _reason(obj.get("done_reason") or "stop"))
            return


def read_raw(lines: Iterator[str], *, kind: str) -> Iterator[Piece]:
    """A raw-text completion: OpenAI's ``/v1/completions``, llama-server's ``/completion`` or
    Ollama's ``/api/generate`` (NDJSON)."""
    if kind == "ollama":
        return read_ollama(lines)
    return _read_raw(lines)


@_shaped
def _read_raw(lines: Iterator[str]) -> Iterator[Piece]:
    for obj in _objects(lines):
        if "content" in obj and "choices" not in obj:  # llama-server /completion
            content = _str(obj.get("content"))
            if content:
                yield ("text", content)
            if obj.get("stop"):
                timings = _obj(obj.get("timings"))
                yield (
                    "usage",
                    obj.get("tokens_evaluated") or timings.get("prompt_n"),
                    timings.get("predicted_n") or obj.get("tokens_predicted"),
                )
                yield ("finish", "length" if obj.get("stop_type") == "limit" else "stop")
                return
            continue
        yield from _usage(obj)
        for choice in _choices(obj):
            text = _str(choice.get("text"))
            if text:
                yield ("text", text)
            if choice.get("finish_reason"):
                yield ("finish", _reason(choice["finish_reason"]))
