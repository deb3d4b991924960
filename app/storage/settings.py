"""User settings: a pydantic model persisted as JSON in the config folder.

* ``load_settings()`` returns ``(Settings, notice)``; ``notice`` is ``None`` or a
  :class:`SettingsNotice` the UI shows (file was corrupt and was backed up, fields were reset,
  file came from a newer Callisto...). Loading never raises for bad file contents.
* ``save_settings()`` writes atomically (temp file + ``os.replace``): a failed write leaves
  the previous file intact and raises :class:`SettingsSaveError` with a clear message.
* Older files are migrated step by step (``MIGRATIONS``) up to ``SCHEMA_VERSION``.
* Unknown keys (e.g. written by a newer version) are tolerated and kept on save.
* Per-model overrides (keyed by model path or sha256) of tool format and sampling;
  :func:`effective_settings` merges them over the global values.
* :func:`draft_model_problem`: why a file cannot be a draft model (speculative decoding's
  ``model.draft_model``, ``chat/serve --draft-model``), or None.
* ``images``: how the chat's images are kept in the history (:class:`ImageSettings`).

``chat.tool_format`` is a plain string ("auto", a family name, or "none"); the list of
valid choices lives in ``app.engine.formats.tool_format_choices()`` and is not imported here.
"""

from __future__ import annotations

import json
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from app.calls import PolicyDefault
from app.storage.atomic import AtomicWriteError, atomic_write_text
from app.storage.history import DEFAULT_MAX_IMAGE_BYTES
from app.storage.paths import settings_path

__all__ = [
    "SCHEMA_VERSION",
    "MIGRATIONS",
    "SAMPLER_FIELDS",
    "ApprovalDefault",
    "ChatSettings",
    "ImageSettings",
    "EffectiveSettings",
    "ModelOverride",
    "ModelSettings",
    "SamplingOverride",
    "SamplingSettings",
    "ServerSettings",
    "Settings",
    "RemoteProviderSettings",
    "SettingsNotice",
    "SettingsSaveError",
    "ToolSettings",
    "WindowSettings",
    "effective_settings",
    "load_settings",
    "migrate",
    "model_key",
    "draft_model_problem",
    "save_settings",
]

SCHEMA_VERSION = 2

ApprovalDefault = PolicyDefault  # a tool's remembered approval: the one vocabulary is app.calls's
#: What happens when a conversation no longer fits the context (``app.engine.context.POLICIES``).
ContextPolicy = Literal["stop", "drop_oldest", "truncate_middle"]
Theme = Literal["system", "light", "dark"]
#: a thinking choice (app.engine.thinking.THINKING_MODES and EFFORT_LEVELS; storage does not import the engine)
ThinkingSetting = Literal["auto", "off", "on", "none", "minimal", "low", "medium", "high", "xhigh", "max"]
#: the KV cache types (app.engine.models.estimate.KV_CACHE_TYPES; storage does not import the engine)
KVType = Literal["f16", "q8_0", "q4_0"]

_TOOL_FORMAT_RE = re.compile(r"^[a-z0-9][a-z0-9_.\-]*$")


class _Model(BaseModel):
    # Unknown keys are kept (so a newer version's keys survive a round-trip through an older one)
    model_config = ConfigDict(extra="allow", validate_assignment=True, protected_namespaces=())


def _check_tool_format(value: str | None) -> str | None:
    if value is None:
        return None
    v = value.strip().lower()
    if not _TOOL_FORMAT_RE.match(v):
        raise ValueError(f"tool format must be 'auto', 'none' or a family name, got {value!r}")
    return v


class _SamplerValues(_Model):
    """The sampler values a global setting and a per-model override share (``None``: not set)."""

    temperature: float | None = Field(None, ge=0.0, le=5.0)
    top_p: float | None = Field(None, gt=0.0, le=1.0)
    top_k: int | None = Field(None, ge=0)
    min_p: float | None = Field(None, ge=0.0, le=1.0)
    repeat_penalty: float | None = Field(None, gt=0.0, le=5.0)
    seed: int | None = None


