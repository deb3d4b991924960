"""The Ollama API: ``/api/chat`` (tools; ``message.tool_calls`` with arguments as an object; NDJSON
streaming, on by default as in Ollama; ``think``), ``/api/generate``, ``/api/embed`` (and the older
``/api/embeddings``), ``/api/tags``, ``/api/show``, ``/api/version``, ``/api/ps`` (the loaded
models, and when each is unloaded if no request comes).
Ollama's tool results carry no call id: each answers the earliest call of the
turn before it that is still unanswered (by ``tool_name`` when given).

``/api/generate`` takes ``think`` as ``/api/chat`` does, and ``context``, the older way to go on
with a conversation: its last answer carries ``context``, the token ids of the prompt and the
reply as the engine read and wrote them; a request that sends them back is those ids, then what
the model's template writes after a reply (the turn's end, the new prompt, the generation
prompt), so the KV cache that holds them is reused. The ``system`` sent with a context is the
conversation's: it stays where the template puts a system prompt (for most, before the context,
so it is not written again). A prompt with images, a raw prompt and a fill in the middle carry no
context and take none.

A final assistant message on ``/api/chat`` is the reply's start, as Ollama reads one
(``TurnRequest.prefill``).

``options.num_ctx`` is the context a request needs: a model loaded with less is loaded again with
it (never with less than it has). ``keep_alive`` (a duration such as "5m", or seconds; 0 unloads
the model after the request, a negative value keeps it: ``app.server._idle``) sets how long the
model stays loaded once idle; a request with nothing to generate (no messages, an empty prompt)
only loads the model, or with ``keep_alive`` 0 unloads it."""

from __future__ import annotations

import json
import math
import os
import time
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from app.engine.generation import TokenOptions
from app.server._common import (
    SAMPLER_RANGES,
    TOOL_CHOICE_HEADER,
    Turn,
    check_bool,
    check_int,
    check_stop,
    check_str,
    check_tool_name,
    convert_tools,
    header_tool_choice,
    image_bytes,
    image_error,
    json_response_format,
    prompt_token_ids,
    queue_turn,
    read_chat_template,
    read_sampling,
    request_body,
    streamed,
    type_name,
)
from app.server._engine import TurnEnd, TurnRequest
from app.server._errors import ApiError, log_error, shown
from app.server._idle import parse_keep_alive
from app.server._json import json_bytes, json_response
from app.server._logprobs import LogprobBuffer, ollama_logprobs, read_chat_logprobs

if TYPE_CHECKING:
    from starlette.requests import Request

    from app.server._state import ServerState

__all__ = ["chat", "generate", "ps", "show", "tags", "version"]

OLLAMA_VERSION = "0.9.0"  # the API level this server speaks
_DONE = {"tool_calls": "stop"}  # the finish reasons Ollama names otherwise (TurnEnd.finish_in)


def _time(t: float) -> str:
    """A time (seconds since the epoch) as Ollama writes one."""
    return datetime.fromtimestamp(t, UTC).isoformat().replace("+00:00", "Z")


def _now() -> str:
    return _time(time.time())


def _generation(body: dict[str, Any], state: ServerState, keep: float | None) -> dict[str, Any]:
    """The ``TurnRequest`` fields ``/api/chat`` and ``/api/generate`` read alike: the sampler
    options, the reply's length (and whether the request set it), ``stop``, ``num_ctx``, the log
    probabilities and how long the model stays loaded (``keep``)."""
    opts = body.get("options") or {}
    if not isinstance(opts, dict):
        raise ApiError(400, f"options must be an object, got {type_name(opts)}")
    # every sampler option of Ollama's that the engine has; the others (repeat_last_n, num_gpu,
    # num_thread…) are taken and not used, as Ollama takes options it does not know
    sampling = read_sampling(opts, SAMPLER_RANGES, top_k=True, mirostat=True, where="options.")
    limit = state.config.max_tokens_limit
    n = check_int(opts.get("num_predict"), "options.num_predict", lo=-2, hi=limit)
    max_tokens = state.config.default_max_tokens if n is None or n < 0 else max(1, n)
    return {
        "sampling": sampling,
        "max_tokens": min(max_tokens, limit),
        "max_tokens_given": n is not None,  # (a made model's num_predict applies where it is not)
        "stop": check_stop(opts.get("stop"), "options.stop"),
        "idle_ttl": keep,
        "n_ctx": _num_ctx(body),
        "options": TokenOptions(logprobs=read_chat_logprobs(body)),
    }


