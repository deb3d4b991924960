"""The OpenAI API: ``/v1/chat/completions`` (streamed too), ``/v1/completions``, ``/v1/embeddings``,
``/v1/models``.

Streamed calls have OpenAI's shape: a call's first chunk carries ``index``, ``id``, ``type`` and
``function.name`` once, with empty arguments; the next chunks carry only ``function.arguments``
fragments on the same index, and they concatenate to the non-streamed arguments. A call is sent
only once the parser has read it whole, so an incomplete call is never sent as a call.

``ttl`` (LM Studio's name): seconds the model stays loaded once idle after the request (0: unloaded
right after it; ``app.server._idle``); without it the server's ``idle_ttl_s``.

``usage.completion_tokens_details`` counts speculative decoding's drafted tokens
(``app.engine.speculative``) as OpenAI counts predicted outputs: ``accepted_prediction_tokens`` (the
drafted tokens the model accepted) and ``rejected_prediction_tokens`` (the others), 0 and 0 when
nothing was drafted; in a stream, on the usage chunk ``stream_options.include_usage`` asks for
(``/v1/completions`` too).

``max_tool_calls`` (a Callisto option, like ``parallel_tool_calls``: ``extra_body`` in the openai
SDK) bounds one reply's calls (``app.server._engine``). A reply whose calls repeat calls the
conversation already answered says so: the ``X-Callisto-Repeated-Calls`` header (their count, not
streamed) and the ``repeated_tool_calls`` field (their ids; on the streamed reply's last chunk).

Legacy function calling (``functions``, ``function_call``, a ``function`` message with a call's
result, an assistant message's ``function_call``) is read as the ``tools`` form it was replaced by
(:func:`_from_legacy`); a request that sent ``functions`` gets its call as ``message.function_call``
(streamed as ``delta.function_call``: the name, then argument fragments) and ``finish_reason``
``function_call``, one call a reply, as OpenAI answered such requests.

Beside ``response_format``, both APIs take the structured outputs other engines' clients send
(:func:`read_guide`: vLLM's ``structured_outputs`` and ``guided_*``, llama-server's ``json_schema``
and ``grammar``, SGLang's ``ebnf`` and ``regex``): a chat reply takes a JSON Schema as a response
format and any other kind as a grammar that holds the whole reply (:func:`_chat_guide`); a
completion takes each as a GBNF grammar.

``tool_choice`` may be ``allowed_tools`` (:func:`allowed_tools`): the prompt shows every tool, and
the reply's calls are held by the grammar to the allowed ones.

A final assistant message (text, no calls) is the reply's start, as llama-server reads one; vLLM's
``continue_final_message`` says so by name, and false makes it an answered turn (:func:`_prefill`).
vLLM's ``chat_template`` renders the prompt in place of the model's template
(``app.server._common.read_chat_template``).

A client that cannot set ``tool_choice`` (simonw's ``llm``) may send the ``X-Callisto-Tool-Choice``
header (``app.server._common.header_tool_choice``); the body's ``tool_choice`` wins.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import TYPE_CHECKING, Any

from app.engine.generation import TokenOptions
from app.server._common import (
    SAMPLER_RANGES,
    TOOL_CHOICE_HEADER,
    call_arguments_json,
    check_bool,
    check_int,
    check_number,
    check_stop,
    check_str,
    check_tool_name,
    convert_tools,
    data_url_image,
    header_tool_choice,
    image_error,
    inner_call_id,
    json_response_format,
    prompt_token_ids,
    queue_turn,
    read_chat_template,
    read_logit_bias,
    read_sampling,
    request_body,
    result_call_id,
    split_fragments,
    streamed,
    type_name,
)
from app.server._engine import TurnEnd, TurnRequest
from app.server._errors import ApiError, log_error, shown
from app.server._idle import parse_ttl
from app.server._json import json_bytes, json_response
from app.server._logprobs import (
    CONTENT,
    LogprobBuffer,
    chat_logprobs,
    completion_logprobs,
    read_chat_logprobs,
    read_completion_logprobs,
)

if TYPE_CHECKING:
    from starlette.requests import Request

    from app.server._state import ServerState

__all__ = [
    "MAX_TOOL_CALLS_LIMIT",
    "REPEATED_CALLS_HEADER",
    "chat_completions",
    "completions",
    "list_models",
    "parse_chat_request",
]

MAX_TOOL_CALLS_LIMIT = 64  # the most a request's max_tool_calls may ask for
#: the most choices (``n``) one request may ask for: each is a generation of its own
MAX_CHOICES = 16
REPEATED_CALLS_HEADER = "X-Callisto-Repeated-Calls"


def _text_of(content: Any, where: str, images: list[bytes] | None = None) -> str:
    """A message's content: a string or an array of content parts. Text parts are joined; image
    parts (``image_url`` with a data URL, ``detail`` ignored; the Responses API's ``input_image``)
    are added to ``images``, and are a 400 where ``images`` is None (only a user message holds
    images)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise ApiError(
            400,
            f"{where} must be a string or an array of content parts, got {type_name(content)}",
            param=where,
        )
    out = []
    for i, part in enumerate(content):
        w = f"{where}[{i}]"
        if not isinstance(part, dict):
            raise ApiError(400, f"{w} must be an object, got {type_name(part)}", param=where)
        kind = part.get("type")
        if kind in ("text", "input_text"):
            out.append(check_str(part.get("text"), f"{w}.text"))
        elif kind in ("image_url", "input_image"):
            if images is None:
                raise image_error(w, f"is an {kind} part, but only a user message may hold images")
            url = part.get("image_url")
            if kind == "image_url":
                if not isinstance(url, dict):
                    raise image_error(f"{w}.image_url", f"must be an object with a url, got {type_name(url)}")
                url = url.get("url")
            images.append(
                data_url_image(url, f"{w}.image_url.url" if kind == "image_url" else f"{w}.image_url")
            )
        elif kind in ("input_audio", "file", "input_file"):
            article = "an" if kind[0] in "aeiou" else "a"
            raise ApiError(
                400, f"{w} is {article} {kind} part; this server reads text and images only", param=where
            )
        else:
            raise ApiError(
                400, f"{w} has unknown type {shown(kind)} (expected 'text' or 'image_url')", param=where
            )
    return "".join(s or "" for s in out)


def _tool_calls(value: Any, where: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ApiError(400, f"{where} must be an array, got {type_name(value)}", param=where)
    out = []
    for i, tc in enumerate(value):
        w = f"{where}[{i}]"
        if not isinstance(tc, dict):
            raise ApiError(400, f"{w} must be an object, got {type_name(tc)}", param=w)
        if tc.get("type", "function") != "function":
            raise ApiError(400, f"{w}.type must be 'function', got {shown(tc.get('type'))}", param=w)
        fn = tc.get("function")
        if not isinstance(fn, dict):
            raise ApiError(400, f"{w}.function must be an object", param=w)
        name = check_tool_name(fn.get("name"), f"{w}.function.name")
        args = fn.get("arguments", "{}")
        if isinstance(args, str):
            try:
                # as a model wrote them: a raw newline inside a string is read (see loads_lenient)
                args = json.loads(args, strict=False) if args.strip() else {}
            except ValueError:
                raise ApiError(400, f"{w}.function.arguments is not valid JSON", param=w) from None
        if not isinstance(args, dict):
            raise ApiError(400, f"{w}.function.arguments must be a JSON object", param=w)
        cid = check_str(tc.get("id", ""), f"{w}.id") or f"legacy{i}"
        out.append({"id": inner_call_id(cid), "name": name, "arguments": args})
    return out


def convert_messages(messages: Any) -> list[dict[str, Any]]:
    """OpenAI messages -> the engine's message dicts (system prompts first, ids mapped)."""
    if not isinstance(messages, list):
        raise ApiError(400, f"messages must be an array, got {type_name(messages)}", param="messages")
    if not messages:
        raise ApiError(400, "messages must contain at least one message", param="messages")
    system: list[str] = []
    out: list[dict[str, Any]] = []
    open_calls: set[str] = set()
    for i, m in enumerate(messages):
        w = f"messages[{i}]"
        if not isinstance(m, dict):
            raise ApiError(400, f"{w} must be an object, got {type_name(m)}", param=w)
        role = m.get("role")
        if role in ("system", "developer"):
            system.append(_text_of(m.get("content"), f"{w}.content"))
        elif role == "user":
            images: list[bytes] = []
            d_user: dict[str, Any] = {
                "role": "user",
                "content": _text_of(m.get("content"), f"{w}.content", images),
            }
            if images:
                d_user["images"] = images  # bytes: the engine's Message takes them as they are
            out.append(d_user)
        elif role == "assistant":
            calls = _tool_calls(m.get("tool_calls"), f"{w}.tool_calls")
            reasoning = m.get("reasoning_content", m.get("reasoning"))
            d: dict[str, Any] = {
                "role": "assistant",
                "content": _text_of(m.get("content"), f"{w}.content"),
                "reasoning": check_str(reasoning, f"{w}.reasoning_content", allow_none=True) or "",
            }
            if calls:
                d["tool_calls"] = calls
                open_calls.update(c["id"] for c in calls)
            out.append(d)
        elif role == "tool":
            cid = check_str(m.get("tool_call_id"), f"{w}.tool_call_id")
            assert cid is not None
            inner = result_call_id(cid, open_calls, w, "a tool result")
            out.append(
                {
                    "role": "tool",
                    "content": _text_of(m.get("content"), f"{w}.content"),
                    "tool_call_id": inner,
                    "name": m.get("name") if isinstance(m.get("name"), str) else None,
                }
            )
        else:
            raise ApiError(
                400, f"{w}.role {shown(role)} is not one of system, developer, user, assistant, tool", param=w
            )
    if system:
        out.insert(0, {"role": "system", "content": "\n\n".join(s for s in system if s)})
    if not any(d["role"] != "system" for d in out):
        raise ApiError(400, "messages has no user message", param="messages")
    return out


def allowed_tools(value: Any, tools: list[dict[str, Any]] | None) -> tuple[str, list[str]]:
    """OpenAI's ``allowed_tools`` tool choice (``{"mode": "auto" | "required", "tools": [{"type":
    "function", "function": {"name": ...}}, ...]}``): (the mode, the names of the tools a reply may
    call). The prompt shows every tool (its prefix stays the same whichever are allowed); the calls
    are held to these. A name that is not declared, or an empty list, is a 400."""
    where = "tool_choice.allowed_tools"
    if not isinstance(value, dict):
        raise ApiError(400, f"{where} must be an object with mode and tools", param="tool_choice")
    mode = value.get("mode")
    if mode not in ("auto", "required"):
        raise ApiError(400, f"{where}.mode must be auto or required, got {shown(mode)}", param="tool_choice")
    listed = value.get("tools")
    if not isinstance(listed, list) or not listed:
        raise ApiError(400, f"{where}.tools must be a non-empty array of tools", param="tool_choice")
    declared = [t["function"]["name"] for t in tools or []]
    names: list[str] = []
    for i, t in enumerate(listed):
        fn = t.get("function") if isinstance(t, dict) else None
        name = fn.get("name") if isinstance(fn, dict) else None
        if not isinstance(t, dict) or t.get("type") != "function" or not isinstance(name, str):
            raise ApiError(
                400,
                f'{where}.tools[{i}] must be {{"type": "function", "function": {{"name": ...}}}}',
                param="tool_choice",
            )
        if name not in declared:
            raise ApiError(
                400,
                f"{where}.tools[{i}] names the function {shown(name)}, which is not among the declared "
                f"tools ({', '.join(declared) or 'none'})",
                param="tool_choice",
            )
        names.append(name)
    return mode, names


def convert_tool_choice(value: Any, tools: list[dict[str, Any]] | None) -> str:
    if value is None:
        return "auto"
    names = [t["function"]["name"] for t in tools or []]
    if isinstance(value, str):
        if value not in ("auto", "none", "required"):
            raise ApiError(
                400,
                f"tool_choice {shown(value)} is not one of auto, none, required, or a named function",
                param="tool_choice",
            )
        if value == "required" and not names:
            raise ApiError(400, "tool_choice 'required' needs tools", param="tool_choice")
        return value
    if (
        isinstance(value, dict)
        and value.get("type") == "function"
        and isinstance(value.get("function"), dict)
    ):
        name = value["function"].get("name")
        if not isinstance(name, str):
            raise ApiError(400, "tool_choice.function.name must be a string", param="tool_choice")
        if name not in names:
            raise ApiError(
                400,
                f"tool_choice names the function {shown(name)}, which is not among the declared "
                f"tools ({', '.join(names) or 'none'})",
                param="tool_choice",
            )
        return f"function:{name}"
    raise ApiError(
        400,
        "tool_choice must be 'auto', 'none', 'required' or "
        '{"type": "function", "function": {"name": ...}}',
        param="tool_choice",
    )


def _response_format(value: Any) -> dict[str, Any] | None:
    if value is None:
        return None
    if not isinstance(value, dict) or value.get("type") not in ("text", "json_object", "json_schema"):
        raise ApiError(
            400,
            "response_format.type must be 'text', 'json_object' or 'json_schema'",
            param="response_format",
        )
    if value["type"] == "json_object":
        return json_response_format(None)  # any object, bounded so that it closes
    return None if value["type"] == "text" else value


def _sampling(body: dict[str, Any]) -> dict[str, Any]:
    # OpenAI's fields and llama-server's beside them (LM Studio and vLLM take them too: ``extra_body``
    # in the openai SDK), top_k and mirostat with them
    sampling = read_sampling(body, SAMPLER_RANGES, top_k=True, mirostat=True)
    if "repeat_penalty" not in sampling:  # vLLM's name for it
        repetition = check_number(body.get("repetition_penalty"), "repetition_penalty", lo=0.0, hi=10.0)
        if repetition is not None:
            sampling["repeat_penalty"] = repetition
    return sampling


def _gave_max_tokens(body: dict[str, Any]) -> bool:
    """Whether the request set the reply's length itself (:func:`_max_tokens` checked it)."""
    return body.get("max_completion_tokens") is not None or body.get("max_tokens") is not None


def _max_tokens(body: dict[str, Any], state: ServerState, default: int, lo: int = 1) -> int:
    limit = state.config.max_tokens_limit
    v = check_int(body.get("max_completion_tokens"), "max_completion_tokens", lo=lo, hi=limit)
    if v is None:
        v = check_int(body.get("max_tokens"), "max_tokens", lo=lo, hi=limit)
    return v if v is not None else min(default, limit)


def _refuse_hosted(body: dict[str, Any]) -> None:
    """What OpenAI's own servers do and a local model cannot is a 400 that says so, never
    silently left out: audio output (``audio``, ``modalities`` with ``audio``) and web search
    (``web_search_options``)."""
    modalities = body.get("modalities")
    if body.get("audio") is not None:
        raise ApiError(400, "audio output is not served: this server writes text", param="audio")
    if isinstance(modalities, list) and "audio" in modalities:
        raise ApiError(
            400, "modalities asks for audio, which is not served: this server writes text", param="modalities"
        )
    if body.get("web_search_options") is not None:
        raise ApiError(
            400,
            "web_search_options is not served: this server does not search the web (give the model a "
            "search tool instead)",
            param="web_search_options",
        )


def _from_legacy(body: dict[str, Any]) -> dict[str, Any]:
    """A request in the legacy form of function calling, in the ``tools`` form that replaced it
    (the body as it is when it has none of it): ``functions`` are the tools (one call a reply, as
    a legacy reply holds one: ``parallel_tool_calls`` is false), and
    ``function_call`` (``auto``, ``none`` or ``{"name": ...}``) the tool choice. In the history, an
    assistant message's ``function_call`` is a call with an id of its own, and a ``function``
    message (its ``name``, its ``content``) the result of the earliest call of that name not yet
    answered. A request that mixes the two forms is a 400 that says which fields."""
    functions, choice = body.get("functions"), body.get("function_call")
    messages = body.get("messages")
    in_history = isinstance(messages, list) and any(
        isinstance(m, dict) and (m.get("role") == "function" or m.get("function_call") is not None)
        for m in messages
    )
    if functions is None and choice is None and not in_history:
        return body
    new = dict(body)
    for old, modern in (("functions", "tools"), ("function_call", "tool_choice")):
        if body.get(old) is not None and body.get(modern) is not None:
            raise ApiError(
                400,
                f"{old} is the legacy form of {modern}: send one of them, not both",
                param=old,
            )
        new.pop(old, None)
    if functions is not None:
        if not isinstance(functions, list):
            raise ApiError(
                400, f"functions must be an array of functions, got {type_name(functions)}", param="functions"
            )
        new["tools"] = [{"type": "function", "function": f} for f in functions]
        new["parallel_tool_calls"] = False  # the reply's function_call holds one: never drop a second
    if choice is not None:
        if choice in ("auto", "none"):
            new["tool_choice"] = choice
        elif isinstance(choice, dict) and isinstance(choice.get("name"), str) and set(choice) == {"name"}:
            new["tool_choice"] = {"type": "function", "function": {"name": choice["name"]}}
        else:
            raise ApiError(
                400,
                f'function_call must be "auto", "none" or {{"name": ...}}, got {shown(choice)}',
                param="function_call",
            )
    if in_history:
        assert isinstance(messages, list)
        new["messages"] = _legacy_messages(messages)
    return new


def _in_legacy_words(err: ApiError) -> ApiError:
    """``err`` about a legacy request's tools or tool choice, in the fields it sent (``functions``,
    ``function_call``)."""
    import re

    def words(text: str) -> str:
        text = re.sub(r"\btools\[(\d+)\]\.function\b", r"functions[\1]", text)
        return re.sub(r"\btool_choice\b", "function_call", re.sub(r"\btools\b", "functions", text))

    return ApiError(err.status, words(err.message), param=err.param and words(err.param), code=err.code)


def _legacy_messages(messages: list[Any]) -> list[Any]:
    """The history's legacy calls and results in the ``tool_calls`` / ``tool`` form (see
    :func:`_from_legacy`); every other message as it is (checked where every message is)."""
    out: list[Any] = []
    unanswered: dict[str, list[str]] = {}  # a function's name -> its calls' ids, earliest first
    for i, m in enumerate(messages):
        w = f"messages[{i}]"
        if isinstance(m, dict) and m.get("role") == "assistant" and m.get("function_call") is not None:
            if m.get("tool_calls"):
                raise ApiError(400, f"{w} has both function_call and tool_calls: send one", param=w)
            call = m["function_call"]
            if not isinstance(call, dict):
                raise ApiError(400, f"{w}.function_call must be an object, got {type_name(call)}", param=w)
            name = check_tool_name(call.get("name"), f"{w}.function_call.name")
            cid = f"call_fn{i:07d}"  # (9 letters or digits after call_, as this server's ids)
            unanswered.setdefault(name, []).append(cid)
            fn = {"name": name, "arguments": call.get("arguments", "{}")}
            m = {k: v for k, v in m.items() if k != "function_call"}
            m["tool_calls"] = [{"id": cid, "type": "function", "function": fn}]
        elif isinstance(m, dict) and m.get("role") == "function":
            name = check_str(m.get("name"), f"{w}.name") or ""
            calls = unanswered.get(name)
            if not calls:
                raise ApiError(
                    400,
                    f"{w} is the result of {shown(name)}, but no earlier assistant message called it "
                    "(function_call)",
                    param=w,
                )
            m = {"role": "tool", "tool_call_id": calls.pop(0), "name": name, "content": m.get("content")}
        out.append(m)
    return out


def parse_chat_request(
    body: dict[str, Any], state: ServerState, header_choice: str | None = None
) -> tuple[TurnRequest, bool, bool]:
    """(the turn, stream?, include usage in the stream?); ``header_choice``: the
    ``X-Callisto-Tool-Choice`` header, used when the body sets no ``tool_choice``."""
    legacy = body.get("functions") is not None or body.get("function_call") is not None
    _refuse_hosted(body)
    body = _from_legacy(body)
    model = check_str(body.get("model"), "model", allow_none=True)
    check_int(body.get("n"), "n", lo=1, hi=MAX_CHOICES)  # the choices: chat_completions reads it
    try:
        tools = convert_tools(body.get("tools"))
        messages = convert_messages(body.get("messages"))
        chosen = body.get("tool_choice")
        allowed = None
        if chosen is None and header_choice:
            choice = header_tool_choice(header_choice, tools, messages)
        elif isinstance(chosen, dict) and chosen.get("type") == "allowed_tools":
            choice, allowed = allowed_tools(chosen.get("allowed_tools"), tools)
        else:
            choice = convert_tool_choice(chosen, tools)
    except ApiError as err:
        if not legacy:
            raise
        raise _in_legacy_words(err) from err
    stream = check_bool(body.get("stream"), "stream", False)
    usage = _include_usage(body)
    response_format, grammar = _chat_guide(
        body, _response_format(body.get("response_format")), bool(tools) and choice != "none"
    )
    req = TurnRequest(
        model=model,
        messages=messages,
        tools=tools,
        tool_choice=choice,
        allowed_tools=allowed,
        parallel_tool_calls=check_bool(body.get("parallel_tool_calls"), "parallel_tool_calls", True),
        response_format=response_format,
        grammar=grammar,
        max_tokens=_max_tokens(body, state, state.config.default_max_tokens),
        max_tokens_given=_gave_max_tokens(body),
        sampling=_sampling(body),
        stop=check_stop(body.get("stop"), "stop"),
        max_tool_calls=check_int(body.get("max_tool_calls"), "max_tool_calls", lo=1, hi=MAX_TOOL_CALLS_LIMIT),
        # a grammar holds the reply from its first token: a template's thinking is off unless asked
        thinking=_thinking(body.get("reasoning_effort", "off" if grammar is not None else None)),
        template_kwargs=_template_kwargs(body.get("chat_template_kwargs")),
        chat_template=read_chat_template(body.get("chat_template"), "chat_template"),
        idle_ttl=parse_ttl(body.get("ttl")),
        options=TokenOptions(
            logprobs=read_chat_logprobs(body),
            prediction=_prediction(body.get("prediction")),
            logit_bias=read_logit_bias(body.get("logit_bias")),
        ),
        prefill=_prefill(body, messages),
    )
    return req, stream, usage


def _prefill(body: dict[str, Any], messages: list[dict[str, Any]]) -> bool:
    """Whether the final message, an assistant's text, is the reply's start (``TurnRequest.prefill``):
    vLLM's ``continue_final_message`` when sent, else yes, as llama-server reads one (an answered
    turn is a final assistant message with calls). ``add_generation_prompt`` false (vLLM's partner
    flag) is taken only where the reply continues one."""
    go_on = body.get("continue_final_message")
    check_bool(go_on, "continue_final_message", False)
    new_turn = check_bool(body.get("add_generation_prompt"), "add_generation_prompt", True)
    last = messages[-1] if messages else None
    ends = (
        isinstance(last, dict)
        and last.get("role") == "assistant"
        and bool(last.get("content"))
        and not last.get("tool_calls")
    )
    if go_on and not ends:
        raise ApiError(
            400,
            "continue_final_message needs a final assistant message with text and no tool calls to continue",
            param="continue_final_message",
        )
    prefill = ends if go_on is None else bool(go_on)
    if not new_turn and not prefill:
        raise ApiError(
            400,
            "add_generation_prompt false is taken only with a final assistant message to continue "
            "(continue_final_message)",
            param="add_generation_prompt",
        )
    return prefill


def _prediction(value: Any) -> str | None:
    """OpenAI's ``prediction`` (predicted outputs: ``{"type": "content", "content": text or text
    parts}``): the text the reply is expected to say, which speculative decoding drafts from."""
    if value is None:
        return None
    if not isinstance(value, dict) or value.get("type") != "content":
        raise ApiError(400, 'prediction must be {"type": "content", "content": ...}', param="prediction")
    content = value.get("content")
    if isinstance(content, list):
        parts = []
        for i, part in enumerate(content):
            if (
                not isinstance(part, dict)
                or part.get("type") != "text"
                or not isinstance(part.get("text"), str)
            ):
                raise ApiError(400, f"prediction.content[{i}] must be a text part", param="prediction")
            parts.append(part["text"])
        content = "".join(parts)
    if not isinstance(content, str):
        raise ApiError(400, "prediction.content must be a string or text parts", param="prediction")
    return content or None


def _include_usage(body: dict[str, Any]) -> bool:
    """``stream_options.include_usage``: a streamed reply ends with a chunk that holds its usage."""
    opts = body.get("stream_options")
    if opts is not None and not isinstance(opts, dict):
        raise ApiError(400, "stream_options must be an object", param="stream_options")
    return bool((opts or {}).get("include_usage"))


def _thinking(value: Any) -> Any:
    """``reasoning_effort`` as a thinking choice (``app.engine.thinking.parse_thinking``: a level,
    ``none`` for off, or ``auto``/``on``/``off``); None: the template's default."""
    from app.engine.thinking import parse_thinking

    if value is None:
        return None
    if not isinstance(value, str):
        raise ApiError(400, "reasoning_effort must be a string", param="reasoning_effort")
    try:
        return parse_thinking(value)
    except ValueError as exc:
        raise ApiError(400, str(exc), param="reasoning_effort") from None


#: the most variables chat_template_kwargs may name
MAX_TEMPLATE_KWARGS = 64


def _template_kwargs(value: Any) -> dict[str, Any] | None:
    """``chat_template_kwargs``: more variables for the model's chat template (``enable_thinking``...;
    the conversation's own variables cannot be replaced: ``app.engine.render``)."""
    if value is None:
        return None
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise ApiError(400, "chat_template_kwargs must be an object", param="chat_template_kwargs")
    if len(value) > MAX_TEMPLATE_KWARGS:
        raise ApiError(
            400,
            f"chat_template_kwargs names at most {MAX_TEMPLATE_KWARGS} variables",
            param="chat_template_kwargs",
        )
    return dict(value)


def _usage(end: TurnEnd) -> dict[str, Any]:
    """OpenAI's usage: the reasoning's tokens, and speculative decoding's drafted tokens as its
    predicted outputs': those the model accepted and those it rejected (``completion_tokens_details``)."""
    accepted = max(0, min(end.draft_accepted, end.draft_tokens))
    return {
        "prompt_tokens": end.prompt_tokens,
        "completion_tokens": end.completion_tokens,
        "total_tokens": end.prompt_tokens + end.completion_tokens,
        "prompt_tokens_details": {"cached_tokens": end.cached_tokens},
        "completion_tokens_details": {
            "reasoning_tokens": end.reasoning_tokens,
            "accepted_prediction_tokens": accepted,
            "rejected_prediction_tokens": max(0, end.draft_tokens - accepted),
        },
    }


def _call_dict(call: Any) -> dict[str, Any]:
    return {
        "id": f"call_{call.id}",
        "type": "function",
        "function": {"name": call.name, "arguments": call_arguments_json(call)},
    }


#: a legacy request's (``functions``) finish reason for a call, in its own words
_LEGACY_FINISH = {"tool_calls": "function_call"}


def _reply_message(text: str, reasoning: str, calls: list[Any], legacy: bool) -> dict[str, Any]:
    """A whole reply's ``message``: its calls in ``tool_calls``, or (a ``functions`` request,
    ``legacy``) the one call in ``function_call``."""
    message: dict[str, Any] = {"role": "assistant", "content": text if (text or not calls) else None}
    if reasoning:
        message["reasoning_content"] = reasoning
    if calls and legacy:
        message["function_call"] = _call_dict(calls[0])["function"]
    elif calls:
        message["tool_calls"] = [_call_dict(c) for c in calls]
    return message


def _call_deltas(at: int, call: Any, legacy: bool) -> list[dict[str, Any]]:
    """A streamed call's deltas (call ``at`` of its reply): its name (and id), then its arguments'
    fragments; as ``function_call`` for a ``functions`` request (``legacy``)."""
    frags = split_fragments(call_arguments_json(call))
    if legacy:
        return [{"function_call": {"name": call.name, "arguments": ""}}] + [
            {"function_call": {"arguments": frag}} for frag in frags
        ]
    head = {"index": at, "id": f"call_{call.id}", "type": "function"}
    return [{"tool_calls": [{**head, "function": {"name": call.name, "arguments": ""}}]}] + [
        {"tool_calls": [{"index": at, "function": {"arguments": frag}}]} for frag in frags
    ]


def _sse(data: Any) -> bytes:
    return b"data: " + json_bytes(data) + b"\n\n"


async def chat_completions(request: Request):
    state, body = await request_body(request)
    req, stream, include_usage = parse_chat_request(body, state, request.headers.get(TOOL_CHOICE_HEADER))
    legacy = body.get("functions") is not None  # the reply's call as function_call
    renamed = _LEGACY_FINISH if legacy else None
    n = int(body.get("n") or 1)
    if n > 1:
        return await _choices(request, state, req, n, stream, include_usage, legacy=legacy)
    turn = await queue_turn(state, req)
    cid = f"chatcmpl-{uuid.uuid4().hex[:24]}"
    created = int(time.time())
    if not stream:
        text, reasoning, calls, end = await turn.collect(request)
        turn.log(request, end, len(calls))
        logprobs = chat_logprobs(turn.logprob_entries(CONTENT)) if req.options.logprobs is not None else None
        message = _reply_message(text, reasoning, calls, legacy)
        reply: dict[str, Any] = {
            "id": cid,
            "object": "chat.completion",
            "created": created,
            "model": turn.model_id,
            "system_fingerprint": None,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": end.finish_in(renamed),
                    "logprobs": logprobs,
                }
            ],
            "usage": _usage(end),
        }
        if end.repeated:
            reply["repeated_tool_calls"] = [f"call_{i}" for i in end.repeated]
        return json_response(
            reply, headers={REPEATED_CALLS_HEADER: str(len(end.repeated))} if end.repeated else None
        )

    held = LogprobBuffer()  # the content's log probabilities, until its chunk goes out

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> bytes:
        entries = held.take()
        return _sse(
            {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": turn.model_id,
                "system_fingerprint": None,
                "choices": [
                    {
                        "index": 0,
                        "delta": delta,
                        "finish_reason": finish,
                        "logprobs": chat_logprobs(entries) if entries else None,
                    }
                ],
                **extra,
            }
        )

    async def gen():
        ncalls = 0
        end = None
        try:
            yield chunk({"role": "assistant", "content": ""})
            async for kind, value in turn.events():
                if kind == "logprobs":
                    held.add(value)
                elif kind == "text":
                    yield chunk({"content": value})
                elif kind == "reasoning":
                    yield chunk({"reasoning_content": value})
                elif kind == "call":
                    for delta in _call_deltas(ncalls, value, legacy):
                        yield chunk(delta)
                    ncalls += 1
                elif kind == "end":
                    end = value
            assert end is not None
            repeated = {"repeated_tool_calls": [f"call_{i}" for i in end.repeated]} if end.repeated else {}
            yield chunk({}, end.finish_in(renamed), **repeated)
            if include_usage:
                yield _sse(
                    {
                        "id": cid,
                        "object": "chat.completion.chunk",
                        "created": created,
                        "model": turn.model_id,
                        "choices": [],
                        "usage": _usage(end),
                    }
                )
            yield b"data: [DONE]\n\n"
        except ApiError as err:
            from app.server._errors import error_body

            log_error(request.scope, err)
            yield _sse(error_body("openai", err))
        finally:
            turn.cancel.set()  # a client that went away stops the generation at the next token
            turn.log(request, end, ncalls)

    return await streamed(turn, request, gen())