class SamplingSettings(_SamplerValues):
    """Sampler values. ``None`` means "not set": the engine then uses the model's recommended
    value (GGUF ``general.sampling.*``) or llama.cpp's chat default. ``seed=None``: random."""

    max_tokens: int = Field(1024, ge=1)  # reply length limit (not a sampler value)


class SamplingOverride(_SamplerValues):
    """Per-model sampling: every field optional; ``None`` means "use the global value"."""

    max_tokens: int | None = Field(None, ge=1)


#: The sampler fields handed to the engine (``app.engine.sampling.resolve_sampling`` overrides).
SAMPLER_FIELDS = ("temperature", "top_p", "top_k", "min_p", "repeat_penalty", "seed")


class ChatSettings(_Model):
    tool_format: str = "auto"
    system_prompt: str = ""
    context_policy: ContextPolicy = "stop"
    tool_choice: str = "auto"  # auto | required | none: the tool-choice control's default
    #: The most rounds of tool calls one turn runs (the engine's ``max_rounds``; its default is
    #: ``app.engine.chat.DEFAULT_MAX_ROUNDS``): a turn still calling then ends with a notice.
    max_tool_rounds: int = Field(8, ge=1, le=100)
    #: After a new chat's first reply, the local model writes its title (``app.engine.titles``);
    #: off: a chat is called by its first message's first words. Off by default: the window runs
    #: nothing on the model that the person did not ask for.
    name_chats: bool = False

    @field_validator("tool_format")
    @classmethod
    def _v_tool_format(cls, v: str | None) -> str | None:
        return _check_tool_format(v)

    @field_validator("tool_choice", mode="before")
    @classmethod
    def _v_tool_choice(cls, v: Any) -> str:
        return v if v in ("auto", "required", "none") else "auto"  # unknown or malformed: auto


class ModelSettings(_Model):
    context_length: int = Field(4096, ge=256)
    # None: automatic (every layer where llama.cpp has a GPU backend, none without); -1: all; 0: CPU only
    gpu_layers: int | None = Field(None, ge=-1)
    threads: int | None = Field(None, ge=1)  # None: llama.cpp's default
    #: the KV cache's type: f16, q8_0 (about half the memory) or q4_0 (about a quarter)
    kv_type: KVType = "f16"
    #: flash attention (a q8_0 / q4_0 KV cache needs it: turning it off keeps an f16 cache)
    flash_attn: bool = True
    #: the conversations' KV states kept on disk (app.engine.kvstore), at most this many MiB; 0: none
    kv_store_mib: int = Field(2048, ge=0)
    #: speculative decoding (app.engine.speculative): draftless n-gram drafting from the prompt
    ngram_draft: bool = True
    #: a small GGUF with the model's vocabulary that drafts tokens for it; None: no draft model
    draft_model: str | None = None
    last_model_path: str | None = None
    #: the model made over the API (app.server._presets) over last_model_path the window last chatted
    #: with (it opens on it again); None: the file as it is
    last_made: str | None = None
    #: local model files loaded lately, newest first (the picker lists them, library or not)
    recent_models: list[str] = Field(default_factory=list)
    extra_model_folders: list[str] = Field(default_factory=list)

    @field_validator("draft_model")
    @classmethod
    def _v_draft_model(cls, v: str | None) -> str | None:
        return (v or "").strip() or None  # an empty path is no draft model


class ToolSettings(_Model):
    workspace: str | None = None
    #: per tool name; an MCP tool's key is "mcp:<server>/<tool>" and its "allow" needs a matching pin
    approvals: dict[str, ApprovalDefault] = Field(default_factory=dict)
    #: MCP tools' definitions as the person allowed them: key -> {"sha256", "definition"} (app.calls)
    pins: dict[str, dict[str, Any]] = Field(default_factory=dict)
    default_approval: ApprovalDefault = "ask"
    mcp_servers_path: str | None = None

    def approval_for(self, tool_name: str) -> ApprovalDefault:
        return self.approvals.get(tool_name, self.default_approval)


