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

from app.engine.formats.base import ParsedCall, Stream, register
from app.engine.formats.name_line import NameLineFormat
from app.engine.formats.sections import json_text

__all__ = ["FunctionaryV32Format"]

SEP = ">>>"
TEXT_RECIPIENT = "all"
_NAME = re.compile(r"[A-Za-z_][\w.\-]*")
_CALLSTART = "callstart"


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


class FunctionaryV32Format(NameLineFormat):
    name = "functionary-v3.2"
    label = "Functionary v3.2 (MeetKai functionary v3.2)"
    openers = (SEP,)
    text_name = TEXT_RECIPIENT

    stream_class = _SegmentStream

    def names_tool(self, name: str, tools: list[dict[str, Any]] | None) -> bool:
        """A recipient line that is a name (a letter or ``_`` first) opens a call; a segment cut
        after it is an incomplete call, one cut before it (``Hello``) text."""
        return _NAME.fullmatch(name) is not None

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if body == TEXT_RECIPIENT + "\n":
            return [], ""  # the header of a text segment is structure
        call = self.read_call(body, at_end=at_end, truncated=truncated, tools=tools)
        return None if call is None else ([ParsedCall(call[0], call[1], opener + body)], "")

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import json_section

        return partial(json_section, section=None, opener=SEP, head=lambda n: f"{SEP}{n}\n", tail="")

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return f"{SEP}{name}\n{json_text(dict(arguments))}"


register(FunctionaryV32Format())
