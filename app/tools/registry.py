"""The tool registry, and tools made from typed Python functions.

``tool_from_function`` reads a function's signature and docstring and builds the JSON Schema
with pydantic, so a built-in tool is just a typed, documented function::

    def weather(city: str, days: int = 1) -> str:
        '''Forecast for a city.

        Args:
            city: The city name.
            days: How many days ahead.
        '''
"""

from __future__ import annotations

import inspect
import re
import threading
import typing
from collections.abc import Callable, Iterable
from typing import Any

from app.calls import is_tool_name
from app.tools.types import Tool

__all__ = ["ToolRegistry", "parse_docstring", "tool_from_function"]

_SECTION_RE = re.compile(r"^\s*(Args|Arguments|Parameters|Params)\s*:\s*$")
_OTHER_SECTION_RE = re.compile(r"^\s*(Returns?|Raises|Yields|Examples?|Notes?)\s*:\s*$")
_PARAM_RE = re.compile(r"^\s*(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")


def parse_docstring(doc: str | None) -> tuple[str, dict[str, str]]:
    """(description, {param: description}) from a Google-style docstring."""
    if not doc:
        return "", {}
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    params: dict[str, str] = {}
    section: str | None = None
    current: str | None = None
    for line in lines:
        if _SECTION_RE.match(line):
            section, current = "args", None
            continue
        if _OTHER_SECTION_RE.match(line):
            section, current = "other", None
            continue
        if section is None:
            summary.append(line)
        elif section == "args":
            m = _PARAM_RE.match(line)
            if m and (len(line) - len(line.lstrip())) <= 4:
                current = m.group(1)
                params[current] = m.group(2).strip()
            elif current and line.strip():
                params[current] = (params[current] + " " + line.strip()).strip()
    description = "\n".join(summary).strip()
    return description, params


def _strip_titles(node: Any) -> Any:
    """pydantic adds a ``title`` to every property; templates and models do not need them."""
    if isinstance(node, dict):
        return {k: _strip_titles(v) for k, v in node.items() if not (k == "title" and isinstance(v, str))}
    if isinstance(node, list):
        return [_strip_titles(v) for v in node]
    return node


def tool_from_function(
    func: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    side_effects: bool = False,
    timeout_s: float | None = None,
    source: str = "builtin",
    cancellable: bool = False,
) -> Tool:
    """A Tool whose schema comes from ``func``'s type hints and docstring (via pydantic).

    The handler validates the (already schema-checked) arguments into Python values with the
    same pydantic model, so ``int`` parameters arrive as ints, and calls ``func``.
    """
    import pydantic

    sig = inspect.signature(func)
    hints = typing.get_type_hints(func, include_extras=True)  # Annotated constraints reach the schema
    doc_description, doc_params = parse_docstring(func.__doc__)
    fields: dict[str, Any] = {}
    for pname, param in sig.parameters.items():
        if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            raise TypeError(f"Tool function {func.__name__} may not take *args or **kwargs")
        if pname not in hints:
            raise TypeError(f"Tool function {func.__name__}: parameter '{pname}' has no type hint")
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[pname] = (hints[pname], pydantic.Field(default, description=doc_params.get(pname) or None))
    tool_name = name or func.__name__
    model = pydantic.create_model(
        f"{tool_name.replace('.', '_')}_arguments",
        __config__=pydantic.ConfigDict(extra="forbid"),
        **fields,
    )
    schema = _strip_titles(model.model_json_schema())
    schema.pop("additionalProperties", None)
    schema.setdefault("properties", {})
    schema["type"] = "object"
    if not schema.get("required"):
        schema.pop("required", None)

    def handler(**kwargs: Any) -> Any:
        values = model.model_validate(kwargs)
        return func(**{k: getattr(values, k) for k in fields})

    return Tool(
        name=tool_name,
        description=description if description is not None else doc_description,
        parameters=schema,
        side_effects=side_effects,
        handler=handler,
        timeout_s=timeout_s,
        source=source,
        cancellable=cancellable,
    )


class ToolRegistry:
    """The tools Callisto knows, and which of them are enabled for a conversation.

    Thread-safe: the engine reads it from its worker thread while the UI toggles tools.
    A newly registered tool is enabled unless ``enabled=False`` is passed.
    """

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._lock = threading.RLock()
        self._tools: dict[str, Tool] = {}
        self._disabled: set[str] = set()
        for tool in tools:
            self.register(tool)

    def register(self, tool: Tool, *, enabled: bool = True, replace: bool = False) -> Tool:
        """Add a tool. A second tool with the same name raises ValueError unless ``replace``."""
        if not isinstance(tool, Tool):
            raise TypeError(f"register() takes a Tool, got {type(tool).__name__}")
        if not is_tool_name(tool.name):
            raise ValueError(
                f"Tool name {tool.name!r} is invalid: use letters, digits, '_', '-' or '.', "
                "start with a letter or '_', at most 64 characters"
            )
        if not isinstance(tool.parameters, dict) or tool.parameters.get("type") != "object":
            raise ValueError(f"Tool {tool.name!r}: parameters must be a JSON Schema with type 'object'")
        with self._lock:
            if tool.name in self._tools and not replace:
                raise ValueError(f"A tool named {tool.name!r} is already registered")
            self._tools[tool.name] = tool
            if enabled:
                self._disabled.discard(tool.name)
            else:
                self._disabled.add(tool.name)
        return tool

    def register_function(self, func: Callable[..., Any] | None = None, **kwargs: Any) -> Any:
        """Register a typed function as a tool; usable as ``@registry.register_function`` too."""

        def wrap(f: Callable[..., Any]) -> Callable[..., Any]:
            self.register(tool_from_function(f, **kwargs))
            return f

        return wrap(func) if func is not None else wrap

    def unregister(self, name: str) -> None:
        with self._lock:
            self._tools.pop(name, None)
            self._disabled.discard(name)

    def unregister_source(self, source: str) -> None:
        """Remove every tool from one source (e.g. ``mcp:files`` when that server stops)."""
        with self._lock:
            for name in [n for n, t in self._tools.items() if t.source == source]:
                self.unregister(name)

    def get(self, name: str) -> Tool | None:
        with self._lock:
            return self._tools.get(name)

    def __contains__(self, name: object) -> bool:
        with self._lock:
            return name in self._tools

    def __len__(self) -> int:
        with self._lock:
            return len(self._tools)

    def names(self) -> list[str]:
        """Every registered tool's name, enabled or not, in registration order."""
        with self._lock:
            return list(self._tools)

    def set_enabled(self, name: str, enabled: bool) -> None:
        with self._lock:
            if name not in self._tools:
                raise KeyError(f"No tool named {name!r}")
            if enabled:
                self._disabled.discard(name)
            else:
                self._disabled.add(name)

    def is_enabled(self, name: str) -> bool:
        with self._lock:
            return name in self._tools and name not in self._disabled

    def enabled_tools(self) -> list[Tool]:
        """The tools offered to the model in this conversation."""
        with self._lock:
            return [t for n, t in self._tools.items() if n not in self._disabled]

    def enabled_names(self) -> list[str]:
        return [t.name for t in self.enabled_tools()]

    def openai_tools(self) -> list[dict[str, Any]]:
        """``[{"type": "function", "function": {name, description, parameters}}]`` for templates."""
        return [t.openai_schema() for t in self.enabled_tools()]
