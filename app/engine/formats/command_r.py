"""Command R7B calls (Cohere Command R7B, Command A and the Cohere2 MoE models).

``<|START_ACTION|>[{"tool_call_id": "0", "tool_name": NAME, "parameters": {...}}, ...]<|END_ACTION|>``
after an optional ``<|START_THINKING|>...<|END_THINKING|>`` plan (the generation prompt of some
templates opens it); text for the user stands in ``<|START_RESPONSE|>...<|END_RESPONSE|>``,
whose markers are structure, not content. The action list must hold only such objects
(``parameters`` may be a JSON string holding an object); ``<|END_ACTION|>`` is required unless the
reply ended normally right after the list. An empty list is no call (text).
"""

from __future__ import annotations

import json
import re
from typing import Any

from app.engine.formats.base import Format, ParsedCall, RegionScanner, find_marker, register
from app.engine.formats.jsonscan import JsonScanner
from app.engine.formats.sections import json_text

__all__ = [
    "CommandRFormat",
    "JsonListScanner",
    "MarkerRegion",
    "json_list_items",
    "partial_suffix",
    "read_action_items",
    "read_region_items",
    "tool_name_hint",
]

OPEN = "<|START_ACTION|>"
CLOSE = "<|END_ACTION|>"
RESPONSE_OPEN = "<|START_RESPONSE|>"
RESPONSE_CLOSE = "<|END_RESPONSE|>"
THINK = ("<|START_THINKING|>", "<|END_THINKING|>")
_TOOL_NAME = re.compile(r'"tool_name"\s*:\s*"([^"\\<>]+)"')


def tool_name_hint(raw: str) -> str | None:
    """The ``tool_name`` a (possibly cut) action list names first."""
    m = _TOOL_NAME.search(raw)
    return m.group(1) if m else None


class JsonListScanner(RegionScanner):
    """Region ``[ws] [json list] [ws] close``; on anything else, up to the next ``close``.

    ``fence``: the list may stand in a markdown fence (```` ```json ... ``` ````), closed before
    ``close``; with ``close=None`` the region ends after the list (and its fence)."""

    def __init__(self, close: str | None, *, fence: bool = False) -> None:
        self.close = close
        self.fence = fence
        self.state = "pre"
        self.fenced = False
        self.json = JsonScanner()
        self.ops = 0

    def _wait(self, buf: str, i: int, wanted: tuple[str, ...], final: bool) -> bool:
        rest = buf[i:]
        return not final and any(len(rest) < len(w) and w.startswith(rest) for w in wanted)

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i, n = 0, len(buf)
        while i < n:
            st = self.state
            if st in ("pre", "lang", "post", "postfence"):
                c = buf[i]
                self.ops += 1
                if st == "lang":
                    if c.isalpha():
                        i += 1
                        continue
                    self.state = "pre"
                    continue
                if st == "postfence" and self.close is None:
                    return i, True  # the fence closed the region: what follows is text
                if c.isspace():
                    i += 1
                    continue
                if st == "pre":
                    if self.fence and not self.fenced and buf.startswith("```", i):
                        self.fenced = True
                        self.state = "lang"
                        i += 3
                        continue
                    if self.fence and not self.fenced and self._wait(buf, i, ("```",), final):
                        return i, False
                    if c == "[":
                        self.state = "json"
                        continue
                    return self._fault(buf, i, final)
                if st == "post" and self.fenced:
                    if final and "```".startswith(buf[i:]):
                        return n, False  # the reply ended in the closing fence
                    if buf.startswith("```", i):
                        i += 3
                        self.state = "postfence"
                        continue
                    if self._wait(buf, i, ("```",), final):
                        return i, False
                    return self._fault(buf, i, final)
                if self.close is None:
                    return i, True
                if buf.startswith(self.close, i):
                    return i + len(self.close), True
                if self._wait(buf, i, (self.close,), final):
                    return i, False
                return self._fault(buf, i, final)
            if st == "json":
                before = self.json.ops
                j = self.json.feed(buf, i)
                self.ops += self.json.ops - before
                if j == -1:
                    return n, False
                i = j
                self.state = "post"
                if self.close is None and not self.fenced:
                    return i, True
                continue
            return self.scan_rest(buf, i, final)  # seek: a plain search for the closing marker
        if self.close is None and self.state == "postfence" and final:
            return n, True
        return n, False

    def _fault(self, buf: str, i: int, final: bool) -> tuple[int, bool]:
        if self.close is None:
            return i, True  # no closing marker to look for: the region ends (as text)
        self.state = "seek"
        return self.scan_rest(buf, i, final)

    def scan_rest(self, buf: str, i: int, final: bool) -> tuple[int, bool]:
        pos, _m, safe = find_marker(buf, (self.close,), final, start=i)
        self.ops += (pos + len(self.close) - i) if pos != -1 else len(buf) - i
        if pos != -1:
            return pos + len(self.close), True
        return safe, False


def _arguments(value: Any) -> dict[str, Any] | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


_DECODER = json.JSONDecoder()


def _ws(text: str, i: int) -> int:
    while i < len(text) and text[i].isspace():
        i += 1
    return i


