"""NVIDIA Nemotron Nano v2 calls: ``<TOOLCALL>[{"name": NAME, "arguments": {...}}, ...]</TOOLCALL>``.

Any number of calls in one list, after an optional ``<think>...</think>`` block (the template's
generation prompt opens ``<think>``, so a reply usually starts inside it). ``arguments`` written
as a JSON string holding an object is read as that object. Each element must have exactly the
keys ``name`` and ``arguments``; anything else makes the region text.
"""

from __future__ import annotations

import json
from typing import Any

from app.engine.formats.base import Format, RegionScanner, register
from app.engine.formats.json_list import JsonListScanner, parse_json_list
from app.engine.formats.jsonscan import name_arguments

__all__ = ["NemotronV2Format"]

OPEN = "<TOOLCALL>"
CLOSE = "</TOOLCALL>"


def _element(obj: Any) -> tuple[str, dict[str, Any], None] | None:
    got = name_arguments(obj)
    if got is None or "arguments" not in obj:
        return None
    return got[0], got[1], None


class NemotronV2Format(Format):
    name = "nemotron-v2"
    label = "Nemotron v2 JSON list (NVIDIA Nemotron Nano v2)"
    detail = '<TOOLCALL>[{"name": ..., "arguments": {...}}]</TOOLCALL>'
    openers = (OPEN,)
    start_only = False
    reasoning = ("<think>", "</think>")

    def region_scanner(self, opener: str) -> RegionScanner:
        return JsonListScanner(CLOSE)

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        return parse_json_list(body, CLOSE, at_end=at_end, truncated=truncated, read_element=_element)

    def constraint_grammar(self, tools, *, forced, parallel, ctx):
        from app.engine.constraints.wires import json_array

        return json_array(ctx, self, tools, forced, parallel, open=OPEN, close=CLOSE)

    def example_call(self, name: str, arguments: dict) -> str:
        call = {"name": name, "arguments": dict(arguments)}
        return OPEN + json.dumps([call], ensure_ascii=False) + CLOSE


register(NemotronV2Format())
