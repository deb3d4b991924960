"""ServiceNow Apriel 1.5 / 1.6 calls: ``<tool_calls>[{"name": NAME, "arguments": {...}}, ...]</tool_calls>``.

Apriel reasons in plain text before ``[BEGIN FINAL RESPONSE]``: Apriel 1.6's generation prompt
ends with ``Here are my reasoning steps:`` (the reply starts inside the reasoning), Apriel 1.5's
with the assistant header (its reply may start with that phrase, or reason without it; the
closing marker makes the text before it reasoning). Apriel 1.5 ends its final response with
``[END FINAL RESPONSE]``, which is consumed (never content). An element may carry the model's ``id``
(the 1.6 template writes it for past calls), which is kept. ``arguments`` written as a JSON
string holding an object is read as that object.
"""

from __future__ import annotations

import json
from typing import Any

from app.engine.formats.base import Format, RegionScanner, register
from app.engine.formats.json_list import JsonListScanner, parse_json_list
from app.engine.formats.jsonscan import name_arguments

__all__ = ["AprielFormat"]

OPEN = "<tool_calls>"
CLOSE = "</tool_calls>"
REASONING_START = "Here are my reasoning steps:"
FINAL = "[BEGIN FINAL RESPONSE]"
END_FINAL = "[END FINAL RESPONSE]"  # Apriel 1.5 closes its final response with it: structure


class _Marker(RegionScanner):
    """A structure marker: the region is the marker alone."""

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        return 0, True


def _element(obj: Any) -> tuple[str, dict[str, Any], str | None] | None:
    got = name_arguments(obj, extra_keys=("id",))
    if got is None or "arguments" not in obj:
        return None
    cid = obj.get("id")
    if cid is not None and not (isinstance(cid, str) and cid and cid == cid.strip()):
        return None
    return got[0], got[1], cid


class AprielFormat(Format):
    name = "apriel"
    label = "Apriel JSON list (ServiceNow Apriel 1.5, 1.6)"
    detail = '<tool_calls>[{"name": ..., "arguments": {...}}]</tool_calls>, reasoning before [BEGIN FINAL RESPONSE]'
    openers = (OPEN, END_FINAL)
    start_only = False
    reasoning = (REASONING_START, FINAL)

    def region_scanner(self, opener: str) -> RegionScanner:
        return JsonListScanner(CLOSE) if opener == OPEN else _Marker()

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if opener == END_FINAL:
            return [], ""  # the end of the final response: consumed, never content
        return parse_json_list(body, CLOSE, at_end=at_end, truncated=truncated, read_element=_element)

    def constraint_grammar(self, tools, *, forced, parallel, ctx):
        from app.engine.constraints.wires import json_array

        return json_array(ctx, self, tools, forced, parallel, open=OPEN, close=CLOSE)

    def example_call(self, name: str, arguments: dict) -> str:
        call = {"name": name, "arguments": dict(arguments)}
        return OPEN + json.dumps([call], ensure_ascii=False) + CLOSE


register(AprielFormat())
