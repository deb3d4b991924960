"""Swiss AI Apertus calls: ``<|tools_prefix|>[{"NAME": {...}}, ...]<|tools_suffix|>``.

Each element is an object with exactly one key, the function's name, whose value is the
arguments object (or a JSON string holding one, as the template writes arguments given as a
string). Reasoning is an ``<|inner_prefix|>...<|inner_suffix|>`` block.
"""

from __future__ import annotations

import json
import re
from typing import Any

from app.engine.formats.base import Format, RegionScanner, register
from app.engine.formats.json_list import JsonListScanner, parse_json_list

__all__ = ["ApertusFormat"]

_CUT_NAME = re.compile(r'\{\s*"([^"\\<>\s{}\[\]]+)"\s*:')  # a cut element's name
OPEN = "<|tools_prefix|>"
CLOSE = "<|tools_suffix|>"


def _element(obj: Any) -> tuple[str, dict[str, Any], None] | None:
    if not isinstance(obj, dict) or len(obj) != 1:
        return None
    ((name, args),) = obj.items()
    if not name.strip() or name != name.strip() or any(c.isspace() or c in "\"'<>{}[]" for c in name):
        return None
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return None
    if not isinstance(args, dict):
        return None
    return name, args, None


class ApertusFormat(Format):
    name = "apertus"
    label = "Apertus JSON list (Swiss AI Apertus 8B, 70B)"
    detail = '<|tools_prefix|>[{"NAME": {...}}]<|tools_suffix|>'
    openers = (OPEN,)
    start_only = False
    reasoning = ("<|inner_prefix|>", "<|inner_suffix|>")

    def region_scanner(self, opener: str) -> RegionScanner:
        return JsonListScanner(CLOSE)

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        return parse_json_list(body, CLOSE, at_end=at_end, truncated=truncated, read_element=_element)

    def constraint_grammar(self, tools, *, forced, parallel, ctx):
        from app.engine.constraints.wires import json_args_schema, json_array, tool_name

        return json_array(
            ctx,
            self,
            tools,
            forced,
            parallel,
            open=OPEN,
            close=CLOSE,
            item=lambda t: {
                "type": "object",
                "properties": {tool_name(t): json_args_schema(t)},
                "required": [tool_name(t)],
                "additionalProperties": False,
            },
        )

    def call_name(self, raw: str) -> str | None:
        m = _CUT_NAME.search(raw)
        return m.group(1) if m else None

    def example_call(self, name: str, arguments: dict) -> str:
        return OPEN + json.dumps([{name: dict(arguments)}], ensure_ascii=False) + CLOSE


register(ApertusFormat())
