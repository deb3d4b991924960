"""Remote engines in the window (a part of :class:`~app.ui.main_window.MainWindow`).

Providers come from ``settings.remote`` (their keys from the system keychain). Their models are
listed off the UI thread and appear in the model picker beside the local ones, marked as remote;
choosing one makes the worker chat through :class:`app.engine.remote.RemoteChatSession` on its own
thread, exactly as local turns run (UI action -> worker -> typed events -> signals).

A saved provider is edited (URL, API, tool mode, template, key) or deleted from the picker's
"Remote engines…" entry. Editing keeps the stored key unless a new one is typed; deleting removes
its key from the keychain first (a keychain that refuses leaves everything as it was) and its
models from the picker. A model of the edited provider that is in use reconnects with the new
values; one of a deleted provider can no longer send (the picker says it was removed).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import quote, unquote

if TYPE_CHECKING:
    from PySide6.QtGui import QAction
    from PySide6.QtWidgets import QLabel, QMessageBox, QProgressBar

    from app.ui.provider_dialog import ProviderDialog, ProvidersDialog
    from app.ui.tasks import BackgroundTasks
    from app.ui.worker import EngineConfig, EngineWorker, ModelInfo

__all__ = [
    "ADD_REMOTE",
    "MANAGE_REMOTE",
    "REMOTE_PREFIX",
    "RemoteModelsMixin",
    "parse_remote_key",
    "parser_words",
    "remote_key",
]

REMOTE_PREFIX = "remote://"
ADD_REMOTE = "__add_remote__"
MANAGE_REMOTE = "__manage_remote__"
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
    model_info: ModelInfo | None
    busy: bool
    _shut: bool
    context_usage: Any
    load_progress: QProgressBar
    load_label: QLabel
    _progress_action: QAction
    remote_models: dict[str, list[str]] = {}  # noqa: RUF012 - replaced, never mutated: provider -> models
    provider_dialog: ProviderDialog | None = None
    providers_dialog: ProvidersDialog | None = None
    delete_box: QMessageBox | None = None  # the open "Delete remote engine" question

    if TYPE_CHECKING:  # provided by the window (other parts, QMainWindow)

        def statusBar(self) -> Any: ...  # noqa: N802
        def _save_settings_quietly(self) -> None: ...
        def _fill_model_picker(self) -> None: ...
        def _update_send_button(self) -> None: ...
        def show_window_notice(
            self, code: str, message: str, setting: str | None, *, kind: str = "info"
        ) -> Any: ...
        def config_for(self, model_path: str | None) -> EngineConfig: ...

    def remote_entry(self, name: str) -> Any:
        for entry in self.settings.remote:
            if entry.name == name:
                return entry
        return None

    def _remote_picker_items(self) -> list[tuple[str, str]]:
        """(label, key) of every listed remote model, provider by provider, in settings order; the
        model in use whose provider was deleted stays, marked as removed, until another is chosen."""
        out = []
        for entry in self.settings.remote:
            for model in self.remote_models.get(entry.name, []):
                out.append((f"{model} · {entry.name} (remote)", remote_key(entry.name, model)))
        info = self.model_info
        if info is not None and self.remote_removed():
            parsed = parse_remote_key(info.path)
            if parsed is not None:
                out.append((f"{parsed[1]} · {parsed[0]} (removed)", info.path))
        return out

    def open_provider_dialog(self, name: str | None = None) -> ProviderDialog:
        """The "Add a remote engine" dialog, or with ``name`` the same dialog editing that saved
        provider; accepted, the provider is added (or changed) and its models listed."""
        from app.ui.provider_dialog import ProviderDialog

        editing = self.remote_entry(name) if name is not None else None
        if name is not None and editing is None:
            raise KeyError(f"no remote engine is named {name!r}")
        dlg = ProviderDialog(
            [e.name for e in self.settings.remote], parent=self._dialog_parent(), editing=editing
        )
        if editing is None:
            dlg.accepted.connect(lambda: self.add_remote_provider(dlg.entry(), dlg.api_key()))
        else:
            dlg.accepted.connect(
                lambda: self.edit_remote_provider(dlg.entry(), dlg.api_key(), forget_key=dlg.forget_key())
            )
        self.provider_dialog = dlg
        dlg.open()
        return dlg

    def _dialog_parent(self) -> Any:
        """The Remote engines list when it is open (a dialog from it opens on top of it), else the window."""
        manager = self.providers_dialog
        return manager if manager is not None and manager.isVisible() else self

    def open_providers_dialog(self) -> ProvidersDialog:
        """ "Remote engines": the saved providers with Add, Edit and Delete."""
        from app.ui.provider_dialog import ProvidersDialog

        dlg = ProvidersDialog([e.name for e in self.settings.remote], parent=self)  # type: ignore[arg-type]
        dlg.sig_add.connect(lambda: self.open_provider_dialog())
        dlg.sig_edit.connect(self.open_provider_dialog)
        dlg.sig_delete.connect(self.confirm_delete_remote_provider)
        self.providers_dialog = dlg
        dlg.open()
        return dlg

    def _providers_changed(self) -> None:
        """settings.remote changed: save it, and the picker and the Remote engines list follow."""
        self._save_settings_quietly()
        self._fill_model_picker()
        self._update_send_button()
        if self.providers_dialog is not None:
            self.providers_dialog.set_names([e.name for e in self.settings.remote])

    def remote_removed(self) -> bool:
        """The model in use is a remote engine's whose provider was deleted since it was chosen."""
        info = self.model_info
        return info is not None and info.remote is not None and self.remote_entry(info.remote) is None

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
        self._providers_changed()
        self.refresh_remote_models([entry.name])
        return True

    def edit_remote_provider(self, entry: Any, api_key: str = "", *, forget_key: bool = False) -> bool:
        """Replace the saved provider named ``entry.name`` (same place in the list) by ``entry``:
        a typed ``api_key`` replaces the stored key, ``forget_key`` removes it, neither keeps it.
        Its models are listed again, and a model of it in use reconnects with the new values.
        False, with a banner saying why, when there is no such provider or the keychain refused:
        nothing is changed then."""
        from app.engine.remote.keys import KeyStoreError, delete_api_key, load_api_key, store_api_key

        if self.remote_entry(entry.name) is None:
            self.show_window_notice(
                "remote_key", f"There is no remote engine named {entry.name} to edit.", None, kind="error"
            )
            return False
        try:
            if api_key:
                store_api_key(entry.name, api_key)
            elif forget_key and load_api_key(entry.name) is not None:
                delete_api_key(entry.name)
        except (KeyStoreError, ValueError) as exc:
            self.show_window_notice("remote_key", f"{entry.name} was not changed: {exc}", None, kind="error")
            return False
        self.settings.remote = [entry if e.name == entry.name else e for e in self.settings.remote]
        self._providers_changed()
        self.refresh_remote_models([entry.name])
        info = self.model_info
        if info is not None and info.remote == entry.name and parse_remote_key(info.path) is not None:
            self.load_remote(info.path)  # the conversation goes on with the new URL, key, mode
        return True

    def confirm_delete_remote_provider(self, name: str) -> QMessageBox:
        """Ask (a window-modal box, opened); Yes calls :meth:`delete_remote_provider`."""
        from PySide6.QtWidgets import QMessageBox

        info = self.model_info
        in_use = (
            f" Its model {info.name} is the one you chat with now; pick another model after."
            if info is not None and info.remote == name
            else ""
        )
        box = QMessageBox(
            QMessageBox.Icon.Question,
            "Delete remote engine",
            f"Delete the remote engine {name} and its API key? Your conversations stay.{in_use}",
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
            self._dialog_parent(),
        )
        box.setObjectName("deleteRemoteBox")
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        yes = box.button(QMessageBox.StandardButton.Yes)
        yes.setText("Delete")
        box.finished.connect(lambda _r: box.clickedButton() is yes and self.delete_remote_provider(name))
        self.delete_box = box
        box.open()
        return box

    def delete_remote_provider(self, name: str) -> bool:
        """Forget the provider ``name``: its key leaves the keychain first, then the provider leaves
        settings and its models the picker. False, with a banner, when the keychain refused (the
        provider stays, so no key is left behind unseen) or there is no such provider."""
        from app.engine.remote.keys import KeyStoreError, delete_api_key, load_api_key

        if self.remote_entry(name) is None:
            return False
        try:
            if load_api_key(name) is not None:  # none stored (or no keychain at all): nothing to delete
                delete_api_key(name)
        except (KeyStoreError, ValueError) as exc:
            self.show_window_notice("remote_key", f"{name} was not deleted: {exc}", None, kind="error")
            return False
        self.settings.remote = [e for e in self.settings.remote if e.name != name]
        self.remote_models = {k: v for k, v in self.remote_models.items() if k != name}
        self._providers_changed()
        return True

    def refresh_remote_models(self, names: list[str] | None = None) -> None:
        """List the models of each provider (or of ``names``) off the UI thread; the picker follows."""
        if self._shut:
            return
        for entry in self.settings.remote:
            if names is None or entry.name in names:
                self.tasks.run(
                    lambda e=entry: _list(e),
                    lambda models, e=entry: self._on_remote_listed(e, models),
                    lambda message, e=entry: self._on_remote_list_failed(e, message),
                )

    def _on_remote_listed(self, entry: Any, models: list[str]) -> None:
        name = entry.name
        if self.remote_entry(name) != entry:
            return  # deleted or edited while it was being listed: that listing is stale
        self.remote_models = {**self.remote_models, name: list(models)}
        self._fill_model_picker()
        if not models:
            self.show_window_notice(f"remote_list:{name}", f"{name} lists no models.", None, kind="warning")

    def _on_remote_list_failed(self, entry: Any, message: str) -> None:
        name = entry.name
        if self.remote_entry(name) != entry:
            return  # deleted or edited while it was being listed: that listing is stale
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