class WindowSettings(_Model):
    geometry: str | None = None  # base64 of QWidget.saveGeometry()
    state: str | None = None  # base64 of QMainWindow.saveState()
    panels: dict[str, bool] = Field(default_factory=dict)  # panel name -> visible
    theme: Theme = "system"  # "system" follows the OS
    #: the chat's text size (the messages and the message box), in percent of the system's
    text_scale: int = Field(100, ge=50, le=300)
    last_conversation_id: int | None = None  # reopened at start-up
    #: the conversation list's folders shown folded (their names)
    collapsed_folders: list[str] = Field(default_factory=list)
    dismissed: list[str] = Field(default_factory=list)  # notice codes the user chose not to see again


class ServerSettings(_Model):
    """The local API server (app/server): off until turned on; loopback only unless ``host`` says."""

    enabled: bool = False
    host: str = "127.0.0.1"
    port: int = Field(8453, ge=1, le=65535)
    #: The API key lives in the system keychain (``app.ui.server_key``), never here while one is
    #: installed; this field holds it only where no keychain is (and a key written by an older version
    #: is moved to the keychain on the next start). None or "": see ``require_key``.
    api_key: str | None = None
    #: The person chose a key: the server never starts without one (a key the keychain cannot give
    #: keeps the server stopped, with the reason, instead of serving without one).
    require_key: bool = False
    cors_origins: list[str] = Field(default_factory=list)
    max_loaded_models: int = Field(1, ge=1, le=8)  # the engine keeps this many models loaded at a time
    #: a model the server loaded, idle this many seconds, is unloaded (0: never; app.server._idle)
    idle_ttl_s: int = Field(0, ge=0, le=7 * 24 * 3600)
    #: while the server runs, a model is loaded with this many slots (app.engine.scheduler): the
    #: window's turns and the server's requests stream side by side, each slot with the whole
    #: context; with the server off the window's model has one slot (no extra KV memory)
    parallel: int = Field(4, ge=1, le=16)


#: how a conversation keeps the images sent in it: as given, or re-encoded by the window
ImageStore = Literal["original", "reencoded"]


class ImageSettings(_Model):
    """The images sent in the chat (issue 30), as the history keeps them."""

    #: the largest image a message may keep in the history, in bytes (larger: refused when saved)
    max_bytes: int = Field(
        DEFAULT_MAX_IMAGE_BYTES,
        ge=1024,
        le=1024 * 1024 * 1024,
        description="The largest image, in bytes, that a message may keep in the history; a larger one "
        "is refused with an error when the message is saved (default 20 MiB).",
    )
    #: "original": the file's bytes as given; "reencoded": the window re-encodes each image first
    store: ImageStore = Field(
        "original",
        description="original: keep and send each image exactly as the file was; reencoded: the window "
        "re-encodes each image (smaller, without the file's metadata) before it is sent and stored.",
    )


class RemoteProviderSettings(_Model):
    """A remote engine (``app.engine.remote``). Its API key lives in the system keychain under
    ``name`` (``app.engine.remote.keys``), never here: a key given in the file is dropped."""

    name: str = Field(min_length=1, max_length=100)
    url: str
    kind: Literal["openai", "anthropic", "ollama"] = "openai"
    mode: Literal["api", "callisto", "auto"] = "api"  # API tools, Callisto parsing of raw text, or by /props
    template: str | None = None  # Callisto parsing: a GGUF or tokenizer_config.json (None: /props)

    @model_validator(mode="before")
    @classmethod
    def _no_key(cls, data: Any) -> Any:
        if isinstance(data, dict):
            data = {k: v for k, v in data.items() if k not in ("api_key", "key", "token", "password")}
        return data

    @field_validator("url")
    @classmethod
    def _v_url(cls, v: str) -> str:
        if not v.startswith(("http://", "https://")):
            raise ValueError("a remote endpoint URL starts with http:// or https://")
        return v


