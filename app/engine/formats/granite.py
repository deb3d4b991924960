"""IBM Granite 3.x calls: ``<|tool_call|>[{"name": NAME, "arguments": {...}}, ...]``.

The special token ``<|tool_call|>`` and, after it, one JSON list of calls (no closing marker);
each element holds ``name`` and ``arguments`` (an object, or a JSON string holding one) and
nothing else. Granite 3.3 thinks in ``<think>...</think>`` and wraps its answer in
``<response>...</response>``: those two tags are structure, never content. The published
Granite 3.x templates take the tools but write a past call only as its turn's content, so no
call can be rendered through them: detection knows them by the marker their system prompt names
(``app.engine.formats.detect``). Granite 4 writes Hermes calls (the ``hermes`` family).
"""

from __future__ import annotations

from app.engine.formats.base import THINK, register
from app.engine.formats.open_json import OpenListFormat

__all__ = ["GRANITE"]

OPEN = "<|tool_call|>"
RESPONSE = ("<response>", "</response>")  # Granite 3.3's answer frame: structure

GRANITE = register(
    OpenListFormat(
        "granite",
        "Granite JSON list (IBM Granite 3.0, 3.1, 3.2, 3.3)",
        (OPEN, *RESPONSE),
        structure=RESPONSE,
        reasoning=THINK,
    )
)
