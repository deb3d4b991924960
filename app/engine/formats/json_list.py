"""A JSON list of calls between two tags: the wire of Nemotron Nano v2, Apriel and Apertus.

``OPEN [ {call}, {call}, ... ] CLOSE``. :class:`JsonListScanner` finds the region's end
JSON-aware (a ``CLOSE`` inside a string does not end it); :func:`parse_json_list` reads the list
strictly, one element at a time through the family's element reader. A reply cut inside the
list keeps its complete elements (the rest is text); a list that is complete but not followed by
``CLOSE`` is a call only when the reply ended normally right after it (the closing tag is
implied, as a runtime that stops on it would leave it out).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from app.engine.formats.base import ParsedCall, RegionScanner, find_marker
from app.engine.formats.jsonscan import JsonScanner, loads_repaired
from app.engine.formats.sections import skip_ws

__all__ = ["ElementReader", "JsonListScanner", "list_elements", "parse_json_list"]

#: Reads one list element (a decoded JSON value): ``(name, arguments, id)`` or None (not a call).
ElementReader = Callable[[Any], "tuple[str, dict[str, Any], str | None] | None"]


class JsonListScanner(RegionScanner):
    """Region ``[ws] [json list] [ws] CLOSE``; on anything else, up to the next ``CLOSE``."""

    def __init__(self, close: str):
        self.close = close
        self.state = "pre"
        self.json = JsonScanner()
        self.ops = 0

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i, n = 0, len(buf)
        close = self.close
        while i < n:
            st = self.state
            if st in ("pre", "post"):
                c = buf[i]
                self.ops += 1
                if c.isspace():
                    i += 1
                    continue
                if st == "pre" and c == "[":
                    self.state = "json"
                    continue
                if st == "post":
                    if buf.startswith(close, i):
                        return i + len(close), True
                    if not final and close.startswith(buf[i:]):
                        return i, False
                self.state = "seek"
                continue
            if st == "json":
                before = self.json.ops
                j = self.json.feed(buf, i)
                self.ops += self.json.ops - before
                if j == -1:
                    return n, False
                i = j
                self.state = "post"
                continue
            pos, _m, safe = find_marker(buf, (close,), final, start=i)
            self.ops += (pos + len(close) - i) if pos != -1 else n - i
            if pos != -1:
                return pos + len(close), True
            return safe, False
        return n, False


def list_elements(text: str, start: int) -> tuple[list[tuple[int, int]], int]:
    """Spans of the top-level object elements of the JSON list opening at ``text[start]``.

    Returns ``(spans, end)``: ``end`` is the index after the list's ``]``, or -1 when the list is
    not closed (cut) or holds something other than objects separated by commas."""
    spans: list[tuple[int, int]] = []
    i, n = start + 1, len(text)
    while True:
        i = skip_ws(text, i)
        if spans:
            if i < n and text[i] == ",":
                i = skip_ws(text, i + 1)
            elif i < n and text[i] == "]":
                return spans, i + 1
            else:
                return spans, -1
        elif i < n and text[i] == "]":
            return spans, i + 1
        if i >= n or text[i] != "{":
            return spans, -1
        sc = JsonScanner()
        j = sc.feed(text, i)
        if j == -1:
            return spans, -1
        spans.append((i, j))
        i = j


def _read(text: str, read_element: ElementReader) -> tuple[str, dict[str, Any], str | None] | None:
    ok, obj = loads_repaired(text)
    if not ok:
        return None
    try:
        return read_element(obj)
    except (TypeError, ValueError, AttributeError):
        return None


def parse_json_list(
    body: str, close: str, *, at_end: bool, truncated: bool, read_element: ElementReader
) -> tuple[list[ParsedCall], str] | None:
    """Strictly read ``[ws] [ {..}, ... ] [ws] CLOSE`` (``body`` is the region after the opener).

    Each element must be a JSON object the reader accepts, or the whole region is text. Each
    call's ``raw`` is its element's text. Cut (``truncated``, no ``CLOSE``): the complete elements
    are calls and the cut element is the rest of the region (the stream reports it as an incomplete
    call); a reply cut after the list, in its closing tag, has only complete calls."""
    start = skip_ws(body, 0)
    if start >= len(body) or body[start] != "[":
        return None
    spans, end = list_elements(body, start)
    rest = body[end:] if end != -1 else ""
    if end != -1 and rest.strip() == close:
        cut = False  # the whole list and its closing tag
    elif end != -1 and at_end and not truncated and not rest.strip():
        cut = False  # the reply ended normally right after the list: the closing tag is implied
    elif end != -1 and at_end and close.startswith(rest.strip()):
        cut = False  # cut in the closing tag: every call is complete
    elif at_end and truncated and spans:
        cut = True
    else:
        return None
    if not spans:
        return None
    calls = []
    for s, e in spans:
        got = _read(body[s:e], read_element)
        if got is None:
            return None
        name, args, cid = got
        calls.append(ParsedCall(name, args, body[s:e], id=cid))
    leftover = body[spans[-1][1] :] if cut else ""
    return calls, leftover
