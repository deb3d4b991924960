"""Baidu ERNIE 4.5 calls: ``<tool_call>\\n{"name": NAME, "arguments": {...}}\\n</tool_call>``.

Hermes' wire (``open_json.JsonTagFormat``) with ERNIE's own reasoning and response markers:
ERNIE 4.5 Thinking reasons in ``<think>...</think>`` (its generation prompt may open the block) and
wraps its answer in ``<response>...</response>``; those two tags are structure, never content.
ERNIE is tried before Hermes, and only for templates that hold ERNIE's ``<|begin_of_sentence|>``
(``app.engine.formats.detect``), so Hermes' templates stay Hermes'. No published ERNIE 4.5 tool
template was found (the search: tests/fixtures/chat_templates/sources.txt).
"""

from __future__ import annotations

from app.engine.formats.base import register
from app.engine.formats.open_json import JsonTagFormat

__all__ = ["ERNIE45"]

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
RESPONSE = ("<response>", "</response>")  # ERNIE's answer frame: structure

ERNIE45 = register(
    JsonTagFormat(
        "ernie45", "ERNIE 4.5 JSON (Baidu ERNIE-4.5, ERNIE-4.5 Thinking)", (OPEN, *RESPONSE), close=CLOSE
    )
)
