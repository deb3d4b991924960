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

from app.engine.formats.base import (
    THINK,
    Format,
    IncompleteCall,
    JsonStateScanner,
    ParsedCall,
    Stream,
    register,
)
from app.engine.formats.jsonscan import loads_repaired
from app.engine.formats.sections import json_text
from app.json_schema import tool_schemas

__all__ = ["Glm4Format"]

NEXT = "<|assistant|>"  # the role header of the turn's next message
_HEAD = re.compile(r"([\w.\-]+)[ \t]*\n[ \t]*")  # (the name: as _WORD reads it)
_NAME_CHARS = re.compile(r"[\w.\-]")
_WORD = re.compile(r"[\w.\-]*")
_MAX_NAME = 256
_CALLSTART = "callstart"


class _MessageScanner(JsonStateScanner):
    """A message's head: ``NAME``, spaces, a line break, then one JSON object (ends right after
    it, or at the first character that does not fit). A header with no name (``\\n`` right after
    ``<|assistant|>``) ends at its line break."""

    def __init__(self) -> None:
        super().__init__("name")
        self.name = 0

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i, n = 0, len(buf)
        while i < n:
            c = buf[i]
            self.ops += 1
            if self.state == "name":
                if c == "\n":
                    if not self.name:
                        return i + 1, True  # a text message's header
                    self.state = "pre"
                    i += 1
                    continue
                if self.name and c in " \t":
                    self.state = "gap"
                    i += 1
                    continue
                if not _NAME_CHARS.match(c) or self.name >= _MAX_NAME:
                    return i, True  # not a name line: the region is text
                self.name += 1
                i += 1
                continue
            if self.state in ("gap", "pre"):
                if c in " \t":
                    i += 1
                    continue
                if self.state == "gap" and c == "\n":
                    self.state = "pre"
                    i += 1
                    continue
                if self.state == "gap" or c != "{":
                    return i, True
                self.state = "json"
            j = self.feed_json(self.json, buf, i)
            return (n, False) if j == -1 else (j, True)
        return n, False


class _ReplyStream(Stream):
    """The shared machine, whose reply (the answer after a reasoning block, the text after a
    call) opens a message: a call where it opens with a declared tool's name (the whitespace
    before it the region's opener), text at the first character that rules every name out."""

    _header = True  # the reply's first decision is still to come (its header's line break)

    def _after_reasoning(self) -> str:
        return _CALLSTART

    def _close_region(self, *, at_end: bool, truncated: bool) -> None:
        calls = self._ncalls
        super()._close_region(at_end=at_end, truncated=truncated)
        if self._ncalls > calls and self._mode == "text":
            self._mode = _CALLSTART  # another message may follow at once

    def _step_postcall(self, final: bool, truncated: bool) -> bool:
        stepped = super()._step_postcall(final, truncated)
        if self._mode == "text":
            self._mode = _CALLSTART  # (an opening tag after the calls decided): a message may follow
        return stepped

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


class Glm4Format(Format):
    name = "glm4"
    label = "GLM-4 name line and JSON (Zhipu GLM-4-9B-chat, GLM-4-0414, GLM-Z1)"
    openers = (NEXT,)
    start_only = True
    anywhere = (NEXT,)
    reasoning = THINK
    stream_class = _ReplyStream
    # the headers of the result and of the next user turn: Zhipu's stop tokens, which GLM-4's GGUFs
    # do not all mark as ends of generation (the model would write the tool's result itself)
    turn_stops = ("<|observation|>", "<|user|>")

    def region_scanner(self, opener: str) -> _MessageScanner:
        return _MessageScanner()

    def _head(self, body: str, tools: list[dict[str, Any]] | None) -> re.Match[str] | None:
        """The name line a region opens with, where it names a declared tool."""
        m = _HEAD.match(body)
        return None if m is None or m.group(1) not in tool_schemas(tools) else m

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        call = self._call(body, at_end=at_end, truncated=truncated, tools=tools)
        if call is not None:
            return [ParsedCall(call[0], call[1], opener + body)], ""
        # a message's header is structure, never content: what follows it is text
        return ([], body.removeprefix("\n")) if opener == NEXT else None

    def _call(
        self, body: str, *, at_end: bool, truncated: bool, tools: list[dict[str, Any]] | None
    ) -> tuple[str, dict[str, Any]] | None:
        m = self._head(body, tools)
        if m is None:
            return None
        raw_args = body[m.end() :]
        if not raw_args.rstrip().endswith("}") or (at_end and truncated):
            return None
        ok, args = loads_repaired(raw_args.strip())
        return (m.group(1), args) if ok and isinstance(args, dict) else None

    def cut_call(self, opener, body, tools):
        """A region cut by the token limit is an incomplete call once its name line (that may
        open a call) is written and its arguments have begun; before that it is text."""
        m = self._head(body, tools)
        if m is None or not body[m.end() :].startswith("{"):
            return None
        return IncompleteCall(opener + body, m.group(1), "truncated")

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
