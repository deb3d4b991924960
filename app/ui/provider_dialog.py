"""The "Add a remote engine" dialog: a name, a URL, the API it speaks, the tool mode and a key.

The dialog only collects and checks the values; the window stores them (the provider in
``settings.remote``, the key in the system keychain through :mod:`app.engine.remote.keys`).
"""

from __future__ import annotations

from typing import Any

from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFormLayout,
    QLabel,
    QLineEdit,
    QVBoxLayout,
    QWidget,
)

__all__ = ["KIND_CHOICES", "MODE_CHOICES", "ProviderDialog"]

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
    """Collects one remote provider; :meth:`entry` and :meth:`api_key` once it is accepted."""

    def __init__(self, taken_names: list[str] | tuple[str, ...] = (), parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Add a remote engine")
        self.setObjectName("providerDialog")
        self._taken = {n.strip().casefold() for n in taken_names}
        lay = QVBoxLayout(self)
        intro = QLabel(
            "Chat with models served by another program or machine. Callisto's tools, approvals "
            "and history work as with local models."
        )
        intro.setWordWrap(True)
        lay.addWidget(intro)
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
        form.addRow("Name", self.name_edit)
        form.addRow("URL", self.url_edit)
        form.addRow("API", self.kind_box)
        form.addRow("Tool calls", self.mode_box)
        form.addRow("API key", self.key_edit)
        form.addRow("Chat template", self.template_edit)
        lay.addLayout(form)
        self.error_label = QLabel("")
        self.error_label.setObjectName("providerError")
        self.error_label.setWordWrap(True)
        self.error_label.setVisible(False)
        lay.addWidget(self.error_label)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Add")
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)
        self._entry: Any = None

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

        name = self.name_edit.text().strip()
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
        return self.key_edit.text().strip()
