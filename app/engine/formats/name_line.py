"""The name-line wire: a tool's name alone on a line, then its arguments as one JSON object::

    get_weather
    {"city": "Paris"}

Functionary v3.2 writes it after ``>>>`` (``>>>all`` on its line heads a segment of text);
GLM-4 writes it as a message of its own (spaces may follow the name; a header with no name heads a
message of text). :class:`NameLineFormat` reads it for both, each with its own text header and
its own rule for which names a call may go to.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from app.engine.formats.base import Format, IncompleteCall, JsonStateScanner
from app.engine.formats.jsonscan import loads_repaired

__all__ = ["NameLineFormat", "NameLineScanner"]

_NAME_CHARS = re.compile(r"[\w.\-]")
_MAX_NAME = 256


class NameLineScanner(JsonStateScanner):
    """A region that opens with a name line: the name, spaces after it where ``spaces``, a line
    break, then one JSON object; it ends right after the object, or at the first character that
    does not fit. A name line that is ``text_name`` heads text: the region ends after its line
    break."""

    def __init__(self, text_name: str, *, spaces: bool) -> None:
        super().__init__("name")
        self.text_name = text_name
        self.spaces = spaces
        self.name = ""

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i, n = 0, len(buf)
        while i < n:
            if self.state == "json":  # the region ends right after the object
                j = self.feed_json(self.json, buf, i)
                return (n, False) if j == -1 else (j, True)
            got = self.step(buf, i, final)
            if isinstance(got, tuple):
                return got
            i = got
        return n, False

    def step(self, buf: str, i: int, final: bool) -> int | tuple[int, bool]:
        c = buf[i]
        self.ops += 1
        if self.state == "name":
            if c == "\n" and self.name == self.text_name:
                return i + 1, True  # a text header: the text follows as content
            if c == "\n" and self.name:
                self.state = "pre"
            elif self.spaces and self.name and c in " \t":
                self.state = "gap"
            elif not _NAME_CHARS.match(c) or len(self.name) >= _MAX_NAME:
                return i, True  # not a name line: the region is text
            else:
                self.name += c
            return i + 1
        if c in " \t":
            return i + 1
        if self.state == "gap" and c == "\n":
            self.state = "pre"
            return i + 1
        if self.state == "gap" or c != "{":
            return i, True
        self.state = "json"
        return i


class NameLineFormat(Format):
    """A family whose call is a name line and a JSON object (see the module docstring)."""

    text_name: ClassVar[str] = ""  # the name line that heads text, not a call
    name_spaces: ClassVar[bool] = False  # whether spaces may follow the name on its line
    cut_needs_args: ClassVar[bool] = False  # a cut call is text until its arguments begin

    def region_scanner(self, opener: str) -> NameLineScanner:
        return NameLineScanner(self.text_name, spaces=self.name_spaces)

    def names_tool(self, name: str, tools: list[dict[str, Any]] | None) -> bool:
        """Whether a name line that says ``name`` opens a call."""
        return True

    def name_line(self, body: str, tools: list[dict[str, Any]] | None) -> re.Match[str] | None:
        """The name line ``body`` opens with, where it opens a call (up to its arguments)."""
        m = (_SPACED if self.name_spaces else _TIGHT).match(body)
        if m is None or m.group(1) == self.text_name or not self.names_tool(m.group(1), tools):
            return None
        return m

    def read_call(
        self, body: str, *, at_end: bool, truncated: bool, tools: list[dict[str, Any]] | None
    ) -> tuple[str, dict[str, Any]] | None:
        """The call a region's ``body`` holds (its name and arguments), or None: text."""
        m = self.name_line(body, tools)
        if m is None:
            return None
        raw_args = body[m.end() :]
        if not raw_args.rstrip().endswith("}") or (at_end and truncated):
            return None
        ok, args = loads_repaired(raw_args.strip())
        return (m.group(1), args) if ok and isinstance(args, dict) else None

    def cut_call(self, opener, body, tools):
        """A region cut by the token limit is an incomplete call once its name line opens a call
        and, where :attr:`cut_needs_args`, its arguments have begun; before that it is text."""
        m = self.name_line(body, tools)
        if m is None or (self.cut_needs_args and not body.startswith("{", m.end())):
            return None
        return IncompleteCall(opener + body, m.group(1), "truncated")


_TIGHT = re.compile(r"([\w.\-]+)\n[ \t]*")
_SPACED = re.compile(r"([\w.\-]+)[ \t]*\n[ \t]*")
