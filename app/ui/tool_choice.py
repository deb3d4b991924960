"""The tool-choice control by the message box: Auto / Required / None / each available tool.

Its value is an OpenAI ``tool_choice`` (``"auto"``, ``"required"``, ``"none"`` or ``{"type":
"function", "function": {"name": ...}}``) that the worker passes to ``ChatSession.send``. The
choice is remembered per conversation (for as long as the window runs); a conversation without
one starts at the default, the ``chat.tool_choice`` setting.

What the control shows is what the next message sends (U2): every change of its value, whichever
way it comes (the person picks, the tools change with a new model or format and a tool that went
away falls back to Auto, a conversation is switched), is told by ``sig_choice``; nothing else
keeps the choice. With no tools declared, Required and the tools' entries are not offered (U14).
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
        self._told: Any = None  # the value last told by sig_choice (what the worker will send)
        self.set_tools([])
        self._told = self.value()
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
        """Select ``value``; a tool that is not available, Required with no tools (or anything
        unknown) selects Auto. The value shown is then told if it changed."""
        key: Any = value
        if isinstance(value, dict):
            key = ("tool", (value.get("function") or {}).get("name"))
        i = self._find(key)
        if i >= 0 and not self._offered(i):
            i = -1
        self._quiet = True
        self.setCurrentIndex(i if i >= 0 else self._find("auto"))
        self._quiet = False
        self._tell()

    def set_tools(self, names: list[str] | tuple[str, ...]) -> None:
        """Offer ``names`` after the three choices, keeping the current one when it is still there."""
        current = self.value() if self.count() else self.default
        self._quiet = True
        self.clear()
        for value, label in BASE_CHOICES:
            self.addItem(label, value)
        for name in names:
            self.addItem(f"Call {name}", ("tool", name))
        model = self.model()
        required = self._find("required")
        item = model.item(required) if hasattr(model, "item") else None
        if item is not None:  # Required with nothing to call fails every message: not offered (U14)
            item.setEnabled(bool(names))
            item.setToolTip(
                "" if names else "No tools are on: turn tools on in Settings → Chat to require a call"
            )
        self._quiet = False
        self.set_value(current)

    def tools(self) -> list[str]:
        """The tools offered (their names)."""
        return [d[1] for i in range(self.count()) if isinstance(d := self.itemData(i), tuple)]

    def _find(self, key: Any) -> int:
        """The index of the item whose data is ``key`` (findData does not compare tuples)."""
        for i in range(self.count()):
            if self.itemData(i) == key:
                return i
        return -1

    def _offered(self, index: int) -> bool:
        model = self.model()
        item = model.item(index) if hasattr(model, "item") else None
        return item is None or item.isEnabled()

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
        self._tell()

    def _tell(self) -> None:
        """Remember the value for this conversation and tell it when it differs from what was told."""
        value = self.value()
        if self._cid is not None:
            self._memory[self._cid] = value
        if value != self._told:
            self._told = value
            self.sig_choice.emit(value)
