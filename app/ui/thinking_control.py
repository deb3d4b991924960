"""The thinking control beside the tool-choice control (issue 30): Auto / Off / On, the effort
levels the model's template takes, and a budget in tokens.

Its value is an ``app.engine.thinking.Thinking`` (None: Auto with no budget, the template's own
default) that the worker passes to ``session.send(text, thinking=...)`` with each message. The
control is disabled for a model whose template has no thinking switch
(``ChatSession.thinking_control.kind == "none"``). The choice is remembered per model, in that
model's override (``ModelOverride.thinking`` and ``thinking_budget``) in the one settings store:
:class:`ThinkingController` reads it when a model is loaded and writes it when the person picks.

What the control shows is what the next message sends: every change of its value is told by
``sig_choice``, and nothing else keeps the choice.
"""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QSpinBox, QWidget

__all__ = [
    "MODES",
    "ThinkingBox",
    "ThinkingController",
    "choice_of",
    "override_fields",
    "override_values",
    "setting_of",
]

MODES: list[tuple[str, str]] = [
    ("auto", "Thinking: Auto"),
    ("off", "Thinking: Off"),
    ("on", "Thinking: On"),
]
#: the most tokens the budget box takes (app.engine.thinking.MAX_BUDGET)
MAX_BUDGET = 1_000_000
_NO_SWITCH = "This model's chat template has no thinking switch: it thinks (or not) as it always does"


def choice_of(setting: str | None, budget: int | None) -> Any:
    """The ``Thinking`` a stored choice means (None: auto with no budget)."""
    from app.engine.thinking import Thinking, parse_thinking

    base = parse_thinking(setting or "auto")
    if base.is_default and not budget:
        return None
    return Thinking(base.mode, effort=base.effort, budget=budget or None)


def setting_of(choice: Any) -> tuple[str | None, int | None]:
    """(``ModelOverride.thinking``, ``thinking_budget``) for a ``Thinking`` (None: auto)."""
    if choice is None:
        return None, None
    setting = choice.effort or (None if choice.mode == "auto" else choice.mode)
    return setting, choice.budget or None


class ThinkingBox(QWidget):
    """The combo box (mode or level) and the budget box, side by side."""

    sig_choice = Signal(object)  # the new Thinking (or None)

    def __init__(self, parent: Any = None):
        super().__init__(parent)
        self.setObjectName("thinkingControl")
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(4)
        self.mode = QComboBox()
        self.mode.setObjectName("thinkingChoice")
        self.mode.setToolTip(
            "Auto: as the model's template does by default; Off: the template's own switch turns "
            "thinking off; On; a level: how hard a model with levels thinks"
        )
        self.budget = QSpinBox()
        self.budget.setObjectName("thinkingBudget")
        self.budget.setRange(0, MAX_BUDGET)
        self.budget.setSingleStep(256)
        self.budget.setSpecialValueText("No budget")
        self.budget.setPrefix("Budget: ")
        self.budget.setSuffix(" tokens")
        self.budget.setToolTip(
            "The most tokens of reasoning: then the reasoning is closed in the model's own syntax "
            "and the model answers"
        )
        lay.addWidget(self.mode)
        lay.addWidget(self.budget)
        self._quiet = False
        self._told: Any = None
        self.kind = "none"
        self.set_levels(())
        self.mode.currentIndexChanged.connect(self._changed)
        self.budget.valueChanged.connect(self._changed)
        self.set_kind("none")

    # -- values -----------------------------------------------------------------------------
    def value(self) -> Any:
        """The choice shown (a ``Thinking``; None: Auto, no budget)."""
        if self.kind == "none":
            return None
        return choice_of(self.mode.currentData() or "auto", self.budget.value() or None)

    def set_value(self, setting: str | None, budget: int | None) -> None:
        """Show a stored choice; a level the model does not take shows Auto. Told if it changed."""
        self._quiet = True
        i = self.mode.findData(setting or "auto")
        self.mode.setCurrentIndex(i if i >= 0 else 0)
        self.budget.setValue(budget or 0)
        self._quiet = False
        self._tell()

    def set_levels(self, levels: tuple[str, ...] | list[str]) -> None:
        """Offer ``levels`` after Auto / Off / On, keeping the current choice when it is still there."""
        current = self.mode.currentData() if self.mode.count() else "auto"
        self._quiet = True
        self.mode.clear()
        for value, label in MODES:
            self.mode.addItem(label, value)
        for level in levels:
            if level not in ("none",):  # "none" is Off
                self.mode.addItem(f"Thinking: {level}", level)
        i = self.mode.findData(current)
        self.mode.setCurrentIndex(i if i >= 0 else 0)
        self._quiet = False

    def set_kind(self, kind: str) -> None:
        """The switch the model's template reads; ``none`` disables the control."""
        self.kind = kind
        enabled = kind != "none"
        self.mode.setEnabled(enabled)
        self.budget.setEnabled(enabled)
        self.setToolTip("" if enabled else _NO_SWITCH)

    def levels(self) -> list[str]:
        return [str(self.mode.itemData(i)) for i in range(len(MODES), self.mode.count())]

    def _changed(self, _value: Any) -> None:
        if not self._quiet:
            self._tell()

    def _tell(self) -> None:
        value = self.value()
        if value != self._told:
            self._told = value
            self.sig_choice.emit(value)