def _num_ctx(body: dict[str, Any]) -> int | None:
    """``options.num_ctx``: the context the request needs (a model loaded with less is loaded
    again with it: ``TurnRequest.n_ctx``)."""
    opts = body.get("options") or {}
    if not isinstance(opts, dict):
        raise ApiError(400, f"options must be an object, got {type_name(opts)}")
    return check_int(opts.get("num_ctx"), "options.num_ctx", lo=1, hi=2**24)


def _format(value: Any) -> dict[str, Any] | None:
    if value is None or value == "":
        return None
    if value == "json":
        return json_response_format(None)  # any object, bounded so that it closes
    if isinstance(value, dict):
        return json_response_format(value)
    raise ApiError(400, "format must be 'json' or a JSON Schema object")


def convert_messages(messages: Any) -> list[dict[str, Any]]:
    if not isinstance(messages, list):
        raise ApiError(400, f"messages must be an array, got {type_name(messages)}")
    out: list[dict[str, Any]] = []
    pending: list[tuple[str, str]] = []  # (id, name) of calls not yet answered
    counter = 0
    for i, m in enumerate(messages):
        w = f"messages[{i}]"
        if not isinstance(m, dict):
            raise ApiError(400, f"{w} must be an object, got {type_name(m)}")
        role = m.get("role")
        content = check_str(m.get("content", ""), f"{w}.content", allow_none=True) or ""
        images = _images(m.get("images"), f"{w}.images")
        if images and role != "user":
            raise image_error(
                w, f"is a {shown(role)} message with images, but only a user message may hold images"
            )
        if role in ("system", "user"):
            d_msg: dict[str, Any] = {"role": role, "content": content}
            if images:
                d_msg["images"] = images  # bytes: the engine's Message takes them as they are
            out.append(d_msg)
        elif role == "assistant":
            calls: list[dict[str, Any]] = []
            raw_calls = m.get("tool_calls") or []
            if not isinstance(raw_calls, list):
                raise ApiError(400, f"{w}.tool_calls must be an array")
            for j, tc in enumerate(raw_calls):
                fn = tc.get("function") if isinstance(tc, dict) else None
                if not isinstance(fn, dict):
                    raise ApiError(400, f"{w}.tool_calls[{j}].function must be an object")
                name = check_tool_name(fn.get("name"), f"{w}.tool_calls[{j}].function.name")
                args = fn.get("arguments", {})
                if isinstance(args, str):
                    try:
                        args = json.loads(args, strict=False)  # a raw newline in a string: as written
                    except ValueError:
                        args = None
                if not isinstance(args, dict):
                    raise ApiError(400, f"{w}.tool_calls[{j}].function.arguments must be an object")
                cid = (
                    tc.get("id") if isinstance(tc.get("id"), str) and tc.get("id") else f"ollama{counter:03d}"
                )
                counter += 1
                calls.append({"id": cid, "name": name, "arguments": args})
            pending = [(c["id"], c["name"]) for c in calls]
            d: dict[str, Any] = {
                "role": "assistant",
                "content": content,
                "reasoning": check_str(m.get("thinking"), f"{w}.thinking", allow_none=True) or "",
            }
            if calls:
                d["tool_calls"] = calls
            out.append(d)
        elif role == "tool":
            tool = m.get("tool_name") or m.get("name")
            match = next((p for p in pending if tool is None or p[1] == tool), None)
            if match is None:
                raise ApiError(
                    400,
                    f"{w} is a tool result, but no earlier assistant message made a call "
                    f"{'to ' + repr(tool) + ' ' if tool else ''}that is still unanswered",
                )
            pending.remove(match)
            out.append({"role": "tool", "content": content, "tool_call_id": match[0], "name": match[1]})
        else:
            raise ApiError(400, f"{w}.role {shown(role)} is not one of system, user, assistant, tool")
    if not any(d["role"] == "user" for d in out):
        raise ApiError(400, "messages has no user message")
    return out


