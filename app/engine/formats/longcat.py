"""Meituan LongCat calls (LongCat-Flash-Chat, LongCat-Flash-Thinking):
``<longcat_tool_call>\\n{"name": NAME, "arguments": {...}}\\n</longcat_tool_call>``.

Hermes' wire under LongCat's own tags (``open_json.JsonTagFormat``): any number per reply, after
text and an optional ``<think>`` block; ``arguments`` is an object or a JSON string holding one; a
markdown fence around the JSON and a trailing comma are repaired; a missing closing tag is
accepted only when the reply ended normally right after the JSON. No published chat template was
found (the search: tests/fixtures/chat_templates/sources.txt): a template is known as LongCat's
by its rendered call, or by the tag it names (``app.engine.formats.detect``).
"""

from __future__ import annotations

from app.engine.formats.base import register
from app.engine.formats.open_json import JsonTagFormat

__all__ = ["LONGCAT"]

OPEN = "<longcat_tool_call>"
CLOSE = "</longcat_tool_call>"

LONGCAT = register(
    JsonTagFormat("longcat", "LongCat JSON (Meituan LongCat-Flash Chat, Thinking)", (OPEN,), close=CLOSE)
)