async def _queue_all(state: ServerState, reqs: list[TurnRequest]) -> list[Any]:
    """One turn per request, queued at once; a full queue refuses them all (none already queued
    runs)."""
    turns: list[Any] = []
    try:
        for req in reqs:
            turns.append(await queue_turn(state, req))
    except BaseException:
        for t in turns:
            t.cancel.set()
        raise
    return turns


async def _collect_all(request: Request, turns: list[Any]) -> list[Any]:
    """Every turn's whole reply; one that fails (or a client that leaves) stops the others."""
    import asyncio

    try:
        return list(await asyncio.gather(*(t.collect(request) for t in turns)))
    finally:
        for t in turns:
            t.cancel.set()


def _summed(ends: list[TurnEnd], *, one_prompt: bool) -> TurnEnd:
    """The usage of several generations: completions and drafts summed; the prompt counted once
    (``one_prompt``: choices of one prompt) or summed (several prompts)."""
    import dataclasses

    def total(key: str) -> int:
        return sum(getattr(e, key) for e in ends)

    first = ends[0]
    return dataclasses.replace(
        first,
        prompt_tokens=first.prompt_tokens if one_prompt else total("prompt_tokens"),
        cached_tokens=first.cached_tokens if one_prompt else total("cached_tokens"),
        completion_tokens=total("completion_tokens"),
        draft_tokens=total("draft_tokens"),
        draft_accepted=total("draft_accepted"),
    )


