"""Inkling content blocks (Thinking Machines Lab's Inkling, Inkling Small).

A reply is a run of blocks. The generation prompt ends with ``<|message_model|>``, so the first
block's header starts the reply; later blocks start with ``<|message_model|>``. A header is an
optional name, then one content-kind marker; the body ends at ``<|end_message|>`` or
``<|content_model_end_sampling|>`` (which ends generation)::

    <|content_thinking|>REASONING<|end_message|>
    <|message_model|>get_weather<|content_invoke_tool_json|>{"name":"get_weather","args":{"city":"Paris"}}<|end_message|>
    <|message_model|><|content_text|>ANSWER<|end_message|><|content_model_end_sampling|>

``<|content_thinking|>`` is reasoning; ``<|content_text|>`` is content, and so are
``<|content_invoke_tool_text|>`` and ``<|content_tool_error|>`` (the servers show them as text);
``<|content_invoke_tool_json|>`` is a call whose body is exactly one JSON object
``{"name": NAME, "args": {...}}`` (the key is ``args``; whitespace around it allowed). The name
before the kind marker is the tool's name the template echoes: when written it must be the
call's name. A header's name is metadata (never content); text where a header should stand that
is no name (a reply without blocks) is content. As the servers read it (vLLM's and llama.cpp's
Inkling parsers), a body also ends where a ``<|message_model|>`` or another kind marker begins
the next block; a stray end marker, and whitespace, between blocks is structure.

Every marker is a special token, so a body ends at the first marker: a call body that does not
read (not JSON, another key, a name that disagrees with the header's) is content, header and end
marker included, byte for byte. A call at the end of a reply that stopped normally is complete
(the end-of-generation token is not in the text); one that the token limit cut is an incomplete
call, never run. Tools not declared are read as calls (the dispatcher answers them).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from functools import partial
from typing import Any

from app.calls import WIRE_NAME
from app.engine.formats.base import register
from app.engine.formats.blocks import CALL, CONTENT, REASON, WAIT, BlockFormat, Header
from app.engine.formats.jsonscan import loads_lenient
from app.engine.formats.sections import first_marker

__all__ = ["INKLING", "InklingFormat"]

MESSAGE_MODEL = "<|message_model|>"
THINKING = "<|content_thinking|>"
TEXT = "<|content_text|>"
INVOKE_JSON = "<|content_invoke_tool_json|>"
INVOKE_TEXT = "<|content_invoke_tool_text|>"
TOOL_ERROR = "<|content_tool_error|>"
END_MESSAGE = "<|end_message|>"
END_SAMPLING = "<|content_model_end_sampling|>"

KINDS = {THINKING: REASON, TEXT: CONTENT, INVOKE_TEXT: CONTENT, TOOL_ERROR: CONTENT, INVOKE_JSON: CALL}
ENDS = (END_MESSAGE, END_SAMPLING)
MARKERS = (MESSAGE_MODEL, *KINDS, *ENDS)

_NAME = re.compile(WIRE_NAME)
# What may stand before a kind marker in a header: a name, whitespace around it.
_NAME_WS = re.compile(r"[ \t\r\n]*(?:" + WIRE_NAME + r"[ \t\r\n]*)?")
_MAX_NAME = 128


class InklingFormat(BlockFormat):
    name = "inkling"
    label = "Inkling content blocks (Thinking Machines Lab Inkling, Inkling Small)"
    # The call's kind marker: what a call message holds (its name, when written, comes before).
    openers = (INVOKE_JSON,)
    # The reply opens in a block header, and so does every call: no free text before a call.
    start_only = True
    body_ends = MARKERS
    kept_ends = ENDS
    max_header = _MAX_NAME + len(INVOKE_JSON) + 8
    thinking_markers = (THINKING, END_MESSAGE)
    thinking_close = END_MESSAGE + MESSAGE_MODEL + TEXT

    def opens_in_reasoning(self, prompt: str) -> bool:
        if not isinstance(prompt, str):
            return False
        return prompt.rstrip().endswith(THINKING)

    def header(self, buf: str, final: bool, truncated: bool) -> Header:
        for marker in (MESSAGE_MODEL, *ENDS):
            if buf.startswith(marker):
                return Header("skip", len(marker))  # a block's start, or a stray end: structure
        for marker, body in KINDS.items():
            if buf.startswith(marker):
                return Header("open", len(marker), body)
        # Look no further than a name and its kind marker can reach.
        window = min(len(buf), self.max_header)
        pos, m, safe = first_marker(buf, MARKERS, 0, final, None if window == len(buf) else window)
        if pos == -1:
            # No marker yet: wait while the text may still be a name before one.
            if not final and window == len(buf) and _NAME_WS.fullmatch(buf, 0, safe):
                return WAIT
            return Header("text", 0)
        name = buf[:pos].strip()
        if m in KINDS and len(name) <= _MAX_NAME and _NAME.fullmatch(name):
            return Header("open", pos + len(m), KINDS[m], name)
        # Text that is no name: content, up to the marker (which the next header reads).
        return Header("text", 0)

    def read_message_call(
        self, name: str | None, body: str, schemas: dict[str, dict[str, Any]]
    ) -> tuple[str, dict[str, Any]] | None:
        text = body.strip()
        if not text.startswith("{"):
            return None
        try:
            obj = loads_lenient(text)
        except (ValueError, RecursionError):
            return None
        if not isinstance(obj, dict) or set(obj) != {"name", "args"}:
            return None
        call_name, args = obj["name"], obj["args"]
        if not isinstance(call_name, str) or not _NAME.fullmatch(call_name) or not isinstance(args, dict):
            return None
        if name is not None and name != call_name:
            return None  # the header names another tool than the call
        return call_name, args

    def call_name(self, raw: str) -> str | None:
        head = raw.split(INVOKE_JSON, 1)
        if len(head) == 2 and _NAME.fullmatch(head[0].strip()):
            return head[0].strip()
        return super().call_name(raw)

    def grammar_wire(self, ctx: Any):
        return partial(_grammar)

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return f"{name}{INVOKE_JSON}{_call_json(name, arguments)}{END_MESSAGE}"


_COMPACT = {"item_separator": ",", "key_separator": ":"}


def _call_json(name: str, arguments: dict[str, Any]) -> str:
    """The call's JSON as the template writes it: compact, ``name`` then ``args``."""
    return json.dumps({"name": name, "args": dict(arguments)}, ensure_ascii=False, separators=(",", ":"))


