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

The ``:opensource`` suffix comes from the tokenizer: a runtime that decodes the markers otherwise
gives them without it (``<tool_calls><tool_call>NAME<tool_sep>...``, ``<think>``,
``<｜hy_eos｜>``). Both spellings are read, one per section (a section opened in one spelling
is read only with that spelling's tags).
"""

from __future__ import annotations

import re
from functools import partial

from app.calls import WIRE_NAME
from app.engine.formats.base import ParsedCall, RegionScanner, register
from app.engine.formats.sections import SkipValuesScanner, run_section, skip_ws
from app.engine.formats.xml_params import ArgPairsFormat, read_arg_pairs

__all__ = ["HunyuanFormat"]

_T = ":opensource"


class _Tags:
    """The markers of one spelling (``suffix``: ``:opensource`` or none)."""

    def __init__(self, suffix: str) -> None:
        def tag(name: str) -> str:
            return f"<{name}{suffix}>"

        def pair(name: str) -> tuple[str, str]:
            return tag(name), tag("/" + name)

        self.open, self.close = pair("tool_calls")
        self.call, self.call_end = pair("tool_call")
        self.sep = tag("tool_sep")
        self.key, self.value, self.think = pair("arg_key"), pair("arg_value"), pair("think")
        self.eos = f"<｜hy_eos{suffix}｜>"


SUFFIXED, PLAIN = _Tags(_T), _Tags("")
SPELLINGS = {t.open: t for t in (SUFFIXED, PLAIN)}  # by section opener
OPEN, CLOSE, CALL, CALL_END, SEP = (
    SUFFIXED.open,
    SUFFIXED.close,
    SUFFIXED.call,
    SUFFIXED.call_end,
    SUFFIXED.sep,
)
KEY, VALUE = SUFFIXED.key, SUFFIXED.value
(K_OPEN, K_CLOSE), (V_OPEN, V_CLOSE) = KEY, VALUE
EOS = SUFFIXED.eos
_NAME = re.compile(WIRE_NAME)
_CUT_NAME = re.compile(
    r"<tool_call(?::opensource)?>\s*([A-Za-z_][\w.\-:/]*?)<tool_sep(?::opensource)?>"
)  # the name of a cut call


class _Scanner(SkipValuesScanner):
    """Up to the section's closing tag, skipping over the contents of values, and the
    end-of-sentence token right after it (all in the section's spelling)."""

    def __init__(self, tags: _Tags) -> None:
        super().__init__(tags.close, tags.value[0], tags.value[1])
        self.eos = tags.eos
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
        if buf.startswith(self.eos, i):
            return i + len(self.eos), True
        if not final and self.eos.startswith(buf[i:]):
            return i, False
        return i, True


def _call(tags: _Tags, text: str, start: int) -> tuple[ParsedCall, int] | None:
    """One ``<tool_call:opensource>...</tool_call:opensource>`` (in the spelling of ``tags``) at
    ``text[start]``: the call and the index after it."""
    if not text.startswith(tags.call, start):
        return None
    i = skip_ws(text, start + len(tags.call))
    m = _NAME.match(text, i)
    if m is None:
        return None
    i = skip_ws(text, m.end())
    if not text.startswith(tags.sep, i):
        return None
    got = read_arg_pairs(text, i + len(tags.sep), key=tags.key, value=tags.value, close=tags.call_end)
    if got is None:
        return None
    args, end = got
    return ParsedCall(m.group(0), dict(args), text[start:end]), end


class HunyuanFormat(ArgPairsFormat):
    name = "hunyuan"
    label = "Hunyuan XML (Tencent Hy3)"
    openers = tuple(SPELLINGS)
    non_marker_openers = (PLAIN.open,)  # the spelling without the suffix: a deviation
    reasoning = SUFFIXED.think
    reasoning_alt = (PLAIN.think,)
    section = (OPEN + "\n", CLOSE)
    tail = f"{CALL_END}\n"
    key_tags, value_tags = KEY, VALUE
    param_close = V_CLOSE

    def region_scanner(self, opener: str) -> RegionScanner:
        return _Scanner(SPELLINGS[opener])

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        tags = SPELLINGS[opener]
        text = body[: -len(tags.eos)] if body.endswith(tags.eos) else body
        closed = text.endswith(tags.close)
        if closed:
            text = text[: -len(tags.close)]
        elif not (at_end and truncated):
            return None
        return run_section(text, partial(_call, tags), close=tags.close, closed=closed)

    def head(self, name: str) -> str:
        return f"{CALL}{name}{SEP}\n"

    def call_name(self, raw: str) -> str | None:
        m = _CUT_NAME.search(raw)
        return m.group(1) if m else None

    def example_call(self, name: str, arguments: dict) -> str:
        pairs = self.pairs_text(arguments)
        return f"{OPEN}\n{CALL}{name}{SEP}\n{pairs}{CALL_END}\n{CLOSE}"


register(HunyuanFormat())
