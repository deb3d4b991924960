"""GLM calls (GLM-4.5, GLM-4.6, GLM-4.7, GLM-5, Poolside Laguna).

``<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>...</tool_call>``, in GLM-4.5's
newline layout (``NAME\\n<arg_key>..`` with a newline after each element) or GLM-4.7/5's compact
one. Values are raw text typed by the tool's schema (``08080`` stays a string for a string
property); whitespace inside ``<arg_value>`` is the value's and is kept exactly. A
``</tool_call>`` (or any other marker) inside a value does not end the call, and an
``</arg_value>`` inside one closes it only when the next ``<arg_key>`` or ``</tool_call>``
follows. A last value whose ``</arg_value>`` is missing ends at a ``</tool_call>`` that ends
the reply or is followed by the next ``<tool_call>``, or before a tag named after its key at its
end (``Paris</city>``, plain XML's close) unless it holds that name's opening tag too.
Reasoning is a ``<think>...</think>`` block; a GLM-4.7 reply may start inside it with no opening tag (its
prompt ends with ``<think>``, or the model writes only ``</think>``).

A deviation GLM-4.7 writes (vLLM #47190), read strictly: the first ``<arg_key>`` left out, so the
name runs into the first key (``<tool_call>grep_toolpattern</arg_key><arg_value>...``, or with
a space or newline between them). It is read only where the text before that ``</arg_key>``
splits one way into a declared tool's name and one of that tool's declared parameters. And
GLM-5.2's stray ``</arg_value>`` right after a declared tool's name, mostly in a call without
arguments (``<tool_call>get_time</arg_value></tool_call>``): dropped. GLM-4.7 also leaves out a
value's opening tag now and then, more often under concurrent load (vLLM #49249, from the raw
sampled tokens: ``<arg_key>query</arg_key>cats</arg_value>``) and writes a key's closing tag twice
(vLLM #54971): the value starts right after the key's closing tag (one newline there is layout),
must be closed by ``</arg_value>`` and may hold no other pair tag; the repeated tag is one.
Quantized GLM models write that opening tag without its ``<`` (``arg_value>romeo.md</arg_value>``
after the key, aosama/astronomical #293): read as the tag (one newline before it is layout), the
value after it under the same rules. A value whose ``</arg_value>`` was left out before the next
pair would run into that pair (the value ending in ``<arg_key>K</arg_key><arg_value>V``, no
closing tag after them): the pair would be lost, so the call is text. GLM 5.x
writes ``<tool_call>`` where a declared tool's first ``<arg_key>`` belongs (sigit #95; a GLM 5.3
deployment, ormandj/sglang-glm53-flash-sm120 #5): read as that key's opening tag, the first only.
And GLM leaves out the ``</tool_call>`` of its last call, or writes only its start (``</tool_cal``),
then ends the reply (ollama #17250, for the agents it left with an empty reply; colibri #505): read
where the reply ended normally (not cut) right after a complete call, to a declared tool with
every required argument, its last ``</arg_value>`` written (or no arguments at all).
"""

from __future__ import annotations

import re
from typing import Any

from app.calls import WIRE_NAME
from app.engine.formats.base import RegionScanner, one_call, register
from app.engine.formats.sections import SkipValuesScanner, skip_ws
from app.engine.formats.xml_params import ArgPairsFormat, read_arg_pairs
from app.json_schema import tool_schemas

__all__ = ["K_CLOSE", "K_OPEN", "V_CLOSE", "V_OPEN", "GlmFormat", "parse_glm_call"]

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
K_OPEN = "<arg_key>"
K_CLOSE = "</arg_key>"
V_OPEN = "<arg_value>"
V_CLOSE = "</arg_value>"
KEY, VALUE = (K_OPEN, K_CLOSE), (V_OPEN, V_CLOSE)

# A function name as tools and MCP servers spell them: no spaces, brackets, quotes or markup.
_NAME = re.compile(WIRE_NAME)


def _pairs(text: str, i: int) -> tuple[dict[str, str], int] | None:
    """GLM's arg pairs from ``i`` to the end of the call's text, with its strays (see
    :func:`read_arg_pairs`)."""
    return read_arg_pairs(text, i, key=KEY, value=VALUE, lenient=True, strays=True)


