"""K2 Horizon calls (MBZUAI IFM's K2 Horizon, 0.9B to 375B), in their default ``xml`` body::

    <ifm|tool_calls>
    <ifm|tool_call>NAME
    <ifm|arg_key>K</ifm|arg_key>
    <ifm|arg_value>V</ifm|arg_value>
    </ifm|tool_call>
    </ifm|tool_calls>

One group of one or more calls, whitespace between its elements and nothing else in it; a call
without arguments is ``<ifm|tool_call>NAME</ifm|tool_call>``. Values are raw text typed by the
tool's schema (exactly as written: whitespace inside a value is the value's); a marker inside a
value does not end the group. The text before and after the group is the reply's content. A
group not closed in a reply that ended normally is text; a reply cut inside it keeps its
complete calls (the cut one is an incomplete call).

Reasoning is an ``<ifm|think>...</ifm|think>`` block, or ``<ifm|think_fast>`` /
``<ifm|think_faster>`` for medium / low reasoning effort; any of the three closing tags ends a
block (llama.cpp notes the 3.7B ends medium and low effort reasoning with ``</ifm|think>``).
The template opens the block in the generation prompt, so a reply usually starts inside it.

Not read (text): the ``xml_typed`` body (an ``<ifm|arg_type>T</ifm|arg_type>`` between key and
value) and the ``json`` body (``{"name": ..., "arguments": {...}}`` in each call), which the
template writes only when the request's ``chat_template_kwargs.tool_call_format`` asks for them;
vLLM's parser rejects a type tag in the default body too.
"""

from __future__ import annotations

import re
from typing import Any

from app.calls import WIRE_NAME
from app.engine.formats.base import ParsedCall, RegionScanner, register
from app.engine.formats.sections import SkipValuesScanner, run_section, skip_ws
from app.engine.formats.xml_params import ArgPairsFormat, read_arg_pairs

__all__ = ["K2HorizonFormat"]

OPEN, CLOSE = "<ifm|tool_calls>", "</ifm|tool_calls>"
CALL, CALL_END = "<ifm|tool_call>", "</ifm|tool_call>"
KEY = ("<ifm|arg_key>", "</ifm|arg_key>")
VALUE = ("<ifm|arg_value>", "</ifm|arg_value>")
THINK = ("<ifm|think>", "</ifm|think>")
THINK_FAST = ("<ifm|think_fast>", "</ifm|think_fast>")
THINK_FASTER = ("<ifm|think_faster>", "</ifm|think_faster>")

_NAME = re.compile(WIRE_NAME)
_CUT_NAME = re.compile(re.escape(CALL) + r"\s*(" + WIRE_NAME + r")(?=\s|<)")  # the name of a cut call


def _call(text: str, start: int) -> tuple[ParsedCall, int] | None:
    """One ``<ifm|tool_call>NAME pairs</ifm|tool_call>`` at ``text[start]``: the call and the index
    after it."""
    if not text.startswith(CALL, start):
        return None
    m = _NAME.match(text, skip_ws(text, start + len(CALL)))
    if m is None:
        return None
    got = read_arg_pairs(text, m.end(), key=KEY, value=VALUE, close=CALL_END)
    if got is None:
        return None
    args, end = got
    return ParsedCall(m.group(0), dict(args), text[start:end]), end


class K2HorizonFormat(ArgPairsFormat):
    name = "k2-horizon"
    label = "K2 Horizon arg pairs (MBZUAI IFM K2 Horizon)"
    openers = (OPEN,)
    reasoning = THINK
    reasoning_alt = (THINK_FAST, THINK_FASTER)
    section = (OPEN + "\n", CLOSE)
    tail = f"{CALL_END}\n"
    key_tags, value_tags = KEY, VALUE
    param_close = VALUE[1]

    def region_scanner(self, opener: str) -> RegionScanner:
        return SkipValuesScanner(CLOSE, *VALUE)

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        closed = body.endswith(CLOSE)
        text = body[: -len(CLOSE)] if closed else body
        if not closed and not (at_end and truncated):
            return None  # a group the reply left open is text
        return run_section(text, _call, close=CLOSE, closed=closed)

    def opens_in_reasoning(self, prompt: str) -> bool:
        # The effort picks the tag the generation prompt ends with: any of the three opens a block.
        if not isinstance(prompt, str):
            return False
        end = prompt.rstrip()
        return any(end.endswith(tag) for tag, _close in (THINK, THINK_FAST, THINK_FASTER))

    def head(self, name: str) -> str:
        return f"{CALL}{name}\n"

    def call_name(self, raw: str) -> str | None:
        m = _CUT_NAME.search(raw)
        return m.group(1) if m else None

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return f"{OPEN}\n{self.head(name)}{self.pairs_text(arguments)}{self.tail}{CLOSE}"


register(K2HorizonFormat())
