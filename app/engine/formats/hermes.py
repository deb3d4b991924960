"""Hermes JSON calls (Qwen2.5, Qwen3, QwQ, Hermes 2 Pro / 3, Granite 4, MiMo, Bielik, Reka).

``<tool_call>\\n{"name": NAME, "arguments": {...}}\\n</tool_call>``, any number per reply, after
an optional ``<think>...</think>`` block. A markdown fence around the JSON and a trailing comma
are repaired; ``arguments`` written as a JSON string holding an object is read as that object.
A missing ``</tool_call>`` is accepted only when the reply ended normally right after the JSON.
"""

from __future__ import annotations

from typing import Any
from functools import partial

from app.engine.formats.base import THINK, Format, ParsedCall, RegionScanner, register
from app.engine.formats.jsonscan import read_name_arguments
from app.engine.formats.sections import JsonTagScanner, json_text

__all__ = ["HermesFormat"]

OPEN = "<tool_call>"
CLOSE = "</tool_call>"


class HermesFormat(Format):
    name = "hermes"
    label = "Hermes JSON (Qwen2.5, Qwen3, QwQ, Hermes, Granite 4)"
    openers = (OPEN,)
    reasoning = THINK

    def region_scanner(self, opener: str) -> RegionScanner:
        return JsonTagScanner(CLOSE)

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if body.endswith(CLOSE):
            inner = body[: -len(CLOSE)]
        elif at_end and not truncated:
            inner = body  # the reply ended right after the JSON: the closing tag is implied
        else:
            return None
        got = read_name_arguments(inner)
        if got is None:
            return None
        name, args = got
        return [ParsedCall(name, args, opener + body)], ""

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import json_tagged

        return partial(json_tagged, open=OPEN, close=CLOSE, lead="\n", trail="\n", sep="\n")

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return "<tool_call>\n" + json_text({"name": name, "arguments": dict(arguments)}) + "\n</tool_call>"


register(HermesFormat())
