"""Grammars for what a request forces: a call (``tool_choice`` required or named) or a JSON reply
(``response_format``).

A forced choice is always decoded under a grammar; one that cannot be built (a family whose call
syntax has no grammar here, a schema the converter rejects) is a 400, never served unconstrained.
``tool_choice`` wins over ``response_format`` when both are set. ``auto`` and ``none`` are
unconstrained.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from app.server._errors import ApiError

if TYPE_CHECKING:
    from app.engine.llm import LoadedModel
    from app.server._engine import TurnRequest

__all__ = ["grammar_for"]

# Families whose call is one JSON object {"name": ..., "arguments": {...}} between fixed markers.
_JSON_WIRES: dict[str, tuple[str, str, str]] = {
    # family: (before each call, after each call, between calls)
    "hermes": ("<tool_call>\n", "\n</tool_call>", "\n"),
}


def _schema_gbnf(schema: dict[str, Any], what: str) -> str:
    from llama_cpp.llama_grammar import json_schema_to_gbnf

    try:
        return json_schema_to_gbnf(json.dumps(schema))
    except Exception as exc:  # noqa: BLE001 - the converter raises many kinds
        raise ApiError(400, f"the schema of {what} cannot be turned into a decoding constraint: {exc}",
                       code="invalid_schema") from exc


def _rename_root(gbnf: str, new: str) -> str:
    return re.sub(r"(?m)^root\s*::=", f"{new} ::=", gbnf, count=1)


def grammar_for(model: LoadedModel, family: str | None, req: TurnRequest) -> str | None:
    choice = req.tool_choice
    forced = choice == "required" or choice.startswith("function:")
    if forced and req.tools:
        return _call_grammar(family, req)
    fmt = req.response_format or {}
    kind = fmt.get("type")
    if kind == "json_object":
        from llama_cpp.llama_grammar import JSON_GBNF

        return JSON_GBNF
    if kind == "json_schema":
        spec = fmt.get("json_schema") or {}
        schema = spec.get("schema") if isinstance(spec, dict) else None
        if not isinstance(schema, dict):
            raise ApiError(400, "response_format.json_schema.schema must be a JSON Schema object",
                           param="response_format")
        return _schema_gbnf(schema, "response_format")
    return None


def _call_grammar(family: str | None, req: TurnRequest) -> str:
    if family is None:
        raise ApiError(400, "tool_choice forces a call, but this model has no tool-call format (start the "
                            "server with --tool-format FAMILY)", param="tool_choice")
    wire = _JSON_WIRES.get(family)
    if wire is None:
        raise ApiError(400, f"tool_choice {req.tool_choice!r} cannot be enforced for the {family} call format "
                            "on this server (no grammar for it); use tool_choice 'auto'", param="tool_choice")
    tools = req.tools or []
    if req.tool_choice.startswith("function:"):
        name = req.tool_choice.split(":", 1)[1]
        tools = [t for t in tools if t["function"]["name"] == name]
    options = []
    for t in tools:
        fn = t["function"]
        params = fn.get("parameters") or {"type": "object"}
        options.append({"type": "object", "properties": {"name": {"const": fn["name"]}, "arguments": params},
                        "required": ["name", "arguments"]})
    schema = options[0] if len(options) == 1 else {"oneOf": options}
    body = _rename_root(_schema_gbnf(schema, "the tools"), "call-object")
    before, after, between = (json.dumps(x) for x in wire)
    one = f"{before} call-object {after}"
    root = f"root ::= {one} ({between} {one})*\n" if req.parallel_tool_calls else f"root ::= {one}\n"
    return root + body
