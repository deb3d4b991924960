"""What the window's controllers share: the settings, the history, the model in use or loading,
the open conversation and whether a reply is being written (no Qt).

The window makes one :class:`WindowState` and hands it to the controllers that read or change
these facts; everything else a controller needs comes in its constructor.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from app.ui.engine_types import EngineConfig

if TYPE_CHECKING:
    from app.storage.history import History
    from app.storage.settings import Settings
    from app.storage.settings_store import SettingsStore
    from app.ui.engine_types import ModelInfo

__all__ = ["WindowState", "engine_config_for", "path_key"]


def path_key(path: str | os.PathLike[str]) -> str:
    """A model file's key: its real path (``~`` and links resolved), to tell two paths of one file."""
    return os.path.realpath(os.path.expanduser(os.fspath(path)))


def engine_config_for(settings: Any, model_path: str | None, preset: Any = None) -> EngineConfig:
    """The worker's config: global settings with the model's override on top, and a made model's
    values (``preset``: an ``app.server.Preset`` over ``model_path``) on top of those: a made model
    is picked for what it sets."""
    from app.storage.settings import effective_settings

    eff = effective_settings(settings, model_path)
    config = EngineConfig(
        tool_format=eff.tool_format,
        system_prompt=eff.system_prompt,
        sampling=eff.sampler_overrides(),
        max_tokens=int(eff.max_tokens),
        n_ctx=eff.context_length,
        n_gpu_layers=eff.gpu_layers,
        n_threads=eff.threads,
        kv_type=eff.kv_type,
        flash_attn=eff.flash_attn,
        kv_store_mib=int(settings.model.kv_store_mib),
        ngram_draft=eff.ngram_draft,
        draft_model=eff.draft_model,
        chat_template=eff.chat_template,
        workspace=settings.tools.workspace,
        approvals=dict(settings.tools.approvals),
        pins=dict(settings.tools.pins),
        default_approval=settings.tools.default_approval,
        mcp_servers_path=settings.tools.mcp_servers_path,
        context_policy=eff.context_policy,
        max_tool_rounds=int(settings.chat.max_tool_rounds),
    )
    if preset is None:
        return config
    values = dict(preset.chat_values())
    values["sampling"] = {**config.sampling, **values.get("sampling", {})}
    return replace(config, **values, made=preset.name)


@dataclass
class WindowState:
    """The facts more than one part of the window reads."""

    store: SettingsStore  # the one source of the settings: read them, change them, hear changes there
    history: History
    model_info: ModelInfo | None = None  # the model the chat uses (local or remote)
    loading_path: str | None = None  # the model (path or remote key) being loaded
    conversation_id: int | None = None  # the open conversation (None: a new, unsaved one)
    chat_system: str | None = None  # its own system prompt (None: the one in Settings or a made model's)
    busy: bool = False  # a reply is being written
    shut: bool = False  # the window was shut down: no more background work starts
    #: the made model (its name: ``app.server._presets``) the chat uses over ``model_info.path``,
    #: and the one being loaded with ``loading_path``; None: the file as it is
    made: str | None = None
    loading_made: str | None = None
    #: the made models whose file is there, by name, as last read off the UI thread (``app.ui.made_models``)
    made_presets: dict[str, Any] = field(default_factory=dict)
    _presets: Any = None

    @property
    def settings(self) -> Settings:
        """The settings as they are now (the store's one object; change them through the store)."""
        return self.store.settings

    def config_for(self, model_path: str | None, made: str | None = None) -> EngineConfig:
        """The worker's config for ``model_path`` under the current settings; with the made model
        ``made`` (default: the one in use, when it is over ``model_path``) on top."""
        name = made if made is not None else self.made
        return engine_config_for(self.settings, model_path, self.made_preset(name, model_path))

    @property
    def presets(self) -> Any:
        """The models made over the API (``app.server.PresetStore`` over the data folder's file,
        the one the window's server and ``serve`` keep them in; read again when it changes). Read
        it off the UI thread (``app.ui.made_models.read_made``)."""
        if self._presets is None:
            from app.server import PresetStore, default_presets_path

            self._presets = PresetStore(default_presets_path())
        return self._presets

    def made_preset(self, name: str | None, model_path: str | None) -> Any:
        """The made model ``name`` (as last read) when it is over the file ``model_path``, else None."""
        from app.server._state import template_key  # (a model file's key: its real path)

        preset = self.made_presets.get(name) if name and model_path else None
        if preset is None or template_key(preset.base) != template_key(str(model_path)):
            return None
        return preset

    def uses_model(self, path: str | os.PathLike[str], made: str | None = None) -> bool:
        """The chat uses the file ``path`` now, with the made model ``made`` (None: the file as it is)."""
        info = self.model_info
        return (
            info is not None
            and path_key(info.path) == path_key(path)
            and (self.made or None) == (made or None)
        )

    def current_made(self) -> str | None:
        """The made model the picker shows: the one loading, else the one in use."""
        return self.loading_made if self.loading_path else self.made

    def current_model(self) -> str | None:
        """The model the picker shows: the one loading, else the one loaded."""
        return self.loading_path or (self.model_info.path if self.model_info else None)