async def _choices(
    request: Request,
    state: ServerState,
    req: TurnRequest,
    n: int,
    stream: bool,
    include_usage: bool,
    *,
    legacy: bool = False,
):
    """``n`` choices: ``n`` generations of the same request, queued at once (on a model with slots
    they are batched, one decode a step for all; a ``seed`` is the first choice's, the next ones
    take the seeds after it, so choices differ as they would unseeded). The prompt is counted once
    in the usage, the completions summed; a streamed reply interleaves the choices' chunks by index."""
    import asyncio
    import dataclasses

    renamed = _LEGACY_FINISH if legacy else None
    reqs = []
    for i in range(n):
        sampling = dict(req.sampling)
        if i and "seed" in sampling:
            sampling["seed"] = (int(sampling["seed"]) + i) & 0xFFFFFFFF
        reqs.append(dataclasses.replace(req, sampling=sampling))
    turns = await _queue_all(state, reqs)
    model_id = turns[0].model_id
    cid = f"chatcmpl-{uuid.uuid4().hex[:24]}"
    created = int(time.time())

    def usage(ends: list[TurnEnd]) -> dict[str, Any]:
        whole = _summed(ends, one_prompt=True)
        request.scope.setdefault("callisto.log", {}).update(
            model=model_id, prompt_tokens=whole.prompt_tokens, completion_tokens=whole.completion_tokens
        )
        return _usage(whole)

    if not stream:
        done = await _collect_all(request, turns)
        choices = []
        for i, (text, reasoning, calls, end) in enumerate(done):
            entries = turns[i].logprob_entries(CONTENT)
            choices.append(
                {
                    "index": i,
                    "message": _reply_message(text, reasoning, calls, legacy),
                    "finish_reason": end.finish_in(renamed),
                    "logprobs": chat_logprobs(entries) if req.options.logprobs is not None else None,
                }
            )
        request.scope.setdefault("callisto.log", {})["tool_calls"] = sum(len(d[2]) for d in done)
        return json_response(
            {
                "id": cid,
                "object": "chat.completion",
                "created": created,
                "model": model_id,
                "system_fingerprint": None,
                "choices": choices,
                "usage": usage([d[3] for d in done]),
            }
        )

    held = [LogprobBuffer() for _ in range(n)]  # each choice's content's, until its chunk goes out

    def chunk(index: int, delta: dict[str, Any], finish: str | None = None) -> bytes:
        entries = held[index].take()
        return _sse(
            {
                "id": cid,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model_id,
                "system_fingerprint": None,
                "choices": [
                    {
                        "index": index,
                        "delta": delta,
                        "finish_reason": finish,
                        "logprobs": chat_logprobs(entries) if entries else None,
                    }
                ],
            }
        )

    async def gen():
        merged: asyncio.Queue[tuple[int, str, Any]] = asyncio.Queue()

        async def pump(i: int, turn: Any) -> None:
            try:
                async for kind, value in turn.events():
                    await merged.put((i, kind, value))
            except ApiError as err:
                await merged.put((i, "error", err))

        pumps = [asyncio.ensure_future(pump(i, t)) for i, t in enumerate(turns)]
        ends: list[TurnEnd | None] = [None] * n
        calls = [0] * n
        try:
            for i in range(n):
                yield chunk(i, {"role": "assistant", "content": ""})
            left = n
            while left:
                i, kind, value = await merged.get()
                if kind == "logprobs":
                    held[i].add(value)
                elif kind == "text":
                    yield chunk(i, {"content": value})
                elif kind == "reasoning":
                    yield chunk(i, {"reasoning_content": value})
                elif kind == "call":
                    for delta in _call_deltas(calls[i], value, legacy):
                        yield chunk(i, delta)
                    calls[i] += 1
                elif kind == "end":
                    ends[i] = value
                    left -= 1
                    yield chunk(i, {}, value.finish_in(renamed))
                elif kind == "error":
                    raise value
            if include_usage:
                total = usage([e for e in ends if e is not None])
                yield _sse(
                    {
                        "id": cid,
                        "object": "chat.completion.chunk",
                        "created": created,
                        "model": model_id,
                        "choices": [],
                        "usage": total,
                    }
                )
            yield b"data: [DONE]\n\n"
        except ApiError as err:
            from app.server._errors import error_body

            log_error(request.scope, err)
            yield _sse(error_body("openai", err))
        finally:
            for t in turns:
                t.cancel.set()  # a client that went away stops every choice at its next token
            for p in pumps:
                p.cancel()
            request.scope.setdefault("callisto.log", {})["tool_calls"] = sum(calls)

    try:
        for t in turns[1:]:
            await t.first(request)  # the first is awaited by streamed(): a refusal is a status
        return await streamed(turns[0], request, gen())
    except BaseException:
        for t in turns:
            t.cancel.set()  # refused (or the client left) before the stream began: no choice runs on
        raise


