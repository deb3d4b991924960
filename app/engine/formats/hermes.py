"""Hermes JSON calls (Qwen2.5, Qwen3, QwQ, Hermes 2 Pro / 3, Granite 4, MiMo, Bielik, Reka).

``<tool_call>\\n{"name": NAME, "arguments": {...}}\\n</tool_call>``, any number per reply, after
an optional ``<think>...</think>`` block. A markdown fence around the JSON and a trailing comma
are repaired; ``arguments`` written as a JSON string holding an object is read as that object.
A missing ``</tool_call>`` is accepted only when the reply ended normally right after the JSON.
Inside the tags the arguments may be written under ``parameters`` (Llama 3's key) instead of
``arguments``, never both: models served with Hermes' parser write it (gpt_server #47,
localharness #104), and Ollama's parser reads both keys (ollama #12413).
Where the model ended the call with ``</tool_call>`` and the JSON's closing brackets are all that
is wrong, they are mended: the last ones left out (hermes-agent #5315: Qwen3.5, Hermes, LongCat;
read where the call ends the reply, since the region of JSON that never closes runs on to there)
or surplus ones after the complete object (langchain-qwq #30: QwQ, Qwen3). An open string, a
mismatched bracket or any other text after the object stays text.

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

Qwen2.5-Coder, which ships Hermes' template, strays from it in three ways users of every local
engine report (Ollama, Codex and MCP clients show its calls as text; vLLM added a parser for the
third). Each is read strictly, and only as a call to an *offered* tool (JSON meant for the user
stays text):

- the whole reply is the bare call object, ``{"name": NAME, "arguments": {...}}``;
- the whole reply is that object in a markdown fence (language word ``json`` or none);
- the call, or a list of calls, between ``<tools>`` and ``</tools>`` (the tags its template
  wraps the tool list in), anywhere in the reply, as calls in ``<tool_call>`` are.

The object must hold exactly ``name`` and ``arguments``. A bare or fenced call with text before or
after it, another fence, several objects, or JSON that names no offered tool is text, byte for
byte; a reply the token limit cut inside one is an incomplete call only when it names an offered
tool. Doubled braces (``{{"name": ...}}``, copied from some templates' instructions) stay text
in a bare or fenced reply: the parser does not guess there. Inside ``<tool_call>``, where the tag
says a call is meant, a call object whose outer braces are doubled once is read with one pair
taken off (Qwen2.5-72B, QwenLM/Qwen3 #924), as its closing brackets are mended.
"""

from __future__ import annotations

from typing import Any

from app.engine.formats.base import MarkerRegion, ParsedCall, RegionScanner, register
from app.engine.formats.json_list import element_reader, list_elements
from app.engine.formats.jsonscan import loads_repaired, strip_fence
from app.engine.formats.open_json import (
    FENCE,
    FencedListScanner,
    JsonTagFormat,
    WholeObjectScanner,
    fenced_object,
)
from app.engine.formats.sections import JsonTagScanner, closed_body
from app.json_schema import tool_schemas

__all__ = ["HERMES", "HermesFormat"]

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
# Qwen2.5-Coder's strays (see the module docstring): its tool-list tags, a bare call, a fenced one.
TOOLS_OPEN, TOOLS_CLOSE = "<tools>", "</tools>"
BARE = "{"
STRAYS = (TOOLS_OPEN, BARE, FENCE)

# An element of a TNG list: exactly a name and its arguments (both required).
_ELEMENT = element_reader("name", "arguments", args_required=True)


class HermesFormat(JsonTagFormat):
    """Hermes' tags holding one call object, or a list of call objects (TNG R1T2 Chimera); with
    ``strays``, Qwen2.5-Coder's three ways out of the wire too (the module docstring)."""

    strays = False

    def __init__(self, *args: Any, **settings: Any) -> None:
        super().__init__(*args, **settings)
        if self.strays:
            # A bare or fenced call is the whole reply: it may open only at the reply's start.
            self.openers = (*self.openers, *STRAYS)
            self.start_only = True
            self.anywhere = (self.openers[0], TOOLS_OPEN)
            self.non_marker_openers = STRAYS  # deviations, not the published marker

    @property
    def structure(self) -> tuple[str, ...]:
        return tuple(o for o in self.openers[1:] if o not in STRAYS)

    def region_scanner(self, opener: str) -> RegionScanner:
        if opener in self.structure:
            return MarkerRegion()
        if opener == BARE:
            return WholeObjectScanner(True)
        if opener == FENCE:
            return FencedListScanner("{", last=True)
        # JSON-aware for a list too, so a closing tag inside one of its strings does not end it.
        return JsonTagScanner(
            TOOLS_CLOSE if opener == TOOLS_OPEN else self.close, fences=self.fences, also="["
        )

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if opener in STRAYS:
            return _read_stray(opener, body, at_end=at_end, truncated=truncated, tools=tools)
        got = super().parse_region(opener, body, at_end=at_end, truncated=truncated, tools=tools)
        if got is not None or opener in self.structure:
            return got
        inner = closed_body(body, self.close, last="", at_end=at_end, truncated=truncated)
        return None if inner is None else _read_list(opener, body, inner)

    def cut_call(self, opener, body, tools):
        inc = super().cut_call(opener, body, tools)
        if opener in STRAYS and inc is not None and inc.name not in tool_schemas(tools):
            return None  # a cut stray that names no offered tool may be JSON meant for the user
        return inc


def _read_stray(
    opener: str, body: str, *, at_end: bool, truncated: bool, tools: list[dict[str, Any]] | None
) -> tuple[list[ParsedCall], str] | None:
    """The calls of a Qwen2.5-Coder stray region, each to an offered tool; None when it is not one."""
    if opener == TOOLS_OPEN:
        inner = closed_body(body, TOOLS_CLOSE, last="", at_end=at_end, truncated=truncated)
        if inner is None:
            return None
        text = strip_fence(inner.strip()).strip()
        got = _read_list(opener, body, inner) if text.startswith("[") else None
        if got is None:
            call = _stray_call(text)
            got = None if call is None else ([ParsedCall(*call, opener + body)], "")
    else:
        if not at_end or truncated:
            return None  # more text after it, or cut: not a whole-reply call
        whole = fenced_object(body) if opener == FENCE else BARE + body
        call = None if whole is None else _stray_call(whole.strip())
        kept = body.rstrip()
        got = None if call is None else ([ParsedCall(*call, opener + kept)], body[len(kept) :])
    offered = tool_schemas(tools)
    if got is None or any(c.name not in offered for c in got[0]):
        return None
    return got


def _stray_call(text: str) -> tuple[str, dict[str, Any]] | None:
    """The call a stray's JSON (one object) writes: exactly a name and its arguments (a JSON
    string holding an object is that object); None for anything else."""
    ok, obj = loads_repaired(text)
    got = _ELEMENT(obj) if ok else None
    return None if got is None else (got[0], got[1])


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
    HermesFormat(
        "hermes",
        "Hermes JSON (Qwen2.5, Qwen3, QwQ, Hermes, Granite 4)",
        (OPEN,),
        close=CLOSE,
        strays=True,
        mend_closers=True,
        args_keys=("arguments", "parameters"),
    )
)