class ModelOverride(_Model):
    tool_format: str | None = None  # None: use the global chat.tool_format
    context_policy: ContextPolicy | None = None  # None: use the global chat.context_policy
    kv_type: KVType | None = None  # None: use the global model.kv_type
    flash_attn: bool | None = None  # None: use the global model.flash_attn
    ngram_draft: bool | None = None  # None: use the global model.ngram_draft
    #: None: use the global model.draft_model; "": no draft model for this model; else its path
    draft_model: str | None = None
    sampling: SamplingOverride = Field(default_factory=SamplingOverride)
    #: the model's thinking (issue 30): auto/off/on or an effort level (app.engine.thinking); None: auto
    thinking: ThinkingSetting | None = None
    #: the most tokens of reasoning before the engine closes it; None: no budget
    thinking_budget: int | None = Field(None, ge=1, le=1_000_000)
    #: a Jinja chat template used in place of the model's own (app.engine.llm.LoadSettings); None:
    #: the model's. At most app.engine.templates.MAX_TEMPLATE_CHARS characters
    chat_template: str | None = Field(None, max_length=131_072)

    @field_validator("chat_template")
    @classmethod
    def _v_chat_template(cls, v: str | None) -> str | None:
        return v if v and v.strip() else None  # an empty template is the model's own

    @field_validator("tool_format")
    @classmethod
    def _v_tool_format(cls, v: str | None) -> str | None:
        return _check_tool_format(v)

    @field_validator("draft_model")
    @classmethod
    def _v_draft_model(cls, v: str | None) -> str | None:
        return None if v is None else v.strip()


class Settings(_Model):
    schema_version: int = SCHEMA_VERSION
    chat: ChatSettings = Field(default_factory=ChatSettings)
    sampling: SamplingSettings = Field(default_factory=SamplingSettings)
    model: ModelSettings = Field(default_factory=ModelSettings)
    tools: ToolSettings = Field(default_factory=ToolSettings)
    window: WindowSettings = Field(default_factory=WindowSettings)
    server: ServerSettings = Field(default_factory=ServerSettings)
    images: ImageSettings = Field(default_factory=ImageSettings)
    remote: list[RemoteProviderSettings] = Field(default_factory=list)
    model_overrides: dict[str, ModelOverride] = Field(default_factory=dict)

    def override_for(
        self, model_path: str | os.PathLike[str] | None, sha256: str | None = None
    ) -> ModelOverride | None:
        """The override for a model: by sha256 first (survives moving the file), then by path."""
        if sha256 and sha256.lower() in self.model_overrides:
            return self.model_overrides[sha256.lower()]
        if model_path is not None:
            key = model_key(model_path)
            if key in self.model_overrides:
                return self.model_overrides[key]
        return None

    def set_override(self, key: str, override: ModelOverride | None) -> None:
        """Set (or with ``None`` remove) the override for ``model_key(path)`` or a sha256."""
        overrides = dict(self.model_overrides)
        if override is None:
            overrides.pop(key, None)
        else:
            overrides[key] = override
        self.model_overrides = overrides


def model_key(model_path: str | os.PathLike[str]) -> str:
    """The key a model path is stored under in ``model_overrides`` (absolute, normalised)."""
    return os.path.normcase(os.path.abspath(os.path.expanduser(os.fspath(model_path))))


@dataclass(frozen=True)
class EffectiveSettings:
    """What the engine should use for one model: global values with the model's override on top."""

    tool_format: str
    sampling: SamplingSettings
    system_prompt: str
    context_length: int
    gpu_layers: int | None
    threads: int | None
    overridden: tuple[str, ...] = ()  # names of the fields that came from the override
    context_policy: str = "stop"
    #: the KV cache's type and flash attention: a quantized cache without flash attention is f16
    #: (llama.cpp quantizes V only with flash attention)
    kv_type: str = "f16"
    flash_attn: bool = True
    #: speculative decoding: n-gram drafting, and the draft model's path (None: none)
    ngram_draft: bool = True
    draft_model: str | None = None
    #: the model's own chat template replaced (its override's), else None
    chat_template: str | None = None

    @property
    def max_tokens(self) -> int:
        return self.sampling.max_tokens

    def sampler_overrides(self) -> dict[str, Any]:
        """The sampler values the user set, for ``resolve_sampling(gguf, overrides=...)``.

        Unset values are left out, so the model's recommended values still apply to them.
        """
        return {name: v for name in SAMPLER_FIELDS if (v := getattr(self.sampling, name)) is not None}

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool_format": self.tool_format,
            "sampling": self.sampling.model_dump(),
            "system_prompt": self.system_prompt,
            "context_length": self.context_length,
            "gpu_layers": self.gpu_layers,
            "threads": self.threads,
            "context_policy": self.context_policy,
            "kv_type": self.kv_type,
            "flash_attn": self.flash_attn,
            "ngram_draft": self.ngram_draft,
            "draft_model": self.draft_model,
            "chat_template": self.chat_template,
            "overridden": list(self.overridden),
        }


