"""The remote engine dialogs: "Add a remote engine" (a name, a URL, the API it speaks, the tool
mode and a key), the same dialog to edit a saved one, and "Remote engines", the list of saved
ones with Add, Edit and Delete.

The dialogs only collect and check the values; the window stores them (the provider in
``settings.remote``, the key in the system keychain through :mod:`app.engine.remote.keys`). A
stored key is never read back into a dialog: editing keeps it unless a new one is typed or
"Forget the stored API key" is ticked.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QCheckBox,
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.ui.labels import wrapped_label

__all__ = ["KIND_CHOICES", "MODE_CHOICES", "ProviderDialog", "ProvidersDialog"]

#: The APIs a provider speaks (values of ``app.engine.remote.KINDS``), in plain words.
KIND_CHOICES = (
    ("openai", "OpenAI-compatible (llama-server, vLLM, SGLang, LM Studio, hosted)"),
    ("anthropic", "Anthropic Messages API"),
    ("ollama", "Ollama"),
)
#: The tool modes (values of ``app.engine.remote.MODES``), in plain words.
MODE_CHOICES = (
    ("api", "The engine's function calling (API tools)"),
    ("callisto", "Callisto parsing (raw text read by Callisto's parsers)"),
    ("auto", "Automatic (Callisto parsing where the engine gives its chat template)"),
)


class ProviderDialog(QDialog):
    """Collects one remote provider; :meth:`entry`, :meth:`api_key` and :meth:`forget_key` once it
    is accepted. With ``editing`` (a saved entry) it edits that one: its values filled in, its name
    fixed (the keychain keeps the key under it), the key field empty (kept unless one is typed)."""

    def __init__(
        self,
        taken_names: list[str] | tuple[str, ...] = (),
        parent: QWidget | None = None,
        *,
        editing: Any = None,
    ) -> None:
        super().__init__(parent)
        self.editing = editing
        self.setWindowTitle("Add a remote engine" if editing is None else f"Edit {editing.name}")
        self.setObjectName("providerDialog")
        own = editing.name.strip().casefold() if editing is not None else None
        self._taken = {n.strip().casefold() for n in taken_names} - {own}
        lay = QVBoxLayout(self)
        lay.addWidget(
            wrapped_label(
                "Chat with models served by another program or machine. Callisto's tools, approvals "
                "and history work as with local models."
            )
        )
        form = QFormLayout()
        self.name_edit = QLineEdit()
        self.name_edit.setObjectName("providerName")
        self.name_edit.setPlaceholderText("GPU box")
        self.url_edit = QLineEdit()
        self.url_edit.setObjectName("providerUrl")
        self.url_edit.setPlaceholderText("http://192.168.1.20:8080")
        self.kind_box = QComboBox()
        self.kind_box.setObjectName("providerKind")
        for value, label in KIND_CHOICES:
            self.kind_box.addItem(label, value)
        self.mode_box = QComboBox()
        self.mode_box.setObjectName("providerMode")
        for value, label in MODE_CHOICES:
            self.mode_box.addItem(label, value)
        self.key_edit = QLineEdit()
        self.key_edit.setObjectName("providerKey")
        self.key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        self.key_edit.setPlaceholderText("optional; kept in the system keychain")
        self.template_edit = QLineEdit()
        self.template_edit.setObjectName("providerTemplate")
        self.template_edit.setPlaceholderText("optional: a .gguf or tokenizer_config.json (Callisto parsing)")
        self.forget_key_box = QCheckBox("Forget the stored API key")
        self.forget_key_box.setObjectName("providerForgetKey")
        self.forget_key_box.setToolTip("Remove this engine's key from the system keychain")
        self.forget_key_box.toggled.connect(lambda on: self.key_edit.setEnabled(not on))
        form.addRow("Name", self.name_edit)
        form.addRow("URL", self.url_edit)
        form.addRow("API", self.kind_box)
        form.addRow("Tool calls", self.mode_box)
        form.addRow("API key", self.key_edit)
        form.addRow("", self.forget_key_box)
        form.addRow("Chat template", self.template_edit)
        lay.addLayout(form)
        form.setRowVisible(self.forget_key_box, editing is not None)
        self.error_label = QLabel("")
        self.error_label.setObjectName("providerError")
        self.error_label.setWordWrap(True)
        self.error_label.setVisible(False)
        lay.addWidget(self.error_label)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Add" if editing is None else "Save")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)
        self._entry: Any = None
        if editing is not None:
            self.set_values(
                name=editing.name,
                url=editing.url,
                kind=editing.kind,
                mode=editing.mode,
                template=editing.template or "",
            )
            self.name_edit.setReadOnly(True)
            self.name_edit.setToolTip("The name stays: the system keychain keeps the key under it")
            self.key_edit.setPlaceholderText("leave empty to keep the stored key (if any)")

    def set_values(
        self,
        *,
        name: str = "",
        url: str = "",
        kind: str = "openai",
        mode: str = "api",
        key: str = "",
        template: str = "",
    ) -> None:
        self.name_edit.setText(name)
        self.url_edit.setText(url)
        self.kind_box.setCurrentIndex(max(0, self.kind_box.findData(kind)))
        self.mode_box.setCurrentIndex(max(0, self.mode_box.findData(mode)))
        self.key_edit.setText(key)
        self.template_edit.setText(template)

    def error(self) -> str | None:
        """What is wrong with the values, in one sentence (None when they can be added)."""
        from pydantic import ValidationError

        from app.storage.settings import RemoteProviderSettings

        name = self.editing.name if self.editing is not None else self.name_edit.text().strip()
        if not name:
            return "Give the engine a name (the picker shows it beside its models)."
        if name.casefold() in self._taken:
            return f"There is already a remote engine named {name!r}; choose another name."
        url = self.url_edit.text().strip()
        if not url.startswith(("http://", "https://")):
            return "The URL starts with http:// or https:// (for example http://127.0.0.1:8080)."
        kind, mode = self.kind_box.currentData(), self.mode_box.currentData()
        if kind == "anthropic" and mode == "callisto":
            return (
                "Callisto parsing needs an engine that completes raw text; the Anthropic API does not. "
                "Choose the engine's function calling."
            )
        try:
            self._entry = RemoteProviderSettings(
                name=name, url=url, kind=kind, mode=mode, template=self.template_edit.text().strip() or None
            )
        except ValidationError as exc:
            return "; ".join(str(e.get("msg", e)) for e in exc.errors())
        return None

    def accept(self) -> None:
        problem = self.error()
        self.error_label.setText(problem or "")
        self.error_label.setVisible(problem is not None)
        if problem is None:
            super().accept()

    def entry(self) -> Any:
        """The ``settings.remote`` entry (a :class:`~app.storage.settings.RemoteProviderSettings`; no key)."""
        return self._entry

    def api_key(self) -> str:
        """The key typed ("" when none was: adding stores none, editing keeps the stored one)."""
        return "" if self.forget_key() else self.key_edit.text().strip()

    def forget_key(self) -> bool:
        """Editing: the stored key is to be removed from the keychain."""
        return self.editing is not None and self.forget_key_box.isChecked()


class ProvidersDialog(QDialog):
    """The saved remote engines, one a row, with Add, Edit and Delete; the window does the work
    (``sig_add``, ``sig_edit(name)``, ``sig_delete(name)``) and calls :meth:`set_names` after."""

    sig_add = Signal()
    sig_edit = Signal(str)
    sig_delete = Signal(str)

    def __init__(self, names: list[str], parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Remote engines")
        self.setObjectName("providersDialog")
        lay = QVBoxLayout(self)
        self.list = QListWidget()
        self.list.setObjectName("providersList")
        self.list.currentRowChanged.connect(lambda _row: self._update_buttons())
        self.list.itemDoubleClicked.connect(lambda item: self.sig_edit.emit(item.text()))
        lay.addWidget(self.list)
        self.add_button = QPushButton("Add…")
        self.edit_button = QPushButton("Edit…")
        self.delete_button = QPushButton("Delete")
        self.delete_button.setToolTip("Forget this engine and its API key; its models leave the picker")
        self.add_button.clicked.connect(self.sig_add.emit)
        self.edit_button.clicked.connect(lambda: self._emit_for(self.sig_edit))
        self.delete_button.clicked.connect(lambda: self._emit_for(self.sig_delete))
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        for b in (self.add_button, self.edit_button, self.delete_button):
            buttons.addButton(b, QDialogButtonBox.ButtonRole.ActionRole)
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)
        self.set_names(names)

    def set_names(self, names: list[str]) -> None:
        """Show ``names`` (the saved engines, in settings order), keeping the selection if it stays."""
        current = self.selected()
        self.list.clear()
        for name in names:
            self.list.addItem(QListWidgetItem(name))
        rows = [i for i, n in enumerate(names) if n == current]
        self.list.setCurrentRow(rows[0] if rows else (0 if names else -1))
        self._update_buttons()

    def names(self) -> list[str]:
        return [self.list.item(i).text() for i in range(self.list.count())]

    def select(self, name: str) -> bool:
        rows = [i for i, n in enumerate(self.names()) if n == name]
        if rows:
            self.list.setCurrentRow(rows[0])
        return bool(rows)

    def selected(self) -> str | None:
        item = self.list.currentItem()
        return item.text() if item is not None else None

    def _emit_for(self, signal: Any) -> None:
        name = self.selected()
        if name is not None:
            signal.emit(name)

    def _update_buttons(self) -> None:
        some = self.selected() is not None
        self.edit_button.setEnabled(some)
        self.delete_button.setEnabled(some)
