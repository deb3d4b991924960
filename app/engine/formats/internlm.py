"""InternLM calls (InternLM2, InternLM2.5, Intern-S1):
``<|action_start|><|plugin|>\\n{"name": NAME, "parameters": {...}}<|action_end|>``.

The action opener names the plugin channel (``<|interpreter|>`` actions are code, not calls:
text); the JSON holds ``name`` and ``parameters`` (``arguments`` is read too, as vLLM's InternLM
template writes it; never both), an object or a JSON string holding one. Any number per reply,
after text and an optional ``<think>`` block (Intern-S1). A missing ``<|action_end|>`` is accepted
only when the reply ended normally right after the JSON.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from app.engine.formats.base import THINK, Format, RegionScanner, one_call, register
from app.engine.formats.jsonscan import loads_repaired, name_arguments
from app.engine.formats.sections import JsonTagScanner, closed_body, json_text

__all__ = ["InternLMFormat"]

OPEN = "<|action_start|><|plugin|>"
CLOSE = "<|action_end|>"


def _read(inner: str) -> tuple[str, dict[str, Any]] | None:
    ok, obj = loads_repaired(inner.strip())
    if not ok or not isinstance(obj, dict) or ("parameters" in obj and "arguments" in obj):
        return None
    return name_arguments(obj, args_key="arguments" if "arguments" in obj else "parameters")


class InternLMFormat(Format):
    name = "internlm"
    label = "InternLM actions (InternLM2, InternLM2.5, Intern-S1)"
    openers = (OPEN,)
    reasoning = THINK

    def region_scanner(self, opener: str) -> RegionScanner:
        return JsonTagScanner(CLOSE, fences=False)

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        inner = closed_body(body, CLOSE, last="}", at_end=at_end, truncated=truncated)
        return one_call(opener, body, None if inner is None else _read(inner))

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import json_tagged

        return partial(json_tagged, open=OPEN, close=CLOSE, lead="\n", args_key="parameters")

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return OPEN + "\n" + json_text({"name": name, "parameters": dict(arguments)}) + CLOSE


register(InternLMFormat())
