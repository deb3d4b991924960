"""InternLM calls (InternLM2, InternLM2.5, Intern-S1):
``<|action_start|><|plugin|>\\n{"name": NAME, "parameters": {...}}<|action_end|>``.

The action opener names the plugin channel (``<|interpreter|>`` actions are code, not calls:
text); the JSON holds ``name`` and ``parameters`` (``arguments`` is read too, as vLLM's InternLM
template writes it; never both), an object or a JSON string holding one. Any number per reply,
after text and an optional ``<think>`` block (Intern-S1). A missing ``<|action_end|>`` is accepted
only when the reply ended normally right after the JSON.
"""

from __future__ import annotations

from app.engine.formats.base import register
from app.engine.formats.open_json import JsonTagFormat

__all__ = ["INTERNLM"]

OPEN = "<|action_start|><|plugin|>"
CLOSE = "<|action_end|>"

INTERNLM = register(
    JsonTagFormat(
        "internlm",
        "InternLM actions (InternLM2, InternLM2.5, Intern-S1)",
        (OPEN,),
        close=CLOSE,
        args_keys=("parameters", "arguments"),
        fences=False,
        layout=("\n", "", ""),
    )
)
