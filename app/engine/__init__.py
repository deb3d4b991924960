"""Qt-free engine: templates, tool-call formats, generation, the chat loop, models.

Public API (docs/ARCHITECTURE.md)::

    from app.engine import load_model, generate, complete, ChatSession

The names are exported lazily (``app.lazy``): ``import app.engine`` imports none of its
submodules, so neither llama_cpp nor gguf is loaded until a name is first used, and the UI,
which imports this package at startup, starts fast. ``generate`` and ``complete`` live in
``app.engine.generation``; the engine's errors in ``app.engine.errors``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.lazy import lazy_exports

# name -> the submodule that defines it
_EXPORTS: dict[str, str] = {
    "load_model": "app.engine.llm",
    "LoadedModel": "app.engine.llm",
    "LoadSettings": "app.engine.llm",
    "generate": "app.engine.generation",
    "complete": "app.engine.generation",
    "Generation": "app.engine.generation",
    "GenerationResult": "app.engine.backend",
    "EngineError": "app.engine.errors",
    "ModelLoadError": "app.engine.errors",
    "GenerationError": "app.engine.errors",
    "GrammarError": "app.engine.errors",
    "ContextOverflowError": "app.engine.errors",
    "PromptRenderError": "app.engine.errors",
    "ChatSession": "app.engine.chat",
    "DEFAULT_MAX_ROUNDS": "app.engine.chat",
    "TOOL_FORMAT_SETTING": "app.engine.chat",
    "resolve_tool_format": "app.engine.chat",
    "Message": "app.engine.messages",
    "ToolCall": "app.calls",
    "SamplingParams": "app.engine.sampling",
    "resolve_sampling": "app.engine.sampling",
    "RenderedPrompt": "app.engine.render",
    "render_prompt": "app.engine.render",
    "Thinking": "app.engine.thinking",
    "parse_thinking": "app.engine.thinking",
}

__all__ = [
    "ChatSession",
    "ContextOverflowError",
    "DEFAULT_MAX_ROUNDS",
    "EngineError",
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
    "Thinking",
    "ToolCall",
    "complete",
    "generate",
    "load_model",
    "parse_thinking",
    "render_prompt",
    "resolve_sampling",
    "resolve_tool_format",
]

if TYPE_CHECKING:  # for type checkers and IDEs only; at run time the names load on first use
    from app.calls import ToolCall
    from app.engine.backend import GenerationResult
    from app.engine.chat import DEFAULT_MAX_ROUNDS, TOOL_FORMAT_SETTING, ChatSession, resolve_tool_format
    from app.engine.errors import (
        ContextOverflowError,
        EngineError,
        GenerationError,
        GrammarError,
        ModelLoadError,
        PromptRenderError,
    )
    from app.engine.generation import Generation, complete, generate
    from app.engine.llm import LoadedModel, LoadSettings, load_model
    from app.engine.messages import Message
    from app.engine.render import RenderedPrompt, render_prompt
    from app.engine.sampling import SamplingParams, resolve_sampling
    from app.engine.thinking import Thinking, parse_thinking

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
