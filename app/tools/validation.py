"""Check a call's arguments against its tool's JSON Schema and say what is wrong in one sentence.

The sentence is written for the model, which reads it as the tool's result and can retry:
``Parameter 'days' must be an integer, got string "ten".``
"""

from __future__ import annotations

import json
import re
from typing import Any

from app.json_schema import json_type

__all__ = [
    "MAX_INT_DIGITS",
    "argument_problem",
    "describe_value",
    "parse_arguments",
    "scrub_value",
    "validate_arguments",
]

MAX_INT_DIGITS = 4300  # Python's own limit for int <-> decimal text (json.dumps, str, the tokenizer)
_MAX_INT_BITS = 14284  # 4300 decimal digits
_SCRUB_DEPTH = 200
_SURROGATE = re.compile("[\ud800-\udfff]")

_TYPE_WORDS = {
    "integer": "an integer",
    "number": "a number",
    "string": "a string",
    "boolean": "a boolean (true or false)",
    "array": "an array",
    "object": "an object",
    "null": "null",
}

_MAX_SHOWN = 60


def describe_value(value: Any) -> str:
    """``string "ten"``, ``integer 3``, ``array [1, 2]``... shortened for long values."""
    kind = json_type(value)
    if kind == "null":
        return "null"
    try:
        shown = json.dumps(scrub_value(value), ensure_ascii=False, default=str)
    except (TypeError, ValueError, RecursionError):
        shown = type(value).__name__
    if len(shown) > _MAX_SHOWN:
        shown = shown[: _MAX_SHOWN - 3] + "..."
    return f"{kind} {shown}"


def _path_name(path: list[Any]) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out


def _expected_types(schema: Any) -> list[str]:
    if not isinstance(schema, dict):
        return []
    t = schema.get("type")
    if isinstance(t, str):
        return [t]
    if isinstance(t, list):
        return [x for x in t if isinstance(x, str)]
    found: list[str] = []
    for key in ("anyOf", "oneOf"):
        for sub in schema.get(key, []) or []:
            for x in _expected_types(sub):
                if x not in found:
                    found.append(x)
    if "enum" in schema and not found:
        return []
    return found


def _types_phrase(types: list[str]) -> str:
    words = [_TYPE_WORDS.get(t, t) for t in types]
    if len(words) == 1:
        return words[0]
    return ", ".join(words[:-1]) + " or " + words[-1]


def _expected_phrase(schema: Any) -> str:
    """What a parameter's schema wants, in words: ``a string``, ``one of "c", "f"``, ``a value``."""
    types = _expected_types(schema)
    if types:
        return _types_phrase(types)
    if isinstance(schema, dict) and isinstance(schema.get("enum"), list) and schema["enum"]:
        return "one of " + ", ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    if isinstance(schema, dict) and "const" in schema:
        return json.dumps(schema["const"], ensure_ascii=False)
    return "a value"


def _subject(path: list[Any]) -> str:
    return f"Parameter '{_path_name(path)}'" if path else "The arguments"


def _error_sentence(error: Any) -> str:
    path = list(error.absolute_path)
    subject = _subject(path)
    kind = error.validator
    got = describe_value(error.instance)
    if kind == "required":
        missing = [name for name in error.validator_value if name not in (error.instance or {})]
        name = missing[0] if missing else error.message
        where = f" in '{_path_name(path)}'" if path else ""
        properties = error.schema.get("properties") if isinstance(error.schema, dict) else None
        expected = _expected_phrase(properties.get(name) if isinstance(properties, dict) else None)
        return f"Missing required parameter '{name}'{where}: expected {expected}, got nothing."
    if kind == "type" or kind in ("anyOf", "oneOf"):
        types = _expected_types(error.schema)
        if types:
            return f"{subject} must be {_types_phrase(types)}, got {got}."
    if kind == "enum":
        allowed = ", ".join(json.dumps(v, ensure_ascii=False) for v in error.validator_value)
        return f"{subject} must be one of {allowed}, got {got}."
    if kind == "const":
        return f"{subject} must be {json.dumps(error.validator_value)}, got {got}."
    if kind == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties") or {}))
        expected = ", ".join(sorted((error.schema.get("properties") or {}).keys())) or "none"
        name = f"{_path_name(path)}.{extra[0]}" if path and extra else (extra[0] if extra else "?")
        return f"Unknown parameter '{name}' (expected: {expected})."
    if kind in ("minimum", "exclusiveMinimum", "maximum", "exclusiveMaximum"):
        words = {
            "minimum": "at least",
            "exclusiveMinimum": "greater than",
            "maximum": "at most",
            "exclusiveMaximum": "less than",
        }[kind]
        return f"{subject} must be {words} {error.validator_value}, got {got}."
    if kind in ("minLength", "maxLength", "minItems", "maxItems"):
        words = "at least" if kind.startswith("min") else "at most"
        unit = "characters" if kind.endswith("Length") else "items"
        return f"{subject} must have {words} {error.validator_value} {unit}, got {got}."
    if kind == "pattern":
        return f"{subject} must match the pattern {error.validator_value!r}, got {got}."
    message = str(error.message)
    if len(message) > 200:
        message = message[:197] + "..."
    return f"{subject} is invalid: {message}."


