"""Hermes JSON calls (Qwen2.5, Qwen3, QwQ, Hermes 2 Pro / 3, Granite 4, MiMo, Bielik, Reka).

``<tool_call>\\n{"name": NAME, "arguments": {...}}\\n</tool_call>``, any number per reply, after
an optional ``<think>...</think>`` block. A markdown fence around the JSON and a trailing comma
are repaired; ``arguments`` written as a JSON string holding an object is read as that object.
A missing ``</tool_call>`` is accepted only when the reply ended normally right after the JSON.
"""

from __future__ import annotations

from app.engine.formats.base import register
from app.engine.formats.open_json import JsonTagFormat

__all__ = ["HERMES"]

OPEN = "<tool_call>"
CLOSE = "</tool_call>"

HERMES = register(
    JsonTagFormat("hermes", "Hermes JSON (Qwen2.5, Qwen3, QwQ, Hermes, Granite 4)", (OPEN,), close=CLOSE)
)
