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

from functools import partial
from typing import Any

from app.engine.formats.base import Format, ParsedCall, RegionScanner, register
from app.engine.formats.jsonscan import LENIENT_DECODER
from app.engine.formats.open_json import WholeObjectScanner, llama_call, llama_cut
from app.engine.formats.sections import json_text, skip_ws

__all__ = ["Llama4Format"]

PYTHON_START = "<|python_start|>"
PYTHON_END = "<|python_end|>"


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
            return _calls(opener, "{" + body, tools, marked=False)
        return _calls(opener, body, tools, marked=True)

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import json_objects

        # between the markers: a held call opens with a special token, never with JSON's "{"
        return partial(json_objects, section=(PYTHON_START, PYTHON_END), args_key="parameters")

    def cut_call(self, opener, body, tools):
        return llama_cut(super().cut_call(opener, body, tools), tools, tagged=opener == PYTHON_START)

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        # between the markers: a bare object of Llama 3's shape would be told apart by nothing
        return PYTHON_START + json_text({"name": name, "parameters": dict(arguments)}) + PYTHON_END


def _calls(
    opener: str, text: str, tools: list[dict[str, Any]] | None, *, marked: bool
) -> tuple[list[ParsedCall], str] | None:
    """The calls of a region, the whole rest of the reply: ``text`` is the region after the
    opener (bare: from the first object's ``{``). Bare, the objects back to back (whitespace
    between), each naming an offered tool. Marked, sections ``OBJECTS <|python_end|>`` each
    opened by ``<|python_start|>`` (the region's own first), the last one's closing marker
    optional, or the markers left empty and the objects after them. Each call's raw text is its
    share of the region (the markers before it included); None when the region is anything else."""
    read: list[tuple[int, tuple[str, dict[str, Any]]]] = []  # (where each object ends, its call)
    i, end = skip_ws(text, 0), 0
    while True:
        if marked and not read and text.startswith(PYTHON_END, i):  # the markers empty: the objects follow
            i, marked = skip_ws(text, i + len(PYTHON_END)), False
        n = len(read)
        while i < len(text) and text[i] == "{":
            try:
                obj, stop = LENIENT_DECODER.raw_decode(text, i)
            except ValueError:
                return None
            got = llama_call(obj, tools, tagged=opener == PYTHON_START)
            if got is None:
                return None
            read.append((stop, got))
            end, i = stop, skip_ws(text, stop)
        if len(read) == n:
            return None  # a section without a call
        if not (marked and text.startswith(PYTHON_END, i)):
            break
        end = i + len(PYTHON_END)
        i = skip_ws(text, end)
        if not text.startswith(PYTHON_START, i):
            break
        i = skip_ws(text, i + len(PYTHON_START))
    if i != len(text):
        return None
    head = "" if opener == "{" else opener  # the "{" opener is the first object's own brace
    calls, lo = [], 0
    for k, (stop, got) in enumerate(read):
        hi = end if k == len(read) - 1 else stop
        calls.append(ParsedCall(*got, (head if k == 0 else "") + text[lo:hi]))
        lo = hi
    return calls, text[end:]


register(Llama4Format())
