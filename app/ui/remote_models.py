"""Remote engines in the window (a part of the main window).

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

from functools import partial
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Signal

from app.engine.remote.keys import parse_remote_key, remote_key
from app.ui.window_part import WindowKit, WindowPart

if TYPE_CHECKING:
    from PySide6.QtWidgets import QMessageBox, QWidget

    from app.ui.provider_dialog import ProviderDialog, ProvidersDialog

__all__ = [
    "ADD_REMOTE",
    "MANAGE_REMOTE",
    "RemoteEngines",
]

ADD_REMOTE = "__add_remote__"
MANAGE_REMOTE = "__manage_remote__"
LIST_TIMEOUT_S = 10.0  # listing models: a slow endpoint must not keep the picker waiting long


class RemoteEngines(WindowPart):
    """Owns the saved providers' listed models (:attr:`models`), the provider dialogs and the
    delete question; chooses a remote model through the worker."""

    sig_changed = Signal()  # the providers or their models changed: the picker and Send follow
    sig_loading = Signal(str, str)  # picker key, what is happening: a remote model is being connected

    def __init__(self, kit: WindowKit) -> None:
        super().__init__(kit)
        self.models: dict[str, list[str]] = {}  # provider -> its models (replaced, never mutated)
        self.provider_dialog: ProviderDialog | None = None
        self.providers_dialog: ProvidersDialog | None = None
        self.delete_box: QMessageBox | None = None  # the open "Delete remote engine" question

    def remote_entry(self, name: str) -> Any:
        for entry in self.state.settings.remote:
            if entry.name == name:
                return entry
        return None

    def picker_items(self) -> list[tuple[str, str]]:
        """(label, key) of every listed remote model, provider by provider, in settings order; the
        model in use whose provider was deleted stays, marked as removed, until another is chosen."""
        out = []
        for entry in self.state.settings.remote:
            for model in self.models.get(entry.name, []):
                out.append((f"{model} · {entry.name} (remote)", remote_key(entry.name, model)))
        info = self.state.model_info
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
            [e.name for e in self.state.settings.remote], parent=self._dialog_parent(), editing=editing
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

    def _dialog_parent(self) -> QWidget:
        """The Remote engines list when it is open (a dialog from it opens on top of it), else the window."""
        manager = self.providers_dialog
        return manager if manager is not None and manager.isVisible() else self.window

    def open_providers_dialog(self) -> ProvidersDialog:
        """ "Remote engines": the saved providers with Add, Edit and Delete."""
        from app.ui.provider_dialog import ProvidersDialog

        dlg = ProvidersDialog([e.name for e in self.state.settings.remote], parent=self.window)
        dlg.sig_add.connect(lambda: self.open_provider_dialog())
        dlg.sig_edit.connect(self.open_provider_dialog)
        dlg.sig_delete.connect(self.confirm_delete_remote_provider)
        self.providers_dialog = dlg
        dlg.open()
        return dlg

    def _providers_changed(self) -> None:
        """settings.remote changed: save it, and the picker and the Remote engines list follow."""
        self.save_settings()
        self.sig_changed.emit()
        if self.providers_dialog is not None:
            self.providers_dialog.set_names([e.name for e in self.state.settings.remote])

    def remote_removed(self) -> bool:
        """The model in use is a remote engine's whose provider was deleted since it was chosen."""
        info = self.state.model_info
        return info is not None and info.remote is not None and self.remote_entry(info.remote) is None

    def add_remote_provider(self, entry: Any, api_key: str = "") -> bool:
        """Keep ``entry`` in settings (its key, if any, in the keychain first) and list its models.
        False, with a banner saying why, when the keychain refused the key: nothing is added then."""
        from app.engine.remote.keys import KeyStoreError, store_api_key

        if api_key:
            try:
                store_api_key(entry.name, api_key)
            except (KeyStoreError, ValueError) as exc:
                self.notices.show("remote_key", f"{entry.name} was not added: {exc}", None, kind="error")
                return False
        settings = self.state.settings
        settings.remote = [*[e for e in settings.remote if e.name != entry.name], entry]
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
            self.notices.show(
                "remote_key", f"There is no remote engine named {entry.name} to edit.", None, kind="error"
            )
            return False
        try:
            if api_key:
                store_api_key(entry.name, api_key)
            elif forget_key and load_api_key(entry.name) is not None:
                delete_api_key(entry.name)
        except (KeyStoreError, ValueError) as exc:
            self.notices.show("remote_key", f"{entry.name} was not changed: {exc}", None, kind="error")
            return False
        settings = self.state.settings
        settings.remote = [entry if e.name == entry.name else e for e in settings.remote]
        self._providers_changed()
        self.refresh_remote_models([entry.name])
        info = self.state.model_info
        if info is not None and info.remote == entry.name and parse_remote_key(info.path) is not None:
            self.load_remote(info.path)  # the conversation goes on with the new URL, key, mode
        return True

    def confirm_delete_remote_provider(self, name: str) -> QMessageBox:
        """Ask (a window-modal box, opened); Yes calls :meth:`delete_remote_provider`."""
        from PySide6.QtWidgets import QMessageBox

        info = self.state.model_info
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
            self.notices.show("remote_key", f"{name} was not deleted: {exc}", None, kind="error")
            return False
        settings = self.state.settings
        settings.remote = [e for e in settings.remote if e.name != name]
        self.models = {k: v for k, v in self.models.items() if k != name}
        self._providers_changed()
        return True

    def refresh_remote_models(self, names: list[str] | None = None) -> None:
        """List the models of each provider (or of ``names``) off the UI thread; the picker follows."""
        if self.state.shut:
            return
        for entry in self.state.settings.remote:
            if names is None or entry.name in names:
                self.tasks.run(
                    partial(_list, entry),
                    partial(self._on_remote_listed, entry),
                    partial(self._on_remote_list_failed, entry),
                )

    def _on_remote_listed(self, entry: Any, models: list[str]) -> None:
        name = entry.name
        if self.remote_entry(name) != entry:
            return  # deleted or edited while it was being listed: that listing is stale
        self.models = {**self.models, name: list(models)}
        self.sig_changed.emit()
        if not models:
            self.notices.show(f"remote_list:{name}", f"{name} lists no models.", None, kind="warning")

    def _on_remote_list_failed(self, entry: Any, message: str) -> None:
        name = entry.name
        if self.remote_entry(name) != entry:
            return  # deleted or edited while it was being listed: that listing is stale
        self.models = {k: v for k, v in self.models.items() if k != name}
        self.sig_changed.emit()
        self.notices.show(
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
        self.sig_loading.emit(key, f"Connecting to {entry.name}…")  # the picker shows it, with progress
        self.worker.load_remote(entry, parsed[1], self.state.config_for(key))
        return True


def _list(entry: Any) -> list[str]:
    from app.engine.remote import list_models
    from app.engine.remote.keys import provider_from_settings

    return list_models(provider_from_settings(entry, timeout_s=LIST_TIMEOUT_S, max_retries=0))
