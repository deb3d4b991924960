"""A deleted conversation's rows as JSON text and back, for the trash (``History.trash_conversation``):
per table its column names and rows; a row's values are SQLite's (None, int, float, text, bytes),
bytes written as ``{"b64": ...}`` (text never reads as an object, so nothing is mistaken)."""

from __future__ import annotations

import base64
import json
from typing import Any

__all__ = ["Rows", "rows_from_json", "rows_to_json"]

#: per table: its column names and its rows
Rows = dict[str, tuple[list[str], list[tuple[Any, ...]]]]


def _out(value: Any) -> Any:
    if isinstance(value, bytes | bytearray | memoryview):
        return {"b64": base64.b64encode(bytes(value)).decode("ascii")}
    return value


def _in(value: Any) -> Any:
    if isinstance(value, dict):
        return base64.b64decode(value["b64"])
    return value


def rows_to_json(rows: Rows) -> str:
    return json.dumps(
        {table: [cols, [[_out(v) for v in row] for row in values]] for table, (cols, values) in rows.items()},
        separators=(",", ":"),
    )


def rows_from_json(text: str) -> Rows:
    """The rows :func:`rows_to_json` wrote; ValueError (or KeyError, TypeError) for text it did not."""
    data = json.loads(text)
    return {
        str(table): ([str(c) for c in cols], [tuple(_in(v) for v in row) for row in values])
        for table, (cols, values) in data.items()
    }