def effective_settings(
    settings: Settings, model_path: str | os.PathLike[str] | None = None, sha256: str | None = None
) -> EffectiveSettings:
    """Merge the per-model override (if any) over the global settings."""
    override = settings.override_for(model_path, sha256)
    sampling = settings.sampling.model_dump()
    chosen: dict[str, Any] = {
        "kv_type": settings.model.kv_type,
        "flash_attn": settings.model.flash_attn,
        "ngram_draft": settings.model.ngram_draft,
        "draft_model": settings.model.draft_model,
        "tool_format": settings.chat.tool_format,
        "context_policy": settings.chat.context_policy,
        "chat_template": None,  # only a model's own override sets one
    }
    overridden: list[str] = []
    if override is not None:
        _lay_over(chosen, override, tuple(chosen), "", overridden)
        _lay_over(sampling, override.sampling, tuple(SamplingOverride.model_fields), "sampling.", overridden)
    flash_attn: bool = chosen["flash_attn"]
    return EffectiveSettings(
        tool_format=chosen["tool_format"],
        sampling=SamplingSettings.model_validate(sampling),
        system_prompt=settings.chat.system_prompt,
        context_length=settings.model.context_length,
        gpu_layers=settings.model.gpu_layers,
        threads=settings.model.threads,
        overridden=tuple(overridden),
        context_policy=chosen["context_policy"],
        kv_type=chosen["kv_type"] if flash_attn else "f16",
        flash_attn=flash_attn,
        ngram_draft=chosen["ngram_draft"],
        draft_model=chosen["draft_model"] or None,  # an override's "" is no draft model
        chat_template=chosen["chat_template"],
    )


def draft_model_problem(path: str | os.PathLike[str]) -> str | None:
    """Why the file at ``path`` cannot be a draft model, in words ("… is not a .gguf file", "…
    does not exist"...), or None when it is a regular, readable file whose name ends in .gguf
    and that begins as a GGUF does. Whether its vocabulary matches the model's is the engine's
    to check when it loads. A pipe or device is never opened for reading (it could block)."""
    import stat as _stat

    shown = os.fspath(path)
    if not shown.strip():
        return "the draft model's path is empty"
    p = Path(shown).expanduser()
    if p.suffix.lower() != ".gguf":
        return f"the draft model {shown} is not a .gguf file"
    try:
        fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    except FileNotFoundError:
        return f"the draft model {shown} does not exist"
    except IsADirectoryError:
        return f"the draft model {shown} is a folder, not a file"
    except OSError as exc:
        return f"cannot read the draft model {shown}: {exc.strerror or exc}"
    try:
        if not _stat.S_ISREG(os.fstat(fd).st_mode):
            return f"the draft model {shown} is not a regular file (a folder, pipe or device)"
        magic = os.read(fd, 4)
    except OSError as exc:
        return f"cannot read the draft model {shown}: {exc.strerror or exc}"
    finally:
        os.close(fd)
    if magic != b"GGUF":
        return f"the draft model {shown} is not a GGUF file (it does not begin with GGUF)"
    return None


def _lay_over(
    values: dict[str, Any], over: BaseModel, names: tuple[str, ...], prefix: str, overridden: list[str]
) -> None:
    """Put the values ``over`` sets (not None) of ``names`` in ``values``; note each in ``overridden``."""
    for name in names:
        value = getattr(over, name)
        if value is not None:
            values[name] = value
            overridden.append(prefix + name)


# ---------------------------------------------------------------------------------------------
# Migrations: MIGRATIONS[n] turns a version-n dict into a version-(n+1) dict.


