"""What the window and its engine thread exchange besides events: the config a session is built
with, and what the window shows about the loaded model. Plain dataclasses (no Qt)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["DEFAULT_APPROVAL_TIMEOUT_S", "EngineConfig", "ModelInfo", "format_label"]

DEFAULT_APPROVAL_TIMEOUT_S = 300.0


@dataclass
class EngineConfig:
    """What a chat session is built with (from the effective settings for the loaded model)."""

    tool_format: str = "auto"
    system_prompt: str = ""
    sampling: dict[str, Any] = field(default_factory=dict)
    max_tokens: int = 1024
    n_ctx: int = 4096
    n_gpu_layers: int = 0
    n_threads: int | None = None
    workspace: str | None = None
    approvals: dict[str, str] = field(default_factory=dict)  # tool name -> "ask" | "allow"
    default_approval: str = "ask"
    approval_timeout_s: float = DEFAULT_APPROVAL_TIMEOUT_S
    mcp_servers_path: str | None = None  # mcp.json; its servers' tools join the built-in ones
    context_policy: str = "stop"  # app.engine.context.POLICIES: what a full context does


@dataclass
class ModelInfo:
    """What the model picker shows about the loaded model."""

    path: str
    name: str
    n_ctx: int
    detected_format: str | None  # family name, or None when auto finds none
    detected_label: str | None
    effective_format: str | None
    template_is_fallback: bool = False
    tools: tuple[str, ...] = ()  # the tools the session offers (the tool-choice control lists them)
    remote: str | None = None  # a remote engine's model: the provider's name (``path`` is its picker key)
    remote_mode: str | None = None  # its tool mode: api, callisto or auto


def format_label(name: str | None) -> str | None:
    """The family's label for the picker and settings ("Hermes JSON (Qwen2.5, ...)")."""
    if not name:
        return None
    from app.engine.formats import FORMATS

    fmt = FORMATS.get(name)
    return (fmt.label if fmt is not None else "") or name
