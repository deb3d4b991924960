"""Detect a template's tool-call family by rendering a probe call through it.

Render a user message, then the same plus an assistant tool call; cut the new text at the end
of the turn; the family whose parser reads that text back as the probe call is the template's
format. Robust to real templates: the assistant turn is tried with content ``""`` and ``None``,
arguments as an object and as a JSON string, last and then followed by its result (a template
may render a last assistant message as a prefill); the end-of-turn text is learned from the template
itself (a plain assistant reply) when ``eos_token`` does not end the turn; a GGUF's
``tokenizer.chat_template.tool_use`` is preferred when given.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

from app.engine.formats.base import FORMATS, Format

__all__ = [
    "MARKED_TEMPLATES",
    "PROBE_ARGS",
    "PROBE_CALL",
    "PROBE_TOOLS",
    "TAUGHT_TEMPLATES",
    "TEMPLATE_MARKERS",
    "WIRE_OF",
    "call_texts",
    "detect",
    "detect_template",
    "probe_texts",
    "same_wire",
]

PROBE_TOOLS: list[dict[str, Any]] = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Get the weather forecast for a city.",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name"},
                    "days": {"type": "integer", "description": "Number of days"},
                    "metric": {"type": "boolean", "description": "Metric units"},
                },
                "required": ["city"],
            },
        },
    }
]
PROBE_ARGS: dict[str, Any] = {"city": "Paris", "days": 3, "metric": True}
PROBE_CALL: tuple[str, dict[str, Any]] = ("get_weather", PROBE_ARGS)
_USER = [{"role": "user", "content": "What is the weather in Paris?"}]
_REPLY_MARK = "Zq7PlainReplyXv"
_RESULT = ({"role": "tool", "tool_call_id": "call00000", "content": "Sunny, 21 C"},)
_BOUNDARY = "\n >]|:"  # ":" ends a role header (Granite 20B FC: "ASSISTANT:")

Render = Callable[[list[dict[str, Any]], list[dict[str, Any]] | None], str]


def _assistant_call(
    name: str, arguments: dict[str, Any], content: str | None, args_as_string: bool
) -> dict[str, Any]:
    args: Any = json.dumps(arguments) if args_as_string else dict(arguments)
    return {
        "role": "assistant",
        "content": content,
        "tool_calls": [
            {"id": "call00000", "type": "function", "function": {"name": name, "arguments": args}}
        ],
    }


def _safe(render: Render, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str | None:
    try:
        out = render(messages, tools)
    except Exception:  # noqa: BLE001 - a template that raises has no usable format
        return None
    return out if isinstance(out, str) else None


def _end_of_turn(render: Render, tools: list[dict[str, Any]] | None) -> str:
    """The text a template writes after a plain assistant reply (stripped), e.g. ``<|im_end|>``."""
    out = _safe(render, [*_USER, {"role": "assistant", "content": _REPLY_MARK}], tools)
    if not out or _REPLY_MARK not in out:
        return ""
    return out[out.rindex(_REPLY_MARK) + len(_REPLY_MARK) :].strip()


def _tail_cut(text: str, end: str) -> int:
    """Where the longest tail of ``end`` that starts a tag (``<``) first occurs in ``text``, or
    -1: Command R7B ends a plain reply ``<|END_RESPONSE|><|END_OF_TURN_TOKEN|>`` and a call turn
    ``<|END_ACTION|><|END_OF_TURN_TOKEN|>``, so the turn ends where the shared tail starts; Command
    R+ writes its closing instructions after a call turn that has no end-of-turn token at all.
    A tail starts where one tag ends and the next begins (``>`` then ``<``): Kimi K3 closes an
    element with ``<|close|>NAME<|sep|>``, whose ``<|sep|>`` is the element's own."""
    return next((pos for k in _tag_breaks(end) if (pos := text.find(end[k:])) != -1), -1)


def _head_cut(text: str, end: str) -> int:
    """Where the first tag of ``end`` (up to a ``>`` followed by ``<``) first occurs in ``text``,
    or -1: HyperCLOVA X ends a plain reply ``<|im_end|><|endofturn|>`` and a call message
    ``<|im_end|><|stop|>`` (the model card's two ends of generation: the turn ends, or pauses
    for the call's result), so a call turn ends where the shared head does."""
    return next((text.find(end[:k]) for k in _tag_breaks(end)), -1)


