"""The tool-choice control by the message box: Auto / Required / None / each available tool.

Its value is an OpenAI ``tool_choice`` (``"auto"``, ``"required"``, ``"none"`` or ``{"type":
"function", "function": {"name": ...}}``) that the worker passes to ``ChatSession.send``. The
choice is remembered per conversation (for as long as the window runs); a conversation without
one starts at the default, the ``chat.tool_choice`` setting.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox

__all__ = ["BASE_CHOICES", "ToolChoiceBox"]

BASE_CHOICES: list[tuple[str, str]] = [
    ("auto", "Tools: Auto"),
    ("required", "Tools: Required"),
    ("none", "Tools: None"),
]


class ToolChoiceBox(QComboBox):
    sig_choice = Signal(object)  # the new tool_choice value

    def __init__(self, default: str = "auto", parent: Any = None):
        super().__init__(parent)
        self.setObjectName("toolChoice")
        self.setToolTip(
            "Auto: the model decides; Required: the reply is a tool call; None: no tools; "
            "a tool's name: the reply calls that tool. Calls are held to their schemas."
        )
        self.default = default if default in ("auto", "required", "none") else "auto"
        self._memory: dict[int, Any] = {}
        self._cid: int | None = None
        self._quiet = False
        self.set_tools([])
        self.currentIndexChanged.connect(self._changed)

    # -- values -----------------------------------------------------------------------------
    def value(self) -> Any:
        data = self.currentData()
        return (
            {"type": "function", "function": {"name": data[1]}}
            if isinstance(data, tuple)
            else (data or "auto")
        )

    def set_value(self, value: Any) -> None:
        """Select ``value``; a tool that is not available (or anything unknown) selects Auto."""
        key: Any = value
        if isinstance(value, dict):
            key = ("tool", (value.get("function") or {}).get("name"))
        i = self.findData(key)
        self.setCurrentIndex(i if i >= 0 else self.findData("auto"))

    def set_tools(self, names: list[str] | tuple[str, ...]) -> None:
        """Offer ``names`` after the three choices, keeping the current one when it is still there."""
        current = self.value() if self.count() else self.default
        self._quiet = True
        self.clear()
        for value, label in BASE_CHOICES:
            self.addItem(label, value)
        for name in names:
            self.addItem(f"Call {name}", ("tool", name))
        self._quiet = False
        self.set_value(current)

    # -- per conversation ----------------------------------------------------------------------
    def recall(self, cid: int | None) -> None:
        """The window switched to conversation ``cid`` (None: a new, unsaved one)."""
        previous, self._cid = self._cid, cid  # switch first: selecting below records under ``cid``
        if cid is not None and cid in self._memory:
            self.set_value(self._memory[cid])
        elif cid is not None and previous is None:
            self._memory[cid] = self.value()  # the unsaved chat was just saved: it keeps its choice
        else:
            self.set_value(self.default)

    def _changed(self, _index: int) -> None:
        if self._quiet:
            return
        if self._cid is not None:
            self._memory[self._cid] = self.value()
        self.sig_choice.emit(self.value())
