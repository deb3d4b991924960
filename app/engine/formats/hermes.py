"""Hermes JSON calls (Qwen2.5, Qwen3, QwQ, Hermes 2 Pro / 3, Granite 4, MiMo, Bielik, Reka).

``<tool_call>\\n{"name": NAME, "arguments": {...}}\\n</tool_call>``, any number per reply, after
an optional ``<think>...</think>`` block. A markdown fence around the JSON and a trailing comma
are repaired; ``arguments`` written as a JSON string holding an object is read as that object.
A missing ``</tool_call>`` is accepted only when the reply ended normally right after the JSON.
"""

from __future__ import annotations

import json
from typing import Any

from app.engine.formats.base import Format, ParsedCall, RegionScanner, find_marker, register
from app.engine.formats.jsonscan import JsonScanner, loads_repaired, strip_fence
from app.engine.formats.sections import json_text

__all__ = ["HermesFormat", "JsonTagScanner", "read_name_arguments"]

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
_FENCE = "```"


class JsonTagScanner(RegionScanner):
    """Region ``[ws][fence] {json} [ws][fence][ws] CLOSE``; on anything else, up to the next CLOSE."""

    def __init__(self, close: str):
        self.close = close
        self.state = "pre"
        self.json = JsonScanner()
        self.ops = 0

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i, n = 0, len(buf)
        close = self.close
        while i < n:
            st = self.state
            if st in ("pre", "post", "lang"):
                c = buf[i]
                self.ops += 1
                if st == "lang":
                    if c.isalpha():
                        i += 1
                        continue
                    self.state = "pre"
                    continue
                if c.isspace():
                    i += 1
                    continue
                if buf.startswith(_FENCE, i):
                    i += len(_FENCE)
                    self.state = "lang" if st == "pre" else "post"
                    continue
                if st == "post" and buf.startswith(close, i):
                    return i + len(close), True
                rest = buf[i:i + len(close)]
                if not final and len(rest) < len(close) and (
                    _FENCE.startswith(rest) or (st == "post" and close.startswith(rest))
                ):
                    return i, False
                if st == "pre" and c == "{":
                    self.state = "json"
                    continue
                self.state = "seek"
                continue
            if st == "json":
                before = self.json.ops
                j = self.json.feed(buf, i)
                self.ops += self.json.ops - before
                if j == -1:
                    return n, False
                i = j
                self.state = "post"
                continue
            # seek: plain search for the closing marker
            pos, _m, safe = find_marker(buf, (close,), final, start=i)
            self.ops += (pos + len(close) - i) if pos != -1 else n - i
            if pos != -1:
                return pos + len(close), True
            return safe, False
        return n, False


def read_name_arguments(text: str, *, args_key: str = "arguments", extra_keys: tuple[str, ...] = ()) -> \
        tuple[str, dict[str, Any]] | None:
    """Strictly read ``{"name": str, args_key: object}`` (plus optional ``extra_keys``)."""
    ok, obj = loads_repaired(strip_fence(text.strip()).strip())
    if not ok:
        return None
    return name_arguments(obj, args_key=args_key, extra_keys=extra_keys)


def name_arguments(obj: Any, *, args_key: str = "arguments", extra_keys: tuple[str, ...] = ()) -> \
        tuple[str, dict[str, Any]] | None:
    if not isinstance(obj, dict) or set(obj) - {"name", args_key, *extra_keys}:
        return None
    name = obj.get("name")
    if not isinstance(name, str) or not name.strip() or name != name.strip():
        return None
    args = obj.get(args_key, {})
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return None
    if not isinstance(args, dict):
        return None
    return name, args


class HermesFormat(Format):
    name = "hermes"
    label = "Hermes JSON (Qwen2.5, Qwen3, QwQ, Hermes, Granite 4)"
    detail = '<tool_call>{"name": ..., "arguments": {...}}</tool_call>'
    openers = (OPEN,)
    start_only = False
    reasoning = ("<think>", "</think>")

    def region_scanner(self, opener: str) -> RegionScanner:
        return JsonTagScanner(CLOSE)

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if body.endswith(CLOSE):
            inner = body[: -len(CLOSE)]
        elif at_end and not truncated:
            inner = body  # the reply ended right after the JSON: the closing tag is implied
        else:
            return None
        got = read_name_arguments(inner)
        if got is None:
            return None
        name, args = got
        return [ParsedCall(name, args, opener + body)], ""

    def constraint_grammar(self, tools, *, forced, parallel, ctx):
        from app.engine.constraints.wires import json_tagged

        return json_tagged(ctx, self, tools, forced, parallel, open=OPEN, close=CLOSE, lead="\n", trail="\n",
                           sep="\n")

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return "<tool_call>\n" + json_text({"name": name, "arguments": dict(arguments)}) + "\n</tool_call>"


register(HermesFormat())
