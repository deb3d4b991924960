"""Muse Glimmer addressed messages with ATEM calls (Meta Muse Glimmer 30B).

A reply is a run of messages addressed to a recipient. The generation prompt ends with
``<|start|>assistant``, so the first message's header starts the reply; later ones start with
``<|start|>assistant``. A header is ``[<|start|>assistant][ to=RECIPIENT]<|message|>``; the body
ends at ``<|eom|>`` (more messages follow) or ``<|eot|>`` (the end of the turn), or where the next
message's ``<|start|>`` begins::

     to=self<|message|>REASONING<|eom|>
    <|start|>assistant to=get_weather<|message|><atem:function_calls>
    <atem:invoke name="get_weather">
    <atem:parameter name="city">Paris</atem:parameter>
    </atem:invoke>
    </atem:function_calls><|eom|>
    <|start|>assistant to=user<|message|>ANSWER<|eot|>

Recipient ``self`` is reasoning; ``user``, or no recipient (a bare ``<|message|>``), is content;
any other recipient is a call whose body is one ATEM block: ``<atem:function_calls>`` holding
one ``<atem:invoke name="NAME">`` of ``<atem:parameter name="K">V</atem:parameter>`` parameters
(MiniMax's invoke wire with ``atem:`` tags, whitespace between the tags), whitespace around it.
A value is raw text exactly as written, typed by the tool's schema (a string as written, anything
else as JSON). The invoke names the tool: the recipient is the same name, or the namespace before
its last dot (``to=weather`` for ``weather.get``). A doubled bare name (``get_weather.get_weather``,
what the template's ``"get_weather.*"`` recipient list teaches) is the declared ``get_weather``.

Markers end a body wherever they stand (they are special tokens an argument cannot hold). A call
message whose body does not read as one ATEM block, or whose invoke names another tool than the
recipient, is content, header and end marker included, byte for byte. A call at the end of a
reply that stopped normally is complete (the end-of-turn token is not in the text); one that the
token limit cut is an incomplete call, never run. Text where a header should stand that is no
header is content up to the next end marker; whitespace before a header is structure. The example
call is written with its ``<|start|>assistant`` (every message but the reply's first has it; the
first is read with or without it), so it opens a message after any text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import partial
from typing import Any

from app.engine.formats.base import register
from app.engine.formats.blocks import CALL, CONTENT, REASON, WAIT, BlockFormat, Header
from app.engine.formats.xml_params import InvokeFormat, params_text

__all__ = ["MUSE_GLIMMER", "MuseGlimmerFormat"]

START = "<|start|>"
MESSAGE = "<|message|>"
EOM = "<|eom|>"
EOT = "<|eot|>"
ROLE = "assistant"
OPEN = "<atem:function_calls>"
CLOSE = "</atem:function_calls>"
PREFIX = "atem:"
REASONING_HEADER = " to=self" + MESSAGE

_RECIPIENT = r"[A-Za-z0-9_][A-Za-z0-9_.\-]*"
_HEADER = re.compile(r"(?:<\|start\|>[ \t]*" + ROLE + r")?[ \t]*(?:to=(" + _RECIPIENT + r")[ \t]*)?")
# What a header begins with (after whitespace): the role, a recipient, or the message marker.
_HEADER_STARTS = (START, "to=", MESSAGE)
_MAX_HEADER = 256


def _collapse(name: str) -> str:
    """``x.x`` as ``x``: the doubled bare name the template's recipient list teaches."""
    head, dot, tail = name.partition(".")
    return head if dot and head == tail else name