async def _prompts(
    request: Request, state: ServerState, body: dict[str, Any], prompts: list[str | list[int]]
):
    """``/v1/completions`` with several prompts (langchain's ``OpenAI.generate`` and eval harnesses
    batch them so, as texts or token ids): a completion each, queued at once (batched on a model
    with slots), choice ``i`` for prompt ``i``; the usage summed. Not streamed (send one prompt a
    stream), no ``suffix``."""
    import dataclasses

    if len(prompts) > MAX_CHOICES:
        raise ApiError(
            400, f"prompt holds {len(prompts)} prompts; at most {MAX_CHOICES} at once", param="prompt"
        )
    if check_bool(body.get("stream"), "stream", False):
        raise ApiError(
            400, "stream takes one prompt: send each prompt as a request of its own", param="stream"
        )
    if body.get("suffix"):
        raise ApiError(
            400, "suffix takes one prompt: send each prompt as a request of its own", param="suffix"
        )
    empty = next((i for i, p in enumerate(prompts) if not p), None)
    if empty is not None:
        raise ApiError(400, f"prompt[{empty}] is empty", param="prompt")
    base = _completion_request(body, state)
    turns = await _queue_all(state, [dataclasses.replace(base, raw_prompt=p) for p in prompts])
    done = await _collect_all(request, turns)
    whole = _summed([d[3] for d in done], one_prompt=False)
    turns[0].log(request, whole, 0)
    choices = [
        _completion_choice(i, turn, text, end)
        for i, (turn, (text, _r, _c, end)) in enumerate(zip(turns, done, strict=True))
    ]
    return json_response(
        {
            "id": f"cmpl-{uuid.uuid4().hex[:24]}",
            "object": "text_completion",
            "created": int(time.time()),
            "model": turns[0].model_id,
            "choices": choices,
            "usage": _usage(whole),
        }
    )


