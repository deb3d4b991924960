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

from app.engine.formats.base import Format, ParsedCall, RegionScanner, register
from app.engine.formats.sections import SkipValuesScanner
from app.engine.formats.xml_params import params_text, read_params, tag_name

__all__ = ["MiniCpm5Format"]

OPEN = '<function name="'
CLOSE = "</function>"
P_OPEN = '<param name="'
P_CLOSE = "</param>"
CDATA_OPEN = "<![CDATA["
CDATA_CLOSE = "]]>"
CDATA = (CDATA_OPEN, CDATA_CLOSE)
KEY_END = '">'  # what ends a name in a tag
_NAME = re.compile(r'[A-Za-z_][\w.\-:/]*(?=">)')


def _whole_name(name: str) -> bool:
    """Whether ``name`` is a tool name this wire can write (all of it reads as the name)."""
    m = _NAME.match(name + '">')
    return m is not None and m.end() == len(name)


_KEY = re.compile(r'[^"<>\s]+(?=">)')


def _parse(body: str) -> tuple[str, dict[str, str]] | None:
    """Strictly read ``NAME"> (<param name="K">V</param>)* </function>`` (``body`` after the opener)."""
    got = tag_name(body, 0, _NAME, KEY_END)
    if got is None:
        return None
    name, i = got
    params = read_params(
        body, i, param=P_OPEN, param_end=P_CLOSE, close=CLOSE, key=_KEY, key_end=KEY_END, cdata=CDATA
    )
    if params is None:
        return None
    args, i = params
    return (name, args) if i == len(body) else None


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
        return SkipValuesScanner(CLOSE, CDATA_OPEN, CDATA_CLOSE)  # a CDATA section may hold the close

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
        params = params_text(
            arguments, param=P_OPEN, key_end=KEY_END, param_end=P_CLOSE, sep="", value=_value
        )
        return f'{OPEN}{name}">{params}{CLOSE}'


register(MiniCpm5Format())
