"""Tool guidance for templates that do not render tools (ADR 0061, past its walls).

When the user chooses a tool-call format explicitly for a model whose chat template ignores the
``tools`` variable (a plain ChatML template, a base model's fallback), the schemas and the call
syntax would otherwise never reach the prompt. The renderer (``app.engine.render``) then puts
:func:`tool_guidance` into the system message: the tools as JSON and one example call written
in the chosen family's syntax by :func:`call_example`.

Every example is checked to parse back (``FORMATS[family].parse``) to exactly the call it
shows, for every registered family (tests/engine/test_guidance.py), so the guidance can never
teach a syntax the parser does not read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from app.engine.formats.schema import json_type

__all__ = ["EXAMPLES", "call_example", "call_text", "example_arguments", "tool_guidance"]


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _raw(value: Any) -> str:
    """A value written as text (formats whose values are raw text typed by the schema)."""
    return value if isinstance(value, str) else _json(value)


def _hermes(name: str, args: Mapping[str, Any]) -> str:
    return "<tool_call>\n" + _json({"name": name, "arguments": dict(args)}) + "\n</tool_call>"


def _qwen_xml(name: str, args: Mapping[str, Any]) -> str:
    params = "".join(f"<parameter={k}>\n{_raw(v)}\n</parameter>\n" for k, v in args.items())
    return f"<tool_call>\n<function={name}>\n{params}</function>\n</tool_call>"


def _llama3(name: str, args: Mapping[str, Any]) -> str:
    return _json({"name": name, "parameters": dict(args)})


def _mistral(name: str, args: Mapping[str, Any]) -> str:
    return "[TOOL_CALLS]" + _json([{"name": name, "arguments": dict(args)}])


def _glm(name: str, args: Mapping[str, Any]) -> str:
    body = "".join(f"<arg_key>{k}</arg_key>\n<arg_value>{_raw(v)}</arg_value>\n" for k, v in args.items())
    return f"<tool_call>{name}\n{body}</tool_call>"


def _harmony(name: str, args: Mapping[str, Any]) -> str:
    return (f"<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>"
            f"{_json(dict(args))}<|call|>")


_GQ = '<|"|>'


def _gemma_value(value: Any) -> str:
    if isinstance(value, str):
        return _GQ + value + _GQ
    if isinstance(value, bool) or value is None:
        return _json(value)
    if isinstance(value, (int, float)):
        return repr(value)
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{k}:{_gemma_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ",".join(_gemma_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} in Gemma's notation")


def _gemma4(name: str, args: Mapping[str, Any]) -> str:
    return f"<|tool_call>call:{name}{_gemma_value(dict(args))}<tool_call|>"


_DS_BEGIN, _DS_CALL, _DS_SEP = "<｜tool▁calls▁begin｜>", "<｜tool▁call▁begin｜>", "<｜tool▁sep｜>"
_DS_CALL_END, _DS_END = "<｜tool▁call▁end｜>", "<｜tool▁calls▁end｜>"


def _deepseek_v3(name: str, args: Mapping[str, Any]) -> str:
    return (f"{_DS_BEGIN}{_DS_CALL}function{_DS_SEP}{name}\n```json\n{_json(dict(args))}\n```"
            f"{_DS_CALL_END}{_DS_END}")


def _deepseek_v31(name: str, args: Mapping[str, Any]) -> str:
    return f"{_DS_BEGIN}{_DS_CALL}{name}{_DS_SEP}{_json(dict(args))}{_DS_CALL_END}{_DS_END}"


_DSML = "｜DSML｜"


def _deepseek_dsml(name: str, args: Mapping[str, Any]) -> str:
    params = "".join(
        f'<{_DSML}parameter name="{k}" string="{"true" if isinstance(v, str) else "false"}">'
        f"{_raw(v)}</{_DSML}parameter>\n" for k, v in args.items())
    return (f"<{_DSML}function_calls>\n<{_DSML}invoke name=\"{name}\">\n{params}</{_DSML}invoke>\n"
            f"</{_DSML}function_calls>")


def _kimi_k2(name: str, args: Mapping[str, Any]) -> str:
    return (f"<|tool_calls_section_begin|><|tool_call_begin|>functions.{name}:0"
            f"<|tool_call_argument_begin|>{_json(dict(args))}<|tool_call_end|><|tool_calls_section_end|>")


def _k3_type(value: Any) -> str:
    return json_type(value) or ("object" if isinstance(value, Mapping) else "array")


def _kimi_k3(name: str, args: Mapping[str, Any]) -> str:
    frames = "".join(f'<|open|>argument key="{k}" type="{_k3_type(v)}"<|sep|>{_raw(v)}<|close|>\n'
                     for k, v in args.items())
    return f'<|open|>call tool="{name}"<|sep|>\n{frames}<|close|>'


def _py_value(value: Any) -> str:
    if isinstance(value, bool) or value is None or isinstance(value, (str, int, float)):
        return repr(value)
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{_py_value(k)}: {_py_value(v)}" for k, v in value.items()) + "}"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_py_value(v) for v in value) + "]"
    raise TypeError(f"cannot write {type(value).__name__} as a Python literal")


def _pythonic(name: str, args: Mapping[str, Any]) -> str:
    return f"[{name}(" + ", ".join(f"{k}={_py_value(v)}" for k, v in args.items()) + ")]"


#: One writer per family name in ``app.engine.formats.FORMATS``.
EXAMPLES: dict[str, Callable[[str, Mapping[str, Any]], str]] = {
    "hermes": _hermes,
    "qwen-xml": _qwen_xml,
    "llama3": _llama3,
    "mistral": _mistral,
    "glm": _glm,
    "harmony": _harmony,
    "gemma4": _gemma4,
    "deepseek-v3": _deepseek_v3,
    "deepseek-v3.1": _deepseek_v31,
    "deepseek-dsml": _deepseek_dsml,
    "kimi-k2": _kimi_k2,
    "kimi-k3": _kimi_k3,
    "pythonic": _pythonic,
}


def call_example(family: str, name: str, arguments: Mapping[str, Any]) -> str:
    """One call of ``name`` with ``arguments``, written exactly as ``family``'s parser reads it.

    Raises ``ValueError`` for a family without a writer."""
    try:
        writer = EXAMPLES[family]
    except KeyError:
        raise ValueError(f"no call example for the tool-call format {family!r} "
                         f"(known: {', '.join(EXAMPLES)})") from None
    return writer(name, arguments)


def call_text(family: str, name: str, arguments: Mapping[str, Any]) -> str:
    """A past call as the model would have written it (history replayed through a template that
    does not render ``tool_calls``); the same writer as :func:`call_example`."""
    return call_example(family, name, arguments)


_SAMPLES = {"string": "text", "integer": 1, "number": 1.5, "boolean": True, "array": [], "object": {}}


def example_arguments(tool: Mapping[str, Any]) -> dict[str, Any]:
    """Placeholder arguments for an OpenAI-format tool: its required parameters (or its first
    one) with a sample value of each declared type (an enum's first value)."""
    fn = tool.get("function", tool)
    params = fn.get("parameters") or {}
    props = params.get("properties") or {}
    names = [n for n in params.get("required") or [] if n in props] or list(props)[:1]
    out: dict[str, Any] = {}
    for n in names:
        spec = props.get(n) or {}
        if spec.get("enum"):
            out[n] = spec["enum"][0]
            continue
        kind = spec.get("type")
        if kind is None and spec.get("anyOf"):  # e.g. Optional[str]: the first non-null type
            kind = next((a.get("type") for a in spec["anyOf"] if a.get("type") not in (None, "null")), None)
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "string")
        out[n] = _SAMPLES.get(kind, "text")
    return out


def tool_guidance(family: str, tools: list[dict[str, Any]]) -> str:
    """The system-message text that offers ``tools`` and shows ``family``'s call syntax."""
    if not tools:
        raise ValueError("tool guidance needs at least one tool")
    first = tools[0].get("function", tools[0])
    example = call_example(family, first["name"], example_arguments(tools[0]))
    return (
        "You can call these tools:\n"
        + json.dumps(tools, ensure_ascii=False)
        + "\n\nTo call one, write exactly this, with the tool's name and your own arguments:\n"
        + example
        + "\n\nCall a tool only when it helps; its result comes back in the next message. "
        "Otherwise answer normally."
    )
