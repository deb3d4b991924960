"""Incremental JSON helpers: find where a JSON value ends, load JSON with safe repairs, read the
``{"name": ..., "arguments": {...}}`` object the JSON families write."""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterator
from typing import Any

__all__ = [
    "LENIENT_DECODER",
    "JsonScanner",
    "arguments_object",
    "closers_mended",
    "loads_lenient",
    "loads_repaired",
    "missing_closers",
    "name_arguments",
    "read_name_arguments",
    "strip_fence",
]

_OPEN = "{["
_CLOSE = "}]"
_SPECIAL = re.compile(r'["\\{}\[\]]')


class JsonScanner:
    """Track strings, escapes and nesting of one JSON object/array, chunk by chunk.

    ``feed(text, start)`` returns the index just after the value's closing bracket, or -1 when
    the value is still open at the end of ``text``. Each character is examined once.
    """

    __slots__ = ("depth", "in_str", "esc", "started", "ops")

    def __init__(self) -> None:
        self.depth = 0
        self.in_str = False
        self.esc = False
        self.started = False
        self.ops = 0

    def feed(self, text: str, start: int = 0) -> int:
        i, n = start, len(text)
        while i < n:
            if self.in_str:
                # Jump to the next quote or backslash.
                j = i
                while j < n:
                    c = text[j]
                    if self.esc:
                        self.esc = False
                    elif c == "\\":
                        self.esc = True
                    elif c == '"':
                        self.in_str = False
                        j += 1
                        break
                    j += 1
                self.ops += j - i
                i = j
                continue
            m = _SPECIAL.search(text, i)
            if m is None:
                self.ops += n - i
                return -1
            j = m.start()
            self.ops += j - i + 1
            c = text[j]
            i = j + 1
            if c == '"':
                self.in_str = True
            elif c in _OPEN:
                self.depth += 1
                self.started = True
            elif c in _CLOSE:
                self.depth -= 1
                if self.started and self.depth <= 0:
                    return i
        return -1


def _outside_strings(text: str, open_at_end: list[bool] | None = None) -> Iterator[tuple[int, str]]:
    """Each character of ``text`` that stands outside JSON strings, with its index (a string's
    opening quote is yielded, its contents and closing quote are not). ``open_at_end`` gets
    whether a string was still open at the end."""
    in_str = esc = False
    for i, c in enumerate(text):
        if in_str:
            if esc:
                esc = False
            elif c == "\\":
                esc = True
            elif c == '"':
                in_str = False
            continue
        if c == '"':
            in_str = True
        yield i, c
    if open_at_end is not None:
        open_at_end.append(in_str)


def _drop_trailing_commas(s: str) -> str:
    """``s`` without each comma that only whitespace separates from a closing bracket."""
    drop: list[int] = []
    comma = -1  # the last character outside strings that is not whitespace, where it is a comma
    for i, c in _outside_strings(s):
        if c.isspace():
            continue
        if c in _CLOSE and comma != -1:
            drop.append(comma)
        comma = i if c == "," else -1
    if not drop:
        return s
    bounds = [-1, *drop, len(s)]
    return "".join(s[a + 1 : b] for a, b in itertools.pairwise(bounds))


#: A decoder that reads a raw newline or tab inside a string as written (``raw_decode`` of one
#: value among others: the Llama readers' call objects, Gemma's JSON strings)
LENIENT_DECODER = json.JSONDecoder(strict=False)


def loads_lenient(text: str) -> Any:
    """``json.loads``, and where that fails, again with raw control characters (a newline, a tab)
    allowed inside strings: models write multi-line code and messages into an argument so (Qwen3,
    Kimi, Command, Gemini: servers' trackers are full of "Invalid control character"). Only the
    inside of a string changes meaning: anywhere else such a character is whitespace or an error
    as before. Raises ``ValueError`` / ``RecursionError`` as ``json.loads`` does."""
    try:
        return json.loads(text)
    except ValueError:
        return json.loads(text, strict=False)


def loads_repaired(text: str) -> tuple[bool, Any]:
    """:func:`loads_lenient`; if that fails, retry without trailing commas. Returns (ok, value)."""
    try:
        return True, loads_lenient(text)
    except (ValueError, RecursionError):
        pass
    fixed = _drop_trailing_commas(text)
    if fixed != text:
        try:
            return True, loads_lenient(fixed)
        except (ValueError, RecursionError):
            pass
    return False, None


_FENCE = re.compile(r"\A\s*```(?:json|JSON)?[ \t]*\n(.*)\n[ \t]*```\s*\Z", re.S)


def missing_closers(text: str) -> str | None:
    """The brackets a JSON value left open at the end of ``text`` (``"}]}"``), where that is all
    it lacks: every string closed and every closing bracket matching its opener. None when
    nothing is open or the text is wrong in another way."""
    stack: list[str] = []
    open_at_end: list[bool] = []
    for _i, c in _outside_strings(text, open_at_end):
        if c in _OPEN:
            stack.append("}" if c == "{" else "]")
        elif c in _CLOSE and (not stack or stack.pop() != c):
            return None
    if open_at_end[0] or not stack:
        return None
    return "".join(reversed(stack))


def closers_mended(text: str) -> str | None:
    """``text`` (a JSON object or array, whitespace around) with its closing brackets mended where
    they are all that is wrong: the ones it left open supplied (see :func:`missing_closers`), or
    the surplus ones after its complete value dropped (``{"a": {"b": 1}}}``: only closing brackets
    and whitespace after it). None when neither reads it."""
    text = text.strip()
    if text[:1] not in _OPEN:
        return None
    closers = missing_closers(text)
    if closers is not None:
        return text + closers
    end = JsonScanner().feed(text)
    if end == -1 or end == len(text) or text[end:].strip(_CLOSE + " \t\r\n"):
        return None
    return text[:end]


def strip_fence(text: str) -> str:
    """The JSON inside a markdown fence (```json ... ```), or ``text`` unchanged."""
    m = _FENCE.match(text)
    return m.group(1) if m else text


def read_name_arguments(
    text: str, *, args_key: str = "arguments", extra_keys: tuple[str, ...] = ()
) -> tuple[str, dict[str, Any]] | None:
    """Strictly read ``{"name": str, args_key: object}`` (plus optional ``extra_keys``)."""
    ok, obj = loads_repaired(strip_fence(text.strip()).strip())
    if not ok:
        return None
    return name_arguments(obj, args_key=args_key, extra_keys=extra_keys)


def name_arguments(
    obj: Any, *, args_key: str = "arguments", extra_keys: tuple[str, ...] = (), name_key: str = "name"
) -> tuple[str, dict[str, Any]] | None:
    """``(name, arguments)`` of a call object ``{name_key: NAME, args_key: {...}}`` that holds no
    other keys than those and ``extra_keys`` (the arguments may be left out: none); None when it
    is not one."""
    if not isinstance(obj, dict) or set(obj) - {name_key, args_key, *extra_keys}:
        return None
    name = obj.get(name_key)
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        return None
    args = arguments_object(obj.get(args_key, {}))
    return None if args is None else (name, args)


def arguments_object(value: Any) -> dict[str, Any] | None:
    """A call's arguments as written in a JSON call: an object, or a JSON string holding one
    (as templates write arguments given as a string); None for anything else."""
    if isinstance(value, str):
        try:
            value = loads_lenient(value)
        except (ValueError, RecursionError):
            return None
    return value if isinstance(value, dict) else None
