"""AI21 Jamba calls (Jamba 1.5, 1.6, 1.7): `` <tool_calls>[{"name": NAME, "arguments": {...}}, ...]</tool_calls>``.

Apriel's wire (the JSON list between ``<tool_calls>`` tags, read by ``json_list``) without
Apriel's reasoning: the generation prompt ends at the assistant role, so the reply opens with the
space the template writes after it (content, whitespace). ``arguments`` written as a JSON string
holding an object is read as that object. Detection tells a Jamba template from Apriel's by its
``<|bom|>`` / ``<|eom|>`` message markers (``app.engine.formats.detect``).
"""

from __future__ import annotations

from app.engine.formats.base import register
from app.engine.formats.json_list import JsonListFormat

__all__ = ["JAMBA"]

OPEN = "<tool_calls>"
CLOSE = "</tool_calls>"

JAMBA = register(
    JsonListFormat(
        "jamba", "Jamba JSON list (AI21 Jamba 1.5, 1.6, 1.7, Jamba Mini, Large)", (OPEN,), close=CLOSE
    )
)
