"""JSON typing and schema checks, in one place for the formats, the dispatcher and the check.

* :func:`json_type` names the JSON type of a Python value, one rule for everyone: ``None`` is
  null, a bool a boolean, an int an integer, a float a number, a str a string, a list or a tuple
  (JSON encoders write tuples as arrays) an array, a dict an object; any other value answers its
  Python type name (no JSON type is named so, so it fits no schema type).
* :func:`type_arguments` / :func:`type_value` type a call's arguments once, by the tool's schema
  (the formats, below).
* :func:`schema_problem` says the first way a value does not fit a schema (the check's scorer
  and corpus).

Typing arguments: two wires exist. JSON wires (hermes, llama3, mistral) give JSON values: a
string given for a non-string property is read as a literal (``"10"`` -> 10 for an integer). Raw
wires (qwen-xml) give every value as text: the text is decoded by the schema (``8080`` stays
``"8080"`` for a string property and becomes 8080 for an integer one). Literals may use JSON's
``true``/``null`` or the Python spellings ``True``/``None`` that some official templates write;
objects and arrays may be JSON (or Python literals). ``anyOf``/``oneOf`` and type arrays are
honoured. A value that cannot be typed is kept as written, for the dispatcher to reject.

Imports nothing from the app: it sits at the bottom layer, beside ``app.calls``.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

__all__ = [
    "JSON_TYPES",
    "PaddedInt",
    "json_type",
    "schema_problem",
    "schema_types",
    "tool_schemas",
    "type_arguments",
    "type_value",
]

_INT = re.compile(r"-?(?:0|[1-9]\d*)")
_NUM = re.compile(r"-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?")
# The JSON type names, most specific first.
JSON_TYPES = ("null", "boolean", "integer", "number", "object", "array", "string")


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
            found.extend(json_type(v) for v in schema["enum"])
    uniq = [t for t in JSON_TYPES if t in found]
    return uniq


# Python types and the JSON type each is, checked in order (a bool is an int in Python).
_PY_JSON: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (type(None), "null"),
    (bool, "boolean"),
    (int, "integer"),
    (float, "number"),
    (str, "string"),
    ((list, tuple), "array"),
    (dict, "object"),
)


def json_type(v: Any) -> str:
    """The JSON type name of a Python value (see the module's rule); a value JSON has no type
    for answers its Python type name."""
    return next((name for py, name in _PY_JSON if isinstance(v, py)), type(v).__name__)


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
            v = json.loads(s, strict=False)  # a raw newline inside a string: written so, meant so
        except (ValueError, RecursionError):
            try:
                v = ast.literal_eval(s) if len(s) < 100_000 else None
            except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
                return False, None
        return (True, v) if isinstance(v, want) else (False, None)
    return False, None


class PaddedInt(str):
    """An integer a model wrote with leading zeros (``zip=02139``, ``n=007``), which neither JSON nor
    Python reads: its text, typed by the schema as the integer it spells where the property is a
    number and may not be a string, kept as written (``"02139"``) anywhere else."""

    __slots__ = ()


def type_value(value: Any, schema: Any, *, raw: bool = False) -> Any:
    """Type one value by ``schema``. ``raw``: the value is text from a raw wire."""
    types = schema_types(schema)
    if isinstance(value, PaddedInt):
        numeric = ("integer" in types or "number" in types) and "string" not in types
        return int(value) if numeric else str(value)
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
            out[name] = str(value) if isinstance(value, PaddedInt) else value
    return out


# -- schema checks ------------------------------------------------------------------------------


def _type_ok(value: Any, typ: str) -> bool:
    """Whether ``value`` is of the JSON type ``typ`` (an integral float is an integer); an unknown
    type name admits anything."""
    if typ == "integer":
        return json_type(value) == "integer" or (isinstance(value, float) and value.is_integer())
    if typ == "number":
        return json_type(value) in ("integer", "number")
    if typ in JSON_TYPES:
        return json_type(value) == typ
    return True


def schema_problem(
    value: Any, schema: dict[str, Any], *, partial: bool = False, path: str = ""
) -> str | None:
    """The first way ``value`` does not fit ``schema`` (types, enums, required and unknown keys of
    objects, array items), as ``"key: problem"``; None when it fits. ``partial``: required keys may
    be missing at the top level (a subset expectation)."""
    where = path or "arguments"
    typ = schema.get("type")
    if isinstance(typ, list):
        if not any(_type_ok(value, t) for t in typ):
            return f"{where}: expected one of {typ}, got {json_type(value)}"
    elif isinstance(typ, str) and not _type_ok(value, typ):
        return f"{where}: expected {typ}, got {json_type(value)}"
    if "enum" in schema and value not in schema["enum"]:
        return f"{where}: {value!r} is not one of {schema['enum']}"
    if isinstance(value, dict) and (typ == "object" or "properties" in schema):
        props = schema.get("properties", {}) or {}
        if not partial:
            for key in schema.get("required", []) or []:
                if key not in value:
                    return f"{path + '.' if path else ''}{key}: required but missing"
        extra = schema.get("additionalProperties", True)
        for key, v in value.items():
            sub = f"{path}.{key}" if path else key
            if key in props:
                p = schema_problem(v, props[key], path=sub)
                if p:
                    return p
            elif isinstance(extra, dict):
                p = schema_problem(v, extra, path=sub)
                if p:
                    return p
            elif "additionalProperties" not in schema or extra is False:
                # a tool's parameters are its properties: a key outside them is a wrong argument
                return f"{sub}: not a parameter of this tool"
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            p = schema_problem(item, schema["items"], path=f"{where}[{i}]")
            if p:
                return p
    return None
