"""Remote engines in the window (a part of :class:`~app.ui.main_window.MainWindow`).

Providers come from ``settings.remote`` (their keys from the system keychain). Their models are
listed off the UI thread and appear in the model picker beside the local ones, marked as remote;
choosing one makes the worker chat through :class:`app.engine.remote.RemoteChatSession` on its own
thread, exactly as local turns run (UI action -> worker -> typed events -> signals).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

if TYPE_CHECKING:
    from app.ui.provider_dialog import ProviderDialog
    from app.ui.tasks import BackgroundTasks
    from app.ui.worker import EngineConfig, EngineWorker

__all__ = [
    "ADD_REMOTE",
    "REMOTE_PREFIX",
    "RemoteModelsMixin",
    "parse_remote_key",
    "parser_words",
    "remote_key",
]

REMOTE_PREFIX = "remote://"
ADD_REMOTE = "__add_remote__"
LIST_TIMEOUT_S = 10.0  # listing models: a slow endpoint must not keep the picker waiting long


def remote_key(provider: str, model: str) -> str:
    """The picker's key of ``model`` on ``provider`` (and the ModelInfo path of a remote model)."""
    return f"{REMOTE_PREFIX}{quote(provider, safe='')}/{model}"


def parse_remote_key(key: Any) -> tuple[str, str] | None:
    """(provider, model) of a :func:`remote_key`; None for a local path or anything else."""
    if not isinstance(key, str) or not key.startswith(REMOTE_PREFIX):
        return None
    provider, sep, model = key[len(REMOTE_PREFIX) :].partition("/")
    return (unquote(provider), model) if sep and provider and model else None


_KIND_WORDS = {"openai": "OpenAI API", "anthropic": "Anthropic API", "ollama": "Ollama API"}


def parser_words(label: str | None) -> str | None:
    """``DoneEvent.extra["call_parsers"]`` values in plain words: ``api:openai`` -> "the engine's
    function calling (OpenAI API)", ``callisto:hermes`` -> "Callisto's parser (Hermes JSON)"."""
    if not label:
        return None
    how, _, what = label.partition(":")
    if how == "api":
        return f"the engine's function calling ({_KIND_WORDS.get(what, what or 'API')})"
    if how == "callisto":
        from app.ui.engine_types import format_label

        family = (format_label(what) or what or "").split(" (", 1)[0]
        return f"Callisto's parser ({family})" if family else "Callisto's parser"
    return label


class RemoteModelsMixin:
    """Providers, their listed models and choosing one; mixed into the main window."""

    settings: Any
    worker: EngineWorker
    tasks: BackgroundTasks
    loading_path: str | None
    _shut: bool
    context_usage: Any
    remote_models: dict[str, list[str]] = {}  # noqa: RUF012 - replaced, never mutated: provider -> models
    provider_dialog: ProviderDialog | None = None

    if TYPE_CHECKING:  # provided by the window (other parts, QMainWindow)

        def statusBar(self) -> Any: ...  # noqa: N802
        def _save_settings_quietly(self) -> None: ...
        def _fill_model_picker(self) -> None: ...
        def _update_send_button(self) -> None: ...
        def show_window_notice(
            self, code: str, message: str, setting: str | None, *, kind: str = "info"
        ) -> Any: ...
        def config_for(self, model_path: str | None) -> EngineConfig: ...

        load_progress: Any
        load_label: Any
        _progress_action: Any

    def _clear_context_meter(self) -> None:
        """A remote engine keeps its context: the meter shows no figure of the local model's."""
        meter = self.context_meter  # type: ignore[attr-defined]
        meter.setValue(0)
        meter.setFormat("Context —")
        meter.setToolTip("A remote engine's context is not measured here.")
        self.stat_ctx.setText("context —")  # type: ignore[attr-defined]
        self.context_usage = None

    def remote_entry(self, name: str) -> Any:
        for entry in self.settings.remote:
            if entry.name == name:
                return entry
        return None

    def _remote_picker_items(self) -> list[tuple[str, str]]:
        """(label, key) of every listed remote model, provider by provider, in settings order."""
        out = []
        for entry in self.settings.remote:
            for model in self.remote_models.get(entry.name, []):
                out.append((f"{model} · {entry.name} (remote)", remote_key(entry.name, model)))
        return out

    def open_provider_dialog(self) -> ProviderDialog:
        """The "Add a remote engine" dialog; accepted, the provider is added and its models listed."""
        from app.ui.provider_dialog import ProviderDialog

        dlg = ProviderDialog([e.name for e in self.settings.remote], parent=self)  # type: ignore[arg-type]
        dlg.accepted.connect(lambda: self.add_remote_provider(dlg.entry(), dlg.api_key()))
        self.provider_dialog = dlg
        dlg.open()
        return dlg

    def add_remote_provider(self, entry: Any, api_key: str = "") -> bool:
        """Keep ``entry`` in settings (its key, if any, in the keychain first) and list its models.
        False, with a banner saying why, when the keychain refused the key: nothing is added then."""
        from app.engine.remote.keys import KeyStoreError, store_api_key

        if api_key:
            try:
                store_api_key(entry.name, api_key)
            except (KeyStoreError, ValueError) as exc:
                self.show_window_notice(
                    "remote_key", f"{entry.name} was not added: {exc}", None, kind="error"
                )
                return False
        self.settings.remote = [*[e for e in self.settings.remote if e.name != entry.name], entry]
        self._save_settings_quietly()
        self.refresh_remote_models([entry.name])
        return True

    def refresh_remote_models(self, names: list[str] | None = None) -> None:
        """List the models of each provider (or of ``names``) off the UI thread; the picker follows."""
        if self._shut:
            return
        for entry in self.settings.remote:
            if names is None or entry.name in names:
                self.tasks.run(
                    lambda e=entry: _list(e),
                    lambda models, n=entry.name: self._on_remote_listed(n, models),
                    lambda message, n=entry.name: self._on_remote_list_failed(n, message),
                )

    def _on_remote_listed(self, name: str, models: list[str]) -> None:
        self.remote_models = {**self.remote_models, name: list(models)}
        self._fill_model_picker()
        if not models:
            self.show_window_notice(f"remote_list:{name}", f"{name} lists no models.", None, kind="warning")

    def _on_remote_list_failed(self, name: str, message: str) -> None:
        self.remote_models = {k: v for k, v in self.remote_models.items() if k != name}
        self._fill_model_picker()
        self.show_window_notice(
            f"remote_list:{name}",
            f"The models of {name} could not be listed: {message}",
            None,
            kind="warning",
        )

    def load_remote(self, key: str) -> bool:
        """Chat with the remote model of the picker key ``key``; False when its provider is gone."""
        parsed = parse_remote_key(key)
        entry = self.remote_entry(parsed[0]) if parsed else None
        if parsed is None or entry is None:
            return False
        self.loading_path = key
        self._fill_model_picker()
        self._progress_action.setVisible(True)
        self.load_progress.setRange(0, 0)
        self.load_label.setText(f"Connecting to {entry.name}…")
        self._update_send_button()
        self.worker.load_remote(entry, parsed[1], self.config_for(key))
        return True


def _list(entry: Any) -> list[str]:
    from app.engine.remote import list_models
    from app.engine.remote.keys import provider_from_settings

    return list_models(provider_from_settings(entry, timeout_s=LIST_TIMEOUT_S, max_retries=0))
