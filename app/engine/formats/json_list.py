"""A JSON list of calls between two tags: the wire of Nemotron Nano v2, Apriel and Apertus.

``OPEN [ {call}, {call}, ... ] CLOSE``. :class:`JsonListScanner` finds the region's end
JSON-aware (a ``CLOSE`` inside a string does not end it); :func:`parse_json_list` reads the list
strictly, one element at a time through the family's element reader. A reply cut inside the
list keeps its complete elements (the rest is text); a list that is complete but not followed by
``CLOSE`` is a call only when the reply ended normally right after it (the closing tag is
implied, as a runtime that stops on it would leave it out).

:class:`JsonListFormat` is a family made of such a list (Nemotron Nano v2, Apriel, Apertus,
Command R7B and, with its own scanner and fence, Command R+): it sets its tags, its element
reader (:func:`element_reader` reads ``{NAME_KEY: name, ARGS_KEY: {...}}`` elements), how an
element is written and the markers that stand alone as structure.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from app.engine.formats.base import Format, MarkerRegion, ParsedCall, RegionScanner, name_hint
from app.engine.formats.jsonscan import JsonScanner, loads_repaired, name_arguments
from app.engine.formats.sections import JsonTagScanner, json_text, skip_ws

__all__ = [
    "ElementReader",
    "JsonListFormat",
    "JsonListScanner",
    "element_reader",
    "key_hint",
    "list_elements",
    "parse_json_list",
]

#: Reads one list element (a decoded JSON value): ``(name, arguments, id)`` or None (not a call).
ElementReader = Callable[[Any], "tuple[str, dict[str, Any], str | None] | None"]


class JsonListScanner(JsonTagScanner):
    """Region ``[ws] [json list] [ws] CLOSE``; on anything else, up to the next ``CLOSE``."""

    def __init__(self, close: str):
        super().__init__(close, opening="[", fences=False)


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
    elif end != -1 and at_end and close.startswith(rest.lstrip()):
        cut = False  # cut in the closing tag (nothing after what there is of it): every call is complete
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


def element_reader(
    name_key: str = "name",
    args_key: str = "arguments",
    extra_keys: tuple[str, ...] = (),
    *,
    args_required: bool = False,
    id_key: str | None = None,
) -> ElementReader:
    """A reader of one list element ``{name_key: str, args_key: object}`` for
    :func:`parse_json_list`: no other keys than those, ``extra_keys`` and ``id_key``; ``args_key``
    may hold a JSON string of an object and may be left out unless ``args_required``; the call id,
    where ``id_key`` is given and the element has one, must be a non-empty string without
    surrounding whitespace."""
    extra = (*extra_keys, *((id_key,) if id_key else ()))

    def read(obj: Any) -> tuple[str, dict[str, Any], str | None] | None:
        got = name_arguments(obj, name_key=name_key, args_key=args_key, extra_keys=extra)
        if got is None or (args_required and args_key not in obj):
            return None
        name, args = got
        cid = obj.get(id_key) if id_key else None
        if cid is not None and not (isinstance(cid, str) and cid and cid == cid.strip()):
            return None
        return name, args, cid

    return read


def key_hint(raw: str, key: str) -> str | None:
    """The string value of the first ``"key": "..."`` in a (possibly cut) list's text."""
    m = re.search(rf'"{re.escape(key)}"\s*:\s*"([^"\\<>]+)"', raw)
    return m.group(1) if m else None


class JsonListFormat(Format):
    """A family whose calls are one JSON list: ``LIST_OPEN [ {call}, ... ] LIST_CLOSE``.

    A family is an instance (see :class:`Format`): its ``name`` and ``label``, its ``openers`` (the
    first, ``list_open``, opens the list; the others are markers that stand alone as structure:
    consumed, never content), ``close`` (its closing tag), its ``reasoning`` tags and, where they
    differ from the defaults, ``args_required`` / ``id_key`` (read by :func:`element_reader`). A subclass
    changes the class attributes ``name_key`` / ``args_key`` / ``extra_keys`` (the element's keys,
    or :meth:`read_element` itself), :meth:`list_item` (one element as the model writes it),
    :meth:`call_schema` (its schema in the grammar), ``frame`` (the text around the list in
    example calls and grammars, default the tags), ``layout`` (the text inside the brackets around
    an example's element) and ``list_scanner`` / :meth:`read_list` (a list that is not simply
    between the tags). A list cut by the token limit keeps its complete calls; the cut element is
    an incomplete call, or text where ``cut_rest`` is False.
    """

    close = ""
    frame: tuple[str, str] | None = None
    layout: tuple[str, str] = ("[", "]")
    name_key = "name"
    args_key = "arguments"
    extra_keys: tuple[str, ...] = ()
    args_required = False
    id_key: str | None = None
    cut_rest = True
    # Another key the arguments may be written under (openPangu's and HyperCLOVA X's
    # "parameters"): an element holds exactly one of the two, and then its arguments.
    alt_args_key: str | None = None

    @property
    def list_open(self) -> str:
        return self.openers[0]

    def read_element(self, obj: Any) -> tuple[str, dict[str, Any], str | None] | None:
        """One decoded list element as a call (see :data:`ElementReader`): by default the
        :func:`element_reader` of the family's keys (``alt_args_key`` read for ``args_key``)."""
        alt = self.alt_args_key
        if alt and isinstance(obj, dict) and alt in obj and self.args_key not in obj:
            return self._alt_reader(obj)
        return self._reader(obj)

    @functools.cached_property
    def _alt_reader(self) -> ElementReader:
        # an element that names its arguments under the other key must hold them
        return element_reader(self.name_key, self.alt_args_key or "", self.extra_keys, args_required=True)

    @functools.cached_property
    def _reader(self) -> ElementReader:
        return element_reader(
            self.name_key,
            self.args_key,
            self.extra_keys,
            args_required=self.args_required,
            id_key=self.id_key,
        )

    def list_scanner(self) -> RegionScanner:
        return JsonListScanner(self.close)

    def read_list(self, body: str, *, at_end: bool, truncated: bool) -> tuple[list[ParsedCall], str] | None:
        return parse_json_list(
            body, self.close, at_end=at_end, truncated=truncated, read_element=self.read_element
        )

    def list_item(self, name: str, arguments: Mapping[str, Any]) -> Any:
        return {self.name_key: name, self.args_key: dict(arguments)}

    def call_schema(self, tool: Mapping[str, Any]) -> dict[str, Any]:
        from app.engine.grammar.wires import json_call

        return json_call(tool, name_key=self.name_key, args_key=self.args_key)

    def _frame(self) -> tuple[str, str]:
        return self.frame or (self.list_open, self.close)

    def region_scanner(self, opener: str) -> RegionScanner:
        return self.list_scanner() if opener == self.list_open else MarkerRegion()

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if opener != self.list_open:
            return [], ""  # a structure marker: consumed, never content
        return self.read_list(body, at_end=at_end, truncated=truncated)

    def cut_call(self, opener, body, tools):
        if opener == self.list_open or (not opener and self.cut_rest):
            return super().cut_call(opener, body, tools)
        return None  # a structure marker, or the cut rest of a list where it stays text

    def call_name(self, raw: str) -> str | None:
        return name_hint(raw) if self.name_key == "name" else key_hint(raw, self.name_key)

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import json_array

        open_, close = self._frame()
        return partial(json_array, open=open_, close=close, opener=self.list_open, item=self.call_schema)

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        open_, close = self._frame()
        item = json_text(self.list_item(name, arguments))
        return f"{open_}{self.layout[0]}{item}{self.layout[1]}{close}"
