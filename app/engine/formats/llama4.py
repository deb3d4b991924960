"""Llama 4 JSON calls, as Meta's own template teaches them (the template transformers ships for
Llama 4 Scout and Maverick, and their GGUFs carry): ``{"name": NAME, "parameters": {...}}``.

The template asks for that object and renders a past call as
``<|python_start|>CONTENT<|python_end|>{call}{call}`` (the message's text between the two
markers, then the calls back to back). Llama 4 writes its calls three ways, each the whole rest of
the reply (whitespace around it aside):

* the bare objects, one or several back to back (omlx #1153, vLLM #46863): each must name an
  offered tool, so JSON meant for the user stays text; only at the start of the reply;
* the objects inside the markers, ``<|python_start|>{...}<|python_end|>`` (vLLM #16214), the
  closing marker optional at the reply's end;
* the markers empty, then the objects, as the template renders a call without text:
  ``<|python_start|><|python_end|>{...}``.

After ``<|python_start|>`` (a special token) a call may name any tool, and it may follow text
(``Let me check.<|python_start|>{...}``). The arguments are ``"parameters"`` or ``"arguments"``
(exactly one), with an optional ``"type": "function"``, as Llama 3 writes them. Text between the
markers before the calls, or anything after them, makes the region text. The pythonic calls of
vLLM's own Llama 4 template are the ``pythonic`` family.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from app.engine.formats.base import Format, ParsedCall, RegionScanner, register
from app.engine.formats.open_json import WholeObjectScanner, llama_call
from app.engine.formats.sections import json_text, skip_ws
from app.json_schema import tool_schemas

__all__ = ["Llama4Format"]

PYTHON_START = "<|python_start|>"
PYTHON_END = "<|python_end|>"
_DECODER = json.JSONDecoder(strict=False)  # a raw newline or tab inside a string is read as written


class _RestOfReply(RegionScanner):
    """A region that runs to the end of the reply: its text is read whole once the reply ended."""

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        self.ops += 1
        return len(buf), False


class Llama4Format(Format):
    name = "llama4"
    label = "Llama 4 JSON (Llama 4 Scout, Maverick)"
    openers = (PYTHON_START, "{")
    start_only = True
    anywhere = (PYTHON_START,)  # a special token: it may follow text

    def region_scanner(self, opener: str) -> RegionScanner:
        if opener == PYTHON_START:
            return _RestOfReply()
        return WholeObjectScanner(True, joined=True)

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if not at_end or truncated:
            return None  # more text after the objects; or a cut reply (a cut call, see cut_call)
        if opener == "{":
            return _objects(opener, body, "{", 0, tools, tagged=False)
        i = skip_ws(body, 0)
        if body.startswith(PYTHON_END, i):  # the markers empty, then the calls
            return _objects(opener, body, "", skip_ws(body, i + len(PYTHON_END)), tools, tagged=True)
        return _objects(opener, body, "", i, tools, tagged=True, close=PYTHON_END)

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import json_objects

        # between the markers: a held call opens with a special token, never with JSON's "{"
        return partial(json_objects, section=(PYTHON_START, PYTHON_END), args_key="parameters")

    def cut_call(self, opener, body, tools):
        inc = super().cut_call(opener, body, tools)
        if inc is None:
            return None
        if opener != PYTHON_START and inc.name not in tool_schemas(tools):
            return None  # cut JSON that names no offered tool may be JSON meant for the user
        return inc

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        # between the markers: a bare object of Llama 3's shape would be told apart by nothing
        return PYTHON_START + json_text({"name": name, "parameters": dict(arguments)}) + PYTHON_END


def _objects(
    opener: str,
    body: str,
    lead: str,
    start: int,
    tools: list[dict[str, Any]] | None,
    *,
    tagged: bool,
    close: str = "",
) -> tuple[list[ParsedCall], str] | None:
    """The call objects of ``lead + body`` from ``start`` (an index into ``body``; ``lead`` is the
    opener's own brace where the opener is the first object's ``{``), back to back, whitespace
    between them, then ``close`` where given (optional) and nothing but whitespace: the calls,
    each one's raw text its share of the region (the first with the opener and what stands before
    it), and the whitespace after them; None when the region is anything else."""
    text = lead + body
    i = start
    read: list[tuple[int, tuple[str, dict[str, Any]]]] = []  # (where each object ends, its call)
    while i < len(text) and text[i] == "{":
        try:
            obj, end = _DECODER.raw_decode(text, i)
        except ValueError:
            return None
        got = llama_call(obj, tools, tagged=tagged)
        if got is None:
            return None
        read.append((end, got))
        i = skip_ws(text, end)
    if not read:
        return None
    last = read[-1][0]
    if close and text.startswith(close, i):
        last = i + len(close)
        i = skip_ws(text, last)
    if i != len(text):
        return None
    head = "" if opener == "{" else opener  # the "{" opener is the first object's own brace
    calls, lo = [], 0
    for k, (end, got) in enumerate(read):
        calls.append(
            ParsedCall(*got, (head if k == 0 else "") + text[lo : last if k == len(read) - 1 else end])
        )
        lo = end
    return calls, text[last:]


register(Llama4Format())
