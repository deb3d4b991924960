"""GLM calls (GLM-4.5, GLM-4.6, GLM-4.7, GLM-5, Poolside Laguna).

``<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>...</tool_call>``, in GLM-4.5's
newline layout (``NAME\\n<arg_key>..`` with a newline after each element) or GLM-4.7/5's compact
one. Values are raw text typed by the tool's schema (``08080`` stays a string for a string
property); whitespace inside ``<arg_value>`` is the value's and is kept exactly. A
``</tool_call>`` (or any other marker) inside a value does not end the call, and an
``</arg_value>`` inside one closes it only when the next ``<arg_key>`` or ``</tool_call>``
follows. A last value whose ``</arg_value>`` is missing ends at a ``</tool_call>`` that ends
the reply or is followed by the next ``<tool_call>``. Reasoning is a
``<think>...</think>`` block; a GLM-4.7 reply may start inside it with no opening tag (its
prompt ends with ``<think>``, or the model writes only ``</think>``).
"""

from __future__ import annotations

import re
from typing import Any

from app.calls import WIRE_NAME
from app.engine.formats.base import Format, ParsedCall, RegionScanner, register
from app.engine.formats.sections import SkipValuesScanner, raw_text, skip_ws

__all__ = ["GlmFormat", "parse_glm_call"]

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
K_OPEN = "<arg_key>"
K_CLOSE = "</arg_key>"
V_OPEN = "<arg_value>"
V_CLOSE = "</arg_value>"

# A function name as tools and MCP servers spell them: no spaces, brackets, quotes or markup.
_NAME = re.compile(WIRE_NAME)


def _value_end(inner: str, i: int) -> int:
    """The ``</arg_value>`` that closes the value at ``i``: the first one followed (after
    whitespace) by the next ``<arg_key>`` or by the end of the call; -1 if none."""
    j = i
    while True:
        end = inner.find(V_CLOSE, j)
        if end == -1:
            return -1
        k = skip_ws(inner, end + len(V_CLOSE))
        if k == len(inner) or inner.startswith(K_OPEN, k):
            return end
        j = end + len(V_CLOSE)


def parse_glm_call(inner: str) -> tuple[str, dict[str, str]] | None:
    """Strictly read ``NAME (<arg_key>K</arg_key><arg_value>V</arg_value>)*`` (whitespace between)."""
    i = skip_ws(inner, 0)
    m = _NAME.match(inner, i)
    if m is None:
        return None
    name = m.group(0)
    i = m.end()
    args: dict[str, str] = {}
    while True:
        i = skip_ws(inner, i)
        if i == len(inner):
            return name, args
        if not inner.startswith(K_OPEN, i):
            return None
        i += len(K_OPEN)
        end = inner.find(K_CLOSE, i)
        if end == -1:
            return None
        key = inner[i:end].strip()
        if not key or "<" in key or ">" in key or key in args:
            return None
        i = skip_ws(inner, end + len(K_CLOSE))
        if not inner.startswith(V_OPEN, i):
            return None
        i += len(V_OPEN)
        end = _value_end(inner, i)
        if end == -1:
            # The last value's </arg_value> is missing before </tool_call>: it runs to the end
            # (a newline before the closing tag is layout).
            value = inner[i:]
            args[key] = value[:-1] if value.endswith("\n") else value
            return name, args
        args[key] = inner[i:end]
        i = end + len(V_CLOSE)


class GlmFormat(Format):
    name = "glm"
    label = "GLM XML (GLM-4.5, GLM-4.6, GLM-4.7, GLM-5, Laguna)"
    detail = "<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>"
    openers = (OPEN,)
    start_only = False
    reasoning = ("<think>", "</think>")
    raw_values = True

    def region_scanner(self, opener: str) -> RegionScanner:
        return SkipValuesScanner(CLOSE, V_OPEN, V_CLOSE, followers=(K_OPEN, CLOSE), reopen=(OPEN,))

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if at_end and truncated:
            return None  # the scanner did not close the region before the cut: an incomplete call
        if not body.endswith(CLOSE):
            return None  # ``</tool_call>`` is plain text for GLM: a call without it was cut off
        got = parse_glm_call(body[: -len(CLOSE)])
        if got is None:
            return None
        name, args = got
        return [ParsedCall(name, dict(args), opener + body)], ""

    def constraint_grammar(self, tools, *, forced, parallel, ctx):
        from app.engine.constraints.wires import raw_params, typed

        return raw_params(
            ctx,
            self,
            tools,
            forced,
            parallel,
            opener=OPEN,
            head=lambda n: f"{OPEN}{n}\n",
            tail=CLOSE,
            param=lambda c, k, s, w: (
                f"{c.lit(f'{K_OPEN}{k}{K_CLOSE}{chr(10)}{V_OPEN}')} "
                f"{typed(c, s, V_CLOSE, w)} {c.lit(chr(10))}"
            ),
            name_ok=lambda n: bool(_NAME.fullmatch(n)),
            key_ok=lambda k: k == k.strip() and bool(k) and not set(k) & set("<>"),
        )

    def call_name(self, raw: str) -> str | None:
        m = _NAME.match(raw, len(OPEN)) if raw.startswith(OPEN) else None
        return m.group(0) if m and raw[m.end() : m.end() + 1] in ("\n", "<", " ") else None

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        body = "".join(
            f"{K_OPEN}{k}{K_CLOSE}\n{V_OPEN}{raw_text(v)}{V_CLOSE}\n" for k, v in arguments.items()
        )
        return f"{OPEN}{name}\n{body}{CLOSE}"


register(GlmFormat())
