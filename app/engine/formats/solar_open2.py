"""Upstage Solar Open2 calls (third-party servers call the model Solar Pro 4), each call on its own::

    <|tool_call:start|>NAME
    <|tool_arg:start|>K<|tool_arg:value|>V<|tool_arg:end|>
    ...
    <|tool_call:end|>

The name is the rest of the opener's line, exactly (a newline ends it); a call without arguments
is ``<|tool_call:start|>NAME\\n<|tool_call:end|>``. Each argument is a key/value pair whose key
tag is one-sided: ``<|tool_arg:value|>`` ends the key and opens the value. The key is exactly the
text between its tags (no surrounding whitespace, no markup); a value is exactly the text up to
its ``<|tool_arg:end|>`` (whitespace in it is the value's), typed by the tool's schema (``08080``
stays a string for a string property). Whitespace may stand between the pairs and before
``<|tool_call:end|>``; the template writes a newline after each and between calls. A value may
hold the call tags and the reasoning tags as text (a ``<|tool_call:end|>`` in a value does not
end the call) but no argument tag: the template writes values raw, so one there means a tag was
lost.

Text, not a call: a call whose ``<|tool_call:end|>`` is missing (vLLM also ends a call at the
next ``<|tool_call:start|>``: not read, the reply never wrote where the call ends; a reply cut by
the token limit inside a call gives an incomplete call), a value whose ``<|tool_arg:end|>`` is
missing or that holds ``<|tool_arg:start|>`` / ``<|tool_arg:value|>`` (vLLM ends a value at the
next key: not read, for the same reason), a key written twice (vLLM keeps the first: not read,
the reply gave two values for one argument), a name not followed by its newline, anything else
between the tags. Solar Open's calls (``<|tool_calls|><|tool_call:begin|>``..., the ``solar``
family) are another wire: neither family reads the other's.

Reasoning is a ``<|think:start|>...<|think:end|>`` block; the generation prompt opens it
(``<|im:start|>assistant<|im:content|><|think:start|>``), so a reply usually starts inside it.
Turns are ``<|im:start|>ROLE<|im:content|>...<|im:end|>``. No published template was found; see
the stand-in in the tests.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from app.calls import WIRE_NAME
from app.engine.formats.base import RegionScanner, one_call, register
from app.engine.formats.sections import SkipValuesScanner, raw_text
from app.engine.formats.xml_params import ArgPairsFormat, read_arg_pairs

__all__ = [
    "ARG_END",
    "ARG_START",
    "ARG_VALUE",
    "CALL_END",
    "CALL_START",
    "SOLAR_OPEN2",
    "THINK",
    "SolarOpen2Format",
    "parse_solar_open2_call",
]

CALL_START = "<|tool_call:start|>"
CALL_END = "<|tool_call:end|>"
ARG_START = "<|tool_arg:start|>"
ARG_VALUE = "<|tool_arg:value|>"
ARG_END = "<|tool_arg:end|>"
THINK = ("<|think:start|>", "<|think:end|>")
KEY = (ARG_START, ARG_VALUE)
VALUE = ("", ARG_END)  # the key's closing tag opens the value

_NAME = re.compile(WIRE_NAME)


def parse_solar_open2_call(inner: str) -> tuple[str, dict[str, str]] | None:
    """Strictly read ``NAME\\n (<|tool_arg:start|>K<|tool_arg:value|>V<|tool_arg:end|>)*`` (whitespace
    between the pairs): a call's inside, without its ``<|tool_call:end|>``."""
    m = _NAME.match(inner)
    if m is None or not inner.startswith("\n", m.end()):
        return None
    got = read_arg_pairs(inner, m.end() + 1, key=KEY, value=VALUE, joined=True)
    if got is None:
        return None
    args = got[0]
    # An argument tag in a value: a value or a call lost its end and ran into the next pair (or
    # the next call); reading on would make up a value, so the call is text.
    if any(ARG_START in v or ARG_VALUE in v for v in args.values()):
        return None
    return m.group(0), args


class SolarOpen2Format(ArgPairsFormat):
    """Arg-pair calls with a one-sided key tag, one call per ``<|tool_call:start|>`` region."""

    name = "solar-open2"
    label = "Solar Open2 arg pairs (Upstage Solar Open2, Solar Pro 4)"
    openers = (CALL_START,)
    reasoning = THINK
    tail = CALL_END
    sep = "\n"  # the template writes a newline between calls
    key_tags, value_tags = KEY, VALUE
    param_close = ARG_END

    def region_scanner(self, opener: str) -> RegionScanner:
        # Up to the call's end outside every value (a value runs to its first <|tool_arg:end|>), so
        # a <|tool_call:end|> written in a value does not end the call.
        return SkipValuesScanner(CALL_END, ARG_VALUE, ARG_END)

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if at_end and truncated:
            return None  # the scanner did not close the region before the cut: an incomplete call
        if not body.endswith(CALL_END):
            return None  # a call the reply left open is text
        return one_call(opener, body, parse_solar_open2_call(body[: -len(CALL_END)]))

    def head(self, name: str) -> str:
        return f"{CALL_START}{name}\n"

    def param_head(self, key: str) -> str:
        return f"{ARG_START}{key}{ARG_VALUE}"

    def call_name(self, raw: str) -> str | None:
        # the name is known once its newline was written (before it, it may itself be cut)
        m = _NAME.match(raw, len(CALL_START)) if raw.startswith(CALL_START) else None
        return m.group(0) if m and raw.startswith("\n", m.end()) else None

    def pairs_text(self, arguments: Mapping[str, Any]) -> str:
        return "".join(f"{self.param_head(k)}{raw_text(v)}{ARG_END}\n" for k, v in arguments.items())

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return f"{self.head(name)}{self.pairs_text(arguments)}{CALL_END}"


SOLAR_OPEN2 = register(SolarOpen2Format())