def _v1_to_v2(data: dict[str, Any]) -> dict[str, Any]:
    """Version 1 (the first prototype) kept everything flat at the top level."""
    flat = dict(data)
    flat.pop("schema_version", None)
    out: dict[str, Any] = {"schema_version": 2}
    moves = {
        "tool_format": ("chat", "tool_format"),
        "system_prompt": ("chat", "system_prompt"),
        "temperature": ("sampling", "temperature"),
        "top_p": ("sampling", "top_p"),
        "top_k": ("sampling", "top_k"),
        "min_p": ("sampling", "min_p"),
        "repeat_penalty": ("sampling", "repeat_penalty"),
        "seed": ("sampling", "seed"),
        "max_tokens": ("sampling", "max_tokens"),
        "n_ctx": ("model", "context_length"),
        "n_gpu_layers": ("model", "gpu_layers"),
        "n_threads": ("model", "threads"),
        "model_path": ("model", "last_model_path"),
        "model_dirs": ("model", "extra_model_folders"),
        "workspace": ("tools", "workspace"),
        "mcp_config": ("tools", "mcp_servers_path"),
        "always_allow": None,  # list of tool names -> tools.approvals {name: "allow"}
        "window_geometry": ("window", "geometry"),
    }
    for old, dest in moves.items():
        if old not in flat:
            continue
        value = flat.pop(old)
        if dest is None:
            if isinstance(value, list):
                out.setdefault("tools", {})["approvals"] = {str(n): "allow" for n in value}
            continue
        section, name = dest
        out.setdefault(section, {})[name] = value
    out.update(flat)  # anything unknown is carried over untouched
    return out


MIGRATIONS: dict[int, Callable[[dict[str, Any]], dict[str, Any]]] = {1: _v1_to_v2}


def migrate(data: dict[str, Any]) -> dict[str, Any]:
    """Bring a settings dict of any older schema up to ``SCHEMA_VERSION``.

    A file without ``schema_version`` is version 1. Newer versions are returned unchanged
    (their unknown keys are tolerated by the model).
    """
    version = data.get("schema_version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise ValueError(f"schema_version must be a positive integer, got {version!r}")
    while version < SCHEMA_VERSION:
        data = MIGRATIONS[version](data)
        version += 1
        data["schema_version"] = version
    return data


# ---------------------------------------------------------------------------------------------
# Loading and saving


@dataclass
class SettingsNotice:
    """Something the UI should tell the user about the settings file."""

    code: Literal["corrupt", "fields_reset", "migrated", "newer_version", "unreadable"]
    message: str
    backup_path: Path | None = None
    reset_fields: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "backup_path": str(self.backup_path) if self.backup_path else None,
            "reset_fields": list(self.reset_fields),
        }


class SettingsSaveError(OSError):
    """The settings could not be written; the previous file is untouched."""


MAX_SETTINGS_BYTES = 4 * 1024 * 1024  # a real settings file is a few KB


def _read_settings_bytes(p: Path) -> bytes:
    """The file's bytes; OSError for what is not a regular file (a FIFO would block forever) or too big."""
    import stat as _stat

    fd = os.open(p, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0))
    try:
        st = os.fstat(fd)
        if _stat.S_ISDIR(st.st_mode):
            raise IsADirectoryError(21, "it is a folder, not a file")
        if not _stat.S_ISREG(st.st_mode):
            raise OSError(0, "it is not a regular file (a pipe, device or socket)")
        if st.st_size > MAX_SETTINGS_BYTES:
            raise OSError(0, f"it is {st.st_size} bytes, more than a settings file can be")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read(MAX_SETTINGS_BYTES + 1)
    finally:
        os.close(fd)


def _backup_or_none(path: Path) -> Path | None:
    try:
        return _backup(path)
    except OSError:
        return None


def _saved_as(backup: Path | None) -> str:
    if backup is None:
        return "It could not be moved aside (the folder is not writable)"
    return f"It was saved as {backup.name}"


