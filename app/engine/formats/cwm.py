"""CWM tool blocks (Meta FAIR Code World Model, CWM 32B).

Meta's prompting guide for CWM (``PROMPTING_GUIDE.md`` of facebookresearch/cwm) teaches one wire
for every tool, the tool's name in the tag and its input on the lines between the tags::

    <tool: NAME>
    CONTENT
    </tool>

Meta's own OpenAI-compatible server (``serve/tools.py``) writes and reads a declared function
tool's call with its JSON arguments as ``CONTENT``
(``<tool: get_weather>\\n{"city": "Paris"}\\n</tool>``), and its bash tool with the command
itself as ``CONTENT`` (``<tool: bash>\\nls -la\\n</tool>``); its RL environments read the blocks
with ``<tool:\\s(NAME)>\\n(.*?)\\n</tool>``. After an optional ``<think>...</think>`` block (CWM's
reasoning mode, the prompt prefilled with ``<think>\\n``), a reply may hold text and any number
of blocks; the text around them is content.

Read exactly so: ``<tool: `` (one space), a tool name (:data:`app.calls.WIRE_NAME`, at most
:data:`MAX_NAME` characters), ``>``, a newline, ``CONTENT``, a newline, ``</tool>``. ``CONTENT``
is the call's arguments when it is one JSON object (a trailing comma repaired, as in the other
JSON families); a ``</tool>`` inside one of its strings does not end the block. Any other
``CONTENT`` is a free-text command (a bash command, say), kept byte for byte as
``{"command": CONTENT}``, and only for a declared tool whose schema takes exactly that: a
``command`` parameter that may be a string, and no other required parameter (Meta's server maps
its bash block onto such a tool; vLLM's ``cwm`` parser wraps free text as ``{"command": ...}``).
A tool that is not declared, or whose schema cannot take a command, gets no call built from free
text: the block is text. A JSON call is read whatever tool it names, as in the other JSON
families (the dispatcher answers a tool it does not know).

Anything else is text, byte for byte: another spacing of the tag (``<tool:NAME>``,
``<tool: NAME >``), a name that is no tool name, no newline after the tag or before
``</tool>``, an empty ``CONTENT``, a free-text ``CONTENT`` holding ``</tool>``, a block the reply
ended without closing. A block the token limit cut is an incomplete call.

vLLM's ``cwm`` parser reads the tag's label as informational and the name as the first word of
the body (``<tool: function>\\nNAME ARGS\\n</tool>``); CWM's documented wire and Meta's parsers
put the name in the tag, so that reading is not taken: such a block names the tool ``function``.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any

from app.calls import WIRE_NAME
from app.engine.formats.base import (
    THINK,
    Format,
    ParsedCall,
    RegionScanner,
    find_marker,
    one_call,
    register,
)
from app.engine.formats.jsonscan import loads_repaired
from app.engine.formats.sections import json_text
from app.json_schema import schema_types, tool_schemas

__all__ = ["CLOSE", "CWM", "MAX_NAME", "OPEN", "CwmFormat", "takes_command"]

OPEN = "<tool: "
CLOSE = "</tool>"
# The longest tool name read in a tag (longer is no name: the region is text then, and the
# stream stops holding it back).
MAX_NAME = 256
# The parameter a free-text body fills (Meta's bash tool, vLLM's wrapping).
COMMAND = "command"

_NAME = re.compile(WIRE_NAME)
_NAME_RUN = re.compile(r"[^\s<>]*")  # what may stand in the tag before its ">"
_IN_JSON = re.compile(r'["{}<]')  # what matters in the JSON body outside its strings
_IN_STRING = re.compile(r'["\\\n]')  # ... and inside a string


def takes_command(schema: Any) -> bool:
    """Whether a tool with the parameters ``schema`` takes a free-text body: ``{"command": TEXT}``
    fits it (a ``command`` parameter that may be a string, no other parameter required)."""
    if not isinstance(schema, dict):
        return False
    props = schema.get("properties")
    if not isinstance(props, dict) or "string" not in schema_types(props.get(COMMAND)):
        return False
    required = schema.get("required") or []
    return isinstance(required, list) and all(r == COMMAND for r in required)


class _BlockScanner(RegionScanner):
    """The region after ``<tool: ``: the name up to ``>``, the newline, then the body up to the
    first ``</tool>``, a ``</tool>`` inside a string of a JSON body skipped. At the first
    character that cannot continue the tag the region ends there (it is text, and what follows
    is read again).

    States: ``name`` (the tag's name), ``nl`` (the newline after ``>``), ``first`` (the body's
    first character after whitespace: ``{`` starts a JSON body), ``json`` (outside a string of the
    JSON body), ``string`` (inside one; a raw newline, which no JSON string holds, makes the body
    free text), ``seek`` (free text, or after the JSON: the first ``</tool>`` ends it)."""

    def __init__(self) -> None:
        self.state = "name"
        self.name = 0  # characters of the name read so far
        self.depth = 0  # open brackets of the JSON body
        self.esc = False  # a backslash in a string, at the end of the text seen
        self.ops = 0

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i, n = 0, len(buf)
        while i < n:
            st = self.state
            if st == "name":
                # One character past the longest name is enough to tell (the work stays bounded).
                stop = min(n, i + MAX_NAME - self.name + 1)
                k = _NAME_RUN.match(buf, i, stop).end()  # type: ignore[union-attr]  # matches "" at least
                if self.name + k - i > MAX_NAME:
                    # Too long for a name: the region ends at the first character past the limit,
                    # wherever the chunks were cut (so streaming decides as parsing does).
                    j = i + MAX_NAME - self.name
                    self.ops += j - i + 1
                    return j, True
                self.ops += k - i + 1
                self.name += k - i
                if k == n:
                    return n, False
                if buf[k] != ">" or self.name == 0:
                    return k, True  # whitespace or a tag inside the tag, or no name: not a call
                self.state = "nl"
                i = k + 1
            elif st == "nl":
                self.ops += 1
                if buf[i] != "\n":
                    return i, True
                self.state = "first"
                i += 1
            elif st == "first":
                self.ops += 1
                if buf[i].isspace():
                    i += 1
                    continue
                self.state = "json" if buf[i] == "{" else "seek"
            elif st == "json":
                got = self._json(buf, i, final)
                if isinstance(got, tuple):
                    return got
                i = got
            elif st == "string":
                i = self._string(buf, i)
            else:  # seek
                pos, _m, safe = find_marker(buf, (CLOSE,), final, start=i)
                self.ops += (pos + len(CLOSE) - i) if pos != -1 else n - i
                return (pos + len(CLOSE), True) if pos != -1 else (safe, False)
        return n, False

    def _next(self, pattern: re.Pattern[str], buf: str, i: int) -> int:
        """Where ``pattern`` next matches in ``buf`` from ``i`` (``len(buf)`` if nowhere), the
        characters passed over counted in ``ops``."""
        m = pattern.search(buf, i)
        if m is None:
            self.ops += len(buf) - i
            return len(buf)
        self.ops += m.start() - i + 1
        return m.start()

    def _json(self, buf: str, i: int, final: bool) -> int | tuple[int, bool]:
        """A step outside the JSON body's strings: the index to go on from, or where the region
        ends (a ``</tool>`` outside every string) or how far it goes until more text comes."""
        j = self._next(_IN_JSON, buf, i)
        if j == len(buf):
            return j
        c = buf[j]
        if c == '"':
            self.state = "string"
        elif c == "{":
            self.depth += 1
        elif c == "}":
            self.depth -= 1
            if self.depth <= 0:
                self.state = "seek"  # the object ended: what follows is no JSON
        elif buf.startswith(CLOSE, j):
            return j + len(CLOSE), True
        elif not final and len(buf) - j < len(CLOSE) and CLOSE.startswith(buf[j:]):
            return j, False  # the closing tag's beginning: wait for the rest
        return j + 1

    def _string(self, buf: str, i: int) -> int:
        """A step inside a string of the JSON body: the index to go on from."""
        if self.esc:
            self.esc = False
            self.ops += 1
            return i + 1
        j = self._next(_IN_STRING, buf, i)
        if j == len(buf):
            return j
        c = buf[j]
        if c == "\\":
            self.esc = True
        elif c == '"':
            self.state = "json"
        else:  # a raw newline: no JSON string holds one, so the body is free text
            self.state = "seek"
            return j
        return j + 1


def _read_block(body: str, tools: list[dict[str, Any]] | None) -> tuple[str, dict[str, Any]] | None:
    """The call of a whole block (``body``: the text after ``<tool: ``, its closing tag
    included), or None."""
    if not body.endswith(CLOSE):
        return None
    gt = body.find(">")
    name, inner = body[:gt], body[gt + 1 : -len(CLOSE)]
    if gt <= 0 or len(name) > MAX_NAME or not _NAME.fullmatch(name):
        return None
    if len(inner) < 2 or inner[0] != "\n" or inner[-1] != "\n":
        return None
    content = inner[1:-1]
    if not content.strip():
        return None
    if content.lstrip().startswith("{"):
        ok, args = loads_repaired(content)
        if ok and isinstance(args, dict):
            return name, args
    # Free text: a command, only for a declared tool that takes one (and never text that would
    # have closed the block on CWM's own parsers).
    if CLOSE in content or not takes_command(tool_schemas(tools).get(name)):
        return None
    return name, {COMMAND: content}


class CwmFormat(Format):
    """CWM's ``<tool: NAME>`` blocks (see the module docstring)."""

    name = "cwm"
    label = "CWM tool blocks (Meta FAIR Code World Model, CWM 32B)"
    openers = (OPEN,)
    reasoning = THINK

    def region_scanner(self, opener: str) -> RegionScanner:
        return _BlockScanner()

    def parse_region(
        self, opener: str, body: str, *, at_end: bool, truncated: bool, tools: list[dict[str, Any]] | None
    ) -> tuple[list[ParsedCall], str] | None:
        if at_end:
            return None  # unclosed: text, or an incomplete call where the token limit cut it
        return one_call(opener, body, _read_block(body, tools))

    def call_name(self, raw: str) -> str | None:
        gt = raw.find(">", len(OPEN))
        name = raw[len(OPEN) : gt] if raw.startswith(OPEN) and gt != -1 else ""
        return name if len(name) <= MAX_NAME and _NAME.fullmatch(name) else None

    def grammar_wire(self, ctx: Any):
        from app.engine.grammar.wires import json_section

        # Each call a block of its own with JSON arguments: the body every tool's call may have
        # (a free-text body is read only for a tool that takes a command).
        return partial(json_section, section=None, opener=OPEN, head=_head, tail="\n" + CLOSE, sep="\n")

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return _head(name) + json_text(dict(arguments)) + "\n" + CLOSE


def _head(name: str) -> str:
    """A block up to its body, as CWM writes it for the tool ``name``."""
    return f"{OPEN}{name}>\n"


CWM = register(CwmFormat())
"""CWM: ``<tool: NAME>`` blocks, JSON arguments or a free-text command, ``<think>`` reasoning."""
