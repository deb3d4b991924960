"""Google FunctionGemma calls: ``<start_function_call>call:NAME{k:<escape>v<escape>,...}<end_function_call>``.

Gemma 4's value notation (read by ``gemma4``'s reader) with FunctionGemma's own markers: strings
between ``<escape>`` delimiters (no escapes: everything between them is the string), numbers,
``true``/``false``/``null``, nested ``{...}`` objects and ``[...]`` arrays, bare keys. Any number of
calls, with text around them; the ``<start_function_response>`` the model writes after its calls
(its stop token) is structure. A ``<end_function_call>`` inside a string does not end the call. A
string holding Gemma 4's own ``<|"|>`` delimiter is not this wire (the region is text). The
published template (LiteRT-LM's) takes arguments already written in the notation and renders no
probe call, so detection knows it by its markers (``app.engine.formats.detect``).
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any

from app.calls import WIRE_NAME
from app.engine.formats.base import Format, RegionScanner, one_call, register
from app.engine.formats.gemma4 import QUOTE, parse_gemma_call, write_gemma_value
from app.engine.formats.sections import first_marker

__all__ = ["FunctionGemmaFormat"]

OPEN = "<start_function_call>"
CLOSE = "<end_function_call>"
ESC = "<escape>"
RESPONSE = "<start_function_response>"  # written after the calls (the model's stop token)
_NAME = re.compile(WIRE_NAME)
_CUT_NAME = re.compile(re.escape(OPEN) + r"\s*call:(" + WIRE_NAME + ")")


class _Scanner(RegionScanner):
    """Up to ``<end_function_call>`` (and a ``<start_function_response>`` right after it),
    skipping over ``<escape>...<escape>`` strings."""

    def __init__(self) -> None:
        self.in_str = False
        self.closed = False
        self.ops = 0

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i = 0
        while True:
            if self.closed:
                self.ops += 1
                if buf.startswith(RESPONSE, i):
                    return i + len(RESPONSE), True
                if not final and len(buf) - i < len(RESPONSE) and RESPONSE.startswith(buf[i:]):
                    return i, False
                return i, True
            markers = (ESC,) if self.in_str else (ESC, CLOSE)
            pos, m, safe = first_marker(buf, markers, i, final)
            self.ops += (pos + len(m) - i) if pos != -1 else len(buf) - i
            if pos == -1:
                return safe, False
            i = pos + len(m)
            if m == ESC:
                self.in_str = not self.in_str
            else:
                self.closed = True


def _escaped_key(k: str) -> str:
    return k if k and all(c.isalnum() or c in "_ " for c in k) and k == k.strip() else ESC + k + ESC


class FunctionGemmaFormat(Format):
    name = "functiongemma"
    label = "FunctionGemma (Google FunctionGemma 270M)"
    openers = (OPEN,)

    def region_scanner(self, opener: str) -> RegionScanner:
        return _Scanner()

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        inner = body[: -len(RESPONSE)] if body.endswith(CLOSE + RESPONSE) else body
        if not inner.endswith(CLOSE) or QUOTE in inner:
            return None
        return one_call(opener, inner, parse_gemma_call(inner[: -len(CLOSE)].replace(ESC, QUOTE)))

    def call_name(self, raw: str) -> str | None:
        m = _CUT_NAME.match(raw)
        return m.group(1) if m else super().call_name(raw)

    def grammar_wire(self, ctx):
        import dataclasses

        from app.engine.grammar.wires import GEMMA, notation_call

        def string(c: Any, schema: Any) -> str:
            lo, hi = int(schema.get("minLength", 0)), schema.get("maxLength")
            return f"{c.lit(ESC)} " + c.text_until(ESC, min_len=lo, max_len=hi)

        notation = dataclasses.replace(
            GEMMA, string=string, str_lit=lambda s: ESC + s + ESC, key=_escaped_key
        )
        return partial(
            notation_call,
            nt=notation,
            head=lambda n: OPEN + "call:" + n,
            tail=CLOSE,
            opener=OPEN,
            name_ok=lambda n: bool(_NAME.fullmatch(n)),
        )

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return f"{OPEN}call:{name}{write_gemma_value(dict(arguments)).replace(QUOTE, ESC)}{CLOSE}"


register(FunctionGemmaFormat())
