"""Upstage Solar Open calls, as its template renders them::

    <|tool_calls|><|tool_call:begin|>ID<|tool_call:name|>NAME<|tool_call:args|>{...}<|tool_call:end|>...<|calls|>

Any number of calls in one section; the model's call id is kept. The reply follows the
generation prompt ``<|begin|>assistant`` and is made of messages: reasoning
``<|think|>...<|end|>``, then ``<|begin|>assistant`` and either ``<|content|>text<|end|>`` or a
call section. Those message markers are structure: they are consumed (never content), the text
between them streams as usual. A section not closed by ``<|calls|>`` is a call section only when
the reply ended normally right after a complete call (a runtime that stops on ``<|calls|>``
leaves it out); a reply cut inside it keeps its complete calls, the rest is text.
"""

from __future__ import annotations

import json
import re
from functools import partial

from app.calls import WIRE_NAME
from app.engine.formats.base import Format, MarkerRegion, ParsedCall, RegionScanner, find_marker, register
from app.engine.formats.jsonscan import JsonScanner, loads_repaired
from app.engine.formats.sections import read_run, skip_ws

__all__ = ["SolarFormat"]

OPEN = "<|tool_calls|>"
CLOSE = "<|calls|>"
CALL = "<|tool_call:begin|>"
NAME = "<|tool_call:name|>"
ARGS = "<|tool_call:args|>"
CALL_END = "<|tool_call:end|>"
THINK = "<|think|>"
END = "<|end|>"
CONTENT = "<|content|>"
HEADER = "<|begin|>assistant"
_STRUCTURE = (CONTENT, HEADER, END)
EXAMPLE_ID = "a1b2c3d4e5"  # the template asks for 10 lowercase letters and digits
_ID = re.compile(r"[A-Za-z0-9_\-]*")
_NAME = re.compile(WIRE_NAME)
_CUT_NAME = re.compile(re.escape(NAME) + r"([A-Za-z_][\w.\-:/]*)" + re.escape(ARGS))  # the name of a cut call


class _Scanner(RegionScanner):
    """Up to ``<|calls|>``, reading each call's arguments JSON-aware."""

    def __init__(self) -> None:
        self.state = "markers"
        self.json: JsonScanner | None = None
        self.ops = 0

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i, n = 0, len(buf)
        while True:
            if self.state == "pre":
                while i < n and buf[i].isspace():
                    i += 1
                self.ops += 1
                if i == n:
                    return n, False
                if buf[i] == "{":
                    self.json = JsonScanner()
                    self.state = "json"
                else:
                    self.state = "markers"
                continue
            if self.state == "json":
                assert self.json is not None  # a JSON body is being read
                i = self.json_state(self.json, buf, i, "markers")
                if i == -1:
                    return n, False
                continue
            pos, m, safe = find_marker(buf, (ARGS, CLOSE), final, start=i)
            self.ops += (pos + len(m) - i) if pos != -1 else n - i
            if pos == -1:
                return safe, False
            i = pos + len(m)
            if m == CLOSE:
                return i, True
            self.state = "pre"


def _after(text: str, i: int, marker: str, pattern: re.Pattern[str]) -> tuple[str, int] | None:
    """``marker`` then what ``pattern`` matches, at ``i``: the match and the index after it."""
    m = pattern.match(text, i + len(marker)) if text.startswith(marker, i) else None
    return None if m is None else (m.group(0), m.end())


def _call(text: str, i: int) -> tuple[ParsedCall, int] | None:
    start = i
    got = _after(text, i, CALL, _ID)
    if got is None:
        return None
    cid, i = got
    got = _after(text, i, NAME, _NAME)
    if got is None:
        return None
    name, i = got
    if not text.startswith(ARGS, i):
        return None
    i = skip_ws(text, i + len(ARGS))
    if not text.startswith("{", i):
        return None
    j = JsonScanner().feed(text, i)
    if j == -1:
        return None
    ok, args = loads_repaired(text[i:j])
    if not ok or not isinstance(args, dict):
        return None
    i = skip_ws(text, j)
    if not text.startswith(CALL_END, i):
        return None
    end = i + len(CALL_END)
    return ParsedCall(name, args, text[start:end], id=cid or None), end


class SolarFormat(Format):
    name = "solar"
    label = "Solar Open (Upstage Solar Open 100B)"
    openers = (OPEN, *_STRUCTURE)
    reasoning = (THINK, END)

    def expects_orphan_close(self, template_source: str, prompt: str) -> bool:
        # ``<|end|>`` without ``<|think|>`` ends a message, never reasoning: a plain reply streams at once
        return False

    def region_scanner(self, opener: str) -> RegionScanner:
        return _Scanner() if opener == OPEN else MarkerRegion()  # a message marker: the marker alone

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if opener != OPEN:
            return [], ""  # a message marker: structure, not text
        closed = body.endswith(CLOSE)
        text = body[: -len(CLOSE)] if closed else body
        calls, i, last = read_run(text, _call)
        if not calls:
            return None
        if closed or (at_end and not truncated):
            return (calls, "") if i == len(text) else None
        if at_end and truncated:
            return calls, text[last:]
        return None

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import json_section

        return partial(
            json_section,
            section=(OPEN, CLOSE),
            head=str,
            head_expr=lambda c, n: f"{c.lit(CALL)} /[a-z0-9]{{10}}/ {c.lit(NAME + n + ARGS)}",
            tail=CALL_END,
        )

    def call_name(self, raw: str) -> str | None:
        m = _CUT_NAME.search(raw)
        return m.group(1) if m else None

    def example_call(self, name: str, arguments: dict) -> str:
        args = json.dumps(dict(arguments), ensure_ascii=False)
        return f"{OPEN}{CALL}{EXAMPLE_ID}{NAME}{name}{ARGS}{args}{CALL_END}{CLOSE}"


register(SolarFormat())
