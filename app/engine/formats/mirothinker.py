"""MiroThinker MCP calls (MiroMind MiroThinker v1.0 to v1.7, Qwen3-based deep-research models).

The system prompt of MiroThinker's template (llama.cpp's ``models/templates/MiroThinker-v1.jinja``,
after MiroMind's MiroFlow agent) teaches one MCP tool use at the end of the reply, after an
optional ``<think>...</think>`` block::

    <use_mcp_tool>
    <server_name>SERVER</server_name>
    <tool_name>NAME</tool_name>
    <arguments>
    {"city": "Paris"}
    </arguments>
    </use_mcp_tool>

Read exactly so: the three elements in that order, whitespace (any amount, none included) around
each of them and around the JSON; ``NAME`` is a tool name (whitespace around it is dropped, as
MiroMind's parsers strip it); ``SERVER`` is any non-empty text without ``<``; the arguments are one
JSON object (a trailing comma is repaired, as in the other JSON families). The tool is the one
``NAME`` names: the server is not checked against the template's derivation of it from the tool's
name (MiroMind's vLLM plugin only uses it to resolve an ambiguous name, its agent to route the
call to an MCP server; here the tool names are the server's own), and it stays in the call's
raw text. A block may be followed by text and by more blocks: each is a call (both MiroMind
parsers read every block), the text around them is content. Anything else is text, byte for
byte: an element missing, out of order or written twice (several calls in one block are read by
neither MiroMind parser), a server holding ``<``, an empty one, a name that is no tool name,
arguments that are not one JSON object, text inside the block, a block the reply ended without
closing. A ``</use_mcp_tool>`` or ``</arguments>`` inside a JSON string does not end the block.

Hermes' calls, ``<tool_call>\\n{"name": NAME, "arguments": {...}}\\n</tool_call>``, are read too:
MiroThinker is a Qwen3 model, a template built on Qwen3's may write a past call so, and the model
may follow what it sees. They are
read as Hermes' single calls (``open_json.JsonTagFormat``, the reader under ``hermes``): one
object per tag, a fenced object and a closing tag left out right after the JSON at the end of a
reply repaired, no list of calls (TNG's deviation is Hermes' alone).

The published template (llama.cpp's) calls its ``render_tool_call`` macro without the message
it reads; llama.cpp's engine lends the caller's variable, and so does Callisto's sandbox
(``app.engine.templates``), so it renders a past call as the MCP block and detection reads its
probe call. A template is taken for this family (before Hermes) only where it holds the block's
elements (``app.engine.formats.detect``).
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any

from app.calls import WIRE_NAME
from app.engine.formats.base import (
    THINK,
    Format,
    IncompleteCall,
    JsonStateScanner,
    RegionScanner,
    one_call,
    register,
)
from app.engine.formats.jsonscan import loads_repaired
from app.engine.formats.open_json import JsonTagFormat
from app.engine.formats.sections import json_text

__all__ = ["MIROTHINKER", "MiroThinkerFormat", "server_name"]

OPEN = "<use_mcp_tool>"
CLOSE = "</use_mcp_tool>"
SERVER = ("<server_name>", "</server_name>")
TOOL = ("<tool_name>", "</tool_name>")
ARGS = ("<arguments>", "</arguments>")
# Hermes' tags (``hermes.OPEN``, ``hermes.CLOSE``), written here: importing ``hermes`` would
# register it before this family, which detection must try first.
TOOL_CALL, TOOL_CALL_CLOSE = "<tool_call>", "</tool_call>"

# The longest server or tool name text read (longer is no name: the region is text then, and
# the stream stops holding it back).
MAX_HEAD = 256

_NAME = re.compile(WIRE_NAME)
# The block's head up to the JSON, then its tail after it (the body holds no opening tag).
_HEAD = re.compile(r"\s*<server_name>([^<]*)</server_name>\s*<tool_name>([^<]*)</tool_name>\s*<arguments>")
_TAIL = re.compile(r"\s*</arguments>\s*</use_mcp_tool>\Z")
_CUT_NAME = re.compile(r"<tool_name>([^<]*)</tool_name>")

# Hermes' single calls under the same reasoning (the reader ``hermes`` is built on).
_HERMES = JsonTagFormat("mirothinker-hermes", "", (TOOL_CALL,), close=TOOL_CALL_CLOSE)


def server_name(tool: str) -> str:
    """The MCP server the template names for the tool ``tool`` (its ``render_tool_server``
    macro): Python runners, searches, the scraper, and everything else."""
    if "_sandbox" in tool or tool.startswith("run_") or "python" in tool:
        return "tool-python"
    if "_search" in tool:
        return "search_and_scrape_webpage"
    if tool == "scrape_and_extract_info":
        return "jina_scrape_llm_summary"
    return "generic-extras"


class _BlockScanner(JsonStateScanner):
    """The region after ``<use_mcp_tool>``: the three elements, the JSON read JSON-aware, then
    ``</use_mcp_tool>``. At the first character that cannot continue the block the region ends
    there (it is text, and what follows is read again)."""

    # state -> (the literal expected there after whitespace, the state after it)
    _LITERALS = {
        "pre": (SERVER[0], "server"),
        "pre_tool": (TOOL[0], "tool"),
        "pre_args": (ARGS[0], "pre_json"),
        "post": (ARGS[1], "pre_close"),
        "pre_close": (CLOSE, "done"),
    }
    # state -> (the closing tag of its text, the state after it)
    _HEADS = {"server": (SERVER[1], "pre_tool"), "tool": (TOOL[1], "pre_args")}

    def __init__(self) -> None:
        super().__init__("pre")
        self.head = 0  # characters of the server or tool name read so far

    def step(self, buf: str, i: int, final: bool) -> int | tuple[int, bool]:
        st = self.state
        self.ops += 1
        if st == "pre_json":
            j = self.value_start(buf, i)
            return (i, True) if j is None else j
        if st in self._HEADS:
            return self._head(buf, i, final)
        lit, then = self._LITERALS[st]
        if buf[i].isspace():
            return i + 1
        if buf.startswith(lit, i):
            if then == "done":
                return i + len(lit), True
            self.state = then
            return i + len(lit)
        rest = buf[i : i + len(lit)]
        if (not final or self.cut) and len(rest) < len(lit) and lit.startswith(rest):
            return i, False  # a tag's beginning: wait for the rest (or the token limit cut it)
        return i, True

    def _head(self, buf: str, i: int, final: bool) -> int | tuple[int, bool]:
        """A server or tool name: text without ``<`` up to its closing tag."""
        close, then = self._HEADS[self.state]
        p = buf.find("<", i)
        stop = len(buf) if p == -1 else p
        if self.head + stop - i > MAX_HEAD:
            # Too long for a name: the region ends at the first character past the limit,
            # wherever the chunks were cut (so streaming decides as parsing does).
            k = i + MAX_HEAD - self.head
            self.ops += k - i
            return k, True
        self.ops += stop - i
        self.head += stop - i
        if p == -1:
            return stop
        if buf.startswith(close, p):
            self.state, self.head = then, 0
            return p + len(close)
        rest = buf[p : p + len(close)]
        if (not final or self.cut) and len(rest) < len(close) and close.startswith(rest):
            return p, False
        return p, True  # another tag inside the element: not a call


def _read_block(body: str) -> tuple[str, dict[str, Any]] | None:
    """The call of a whole block (``body``: the text after ``<use_mcp_tool>``, its closing tag
    included), or None."""
    head = _HEAD.match(body)
    tail = _TAIL.search(body)
    if head is None or tail is None or tail.start() < head.end():
        return None
    server, name = head.group(1).strip(), head.group(2).strip()
    if not server or len(name) > MAX_HEAD or not _NAME.fullmatch(name):
        return None
    text = body[head.end() : tail.start()].strip()
    if not text.startswith("{"):
        return None
    ok, args = loads_repaired(text)
    return (name, args) if ok and isinstance(args, dict) else None


class MiroThinkerFormat(Format):
    """MCP tool-use blocks, and Hermes' calls (see the module docstring)."""

    name = "mirothinker"
    label = "MiroThinker MCP calls (MiroMind MiroThinker v1.0, v1.5, v1.7)"
    openers = (OPEN, TOOL_CALL)
    reasoning = THINK

    def region_scanner(self, opener: str) -> RegionScanner:
        if opener == TOOL_CALL:
            return _HERMES.region_scanner(opener)
        return _BlockScanner()

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if opener == TOOL_CALL:
            return _HERMES.parse_region(opener, body, at_end=at_end, truncated=truncated, tools=tools)
        if at_end and truncated:
            return None  # a block the token limit cut: an incomplete call
        return one_call(opener, body, _read_block(body))

    def cut_call(self, opener: str, body: str, tools: list[dict[str, Any]] | None) -> IncompleteCall | None:
        if opener == TOOL_CALL:
            return _HERMES.cut_call(opener, body, tools)
        return super().cut_call(opener, body, tools)

    def call_name(self, raw: str) -> str | None:
        m = _CUT_NAME.search(raw)
        if m and _NAME.fullmatch(m.group(1).strip()):
            return m.group(1).strip()
        return super().call_name(raw)

    def grammar_wire(self, ctx: Any):
        from app.engine.grammar.wires import json_section

        # Each call a block of its own, the server the template names for the tool.
        return partial(json_section, section=None, opener=OPEN, head=_block_head, tail=_BLOCK_TAIL, sep="\n")

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return _block_head(name) + json_text(dict(arguments)) + _BLOCK_TAIL


_BLOCK_TAIL = f"\n{ARGS[1]}\n{CLOSE}"


def _block_head(name: str) -> str:
    """A block up to its JSON, as the template writes it for the tool ``name``."""
    return f"{OPEN}\n{SERVER[0]}{server_name(name)}{SERVER[1]}\n{TOOL[0]}{name}{TOOL[1]}\n{ARGS[0]}\n"


MIROTHINKER = register(MiroThinkerFormat())
