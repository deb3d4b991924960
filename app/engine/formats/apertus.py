"""Swiss AI Apertus calls: ``<|tools_prefix|>[{"NAME": {...}}, ...]<|tools_suffix|>``.

Each element is an object with exactly one key, the function's name, whose value is the
arguments object (or a JSON string holding one, as the template writes arguments given as a
string). Reasoning is an ``<|inner_prefix|>...<|inner_suffix|>`` block.
"""

from __future__ import annotations

import re
from typing import Any

from app.engine.formats.base import register
from app.engine.formats.json_list import JsonListFormat
from app.engine.formats.jsonscan import arguments_object

__all__ = ["ApertusFormat"]

_CUT_NAME = re.compile(r'\{\s*"([^"\\<>\s{}\[\]]+)"\s*:')  # a cut element's name
OPEN = "<|tools_prefix|>"
CLOSE = "<|tools_suffix|>"


def _element(obj: Any) -> tuple[str, dict[str, Any], None] | None:
    if not isinstance(obj, dict) or len(obj) != 1:
        return None
    ((name, value),) = obj.items()
    if not name.strip() or name != name.strip() or any(c.isspace() or c in "\"'<>{}[]" for c in name):
        return None
    args = arguments_object(value)
    return None if args is None else (name, args, None)


class ApertusFormat(JsonListFormat):
    """Each element is ``{NAME: {...}}``."""

    def list_item(self, name, arguments):
        return {name: dict(arguments)}

    def call_schema(self, tool):
        from app.engine.grammar.wires import json_args_schema, tool_name

        return {
            "type": "object",
            "properties": {tool_name(tool): json_args_schema(tool)},
            "required": [tool_name(tool)],
            "additionalProperties": False,
        }

    def call_name(self, raw: str) -> str | None:
        m = _CUT_NAME.search(raw)
        return m.group(1) if m else None

    def read_element(self, obj):
        return _element(obj)


register(
    ApertusFormat(
        "apertus",
        "Apertus JSON list (Swiss AI Apertus 8B, 70B)",
        (OPEN,),
        close=CLOSE,
        reasoning=("<|inner_prefix|>", "<|inner_suffix|>"),
    )
)
