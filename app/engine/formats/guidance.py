"""Tool guidance for templates that do not render tools.

When the user chooses a tool-call format explicitly for a model whose chat template ignores the
``tools`` variable (a plain ChatML template, a base model's fallback), the schemas and the call
syntax would otherwise never reach the prompt. The renderer (``app.engine.render``) then puts
:func:`tool_guidance` into the system message: the tools as JSON and one example call written
in the chosen family's syntax by :func:`call_example`, which is the family's own
``Format.example_call`` (each family writes its calls in its own module).

Every example is checked to parse back (``FORMATS[family].parse``) to exactly the call it
shows, for every registered family (tests/engine/test_guidance.py), so the guidance can never
teach a syntax the parser does not read.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

__all__ = ["call_example", "example_arguments", "tool_guidance"]


def call_example(family: str, name: str, arguments: Mapping[str, Any]) -> str:
    """One call of ``name`` with ``arguments``, written exactly as ``family``'s parser reads it
    (``FORMATS[family].example_call``). Raises ``ValueError`` for an unknown family."""
    from app.engine.formats import FORMATS

    try:
        fmt = FORMATS[family]
    except KeyError:
        raise ValueError(
            f"no call example for the tool-call format {family!r} (known: {', '.join(FORMATS)})"
        ) from None
    return fmt.example_call(name, dict(arguments))


_KINDS = {
    "integer": "integer",
    "number": "number",
    "boolean": "true or false",
    "array": "array",
    "object": "object",
}


def example_arguments(tool: Mapping[str, Any]) -> dict[str, Any]:
    """Placeholder arguments for an OpenAI-format tool: its required parameters (or its first
    one), each a placeholder in angle brackets that no argument could be mistaken for: the
    parameter's name (``"<city>"``), with its type when it is not a string (``"<count: integer>"``)
    or its choices for an enum (``"<mode: fast or slow>"``). Small models copy an example's values
    as arguments; a real-looking value (``"text"``, ``1``) would pass for one, these do not."""
    fn = tool.get("function", tool)
    params = fn.get("parameters") or {}
    props = params.get("properties") or {}
    names = [n for n in params.get("required") or [] if n in props] or list(props)[:1]
    out: dict[str, Any] = {}
    for n in names:
        spec = props.get(n) or {}
        if spec.get("enum"):
            out[n] = f"<{n}: {' or '.join(str(v) for v in spec['enum'][:4])}>"
            continue
        kind = spec.get("type")
        if kind is None and spec.get("anyOf"):  # e.g. Optional[str]: the first non-null type
            kind = next((a.get("type") for a in spec["anyOf"] if a.get("type") not in (None, "null")), None)
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "string")
        shown = _KINDS.get(str(kind))
        out[n] = f"<{n}: {shown}>" if shown else f"<{n}>"
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
