"""Qt-free engine: templates, tool-call formats, generation, the chat loop, models.

Public API (docs/ARCHITECTURE.md)::

    from app.engine import load_model, generate, complete, ChatSession

The names are exported lazily (PEP 562 ``__getattr__``): ``import app.engine`` imports none of
its submodules, so neither llama_cpp nor gguf is loaded until a name is first used, and the UI,
which imports this package at startup, starts fast.

``generate`` is both a function and the submodule ``app.engine.generate``: the package attribute
is always the function (importing the submodule does not rebind it); reach the module with
``from app.engine.generate import ...`` or ``sys.modules["app.engine.generate"]``.
"""

from __future__ import annotations

import importlib
import sys
from types import ModuleType
from typing import TYPE_CHECKING, Any

# name -> the submodule that defines it
_EXPORTS: dict[str, str] = {
    "load_model": "app.engine.llm",
    "LoadedModel": "app.engine.llm",
    "LoadSettings": "app.engine.llm",
    "ModelLoadError": "app.engine.llm",
    "generate": "app.engine.generate",
    "complete": "app.engine.generate",
    "Generation": "app.engine.generate",
    "GenerationError": "app.engine.generate",
    "GenerationResult": "app.engine.generate",
    "GrammarError": "app.engine.generate",
    "ContextOverflowError": "app.engine.generate",
    "ChatSession": "app.engine.chat",
    "DEFAULT_MAX_ROUNDS": "app.engine.chat",
    "TOOL_FORMAT_SETTING": "app.engine.chat",
    "resolve_tool_format": "app.engine.chat",
    "Message": "app.engine.messages",
    "ToolCall": "app.calls",
    "SamplingParams": "app.engine.sampling",
    "resolve_sampling": "app.engine.sampling",
    "PromptRenderError": "app.engine.render",
    "RenderedPrompt": "app.engine.render",
    "render_prompt": "app.engine.render",
}

__all__ = [
    "ChatSession",
    "ContextOverflowError",
    "DEFAULT_MAX_ROUNDS",
    "Generation",
    "GenerationError",
    "GenerationResult",
    "GrammarError",
    "LoadSettings",
    "LoadedModel",
    "Message",
    "ModelLoadError",
    "PromptRenderError",
    "RenderedPrompt",
    "SamplingParams",
    "TOOL_FORMAT_SETTING",
    "ToolCall",
    "complete",
    "generate",
    "load_model",
    "render_prompt",
    "resolve_sampling",
    "resolve_tool_format",
]

if TYPE_CHECKING:  # for type checkers and IDEs only; at run time the names load on first use
    from app.calls import ToolCall
    from app.engine.chat import DEFAULT_MAX_ROUNDS, TOOL_FORMAT_SETTING, ChatSession, resolve_tool_format
    from app.engine.generate import (
        ContextOverflowError,
        Generation,
        GenerationError,
        GenerationResult,
        GrammarError,
        complete,
        generate,
    )
    from app.engine.llm import LoadedModel, LoadSettings, ModelLoadError, load_model
    from app.engine.messages import Message
    from app.engine.render import PromptRenderError, RenderedPrompt, render_prompt
    from app.engine.sampling import SamplingParams, resolve_sampling


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'app.engine' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


# Exports that share their name with the submodule defining them (``generate``).
_SHADOWED = frozenset(n for n, mod in _EXPORTS.items() if mod == f"{__name__}.{n}")


class _EngineModule(ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        # The import system binds a freshly imported submodule on its package; for ``generate``
        # that would hide the function, so the submodule stays reachable only via sys.modules.
        if name in _SHADOWED and isinstance(value, ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _EngineModule
