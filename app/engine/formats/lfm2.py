"""LFM2 pythonic calls in markers (Liquid LFM2.5-8B-A1B).

``<|tool_call_start|>[get_weather(city='Paris', days=3)]<|tool_call_end|>`` anywhere in the
reply, after an optional ``<think>...</think>`` block. Inside the markers stands a Python list of
calls with keyword arguments, read by the pythonic family's literal-only reader
(:func:`app.engine.formats.pycalls.parse_call_list`, never evaluated): strings as Python
literals, objects as JSON or Python dicts, ``True``/``False``/``None``. A marker inside a string
does not end the call. A missing ``<|tool_call_end|>`` is accepted only when the reply ended
normally right after the list; a reply cut inside the list keeps the calls written completely.
"""

from __future__ import annotations

import re
from typing import Any

from app.engine.formats.base import THINK, Format, ParsedCall, RegionScanner, register
from app.engine.formats.pycalls import (
    PyListScanner,
    call_list_grammar,
    call_list_text,
    parse_call_list,
    parse_cut_list,
)
from app.engine.holdback import partial_start

__all__ = ["Lfm2Format"]

OPEN = "<|tool_call_start|>"
CLOSE = "<|tool_call_end|>"
_CALL_NAME = re.compile(r"([A-Za-z_][\w.]*)\s*\(")


class Lfm2Format(Format):
    name = "lfm2"
    label = "LFM2 pythonic (Liquid LFM2.5)"
    openers = (OPEN,)
    reasoning = THINK

    def region_scanner(self, opener: str) -> RegionScanner:
        return PyListScanner(CLOSE)

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if body.endswith(CLOSE):
            source = body[: -len(CLOSE)]
        elif at_end:
            if truncated:  # cut at max_tokens: the complete calls count, the cut rest is text
                cut = partial_start(body, (CLOSE,))  # a cut closing marker is structure
                got = parse_cut_list(body[:cut])
                if got is None:
                    return None
                calls, rest = got
                return [ParsedCall(n, a, raw) for n, a, raw in calls], body[rest:cut]
            source = body  # the reply ended right after the list: the closing marker is implied
        else:
            return None
        if not source.strip().startswith("[") or not source.rstrip().endswith("]"):
            return None
        listed = parse_call_list(source)
        if not listed:
            return None
        return [ParsedCall(n, a, raw) for n, a, raw in listed], ""

    def call_name(self, raw: str) -> str | None:
        m = _CALL_NAME.search(raw)
        return m.group(1) if m else None

    def grammar_wire(self, ctx):
        return call_list_grammar(opener=OPEN, section=(OPEN + "[", "]" + CLOSE))

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return OPEN + call_list_text(name, arguments) + CLOSE


register(Lfm2Format())