# The structured outputs other engines' clients (Callisto's remote client among them) ask for, by
# kind and the fields each comes in: vLLM's ``structured_outputs.<kind>`` (``guided_<kind>`` before
# 0.12), llama-server's ``grammar`` and ``json_schema``, SGLang's ``ebnf`` and ``regex``. A request
# may name one kind, in several fields that agree.
_GUIDES = {
    "grammar": ("grammar", "structured_outputs.grammar", "guided_grammar", "ebnf"),
    "json": ("json_schema", "structured_outputs.json", "guided_json"),
    "regex": ("regex", "structured_outputs.regex", "guided_regex"),
    "choice": ("structured_outputs.choice", "guided_choice"),
}
_OUTPUTS = "structured_outputs."


def read_guide(body: dict[str, Any]) -> tuple[str, str, Any] | None:
    """(kind, the field it came in, its value) of the structured output a request asks for, or
    None; a 400 for two kinds, fields that disagree, or a ``structured_outputs`` kind not taken."""
    outputs = body.get("structured_outputs")
    if outputs is not None and not isinstance(outputs, dict):
        raise ApiError(400, "structured_outputs must be an object", param="structured_outputs")
    outputs = outputs or {}
    known = {n.removeprefix(_OUTPUTS) for names in _GUIDES.values() for n in names if n.startswith(_OUTPUTS)}
    other = [k for k in outputs if k not in known and outputs[k] is not None]
    if other:
        raise ApiError(
            400,
            f"structured_outputs.{other[0]} is not supported: send json, regex, choice or grammar",
            param=f"structured_outputs.{other[0]}",
        )
    found = [
        (kind, name, value)
        for kind, names in _GUIDES.items()
        for name in names
        if (
            value := outputs.get(name.removeprefix(_OUTPUTS)) if name.startswith(_OUTPUTS) else body.get(name)
        )
        is not None
    ]
    if not found:
        return None
    if len({(k, json.dumps(v, sort_keys=True)) for k, _, v in found}) > 1:
        names = " and ".join(n for _, n, _ in found)
        raise ApiError(400, f"{names} ask for different outputs: send one", param=found[0][1])
    return found[0]