def _grammar(
    ctx: Any, fmt: InklingFormat, tools: list[dict[str, Any]], forced: str | None, parallel: bool
) -> str:
    """Calls as call blocks ``[NAME]<|content_invoke_tool_json|>{"name": .., "args": {..}}<|end_message|>``,
    one after another (each later one opened by ``<|message_model|>``), then the end of sampling;
    after a reasoning block where the prompt opened one or the request allows one. ``auto`` holds
    the whole reply (the call's marker is a special token): thinking and text blocks as the model
    likes, then the calls or a last text block (the reply, or the response format's JSON)."""
    from app.engine.grammar.lark import calls_block, json_call, tool_name

    def call(tool: Mapping[str, Any]) -> str:
        name = ctx.lit(tool_name(tool))
        # Compact, as the template writes the call's JSON.
        body = ctx.json({**json_call(tool, args_key="args"), "x-guidance": _COMPACT})
        return f"({name})? {ctx.lit(INVOKE_JSON)} {body} {ctx.lit(END_MESSAGE)}"

    block = calls_block(ctx, tools, forced, parallel, call, sep=MESSAGE_MODEL)
    block = f"{block} {ctx.lit(END_SAMPLING, final=True)}"
    lead = ""
    if ctx.in_reasoning:
        lead = f"{ctx.text_until(END_MESSAGE)} {ctx.lit(MESSAGE_MODEL)}"
    elif ctx.reasoning:
        lead = f"({ctx.lit(THINKING)} {ctx.text_until(END_MESSAGE)} {ctx.lit(MESSAGE_MODEL)})?"
    if ctx.auto:
        plain = ctx.json(ctx.response_schema) if ctx.response_schema is not None else "/(?s:.*)/"
        done = f"{ctx.text_until(END_MESSAGE)} {ctx.lit(MESSAGE_MODEL)}"
        blocks = f"({ctx.lit(THINKING)} {done} | {ctx.lit(TEXT)} {done})*"
        if not ctx.in_reasoning:
            lead = ""  # the blocks hold the reasoning a reply opens with
        return ctx.grammar(f"{lead} {blocks} ({block} | {ctx.lit(TEXT)} {plain})".strip())
    return ctx.grammar(f"{lead} {block}".strip())


INKLING = register(InklingFormat())