def json_list_items(text: str) -> tuple[list[tuple[int, int, Any]], int, int] | None:
    """The elements of the JSON list that opens ``text`` (after whitespace): ``(items, end,
    cut)`` where each item is ``(start, stop, value)``, ``end`` the index after the list's ``]``
    (-1 when it never closed) and ``cut`` where the unfinished rest starts (the comma before a
    cut element). A trailing comma before ``]`` is accepted. None: not a list of JSON values."""
    i = _ws(text, 0)
    if not text.startswith("[", i):
        return None
    items: list[tuple[int, int, Any]] = []
    i = _ws(text, i + 1)
    sep = i  # where the rest would start if the next element is cut
    while True:
        if i >= len(text):
            return items, -1, sep
        if text[i] == "]":
            return items, i + 1, i + 1
        try:
            value, j = _DECODER.raw_decode(text, i)
        except (ValueError, RecursionError):
            return (items, -1, sep) if _open_value(text, i) else None
        items.append((i, j, value))
        k = _ws(text, j)
        if k >= len(text):
            return items, -1, k
        if text[k] == "]":
            return items, k + 1, k + 1
        if text[k] != ",":
            return None
        sep = k
        i = _ws(text, k + 1)


def _open_value(text: str, i: int) -> bool:
    """Whether ``text[i:]`` may be the beginning of a JSON value cut off by the end of the text."""
    return text[i] in '{["-0123456789tfn'


def read_action_items(text: str, *, name_key: str, args_key: str, extra_keys: tuple[str, ...] = (),
                      cut: bool = False) -> tuple[list[tuple[str, dict[str, Any], str]], int] | None:
    """Strictly read a JSON list of ``{name_key: str, args_key: object}`` (plus ``extra_keys``):
    ``(calls, rest)``, each call ``(name, arguments, its element's text)`` and ``rest`` where the
    text after the list starts (whitespace only may follow a closed list). ``cut``: the text ends
    inside the list (the token limit): the complete elements count and ``rest`` is where the cut
    one starts (a closed list reads as usual). None when it is not such a list (or holds no call)."""
    got = json_list_items(text)
    if got is None:
        return None
    items, end, rest = got
    if (end == -1 and not cut) or not items or (end != -1 and text[end:].strip()):
        return None
    calls: list[tuple[str, dict[str, Any], str]] = []
    for a, b, item in items:
        if not isinstance(item, dict) or set(item) - {name_key, args_key, *extra_keys}:
            return None
        name = item.get(name_key)
        if not isinstance(name, str) or not name.strip() or name != name.strip():
            return None
        args = _arguments(item.get(args_key, {}))
        if args is None:
            return None
        calls.append((name, args, text[a:b]))
    return calls, (len(text) if end != -1 else rest)


def partial_suffix(text: str, marker: str) -> int:
    """The length of the beginning of ``marker`` that ends ``text`` (0 if none)."""
    for k in range(min(len(marker) - 1, len(text)), 0, -1):
        if text.endswith(marker[:k]):
            return k
    return 0


def read_region_items(body: str, close: str, *, at_end: bool, truncated: bool, name_key: str, args_key: str,
                      extra_keys: tuple[str, ...] = ()) -> tuple[list[tuple[str, dict[str, Any], str]], str] | None:
    """A region ``[list] close`` read by :func:`read_action_items`: ``(calls, leftover)``. Without
    ``close`` the list counts only where the reply ended right after it (the closing marker
    implied); cut by the token limit, its complete elements count and the cut rest is the
    leftover (a cut closing marker is structure)."""
    cut = at_end and truncated
    if body.endswith(close):
        inner, cut = body[: -len(close)], False
    elif at_end:
        inner = body[: len(body) - partial_suffix(body, close)] if cut else body
    else:
        return None
    got = read_action_items(inner, name_key=name_key, args_key=args_key, extra_keys=extra_keys, cut=cut)
    if got is None:
        return None
    calls, rest = got
    return calls, inner[rest:] if cut else ""


class CommandRFormat(Format):
    name = "command-r"
    label = "Command R7B actions (Cohere Command R7B, Command A)"
    detail = '<|START_ACTION|>[{"tool_call_id": "0", "tool_name": ..., "parameters": {...}}]<|END_ACTION|>'
    openers = (OPEN, RESPONSE_OPEN, RESPONSE_CLOSE)
    start_only = False
    reasoning = THINK

    def region_scanner(self, opener: str) -> RegionScanner:
        return JsonListScanner(CLOSE) if opener == OPEN else MarkerRegion()

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if opener != OPEN:
            return [], ""  # a response marker: structure
        got = read_region_items(body, CLOSE, at_end=at_end, truncated=truncated, name_key="tool_name",
                                args_key="parameters", extra_keys=("tool_call_id",))
        if got is None:
            return None
        calls, leftover = got
        return [ParsedCall(name, args, raw) for name, args, raw in calls], leftover

    def call_name(self, raw: str) -> str | None:
        return tool_name_hint(raw)

    def cut_call(self, opener, body, tools):
        return None if opener != OPEN else super().cut_call(opener, body, tools)

    def constraint_grammar(self, tools, *, forced, parallel, ctx):
        from app.engine.constraints.wires import json_array, json_call

        return json_array(ctx, self, tools, forced, parallel, open=OPEN, close=CLOSE,
                          item=lambda t: json_call(t, name_key="tool_name", args_key="parameters"))

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        item = {"tool_call_id": "0", "tool_name": name, "parameters": dict(arguments)}
        return f"{OPEN}[\n    {json_text(item)}\n]{CLOSE}"


class MarkerRegion(RegionScanner):
    """The region of a marker that stands alone: it ends where it starts."""

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        return 0, True


register(CommandRFormat())
