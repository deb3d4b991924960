"""Command R7B calls (Cohere Command R7B, Command A and the Cohere2 MoE models).

``<|START_ACTION|>[{"tool_call_id": "0", "tool_name": NAME, "parameters": {...}}, ...]<|END_ACTION|>``
after an optional ``<|START_THINKING|>...<|END_THINKING|>`` plan (the generation prompt of some
templates opens it); text for the user stands in ``<|START_RESPONSE|>...<|END_RESPONSE|>``,
whose markers are structure, not content. The action list must hold only such objects
(``parameters`` may be a JSON string holding an object); ``<|END_ACTION|>`` is required unless the
reply ended normally right after the list. An empty list is no call (text). The list is read by
the shared JSON-list reader (:mod:`app.engine.formats.json_list`): each call's raw is its element,
and a list cut by the token limit keeps its complete elements.
"""

from __future__ import annotations

import json
import re
from typing import Any

from app.engine.formats.base import Format, RegionScanner, register
from app.engine.formats.json_list import ElementReader, JsonListScanner, parse_json_list
from app.engine.formats.sections import json_text

__all__ = ["CommandRFormat", "MarkerRegion", "action_reader", "tool_name_hint"]

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


def _arguments(value: Any) -> dict[str, Any] | None:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return None
    return value if isinstance(value, dict) else None


def action_reader(name_key: str, args_key: str, extra_keys: tuple[str, ...] = ()) -> ElementReader:
    """A reader of one list element ``{name_key: str, args_key: object}`` (plus ``extra_keys``;
    ``args_key`` may hold a JSON string of an object) for :func:`~app.engine.formats.json_list.parse_json_list`."""
    allowed = {name_key, args_key, *extra_keys}

    def read(obj: Any) -> tuple[str, dict[str, Any], str | None] | None:
        if not isinstance(obj, dict) or set(obj) - allowed:
            return None
        name = obj.get(name_key)
        if not isinstance(name, str) or not name.strip() or name != name.strip():
            return None
        args = _arguments(obj.get(args_key, {}))
        return None if args is None else (name, args, None)

    return read


_READ = action_reader("tool_name", "parameters", ("tool_call_id",))


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
        return parse_json_list(body, CLOSE, at_end=at_end, truncated=truncated, read_element=_READ)

    def call_name(self, raw: str) -> str | None:
        return tool_name_hint(raw)

    def cut_call(self, opener, body, tools):
        return None if opener != OPEN else super().cut_call(opener, body, tools)

    def constraint_grammar(self, tools, *, forced, parallel, ctx):
        from app.engine.constraints.wires import json_array, json_call

        return json_array(
            ctx,
            self,
            tools,
            forced,
            parallel,
            open=OPEN,
            close=CLOSE,
            item=lambda t: json_call(t, name_key="tool_name", args_key="parameters"),
        )

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        item = {"tool_call_id": "0", "tool_name": name, "parameters": dict(arguments)}
        return f"{OPEN}[\n    {json_text(item)}\n]{CLOSE}"


class MarkerRegion(RegionScanner):
    """The region of a marker that stands alone: it ends where it starts."""

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        return 0, True


register(CommandRFormat())
