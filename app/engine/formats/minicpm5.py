"""OpenBMB MiniCPM5 calls, as its template renders them::

    <function name="NAME"><param name="K">V</param>...</function>

Any number of calls, each its own element, anywhere in the reply (the template puts them after
the text, or where the text holds a ``<tool_sep>``). A value is raw text typed by the tool's
schema (the template writes non-strings as Python literals, ``True``, ``['a', 'b']``); a value
holding ``<``, ``&`` or a newline is wrapped in ``<![CDATA[...]]>``, whose contents are the value
exactly (a ``</function>`` inside it does not end the call). Reasoning is a
``<think>...</think>`` block.
"""

from __future__ import annotations

import json
import re

from app.engine.formats.base import Format, ParsedCall, RegionScanner, find_marker, register
from app.engine.formats.sections import skip_ws

__all__ = ["MiniCpm5Format"]

OPEN = '<function name="'
CLOSE = "</function>"
P_OPEN = '<param name="'
P_CLOSE = "</param>"
CDATA_OPEN = "<![CDATA["
CDATA_CLOSE = "]]>"
_NAME = re.compile(r'[A-Za-z_][\w.\-:/]*(?=">)')


def _whole_name(name: str) -> bool:
    """Whether ``name`` is a tool name this wire can write (all of it reads as the name)."""
    m = _NAME.match(name + '">')
    return m is not None and m.end() == len(name)


_KEY = re.compile(r'[^"<>\s]+(?=">)')


class _Scanner(RegionScanner):
    """Up to ``</function>``, skipping over the contents of CDATA sections."""

    def __init__(self) -> None:
        self.in_cdata = False
        self.ops = 0

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i = 0
        while True:
            markers = (CDATA_CLOSE,) if self.in_cdata else (CDATA_OPEN, CLOSE)
            pos, m, safe = find_marker(buf, markers, final, start=i)
            self.ops += (pos + len(m) - i) if pos != -1 else len(buf) - i
            if pos == -1:
                return safe, False
            i = pos + len(m)
            if m == CLOSE:
                return i, True
            self.in_cdata = m == CDATA_OPEN


def _parse(body: str) -> tuple[str, dict[str, str]] | None:
    """Strictly read ``NAME"> (<param name="K">V</param>)* </function>`` (``body`` after the opener)."""
    m = _NAME.match(body)
    if m is None:
        return None
    name = m.group(0)
    i = m.end() + 2
    args: dict[str, str] = {}
    while True:
        i = skip_ws(body, i)
        if body.startswith(CLOSE, i):
            return (name, args) if i + len(CLOSE) == len(body) else None
        if not body.startswith(P_OPEN, i):
            return None
        k = _KEY.match(body, i + len(P_OPEN))
        if k is None or k.group(0) in args:
            return None
        i = k.end() + 2
        if body.startswith(CDATA_OPEN, i):
            end = body.find(CDATA_CLOSE, i + len(CDATA_OPEN))
            if end == -1 or not body.startswith(P_CLOSE, end + len(CDATA_CLOSE)):
                return None
            value = body[i + len(CDATA_OPEN) : end]
            i = end + len(CDATA_CLOSE) + len(P_CLOSE)
        else:
            end = body.find(P_CLOSE, i)
            if end == -1:
                return None
            value = body[i:end]
            if "<" in value:
                return None  # markup in a value is written as CDATA
            i = end + len(P_CLOSE)
        args[k.group(0)] = value


def _value(v: object) -> str:
    text = v if isinstance(v, str) else json.dumps(v, ensure_ascii=False)
    if isinstance(v, str) and any(c in text for c in "<&\n"):
        if CDATA_CLOSE in text:
            raise ValueError("a MiniCPM5 value cannot hold ']]>' together with markup")
        return CDATA_OPEN + text + CDATA_CLOSE
    return text


class MiniCpm5Format(Format):
    name = "minicpm5"
    label = "MiniCPM5 XML (OpenBMB MiniCPM5)"
    detail = '<function name="NAME"><param name="K">V</param></function>'
    openers = (OPEN,)
    start_only = False
    reasoning = ("<think>", "</think>")
    raw_values = True

    def region_scanner(self, opener: str) -> RegionScanner:
        return _Scanner()

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if not body.endswith(CLOSE):
            return None
        got = _parse(body)
        if got is None:
            return None
        name, args = got
        return [ParsedCall(name, dict(args), opener + body)], ""

    def constraint_grammar(self, tools, *, forced, parallel, ctx):
        from app.engine.constraints.wires import NO_MARKUP, raw_params, typed

        return raw_params(
            ctx,
            self,
            tools,
            forced,
            parallel,
            opener=OPEN,
            head=lambda n: f'{OPEN}{n}">',
            tail=CLOSE,
            param=lambda c, k, s, w: (
                f"{c.lit(P_OPEN + k + chr(34) + '>')} {typed(c, s, P_CLOSE, w, text_rx=NO_MARKUP)}"
            ),
            name_ok=lambda n: _whole_name(n),
            key_ok=lambda k: bool(k) and not set(k) & set('"<>& \t\n'),
        )

    def example_call(self, name: str, arguments: dict) -> str:
        params = "".join(f'{P_OPEN}{k}">{_value(v)}{P_CLOSE}' for k, v in arguments.items())
        return f'{OPEN}{name}">{params}{CLOSE}'


register(MiniCpm5Format())