def guide_schema(name: str, value: Any) -> dict[str, Any]:
    """A ``json`` structured output's JSON Schema (an object, or its JSON text as vLLM takes it)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ApiError(400, f"{name} is not valid JSON", param=name) from None
    if not isinstance(value, dict):
        raise ApiError(400, f"{name} must be a JSON Schema object", param=name)
    return value


def guide_gbnf(kind: str, name: str, value: Any) -> str:
    """The GBNF grammar of a structured output (:func:`read_guide`); a 400 naming ``name`` for a
    value that is not of its kind, or a construct GBNF cannot say (a regex look-around)."""
    from app.engine.errors import GbnfError
    from app.engine.grammar.gbnf import choice_gbnf, json_gbnf, regex_gbnf

    if kind == "choice":
        if not isinstance(value, list) or not value or not all(isinstance(c, str) and c for c in value):
            raise ApiError(400, f"{name} must be a non-empty array of non-empty strings", param=name)
    elif kind != "json" and (not isinstance(value, str) or not value.strip()):
        what = "GBNF grammar" if kind == "grammar" else "regular expression"
        raise ApiError(400, f"{name} must be a non-empty {what} string", param=name)
    try:
        if kind == "json":
            return json_gbnf(guide_schema(name, value))
        if kind == "regex":
            return regex_gbnf(value)
        if kind == "choice":
            return choice_gbnf(value)
    except GbnfError as exc:
        raise ApiError(400, f"{name} cannot be applied: {exc}", param=name) from None
    return str(value)


def completion_grammar(body: dict[str, Any], path: str = "/v1/completions") -> str | None:
    """The GBNF grammar a completion request (to ``path``) holds its reply to, or None: its
    structured output (:func:`read_guide`: a grammar, a JSON Schema, a regex or a choice)."""
    guide = read_guide(body)
    return None if guide is None else guide_gbnf(*guide)


def _chat_guide(
    body: dict[str, Any], response_format: dict[str, Any] | None, tools_offered: bool
) -> tuple[dict[str, Any] | None, str | None]:
    """(response format, GBNF grammar) of a chat request with its structured output: a JSON
    Schema is a response format (a reply with tools stays free to call them); any other kind is
    a grammar that holds the whole reply, so it takes no tools. A 400 beside ``response_format``."""
    guide = read_guide(body)
    if guide is None:
        return response_format, None
    kind, name, value = guide
    if response_format is not None:
        raise ApiError(400, f"send either response_format or {name}, not both", param=name)
    if kind == "json":
        return json_response_format(guide_schema(name, value)), None
    if tools_offered:
        raise ApiError(
            400,
            f"{name} holds the whole reply, so it cannot be combined with tools (send no tools, or "
            "tool_choice none)",
            param=name,
        )
    return None, guide_gbnf(kind, name, value)


def _read_prompts(value: Any) -> list[str | list[int]]:
    """A completion's ``prompt``: a text, token ids, or an array of several (texts or token ids)."""

    if isinstance(value, str):
        return [value]
    ids = prompt_token_ids(value)
    if ids:
        return [ids]
    if isinstance(value, list) and value:
        out: list[str | list[int]] = []
        for i, p in enumerate(value):
            one = p if isinstance(p, str) else prompt_token_ids(p)
            if one is None:
                raise ApiError(
                    400,
                    f"prompt[{i}] must be a string or an array of token ids, got {type_name(p)}",
                    param="prompt",
                )
            out.append(one)
        return out
    if isinstance(value, list):
        raise ApiError(400, "prompt is empty", param="prompt")
    raise ApiError(
        400, "prompt must be a string, an array of token ids, or an array of several prompts", param="prompt"
    )


