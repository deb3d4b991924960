"""The settings dialog: edits a copy of ``app.storage.settings.Settings``.

``chat.tool_format`` is a dropdown built from ``app.engine.formats.tool_format_choices()``
(auto, each family by label, none); the family detected for the loaded model is shown
beside "auto". :meth:`SettingsDialog.open_at` focuses one setting (the notice banner's
link uses it). The "This model" tab holds per-model overrides of tool format and sampling.
Each tab has its own builder (``_build_<tab>_tab``); the fields the tabs share (the sampling
form, the GPU layers spin box) live in ``app.ui.settings_fields``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QComboBox,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPlainTextEdit,
    QPushButton,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.storage.settings import (
    ApprovalDefault,
    ModelOverride,
    SamplingOverride,
    Settings,
    draft_model_problem,
    model_key,
)
from app.ui.settings_fields import GpuLayersSpin, SamplingForm, model_sampling_defaults, number_box
from app.ui.theme import THEMES
from app.ui.thinking_control import override_fields, override_values

__all__ = ["CONTEXT_POLICIES", "SettingsDialog", "format_choices"]

#: The choices of ``chat.context_policy`` (values of ``app.engine.context.POLICIES``), in plain words.
CONTEXT_POLICIES = (
    ("stop", "Stop and say so (start a new chat or increase the context)"),
    ("drop_oldest", "Forget the oldest messages (rolling window)"),
    ("truncate_middle", "Keep the first exchange, forget the ones after it"),
)

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
_FALLBACK_CHOICES = [("auto", "Automatic (from the model's template)"), ("none", "No tools")]


def format_choices() -> list[tuple[str, str]]:
    """(value, label) pairs from the formats registry."""
    try:
        from app.engine.formats import tool_format_choices

        choices = list(tool_format_choices())
        if choices:
            return choices
    except Exception:  # noqa: BLE001 - the registry is the source; without it only auto / none
        pass
    return list(_FALLBACK_CHOICES)


def _auto_label(detected_label: str | None, have_model: bool) -> str:
    if not have_model:
        return "Automatic — detected when a model is loaded"
    if detected_label:
        return f"Automatic — detected: {detected_label}"
    return "Automatic — detected: none (no tool calls)"


class SettingsDialog(QDialog):
    """Edits a copy of the settings; :meth:`result_settings` gives the edited copy."""

    def __init__(
        self,
        settings: Settings,
        *,
        detected_label: str | None = None,
        model_path: str | None = None,
        model_name: str | None = None,
        mcp: Any = None,
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("settingsDialog")
        self.setWindowTitle("Settings")
        self.original = settings
        self.settings = settings.model_copy(deep=True)
        self.model_path = model_path
        self.detected_label = detected_label
        self.mcp = mcp  # the running MCP servers (app.tools.mcp.McpManager): the Tools tab lists their tools
        lay = QVBoxLayout(self)
        self.tabs = QTabWidget()
        lay.addWidget(self.tabs, 1)
        self.controls: dict[str, tuple[int, QWidget]] = {}
        self._build_chat_tab()
        self._build_sampling_tab()
        self._build_model_tab()
        self._build_tools_tab()
        self._build_appearance_tab()
        self._build_override_tab(model_name)
        self.error_label = QLabel("")
        self.error_label.setObjectName("settingsError")
        self.error_label.setWordWrap(True)
        lay.addWidget(self.error_label)
        buttons = QDialogButtonBox(
            QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel
        )
        buttons.accepted.connect(self._on_buttons_accepted)
        buttons.rejected.connect(self.reject)
        lay.addWidget(buttons)
        self.resize(620, 520)

    # -- the tabs, one builder each ------------------------------------------------------------
    @staticmethod
    def _form_page() -> tuple[QWidget, QFormLayout]:
        """A tab's page: a form at the top, the room left below it."""
        page = QWidget()
        outer = QVBoxLayout(page)
        f = QFormLayout()
        outer.addLayout(f)
        outer.addStretch(1)
        return page, f

    @staticmethod
    def _hint(text: str) -> QLabel:
        hint = QLabel(text)
        hint.setWordWrap(True)
        hint.setObjectName("hint")
        return hint

    def _build_chat_tab(self) -> None:
        chat, f = self._form_page()
        self.tool_format = self._choice(
            "chat.tool_format",
            self._format_choices(self.model_path is not None),
            self.settings.chat.tool_format,
        )
        tf_row = QWidget()
        h = QHBoxLayout(tf_row)
        h.setContentsMargins(0, 0, 0, 0)
        h.addWidget(self.tool_format, 1)
        f.addRow("Tool-call format", tf_row)
        f.addRow(
            "",
            self._hint(
                "Automatic reads the format from the model's chat template. Pick a family to force it, "
                "or No tools to chat without tool calls."
            ),
        )
        from app.ui.tool_choice import BASE_CHOICES

        self.tool_choice = self._choice(
            "chat.tool_choice",
            [(value, label.removeprefix("Tools: ")) for value, label in BASE_CHOICES],
            self.settings.chat.tool_choice,
            tooltip="Where a conversation's tool choice starts: Auto (the model decides), "
            "Required (every reply is a tool call) or None (no tools).",
        )
        f.addRow("Tool choice", self.tool_choice)
        self.system_prompt = QPlainTextEdit(self.settings.chat.system_prompt)
        self.system_prompt.setObjectName("chat.system_prompt")
        self.system_prompt.setMaximumHeight(120)
        f.addRow("System prompt", self.system_prompt)
        self.context_policy = self._choice(
            "chat.context_policy",
            CONTEXT_POLICIES,
            self.settings.chat.context_policy,
            tooltip="What happens when a conversation no longer fits the model's context.",
        )
        f.addRow("When the chat is full", self.context_policy)
        self.max_tool_rounds = number_box(
            "chat.max_tool_rounds",
            (1, 100),
            self.settings.chat.max_tool_rounds,
            tooltip="The most rounds of tool calls one reply runs; a model still calling then stops with a "
            "notice, its last calls kept as text. A call the model repeats in the same reply is "
            "answered with its earlier result instead of running again.",
        )
        f.addRow("Tool rounds per reply", self.max_tool_rounds)
        self._add_tab(
            chat,
            "Chat",
            {
                "chat.tool_format": self.tool_format,
                "chat.tool_choice": self.tool_choice,
                "chat.system_prompt": self.system_prompt,
                "chat.context_policy": self.context_policy,
                "chat.max_tool_rounds": self.max_tool_rounds,
            },
        )

    def _build_sampling_tab(self) -> None:
        self.sampling = SamplingForm("the model's recommended value", max_tokens_optional=False)
        self.sampling.set_values(self.settings.sampling.model_dump())
        self.sampling.show_model_defaults(model_sampling_defaults(self.model_path))
        self._add_tab(
            self.sampling, "Sampling", {f"sampling.{n}": self.sampling.spins[n] for n in SamplingForm.FIELDS}
        )

    def _build_model_tab(self) -> None:
        model, f = self._form_page()
        self.context_length = number_box(
            "model.context_length",
            (256, 1_048_576),
            self.settings.model.context_length,
            step=1024,
            tooltip="How many tokens of conversation (with tool descriptions) the model "
            "can see; more needs more memory. The model reloads when it changes.",
        )
        self.gpu_layers = GpuLayersSpin(self.settings.model.gpu_layers)
        self.threads = number_box(
            "model.threads", (0, 256), self.settings.model.threads or 0, off="automatic"
        )
        self.gpu_layers.setToolTip(
            'Layers computed on the GPU. "automatic" (the default) puts every layer '
            "on the GPU when this llama.cpp build has a GPU backend (Metal, CUDA, "
            'Vulkan) and none otherwise; "all" = every layer, 0 = CPU only. Lower '
            "it if a large model does not fit in the GPU's memory."
        )
        f.addRow("Context length (tokens)", self.context_length)
        f.addRow("GPU layers", self.gpu_layers)
        f.addRow("Threads", self.threads)
        self.kv_type = self._choice("model.kv_type", KV_TYPES, self.settings.model.kv_type, tooltip=_KV_HINT)
        self.flash_attn = self._choice("model.flash_attn", _ON_OFF, self.settings.model.flash_attn)
        self.kv_store_mib = number_box(
            "model.kv_store_mib",
            (0, 1_048_576),
            self.settings.model.kv_store_mib,
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
        self.ngram_draft = self._choice(
            "model.ngram_draft",
            ((True, "N-gram drafting on"), (False, "Off")),
            self.settings.model.ngram_draft,
            tooltip=_NGRAM_HINT,
        )
        self.draft_model = QLineEdit(self.settings.model.draft_model or "")
        self.draft_model.setObjectName("model.draft_model")
        self.draft_model.setPlaceholderText("none: a small .gguf with the model's vocabulary")
        self.draft_model.setToolTip(_DRAFT_HINT)
        f.addRow("Speculative decoding", self.ngram_draft)
        f.addRow("Draft model", self._with_browse(self.draft_model, folder=False, gguf=True))
        self._add_tab(
            model,
            "Model",
            {
                "model.context_length": self.context_length,
                "model.gpu_layers": self.gpu_layers,
                "model.threads": self.threads,
                "model.kv_type": self.kv_type,
                "model.flash_attn": self.flash_attn,
                "model.kv_store_mib": self.kv_store_mib,
                "model.ngram_draft": self.ngram_draft,
                "model.draft_model": self.draft_model,
            },
        )

    def _build_tools_tab(self) -> None:
        tools, f = self._form_page()
        self.workspace = QLineEdit(self.settings.tools.workspace or "")
        self.workspace.setPlaceholderText("folder the file tools may read and write")
        f.addRow("Workspace folder", self._with_browse(self.workspace, folder=True))
        f.addRow(
            "",
            self._hint(
                "Setting a workspace folder turns on the file tools (list, read and write files in "
                "it); writing asks you first. Without one, the model has the calculator and the clock."
            ),
        )
        self.default_approval = self._choice(
            "tools.default_approval",
            [("ask", "Ask before each side-effecting call"), ("allow", "Allow without asking")],
            self.settings.tools.default_approval,
        )
        f.addRow("Tool approval default", self.default_approval)
        self.always_allowed = QLineEdit(
            ", ".join(sorted(n for n, v in self.settings.tools.approvals.items() if v == "allow"))
        )
        self.always_allowed.setPlaceholderText("tool names allowed without asking, comma separated")
        f.addRow("Always allowed tools", self.always_allowed)
        self.mcp_path = QLineEdit(self.settings.tools.mcp_servers_path or "")
        self.mcp_path.setPlaceholderText("mcp.json (Claude Desktop format)")
        f.addRow("MCP servers file", self._with_browse(self.mcp_path, folder=False))
        from app.ui.settings_tools_tab import add_mcp_section

        self.mcp_tools = add_mcp_section(tools, f, self._hint, self.mcp, self.settings.tools)
        self._add_tab(
            tools,
            "Tools",
            {
                "tools.workspace": self.workspace,
                "tools.default_approval": self.default_approval,
                "tools.mcp_servers_path": self.mcp_path,
            },
        )

    def _build_appearance_tab(self) -> None:
        look, f = self._form_page()
        self.theme = self._choice("window.theme", THEMES, self.settings.window.theme)
        f.addRow("Theme", self.theme)
        self._add_tab(look, "Appearance", {"window.theme": self.theme})

    def _build_override_tab(self, model_name: str | None) -> None:
        """This model: its own tool format, context policy and sampling (when a model is loaded)."""
        per = QWidget()
        v = QVBoxLayout(per)
        self.model_tool_format: QComboBox | None = None
        self.model_sampling: SamplingForm | None = None
        self.model_context_policy: QComboBox | None = None
        self.model_kv_type: QComboBox | None = None
        self.model_flash_attn: QComboBox | None = None
        self.model_ngram_draft: QComboBox | None = None
        self.model_draft_model: QComboBox | None = None
        self.model_thinking: Any = None  # the model's thinking (issue 30)
        self.model_thinking_budget: Any = None
        model_path = self.model_path
        if model_path is None:
            v.addWidget(QLabel("Load a model to give it its own tool format and sampling."))
        else:
            v.addWidget(QLabel(f"Overrides for <b>{model_name or model_path}</b> (unchecked: global value)."))
            f2 = QFormLayout()
            ov = self.settings.override_for(model_path)

            def inherited(name: str, choices: Sequence[tuple[Any, str]], tooltip: str = "") -> QComboBox:
                """The override's choice ``name``: first "Use the global setting" (None)."""
                own = [(None, "Use the global setting"), *choices]
                return self._choice(
                    f"override.{name}", own, getattr(ov, name) if ov else None, tooltip=tooltip
                )

            self.model_tool_format = inherited("tool_format", self._format_choices(True))
            f2.addRow("Tool-call format", self.model_tool_format)
            self.model_context_policy = inherited("context_policy", CONTEXT_POLICIES)
            f2.addRow("When the chat is full", self.model_context_policy)
            self.model_kv_type = inherited("kv_type", KV_TYPES, _KV_HINT)
            f2.addRow("KV cache type", self.model_kv_type)
            self.model_flash_attn = inherited("flash_attn", _ON_OFF)
            f2.addRow("Flash attention", self.model_flash_attn)
            self.model_ngram_draft = inherited("ngram_draft", _ON_OFF, _NGRAM_HINT)
            f2.addRow("Speculative decoding", self.model_ngram_draft)
            own_draft = ov.draft_model if ov else None
            self.model_draft_model = self._choice(
                "override.draft_model",
                [*_DRAFT_INHERIT, *([(own_draft, own_draft)] if own_draft else [])],
                own_draft,
                tooltip=_DRAFT_HINT,
            )
            f2.addRow("Draft model", self._draft_row(self.model_draft_model))
            self.model_thinking, self.model_thinking_budget = override_fields(ov)
            f2.addRow("Thinking", self.model_thinking)
            f2.addRow("Thinking budget", self.model_thinking_budget)
            v.addLayout(f2)
            self.model_sampling = SamplingForm("the global value", max_tokens_optional=True)
            self.model_sampling.set_values(
                ov.sampling.model_dump() if ov else {}, defaults=self.settings.sampling.model_dump()
            )
            v.addWidget(self.model_sampling)
        v.addStretch(1)
        self._add_tab(per, "This model", {"model_override.tool_format": self.model_tool_format or per})

    # -- helpers -------------------------------------------------------------------------------
    def _format_choices(self, have_model: bool) -> list[tuple[str, str]]:
        """The tool formats, "auto" labelled with what was detected."""
        auto = _auto_label(self.detected_label, have_model)
        return [(value, auto if value == "auto" else label) for value, label in format_choices()]

    def _choice(
        self, name: str, choices: Sequence[tuple[Any, str]], value: Any, *, tooltip: str = ""
    ) -> QComboBox:
        """A box of ``choices`` ((value, label) pairs) named ``name`` (its setting), ``value`` chosen."""
        combo = QComboBox()
        combo.setObjectName(name)
        for data, label in choices:
            combo.addItem(label, data)
        self._select(combo, value)
        combo.setToolTip(tooltip)
        return combo

    @staticmethod
    def _select(combo: QComboBox, value: Any) -> None:
        i = combo.findData(value)
        if i < 0 and isinstance(value, str):  # a family not in this build's registry: keep it visible
            combo.addItem(f"{value} (unknown)", value)
            i = combo.count() - 1
        combo.setCurrentIndex(max(i, 0))

    def _with_browse(self, edit: QLineEdit, *, folder: bool, gguf: bool = False) -> QWidget:
        w = QWidget()
        h = QHBoxLayout(w)
        h.setContentsMargins(0, 0, 0, 0)
        h.addWidget(edit, 1)
        b = QPushButton("Browse…")

        def browse() -> None:
            if folder:
                p = QFileDialog.getExistingDirectory(self, "Workspace folder", edit.text())
            elif gguf:
                p = self._pick_gguf(edit.text())
            else:
                p, _ = QFileDialog.getOpenFileName(self, "MCP servers file", edit.text(), "JSON (*.json)")
            if p:
                edit.setText(p)

        b.clicked.connect(browse)
        h.addWidget(b)
        return w

    def _pick_gguf(self, start: str) -> str:
        """A draft model chosen in a file dialog ("" when none was)."""
        p, _ = QFileDialog.getOpenFileName(self, "Draft model", start, "GGUF models (*.gguf)")
        return p

    def _draft_row(self, combo: QComboBox) -> QWidget:
        """This model's draft model: the global one, none, or a file (Browse… adds and picks it)."""
        w = QWidget()
        h = QHBoxLayout(w)
        h.setContentsMargins(0, 0, 0, 0)
        h.addWidget(combo, 1)
        b = QPushButton("Browse…")
        b.clicked.connect(lambda: self.choose_draft_model(self._pick_gguf(combo.currentData() or "")))
        h.addWidget(b)
        return w

    def choose_draft_model(self, path: str) -> None:
        """Make ``path`` this model's draft model in the "This model" tab ("": nothing changes)."""
        combo = self.model_draft_model
        if path and combo is not None:
            if combo.findData(path) < 0:
                combo.addItem(path, path)
            self._select(combo, path)

    def _add_tab(self, w: QWidget, title: str, controls: dict[str, QWidget]) -> None:
        i = self.tabs.addTab(w, title)
        for key, c in controls.items():
            self.controls[key] = (i, c)

    # -- API -----------------------------------------------------------------------------------
    def open_at(self, key: str) -> QWidget | None:
        """Show the dialog (non-blocking) with the tab of ``key`` open and its control focused."""
        entry = self.controls.get(key)
        if not self.isVisible():
            self.open()
        if entry is None:
            return None
        tab, control = entry
        self.tabs.setCurrentIndex(tab)
        control.setFocus(Qt.FocusReason.OtherFocusReason)
        self.focused_key = key
        return control

    def result_settings(self) -> Settings:
        """The edited settings (validated by pydantic; raises ValueError with a clear message)."""
        s = self.settings.model_copy(deep=True)
        s.chat.tool_format = self.tool_format.currentData()
        s.chat.tool_choice = self.tool_choice.currentData()
        s.chat.system_prompt = self.system_prompt.toPlainText()
        s.chat.max_tool_rounds = self.max_tool_rounds.value()
        s.sampling = type(s.sampling).model_validate({**s.sampling.model_dump(), **self.sampling.values()})
        s.model.context_length = self.context_length.value()
        s.model.gpu_layers = self.gpu_layers.layers()
        s.model.threads = self.threads.value() or None
        s.model.kv_type = self.kv_type.currentData()
        s.model.flash_attn = bool(self.flash_attn.currentData())
        s.model.kv_store_mib = self.kv_store_mib.value()
        s.model.ngram_draft = bool(self.ngram_draft.currentData())
        s.model.draft_model = self._checked_draft(self.draft_model.text(), self.settings.model.draft_model)
        s.tools.workspace = self.workspace.text().strip() or None
        s.tools.default_approval = self.default_approval.currentData()
        allowed = {n.strip() for n in self.always_allowed.text().split(",") if n.strip()}
        approvals: dict[str, ApprovalDefault] = {n: v for n, v in s.tools.approvals.items() if v != "allow"}
        approvals.update({n: "allow" for n in allowed})
        s.tools.approvals = approvals
        s.tools.mcp_servers_path = self.mcp_path.text().strip() or None
        s.chat.context_policy = self.context_policy.currentData()
        s.window.theme = self.theme.currentData()
        if (
            self.model_path is not None
            and self.model_tool_format is not None
            and self.model_sampling is not None
        ):
            samp = SamplingOverride(**self.model_sampling.values())
            tf = self.model_tool_format.currentData()
            cp = self.model_context_policy.currentData() if self.model_context_policy is not None else None
            kv = self.model_kv_type.currentData() if self.model_kv_type is not None else None
            fa = self.model_flash_attn.currentData() if self.model_flash_attn is not None else None
            ng = self.model_ngram_draft.currentData() if self.model_ngram_draft is not None else None
            dm = self.model_draft_model.currentData() if self.model_draft_model is not None else None
            if dm:
                ov0 = self.settings.override_for(self.model_path)
                dm = self._checked_draft(dm, ov0.draft_model if ov0 else None)
            th, tb = override_values(self.model_thinking, self.model_thinking_budget)
            key = model_key(self.model_path)
            if (
                tf is None
                and cp is None
                and kv is None
                and fa is None
                and ng is None
                and dm is None
                and (th, tb) == (None, None)
                and not any(v is not None for v in samp.model_dump().values())
            ):
                s.set_override(key, None)
            else:
                s.set_override(
                    key,
                    ModelOverride(
                        tool_format=tf,
                        sampling=samp,
                        context_policy=cp,
                        kv_type=kv,
                        flash_attn=fa,
                        ngram_draft=ng,
                        draft_model=dm,
                    ).model_copy(update={"thinking": th, "thinking_budget": tb}),
                )
        return s

    @staticmethod
    def _checked_draft(text: str, saved: str | None) -> str | None:
        """A draft model path as the settings keep it (None: none); ValueError says why a new one
        cannot be a draft model (one already saved is kept as it is, even while its file is away)."""
        path = text.strip()
        if not path or path == saved:
            return path or None
        problem = draft_model_problem(path)
        if problem is not None:
            raise ValueError(problem[0].upper() + problem[1:])
        return path

    def _on_buttons_accepted(self) -> None:
        try:
            self.settings = self.result_settings()
        except ValueError as exc:
            self.error_label.setText(f"Not saved: {exc}")
            return
        self.accept()