def _backup(path: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    backup = path.with_name(f"{path.name}.corrupt-{stamp}")
    n = 1
    while backup.exists():
        n += 1
        backup = path.with_name(f"{path.name}.corrupt-{stamp}-{n}")
    os.replace(path, backup)
    return backup


def _drop(data: Any, loc: tuple[Any, ...]) -> bool:
    """Remove the value at ``loc`` from nested dicts/lists; True if something was removed."""
    node = data
    for part in loc[:-1]:
        if isinstance(node, dict) and part in node:
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node):
            node = node[part]
        else:
            return False
    last = loc[-1] if loc else None
    if isinstance(node, dict) and last in node:
        del node[last]
        return True
    if isinstance(node, list) and isinstance(last, int) and 0 <= last < len(node):
        del node[last]
        return True
    return False


def _salvage(data: dict[str, Any]) -> tuple[Settings, list[str]]:
    """Validate, dropping each invalid field (so it takes its default) and keeping the rest."""
    reset: list[str] = []
    for _ in range(200):
        try:
            return Settings.model_validate(data), reset
        except ValidationError as exc:
            progressed = False
            for err in exc.errors():
                loc = tuple(err["loc"])
                # a failing dict value (e.g. an approval) is reported at the key: drop just that entry
                while loc and not _drop(data, loc):
                    loc = loc[:-1]
                if loc:
                    reset.append(".".join(str(p) for p in loc))
                    progressed = True
            if not progressed:
                break
    return Settings(), ["*"]


def load_settings(path: str | os.PathLike[str] | None = None) -> tuple[Settings, SettingsNotice | None]:
    """Read the settings file. Never raises for bad contents: see the module docstring."""
    p = Path(path) if path is not None else settings_path()
    try:
        if not os.path.lexists(p):
            return Settings(), None
        raw = _read_settings_bytes(p)
    except OSError as exc:
        backup = None
        if not p.is_dir() and p.exists() and not p.is_file():  # a FIFO or device: move it aside
            backup = _backup_or_none(p)
        moved = f" {_saved_as(backup)}." if backup is not None else ""
        return Settings(), SettingsNotice(
            "unreadable",
            f"Could not read the settings file {p} ({exc.strerror or exc}); using defaults.{moved}",
            backup_path=backup,
        )
    try:
        data = json.loads(raw.decode("utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"expected a JSON object, found {type(data).__name__}")
        original_version = data.get("schema_version", 1)
        data = migrate(data)
    except (ValueError, UnicodeDecodeError, RecursionError) as exc:
        problem = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)[:200]
        backup = _backup_or_none(p)
        return Settings(), SettingsNotice(
            "corrupt",
            f"The settings file was damaged ({problem}). {_saved_as(backup)} and the defaults are in use.",
            backup_path=backup,
        )
    try:
        settings, reset = _salvage(data)
    except RecursionError:
        settings, reset = Settings(), ["*"]
    if reset:
        backup = _backup_or_none(p)
        fields = "all settings" if reset == ["*"] else ", ".join(reset)
        old = "The old file was saved as " + backup.name if backup else _saved_as(None)
        return settings, SettingsNotice(
            "fields_reset",
            f"Some settings had invalid values and were reset to their defaults ({fields}). {old}.",
            backup_path=backup,
            reset_fields=reset,
        )
    if isinstance(original_version, int) and original_version > SCHEMA_VERSION:
        return settings, SettingsNotice(
            "newer_version",
            f"The settings file was written by a newer Callisto (schema {original_version}); "
            "settings this version does not know are kept as they are.",
        )
    if original_version != settings.schema_version:
        return settings, SettingsNotice(
            "migrated", f"Settings were upgraded from schema {original_version} to {SCHEMA_VERSION}."
        )
    return settings, None


def save_settings(settings: Settings, path: str | os.PathLike[str] | None = None) -> Path:
    """Write the settings atomically; returns the path written. Raises SettingsSaveError."""
    p = Path(path) if path is not None else settings_path()
    data = settings.model_dump(mode="json")
    data["schema_version"] = max(SCHEMA_VERSION, int(data.get("schema_version") or SCHEMA_VERSION))
    text = json.dumps(data, indent=2, ensure_ascii=False, sort_keys=False) + "\n"
    try:
        p.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(p, text)
    except (AtomicWriteError, OSError) as exc:
        raise SettingsSaveError(exc.errno, f"Could not save settings to {p}: {exc.strerror or exc}") from exc
    return p
