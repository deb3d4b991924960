"""Command R7B calls (Cohere Command R7B, Command A and the Cohere2 MoE models).

``<|START_ACTION|>[{"tool_call_id": "0", "tool_name": NAME, "parameters": {...}}, ...]<|END_ACTION|>``
after an optional ``<|START_THINKING|>...<|END_THINKING|>`` plan (the generation prompt of some
templates opens it); text for the user stands in ``<|START_RESPONSE|>...<|END_RESPONSE|>``,
whose markers are structure, not content. The action list must hold only such objects
(``parameters`` may be a JSON string holding an object); ``<|END_ACTION|>`` is required unless the
reply ended normally right after the list. An empty list is no call (text). The list is read by
the shared JSON-list reader (:mod:`app.engine.formats.json_list`): each call's raw is its element,
and a list cut by the token limit keeps its complete elements.

Grounded text carries citations, as the templates ask: ``<co>SPAN</co: ID:[I,J],ID2:[K]>`` (the
span is supported by results I and J of the call whose ``tool_call_id`` is ID, and result K of
ID2). A citation is shown as the span followed by its sources, one bracket per call:
``SPAN[ID:I,J][ID2:K]`` (so the sources stay in the message, never the markup). A ``<co>`` that
does not open such a citation (another ``<co>`` or a special token ``<|...`` comes first, or its
closing tag is anything else) is text as written; a citation cut by the token limit shows its
span. A citation inside the plan (reasoning) stays as written there.
"""

from __future__ import annotations

import re

from app.engine.formats.base import RegionScanner, register
from app.engine.formats.json_list import JsonListFormat

__all__ = ["CommandRFormat", "render_citation"]

OPEN = "<|START_ACTION|>"
CLOSE = "<|END_ACTION|>"
RESPONSE_OPEN = "<|START_RESPONSE|>"
RESPONSE_CLOSE = "<|END_RESPONSE|>"
THINK = ("<|START_THINKING|>", "<|END_THINKING|>")
CO_OPEN = "<co>"
CO_CLOSE = "</co"  # the closing tag's start: ``</co: SOURCES>``
_SOURCE = r"[A-Za-z0-9_\-]+:\[[0-9]+(?:,[0-9]+)*\]"  # ID:[I,J]
_CO_TAG = re.compile(r"</co: (" + _SOURCE + r"(?:," + _SOURCE + r")*)>")
_GROUP = re.compile(r"([A-Za-z0-9_\-]+):\[([0-9,]+)\]")
_TAG_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-:[], ")
_MAX_TAG = 256  # a closing tag longer than this is not one (bounds the wait for its end)
_STOPS = (CO_OPEN, "<|")  # what ends a span that was not closed: a new citation, a special token
_MARKS = (CO_CLOSE, *_STOPS)


def render_citation(span: str, sources: str) -> str:
    """A citation as shown: the span, then one bracket per cited call (``[ID:I,J]``)."""
    return span + "".join(f"[{m.group(1)}:{m.group(2)}]" for m in _GROUP.finditer(sources))


class _CitationScanner(RegionScanner):
    """After ``<co>``: the span up to its closing tag ``</co: SOURCES>`` (the region ends after
    it), or up to what shows it is no citation (another ``<co>``, a ``<|`` special token, a
    closing tag of another shape: the region ends there and reads as text)."""

    def __init__(self) -> None:
        self.ops = 0

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        n = len(buf)
        cut = final and self.cut  # the token limit cut the reply here: the citation may have gone on
        cands = [(p, m) for m in (CO_CLOSE, *_STOPS) if (p := buf.find(m)) != -1]
        if not cands:
            self.ops += n
            if final:
                return n, not cut  # a reply that ended leaves the span open: text
            keep = max((k for m in _MARKS for k in range(1, len(m)) if buf.endswith(m[:k])), default=0)
            return n - keep, False  # the span so far; what may begin a marker is looked at again
        pos, m = min(cands)
        self.ops += pos + 1
        if m != CO_CLOSE:
            return pos, True  # no citation: the region ends before the marker
        j = pos + len(CO_CLOSE)
        while j < n and buf[j] in _TAG_CHARS and j - pos < _MAX_TAG:
            j += 1
        self.ops += j - pos
        if j == n and j - pos < _MAX_TAG and (not final or cut):
            return (n, False) if cut else (pos, False)  # the closing tag may go on: wait at its start
        if j < n and buf[j] == ">" and _CO_TAG.fullmatch(buf, pos, j + 1):
            return j + 1, True
        return pos + len(CO_CLOSE), True  # a closing tag of another shape: text


class CommandRFormat(JsonListFormat):
    """The action list, with the citations (``<co>``) of its answer."""

    non_marker_openers = (RESPONSE_OPEN, RESPONSE_CLOSE, CO_OPEN)  # structure and citations, not calls
    extra_keys = ("tool_call_id",)
    layout = ("[\n    ", "\n]")
    name_key, args_key = "tool_name", "parameters"
    cut_rest = False  # the cut rest of a list stays text

    def region_scanner(self, opener: str) -> RegionScanner:
        return _CitationScanner() if opener == CO_OPEN else super().region_scanner(opener)

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if opener != CO_OPEN:
            return super().parse_region(opener, body, at_end=at_end, truncated=truncated, tools=tools)
        end = body.find(CO_CLOSE)
        if at_end and truncated:
            span = body if end == -1 else body[:end]
            return ([], span) if span else None  # cut: the span as written (the tag was cut)
        m = _CO_TAG.fullmatch(body, end) if end > 0 else None
        if m is None or at_end:
            return None  # no citation: text as written
        return [], render_citation(body[:end], m.group(1))

    def list_item(self, name, arguments):
        return {"tool_call_id": "0", "tool_name": name, "parameters": dict(arguments)}


register(
    CommandRFormat(
        "command-r",
        "Command R7B actions (Cohere Command R7B, Command A)",
        (OPEN, RESPONSE_OPEN, RESPONSE_CLOSE, CO_OPEN),
        close=CLOSE,
        reasoning=THINK,
    )
)
