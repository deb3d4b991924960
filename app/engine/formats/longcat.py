"""Meituan LongCat calls (LongCat-Flash-Chat, LongCat-Flash-Thinking):
``<longcat_tool_call>\\n{"name": NAME, "arguments": {...}}\\n</longcat_tool_call>``.

Hermes' wire under LongCat's own tags: any number per reply, after text and an optional
``<think>`` block; ``arguments`` is an object or a JSON string holding one; a markdown fence
around the JSON and a trailing comma are repaired; a missing closing tag is accepted only when the
reply ended normally right after the JSON. No published chat template was found: a template is
known as LongCat's by its rendered call, or by the tag it names (``app.engine.formats.detect``).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from app.engine.formats.base import THINK, Format, RegionScanner, one_call, register
from app.engine.formats.jsonscan import read_name_arguments
from app.engine.formats.sections import JsonTagScanner, closed_body, json_text

__all__ = ["LongCatFormat"]

OPEN = "<longcat_tool_call>"
CLOSE = "</longcat_tool_call>"


class LongCatFormat(Format):
    name = "longcat"
    label = "LongCat JSON (Meituan LongCat-Flash Chat, Thinking)"
    openers = (OPEN,)
    reasoning = THINK

    def region_scanner(self, opener: str) -> RegionScanner:
        return JsonTagScanner(CLOSE)

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        inner = closed_body(body, CLOSE, last="", at_end=at_end, truncated=truncated)
        return one_call(opener, body, None if inner is None else read_name_arguments(inner))

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import json_tagged

        return partial(json_tagged, open=OPEN, close=CLOSE, lead="\n", trail="\n", sep="\n")

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return OPEN + "\n" + json_text({"name": name, "arguments": dict(arguments)}) + "\n" + CLOSE


register(LongCatFormat())
