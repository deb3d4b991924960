"""Functionary v3.1 calls (MeetKai functionary-medium/small v3.1, Llama 3.1 based).

``<function=NAME>{"k": v}</function>`` anywhere in the reply, any number in a row, and
``<|python_tag|>CODE`` for the built-in code interpreter (a call of ``python`` with
``{"code": CODE}``, up to ``<|eom_id|>`` or the end of the reply). The arguments are one JSON
object; ``</function>`` is required unless the reply ended normally right after the JSON. The
``<|eom_id|>`` the template writes after a call turn is structure (the runtime usually stops at
it). A ``<|python_tag|>`` followed by JSON is Llama 3.1's JSON call, not code: text here.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any

from app.engine.formats.base import Format, JsonStateScanner, ParsedCall, RegionScanner, find_marker, register
from app.engine.formats.jsonscan import loads_repaired
from app.engine.formats.sections import json_text

__all__ = ["FunctionaryV31Format"]

OPEN = "<function="
CLOSE = "</function>"
PY_TAG = "<|python_tag|>"
EOM = "<|eom_id|>"
PYTHON = "python"
_NAME = re.compile(r"[A-Za-z_][\w.\-]*")
_NAME_CHARS = re.compile(r"[\w.\-]")
_MAX_NAME = 256


class _FunctionScanner(JsonStateScanner):
    """``NAME>`` ``{json}`` ``</function>`` [``<|eom_id|>``]; stops early at a fault."""

    after_json = "close"

    def __init__(self) -> None:
        super().__init__("name")
        self.name_len = 0

    def _marker(self, buf: str, i: int, marker: str, final: bool) -> int | None:
        """``len(marker)`` if ``marker`` stands at ``i``, 0 if not, None while undecided."""
        rest = buf[i : i + len(marker)]
        self.ops += 1
        if rest == marker:
            return len(marker)
        if not final and len(rest) < len(marker) and marker.startswith(rest):
            return None
        return 0

    def step(self, buf: str, i: int, final: bool) -> int | tuple[int, bool]:
        st = self.state
        if st == "name":
            c = buf[i]
            self.ops += 1
            if c == ">" and self.name_len:
                self.state = "pre"
                return i + 1
            if not _NAME_CHARS.match(c) or self.name_len >= _MAX_NAME:
                return i, True  # not a call: the region ends (and reads as text)
            self.name_len += 1
            return i + 1
        if st == "pre":
            self.ops += 1
            j = self.value_start(buf, i)
            return (i, True) if j is None else j
        marker = CLOSE if st == "close" else EOM  # after the JSON: its close, then an optional EOM
        got = self._marker(buf, i, marker, final)
        if got is None:
            return i, False
        if not got:
            return i, True
        if st == "close":
            self.state = "eom"
            return i + got
        return i + got, True


class _PythonScanner(RegionScanner):
    """Code up to ``<|eom_id|>`` (included) or the end of the reply."""

    def __init__(self) -> None:
        self.ops = 0

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        pos, _m, safe = find_marker(buf, (EOM,), final)
        self.ops += (pos + len(EOM)) if pos != -1 else len(buf)
        if pos != -1:
            return pos + len(EOM), True
        return (len(buf) if final else safe), False


class FunctionaryV31Format(Format):
    name = "functionary-v3.1"
    label = "Functionary v3.1 (MeetKai functionary v3.1)"
    openers = (OPEN, PY_TAG)

    def region_scanner(self, opener: str) -> RegionScanner:
        return _PythonScanner() if opener == PY_TAG else _FunctionScanner()

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if opener == PY_TAG:
            closed = body.endswith(EOM)
            code = body[: -len(EOM)] if closed else body
            if not closed and truncated:
                return None  # cut inside the code
            if not code.strip() or code.lstrip().startswith(("{", "[")):
                return None  # no code, or JSON (Llama 3.1's call shape): text
            return [ParsedCall(PYTHON, {"code": code}, opener + code)], ""
        m = _NAME.match(body)
        if m is None or not body.startswith(">", m.end()):
            return None
        if body.endswith(EOM):
            body = body[: -len(EOM)]  # structure: not part of the call's text
        rest = body[m.end() + 1 :]
        if rest.endswith(CLOSE):
            rest = rest[: -len(CLOSE)]
        elif not (at_end and not truncated):
            return None
        ok, args = loads_repaired(rest.strip())
        if not ok or not isinstance(args, dict):
            return None
        return [ParsedCall(m.group(), args, opener + body)], ""

    def call_name(self, raw: str) -> str | None:
        if raw.startswith(PY_TAG):
            return PYTHON
        m = _NAME.match(raw, len(OPEN)) if raw.startswith(OPEN) else None
        return m.group() if m and raw.startswith(">", m.end()) else None

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import json_section

        return partial(json_section, section=None, opener=OPEN, head=lambda n: f"{OPEN}{n}>", tail=CLOSE)

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return f"{OPEN}{name}>{json_text(dict(arguments))}{CLOSE}"


register(FunctionaryV31Format())