def parse_glm_call(
    inner: str, schemas: dict[str, dict[str, Any]] | None = None
) -> tuple[str, dict[str, str]] | None:
    """Strictly read ``NAME (<arg_key>K</arg_key><arg_value>V</arg_value>)*`` (whitespace between);
    with the tools' ``schemas``, also a call whose first ``<arg_key>`` was left out (see the
    module docstring)."""
    i = skip_ws(inner, 0)
    m = _NAME.match(inner, i)
    if m is None:
        return None
    after = m.end()
    declared = m.group(0) in (schemas or {})
    if inner.startswith(V_CLOSE, after) and declared:
        after += len(V_CLOSE)  # GLM-5.2's stray closing value tag after a declared tool's name
    elif inner.startswith(OPEN, after) and declared:
        # GLM 5.x's <tool_call> where the first <arg_key> belongs: that key's opening tag (the
        # first only: a value then holding a key's closing tag read past another such tag)
        inner = inner[:after] + K_OPEN + inner[after + len(OPEN) :]
        got = _pairs(inner, after)
        if got is None or any(K_CLOSE in v for v in got[0].values()):
            return None
        return m.group(0), got[0]
    got = _pairs(inner, after)
    if got is not None:
        return m.group(0), got[0]
    fused = _fused_head(inner, i, schemas or {})
    if fused is None:
        return None
    name, key, end = fused
    got = _pairs(K_OPEN + key + inner[end:], 0)
    return None if got is None else (name, got[0])


def _unclosed_call(
    body: str, close: str, schemas: dict[str, dict[str, Any]]
) -> tuple[str, dict[str, str]] | None:
    """A call at the end of a reply that ended normally without its closing tag ``close`` (or
    with only its start, ``</tool_cal``): read where it is complete, to a declared tool with every
    required argument, its last value closed (or no arguments at all); None otherwise."""
    text = body.rstrip()
    cut = next((n for n in range(len(close) - 1, 1, -1) if text.endswith(close[:n])), 0)
    text = text[: len(text) - cut].rstrip()
    got = parse_glm_call(text, schemas)
    if got is None or got[0] not in schemas:
        return None
    name, args = got
    if args and not text.endswith(V_CLOSE):
        return None  # its last value ran to the reply's end: no call the model finished
    required = schemas[name].get("required") if isinstance(schemas[name], dict) else None
    if any(key not in args for key in required or ()):
        return None
    return got


def _fused_head(inner: str, i: int, schemas: dict[str, dict[str, Any]]) -> tuple[str, str, int] | None:
    """(tool, key, where its ``</arg_key>`` starts) of a call whose name runs into its first key:
    the text from ``i`` to the first ``</arg_key>`` holds no ``<arg_key>`` and splits exactly
    one way into a declared tool and one of its declared parameters (whitespace between them or
    none); None otherwise."""
    end = inner.find(K_CLOSE, i)
    if end == -1 or K_OPEN in inner[i:end]:
        return None
    head = inner[i:end].rstrip()
    found = []
    for name, schema in schemas.items():
        props = schema.get("properties") if isinstance(schema, dict) else None
        if not isinstance(props, dict) or not head.startswith(name) or not _NAME.fullmatch(name):
            continue
        key = head[len(name) :].lstrip()
        if key in props and key:
            found.append((name, key, end))
    return found[0] if len(found) == 1 else None


class GlmFormat(ArgPairsFormat):
    """GLM's arg-pair calls between ``openers[0]`` and ``tail`` (a family with other call tags
    around the same body, such as iQuest Coder V2, subclasses it with its own)."""

    name = "glm"
    label = "GLM XML (GLM-4.5, GLM-4.6, GLM-4.7, GLM-5, Laguna)"
    openers = (OPEN,)
    tail = CLOSE
    key_tags, value_tags = KEY, VALUE
    param_close = V_CLOSE
    # A complete call whose closing tag never came, in a reply that ended normally (the module
    # docstring): GLM's own deviation, which a family built on this reader turns off.
    unclosed = True

    def region_scanner(self, opener: str) -> RegionScanner:
        close = self.tail
        return SkipValuesScanner(close, V_OPEN, V_CLOSE, followers=(K_OPEN, close), reopen=(self.openers[0],))

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if at_end and truncated:
            return None  # the scanner did not close the region before the cut: an incomplete call
        if not body.endswith(self.tail):
            if at_end and self.unclosed:
                return one_call(opener, body, _unclosed_call(body, self.tail, tool_schemas(tools)))
            return None  # the closing tag is plain text for GLM: a call without it was cut off
        return one_call(opener, body, parse_glm_call(body[: -len(self.tail)], tool_schemas(tools)))

    def head(self, name: str) -> str:
        return f"{self.openers[0]}{name}\n"

    def call_name(self, raw: str) -> str | None:
        opener = self.openers[0]
        m = _NAME.match(raw, len(opener)) if raw.startswith(opener) else None
        return m.group(0) if m and raw[m.end() : m.end() + 1] in ("\n", "<", " ") else None

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return f"{self.openers[0]}{name}\n{self.pairs_text(arguments)}{self.tail}"


register(GlmFormat())
