"""Functionary v3.2 calls (MeetKai functionary-medium/small v3.2).

A reply is a sequence of segments, each opened by ``>>>`` and a recipient line: ``>>>all\\n`` is
followed by text for the user, ``>>>NAME\\n`` by the call's JSON arguments (one object)::

    >>>all\\nLet me check.>>>get_weather\\n{"city": "Paris"}>>>get_time\\n{}

The generation prompt already ends with ``>>>``, so the reply's first segment starts right at
its recipient (``all\\n...`` or ``NAME\\n{...}``); a reply that writes the ``>>>`` itself reads
the same. The ``>>>all\\n`` headers are structure, not content. A recipient line that is not a
name, a name not followed by a JSON object, or ``>>>`` in prose (``>>> print(1)``) is text.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any

from app.engine.formats.base import Format, IncompleteCall, JsonStateScanner, ParsedCall, Stream, register
from app.engine.formats.jsonscan import loads_repaired
from app.engine.formats.sections import json_text

__all__ = ["FunctionaryV32Format"]

SEP = ">>>"
TEXT_RECIPIENT = "all"
_NAME = re.compile(r"[A-Za-z_][\w.\-]*")
_NAME_CHARS = re.compile(r"[\w.\-]")
_MAX_NAME = 256
_CALLSTART = "callstart"


class _SegmentScanner(JsonStateScanner):
    """``NAME\\n`` then, unless NAME is ``all``, one JSON object; ends right after it (or at a fault)."""

    def __init__(self) -> None:
        super().__init__("name")
        self.name: list[str] = []

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i, n = 0, len(buf)
        while i < n:
            if self.state == "name":
                c = buf[i]
                self.ops += 1
                if c == "\n" and self.name:
                    i += 1
                    if "".join(self.name) == TEXT_RECIPIENT:
                        return i, True  # a text segment's header: the text follows as content
                    self.state = "pre"
                    continue
                if not _NAME_CHARS.match(c) or len(self.name) >= _MAX_NAME:
                    return i, True  # not a recipient line: the region is text
                self.name.append(c)
                i += 1
                continue
            if self.state == "pre":
                self.ops += 1
                if buf[i] in " \t":
                    i += 1
                    continue
                if buf[i] != "{":
                    return i, True
                self.state = "json"
            j = self.feed_json(self.json, buf, i)
            if j == -1:
                return n, False
            return j, True
        return n, False


class _SegmentStream(Stream):
    """The shared machine, whose reply opens inside a segment (the prompt ended with ``>>>``)."""

    def _after_reasoning(self) -> str:
        return _CALLSTART

    def _step_callstart(self, final: bool, truncated: bool) -> bool:
        buf = self._buf
        self.ops += 1
        if not final and len(buf) < len(SEP) and SEP.startswith(buf):
            return False  # may still be the reply's own ">>>"
        self._open_region(SEP if buf.startswith(SEP) else "")
        return True


class FunctionaryV32Format(Format):
    name = "functionary-v3.2"
    label = "Functionary v3.2 (MeetKai functionary v3.2)"
    openers = (SEP,)

    stream_class = _SegmentStream

    def region_scanner(self, opener: str) -> _SegmentScanner:
        return _SegmentScanner()

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if body == TEXT_RECIPIENT + "\n":
            return [], ""  # the header of a text segment is structure
        m = _NAME.match(body)
        if m is None or not body.startswith("\n", m.end()) or m.group() == TEXT_RECIPIENT:
            return None
        raw_args = body[m.end() + 1 :]
        if not raw_args.rstrip().endswith("}") or (at_end and truncated):
            return None
        ok, args = loads_repaired(raw_args.strip())
        if not ok or not isinstance(args, dict):
            return None
        return [ParsedCall(m.group(), args, opener + body)], ""

    def cut_call(self, opener, body, tools):
        """A cut segment is an incomplete call only once its recipient line names a tool; a
        reply cut before that (``Hello``) is text."""
        m = _NAME.match(body)
        if m is None or not body.startswith("\n", m.end()) or m.group() == TEXT_RECIPIENT:
            return None
        return IncompleteCall(opener + body, m.group(), "truncated")

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import json_section

        return partial(json_section, section=None, opener=SEP, head=lambda n: f"{SEP}{n}\n", tail="")

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return f"{SEP}{name}\n{json_text(dict(arguments))}"


register(FunctionaryV32Format())
