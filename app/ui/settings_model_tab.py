"""Settings → Model and Settings → This model (tabs of :class:`app.ui.settings_dialog.SettingsDialog`).

:class:`ModelTab` holds how every model is loaded: the context, GPU layers, threads, the KV cache
(its type, flash attention, the saved conversation caches) and speculative decoding (n-gram
drafting, a draft model). :class:`ModelOverrideTab` holds the loaded model's own values on top of
the global ones: tool format, context policy, KV cache, speculative decoding, thinking, sampling
(each "Use the global setting" until chosen) and a chat template of its own (empty: the model's). Each tab reads its fields into the
settings the dialog gives back (``apply``); a draft model that cannot be one raises ValueError.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from app.storage.settings import ModelOverride, SamplingOverride, Settings, draft_model_problem, model_key
from app.ui.labels import FormNote
from app.ui.settings_fields import GpuLayersSpin, SamplingForm, number_box
from app.ui.thinking_control import override_fields, override_values

__all__ = ["KV_TYPES", "Choice", "ModelOverrideTab", "ModelTab", "checked_draft"]

#: the dialog's choice box: ``choice(name, choices, value, tooltip=...)`` named after its setting,
#: ``choices`` (value, label) pairs, ``value`` chosen (``SettingsDialog._choice``)
Choice = Callable[..., QComboBox]

#: The KV cache types (``model.kv_type``; ``app.engine.models.estimate.KV_CACHE_TYPES``), in plain words.
KV_TYPES = (
    ("f16", "f16 (full precision)"),
    ("q8_0", "q8_0 (about half the memory)"),
    ("q4_0", "q4_0 (about a quarter of the memory)"),
)
_KV_HINT = (
    "The type of the KV cache, the memory a conversation's context takes: q8_0 about halves it and "
    "changes replies only where the model hesitates between two words; q4_0 saves more and changes "
    "more. A quantized cache needs flash attention (without it the cache stays f16). The model reloads "
    "when it changes."
)
_ON_OFF = ((True, "On"), (False, "Off"))
_NGRAM_HINT = (
    "Speculative decoding without a second model: the engine guesses the next tokens from text "
    "already in the conversation (a tool call that repeats its arguments, code being rewritten) and "
    "the model checks the guesses in one step. Replies are the same; it turns itself off where it "
    "does not pay. The model reloads when it changes."
)
_DRAFT_HINT = (
    "A second, small GGUF with the same vocabulary as the model (a smaller model of the same family) "
    "that drafts tokens the model then checks in one step. Empty: none. The model reloads when it "
    "changes."
)
#: the draft model choices of the "This model" tab besides a file: the global value, or none
_DRAFT_INHERIT = ((None, "Use the global setting"), ("", "None (no draft model)"))


def template_check(text: str) -> str:
    """What a chat template typed in This model does, in words: the model's own (empty), one that
    cannot be read and why, or the tool-call format its calls are read in."""
    if not text.strip():
        return "The model's own template is used."
    from app.engine.detection import detect_tool_format
    from app.engine.errors import TemplateRenderError
    from app.engine.templates import compile_template

    try:
        compile_template(text)
    except TemplateRenderError as exc:
        return f"This template cannot be read, so the model will not load with it: {exc}"
    from app.ui.engine_types import format_label

    family = format_label(detect_tool_format(text, None))
    calls = (
        f"its tool calls are read as {family}" if family else "it writes no tool-call format Callisto knows"
    )
    return f"Used in place of the model's own ({calls}); applying it loads the model again."


def _monospace() -> Any:
    from PySide6.QtGui import QFontDatabase

    return QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont)


def checked_draft(text: str, saved: str | None) -> str | None:
    """A draft model path as the settings keep it (None: none); ValueError says why a new one
    cannot be a draft model (one already saved is kept as it is, even while its file is away)."""
    path = text.strip()
    if not path or path == saved:
        return path or None
    problem = draft_model_problem(path)
    if problem is not None:
        raise ValueError(problem[0].upper() + problem[1:])
    return path


def _pick_gguf(parent: QWidget, start: str) -> str:
    """A draft model chosen in a file dialog ("" when none was)."""
    p, _ = QFileDialog.getOpenFileName(parent, "Draft model", start, "GGUF models (*.gguf)")
    return p


def _browse_row(field: QWidget, browse: Callable[[], None]) -> QWidget:
    """``field`` with a Browse… button beside it that calls ``browse``."""
    w = QWidget()
    h = QHBoxLayout(w)
    h.setContentsMargins(0, 0, 0, 0)
    h.addWidget(field, 1)
    b = QPushButton("Browse…")
    b.clicked.connect(browse)
    h.addWidget(b)
    return w


class ModelTab(QWidget):
    """Settings → Model: how every model is loaded (a model's own values: :class:`ModelOverrideTab`)."""

    def __init__(self, settings: Settings, choice: Choice) -> None:
        super().__init__()
        m = self.saved = settings.model
        outer = QVBoxLayout(self)
        f = QFormLayout()
        outer.addLayout(f)
        outer.addStretch(1)
        self.context_length = number_box(
            "model.context_length",
            (256, 1_048_576),
            m.context_length,
            step=1024,
            tooltip="How many tokens of conversation (with tool descriptions) the model "
            "can see; more needs more memory. The model reloads when it changes.",
        )
        self.gpu_layers = GpuLayersSpin(m.gpu_layers)
        self.threads = number_box("model.threads", (0, 256), m.threads or 0, off="automatic")
        self.gpu_layers.setToolTip(
            'Layers computed on the GPU. "automatic" (the default) puts every layer '
            "on the GPU when this llama.cpp build has a GPU backend (Metal, CUDA, "
            'Vulkan) and none otherwise; "all" = every layer, 0 = CPU only. Lower '
            "it if a large model does not fit in the GPU's memory."
        )
        f.addRow("Context length (tokens)", self.context_length)
        f.addRow("GPU layers", self.gpu_layers)
        f.addRow("Threads", self.threads)
        self.kv_type = choice("model.kv_type", KV_TYPES, m.kv_type, tooltip=_KV_HINT)
        self.flash_attn = choice("model.flash_attn", _ON_OFF, m.flash_attn)
        self.kv_store_mib = number_box(
            "model.kv_store_mib",
            (0, 1_048_576),
            m.kv_store_mib,
            step=512,
            suffix=" MiB",
            off="off",
            tooltip="A conversation's KV cache is saved on disk when you leave it and restored when you come "
            "back, also after a restart, so its next reply starts at once. At most this much disk; the "
            "least recently used are deleted first. 0 turns it off.",
        )
        f.addRow("KV cache type", self.kv_type)
        f.addRow("Flash attention", self.flash_attn)
        f.addRow("Saved conversation caches", self.kv_store_mib)
        self.ngram_draft = choice(
            "model.ngram_draft",
            ((True, "N-gram drafting on"), (False, "Off")),
            m.ngram_draft,
            tooltip=_NGRAM_HINT,
        )
        self.draft_model = QLineEdit(m.draft_model or "")
        self.draft_model.setObjectName("model.draft_model")
        self.draft_model.setPlaceholderText("none: a small .gguf with the model's vocabulary")
        self.draft_model.setToolTip(_DRAFT_HINT)
        f.addRow("Speculative decoding", self.ngram_draft)
        f.addRow("Draft model", _browse_row(self.draft_model, self._browse_draft))

    def _browse_draft(self) -> None:
        path = _pick_gguf(self, self.draft_model.text())
        if path:
            self.draft_model.setText(path)

    def controls(self) -> dict[str, QWidget]:
        """Each setting's field (``SettingsDialog.open_at`` focuses one)."""
        return {
            "model.context_length": self.context_length,
            "model.gpu_layers": self.gpu_layers,
            "model.threads": self.threads,
            "model.kv_type": self.kv_type,
            "model.flash_attn": self.flash_attn,
            "model.kv_store_mib": self.kv_store_mib,
            "model.ngram_draft": self.ngram_draft,
            "model.draft_model": self.draft_model,
        }

    def apply(self, s: Settings) -> None:
        """The fields into ``s.model`` (ValueError: the draft model cannot be one)."""
        s.model.context_length = self.context_length.value()
        s.model.gpu_layers = self.gpu_layers.layers()
        s.model.threads = self.threads.value() or None
        s.model.kv_type = self.kv_type.currentData()
        s.model.flash_attn = bool(self.flash_attn.currentData())
        s.model.kv_store_mib = self.kv_store_mib.value()
        s.model.ngram_draft = bool(self.ngram_draft.currentData())
        s.model.draft_model = checked_draft(self.draft_model.text(), self.saved.draft_model)


class ModelOverrideTab(QWidget):
    """Settings → This model: the loaded model's own values (when a model is loaded; else a hint).
    ``format_choices`` and ``context_policies`` are the (value, label) choices of the Chat tab."""

    def __init__(
        self,
        settings: Settings,
        model_path: str | None,
        model_name: str | None,
        *,
        choice: Choice,
        format_choices: Sequence[tuple[str, str]],
        context_policies: Sequence[tuple[str, str]],
        made_note: str | None = None,
    ) -> None:
        super().__init__()
        self.model_path = model_path
        self.made_note: QLabel | None = None  # the made model in use: what it sets wins over these
        self.model_tool_format: QComboBox | None = None
        self.model_sampling: SamplingForm | None = None
        self.model_context_policy: QComboBox | None = None
        self.model_kv_type: QComboBox | None = None
        self.model_flash_attn: QComboBox | None = None
        self.model_ngram_draft: QComboBox | None = None
        self.model_draft_model: QComboBox | None = None
        self.model_thinking: Any = None  # the model's thinking (issue 30)
        self.model_thinking_budget: Any = None
        self.model_chat_template: QPlainTextEdit | None = None
        self.template_note: FormNote | None = None
        v = QVBoxLayout(self)
        self.saved = ov = settings.override_for(model_path) if model_path is not None else None
        if model_path is None:
            v.addWidget(QLabel("Load a model to give it its own tool format and sampling."))
            v.addStretch(1)
            return
        v.addWidget(QLabel(f"Overrides for <b>{model_name or model_path}</b> (unchecked: global value)."))
        if made_note:
            self.made_note = QLabel(made_note)
            self.made_note.setObjectName("madeNote")
            self.made_note.setWordWrap(True)
            v.addWidget(self.made_note)
        f2 = QFormLayout()

        def inherited(name: str, choices: Sequence[tuple[Any, str]], tooltip: str = "") -> QComboBox:
            """The override's choice ``name``: first "Use the global setting" (None)."""
            own = [(None, "Use the global setting"), *choices]
            return choice(f"override.{name}", own, getattr(ov, name) if ov else None, tooltip=tooltip)

        self.model_tool_format = inherited("tool_format", format_choices)
        f2.addRow("Tool-call format", self.model_tool_format)
        self.model_context_policy = inherited("context_policy", context_policies)
        f2.addRow("When the chat is full", self.model_context_policy)
        self.model_kv_type = inherited("kv_type", KV_TYPES, _KV_HINT)
        f2.addRow("KV cache type", self.model_kv_type)
        self.model_flash_attn = inherited("flash_attn", _ON_OFF)
        f2.addRow("Flash attention", self.model_flash_attn)
        self.model_ngram_draft = inherited("ngram_draft", _ON_OFF, _NGRAM_HINT)
        f2.addRow("Speculative decoding", self.model_ngram_draft)
        own_draft = ov.draft_model if ov else None
        self.model_draft_model = draft = choice(
            "override.draft_model",
            [*_DRAFT_INHERIT, *([(own_draft, own_draft)] if own_draft else [])],
            own_draft,
            tooltip=_DRAFT_HINT,
        )
        browse = _browse_row(
            draft, lambda: self.choose_draft_model(_pick_gguf(self, draft.currentData() or ""))
        )
        f2.addRow("Draft model", browse)
        self.model_thinking, self.model_thinking_budget = override_fields(ov)
        f2.addRow("Thinking", self.model_thinking)
        f2.addRow("Thinking budget", self.model_thinking_budget)
        self.model_chat_template = edit = QPlainTextEdit(ov.chat_template or "" if ov else "")
        edit.setObjectName("override.chat_template")
        edit.setPlaceholderText(
            "Empty: the model's own template. Paste a Jinja chat template (from the model's card, "
            "for a model whose own is wrong or missing) to render its prompts with it."
        )
        edit.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        edit.setFixedHeight(edit.fontMetrics().lineSpacing() * 6 + 12)
        edit.setFont(_monospace())
        f2.addRow("Chat template", edit)
        self.template_note = FormNote()
        f2.addRow("", self.template_note)
        edit.textChanged.connect(self._check_template)
        self._check_template()
        v.addLayout(f2)
        self.model_sampling = SamplingForm("the global value", max_tokens_optional=True)
        self.model_sampling.set_values(
            ov.sampling.model_dump() if ov else {}, defaults=settings.sampling.model_dump()
        )
        v.addWidget(self.model_sampling)
        v.addStretch(1)

    def _check_template(self) -> None:
        """Say under the template whether it can be used, and which call format it writes."""
        if self.model_chat_template is None or self.template_note is None:
            return
        self.template_note.setText(template_check(self.model_chat_template.toPlainText()))

    def choose_draft_model(self, path: str) -> None:
        """Make ``path`` this model's draft model ("": nothing changes)."""
        combo = self.model_draft_model
        if path and combo is not None:
            if combo.findData(path) < 0:
                combo.addItem(path, path)
            combo.setCurrentIndex(combo.findData(path))

    def apply(self, s: Settings) -> None:
        """This model's override into ``s`` (none when every field uses the global value)."""
        if self.model_path is None or self.model_tool_format is None or self.model_sampling is None:
            return
        samp = SamplingOverride(**self.model_sampling.values())
        values: dict[str, Any] = {
            name: box.currentData() if box is not None else None
            for name, box in (
                ("tool_format", self.model_tool_format),
                ("context_policy", self.model_context_policy),
                ("kv_type", self.model_kv_type),
                ("flash_attn", self.model_flash_attn),
                ("ngram_draft", self.model_ngram_draft),
                ("draft_model", self.model_draft_model),
            )
        }
        text = self.model_chat_template.toPlainText() if self.model_chat_template is not None else ""
        values["chat_template"] = text if text.strip() else None
        if values["draft_model"]:
            saved = self.saved.draft_model if self.saved else None
            values["draft_model"] = checked_draft(values["draft_model"], saved)
        th, tb = override_values(self.model_thinking, self.model_thinking_budget)
        key = model_key(self.model_path)
        if (
            all(v is None for v in values.values())
            and (th, tb) == (None, None)
            and not any(v is not None for v in samp.model_dump().values())
        ):
            s.set_override(key, None)
        else:
            s.set_override(
                key,
                ModelOverride(sampling=samp, **values).model_copy(
                    update={"thinking": th, "thinking_budget": tb}
                ),
            )