class ThinkingController:
    """Keeps the box, the worker's next choice and the model's stored choice in step.

    ``store``: the app's one ``SettingsStore``; ``worker``: anything with a ``thinking`` attribute
    and a ``sig_loaded(ModelInfo)`` signal."""

    def __init__(self, box: Any, worker: Any, store: Any):
        self.box, self.worker, self.store = box, worker, store
        self.key: str | None = None  # the loaded model's override key
        self._loading = False
        self.info: Any = None
        box.sig_choice.connect(self._on_choice)
        worker.sig_loaded.connect(self.on_loaded)
        worker.thinking = box.value()
        # Settings -> This model changes the stored choice: the control shows it
        store.subscribe(lambda sections: self._recall() if "model_overrides" in sections else None)

    def on_loaded(self, info: Any) -> None:
        """A model (or a remote one) is loaded: its switch, its levels, its remembered choice."""
        from app.storage.settings import model_key

        self.key, self.info = None, info
        if info is not None:
            self.key = info.path if info.remote is not None else model_key(info.path)
        kind = info.thinking_kind if info is not None else "none"
        self._loading = True
        try:
            self.box.set_kind(kind)
            self.box.set_levels(info.thinking_levels if info is not None else ())
            self._recall()
        finally:
            self._loading = False
        self.worker.thinking = self.box.value()

    def _recall(self) -> None:
        """Show the loaded model's stored choice."""
        ov = self.store.settings.model_overrides.get(self.key) if self.key else None
        loading, self._loading = self._loading, True
        try:
            self.box.set_value(ov.thinking if ov else None, ov.thinking_budget if ov else None)
        finally:
            self._loading = loading
        self.worker.thinking = self.box.value()

    def _on_choice(self, choice: Any) -> None:
        self.worker.thinking = choice  # the next send's thinking
        if self._loading or self.key is None:
            return
        from app.storage.settings import ModelOverride

        setting, budget = setting_of(choice)
        with self.store.edit() as s:
            ov = s.model_overrides.get(self.key) or ModelOverride()
            if (ov.thinking, ov.thinking_budget) == (setting, budget):
                return
            new = ov.model_copy(update={"thinking": setting, "thinking_budget": budget})
            s.set_override(self.key, None if new == ModelOverride() else new)


def override_values(combo: Any, spin: Any) -> tuple[str | None, int | None]:
    """(``ModelOverride.thinking``, ``thinking_budget``) as :func:`override_fields`' boxes say
    (None, None without them)."""
    if combo is None or spin is None:
        return None, None
    return combo.currentData(), spin.value() or None


def override_fields(ov: Any) -> tuple[QComboBox, QSpinBox]:
    """Settings → This model: the model's thinking (a combo box whose data is the stored
    ``ModelOverride.thinking``) and budget (0: none), showing the override ``ov``'s (None: auto)."""
    setting, budget = (ov.thinking, ov.thinking_budget) if ov is not None else (None, None)
    combo = QComboBox()
    combo.setObjectName("override.thinking")
    combo.addItem("Auto (the template's default)", None)
    for value, label in MODES[1:]:
        combo.addItem(label.removeprefix("Thinking: "), value)
    for level in ("low", "medium", "high"):
        combo.addItem(f"Effort: {level}", level)
    i = combo.findData(setting)
    if i < 0 and setting:
        combo.addItem(f"Effort: {setting}", setting)
        i = combo.count() - 1
    combo.setCurrentIndex(max(i, 0))
    combo.setToolTip(
        "The thinking control's choice for this model (the control by the message box sets it too)"
    )
    spin = QSpinBox()
    spin.setObjectName("override.thinking_budget")
    spin.setRange(0, MAX_BUDGET)
    spin.setSingleStep(256)
    spin.setSpecialValueText("No budget")
    spin.setSuffix(" tokens")
    spin.setValue(budget or 0)
    return combo, spin