def _tag_breaks(end: str) -> Iterator[int]:
    """Where ``end`` passes from one tag to the next (a ``>`` followed by ``<``), first to last."""
    return (k for k in range(1, len(end)) if end[k] == "<" and end[k - 1] == ">")


def _after_user_turn(prompt: str, full: str) -> int | None:
    """Where the generation prompt's text after the user's words ends in ``full``, when ``full``
    has that text right after the same words, whitespace aside; None otherwise. vLLM's
    parallel-call Mistral template writes its system prompt into the last message only when it
    is the user's, so a conversation with the call after it differs from the prompt before the
    user's words; its DeepSeek V3.1 / V3.2 templates write the assistant's tag with other
    whitespace around it in the prompt than in a past turn."""
    words = _USER[0]["content"]
    i, j = prompt.rfind(words), full.rfind(words)
    if i == -1 or j == -1:
        return None
    tail = "".join(prompt[i + len(words) :].split())
    k, t = j + len(words), 0
    while t < len(tail):
        while k < len(full) and full[k].isspace():
            k += 1
        if k == len(full) or full[k] != tail[t]:
            return None
        k, t = k + 1, t + 1
    return k


def _common_prefix_len(a: str, b: str) -> int:
    """``len(os.path.commonprefix([a, b]))`` by bisection on slices (C speed, not per character)."""
    lo, hi = 0, min(len(a), len(b))
    if a[:hi] == b[:hi]:
        return hi
    while lo < hi:  # a[:lo] == b[:lo] and a[:hi + 1] != b[:hi + 1]
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def probe_texts(render: Render, eos_token: str = "") -> list[tuple[str, str]]:
    """(prompt, reply) pairs of the probe call; see :func:`call_texts`."""
    return call_texts(render, PROBE_TOOLS, PROBE_CALL[0], PROBE_ARGS, eos_token)


def call_texts(
    render: Render, tools: list[dict[str, Any]], name: str, arguments: dict[str, Any], eos_token: str = ""
) -> list[tuple[str, str]]:
    """(prompt, reply) pairs: the generation prompt after one user message, and the text the
    template writes for an assistant turn calling ``name(**arguments)``, cut at the end of the
    turn; one pair per assistant-turn variant that renders (content "" / None, arguments as an
    object / a JSON string)."""
    return list(_iter_call_texts(render, tools, name, arguments, eos_token))


def _iter_call_texts(
    render: Render, tools: list[dict[str, Any]], name: str, arguments: dict[str, Any], eos_token: str = ""
) -> Iterator[tuple[str, str]]:
    """:func:`call_texts` rendered lazily, so detection stops at the first variant a family reads."""
    prompt = _safe(render, list(_USER), tools)
    if prompt is None:
        return
    learned = _end_of_turn(render, tools)
    ends = [e for e in (eos_token, learned) if e]
    seen: set[str] = set()
    # the call turn last, then followed by its result: a template that renders a last assistant
    # message as a prefill (its content only: vLLM's Nemotron templates) renders the call then
    variants = [(c, a, f) for f in ((), _RESULT) for c in ("", None) for a in (False, True)]
    for content, as_string, follow in variants:
        full = _safe(render, [*_USER, _assistant_call(name, arguments, content, as_string), *follow], tools)
        if full is None:
            continue
        n = _common_prefix_len(prompt, full)
        if n < len(prompt) and (after := _after_user_turn(prompt, full)) is not None:
            n = after  # the prompt differs before the user's words and agrees after them
        elif n < len(prompt):  # the generation prompt is not a prefix: cut at a token boundary
            while n > 0 and full[n - 1] not in _BOUNDARY:
                n -= 1
            while n > 0 and full[n - 1] in "<|" and full[:n].endswith(("<", "<|")):
                n -= 1  # never cut inside a tag's opening ("<|tool_call>" after "<|channel>")
        new = full[n:]
        cuts = [i for i in (new.find(e) for e in ends) if i != -1]
        if learned:  # a call turn that ends differently: cut at the end's tail, else its head
            shared = _tail_cut(new, learned)
            shared = shared if shared != -1 else _head_cut(new, learned)
            if shared != -1:
                cuts.append(shared)
        if cuts and not new[: min(cuts)].strip():
            # The (empty) message ends before the call: GigaChat 3 writes the call as a message
            # of its own role after the assistant's; the turn ends after that one.
            after = min(cuts) + 1
            cuts = [i for i in (new.find(e, after) for e in ends) if i != -1] or [len(new)]
        if cuts:
            new = new[: min(cuts)]
        if new.strip() and new not in seen:
            seen.add(new)
            yield prompt, new


