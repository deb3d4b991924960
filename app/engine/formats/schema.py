"""Type a call's arguments once, by the tool's JSON Schema.

Two wires exist. JSON wires (hermes, llama3, mistral) give JSON values: a string given for a
non-string property is read as a literal (``"10"`` -> 10 for an integer). Raw wires (qwen-xml)
give every value as text: the text is decoded by the schema (``8080`` stays ``"8080"`` for a
string property and becomes 8080 for an integer one). Literals may use JSON's ``true``/``null``
or the Python spellings ``True``/``None`` that some official templates write; objects and arrays
may be JSON (or Python literals). ``anyOf``/``oneOf`` and type arrays are honoured. A value that
cannot be typed is kept as written, for the dispatcher to reject.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

__all__ = ["json_type", "schema_types", "tool_schemas", "type_arguments", "type_value"]

_INT = re.compile(r"-?(?:0|[1-9]\d*)")
_NUM = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
_ORDER = ("null", "boolean", "integer", "number", "object", "array", "string")


def tool_schemas(tools: list[dict[str, Any]] | None) -> dict[str, dict[str, Any]]:
    """Map tool name -> parameters schema, from an OpenAI-format tool list (bad entries skipped)."""
    out: dict[str, dict[str, Any]] = {}
    for tool in tools or []:
        if not isinstance(tool, dict):
            continue
        fn = tool.get("function", tool)
        if isinstance(fn, dict) and isinstance(fn.get("name"), str):
            params = fn.get("parameters")
            out[fn["name"]] = params if isinstance(params, dict) else {}
    return out


def schema_types(schema: Any) -> list[str]:
    """The JSON types a schema allows, most specific first; [] when unconstrained."""
    if not isinstance(schema, dict):
        return []
    found: list[str] = []
    t = schema.get("type")
    if isinstance(t, str):
        found.append(t)
    elif isinstance(t, list):
        found.extend(x for x in t if isinstance(x, str))
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key) or []:
            found.extend(schema_types(sub))
    if not found:
        if "properties" in schema:
            found.append("object")
        elif "items" in schema:
            found.append("array")
        elif "enum" in schema:
            found.extend(json_type(v) for v in schema["enum"] if json_type(v))
    uniq = [t for t in _ORDER if t in found]
    return uniq


def json_type(v: Any) -> str:
    """The JSON type name of a Python value (a dict is an object, a list an array); "" for a
    value JSON has no type for."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "boolean"
    if isinstance(v, int):
        return "integer"
    if isinstance(v, float):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    if isinstance(v, dict):
        return "object"
    return ""


def _fits(v: Any, t: str) -> bool:
    k = json_type(v)
    return k == t or (t == "number" and k == "integer")


def _literal(text: str, t: str) -> tuple[bool, Any]:
    s = text.strip()
    if t == "null":
        return (True, None) if s in ("null", "None") else (False, None)
    if t == "boolean":
        if s in ("true", "True"):
            return True, True
        if s in ("false", "False"):
            return True, False
        return False, None
    if t == "integer":
        return (True, int(s)) if _INT.fullmatch(s) else (False, None)
    if t == "number":
        if _INT.fullmatch(s):
            return True, int(s)
        if _NUM.fullmatch(s):
            return True, float(s)
        return False, None
    if t in ("object", "array"):
        want = dict if t == "object" else list
        try:
            v = json.loads(s)
        except (ValueError, RecursionError):
            try:
                v = ast.literal_eval(s) if len(s) < 100_000 else None
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                return False, None
        return (True, v) if isinstance(v, want) else (False, None)
    return False, None


def type_value(value: Any, schema: Any, *, raw: bool = False) -> Any:
    """Type one value by ``schema``. ``raw``: the value is text from a raw wire."""
    types = schema_types(schema)
    if isinstance(value, str):
        if not types or types == ["string"] or (not raw and "string" in types):
            return value  # a string property keeps the text as written
        for t in types:
            if t != "string":
                ok, v = _literal(value, t)
                if ok:
                    return _recurse(v, schema, t)
        return value
    for t in types:
        if _fits(value, t):
            return _recurse(value, schema, t)
    return _recurse(value, schema, json_type(value)) if types == [] else value


def _sub(schema: Any, t: str) -> Any:
    """The branch of ``schema`` (possibly a union) that describes type ``t``."""
    if not isinstance(schema, dict):
        return {}
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in schema.get(key) or []:
            if t in schema_types(sub):
                return _sub(sub, t)
    return schema


def _recurse(value: Any, schema: Any, t: str) -> Any:
    sub = _sub(schema, t)
    if t == "object" and isinstance(value, dict):
        props = sub.get("properties") if isinstance(sub, dict) else None
        if isinstance(props, dict) and props:
            return {k: (type_value(v, props[k]) if k in props else v) for k, v in value.items()}
        return value
    if t == "array" and isinstance(value, list):
        items = sub.get("items") if isinstance(sub, dict) else None
        if isinstance(items, dict) and items:
            return [type_value(v, items) for v in value]
        return value
    return value


def type_arguments(
    arguments: dict[str, Any], schema: dict[str, Any] | None, *, raw: bool = False
) -> dict[str, Any]:
    """Type every argument by the tool's parameters schema; unknown names are kept as written."""
    props = (schema or {}).get("properties") if isinstance(schema, dict) else None
    if not isinstance(props, dict):
        props = {}
    out: dict[str, Any] = {}
    for name, value in arguments.items():
        if name in props:
            out[name] = type_value(value, props[name], raw=raw)
        else:
            out[name] = value
    return out
