"""Gemma 4 calls: ``<|tool_call>call:NAME{k:v,...}<tool_call|>``.

Values use Gemma's own notation: strings between ``<|"|>`` delimiters (no escapes: everything
between the delimiters is the string), numbers, ``true``/``false``/``null`` (the official
template writes Python's ``None`` for null, accepted too), nested ``{...}`` objects and
``[...]`` arrays. Keys are bare (they may hold spaces) or ``<|"|>``-delimited. Any number of
calls may appear, with text around them. Reasoning is a ``<|channel>thought ...<channel|>``
block. A ``<tool_call|>`` inside a string does not end the call. Gemma 4 sometimes drops the
``call`` word (``<|tool_call>:NAME{...}<tool_call|>``): read the same, the rest as strictly.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any

from app.calls import WIRE_NAME
from app.engine.formats.base import Format, RegionScanner, one_call, register
from app.engine.formats.sections import first_marker

__all__ = ["Gemma4Format", "parse_gemma_call", "parse_gemma_value", "write_gemma_value"]

OPEN = "<|tool_call>"
CLOSE = "<tool_call|>"
RESPONSE = "<|tool_response>"  # what Gemma 4 writes after its calls (its tool-turn stop token)
QUOTE = '<|"|>'
_NAME = re.compile(WIRE_NAME)
_NUMBER = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_LITERALS = {"true": True, "false": False, "null": None, "True": True, "False": False, "None": None}
_MAX_DEPTH = 64
_CUT_NAME = re.compile(re.escape(OPEN) + r"\s*(?:call)?:(" + WIRE_NAME + ")")  # a cut call's name


class _Scanner(RegionScanner):
    """Up to ``<tool_call|>`` (and a ``<|tool_response>`` right after it), skipping over
    ``<|"|>...<|"|>`` strings."""

    def __init__(self) -> None:
        self.in_str = False
        self.closed = False
        self.ops = 0

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i = 0
        while True:
            if self.closed:
                self.ops += 1
                if buf.startswith(RESPONSE, i):
                    return i + len(RESPONSE), True
                if (
                    not final
                    and RESPONSE.startswith(buf[i : i + len(RESPONSE)])
                    and len(buf) - i < len(RESPONSE)
                ):
                    return i, False
                return i, True
            markers = (QUOTE,) if self.in_str else (QUOTE, CLOSE)
            pos, m, safe = first_marker(buf, markers, i, final)
            # the search examines the text up to the nearest marker (or the whole buffer)
            self.ops += (pos + len(m) - i) if pos != -1 else len(buf) - i
            if pos == -1:
                return safe, False
            i = pos + len(m)
            if m == CLOSE:
                self.closed = True
                continue
            self.in_str = not self.in_str


class _Bad(Exception):
    pass


class _Reader:
    def __init__(self, text: str):
        self.s = text
        self.i = 0

    def ws(self) -> None:
        s, i = self.s, self.i
        while i < len(s) and s[i].isspace():
            i += 1
        self.i = i

    def string(self) -> str:
        start = self.i + len(QUOTE)
        end = self.s.find(QUOTE, start)
        if end == -1:
            raise _Bad("unterminated string")
        self.i = end + len(QUOTE)
        return self.s[start:end]

    def key(self) -> str:
        self.ws()
        if self.s.startswith(QUOTE, self.i):
            k = self.string()
        else:
            j = self.i
            while j < len(self.s) and self.s[j] not in ":{}[],<>\"'\n":
                j += 1
            k = self.s[self.i : j].strip()
            if not k:
                raise _Bad("empty key")
            self.i = j
        self.ws()
        if not self.s.startswith(":", self.i):
            raise _Bad("key without ':'")
        self.i += 1
        return k

    def value(self, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise _Bad("nested too deep")
        self.ws()
        s, i = self.s, self.i
        if s.startswith(QUOTE, i):
            return self.string()
        if i >= len(s):
            raise _Bad("missing value")
        c = s[i]
        if c == "{":
            return self.obj(depth + 1)
        if c == "[":
            self.i += 1
            out: list[Any] = []
            self.ws()
            if s.startswith("]", self.i):
                self.i += 1
                return out
            while True:
                out.append(self.value(depth + 1))
                self.ws()
                if s.startswith(",", self.i):
                    self.i += 1
                    continue
                if s.startswith("]", self.i):
                    self.i += 1
                    return out
                raise _Bad("bad array")
        j = i
        while j < len(s) and s[j] not in ",}]" and not s[j].isspace():
            j += 1
        tok = s[i:j]
        self.i = j
        if tok in _LITERALS:
            return _LITERALS[tok]
        if _NUMBER.fullmatch(tok):
            return float(tok) if any(ch in tok for ch in ".eE") else int(tok)
        raise _Bad(f"bad token {tok!r}")

    def obj(self, depth: int) -> dict[str, Any]:
        if not self.s.startswith("{", self.i):
            raise _Bad("expected '{'")
        self.i += 1
        out: dict[str, Any] = {}
        self.ws()
        if self.s.startswith("}", self.i):
            self.i += 1
            return out
        while True:
            k = self.key()
            if k in out:
                raise _Bad("duplicate key")
            out[k] = self.value(depth + 1)
            self.ws()
            if self.s.startswith(",", self.i):
                self.i += 1
                continue
            if self.s.startswith("}", self.i):
                self.i += 1
                return out
            raise _Bad("bad object")


def write_gemma_value(value: Any) -> str:
    """``value`` in Gemma's notation (strings between ``<|"|>``), as the model writes it."""
    if isinstance(value, str):
        return QUOTE + value + QUOTE
    if isinstance(value, bool) or value is None:
        return "true" if value is True else "false" if value is False else "null"
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, dict):
        return "{" + ",".join(f"{k}:{write_gemma_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(write_gemma_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} in Gemma's notation")


