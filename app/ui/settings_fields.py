"""The settings dialog's own fields: the GPU layers spin box (automatic / all / a count) and the
sampling form (each value with its "set" box), shared by the Sampling and This model tabs."""

from __future__ import annotations

from typing import Any

from PySide6.QtGui import QValidator
from PySide6.QtWidgets import QCheckBox, QDoubleSpinBox, QFormLayout, QHBoxLayout, QLabel, QSpinBox, QWidget

from app.engine.sampling import CHAT_DEFAULTS

__all__ = ["GpuLayersSpin", "SamplingForm", "dspin", "ispin", "model_sampling_defaults", "number_box"]


def dspin(lo: float, hi: float, step: float, decimals: int = 2) -> QDoubleSpinBox:
    s = QDoubleSpinBox()
    s.setRange(lo, hi)
    s.setSingleStep(step)
    s.setDecimals(decimals)
    return s


def ispin(lo: int, hi: int) -> QSpinBox:
    s = QSpinBox()
    s.setRange(lo, hi)
    return s


def number_box(
    name: str,
    span: tuple[int, int],
    value: int,
    *,
    step: int = 1,
    suffix: str = "",
    off: str = "",
    tooltip: str = "",
) -> QSpinBox:
    """A whole-number box named ``name`` (its setting) showing ``value`` in ``span``; ``off`` is
    the word its lowest value shows."""
    box = ispin(*span)
    box.setObjectName(name)
    box.setSingleStep(step)
    box.setSuffix(suffix)
    box.setSpecialValueText(off)
    box.setValue(value)
    box.setToolTip(tooltip)
    return box


class GpuLayersSpin(QSpinBox):
    """GPU layers: "automatic" (the setting's None), "all" (-1) or a layer count (0 = CPU only)."""

    AUTO, ALL = -2, -1
    WORDS = {AUTO: "automatic", ALL: "all"}

    def __init__(self, value: int | None) -> None:
        super().__init__()
        self.setRange(self.AUTO, 1000)
        self.setValue(self.AUTO if value is None else value)

    def textFromValue(self, value: int) -> str:  # noqa: N802 - Qt override
        return self.WORDS.get(value, str(value))

    def valueFromText(self, text: str) -> int:  # noqa: N802 - Qt override
        t = text.strip().lower()
        for v, word in self.WORDS.items():
            if t == word:
                return v
        return int(t) if t.lstrip("-").isdigit() else self.AUTO

    def validate(self, text: str, pos: int) -> tuple[QValidator.State, str, int]:
        t = text.strip().lower()
        if t.lstrip("-").isdigit() and self.AUTO <= int(t) <= self.maximum():
            return QValidator.State.Acceptable, text, pos
        if t in self.WORDS.values():
            return QValidator.State.Acceptable, text, pos
        if not t or t == "-" or any(w.startswith(t) for w in self.WORDS.values()):
            return QValidator.State.Intermediate, text, pos
        return QValidator.State.Invalid, text, pos

    def layers(self) -> int | None:
        """The setting's value: None for automatic."""
        return None if self.value() == self.AUTO else self.value()


def model_sampling_defaults(model_path: str | None) -> dict[str, Any]:
    """The sampler values the model file recommends (``general.sampling.*``), by settings name."""
    if not model_path:
        return {}
    from app.engine.models.metadata import GGUFMetadataError, read_metadata
    from app.engine.sampling import GGUF_SAMPLING_KEYS

    try:
        meta = read_metadata(model_path)
    except (GGUFMetadataError, OSError, ValueError):
        return {}
    out: dict[str, Any] = {}
    for key, value in meta.sampling.items():
        name = GGUF_SAMPLING_KEYS.get(key)
        if name in SamplingForm.FIELDS and isinstance(value, (int, float)):
            out[name] = value
    return out