def _completion_request(body: dict[str, Any], state: ServerState) -> TurnRequest:
    """What every completion request reads alike (its prompt is set by the caller). ``echo``
    repeats the prompt (a prompt of token ids as their text); with ``logprobs`` its tokens have
    theirs too (the first one none), what an eval harness scores a text by, and ``max_tokens`` may
    be 0 (the prompt is read and scored, nothing generated)."""
    echo = check_bool(body.get("echo"), "echo", False)
    logprobs = read_completion_logprobs(body)
    return TurnRequest(
        model=check_str(body.get("model"), "model", allow_none=True),
        grammar=completion_grammar(body),
        max_tokens=_max_tokens(body, state, 16, lo=0 if echo else 1),
        max_tokens_given=_gave_max_tokens(body),
        sampling=_sampling(body),
        stop=check_stop(body.get("stop"), "stop"),
        idle_ttl=parse_ttl(body.get("ttl")),
        options=TokenOptions(
            logprobs=logprobs,
            prompt_logprobs=echo and logprobs is not None,
            logit_bias=read_logit_bias(body.get("logit_bias")),
        ),
        echo=echo,
    )


def _completion_choice(index: int, turn: Any, text: str, end: TurnEnd) -> dict[str, Any]:
    """A collected completion's choice: the prompt first with ``echo``, and its ``logprobs``
    (the prompt's tokens' too with ``echo``) when asked."""
    req = turn.req
    logprobs = None
    if req.options.logprobs is not None:
        prompt = list(turn.prompt_logprobs or []) if req.echo else []
        # a token the model put before the prompt's text (its BOS) writes none of the echo
        silent = 1 if prompt and not turn.echo.encode().startswith(prompt[0].data) else 0
        logprobs = completion_logprobs(prompt + turn.logprob_entries(CONTENT), silent=silent)
    return {
        "text": turn.echo + text if req.echo else text,
        "index": index,
        "logprobs": logprobs,
        "finish_reason": end.finish_in(),
    }