def parse_gemma_value(text: str) -> tuple[bool, Any]:
    """Read one whole Gemma-notation value. Returns (ok, value)."""
    r = _Reader(text)
    try:
        v = r.value(0)
        r.ws()
    except _Bad:
        return False, None
    return (True, v) if r.i == len(text) else (False, None)


def parse_gemma_call(inner: str, *, bare: bool = False) -> tuple[str, dict[str, Any]] | None:
    """Strictly read ``call:NAME{...}`` (whitespace around allowed); with ``bare``, also
    ``:NAME{...}`` (the ``call`` word dropped, as Gemma 4 sometimes writes it)."""
    s = inner.strip()
    lead = "call:" if s.startswith("call:") else ":" if bare and s.startswith(":") else None
    if lead is None:
        return None
    m = _NAME.match(s, len(lead))
    if m is None:
        return None
    r = _Reader(s)
    r.i = m.end()
    try:
        args = r.obj(0)
    except _Bad:
        return None
    r.ws()
    if r.i != len(s):
        return None
    return m.group(0), args


class Gemma4Format(Format):
    name = "gemma4"
    label = "Gemma 4"
    openers = (OPEN,)
    reasoning = ("<|channel>thought", "<channel|>")

    def region_scanner(self, opener: str) -> RegionScanner:
        return _Scanner()

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        inner = body[: -len(RESPONSE)] if body.endswith(CLOSE + RESPONSE) else body
        if not inner.endswith(CLOSE):
            return None
        # the stop marker is not the call's
        return one_call(opener, inner, parse_gemma_call(inner[: -len(CLOSE)], bare=True))

    def call_name(self, raw: str) -> str | None:
        m = _CUT_NAME.match(raw)
        return m.group(1) if m else super().call_name(raw)

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import GEMMA, notation_call

        return partial(
            notation_call,
            nt=GEMMA,
            head=lambda n: OPEN + "call:" + n,
            tail=CLOSE,
            opener=OPEN,
            name_ok=lambda n: bool(_NAME.fullmatch(n)),
        )

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return f"{OPEN}call:{name}{write_gemma_value(dict(arguments))}{CLOSE}"


register(Gemma4Format())
