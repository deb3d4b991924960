"""GLM-4's calls (GLM-4-9B-chat, GLM-4-0414, GLM-Z1-0414): the tool's name on the reply's first
line, its JSON arguments on the next, and no marker at all::

    get_weather
    {"city": "Paris"}

GLM-4's templates render a call turn as ``<|assistant|>{name}\\n{arguments}`` (the 0414 ones with
a space after the name) and a plain answer as ``<|assistant|>\\n{text}``. With no marker, the
tool's name is the marker: a reply whose first line (whitespace before it aside: Zhipu's own API
server strips the reply) is the name of one of the request's tools, followed by a JSON object on
the next line, is a call, as Zhipu's server and other readers of the wire take it; anything else
is text (``json`` then an object is an answer). So a plain answer streams from its first
character that cannot begin a tool's name, and a reply is never read as a call to a tool the
request did not declare.

A turn of several calls is several messages: each further one opens with ``<|assistant|>``, the
role header the template writes before every assistant message (ChatGLM's own reader splits the
reply there), or follows the last call at once (the header left out, as an engine that drops
special tokens shows it). ``<|assistant|>`` then a line break opens a message of text: that
header is structure, the text after it content; so is the line break that opens the reply (the
template writes it after ``<|assistant|>``: the answer's text starts after it, as the template
renders it back). GLM-Z1 reasons in ``<think>`` first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from app.engine.formats.base import THINK, Format, ParsedCall, Stream, register
from app.engine.formats.name_line import NameLineFormat
from app.engine.formats.sections import json_text
from app.json_schema import tool_schemas

__all__ = ["Glm4Format"]

NEXT = "<|assistant|>"  # the role header of the turn's next message
_WORD = re.compile(r"[\w.\-]*")  # a name, as the name line reads it
_CALLSTART = "callstart"


class _ReplyStream(Stream):
    """The shared machine, whose reply (the answer after a reasoning block, the text after a
    call) opens a message: a call where it opens with a declared tool's name (the whitespace
    before it the region's opener), text at the first character that rules every name out."""

    _header = True  # the reply's first decision is still to come (its header's line break)

    def _after_reasoning(self) -> str:
        return _CALLSTART

    def _after_calls(self) -> str:
        return _CALLSTART  # another message may follow at once

    def _step_callstart(self, final: bool, truncated: bool) -> bool:
        i = self._leading_ws()
        rest = self._buf[i:]
        word = "" if rest.startswith(NEXT) else _WORD.match(rest).group()  # type: ignore[union-attr]
        self.ops += len(word) + 1
        if not final and not rest.startswith(NEXT):
            if word == rest or (len(rest) < len(NEXT) and NEXT.startswith(rest)):
                if any(n.startswith(word) for n in self._schemas):
                    return False  # whitespace so far, or the start of a tool's name or of the header
        self._ws = 0
        if self._header:
            self._header = False
            if self._buf.startswith("\n"):  # ``<|assistant|>\n``: the header's line break
                self._consume(1)
                i -= 1
        if rest.startswith(NEXT):
            self._text(self._consume(i))
            self._open_region(NEXT)
        elif word in self._schemas:
            self._open_region(self._buf[:i])  # the whitespace is the opener: the name follows it
        else:
            self._mode = "text"  # no tool's name: an answer, streamed at once
        return True


class Glm4Format(NameLineFormat):
    name = "glm4"
    label = "GLM-4 name line and JSON (Zhipu GLM-4-9B-chat, GLM-4-0414, GLM-Z1)"
    openers = (NEXT,)
    name_spaces = True  # GLM-4-0414 writes ``{{ meta }} \n``
    cut_needs_args = True  # a cut name line alone may be the start of an answer
    start_only = True
    anywhere = (NEXT,)
    reasoning = THINK
    stream_class = _ReplyStream
    # the headers of the result and of the next user turn: Zhipu's stop tokens, which GLM-4's GGUFs
    # do not all mark as ends of generation (the model would write the tool's result itself)
    turn_stops = ("<|observation|>", "<|user|>")

    def names_tool(self, name: str, tools: list[dict[str, Any]] | None) -> bool:
        return name in tool_schemas(tools)  # only a declared tool's name opens a call

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        call = self.read_call(body, at_end=at_end, truncated=truncated, tools=tools)
        if call is not None:
            return [ParsedCall(call[0], call[1], opener + body)], ""
        # a message's header is structure, never content: what follows it is text
        return ([], body.removeprefix("\n")) if opener == NEXT else None

    def call_name(self, raw: str) -> str | None:
        """The tool a call being written (or cut) goes to: its first word (the shared hints look
        for markup this wire does not have)."""
        return _WORD.match(raw.removeprefix(NEXT).lstrip()).group() or None  # type: ignore[union-attr]

    def call_begun(self, answer: str) -> bool:
        """Whether ``answer`` may have begun a call: any word written, since a call opens with a
        tool's name and this method is not told the tools (so an answer that has begun is left
        free of a grammar compiled again from its start; the parser still reads a call)."""
        return isinstance(answer, str) and (super().call_begun(answer) or bool(answer.strip()))

    def grammar_wire(self, ctx):
        return _grammar

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return f"{name}\n{json_text(dict(arguments))}"


def _grammar(ctx: Any, fmt: Format, tools: list[dict[str, Any]], forced: str | None, parallel: bool) -> str:
    """The calls as the reply's opening messages: ``NAME\\n{args}``, further ones each after
    ``<|assistant|>``; in ``auto`` the reply may be an answer instead (it opens with a line
    break, as the templates render one)."""
    from app.engine.grammar.lark import calls_block, compose
    from app.engine.grammar.wires import json_args_schema, tool_name

    def call(tool: Mapping[str, Any]) -> str:
        return f"{ctx.lit(tool_name(tool) + chr(10))} {ctx.json(json_args_schema(tool))}"

    block = calls_block(ctx, tools, forced, parallel, call, sep=NEXT)
    # a plain answer opens with a line break, as GLM-4's templates render one: after a tool's
    # name the call is held. After a reasoning block (whose grammar ends with the whitespace after
    # its closing tag) the answer is left free: the parser still reads a call written there.
    free_after_reasoning = ctx.reasoning or ctx.in_reasoning
    answer = None if free_after_reasoning else ctx.rule("/(?s:[ \\t]*\\n.*)/", prefix="LEAD")
    return compose(ctx, fmt, block, opener=NEXT, parallel=parallel, start_only=True, answer=answer)


register(Glm4Format())
