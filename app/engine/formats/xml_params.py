"""Tag-delimited parameters of the XML-like families whose values are raw text (MiniMax, Seed-OSS,
MiniCPM5): ``<parameter name="K">V</parameter>`` and its spellings.

* :func:`tag_name` reads the name written in a tag (``NAME">`` or ``NAME>``).
* :func:`read_params` strictly reads a run of parameters up to the element's closing tag, each
  value exactly as written (optionally as a CDATA section).
* :func:`params_text` writes them (the families' example calls).

A family passes its own tags and name patterns; what a value means is the schema's business.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from app.engine.formats.sections import raw_text, skip_ws

__all__ = ["params_text", "read_params", "tag_name"]


def tag_name(s: str, i: int, pattern: re.Pattern[str], end: str) -> tuple[str, int] | None:
    """The name ``pattern`` matches at ``i`` when ``end`` follows it: the name and the index after
    ``end``; None otherwise."""
    m = pattern.match(s, i)
    if m is None or not s.startswith(end, m.end()):
        return None
    return m.group(), m.end() + len(end)


def read_params(
    text: str,
    i: int,
    *,
    param: str,
    param_end: str,
    close: str,
    key: re.Pattern[str],
    key_end: str,
    cdata: tuple[str, str] | None = None,
) -> tuple[dict[str, str], int] | None:
    """Strictly read ``(PARAM KEY KEY_END value PARAM_END)* CLOSE`` from ``i``, with whitespace
    between the tags: the values by key, each exactly as written, and the index after ``close``.

    None when anything else stands there, a key repeats or a value is not closed. With ``cdata``
    (its opening and closing marks), a value that opens with the section is the section's
    contents exactly (``param_end`` must follow the section), and any other value may not hold
    ``<`` (markup in a value is written as CDATA).
    """
    args: dict[str, str] = {}
    while True:
        i = skip_ws(text, i)
        if text.startswith(close, i):
            return args, i + len(close)
        if not text.startswith(param, i):
            return None
        got = tag_name(text, i + len(param), key, key_end)
        if got is None or got[0] in args:
            return None
        name, i = got
        if cdata is not None and text.startswith(cdata[0], i):
            end = text.find(cdata[1], i + len(cdata[0]))
            if end == -1 or not text.startswith(param_end, end + len(cdata[1])):
                return None
            args[name] = text[i + len(cdata[0]) : end]
            i = end + len(cdata[1]) + len(param_end)
            continue
        end = text.find(param_end, i)
        if end == -1:
            return None
        value = text[i:end]
        if cdata is not None and "<" in value:
            return None
        args[name] = value
        i = end + len(param_end)


def params_text(
    arguments: Mapping[str, Any],
    *,
    param: str,
    key_end: str,
    param_end: str,
    sep: str = "\n",
    value: Callable[[Any], str] = raw_text,
) -> str:
    """``arguments`` written as ``PARAM KEY KEY_END value PARAM_END SEP`` each (``value`` writes a
    value: raw text by default)."""
    return "".join(f"{param}{k}{key_end}{value(v)}{param_end}{sep}" for k, v in arguments.items())
