"""Hermes JSON calls (Qwen2.5, Qwen3, QwQ, Hermes 2 Pro / 3, Granite 4, MiMo, Bielik, Reka).

``<tool_call>\\n{"name": NAME, "arguments": {...}}\\n</tool_call>``, any number per reply, after
an optional ``<think>...</think>`` block. A markdown fence around the JSON and a trailing comma
are repaired; ``arguments`` written as a JSON string holding an object is read as that object.
A missing ``</tool_call>`` is accepted only when the reply ended normally right after the JSON.

One deviation is read: a JSON *list* of calls inside one tag,
``<tool_call>\\n[{"name": A, "arguments": {...}}, {"name": B, "arguments": {...}}]\\n</tool_call>``,
as TNG's DeepSeek-R1T2-Chimera writes it (vLLM's ``tng`` parser reads it). Each element must be
an object with exactly ``name`` and ``arguments`` (as in the single form, a JSON string holding
an object is read as that object); an empty list, an element that is no such object, or text
after the list makes the whole region text. The list is one region: a reply the token limit cut
inside it is one incomplete call (its complete elements are not run either), as a single call
cut before its ``</tool_call>`` is. The calls' raw texts partition the region (the first holds
the opening tag and ``[``, the last the ``]`` and the closing tag), so together they are the
region as written. ERNIE 4.5 (``ernie45``), which writes Hermes' wire, keeps the single form
only: Baidu's servers read one object per tag.
"""

from __future__ import annotations

from app.engine.formats.base import MarkerRegion, ParsedCall, RegionScanner, register
from app.engine.formats.json_list import element_reader, list_elements
from app.engine.formats.jsonscan import loads_repaired, strip_fence
from app.engine.formats.open_json import JsonTagFormat
from app.engine.formats.sections import JsonTagScanner, closed_body

__all__ = ["HERMES", "HermesFormat"]

OPEN = "<tool_call>"
CLOSE = "</tool_call>"

# An element of a TNG list: exactly a name and its arguments (both required).
_ELEMENT = element_reader("name", "arguments", args_required=True)


class HermesFormat(JsonTagFormat):
    """Hermes' tags holding one call object, or a list of call objects (TNG R1T2 Chimera)."""

    def region_scanner(self, opener: str) -> RegionScanner:
        if opener in self.structure:
            return MarkerRegion()
        # JSON-aware for a list too, so a closing tag inside one of its strings does not end it.
        return JsonTagScanner(self.close, fences=self.fences, also="[")

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        got = super().parse_region(opener, body, at_end=at_end, truncated=truncated, tools=tools)
        if got is not None or opener in self.structure:
            return got
        inner = closed_body(body, self.close, last="", at_end=at_end, truncated=truncated)
        return None if inner is None else _read_list(opener, body, inner)


def _read_list(opener: str, body: str, inner: str) -> tuple[list[ParsedCall], str] | None:
    """The calls of a region whose JSON (``inner``: the body without its closing tag) is a list of
    call objects, each call's raw text its share of the region; None when it is not one."""
    text = strip_fence(inner.strip()).strip()
    start = body.find("[")  # only whitespace and a fence's opening stand before the list
    if not text.startswith("[") or start == -1:
        return None
    spans, end = list_elements(body, start)
    if end == -1 or not spans or body[start:end] != text:
        return None  # not a list of objects, an empty one, or text around it
    calls: list[ParsedCall] = []
    for k, (s, e) in enumerate(spans):
        ok, obj = loads_repaired(body[s:e])
        got = _ELEMENT(obj) if ok else None
        if got is None:
            return None
        name, args, _id = got
        lo = 0 if k == 0 else spans[k - 1][1]
        hi = len(body) if k == len(spans) - 1 else e
        calls.append(ParsedCall(name, args, (opener if k == 0 else "") + body[lo:hi]))
    return calls, ""


HERMES = register(
    HermesFormat("hermes", "Hermes JSON (Qwen2.5, Qwen3, QwQ, Hermes, Granite 4)", (OPEN,), close=CLOSE)
)
