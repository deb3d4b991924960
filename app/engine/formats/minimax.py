"""MiniMax XML calls (MiniMax-M2, M2.1).

``<minimax:tool_call>\\n<invoke name="NAME">\\n<parameter name="K">V</parameter>\\n</invoke>\\n
</minimax:tool_call>``: one block may hold several ``<invoke>`` elements (parallel calls), after
an optional ``<think>...</think>`` block (the generation prompt opens ``<think>``). Values are raw
text (a string as written, anything else as JSON) typed by the schema; a ``</minimax:tool_call>``
inside a value does not end the block. A missing ``</minimax:tool_call>`` is accepted only when
the reply ended normally right after ``</invoke>``.
"""

from __future__ import annotations

import re
from typing import Any

from app.engine.formats.base import ParsedCall, one_call, register
from app.engine.formats.sections import closed_body, skip_ws
from app.engine.formats.xml_params import XmlParamsFormat, params_text, read_params, tag_name

__all__ = ["MiniMaxFormat", "parse_invokes"]

OPEN = "<minimax:tool_call>"
CLOSE = "</minimax:tool_call>"
I_OPEN = '<invoke name="'
I_CLOSE = "</invoke>"
P_OPEN = '<parameter name="'
P_CLOSE = "</parameter>"
_NAME = re.compile(r'[^"<>\s]+')
KEY_END = '">'  # what ends a name in a tag


def parse_invokes(text: str) -> list[tuple[str, dict[str, str], str]] | None:
    """Strictly read ``(<invoke name="N"> (<parameter name="K">V</parameter>)* </invoke>)+`` with
    whitespace between: (name, raw arguments, the invoke's text) per call, or None. A value is
    exactly as written (the template adds no newline)."""
    calls: list[tuple[str, dict[str, str], str]] = []
    i = skip_ws(text, 0)
    while i < len(text):
        if not text.startswith(I_OPEN, i):
            return None
        start = i
        got = tag_name(text, i + len(I_OPEN), _NAME, KEY_END)
        if got is None:
            return None
        name, i = got
        params = read_params(
            text, i, param=P_OPEN, param_end=P_CLOSE, close=I_CLOSE, key=_NAME, key_end=KEY_END
        )
        if params is None:
            return None
        args, i = params
        calls.append((name, args, text[start:i]))
        i = skip_ws(text, i)
    return calls or None


class MiniMaxFormat(XmlParamsFormat):
    name = "minimax"
    label = "MiniMax XML (MiniMax-M2, M2.1)"
    openers = (OPEN,)
    section = (OPEN + "\n", CLOSE)
    tail = f"{I_CLOSE}\n"
    param_open, param_close = P_OPEN, P_CLOSE

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        inner = closed_body(body, CLOSE, last=I_CLOSE, at_end=at_end, truncated=truncated)
        if inner is None:
            return None
        calls = parse_invokes(inner)
        if calls is None:
            return None
        if len(calls) == 1:
            return one_call(opener, body, calls[0][:2])
        return [ParsedCall(name, dict(args), raw) for name, args, raw in calls], ""

    def head(self, name: str) -> str:
        return f"{I_OPEN}{name}{KEY_END}\n"

    def param_head(self, key: str) -> str:
        return P_OPEN + key + KEY_END

    def name_ok(self, name: str) -> bool:
        return bool(_NAME.fullmatch(name))

    def key_ok(self, key: str) -> bool:
        return self.name_ok(key)

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        params = params_text(arguments, param=P_OPEN, key_end=KEY_END, param_end=P_CLOSE)
        return f"{OPEN}\n{self.head(name)}{params}{I_CLOSE}\n{CLOSE}"


register(MiniMaxFormat())
