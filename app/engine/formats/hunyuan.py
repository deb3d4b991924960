"""Tencent Hunyuan (Hy3) calls, as its template renders them (every marker ends in ``:opensource``)::

    <tool_calls:opensource>
    <tool_call:opensource>NAME<tool_sep:opensource>
    <arg_key:opensource>K</arg_key:opensource>
    <arg_value:opensource>V</arg_value:opensource>
    </tool_call:opensource>
    </tool_calls:opensource>

Any number of calls in one section. Values are raw text typed by the tool's schema (the
template writes a string as is and anything else as JSON); a marker inside a value does not end
the call. The end-of-sentence token the template writes right after the section is consumed with
it. Reasoning is a ``<think:opensource>...</think:opensource>`` block. A reply cut inside the
section keeps its complete calls; the rest is text.
"""

from __future__ import annotations

import re

from app.calls import WIRE_NAME
from app.engine.formats.base import ParsedCall, RegionScanner, register
from app.engine.formats.sections import SkipValuesScanner, read_run, skip_ws
from app.engine.formats.xml_params import ArgPairsFormat, read_arg_pairs

__all__ = ["HunyuanFormat"]

_T = ":opensource"
OPEN = f"<tool_calls{_T}>"
CLOSE = f"</tool_calls{_T}>"
CALL = f"<tool_call{_T}>"
CALL_END = f"</tool_call{_T}>"
SEP = f"<tool_sep{_T}>"
K_OPEN, K_CLOSE = f"<arg_key{_T}>", f"</arg_key{_T}>"
V_OPEN, V_CLOSE = f"<arg_value{_T}>", f"</arg_value{_T}>"
KEY, VALUE = (K_OPEN, K_CLOSE), (V_OPEN, V_CLOSE)
EOS = f"<｜hy_eos{_T}｜>"
_NAME = re.compile(WIRE_NAME)
_CUT_NAME = re.compile(
    re.escape(CALL) + r"\s*([A-Za-z_][\w.\-:/]*?)" + re.escape(SEP)
)  # the name of a cut call


class _Scanner(SkipValuesScanner):
    """Up to ``</tool_calls:opensource>``, skipping over the contents of values, and the
    end-of-sentence token right after it."""

    def __init__(self) -> None:
        super().__init__(CLOSE, V_OPEN, V_CLOSE)
        self.post = False

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i = 0
        if not self.post:
            i, ended = super().scan(buf, final)
            if not ended:
                return i, False
            self.post = True
        # After the section: the end token right after it belongs to it; wait while it may.
        self.ops += 1
        if buf.startswith(EOS, i):
            return i + len(EOS), True
        if not final and EOS.startswith(buf[i:]):
            return i, False
        return i, True


def _call(text: str, start: int) -> tuple[ParsedCall, int] | None:
    """One ``<tool_call:opensource>...</tool_call:opensource>`` at ``text[start]``: the call and
    the index after it."""
    if not text.startswith(CALL, start):
        return None
    i = skip_ws(text, start + len(CALL))
    m = _NAME.match(text, i)
    if m is None:
        return None
    i = skip_ws(text, m.end())
    if not text.startswith(SEP, i):
        return None
    got = read_arg_pairs(text, i + len(SEP), key=KEY, value=VALUE, close=CALL_END)
    if got is None:
        return None
    args, end = got
    return ParsedCall(m.group(0), dict(args), text[start:end]), end


class HunyuanFormat(ArgPairsFormat):
    name = "hunyuan"
    label = "Hunyuan XML (Tencent Hy3)"
    openers = (OPEN,)
    reasoning = (f"<think{_T}>", f"</think{_T}>")
    section = (OPEN + "\n", CLOSE)
    tail = f"{CALL_END}\n"
    key_tags, value_tags = KEY, VALUE
    param_close = V_CLOSE

    def region_scanner(self, opener: str) -> RegionScanner:
        return _Scanner()

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        text = body[: -len(EOS)] if body.endswith(EOS) else body
        closed = text.endswith(CLOSE)
        if closed:
            text = text[: -len(CLOSE)]
        elif not (at_end and truncated):
            return None
        calls, i, last = read_run(text, _call)
        if not calls or (closed and i < len(text)):
            return None  # a closed section holds calls only (a cut one keeps its complete calls)
        rest = "" if closed else text[last:]
        if CLOSE.startswith(rest.strip()):
            rest = ""  # cut in the section's closing tag: every call is complete
        return calls, rest

    def head(self, name: str) -> str:
        return f"{CALL}{name}{SEP}\n"

    def call_name(self, raw: str) -> str | None:
        m = _CUT_NAME.search(raw)
        return m.group(1) if m else None

    def example_call(self, name: str, arguments: dict) -> str:
        pairs = self.pairs_text(arguments)
        return f"{OPEN}\n{CALL}{name}{SEP}\n{pairs}{CALL_END}\n{CLOSE}"


register(HunyuanFormat())
