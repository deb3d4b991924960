"""Tencent Hunyuan-A13B calls: ``<tool_calls>[{"name": NAME, "arguments": {...}}, ...]</tool_calls>``.

Apriel's wire (the JSON list between ``<tool_calls>`` tags, read by ``json_list``); Hunyuan-A13B
reasons in ``<think>...</think>`` and wraps its answer in ``<answer>...</answer>``: those two tags
are structure, never content. ``arguments`` written as a JSON string holding an object is read as
that object. Detection tells a Hunyuan-A13B template from Apriel's by its ``<|extra_0|>`` /
``<|extra_4|>`` turn markers (``app.engine.formats.detect``); Hunyuan Hy3 writes another wire (the
``hunyuan`` family).
"""

from __future__ import annotations

from app.engine.formats.base import THINK, register
from app.engine.formats.json_list import JsonListFormat

__all__ = ["HUNYUAN_A13B"]

OPEN = "<tool_calls>"
CLOSE = "</tool_calls>"
ANSWER = ("<answer>", "</answer>")  # the answer's frame: structure

HUNYUAN_A13B = register(
    JsonListFormat(
        "hunyuan-a13b",
        "Hunyuan-A13B JSON list (Tencent Hunyuan-A13B Instruct)",
        (OPEN, *ANSWER),
        close=CLOSE,
        reasoning=THINK,
    )
)
