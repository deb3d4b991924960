"""Tag-delimited parameters of the XML-like families whose values are raw text (MiniMax, Seed-OSS,
MiniCPM5): ``<parameter name="K">V</parameter>`` and its spellings; key/value tag pairs (GLM,
Hunyuan): ``<arg_key>K</arg_key><arg_value>V</arg_value>``.

* :func:`tag_name` reads the name written in a tag (``NAME">`` or ``NAME>``).
* :func:`read_params` strictly reads a run of parameters up to the element's closing tag, each
  value exactly as written (optionally as a CDATA section).
* :func:`read_arg_pairs` strictly reads a run of key/value tag pairs; :func:`pair_key_ok` is what
  such a key may be, :func:`arg_pair_param` the grammar of one pair, :func:`arg_pairs_text`
  writes them.
* :func:`params_text` writes them (the families' example calls).

A family passes its own tags and name patterns; what a value means is the schema's business.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from app.engine.formats.sections import raw_text, skip_ws

__all__ = [
    "arg_pair_param",
    "arg_pairs_text",
    "pair_key_ok",
    "params_text",
    "read_arg_pairs",
    "read_params",
    "tag_name",
]


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


def pair_key_ok(key: str) -> bool:
    """Whether ``key`` may be the key of a key/value tag pair: not empty, no surrounding
    whitespace, no markup."""
    return key == key.strip() and bool(key) and not set(key) & set("<>")


def _pair_value_end(text: str, i: int, key_open: str, value_close: str) -> int:
    """The ``value_close`` that closes the value at ``i``: the first one followed (after
    whitespace) by the next ``key_open`` or by the end of ``text``; -1 if none."""
    j = i
    while True:
        end = text.find(value_close, j)
        if end == -1:
            return -1
        k = skip_ws(text, end + len(value_close))
        if k == len(text) or text.startswith(key_open, k):
            return end
        j = end + len(value_close)


def read_arg_pairs(
    text: str,
    i: int,
    *,
    key: tuple[str, str],
    value: tuple[str, str],
    close: str = "",
    lenient: bool = False,
) -> tuple[dict[str, str], int] | None:
    """Strictly read ``(KEY_OPEN k KEY_CLOSE VALUE_OPEN v VALUE_CLOSE)*`` from ``i``, whitespace
    between the tags, up to ``close`` (or to the end of ``text`` when ``close`` is empty): the
    values by key, each exactly as written, and the index after ``close``.

    None when anything else stands there, a key (the text between its tags, stripped) is not
    :func:`pair_key_ok` or repeats, or a value is not closed. ``lenient`` (with ``close`` empty:
    ``text`` is the call's inside): a ``VALUE_CLOSE`` closes a value only when the next
    ``KEY_OPEN`` or the end follows it, and a last value whose ``VALUE_CLOSE`` is missing runs to
    the end (a newline before it is layout).
    """
    (k_open, k_close), (v_open, v_close) = key, value
    args: dict[str, str] = {}
    while True:
        i = skip_ws(text, i)
        if close and text.startswith(close, i):
            return args, i + len(close)
        if not close and i == len(text):
            return args, i
        if not text.startswith(k_open, i):
            return None
        i += len(k_open)
        end = text.find(k_close, i)
        if end == -1:
            return None
        name = text[i:end].strip()
        if not pair_key_ok(name) or name in args:
            return None
        i = skip_ws(text, end + len(k_close))
        if not text.startswith(v_open, i):
            return None
        i += len(v_open)
        end = _pair_value_end(text, i, k_open, v_close) if lenient else text.find(v_close, i)
        if end == -1:
            if not lenient:
                return None
            rest = text[i:]
            args[name] = rest[:-1] if rest.endswith("\n") else rest
            return args, len(text)
        args[name] = text[i:end]
        i = end + len(v_close)


def arg_pair_param(key: tuple[str, str], value: tuple[str, str]) -> Callable[[Any, str, Any, Any], str]:
    """The grammar of one key/value tag pair (``raw_params``' ``param``), as the template writes
    it: ``KEY_OPEN k KEY_CLOSE \\n VALUE_OPEN v VALUE_CLOSE \\n``."""
    from app.engine.constraints.wires import typed

    (k_open, k_close), (v_open, v_close) = key, value
    return lambda c, k, s, w: (
        f"{c.lit(f'{k_open}{k}{k_close}{chr(10)}{v_open}')} {typed(c, s, v_close, w)} {c.lit(chr(10))}"
    )


def arg_pairs_text(arguments: Mapping[str, Any], *, key: tuple[str, str], value: tuple[str, str]) -> str:
    """``arguments`` written as ``KEY_OPEN k KEY_CLOSE \\n VALUE_OPEN v VALUE_CLOSE \\n`` each (values
    as raw text)."""
    (k_open, k_close), (v_open, v_close) = key, value
    return "".join(f"{k_open}{k}{k_close}\n{v_open}{raw_text(v)}{v_close}\n" for k, v in arguments.items())
