"""A JSON value right after an opener, with no closing marker: the wire of Granite 3.x
(``<|tool_call|>[...]``), Granite 20B function calling (``<function_call> {...}``) and xLAM (a
bare list).

:class:`OpenValueScanner` reads ``[ws] VALUE`` JSON-aware and ends the region right after the
value (or at the first character that cannot start it: the opener is then text).
:class:`OpenListFormat` is a family whose calls are one such JSON list after one of its
``openers``; :class:`OpenObjectFormat` one whose calls are one JSON object after each opener.
A value the reply left open is text (the closing bracket is the only end there is), a value the
token limit cut is an incomplete call (a list keeps its complete calls).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from functools import partial
from typing import Any

from app.engine.formats.base import (
    THINK,
    Format,
    IncompleteCall,
    JsonStateScanner,
    MarkerRegion,
    ParsedCall,
    RegionScanner,
    one_call,
)
from app.engine.formats.json_list import ElementReader, element_reader, parse_json_list
from app.engine.formats.jsonscan import (
    JsonScanner,
    closers_mended,
    loads_repaired,
    name_arguments,
    strip_fence,
)
from app.engine.formats.sections import JsonTagScanner, closed_body, json_text, skip_ws
from app.json_schema import tool_schemas

__all__ = [
    "FENCE",
    "FencedListScanner",
    "JsonTagFormat",
    "MarkedFenceScanner",
    "OpenListFormat",
    "OpenObjectFormat",
    "OpenValueScanner",
    "WholeObjectScanner",
    "fenced_object",
    "llama_call",
    "llama_cut",
    "unfence",
]

FENCE = "```"


class OpenValueScanner(JsonStateScanner):
    """``[ws] VALUE`` where VALUE opens with ``opening``: the region ends right after the value,
    or before the first character that cannot start it."""

    def __init__(self, opening: str) -> None:
        super().__init__()
        self.opening = opening

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i, n = 0, len(buf)
        while i < n:
            if self.state == "pre":
                self.ops += 1
                j = self.value_start(buf, i, self.opening)
                if j is None:
                    return i, True
                i = j
                continue
            j = self.feed_json(self.json, buf, i)
            return (n, False) if j == -1 else (j, True)
        return n, False


class FencedListScanner(JsonStateScanner):
    """After an opening markdown fence: a language word, whitespace, a JSON value (opening with
    ``opening``: a list by default), whitespace and the closing fence; the region ends after the
    closing fence, or at the first character that cannot continue that shape. ``last``: the
    fenced value must end the reply, so whitespace after the closing fence stays in the region
    (which then runs to the end of the reply, or ends at the first other character)."""

    def __init__(self, opening: str = "[", *, last: bool = False) -> None:
        super().__init__("lang")
        self.opening, self.last = opening, last

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i, n = 0, len(buf)
        while i < n:
            st = self.state
            self.ops += 1
            if st == "json":
                j = self.feed_json(self.json, buf, i)
                if j == -1:
                    return n, False
                i, self.state = j, "post"
                continue
            skip = self.fence_skip(buf, i)
            if skip is not None:
                i = skip
                continue
            if st == "pre":
                if buf[i] != self.opening:
                    return i, True
                self.state = "json"
                continue
            if st == "tail":
                return i, True  # text after the closing fence
            rest = buf[i : i + len(FENCE)]  # post: only the closing fence may follow
            if rest == FENCE:
                if not self.last:
                    return i + len(FENCE), True
                i, self.state = i + len(FENCE), "tail"
                continue
            if not final and len(rest) < len(FENCE) and FENCE.startswith(rest):
                return i, False
            return i, True
        return n, False


class MarkedFenceScanner(JsonStateScanner):
    """After a marker (Command R+'s ``Action:``, RWKV's ``**Tool Call:**``): ``[ws] [```lang]
    VALUE [```]``, VALUE a JSON value opening with ``opening``; a fence, once opened, must close.
    The region ends after the value (and its fence), or at the first character that cannot
    continue that shape."""

    def __init__(self, opening: str) -> None:
        super().__init__()
        self.opening = opening
        self.fenced = False

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i, n = 0, len(buf)
        while i < n:
            st = self.state
            self.ops += 1
            if st == "json":
                j = self.feed_json(self.json, buf, i)
                if j == -1:
                    return n, False
                i = j
                if not self.fenced:
                    return i, True
                self.state = "post"
                continue
            c = buf[i]
            skip = self.fence_skip(buf, i)
            if skip is not None:
                i = skip
                continue
            rest = buf[i : i + len(FENCE)]
            if rest == FENCE and (st == "post" or not self.fenced):
                i += len(FENCE)
                if st == "post":
                    return i, True
                self.fenced = True
                self.state = "lang"
                continue
            if len(rest) < len(FENCE) and FENCE.startswith(rest) and (st == "post" or not self.fenced):
                return (n, False) if final else (i, False)  # a fence may be starting (or was cut)
            if st == "pre" and c == self.opening:
                self.state = "json"
                continue
            return i, True  # not the value: the region ends (and reads as text)
        return n, False


def _partial_suffix(text: str, marker: str) -> int:
    """The length of the beginning of ``marker`` that ends ``text`` (0 if none)."""
    for k in range(min(len(marker) - 1, len(text)), 0, -1):
        if text.endswith(marker[:k]):
            return k
    return 0


def unfence(body: str, *, at_end: bool, truncated: bool) -> tuple[str, bool] | None:
    """The value inside a :class:`MarkedFenceScanner` region's ``body`` (``[ws] [```lang] value
    [```]``) and whether the reply was cut inside it; None when a fence is left open before the
    reply went on (accepted at its end)."""
    text = body.strip()
    if not text.startswith(FENCE):
        return text, at_end and truncated
    text = text[len(FENCE) :]
    i = 0
    while i < len(text) and text[i].isalpha():
        i += 1
    text = text[i:].rstrip()
    if text.endswith(FENCE):
        return text[: -len(FENCE)], False
    if not at_end:
        return None
    if truncated:
        return text[: len(text) - _partial_suffix(text, FENCE)], True
    return text, False


class WholeObjectScanner(JsonStateScanner):
    """A JSON object that must be the rest of the reply (Llama 3's bare call, Hermes' stray bare
    call): ``opened``: the opener was the object's ``{``; else whitespace, then the object. The
    region ends at the first character after the object that is not whitespace (more text: not a
    call), or runs to the end of the reply (text that is no object). With ``sep``, objects
    separated by it (Llama 3's ``{...}; {...}``) are one region."""

    def __init__(self, opened: bool, sep: str = "", *, joined: bool = False) -> None:
        super().__init__("json" if opened else "pre")
        self.sep = sep
        self.joined = joined  # another object may follow right after one (``{...}{...}``: Llama 4)
        if opened:
            self.json.feed("{")

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i, n = 0, len(buf)
        while i < n:
            self.ops += 1
            if self.state == "pre":
                if buf[i].isspace():
                    i += 1
                    continue
                self.state = "json" if buf[i] == "{" else "rest"
                continue
            if self.state == "json":
                i = self.json_state(self.json, buf, i, "post")
                if i == -1:
                    return n, False
                continue
            if self.state == "post":
                if buf[i].isspace():
                    i += 1
                    continue
                if self.sep and buf[i] == self.sep:  # another object follows
                    self.json = JsonScanner()
                    self.state = "pre"
                    i += 1
                    continue
                if self.joined and buf[i] == "{":  # another object follows, with no separator
                    self.json = JsonScanner()
                    self.state = "json"
                    continue
                return i, True  # more text after the JSON: not a call
            return n, False  # rest: not JSON, runs to the end
        return n, False


def llama_call(
    obj: Any, tools: list[dict[str, Any]] | None, *, tagged: bool
) -> tuple[str, dict[str, Any]] | None:
    """The (name, arguments) of one Llama call object (Llama 3 and 4): ``{"name": .., "parameters":
    {..}}``, the arguments under ``"parameters"`` (the templates' word) or ``"arguments"`` (exactly
    one of them), with an optional ``"type": "function"``; None for anything else. Untagged (bare
    or fenced JSON, no special token before it) it must name an offered tool: JSON naming none
    may be meant for the user."""
    if not isinstance(obj, dict):
        return None
    if "type" in obj:
        if obj["type"] != "function":
            return None
        obj = {k: v for k, v in obj.items() if k != "type"}
    keys = [k for k in ("parameters", "arguments") if k in obj]
    if len(keys) != 1:
        return None
    got = name_arguments(obj, args_key=keys[0])
    if got is None or (not tagged and got[0] not in tool_schemas(tools)):
        return None
    return got


def llama_cut(
    inc: IncompleteCall | None, tools: list[dict[str, Any]] | None, *, tagged: bool
) -> IncompleteCall | None:
    """A Llama call the token limit cut (Llama 3 and 4): untagged, it must name an offered tool
    (cut JSON naming none may be JSON meant for the user)."""
    if inc is None or tagged or inc.name in tool_schemas(tools):
        return inc
    return None


def fenced_object(body: str) -> str | None:
    """The JSON object of a fenced call's region (the text after the opening fence): its
    language word ``json`` (any case) or none, then the object, then the closing fence; None for
    any other fence."""
    lang = 0
    while lang < len(body) and body[lang].isalpha():
        lang += 1
    inner = body[lang:].rstrip()
    if body[:lang].lower() not in ("", "json") or not inner.endswith(FENCE):
        return None
    text = inner[: -len(FENCE)].strip()
    return text if text.startswith("{") else None


class _OpenJsonFormat(Format):
    """What the two shapes share: the element's keys, the markers that stand alone as structure.

    A family is an instance (see :class:`Format`): its ``name``, ``label``, ``openers`` and
    ``reasoning`` tags; ``structure``: those of its openers consumed as structure wherever they stand (never content:
    e.g. ``<response>``); ``gap``: the text written between the opener and the value in example
    calls and grammars.
    """

    structure: tuple[str, ...] = ()
    name_key = "name"
    args_key = "arguments"
    extra_keys: tuple[str, ...] = ()
    gap = ""

    @functools.cached_property
    def _reader(self) -> ElementReader:
        return element_reader(self.name_key, self.args_key, self.extra_keys)

    def read_element(self, obj: Any) -> tuple[str, dict[str, Any], str | None] | None:
        return self._reader(obj)

    def call_openers(self) -> tuple[str, ...]:
        return tuple(o for o in self.openers if o not in self.structure)

    def item(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        return {self.name_key: name, self.args_key: dict(arguments)}

    def call_schema(self, tool: Mapping[str, Any]) -> dict[str, Any]:
        from app.engine.grammar.wires import json_call

        return json_call(tool, name_key=self.name_key, args_key=self.args_key)


class OpenListFormat(_OpenJsonFormat):
    """``OPENER [ws] [ {call}, ... ]``: one JSON list of calls after an opener, no closing marker."""

    def region_scanner(self, opener: str) -> RegionScanner:
        return MarkerRegion() if opener in self.structure else OpenValueScanner("[")

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if opener in self.structure:
            return [], ""  # consumed, never content
        return parse_json_list(body, "", at_end=at_end, truncated=truncated, read_element=self.read_element)

    def cut_call(self, opener, body, tools):
        return None if opener in self.structure else super().cut_call(opener, body, tools)

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import json_array

        opener = self.call_openers()[0]
        return partial(json_array, open=opener + self.gap, opener=opener, item=self.call_schema)

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return self.call_openers()[0] + self.gap + json_text([self.item(name, arguments)])


def _doubled_braces(text: str) -> str | None:
    """The JSON of a call object written with its outer braces doubled (``{{...}}``), one pair
    taken off; None when it is not so written."""
    text = text.strip()
    return text[1:-1] if text.startswith("{{") and text.endswith("}}") else None


class OpenObjectFormat(_OpenJsonFormat):
    """``OPENER [ws] {call}``: one JSON call object after each opener, no closing marker."""

    def region_scanner(self, opener: str) -> RegionScanner:
        return MarkerRegion() if opener in self.structure else OpenValueScanner("{")

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if opener in self.structure:
            return [], ""
        start = skip_ws(body, 0)
        if start >= len(body) or (at_end and truncated):
            return None  # no object, or one the token limit may have cut: not a call
        ok, obj = loads_repaired(body[start:])
        got = self.read_element(obj) if ok else None
        return one_call(opener, body, None if got is None else got[:2])

    def cut_call(self, opener, body, tools):
        return None if opener in self.structure else super().cut_call(opener, body, tools)

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import json_tagged

        opener = self.call_openers()[0]
        return partial(json_tagged, open=opener, close="", lead=self.gap, args_key=self.args_key)

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return self.call_openers()[0] + self.gap + json_text(self.item(name, arguments))


class JsonTagFormat(Format):
    """Hermes' wire, under a family's own tags: ``OPEN lead {"name": .., "arguments": {..}} trail
    CLOSE``, any number per reply (Hermes, LongCat, ERNIE 4.5, InternLM). A family is one instance
    (see :class:`Format`): its ``name`` and ``label``, its ``openers`` (the first opens a call; the
    others are markers consumed as structure wherever they stand, such as an answer frame), its
    closing tag ``close`` and its ``reasoning`` tags (by default ``<think>``).

    ``args_keys``: the key the arguments are written under, then any other key they are read
    under (a call holds one of them). ``fences``: a markdown fence around the JSON is repaired,
    and a missing closing tag is accepted when the reply ended normally right after the call;
    without, a fence makes the region text and a missing closing tag is accepted only right after
    the JSON's ``}``. ``layout``: the text after the opening tag, before the closing tag and
    between two calls, as the model writes them.
    """

    reasoning = THINK
    close = ""
    args_keys: tuple[str, ...] = ("arguments",)
    fences = True
    layout: tuple[str, str, str] = ("\n", "\n", "\n")
    # The JSON's closing brackets mended where the model ended the call with its closing tag and
    # they are all that is wrong: left out at the end, or written once too often (a family's own);
    # or the call object's braces doubled (``{{"name": ..., "arguments": {...}}}``: Qwen2.5,
    # QwenLM/Qwen3 #924, from templates that showed them so)
    mend_closers = False

    @property
    def structure(self) -> tuple[str, ...]:
        return self.openers[1:]

    def region_scanner(self, opener: str) -> RegionScanner:
        if opener in self.structure:
            return MarkerRegion()
        return JsonTagScanner(self.close, fences=self.fences)

    def read_call(self, inner: str) -> tuple[str, dict[str, Any]] | None:
        """The call written between the tags (``inner``), or None."""
        ok, obj = loads_repaired((strip_fence(inner.strip()) if self.fences else inner).strip())
        if not ok or not isinstance(obj, dict):
            return None
        keys = [k for k in self.args_keys if k in obj]
        if len(keys) > 1:
            return None
        return name_arguments(obj, args_key=keys[0] if keys else self.args_keys[0])

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if opener in self.structure:
            return [], ""  # consumed, never content
        last = "" if self.fences else "}"  # the end of the call, where an implied closing tag may follow
        inner = closed_body(body, self.close, last=last, at_end=at_end, truncated=truncated)
        call = None if inner is None else self.read_call(inner)
        if call is None and self.mend_closers:
            return self._mended_call(opener, body, inner, at_end=at_end, truncated=truncated)
        return one_call(opener, body, call)

    def _mended_call(
        self, opener: str, body: str, inner: str | None, *, at_end: bool, truncated: bool
    ) -> tuple[list[ParsedCall], str] | None:
        """The call whose JSON, ended by the model with the closing tag, lacks its last closing
        brackets or has surplus ones after it (see ``mend_closers``)."""
        if inner is not None and body.endswith(self.close):
            text, end = inner, len(body)
        elif at_end and not truncated and body.rstrip().endswith(self.close):
            # the JSON never closed, so the region ran on to the reply's end: whitespace after it
            end = len(body.rstrip())
            text = body[: end - len(self.close)]
        else:
            return None
        mended = closers_mended(text)
        got = None if mended is None else self.read_call(mended)
        if got is None and (doubled := _doubled_braces(text)) is not None:
            got = self.read_call(doubled)
        if got is None:
            return None
        return [ParsedCall(got[0], dict(got[1]), opener + body[:end])], body[end:]

    def cut_call(self, opener, body, tools):
        return None if opener in self.structure else super().cut_call(opener, body, tools)

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import json_tagged

        lead, trail, sep = self.layout
        return partial(
            json_tagged,
            open=self.openers[0],
            close=self.close,
            lead=lead,
            trail=trail,
            sep=sep,
            args_key=self.args_keys[0],
        )

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        lead, trail, _sep = self.layout
        call = json_text({"name": name, self.args_keys[0]: dict(arguments)})
        return f"{self.openers[0]}{lead}{call}{trail}{self.close}"
