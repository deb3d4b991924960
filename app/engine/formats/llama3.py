"""Llama 3.1 to 3.3 JSON calls: the whole reply is ``{"name": NAME, "parameters": {...}}``.

Optionally after ``<|python_tag|>``, and with an optional ``"type": "function"`` (Llama 3.2
writes it, echoing its template's tool list); the arguments are ``"parameters"`` or, as Llama
models also write, ``"arguments"``. A bare JSON call may open only at the start of the reply; a
``<|python_tag|>`` call may follow text (``Let me check.<|python_tag|>{...}``). Either must end
the reply: JSON followed by more text is text. Bare JSON (no python tag) is a call only when it
names one of the offered tools, so JSON meant for the user stays text.

A deviation real models write, read strictly: Llama 3.2 (notably the 3B, served by Ollama) puts
its call in a markdown fence, the whole reply ```` ```json ⏎ {"name": ..., "parameters": ...} ⏎ ``` ````
(language word ``json`` or none). Read as bare JSON is: it must name an offered tool and be the
whole reply (whitespace around it aside); a fence of anything else, or with text after it, is text.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from app.engine.formats.base import Format, ParsedCall, RegionScanner, register
from app.engine.formats.jsonscan import loads_repaired, name_arguments
from app.engine.formats.open_json import FENCE, FencedListScanner, WholeObjectScanner, fenced_object
from app.engine.formats.sections import json_text
from app.json_schema import tool_schemas

__all__ = ["Llama3Format"]

PYTHON_TAG = "<|python_tag|>"


class Llama3Format(Format):
    name = "llama3"
    label = "Llama 3 JSON (Llama 3.1 to 3.3)"
    openers = (PYTHON_TAG, "{", FENCE)
    start_only = True
    anywhere = (PYTHON_TAG,)  # the python tag may follow text: "Let me check.<|python_tag|>{...}"

    def region_scanner(self, opener: str) -> RegionScanner:
        if opener == FENCE:
            return FencedListScanner("{", last=True)
        return WholeObjectScanner(opener == "{")

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if not at_end or truncated:
            return None
        if opener == FENCE:
            text = fenced_object(body)
            if text is None:
                return None
        else:
            text = "{" + body if opener == "{" else body
        ok, obj = loads_repaired(text.strip())
        if not ok or not isinstance(obj, dict):
            return None
        if "type" in obj:
            if obj["type"] != "function":
                return None
            obj = {k: v for k, v in obj.items() if k != "type"}
        # Llama 3.x writes "parameters" (its template's word) or "arguments": exactly one of them.
        keys = [k for k in ("parameters", "arguments") if k in obj]
        if len(keys) != 1:
            return None
        got = name_arguments(obj, args_key=keys[0])
        if got is None:
            return None
        name, args = got
        if opener != PYTHON_TAG and name not in tool_schemas(tools):
            return None  # bare (or fenced) JSON naming no offered tool may be meant for the user
        return [ParsedCall(name, args, opener + body.rstrip())], body[len(body.rstrip()) :]

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import json_tagged

        return partial(
            json_tagged,
            open=PYTHON_TAG,
            close="",
            args_key="parameters",
            optional_open=True,
            single=True,
            opener="{",
        )

    def cut_call(self, opener, body, tools):
        inc = super().cut_call(opener, body, tools)
        if inc is None:
            return None
        if opener != PYTHON_TAG and inc.name not in tool_schemas(tools):
            return None  # cut JSON that names no offered tool may be JSON meant for the user
        return inc

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return json_text({"name": name, "parameters": dict(arguments)})


register(Llama3Format())
