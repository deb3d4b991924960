"""The settings dialog: edits a copy of ``app.storage.settings.Settings``.

``chat.tool_format`` is a dropdown built from ``app.engine.formats.tool_format_choices()``
(auto, each family by label, none); the family detected for the loaded model is shown
beside "auto". :meth:`SettingsDialog.open_at` focuses one setting (the notice banner's
link uses it). Each tab has its own builder (``_build_<tab>_tab``): the Model tab and the
"This model" tab (per-model overrides of tool format, KV cache, speculative decoding, thinking
and sampling) are parts of their own (``app.ui.settings_model_tab``), the MCP part of the Tools
tab too (``app.ui.settings_tools_tab``); the fields the tabs share (the sampling form, the GPU
layers spin box) live in ``app.ui.settings_fields``.
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter
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
    QScrollArea,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.storage.settings import ApprovalDefault, Settings
from app.ui.labels import FormNote
from app.ui.settings_fields import SamplingForm, model_sampling_defaults, number_box
from app.ui.settings_model_tab import ModelOverrideTab, ModelTab
from app.ui.text_size import scale_choices
from app.ui.theme import THEMES

__all__ = ["CONTEXT_POLICIES", "SettingsDialog", "format_choices"]

#: The choices of ``chat.context_policy`` (values of ``app.engine.context.POLICIES``), in plain words.
CONTEXT_POLICIES = (
    ("stop", "Stop and say so (start a new chat or increase the context)"),
    ("drop_oldest", "Forget the oldest messages (rolling window)"),
    ("truncate_middle", "Keep the first exchange, forget the ones after it"),
)

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
    """Edits a copy of the settings; :meth:`result_settings` gives the edited copy. The Model and
    This model tabs' fields are read through the dialog too (``dlg.kv_type``, ``dlg.model_kv_type``)."""

    # the Model and This model tabs' fields, read through the dialog
    context_length = property(attrgetter("model_tab.context_length"))
    gpu_layers = property(attrgetter("model_tab.gpu_layers"))
    threads = property(attrgetter("model_tab.threads"))
    kv_type = property(attrgetter("model_tab.kv_type"))
    flash_attn = property(attrgetter("model_tab.flash_attn"))
    kv_store_mib = property(attrgetter("model_tab.kv_store_mib"))
    ngram_draft = property(attrgetter("model_tab.ngram_draft"))
    draft_model = property(attrgetter("model_tab.draft_model"))
    model_tool_format = property(attrgetter("override_tab.model_tool_format"))
    model_context_policy = property(attrgetter("override_tab.model_context_policy"))
    model_kv_type = property(attrgetter("override_tab.model_kv_type"))
    model_flash_attn = property(attrgetter("override_tab.model_flash_attn"))
    model_ngram_draft = property(attrgetter("override_tab.model_ngram_draft"))
    model_draft_model = property(attrgetter("override_tab.model_draft_model"))
    model_thinking = property(attrgetter("override_tab.model_thinking"))
    model_thinking_budget = property(attrgetter("override_tab.model_thinking_budget"))
    model_sampling = property(attrgetter("override_tab.model_sampling"))
    model_chat_template = property(attrgetter("override_tab.model_chat_template"))

    def __init__(
        self,
        settings: Settings,
        *,
        detected_label: str | None = None,
        model_path: str | None = None,
        model_name: str | None = None,
        made_note: str | None = None,
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
        self._build_override_tab(model_name, made_note)
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
        hint = FormNote(text)
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
        self.name_chats = self._choice(
            "chat.name_chats",
            [(False, "By the first message"), (True, "By the model, after the first reply")],
            self.settings.chat.name_chats,
            tooltip="A new chat is called by its first message's first words, or, after its first "
            "reply, the model chatted with writes a short title (a chat you renamed keeps its name). "
            "Any chat's menu also has Name with the model.",
        )
        f.addRow("Name new chats", self.name_chats)
        self._add_tab(
            chat,
            "Chat",
            {
                "chat.tool_format": self.tool_format,
                "chat.tool_choice": self.tool_choice,
                "chat.system_prompt": self.system_prompt,
                "chat.context_policy": self.context_policy,
                "chat.max_tool_rounds": self.max_tool_rounds,
                "chat.name_chats": self.name_chats,
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
        self.model_tab = ModelTab(self.settings, self._choice)
        self._add_tab(self.model_tab, "Model", self.model_tab.controls())

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
        scale = self.settings.window.text_scale
        self.text_scale = self._choice(
            "window.text_scale",
            scale_choices(scale),
            scale,
            tooltip="The size of the chat's text: the messages and the message box "
            "(also View → Larger text, Ctrl+=, and Smaller text, Ctrl+-)",
        )
        f.addRow("Chat text size", self.text_scale)
        self._add_tab(look, "Appearance", {"window.theme": self.theme, "window.text_scale": self.text_scale})

    def _build_override_tab(self, model_name: str | None, made_note: str | None) -> None:
        """This model: its own tool format, context policy, KV cache, drafting, thinking and sampling
        (``made_note``: what the made model in use sets over them, in words)."""
        self.override_tab = tab = ModelOverrideTab(
            self.settings,
            self.model_path,
            model_name,
            made_note=made_note,
            choice=self._choice,
            format_choices=self._format_choices(True),
            context_policies=CONTEXT_POLICIES,
        )
        # the tab's rows (a template editor, the sampling form) are taller than a small screen: it
        # scrolls, so the dialog stays the size of the other tabs
        scroll = QScrollArea()
        scroll.setWidgetResizable(True)
        scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        scroll.setWidget(tab)
        # as wide as the rows and the scroll bar beside them: it scrolls only down
        scroll.setMinimumWidth(tab.sizeHint().width() + scroll.verticalScrollBar().sizeHint().width())
        self._add_tab(scroll, "This model", {"model_override.tool_format": tab.model_tool_format or tab})

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

    def _with_browse(self, edit: QLineEdit, *, folder: bool) -> QWidget:
        w = QWidget()
        h = QHBoxLayout(w)
        h.setContentsMargins(0, 0, 0, 0)
        h.addWidget(edit, 1)
        b = QPushButton("Browse…")

        def browse() -> None:
            if folder:
                p = QFileDialog.getExistingDirectory(self, "Workspace folder", edit.text())
            else:
                p, _ = QFileDialog.getOpenFileName(self, "MCP servers file", edit.text(), "JSON (*.json)")
            if p:
                edit.setText(p)

        b.clicked.connect(browse)
        h.addWidget(b)
        return w

    def choose_draft_model(self, path: str) -> None:
        """Make ``path`` this model's draft model in the "This model" tab ("": nothing changes)."""
        self.override_tab.choose_draft_model(path)

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
        s.chat.name_chats = bool(self.name_chats.currentData())
        s.sampling = type(s.sampling).model_validate({**s.sampling.model_dump(), **self.sampling.values()})
        self.model_tab.apply(s)
        s.tools.workspace = self.workspace.text().strip() or None
        s.tools.default_approval = self.default_approval.currentData()
        allowed = {n.strip() for n in self.always_allowed.text().split(",") if n.strip()}
        approvals: dict[str, ApprovalDefault] = {n: v for n, v in s.tools.approvals.items() if v != "allow"}
        approvals.update({n: "allow" for n in allowed})
        s.tools.approvals = approvals
        s.tools.mcp_servers_path = self.mcp_path.text().strip() or None
        s.chat.context_policy = self.context_policy.currentData()
        s.window.theme = self.theme.currentData()
        s.window.text_scale = self.text_scale.currentData()
        self.override_tab.apply(s)
        return s

    def _on_buttons_accepted(self) -> None:
        try:
            self.settings = self.result_settings()
        except ValueError as exc:
            self.error_label.setText(f"Not saved: {exc}")
            return
        self.accept()