def _has_lone_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def argument_problem(value: Any, _path: tuple[Any, ...] = (), _depth: int = 0) -> str | None:
    """One sentence when ``value`` holds what no tool, history or tokenizer can take, else None.

    Refused: lone surrogates (``"\\ud800"`` escapes: text that is not valid Unicode and cannot be
    encoded as UTF-8) and integers of more than :data:`MAX_INT_DIGITS` digits (Python cannot even
    write them as text). Keys are checked like values.
    """
    where = f" in parameter '{_path_name(list(_path))}'" if _path else ""
    if _depth > _SCRUB_DEPTH:
        return f"The arguments are nested too deeply (more than {_SCRUB_DEPTH} levels)."
    if isinstance(value, str):
        if _has_lone_surrogate(value):
            return (
                f"The arguments hold a lone surrogate escape (such as \\ud800){where}, which is not valid "
                "text; write the character itself or leave it out."
            )
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        if value.bit_length() > _MAX_INT_BITS:
            return f"The arguments hold an integer of more than {MAX_INT_DIGITS} digits{where}, which is too large."
        return None
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and _has_lone_surrogate(key):
                return "The arguments hold a lone surrogate escape (such as \\ud800) in a parameter name."
            problem = argument_problem(item, (*_path, key), _depth + 1)
            if problem:
                return problem
        return None
    if isinstance(value, list | tuple):
        for i, item in enumerate(value):
            problem = argument_problem(item, (*_path, i), _depth + 1)
            if problem:
                return problem
    return None


def scrub_value(value: Any, _depth: int = 0) -> Any:
    """A JSON-like copy of ``value`` that any encoder takes: lone surrogates become U+FFFD and
    integers too long to write as decimal text become a short placeholder string.

    Dicts, lists and tuples are copied (tuples as lists), so the copy shares nothing mutable with
    ``value``; other values are kept as they are. Used wherever model-made values are stored or
    rendered (history, chat templates, the CLI's output).
    """
    if isinstance(value, str):
        if _has_lone_surrogate(value):
            return _SURROGATE.sub("\ufffd", value)
        return value
    if isinstance(value, bool) or value is None or isinstance(value, float):
        return value
    if isinstance(value, int):
        if value.bit_length() > _MAX_INT_BITS:
            return f"<integer of more than {MAX_INT_DIGITS} digits>"
        return value
    if _depth > _SCRUB_DEPTH:
        return None
    if isinstance(value, dict):
        return {
            scrub_value(k, _depth + 1) if isinstance(k, str) else k: scrub_value(v, _depth + 1)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [scrub_value(v, _depth + 1) for v in value]
    return value


def parse_arguments(arguments: Any) -> tuple[dict[str, Any] | None, str | None]:
    """Turn a call's arguments into a dict, or say why they are not one.

    Accepts a dict, a JSON object as text, or an empty string / None (no arguments).
    """
    if arguments is None:
        return {}, None
    if isinstance(arguments, str):
        text = arguments.strip()
        if not text:
            return {}, None
        try:
            arguments = json.loads(text)
        except json.JSONDecodeError as exc:
            return None, f"The arguments are not valid JSON ({exc.msg} at position {exc.pos})."
        except (ValueError, RecursionError) as exc:  # an integer over Python's digit limit, or too deep
            if "digits" in str(exc):
                return (
                    None,
                    f"The arguments hold an integer of more than {MAX_INT_DIGITS} digits, which is too large.",
                )
            return None, "The arguments are not valid JSON (nested too deeply)."
    if not isinstance(arguments, dict):
        return None, f"The arguments must be a JSON object, got {describe_value(arguments)}."
    problem = argument_problem(arguments)
    if problem:
        return None, problem
    return arguments, None


def validate_arguments(schema: dict[str, Any], arguments: dict[str, Any]) -> str | None:
    """None when ``arguments`` fit ``schema``; otherwise one sentence naming what is wrong.

    Parameters the schema does not name are refused unless the schema explicitly allows
    extra properties (``additionalProperties`` true or a schema), so a misspelt parameter
    never silently falls back to a default.
    """
    import jsonschema

    properties = schema.get("properties")
    if isinstance(properties, dict):
        extra_allowed = schema.get("additionalProperties", False)
        if extra_allowed is False:
            unknown = [key for key in arguments if key not in properties]
            if unknown:
                expected = ", ".join(properties) or "no parameters"
                return f"Unknown parameter '{unknown[0]}' (expected: {expected})."
    try:
        validator_cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        validator = validator_cls(schema)
        errors = list(validator.iter_errors(arguments))
    except jsonschema.exceptions.SchemaError as exc:
        return f"The tool's parameter schema is invalid ({exc.message}); it cannot be called."
    except Exception as exc:  # noqa: BLE001 - a pathological schema must not crash dispatch
        return f"The arguments could not be checked against the tool's schema ({type(exc).__name__})."
    if not errors:
        return None
    # Report a missing parameter first, then the shallowest error: what a model fixes first.
    errors.sort(key=lambda e: (e.validator != "required", len(list(e.absolute_path)), str(e.validator)))
    return _error_sentence(errors[0])
