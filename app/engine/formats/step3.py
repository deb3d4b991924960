"""StepFun Step-3 calls: one section of StepTML invocations.

``<｜tool_calls_begin｜>\\n<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="NAME">\\n
<steptml:parameter name="K">V</steptml:parameter>\\n</steptml:invoke><｜tool_call_end｜>\\n
<｜tool_calls_end｜>``: the markers use the fullwidth bar ``｜`` and underscores (DeepSeek's use
``▁``); several calls stand one after another in the section, after an optional
``<think>...</think>`` block. Values are raw text (a string as written, anything else as JSON)
typed by the schema; a closing marker inside a value does not end the section. A missing
``<｜tool_calls_end｜>`` is accepted only when the reply ended normally right after a call. No
published chat template was found: a template is known by its rendered call or by the markers it
names (``app.engine.formats.detect``).
"""

from __future__ import annotations

import re
from typing import Any

from app.engine.formats.base import ParsedCall, register
from app.engine.formats.sections import closed_body, skip_ws
from app.engine.formats.xml_params import XmlParamsFormat, params_text, read_params, tag_name

__all__ = ["Step3Format"]

OPEN = "<｜tool_calls_begin｜>"
CLOSE = "<｜tool_calls_end｜>"
CALL_BEGIN = "<｜tool_call_begin｜>"
CALL_END = "<｜tool_call_end｜>"
SEP = "<｜tool_sep｜>"
KIND = "function"
I_OPEN = '<steptml:invoke name="'
I_CLOSE = "</steptml:invoke>"
P_OPEN = '<steptml:parameter name="'
P_CLOSE = "</steptml:parameter>"
KEY_END = '">'
_NAME = re.compile(r'[^"<>\s]+')


def _parse(text: str) -> list[ParsedCall] | None:
    """Strictly read ``(CALL_BEGIN function SEP <invoke> params </invoke> CALL_END)+`` with
    whitespace between the calls."""
    calls: list[ParsedCall] = []
    i = skip_ws(text, 0)
    head = CALL_BEGIN + KIND + SEP + I_OPEN
    while i < len(text):
        if not text.startswith(head, i):
            return None
        start = i
        got = tag_name(text, i + len(head), _NAME, KEY_END)
        if got is None:
            return None
        name, i = got
        params = read_params(
            text, i, param=P_OPEN, param_end=P_CLOSE, close=I_CLOSE, key=_NAME, key_end=KEY_END
        )
        if params is None or not text.startswith(CALL_END, params[1]):
            return None
        args, i = params[0], params[1] + len(CALL_END)
        calls.append(ParsedCall(name, dict(args), text[start:i]))
        i = skip_ws(text, i)
    return calls or None


class Step3Format(XmlParamsFormat):
    name = "step3"
    label = "Step-3 StepTML (StepFun Step-3)"
    openers = (OPEN,)
    section = (OPEN + "\n", CLOSE)
    tail = I_CLOSE + CALL_END + "\n"
    param_open, param_close = P_OPEN, P_CLOSE

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        inner = closed_body(body, CLOSE, last=CALL_END, at_end=at_end, truncated=truncated)
        calls = None if inner is None else _parse(inner)
        return None if calls is None else (calls, "")

    def head(self, name: str) -> str:
        return f"{CALL_BEGIN}{KIND}{SEP}{I_OPEN}{name}{KEY_END}\n"

    def param_head(self, key: str) -> str:
        return P_OPEN + key + KEY_END

    def name_ok(self, name: str) -> bool:
        return bool(_NAME.fullmatch(name))

    def key_ok(self, key: str) -> bool:
        return self.name_ok(key)

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        params = params_text(arguments, param=P_OPEN, key_end=KEY_END, param_end=P_CLOSE)
        return f"{OPEN}\n{self.head(name)}{params}{self.tail}{CLOSE}"


register(Step3Format())