def _may_read_a_call(fmt: Format, text: str) -> bool:
    """False when ``fmt`` cannot read a call out of ``text``: the shared machine opens a call
    only at one of the family's openers, so a family using it whose openers are all absent is
    skipped without parsing (a family with its own stream or parse is always tried)."""
    if fmt.stream_class is not None or type(fmt).parse is not Format.parse or not fmt.openers:
        return True
    return any(op in text for op in fmt.openers)


def _reads_probe(fmt, prompt: str, text: str) -> bool:
    try:
        reply = fmt.parse(text, PROBE_TOOLS, in_reasoning=fmt.opens_in_reasoning(prompt))
    except Exception:  # noqa: BLE001 - parsers never raise; be safe anyway
        return False
    if len(reply.tool_calls) != 1 or reply.content.strip() or reply.reasoning.strip():
        return False
    call = reply.tool_calls[0]
    return (
        call.name == PROBE_CALL[0]
        and call.arguments == PROBE_ARGS
        and all(type(call.arguments[k]) is type(v) for k, v in PROBE_ARGS.items())
    )


# Families that write another family's wire (its reader parses their calls): they differ in
# their templates, reasoning and names, not in their calls.
WIRE_OF: dict[str, str] = {
    "phi4-mini": "firefunction",
    "jamba": "apriel",
    "hunyuan-a13b": "apriel",
    "ernie45": "hermes",
    # MiroThinker reads Hermes' calls besides its MCP blocks (Qwen3's, which it is built on)
    "mirothinker": "hermes",
    # GLM-4's call is a Functionary v3.2 segment (the name line, the JSON object) without the
    # separator; GLM-4's templates render no call and are known by MARKED_TEMPLATES
    "glm4": "functionary-v3.2",
}


def same_wire(a: str, b: str) -> bool:
    """Whether families ``a`` and ``b`` write the same calls (one reuses the other's reader)."""
    return WIRE_OF.get(a, a) == WIRE_OF.get(b, b)


# The families of WIRE_OF tried before the family whose wire they write: each is detected only
# from a template that holds every one of these strings, so that family's templates stay its.
# (Phi-4-mini comes after FireFunction, whose module it imports: its template renders no call
# and is known by MARKED_TEMPLATES.)
TEMPLATE_MARKERS: dict[str, tuple[str, ...]] = {
    "jamba": ("<|bom|>", "<|eom|>"),
    "hunyuan-a13b": ("<|extra_4|>", "<|extra_0|>"),
    # ERNIE's opening token: its -PT templates end a turn with <|end_of_sentence|>, Baidu's VL line
    # (PaddleOCR-VL, ERNIE-4.5-VL) with </s>, so the opener alone marks the template as ERNIE's
    "ernie45": ("<|begin_of_sentence|>",),
    # MiroThinker's system prompt teaches its MCP block: a template holding it is MiroThinker's
    "mirothinker": ("<use_mcp_tool>", "<server_name>", "<tool_name>"),
}

# Published templates that take the tools but never render a call turn (a past call is written
# as the turn's plain content, so no call can be probed): known by what they hold, tried when no
# rendered call was read. Granite 3.x's system prompt names its ``<|tool_call|>`` marker;
# Phi-4-mini's takes the tools as a string on the system message, between ``<|tool|>`` tags;
# LongCat's model card (no template of its own was found) has the system prompt name its tag.
# A template that renders the family's calls is detected by its probe call before any of these.
MARKED_TEMPLATES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("granite", ("<|tool_call|>", "<|start_of_role|>available_tools")),
    ("phi4-mini", ("<|tool|>", "<|/tool|>", "['tools']")),
    ("longcat", ("<longcat_tool_call>", "</longcat_tool_call>")),
    # FunctionGemma's (LiteRT-LM's) takes arguments already written in its notation: no probe renders
    ("functiongemma", ("<start_function_call>call:", "<end_function_call>")),
    # Step-3 (no published template found): the section marker and StepTML's invoke tag
    ("step3", ("<｜tool_calls_begin｜>", "<steptml:invoke")),
    # MiroThinker: a template that keeps a past call in the assistant's content, as MiroFlow's
    # agent does, renders no probe call; its system prompt's MCP block names it
    ("mirothinker", ("<use_mcp_tool>", "<server_name>", "<tool_name>")),
    # vLLM's pythonic templates (Gemma 3, Llama 3.2, ToolACE) teach the call list in their system
    # prompt's own words, and render a past call's arguments unquoted or without their commas
    ("pythonic", ("[func_name1(params_name1=params_value1",)),
    # GLM-4 (9B-chat, 0414, Z1) renders a past call from a message's ``metadata``, never from
    # ``tool_calls``; its system prompt lists each tool with this instruction after it
    ("glm4", ("在调用上述函数时，请使用 Json 格式表示调用的参数",)),
)