def _images(value: Any, where: str) -> list[bytes]:
    """Ollama's ``images``: an array of base64 images (none: null or absent)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ApiError(400, f"{where} must be an array of base64 images, got {type_name(value)}")
    return [image_bytes(v, f"{where}[{i}]") for i, v in enumerate(value)]


def _tools(value: Any) -> list[dict[str, Any]] | None:
    return convert_tools(value)


def _stats(end: TurnEnd | None, load_s: float | None) -> dict[str, Any]:
    """Ollama's counts and durations (nanoseconds); ``load_s``: the seconds the request waited for
    its model to load (None: it was loaded), in ``load_duration`` and the total."""
    if end is None:
        return {}
    load = int((load_s or 0.0) * 1e9)
    total = int(end.elapsed_s * 1e9)
    ttft = int((end.ttft_s or 0.0) * 1e9)
    return {
        "done_reason": end.finish_in(_DONE),
        "total_duration": load + total,
        "load_duration": load,
        "prompt_eval_count": end.prompt_tokens,
        "prompt_eval_duration": ttft,
        "eval_count": end.completion_tokens,
        "eval_duration": max(0, total - ttft),
    }


def _part(
    turn: Any, fields: dict[str, Any], end: TurnEnd | None, entries: list[Any], *, chunk: bool = True
) -> dict[str, Any]:
    """One answer of ``/api/chat`` or ``/api/generate`` (a streamed line, or with ``chunk`` False
    the whole reply): ``fields``, done with the counts once ``end`` is there, and Ollama's
    ``logprobs`` when the request asked for them (a streamed line: only when it has some, those
    of the tokens since the last one)."""
    out = {
        "model": turn.model_id,
        "created_at": _now(),
        **fields,
        "done": end is not None,
        **_stats(end, turn.load_s),
    }
    if turn.req.options.logprobs is not None and (entries or not chunk):
        out["logprobs"] = ollama_logprobs(entries)
    return out


def _ndjson(data: dict[str, Any]) -> bytes:
    return json_bytes(data) + b"\n"


def _call(c: Any) -> dict[str, Any]:
    return {"function": {"name": c.name, "arguments": c.arguments if isinstance(c.arguments, dict) else {}}}


def _think(body: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """``think`` as sent (true / false, or a level: ``low``/``medium``/``high``, as Ollama takes
    for gpt-oss; None: the template's default) and the ``TurnRequest`` fields it sets."""
    from app.engine.thinking import parse_thinking

    think = body.get("think")
    if think is None:
        return None, {}
    if not isinstance(think, bool | str):
        raise ApiError(400, "think must be true, false or a level string", param="think")
    try:
        return think, {"think": bool(think), "thinking": parse_thinking(think)}
    except ValueError as exc:
        raise ApiError(400, f"think: {exc}", param="think") from None


def _context(value: Any) -> list[int] | None:
    """``/api/generate``'s ``context``: the token ids an earlier reply returned (None or empty:
    none). The vocabulary's end is the engine's to check (``render_turn``)."""
    if value is None:
        return None
    ids = prompt_token_ids(value, "context")
    if ids is None:
        raise ApiError(
            400, "context must be an array of token ids, as an earlier reply returned it", param="context"
        )
    return ids or None


async def _load_or_unload(
    request: Request, state: ServerState, body: dict[str, Any], keep: float | None, shape: dict[str, Any]
):
    """A request with nothing to generate loads its model (``done_reason`` "load"), or with
    ``keep_alive`` 0 unloads it once no other request uses it ("unload"), as Ollama does."""
    from starlette.concurrency import run_in_threadpool

    name = check_str(body.get("model"), "model", allow_none=True)
    if keep == 0:
        entry = await run_in_threadpool(state.catalog.resolve, name, state.loaded_entry())
        await run_in_threadpool(state.reaper.expire, entry)
        model_id, reason = entry.id, "unload"
    else:
        turn = Turn(state, TurnRequest(model=name, idle_ttl=keep, n_ctx=_num_ctx(body)))
        await turn.submit_fn(lambda _model: ("end", None))
        await turn.first(request)  # loaded, or the load's error
        model_id, reason = turn.model_id, "load"
    request.scope.setdefault("callisto.log", {})["model"] = model_id
    return json_response(
        {"model": model_id, "created_at": _now(), **shape, "done": True, "done_reason": reason}
    )


async def embed(request: Request):
    """``/api/embed``: a normalized vector per input (a string or strings); ``truncate`` (default
    true) cuts an input longer than the context to it, false refuses it; no input only loads the
    model (``app.server._embeddings``)."""
    from app.server._embeddings import embed_inputs, read_dimensions, read_inputs, vectors

    started = time.monotonic()
    state, body = await request_body(request)
    raw = body.get("input")
    inputs, single = ([], False) if raw in (None, "") else read_inputs(raw, "input", tokens=False)
    dimensions = read_dimensions(body.get("dimensions"))
    req = TurnRequest(
        model=check_str(body.get("model"), "model", allow_none=True),
        idle_ttl=parse_keep_alive(body.get("keep_alive")),
        n_ctx=_num_ctx(body),
    )
    truncate = check_bool(body.get("truncate"), "truncate", True)
    model_id, result = await embed_inputs(
        request, state, req, inputs, truncate=truncate, dimensions=dimensions, single=single
    )
    return json_response(
        {
            "model": model_id,
            "embeddings": vectors(result, dimensions),
            "total_duration": int((time.monotonic() - started) * 1e9),
            "load_duration": int((request.scope["callisto.turn"].load_s or 0.0) * 1e9),
            "prompt_eval_count": result.total_tokens,
        }
    )


async def embeddings(request: Request):
    """``/api/embeddings``, Ollama's older endpoint: one ``prompt``, its vector as the model gives
    it (not normalized, as Ollama returns it there); an empty prompt only loads the model."""
    from app.server._embeddings import embed_inputs, vectors

    state, body = await request_body(request)
    prompt = check_str(body.get("prompt"), "prompt", allow_none=True) or ""
    req = TurnRequest(
        model=check_str(body.get("model"), "model", allow_none=True),
        idle_ttl=parse_keep_alive(body.get("keep_alive")),
        n_ctx=_num_ctx(body),
    )
    inputs = [prompt] if prompt else []
    _model_id, result = await embed_inputs(
        request, state, req, inputs, truncate=True, named="prompt", single=True
    )
    return json_response({"embedding": vectors(result, None, normalize=False)[0] if inputs else []})


async def chat(request: Request):
    state, body = await request_body(request)
    keep = parse_keep_alive(body.get("keep_alive"))
    if body.get("messages") in (None, []):
        return await _load_or_unload(
            request, state, body, keep, {"message": {"role": "assistant", "content": ""}}
        )
    generation = _generation(body, state, keep)
    tools = _tools(body.get("tools"))
    think, thinking = _think(body)
    messages = convert_messages(body.get("messages"))
    header = request.headers.get(TOOL_CHOICE_HEADER)  # Ollama's API has no tool choice of its own
    req = TurnRequest(
        model=check_str(body.get("model"), "model", allow_none=True),
        messages=messages,
        tools=tools,
        tool_choice=header_tool_choice(header, tools, messages) if header else "auto",
        response_format=_format(body.get("format")),
        prefill=True,  # Ollama goes on from a final assistant message
        **generation,
        **thinking,
    )
    # the log probabilities of what the reply shows: its content and its thinking
    held = LogprobBuffer(("text", "reasoning") if think is not False else ("text",))
    stream = check_bool(body.get("stream"), "stream", True)
    turn = await queue_turn(state, req)
    if not stream:
        text, reasoning, calls, end = await turn.collect(request)
        turn.log(request, end, len(calls))
        message: dict[str, Any] = {"role": "assistant", "content": text}
        if reasoning and think is not False:
            message["thinking"] = reasoning
        if calls:
            message["tool_calls"] = [_call(c) for c in calls]
        return json_response(
            _part(turn, {"message": message}, end, turn.logprob_entries(held.kinds), chunk=False)
        )

    async def gen():
        end = None
        ncalls = 0
        try:
            async for kind, value in turn.events():
                msg: dict[str, Any] | None = None
                if kind == "logprobs":
                    held.add(value)
                elif kind == "text":
                    msg = {"role": "assistant", "content": value}
                elif kind == "reasoning" and think is not False:
                    msg = {"role": "assistant", "content": "", "thinking": value}
                elif kind == "call":
                    ncalls += 1
                    msg = {"role": "assistant", "content": "", "tool_calls": [_call(value)]}
                elif kind == "end":
                    end = value
                if msg is not None:
                    yield _ndjson(_part(turn, {"message": msg}, None, held.take()))
            assert end is not None
            yield _ndjson(_part(turn, {"message": {"role": "assistant", "content": ""}}, end, held.take()))
        except ApiError as err:
            log_error(request.scope, err)
            yield _ndjson({"error": err.message})
        finally:
            turn.cancel.set()
            turn.log(request, end, ncalls)

    return await streamed(turn, request, gen(), "application/x-ndjson")


async def generate(request: Request):
    state, body = await request_body(request)
    prompt = check_str(body.get("prompt", ""), "prompt", allow_none=True) or ""
    keep = parse_keep_alive(body.get("keep_alive"))
    system = check_str(body.get("system"), "system", allow_none=True)
    images = _images(body.get("images"), "images")
    # suffix: fill in the middle (the reply goes between the prompt and it), as an editor asks
    suffix = check_str(body.get("suffix"), "suffix", allow_none=True) or ""
    if not prompt and not system and not images and not suffix:
        return await _load_or_unload(request, state, body, keep, {"response": ""})
    generation = _generation(body, state, keep)
    model = check_str(body.get("model"), "model", allow_none=True)
    raw = check_bool(body.get("raw"), "raw", False)
    context = _context(body.get("context"))
    think, thinking = _think(body)
    template = read_chat_template(body.get("template"), "template")
    if suffix or raw:
        what = "suffix" if suffix else "raw"
        if suffix and raw:
            raise ApiError(
                400, "suffix cannot be sent with raw: a raw prompt is written whole (leave one out)"
            )
        if images:
            raise image_error("images", f"cannot be sent with {what}: its prompt has no place for them")
        if body.get("format") not in (None, ""):
            raise ApiError(
                400, f"format cannot be sent with {what}: only a chat prompt's reply is held to one"
            )
        if context is not None:
            raise ApiError(
                400,
                f"context cannot be sent with {what}: "
                + (
                    "a raw prompt is written whole (write the conversation in it)"
                    if raw
                    else "a fill in the middle continues no conversation"
                ),
                param="context",
            )
        if template is not None:
            raise ApiError(
                400, f"template cannot be sent with {what}: no template writes its prompt", param="template"
            )
        if think not in (None, False):  # false holds: a raw reply is never read for reasoning
            raise ApiError(
                400,
                f"think cannot be sent with {what}: no template writes its prompt, and its reply "
                "is never read for reasoning",
                param="think",
            )
        req = TurnRequest(
            model=model,
            raw_prompt=None if suffix else prompt,
            fim=(prompt, suffix) if suffix else None,
            **generation,
        )
    else:
        if not prompt and not images:
            raise ApiError(400, "prompt is empty")
        if images and context is not None:
            raise image_error("images", "cannot be sent with context: a context holds text only")
        user: dict[str, Any] = {"role": "user", "content": prompt}
        if images:
            user["images"] = images  # bytes: the engine's Message takes them as they are
        msgs = ([{"role": "system", "content": system}] if system else []) + [user]
        req = TurnRequest(
            model=model,
            messages=msgs,
            response_format=_format(body.get("format")),
            context=context,
            want_context=True,
            chat_template=template,
            **generation,
            **thinking,
        )
    held = LogprobBuffer(("text", "reasoning") if think is not False else ("text",))
    stream = check_bool(body.get("stream"), "stream", True)
    turn = await queue_turn(state, req)
    if not stream:
        text, reasoning, _calls, end = await turn.collect(request)
        turn.log(request, end, 0)
        whole: dict[str, Any] = {"response": text}
        if reasoning and think is not False:
            whole["thinking"] = reasoning
        return json_response(
            _part(turn, {**whole, **_context_of(end)}, end, turn.logprob_entries(held.kinds), chunk=False)
        )

    async def gen():
        end = None
        try:
            async for kind, value in turn.events():
                if kind == "logprobs":
                    held.add(value)
                elif kind == "text":
                    yield _ndjson(_part(turn, {"response": value}, None, held.take()))
                elif kind == "reasoning" and think is not False:
                    yield _ndjson(_part(turn, {"response": "", "thinking": value}, None, held.take()))
                elif kind == "end":
                    end = value
            assert end is not None
            yield _ndjson(_part(turn, {"response": "", **_context_of(end)}, end, held.take()))
        except ApiError as err:
            log_error(request.scope, err)
            yield _ndjson({"error": err.message})
        finally:
            turn.cancel.set()
            turn.log(request, end, 0)

    return await streamed(turn, request, gen(), "application/x-ndjson")


def _context_of(end: TurnEnd | None) -> dict[str, Any]:
    """A generation's last answer's ``context``: the conversation's token ids, this reply's
    included, for the next request to continue (none for a prompt with images)."""
    return {"context": end.context} if end is not None and end.context is not None else {}


def _details(e: Any, parent: str = "") -> dict[str, Any]:
    """Ollama's ``details`` of a model: what its GGUF says (empty where it says nothing);
    ``parent``: the model a made model was made from."""
    from app.engine.models.metadata import format_parameter_count

    return {
        "parent_model": parent,
        "format": "gguf",
        "family": e.architecture or "",
        "families": [e.architecture] if e.architecture else None,
        "parameter_size": format_parameter_count(e.parameter_count) if e.parameter_count else "",
        "quantization_level": e.quantization or "",
    }


def _modified(path: Any) -> str:
    """When the model's file was last changed, as Ollama writes a time (now, if it cannot be read)."""
    try:
        return _time(path.stat().st_mtime)
    except OSError:
        return _now()


def _digest(path: Any) -> str:
    """A model's ``digest`` (``ollama list`` shows its first 12 characters as the model's ID): a
    sha256 of the file's path, size and modification time, which names this version of the file
    without reading gigabytes (Ollama's hashes its manifest); "" if the file cannot be read."""
    import hashlib

    try:
        st = path.stat()
    except OSError:
        return ""
    identity = f"{os.path.realpath(path)}\0{st.st_size}\0{st.st_mtime_ns}"
    return hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()


async def tags(request: Request):
    from starlette.concurrency import run_in_threadpool

    state: ServerState = request.app.state.callisto
    entries = await run_in_threadpool(state.catalog.entries, refresh=True)
    file_ids = {e.path: e.id for e in entries if e.preset is None}  # a made model's parent
    models = []
    for e in entries:
        made = e.preset
        models.append(
            {
                "name": e.id,
                "model": e.id,
                "modified_at": _modified(e.path) if made is None else _time(made.created),
                "size": e.size,
                "digest": _digest(e.path) if made is None else _made_digest(e),
                "details": _details(e, "" if made is None else _parent(state, e, file_ids)),
            }
        )
    return json_response({"models": models})


def _parent(state: ServerState, e: Any, file_ids: dict[Any, str]) -> str:
    """The id of the file the made model ``e`` is over (one the lists do not offer: its own)."""
    return file_ids.get(e.path) or state.catalog.entry_for(e.path).id


def _made_digest(e: Any) -> str:
    """A made model's ``digest``: its base file's with what it sets (new when it is made again)."""
    import hashlib
    from dataclasses import asdict

    made = json_bytes(asdict(e.preset))
    return hashlib.sha256(_digest(e.path).encode() + b"\0" + made).hexdigest()


async def ps(request: Request):
    """The loaded models, most recently used first, as Ollama's ``/api/ps`` lists them: ``size``
    is the memory each takes (its file and its KV cache: ``n_ctx`` × slots), ``size_vram`` the part
    of it on a GPU, ``expires_at`` when it is unloaded if no request comes (far in the future for
    one kept loaded, as Ollama says it)."""
    from starlette.concurrency import run_in_threadpool

    state: ServerState = request.app.state.callisto
    return json_response({"models": await run_in_threadpool(_running, state)})


#: what Ollama adds to now for a model kept loaded (Go's longest duration: about 292 years)
_KEPT = timedelta(microseconds=2**63 // 1000)


def _running(state: ServerState) -> list[dict[str, Any]]:
    from app.engine.models.estimate import kv_shape, model_kv_bytes

    now = datetime.now(UTC)
    models = []
    for path in reversed(state.host.loaded_paths):
        model, settings = state.host.model(path), state.host.settings_of(path)
        if model is None or settings is None:  # unloaded meanwhile
            continue
        entry = state.catalog.entry_for(path)
        meta = model.metadata
        tokens = int(model.n_ctx) * int(getattr(model.backend, "parallel", 1) or 1)
        size = entry.size + (model_kv_bytes(meta.raw, meta.architecture, tokens, settings.kv_type) or 0)
        layers = kv_shape(meta.raw, meta.architecture)[0]
        gpu = int(model.n_gpu_layers)  # -1: every layer
        on_gpu = 1.0 if gpu < 0 else min(1.0, gpu / layers) if layers else float(gpu > 0)
        left = state.reaper.time_left(path)
        expires = now + (_KEPT if math.isinf(left) else timedelta(seconds=left))
        models.append(
            {
                "name": entry.id,
                "model": entry.id,
                "size": size,
                "digest": _digest(path),
                "details": _details(entry),
                "expires_at": expires.isoformat().replace("+00:00", "Z"),
                "size_vram": int(size * on_gpu),
                "context_length": int(model.n_ctx),
            }
        )
    return models


async def show(request: Request):
    from starlette.concurrency import run_in_threadpool

    state, body = await request_body(request)
    name = check_str(body.get("model", body.get("name")), "model")
    entry = await run_in_threadpool(state.catalog.resolve, name, None)

    def info() -> dict[str, Any]:
        from app.engine.detection import detect_tool_format
        from app.server._presets import parameters_text

        meta = state.metadata_for(entry)
        family = detect_tool_format(
            meta.chat_template, meta.tool_use_template, bos_token=meta.bos_token, eos_token=meta.eos_token
        )
        if meta.embedding_model:  # as Ollama lists one (any model embeds: /api/embed)
            caps = ["embedding"]
        else:
            caps = ["completion"] + (
                ["tools"] if family or state.config.tool_format not in ("auto", "none") else []
            )
            if state.has_vision(entry):
                caps.append("vision")
        preset = entry.preset
        base = state.catalog.entry_for(entry.path).id if preset is not None else ""
        made: dict[str, Any] = {}
        if preset is not None:  # a model made over the API: its Modelfile, system, license
            made = {"system": preset.system or "", "license": "\n".join(preset.license)}
            if preset.messages:
                made["messages"] = preset.messages
        return {
            "modelfile": preset.modelfile(base) if preset is not None else f"FROM {entry.path}\n",
            "parameters": parameters_text(preset.parameters) if preset is not None else "",
            "template": meta.chat_template or "",
            **made,
            "details": _details(entry, base),
            "capabilities": caps,
            "model_info": {
                "general.architecture": meta.architecture,
                "general.parameter_count": meta.parameter_count,
                f"{meta.architecture}.context_length": meta.context_length,
            },
            "modified_at": _modified(entry.path),
        }

    try:
        data = await run_in_threadpool(info)
    except Exception as exc:  # noqa: BLE001 - an unreadable file is the client's 404, not a crash
        raise ApiError(404, f"cannot read the model {entry.id}: {exc}") from exc
    request.scope.setdefault("callisto.log", {})["model"] = entry.id
    return json_response(data)


async def version(request: Request):

    return json_response({"version": OLLAMA_VERSION})
