"""NVIDIA Nemotron Nano v2 calls: ``<TOOLCALL>[{"name": NAME, "arguments": {...}}, ...]</TOOLCALL>``.

Any number of calls in one list, after an optional ``<think>...</think>`` block (the template's
generation prompt opens ``<think>``, so a reply usually starts inside it). ``arguments`` written
as a JSON string holding an object is read as that object. Each element must have exactly the
keys ``name`` and ``arguments``; anything else makes the region text.
"""

from __future__ import annotations

from app.engine.formats.base import THINK, register
from app.engine.formats.json_list import JsonListFormat

__all__ = ["NEMOTRON_V2"]

OPEN = "<TOOLCALL>"
CLOSE = "</TOOLCALL>"

NEMOTRON_V2 = register(
    JsonListFormat(
        "nemotron-v2",
        "Nemotron v2 JSON list (NVIDIA Nemotron Nano v2)",
        (OPEN,),
        close=CLOSE,
        reasoning=THINK,
        args_required=True,
    )
)