# Templates whose system prompt teaches, in its own words, a wire other than the one they render a
# past call in: the model writes what the prompt teaches, so the teaching names the family before
# any probe is read. vLLM's Phi-4-mini template teaches ``functools[...]`` (FireFunction's words,
# with Phi's ``<|end|>``) and renders a past call as bare JSON, which Hermes' reader would take.
TAUGHT_TEMPLATES: tuple[tuple[str, tuple[str, ...]], ...] = (("phi4-mini", ("functools[", "<|end|>")),)


def _marked(name: str, source: str | None) -> bool:
    """Whether detection may name ``name`` for a template whose source is ``source``."""
    marks = TEMPLATE_MARKERS.get(name)
    return not marks or (source is not None and all(m in source for m in marks))


def detect(render: Render, eos_token: str = "", *, source: str | None = None) -> str | None:
    """The family whose parser reads the template's probe call back, or None.

    ``render(messages, tools) -> str`` renders through the template, with the generation prompt
    when the last message is not the assistant's (as the engine renders prompts). ``source``:
    the template's text, where known (the families of :data:`TEMPLATE_MARKERS` need it, and a
    template of :data:`MARKED_TEMPLATES` is known by it when no probe call was read).
    """
    if source is not None:
        for name, marks in TAUGHT_TEMPLATES:
            if name in FORMATS and all(m in source for m in marks):
                return name
    for prompt, text in _iter_call_texts(render, PROBE_TOOLS, PROBE_CALL[0], PROBE_ARGS, eos_token or ""):
        for name, fmt in FORMATS.items():
            if _marked(name, source) and _may_read_a_call(fmt, text) and _reads_probe(fmt, prompt, text):
                return name
    if source is not None:
        for name, marks in MARKED_TEMPLATES:
            if name in FORMATS and all(m in source for m in marks):
                return name
    return None


def _template_renderer(source: str, bos_token: str, eos_token: str) -> Render:
    from app.engine.templates import functions_variables, render_template, template_tools_mode

    mode = template_tools_mode(source)
    functions = mode == "functions"  # FireFunction v2 takes ``functions``

    def render(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> str:
        last = messages[-1].get("role") if messages else None
        extra = functions_variables(tools or [], "2026-01-01") if functions else {"tools": tools}
        if mode in ("system_message", "system_list") and tools:
            # Phi-4-mini: a JSON string on the system message; GLM-4-9B-chat: the list there
            first = dict(messages[0]) if messages and messages[0].get("role") == "system" else None
            system = first or {"role": "system", "content": ""}
            system["tools"] = json.dumps(tools, ensure_ascii=False) if mode == "system_message" else tools
            messages = [system, *messages[1 if first else 0 :]]
        return render_template(
            source,
            messages,
            add_generation_prompt=last != "assistant",
            bos_token=bos_token,
            eos_token=eos_token,
            **extra,
        )

    return render


def detect_template(
    source: str, *, bos_token: str = "", eos_token: str = "", tool_use: str | None = None
) -> str | None:
    """Detect the family of a chat template's source (rendered in the sandbox). ``tool_use``: the
    GGUF's ``tokenizer.chat_template.tool_use``, tried first when given. Never raises."""
    for src in (tool_use, source):
        if not isinstance(src, str) or not src.strip():
            continue
        found = detect(_template_renderer(src, bos_token or "", eos_token or ""), eos_token or "", source=src)
        if found:
            return found
    return None
