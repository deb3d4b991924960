"""Pythonic calls (Llama 4, Llama 3.2 pythonic templates and similar): ``[f(a=1, b='x'), g()]``.

The reply opens with a Python list of calls (after optional whitespace), or the list stands
inside ``<|python_start|>...<|python_end|>`` anywhere in the reply (Llama 4 writes these as
special tokens, so they are unambiguous). Arguments are keyword arguments whose values are
Python literals (strings with escapes, numbers, ``True``/``False``/``None``, nested lists,
tuples and dicts; JSON's ``true``/``false``/``null`` are accepted too): they become JSON values.
The text is read with :func:`ast.parse` and a whitelist of literal nodes, never evaluated. A
bracketed text that is not a list of calls (``[1, 2]``, ``[see docs](url)``) stays text, and so
does a list opening anywhere but the start without ``<|python_start|>``.

The list is one unit: a reply cut at max_tokens (``truncated``) before the list closed has no
call, the cut list is one incomplete call (raw text kept, named after the call being written).
The list machinery (scanner, literal reader, writer) is shared with LFM2 in ``pycalls.py``.
"""

from __future__ import annotations

from typing import Any

from app.engine.formats.base import Format, ParsedCall, RegionScanner, register
from app.engine.formats.pycalls import (
    CALL_NAME,
    PyListScanner,
    call_list_grammar,
    call_list_text,
    parse_call_list,
    parse_cut_list,
    top_level_items,
)

__all__ = ["PythonicFormat"]

PY_START = "<|python_start|>"
PY_END = "<|python_end|>"
LIST_OPEN = "["  # a call list's bracket: it opens a call at the start of the reply


class PythonicFormat(Format):
    name = "pythonic"
    label = "Pythonic (Llama 4)"
    openers = (PY_START, LIST_OPEN)
    start_only = True
    anywhere = (PY_START,)

    def region_scanner(self, opener: str) -> RegionScanner:
        return PyListScanner(PY_END if opener == PY_START else None, bracket=LIST_OPEN)

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if at_end and truncated:
            # Cut at max_tokens: the list is one unit, so a list cut before its close is no call
            # (the stream reports it as an incomplete call); a closed list's calls count.
            source = body if opener == PY_START else opener + body
            items = top_level_items(source)
            if items is None or items[1] == -1:
                return None
            got = parse_cut_list(source)
            if got is None:
                return None
            calls, rest = got
            return [ParsedCall(name, args, raw) for name, args, raw in calls], source[rest:]
        if opener == PY_START:
            if body.endswith(PY_END):
                source = body[: -len(PY_END)]
            elif at_end and not truncated:
                source = body  # generation stopped at its end-of-message token
            else:
                return None
        else:
            if at_end and not body.rstrip().endswith("]"):
                return None
            source = opener + body
        listed = parse_call_list(source)
        if not listed:
            return None
        return [ParsedCall(name, args, raw) for name, args, raw in listed], ""

    def grammar_wire(self, ctx):
        return call_list_grammar(opener="[", section=("[", "]"))

    def call_name(self, raw: str) -> str | None:
        # The call being written when the list was cut: the list's last item.
        source = raw[len(PY_START) :] if raw.startswith(PY_START) else raw
        items = top_level_items(source)
        if not items or not items[0]:
            return None
        a, b = items[0][-1]
        m = CALL_NAME.match(source, a, b)
        return m.group(1) if m else None

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return call_list_text(name, arguments)


register(PythonicFormat())
