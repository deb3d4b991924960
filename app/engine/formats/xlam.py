"""Salesforce xLAM calls: the reply is one bare JSON list ``[{"name": NAME, "arguments": {...}}, ...]``.

The list opens the reply (after whitespace), bare or in a markdown fence (```` ```json ````); each
element holds ``name`` and ``arguments`` (an object, or a JSON string holding one) and nothing
else. Text after the list is content. A reply that opens with a list of anything else, or with a
fence around anything but such a list, is text.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from app.engine.formats.base import RegionScanner, register
from app.engine.formats.json_list import parse_json_list
from app.engine.formats.open_json import FENCE, FencedListScanner, OpenListFormat, OpenValueScanner
from app.engine.formats.sections import json_text

__all__ = ["XlamFormat"]

OPEN = "["


class XlamFormat(OpenListFormat):
    """The list opens the reply: its bracket, or a markdown fence, is the opener."""

    start_only = True

    def region_scanner(self, opener: str) -> RegionScanner:
        if opener == FENCE:
            return FencedListScanner()
        scanner = OpenValueScanner("[")
        scanner.json.feed("[")  # the opener was the list's bracket
        scanner.state = "json"
        return scanner

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        read = self.read_element
        if opener == OPEN:
            return parse_json_list("[" + body, "", at_end=at_end, truncated=truncated, read_element=read)
        lang = 0
        while lang < len(body) and body[lang].isalpha():
            lang += 1
        if body[:lang] not in ("", "json", "JSON"):
            return None
        # The fence and its language word are structure, like the list's brackets.
        return parse_json_list(body[lang:], FENCE, at_end=at_end, truncated=truncated, read_element=read)

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import json_array

        return partial(json_array, open="", opener=OPEN, item=self.call_schema)

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return json_text([self.item(name, arguments)])

    def cut_call(self, opener, body, tools):
        if opener == OPEN and not body.lstrip().startswith("{"):
            return None  # a cut "[" that never opened an object: text, as "[1]" would be
        return super().cut_call(opener, body, tools)


register(XlamFormat("xlam", "xLAM JSON list (Salesforce xLAM-2, Llama-xLAM, xLAM-1)", (OPEN, FENCE)))
