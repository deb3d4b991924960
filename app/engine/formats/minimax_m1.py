"""MiniMax-M1 calls: ``<tool_calls>\\n{"name": NAME, "arguments": {...}}\\n...\\n</tool_calls>``.

One ``<tool_calls>`` block holds the calls as JSON objects, one per line (whitespace between
them), each with ``name`` and ``arguments`` (an object, or a JSON string holding one) and nothing
else; reasoning in ``<think>...</think>``. The block's tag is Apriel's, its content is not a list:
a list there is text to this family, objects are text to Apriel's. A block the reply left open is
a set of calls only when the reply ended normally right after an object; one the token limit cut
keeps its complete calls (the cut object is an incomplete call).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from app.engine.formats.base import THINK, Format, JsonStateScanner, ParsedCall, find_marker, register
from app.engine.formats.json_list import element_reader
from app.engine.formats.jsonscan import JsonScanner, loads_repaired
from app.engine.formats.sections import json_text, skip_ws

__all__ = ["MinimaxM1Format"]

OPEN = "<tool_calls>"
CLOSE = "</tool_calls>"
_READ = element_reader("name", "arguments")


class _ObjectsScanner(JsonStateScanner):
    """``([ws] {json})* [ws] CLOSE``; on anything else, up to the next CLOSE."""

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i, n = 0, len(buf)
        while i < n:
            if self.state == "json":
                j = self.feed_json(self.json, buf, i)
                if j == -1:
                    return n, False
                i, self.state, self.json = j, "pre", JsonScanner()
                continue
            if self.state == "pre":
                self.ops += 1
                nxt = self.value_start(buf, i)
                if nxt is not None:
                    i = nxt  # whitespace skipped, or the object opens here (state json)
                    continue
                if buf.startswith(CLOSE, i):
                    return i + len(CLOSE), True
                if not final and CLOSE.startswith(buf[i:]):
                    return i, False
                self.state = "seek"
            pos, _m, safe = find_marker(buf, (CLOSE,), final, start=i)
            self.ops += (pos + len(CLOSE) - i) if pos != -1 else n - i
            return (pos + len(CLOSE), True) if pos != -1 else (safe, False)
        return n, False


def _parse(body: str, *, at_end: bool, truncated: bool) -> tuple[list[ParsedCall], str] | None:
    calls: list[ParsedCall] = []
    i, n = 0, len(body)
    while True:
        last = i  # the end of the last object (whitespace after it belongs to what follows)
        i = skip_ws(body, i)
        if body.startswith(CLOSE, i) and i + len(CLOSE) == n:
            break  # the block's end
        if at_end and i == n and not truncated and calls:
            break  # the reply ended normally right after an object: the closing tag is implied
        if at_end and truncated and (i == n or CLOSE.startswith(body[i:])):
            break  # cut after an object, or inside the closing tag: every call is complete
        if i < n and body[i] == "{":
            j = JsonScanner().feed(body, i)
            if j != -1:
                ok, obj = loads_repaired(body[i:j])
                got = _READ(obj) if ok else None
                if got is None:
                    return None
                calls.append(ParsedCall(got[0], got[1], body[i:j]))
                i = j
                continue
        if at_end and truncated and calls:
            return calls, body[last:]  # the cut object: an incomplete call
        return None
    return (calls, "") if calls else None


class MinimaxM1Format(Format):
    """JSON call objects, one per line, in one ``<tool_calls>`` block."""

    def region_scanner(self, opener: str) -> _ObjectsScanner:
        return _ObjectsScanner()

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        return _parse(body, at_end=at_end, truncated=truncated)

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import json_section

        return partial(
            json_section,
            section=(OPEN + "\n", CLOSE),
            opener=OPEN,
            head=lambda n: '{"name": ' + json_text(n) + ', "arguments": ',
            tail="}\n",
        )

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return OPEN + "\n" + json_text({"name": name, "arguments": dict(arguments)}) + "\n" + CLOSE


register(
    MinimaxM1Format("minimax-m1", "MiniMax-M1 JSON lines (MiniMax-M1 40k, 80k)", (OPEN,), reasoning=THINK)
)