class MuseGlimmerFormat(BlockFormat, InvokeFormat):
    name = "muse-glimmer"
    label = "Muse Glimmer messages + ATEM (Meta Muse Glimmer 30B)"
    # A call message's recipient: what a reply that opens with a call writes first.
    openers = (" to=",)
    # The reply opens in a message header, and so does every call: no free text before a call.
    start_only = True
    reasoning = None  # messages, not tags (BlockStream reads them)
    prefix = PREFIX
    close = CLOSE
    param_after = "\n"
    body_ends = (EOM, EOT, START)
    kept_ends = (EOM, EOT)
    max_header = _MAX_HEADER + len(MESSAGE)
    thinking_markers = (REASONING_HEADER.lstrip(), EOM)
    thinking_close = EOM + START + ROLE + " to=user" + MESSAGE

    def __init__(self) -> None:
        super().__init__()
        self.openers = (" to=",)  # InvokeFormat's section is ATEM's, not the opener's
        self.section = (OPEN + "\n", CLOSE)

    def opens_in_reasoning(self, prompt: str) -> bool:
        if not isinstance(prompt, str):
            return False
        return prompt.rstrip().endswith(REASONING_HEADER.lstrip())

    def header(self, buf: str, final: bool, truncated: bool) -> Header:
        window = buf[: self.max_header]
        if not window.startswith(_HEADER_STARTS):
            if not final and any(h.startswith(window) for h in _HEADER_STARTS):
                return WAIT
            return Header("text", 0)
        pos = window.find(MESSAGE)
        ends = (window.find(EOM), window.find(EOT), window.find(START, 1))
        bad = min((p for p in ends if p != -1), default=-1)
        if pos != -1 and (bad == -1 or pos < bad) and pos <= _MAX_HEADER:
            m = _HEADER.fullmatch(window, 0, pos)
            end = pos + len(MESSAGE)
            if m is None:
                return Header("text", end)  # a malformed header: its text is content
            recipient = m.group(1)
            body = REASON if recipient == "self" else CONTENT if recipient in (None, "user") else CALL
            return Header("open", end, body, recipient)
        if final and truncated and bad == -1 and len(window) == len(buf) <= _MAX_HEADER:
            # The token limit cut the reply inside a header: an incomplete item (a call's, when
            # its recipient was being written).
            to = re.search(r"to=(" + _RECIPIENT + ")", window)
            name = to.group(1) if to and to.group(1) not in ("self", "user") else None
            return Header("cut", len(buf), CALL, name)
        if bad != -1 or len(window) > _MAX_HEADER or final:
            # Not a header after all: content up to where a next message may begin.
            return Header("text", len(START) if window.startswith(START) else 0)
        return WAIT

    def read_message_call(
        self, name: str | None, body: str, schemas: dict[str, dict[str, Any]]
    ) -> tuple[str, dict[str, Any]] | None:
        text = body.strip()
        if name is None or not text.startswith(OPEN) or not text.endswith(CLOSE):
            return None
        calls = self.read_calls(text[len(OPEN) : len(text) - len(CLOSE)])
        if calls is None or len(calls) != 1:
            return None
        call = calls[0]
        written = call.name
        if not (_collapse(written) == _collapse(name) or written.startswith(name + ".")):
            return None  # the invoke names another tool than the message's recipient
        if written not in schemas and _collapse(written) in schemas:
            written = _collapse(written)
        return written, call.arguments

    def call_name(self, raw: str) -> str | None:
        m = re.search(r'<atem:invoke name="([^"<>\s]+)"', raw) or re.search(r"to=(" + _RECIPIENT + ")", raw)
        return m.group(1) if m else None

    def head(self, name: str) -> str:
        return f'{self.invoke[0]}{name}">{self.param_after}'

    def grammar_wire(self, ctx: Any):
        return partial(_grammar)

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        params = params_text(
            arguments, param=self.param_open, key_end='">', param_end=self.param_close, sep=self.param_after
        )
        # With its role, as every message but the reply's first is written (the first may be too):
        # the example stands after any text and still opens a message.
        return (
            f"{START}{ROLE} to={name}{MESSAGE}{OPEN}\n{self.head(name)}{params}{self.invoke[1]}\n{CLOSE}{EOM}"
        )


def _grammar(
    ctx: Any, fmt: MuseGlimmerFormat, tools: list[dict[str, Any]], forced: str | None, parallel: bool
) -> str:
    """Each call a message ``to=NAME<|message|>`` + one ATEM invoke of typed parameters + ``<|eom|>``,
    later ones opened by ``<|start|>assistant``; after a reasoning message where the prompt opened
    one or the request allows one. ``auto``: the calls, or an answer in a bare ``<|message|>``."""
    from app.engine.errors import ConstraintError
    from app.engine.grammar.lark import ParamSyntax, calls_block, ordered_params, pick_tools, tool_name

    for t in pick_tools(tools, forced):
        if not re.fullmatch(_RECIPIENT, tool_name(t)) or tool_name(t) in ("self", "user"):
            raise ConstraintError(f"the muse-glimmer wire cannot express the tool name {tool_name(t)!r}")

    def call(tool: Mapping[str, Any]) -> str:
        name = tool_name(tool)
        body = ordered_params(
            ctx,
            tool,
            lambda k, s, w: fmt.param(ctx, k, s, w),
            ParamSyntax(sep=None),
            check_name=fmt.key_ok,
            wire=ctx.family,
        )
        head = ctx.lit(f" to={name}{MESSAGE}{OPEN}\n{fmt.head(name)}")
        return f"{head} {body} {ctx.lit(fmt.invoke[1] + chr(10) + CLOSE)}"

    block = calls_block(ctx, tools, forced, parallel, call, sep=EOM + START + ROLE)
    block = f"{block} {ctx.lit(EOM, final=True)}"
    role = ctx.lit(START + ROLE)
    # The first message may repeat the prompt's role (as the example call writes it); a message
    # after a reasoning message writes it.
    lead = f"({role})?"
    if ctx.in_reasoning:
        lead = f"{ctx.text_until(EOM)} {role}"
    elif ctx.reasoning:
        lead = f"({ctx.lit(REASONING_HEADER)} {ctx.text_until(EOM)} {role} | ({role})?)"
    if ctx.auto:
        plain = ctx.json(ctx.response_schema) if ctx.response_schema is not None else "/(?s:.*)/"
        return ctx.grammar(f"{lead} ({block} | {ctx.lit(MESSAGE)} {plain})")
    return ctx.grammar(f"{lead} {block}")


MUSE_GLIMMER = register(MuseGlimmerFormat())
