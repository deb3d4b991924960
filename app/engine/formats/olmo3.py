"""AllenAI OLMo 3 calls: ``<function_calls>\\nNAME(k='v', ...)\\nNAME2(...)\\n</function_calls>``.

One block holds Python calls with keyword arguments, one per line, read by the pythonic families'
literal-only reader (:mod:`app.engine.formats.pycalls`, never evaluated): strings as Python
literals, ``true`` / ``false`` / ``null`` as the template writes them or ``True`` / ``False`` /
``None``, objects as JSON or Python dicts. A closing tag inside a string does not end the block.
Reasoning in ``<think>...</think>`` (OLMo 3 Think). A block the reply left open is calls only when
the reply ended normally right after a call; a block the token limit cut is an incomplete call.
"""

from __future__ import annotations

import ast
from typing import Any

from app.engine.formats.base import THINK, Format, ParsedCall, RegionScanner, register
from app.engine.formats.pycalls import (
    PyListScanner,
    SourceSegments,
    call_list_grammar,
    call_text,
    first_call_name,
    parse_call_list,
)
from app.engine.formats.sections import closed_body

__all__ = ["Olmo3Format"]

OPEN = "<function_calls>"
CLOSE = "</function_calls>"
_MAX_SOURCE = 200_000


def _read_lines(source: str) -> list[ParsedCall] | None:
    """The calls of a block: Python expression statements, each a call on lines of its own."""
    src = source.strip()
    if not src or len(src) > _MAX_SOURCE:
        return None
    try:
        tree = ast.parse(src, filename="<model reply>", mode="exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    calls: list[ParsedCall] = []
    last_line = 0
    segments = SourceSegments(src)  # (ast.get_source_segment per call: quadratic in the calls)
    for stmt in tree.body:
        if not isinstance(stmt, ast.Expr) or not isinstance(stmt.value, ast.Call) or stmt.lineno <= last_line:
            return None  # not a call, or two on one line (";")
        last_line = stmt.end_lineno or stmt.lineno
        text = segments.segment(stmt.value)
        got = parse_call_list(text) if text else None
        if not got or len(got) != 1:
            return None
        name, args, raw = got[0]
        calls.append(ParsedCall(name, args, raw))
    return calls or None


class Olmo3Format(Format):
    """Python calls, one per line, in one ``<function_calls>`` block (``close`` ends it; a reply
    that ended normally right after one of ``last`` implies it)."""

    close = CLOSE
    last: tuple[str, ...] = (")",)

    def calls_source(self, inner: str) -> str | None:
        """The calls' source in a region's body (None: the body holds no calls)."""
        return inner

    def region_scanner(self, opener: str) -> RegionScanner:
        return PyListScanner(closer=self.close, bracket="")  # strings aware; no list opens inside

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        inner = closed_body(body, self.close, last=self.last, at_end=at_end, truncated=truncated)
        src = None if inner is None else self.calls_source(inner)
        calls = None if src is None else _read_lines(src)
        return None if calls is None else (calls, "")

    def call_name(self, raw: str) -> str | None:
        return first_call_name(raw)

    def grammar_wire(self, ctx):
        return call_list_grammar(opener=OPEN, section=(OPEN + "\n", "\n" + CLOSE), sep="\n")

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return f"{OPEN}\n{call_text(name, arguments)}\n{CLOSE}"


register(
    Olmo3Format("olmo3", "OLMo 3 function calls (AllenAI OLMo 3 Instruct, Think)", (OPEN,), reasoning=THINK)
)
