"""Hermes JSON calls (Qwen2.5, Qwen3, QwQ, Hermes 2 Pro / 3, Granite 4, MiMo, Bielik, Reka).

``<tool_call>\\n{"name": NAME, "arguments": {...}}\\n</tool_call>``, any number per reply, after
an optional ``<think>...</think>`` block. A markdown fence around the JSON and a trailing comma
are repaired; ``arguments`` written as a JSON string holding an object is read as that object.
A missing ``</tool_call>`` is accepted only when the reply ended normally right after the JSON.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from app.engine.formats.base import THINK, Format, RegionScanner, one_call, register
from app.engine.formats.jsonscan import read_name_arguments
from app.engine.formats.sections import JsonTagScanner, closed_body, json_text

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
        # A reply that ended normally right after the JSON implies the closing tag.
        inner = closed_body(body, CLOSE, last="", at_end=at_end, truncated=truncated)
        return one_call(opener, body, None if inner is None else read_name_arguments(inner))

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import json_tagged

        return partial(json_tagged, open=OPEN, close=CLOSE, lead="\n", trail="\n", sep="\n")

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return "<tool_call>\n" + json_text({"name": name, "arguments": dict(arguments)}) + "\n</tool_call>"


register(HermesFormat())
