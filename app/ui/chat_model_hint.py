"""The line above a reopened chat that was written with another model than the one loaded: "This
chat was with alpha" and *Load alpha*, so going on with the model it was with is one click (the
model picker stays the way to pick any other). Shown only when that model's file is on this
computer; gone once it is loaded, or for a new chat."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QFrame, QWidget

from app.storage.export import reply_author
from app.ui.labels import line_with_action

__all__ = ["ChatModel", "ChatModelHint", "chat_model"]


@dataclass(frozen=True)
class ChatModel:
    """The model a conversation's last reply was written with: its file, made model and name."""

    path: str
    made: str | None
    name: str


def chat_model(messages: Sequence[Any]) -> ChatModel | None:
    """The local model that wrote the last reply of ``messages`` (stored records), or None (no
    reply, a remote engine's, a record that names no file)."""
    for m in reversed(messages):
        if m.role != "assistant" or not isinstance(m.extra, dict):
            continue
        path, made = m.extra.get("model"), m.extra.get("made_model")
        if not isinstance(path, str) or not path.lower().endswith(".gguf"):
            return None  # (a remote engine's reply names "provider: model")
        return ChatModel(path, made if isinstance(made, str) and made else None, reply_author(m.extra)[0])
    return None


class ChatModelHint(QFrame):
    """The line, with Load (``sig_load``: the file and the made model, or "")."""

    sig_load = Signal(str, str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chatModelHint")
        self.label, self.load_button = line_with_action(self, top=2)
        self.load_button.clicked.connect(self._load)
        self.model: ChatModel | None = None
        self.hide()

    def show_for(self, model: ChatModel | None) -> None:
        """Show the line for ``model`` (the chat's, when the chat uses another) when its file is
        here; else (None) hide it."""
        self.model = model if model is not None and os.path.isfile(model.path) else None
        if self.model is None:
            self.hide()
            return
        self.label.setText(f"This chat was with {self.model.name}")
        self.label.setToolTip(self.model.path)
        self.load_button.setText(f"Load {self.model.name}")
        self.load_button.setToolTip(f"Go on with {self.model.name} ({self.model.path})")
        self.show()

    def _load(self) -> None:
        if self.model is not None:
            self.sig_load.emit(self.model.path, self.model.made or "")