async def completions(request: Request):
    state, body = await request_body(request)
    if check_int(body.get("n"), "n", lo=1) not in (None, 1):
        raise ApiError(400, "n must be 1 here: several choices are served on /v1/chat/completions", param="n")
    if check_int(body.get("best_of"), "best_of", lo=1) not in (None, 1):  # (never ignored)
        raise ApiError(400, "best_of must be 1 here: one completion is generated a prompt", param="best_of")
    prompts = _read_prompts(body.get("prompt"))
    if len(prompts) > 1:
        return await _prompts(request, state, body, prompts)
    prompt = prompts[0]
    # suffix: fill in the middle (the reply goes between the prompt and it), as an editor asks
    suffix = check_str(body.get("suffix"), "suffix", allow_none=True) or ""
    if not prompt and not suffix:
        raise ApiError(400, "prompt is empty", param="prompt")
    req = _completion_request(body, state)
    stream = check_bool(body.get("stream"), "stream", False)
    if suffix:
        if req.echo:
            raise ApiError(400, "echo cannot be sent with suffix: leave one out", param="echo")
        if not isinstance(prompt, str):
            raise ApiError(400, "suffix takes a text prompt, not token ids", param="suffix")
        req.fim = (prompt, suffix)
    else:
        req.raw_prompt = prompt
    if stream and req.options.prompt_logprobs:
        raise ApiError(
            400,
            "echo with logprobs is not streamed: the prompt's log probabilities come whole; leave stream out",
            param="stream",
        )
    include_usage = _include_usage(body)
    turn = await queue_turn(state, req)
    cid = f"cmpl-{uuid.uuid4().hex[:24]}"
    created = int(time.time())
    if not stream:
        text, _r, _c, end = await turn.collect(request)
        turn.log(request, end, 0)
        return json_response(
            {
                "id": cid,
                "object": "text_completion",
                "created": created,
                "model": turn.model_id,
                "choices": [_completion_choice(0, turn, text, end)],
                "usage": _usage(end),
            }
        )

    held = LogprobBuffer()
    written = 0  # the characters the chunks held so far: where the next token's text begins

    def chunk(text: str, finish: str | None = None) -> bytes:
        nonlocal written
        entries = held.take()
        logprobs = completion_logprobs(entries, written) if entries else None
        written += len(text)
        return _sse(
            {
                "id": cid,
                "object": "text_completion",
                "created": created,
                "model": turn.model_id,
                "choices": [{"text": text, "index": 0, "logprobs": logprobs, "finish_reason": finish}],
            }
        )

    def usage_chunk(end: TurnEnd) -> bytes:
        return _sse(
            {
                "id": cid,
                "object": "text_completion",
                "created": created,
                "model": turn.model_id,
                "choices": [],
                "usage": _usage(end),
            }
        )

    async def gen():
        end = None
        try:
            async for kind, value in turn.events():
                if kind == "echo":  # the prompt first (the turn says it before anything else)
                    yield chunk(value)
                elif kind == "logprobs":
                    held.add(value)
                elif kind == "text":
                    yield chunk(value)
                elif kind == "end":
                    end = value
            assert end is not None
            yield chunk("", end.finish_in())
            if include_usage:
                yield usage_chunk(end)
            yield b"data: [DONE]\n\n"
        except ApiError as err:
            from app.server._errors import error_body

            log_error(request.scope, err)
            yield _sse(error_body("openai", err))
        finally:
            turn.cancel.set()
            turn.log(request, end, 0)

    return await streamed(turn, request, gen())


async def embeddings(request: Request):
    """``/v1/embeddings``: a vector per input (a string, strings, token ids), normalized, as floats
    or as base64 float32 (``encoding_format``: the openai SDK asks for base64 and decodes it). An
    input longer than the model's context is refused, as OpenAI refuses one (``app.server._embeddings``)."""
    import base64
    from array import array

    from app.server._embeddings import embed_inputs, read_dimensions, read_inputs, vectors

    state, body = await request_body(request)
    inputs, single = read_inputs(body.get("input"), "input", tokens=True)
    if not inputs:
        raise ApiError(400, "input is empty: send a string or a non-empty array", param="input")
    encoding = body.get("encoding_format") or "float"
    if encoding not in ("float", "base64"):
        raise ApiError(400, "encoding_format must be 'float' or 'base64'", param="encoding_format")
    dimensions = read_dimensions(body.get("dimensions"))
    req = TurnRequest(
        model=check_str(body.get("model"), "model", allow_none=True), idle_ttl=parse_ttl(body.get("ttl"))
    )
    model_id, result = await embed_inputs(
        request, state, req, inputs, truncate=False, dimensions=dimensions, single=single
    )
    data = []
    for i, vec in enumerate(vectors(result, dimensions)):
        value: Any = (
            vec if encoding == "float" else base64.b64encode(array("f", vec).tobytes()).decode("ascii")
        )
        data.append({"object": "embedding", "index": i, "embedding": value})
    n = result.total_tokens
    return json_response(
        {"object": "list", "data": data, "model": model_id, "usage": {"prompt_tokens": n, "total_tokens": n}}
    )


def _card(state: ServerState, entry: Any, now: int) -> dict[str, Any]:
    """A model as ``/v1/models`` lists it: OpenAI's fields, Anthropic's beside them (``type``,
    ``display_name``, ``created_at``: the same path answers the anthropic SDK's ``models.list``)
    and ``callisto``: what a request gets (the context of each slot, the slots) and whether the
    model reads images (a vision projector: loaded, chosen in the library, or beside the file)."""
    from datetime import UTC, datetime

    slots = state.slot_card(entry)
    return {
        "id": entry.id,
        "object": "model",
        "created": now,
        "owned_by": "callisto",
        "type": "model",
        "display_name": entry.id,
        "created_at": datetime.fromtimestamp(now, UTC).isoformat().replace("+00:00", "Z"),
        "max_input_tokens": slots["n_ctx"],
        "callisto": {**slots, "vision": state.has_vision(entry)},
    }


async def list_models(request: Request):
    from starlette.concurrency import run_in_threadpool

    state: ServerState = request.app.state.callisto
    now = int(time.time())

    def cards() -> list[dict[str, Any]]:
        return [_card(state, e, now) for e in state.catalog.entries(refresh=True)]

    data = await run_in_threadpool(cards)
    # Anthropic's page fields beside OpenAI's list: one page holds every model
    first, last = (data[0]["id"], data[-1]["id"]) if data else (None, None)
    return json_response(
        {"object": "list", "data": data, "has_more": False, "first_id": first, "last_id": last}
    )


async def get_model(request: Request):
    """``GET /v1/models/{model}`` (the openai SDK's ``models.retrieve``): the model's card as the
    list gives it; an unknown name is a 404 that lists the names."""
    from starlette.concurrency import run_in_threadpool

    state: ServerState = request.app.state.callisto
    name = request.path_params["model"]

    def card() -> dict[str, Any]:
        return _card(state, state.catalog.resolve(name), int(time.time()))

    return json_response(await run_in_threadpool(card))
