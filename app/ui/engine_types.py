"""What the window and its engine thread exchange besides events: the config a session is built
with, what the window shows about the loaded model, the remote model chatted with, and the state
the worker's collaborators share. Plain dataclasses (no Qt)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from app.engine.llm import LoadedModel
    from app.engine.loop import Session
    from app.engine.remote import Provider
    from app.storage.settings import RemoteProviderSettings

__all__ = [
    "DEFAULT_APPROVAL_TIMEOUT_S",
    "EngineConfig",
    "EngineState",
    "ModelInfo",
    "RemoteModel",
    "format_label",
    "recorded_model",
    "written_by",
]

DEFAULT_APPROVAL_TIMEOUT_S = 300.0


@dataclass
class EngineConfig:
    """What a chat session is built with (from the effective settings for the loaded model)."""

    tool_format: str = "auto"
    system_prompt: str = ""
    sampling: dict[str, Any] = field(default_factory=dict)
    max_tokens: int = 1024
    n_ctx: int = 4096
    n_gpu_layers: int | None = 0  # None: automatic (app.engine.inprocess.resolve_gpu_layers)
    n_threads: int | None = None
    kv_type: str = "f16"  # the KV cache's type: f16, q8_0, q4_0 (app.engine.models.estimate.KV_CACHE_TYPES)
    flash_attn: bool = True
    kv_store_mib: int = 0  # conversations' KV states kept on disk (app.engine.kvstore), MiB; 0: none
    ngram_draft: bool = True  # speculative decoding: draftless n-gram drafting (app.engine.speculative)
    draft_model: str | None = None  # a small GGUF with the model's vocabulary that drafts; None: none
    chat_template: str | None = None  # a template in place of the model's own (This model); None: its own
    workspace: str | None = None
    approvals: dict[str, str] = field(default_factory=dict)  # tool name -> "ask" | "allow"
    pins: dict[str, Any] = field(default_factory=dict)  # MCP tools' allowed definitions (tools.pins)
    default_approval: str = "ask"
    approval_timeout_s: float = DEFAULT_APPROVAL_TIMEOUT_S
    mcp_servers_path: str | None = None  # mcp.json; its servers' tools join the built-in ones
    context_policy: str = "stop"  # app.engine.context.POLICIES: what a full context does
    max_tool_rounds: int = 8  # chat.max_tool_rounds: rounds of tool calls in one reply
    #: a made model's (app.server._presets.Preset.chat_values): the messages every conversation
    #: starts with, as (role, content), and strings that end a reply
    opening: tuple[tuple[str, str], ...] = ()
    stop: tuple[str, ...] = ()
    made: str | None = None  # the made model these values are (its name); None: the file as it is


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
    #: the thinking switch its template reads (ChatSession.thinking_control.kind; "none": no switch,
    #: "remote": the endpoint's) and its effort levels
    thinking_kind: str = "none"
    thinking_levels: tuple[str, ...] = ()
    #: a vision projector is loaded beside the model: it reads images (issue 30)
    vision: bool = False


def recorded_model(info: ModelInfo | None) -> str | None:
    """What a reply's record keeps as its ``model`` (``TurnRecorder``'s): the file's path, or a
    remote engine's "provider: model"."""
    if info is None:
        return None
    return info.path if info.remote is None else f"{info.remote}: {info.name}"


def written_by(info: ModelInfo | None, made: str | None = None) -> dict[str, str]:
    """What a reply keeps of the model writing it, beside the file (``TurnRecorder``'s ``model``):
    ``model_name``, the model's name as the picker shows it (a file's name without ``.gguf``; a
    remote engine's model as "model · provider"), and ``made_model``, the made model (``made``)
    chatted with over the file, if any."""
    if info is None:
        return {}
    if info.remote is not None:
        return {"model_name": f"{info.name} · {info.remote}"}
    return {"model_name": Path(info.path).stem, **({"made_model": made} if made else {})}


def format_label(name: str | None) -> str | None:
    """The family's label for the picker and settings ("Hermes JSON (Qwen2.5, ...)")."""
    if not name:
        return None
    from app.engine.formats import FORMATS

    fmt = FORMATS.get(name)
    return (fmt.label if fmt is not None else "") or name


@dataclass(frozen=True)
class RemoteModel:
    """The remote engine's model the window chats with (instead of a local model)."""

    entry: RemoteProviderSettings  # the ``settings.remote`` entry: name, URL, API, tool mode
    model: str  # the model's name on that engine
    provider: Provider  # the client, with the key read from the keychain

    @property
    def key(self) -> str:
        """The picker's key of this model (the path of its :class:`ModelInfo`)."""
        from app.engine.remote.keys import remote_key

        return remote_key(self.entry.name, self.model)


@dataclass
class EngineState:
    """What the worker's collaborators (jobs, sessions, turns) share: the model and session of the
    window, used on the engine thread; ``cancel``/``busy`` are set from any thread."""

    config: EngineConfig = field(default_factory=EngineConfig)
    model: LoadedModel | None = None  # the window's local model (None with a remote one)
    remote: RemoteModel | None = None  # the remote model chatted with instead
    session: Session | None = None  # a ChatSession or a RemoteChatSession
    info: ModelInfo | None = None  # what the picker was last told
    conversation_id: int | None = None
    #: the open conversation's own system prompt, over the config's (Settings' or a made model's)
    chat_system: str | None = None
    tool_choice: Any = "auto"  # the next send's tool_choice (the window's control sets it)
    thinking: Any = None  # the next send's thinking (an app.engine.thinking.Thinking; the control sets it)
    cancel: threading.Event = field(default_factory=threading.Event)
    busy: threading.Event = field(default_factory=threading.Event)
    closing: bool = False
    #: the message being written, as the window last gave it (the context meter counts it), and
    #: whether a measure of it is queued
    draft: str = ""
    draft_asked: bool = False
