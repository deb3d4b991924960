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

from app.engine.formats.base import RegionScanner, one_call, register
from app.engine.formats.sections import SkipValuesScanner
from app.engine.formats.xml_params import XmlParamsFormat, params_text, read_params, tag_name

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


class MiniCpm5Format(XmlParamsFormat):
    name = "minicpm5"
    label = "MiniCPM5 XML (OpenBMB MiniCPM5)"
    openers = (OPEN,)
    tail = CLOSE
    param_close = P_CLOSE
    param_after = ""
    markup_free = True

    def region_scanner(self, opener: str) -> RegionScanner:
        return SkipValuesScanner(CLOSE, CDATA_OPEN, CDATA_CLOSE)  # a CDATA section may hold the close

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if not body.endswith(CLOSE):
            return None
        return one_call(opener, body, _parse(body))

    def head(self, name: str) -> str:
        return f"{OPEN}{name}{KEY_END}"

    def param_head(self, key: str) -> str:
        return P_OPEN + key + KEY_END

    def name_ok(self, name: str) -> bool:
        return _whole_name(name)

    def key_ok(self, key: str) -> bool:
        return bool(key) and not set(key) & set('"<>& \t\n')

    def example_call(self, name: str, arguments: dict) -> str:
        params = params_text(
            arguments, param=P_OPEN, key_end=KEY_END, param_end=P_CLOSE, sep="", value=_value
        )
        return f"{self.head(name)}{params}{CLOSE}"


register(MiniCpm5Format())
