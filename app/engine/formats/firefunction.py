"""FireFunction v2 calls (Fireworks llama-3-firefunction-v2).

`` functools[{"name": NAME, "arguments": {...}}, ...]``: the word ``functools`` (the space the
template writes before it is structure too) and, right after it, one JSON list of calls (no
closing marker), after any text. Each item holds exactly ``name``
and ``arguments`` (an object, or a JSON string holding one). The template takes the tools as
its own ``functions`` variable (a JSON string), not ``tools``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from app.engine.formats.base import Format, RegionScanner, register
from app.engine.formats.json_list import element_reader, parse_json_list
from app.engine.formats.jsonscan import JsonScanner
from app.engine.formats.sections import json_text

__all__ = ["FirefunctionFormat"]

_READ = element_reader("name", "arguments")
OPEN = "functools["
SPACED = " " + OPEN  # the template writes a space before the marker: structure too


class _ListRest(RegionScanner):
    """From just after the list's ``[`` to its matching ``]``, JSON-aware."""

    def __init__(self) -> None:
        self.json = JsonScanner()
        self.json.feed("[")
        self.ops = 0

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        j = self.feed_json(self.json, buf)
        return (len(buf), False) if j == -1 else (j, True)


class FirefunctionFormat(Format):
    name = "firefunction"
    label = "FireFunction v2 (Fireworks firefunction-v2)"
    openers = (SPACED, OPEN)

    def region_scanner(self, opener: str) -> RegionScanner:
        return _ListRest()

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        # The region ends right after the list's "]": nothing follows it here (a cut list keeps its
        # complete calls; a list the reply left open is text).
        return parse_json_list("[" + body, "", at_end=at_end, truncated=truncated, read_element=_READ)

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import json_array

        return partial(json_array, open=SPACED[:-1])

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return SPACED[:-1] + json_text([{"name": name, "arguments": dict(arguments)}])


register(FirefunctionFormat())