class SamplingForm(QWidget):
    """Temperature, top-p, top-k, min-p, repeat penalty, seed, max tokens.

    Each sampler value has a "set" box: unchecked means "not set" (``None``), which globally
    means the model's recommended value and in a per-model override the global value.
    """

    FIELDS = ("temperature", "top_p", "top_k", "min_p", "repeat_penalty", "seed", "max_tokens")
    #: What an unset value shows (greyed): the values the engine uses when neither the settings nor
    #: the model file set one (app.engine.sampling.CHAT_DEFAULTS), so the figure shown is the one used.
    FALLBACK = {
        "temperature": CHAT_DEFAULTS.temperature,
        "top_p": CHAT_DEFAULTS.top_p,
        "top_k": CHAT_DEFAULTS.top_k,
        "min_p": CHAT_DEFAULTS.min_p,
        "repeat_penalty": CHAT_DEFAULTS.repeat_penalty,
        "seed": 0,
        "max_tokens": 1024,
    }
    TIPS = {
        "temperature": "How random the reply is: 0 always picks the likeliest word; higher values vary more "
        "(and drift more). Tool calls work best low (0.1-0.7).",
        "top_p": "Nucleus sampling: pick only among the likeliest words that together reach this "
        "probability (1 = no limit).",
        "top_k": "Pick only among this many likeliest words (0 = no limit).",
        "min_p": "Drop words less likely than this fraction of the likeliest word's probability (0 = off).",
        "repeat_penalty": "Above 1 makes the model less likely to repeat recent words (1 = off). Too high "
        "harms code and JSON.",
        "seed": "The random seed: the same seed, prompt and settings give the same reply.",
        "max_tokens": "The longest reply, in tokens; a reply cut here is marked and offers Continue.",
    }

    def __init__(self, unset_label: str, *, max_tokens_optional: bool) -> None:
        super().__init__()
        form = QFormLayout(self)
        self.spins: dict[str, Any] = {
            "temperature": dspin(0.0, 5.0, 0.05),
            "top_p": dspin(0.01, 1.0, 0.01),
            "top_k": ispin(0, 1000),
            "min_p": dspin(0.0, 1.0, 0.01),
            "repeat_penalty": dspin(0.01, 5.0, 0.05),
            "seed": ispin(0, 2_000_000_000),
            "max_tokens": ispin(1, 1_000_000),
        }
        self.checks: dict[str, QCheckBox] = {}
        self.notes: dict[str, QLabel] = {}
        labels = {
            "temperature": "Temperature",
            "top_p": "Top-p",
            "top_k": "Top-k",
            "min_p": "Min-p",
            "repeat_penalty": "Repeat penalty",
            "seed": "Seed",
            "max_tokens": "Max tokens per reply",
        }
        for name in self.FIELDS:
            spin = self.spins[name]
            spin.setObjectName(f"sampling.{name}")
            if name == "max_tokens" and not max_tokens_optional:
                form.addRow(labels[name], spin)
                continue
            row = QWidget()
            h = QHBoxLayout(row)
            h.setContentsMargins(0, 0, 0, 0)
            cb = QCheckBox("set")
            cb.setObjectName(f"set.sampling.{name}")
            cb.setToolTip(f"Unchecked: {unset_label}")
            cb.toggled.connect(spin.setEnabled)
            spin.setEnabled(False)
            self.checks[name] = cb
            h.addWidget(cb)
            h.addWidget(spin, 1)
            note = QLabel(unset_label if name != "seed" else "random when not set")
            note.setObjectName("hint")
            self.notes[name] = note
            h.addWidget(note)
            form.addRow(labels[name], row)
        for name in self.FIELDS:
            self.spins[name].setToolTip(self.TIPS[name])

    def show_model_defaults(self, model_values: dict[str, Any]) -> None:
        """Say where each unset value comes from: the model file (``model_values``, its recommended
        sampling) or Callisto's default; an unset box shows the value that will be used."""
        for name, note in self.notes.items():
            if name == "seed":
                continue
            if name in model_values:
                note.setText("not set: the model file's recommended value")
            else:
                note.setText("not set: Callisto's default")
            if not self.checks[name].isChecked():
                self.spins[name].setValue(model_values.get(name, self.FALLBACK[name]))

    def set_values(self, values: dict[str, Any], defaults: dict[str, Any] | None = None) -> None:
        for name in self.FIELDS:
            v = values.get(name)
            if name in self.checks:
                self.checks[name].setChecked(v is not None)
            if v is None:
                v = (defaults or {}).get(name)
            if v is None:
                v = self.FALLBACK[name]
            self.spins[name].setValue(v)

    def values(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self.FIELDS:
            if name in self.checks and not self.checks[name].isChecked():
                out[name] = None
                continue
            v = self.spins[name].value()
            out[name] = int(v) if name in ("top_k", "seed", "max_tokens") else float(v)
        return out
