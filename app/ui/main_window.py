"""The main window: a sidebar of pages | conversations | chat (or another page) | tool-call panel.

The window is assembled from parts, each in its own module:

* :mod:`app.ui.model_bar`            the model picker, load progress and tool-format badge
* :mod:`app.ui.window_conversations` the conversation list's actions (new, open, rename, delete)
* :mod:`app.ui.window_chat`          sending, stopping, regenerating, and the worker's events
* :mod:`app.ui.tasks`                the one helper that runs blocking work off the UI thread

Pages are registered with :meth:`MainWindow.add_page` (key, title, factory): the sidebar gets a
checkable entry that shows which page is active, and the page is built the first time it is shown.
Views only render the worker's signals and call core APIs (storage, the worker).
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from PySide6.QtCore import QByteArray, QSize, Qt, Signal
from PySide6.QtGui import QAction, QActionGroup, QCloseEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from app.engine.events import DoneEvent
from app.ui.approval_dialog import ApprovalDialog
from app.ui.chat_view import ChatView, ComposeEdit, NoticeBanner
from app.ui.conversation_list import ConversationList
from app.ui.icons import icon
from app.ui.model_bar import ModelBarMixin
from app.ui.remote_models import RemoteModelsMixin
from app.ui.settings_dialog import SettingsDialog
from app.ui.tasks import BackgroundTasks
from app.ui.tool_panel import ToolCallPanel
from app.ui.window_chat import ChatMixin
from app.ui.window_conversations import ConversationsMixin
from app.ui.worker import EngineConfig, EngineWorker, ModelInfo

__all__ = ["SHORTCUTS", "MainWindow", "Page", "engine_config_for"]

#: The keyboard shortcuts the Help menu lists (key, what it does).
SHORTCUTS = (
    ("Enter", "Send the message"),
    ("Shift+Enter", "New line in the message"),
    ("Esc", "Stop the reply"),
    ("Ctrl+N", "New chat"),
    ("Ctrl+K", "Search conversations"),
    ("Ctrl+B", "Show or hide the conversation list"),
    ("Ctrl+T", "Show or hide the tool-call panel"),
    ("Ctrl+,", "Settings"),
    ("Ctrl+Q", "Quit"),
)


def engine_config_for(settings: Any, model_path: str | None) -> EngineConfig:
    """The worker's config: global settings with the model's override on top."""
    from app.storage.settings import effective_settings

    eff = effective_settings(settings, model_path)
    return EngineConfig(
        tool_format=eff.tool_format,
        system_prompt=eff.system_prompt,
        sampling=eff.sampler_overrides(),
        max_tokens=int(eff.max_tokens),
        n_ctx=eff.context_length,
        n_gpu_layers=eff.gpu_layers,
        n_threads=eff.threads,
        workspace=settings.tools.workspace,
        approvals=dict(settings.tools.approvals),
        default_approval=settings.tools.default_approval,
        mcp_servers_path=settings.tools.mcp_servers_path,
        context_policy=eff.context_policy,
    )


@dataclass
class Page:
    """A page of the window: built by ``factory`` the first time it is shown."""

    key: str
    title: str
    factory: Callable[[], QWidget]
    action: QAction
    widget: QWidget | None = None
    tool_panel: bool = False  # the tool-call panel belongs beside this page


class MainWindow(ConversationsMixin, ChatMixin, RemoteModelsMixin, ModelBarMixin, QMainWindow):
    sig_settings_saved = Signal()
    sig_turn_done = Signal(object)  # DoneEvent, after the window has rendered the end of a turn
    sig_model_ready = Signal(object)  # ModelInfo, after the picker shows the loaded model
    sig_library_refreshed = Signal()  # the model picker lists the library's models again
    sig_page_changed = Signal(str)  # the key of the page now shown

    def __init__(
        self,
        *,
        history: Any = None,
        settings: Any = None,
        settings_notice: Any = None,
        autoload: bool = True,
        model_path: str | Path | None = None,
    ) -> None:
        super().__init__()
        self.setWindowTitle("Callisto")
        self.setObjectName("mainWindow")
        from app.storage.settings import load_settings

        if settings is None:
            settings, notice = load_settings()
            settings_notice = settings_notice or notice
        self.settings = settings
        history_notice = None
        if history is None:
            from app.storage.history import open_history

            history, history_notice = open_history()  # a bad or locked file never stops the start
        self.history = history
        self.conversation_id: int | None = None
        self.model_info: ModelInfo | None = None
        self.loading_path: str | None = None
        self.busy = False
        self.settings_dialog: SettingsDialog | None = None
        self.approval_dialog: ApprovalDialog | None = None
        self.last_done: DoneEvent | None = None
        self.context_usage: Any = None
        self.library_models: list[Any] = []  # usable LocalModels of the last library scan
        self.pages: dict[str, Page] = {}
        self._library: Any = None
        self._shut = False
        self._pending_text: str | None = None
        self._panel_hidden_for_page = False
        self.tasks = BackgroundTasks(self)

        self.worker = EngineWorker(history=self.history)
        self._connect_worker()
        self._build_ui()
        self._build_menus()
        self._build_shortcuts()
        self._restore_geometry()
        if settings_notice is not None:
            self.show_window_notice("settings", str(settings_notice.message), None, kind="warning")
        if history_notice is not None:
            self.show_window_notice("history", history_notice.message, None, kind="warning")
        self.refresh_conversations()
        self._fill_model_picker()
        if autoload:
            path = model_path or self._startup_model()
            if path is not None:
                self.load_model(str(path))
        self.refresh_model_library()
        self.refresh_remote_models()  # the remote engines' models join the picker as they are listed
        self._reopen_last_conversation()

    def config_for(self, model_path: str | None) -> EngineConfig:
        return engine_config_for(self.settings, model_path)

    # -- construction ----------------------------------------------------------------------------
    def _connect_worker(self) -> None:
        w = self.worker
        w.sig_text.connect(self._on_worker_text)
        w.sig_reasoning.connect(self._on_worker_reasoning)
        w.sig_tool_call_started.connect(self._on_worker_tool_call_started)
        w.sig_tool_call_finished.connect(self._on_worker_tool_call_finished)
        w.sig_notice.connect(self._on_worker_notice)
        w.sig_tool_call_incomplete.connect(self._on_worker_tool_call_incomplete)
        w.sig_done.connect(self._on_worker_done)
        w.sig_load_progress.connect(self._on_worker_load_progress)
        w.sig_loaded.connect(self._on_worker_loaded)
        w.sig_error.connect(self._on_worker_error)
        w.sig_load_failed.connect(self._on_worker_load_failed)
        w.sig_context.connect(self._on_worker_context)
        w.sig_approval_requested.connect(self._on_worker_approval_requested)
        w.sig_conversation_saved.connect(self._on_worker_conversation_saved)
        w.sig_window_notice.connect(self._on_worker_window_notice)

    def _build_ui(self) -> None:
        # top toolbar: model picker, format badge, load progress, tool panel toggle
        tb = QToolBar("Model")
        tb.setObjectName("mainToolbar")
        tb.setMovable(False)
        tb.setIconSize(QSize(18, 18))
        self.addToolBar(tb)
        self.act_conversations = QAction(icon("conversations"), "Conversations", self)
        self.act_conversations.setCheckable(True)
        self.act_conversations.setChecked(bool(self.settings.window.panels.get("conversations", True)))
        self.act_conversations.setToolTip("Show or hide the conversation list (Ctrl+B)")
        self.act_conversations.setShortcut(QKeySequence("Ctrl+B"))
        self.act_conversations.toggled.connect(self._on_conversations_toggled)
        tb.addAction(self.act_conversations)
        self.model_picker = QComboBox()
        self.model_picker.setObjectName("modelPicker")
        self.model_picker.setMinimumWidth(160)
        self.model_picker.setSizeAdjustPolicy(
            QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon
        )
        self.model_picker.setMinimumContentsLength(18)
        self.model_picker.setToolTip("The model you chat with")
        self.model_picker.activated.connect(self._on_model_picker_activated)
        tb.addWidget(self.model_picker)
        self.format_badge = QLabel("")
        self.format_badge.setObjectName("formatBadge")
        self._badge_action = tb.addWidget(self.format_badge)  # a toolbar shows/hides the action
        self._badge_action.setVisible(False)
        self.load_progress = QProgressBar()
        self.load_progress.setObjectName("loadProgress")
        self.load_progress.setMaximumWidth(140)
        self.load_progress.setRange(0, 100)
        self._progress_action = tb.addWidget(self.load_progress)  # a toolbar shows/hides the action
        self._progress_action.setVisible(False)
        self.load_label = QLabel("")
        tb.addWidget(self.load_label)
        spacer = QWidget()
        spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        tb.addWidget(spacer)

        # left sidebar: one checkable entry per page (the active one is marked), then Settings
        self.sidebar = QToolBar("Pages")
        self.sidebar.setObjectName("sidebar")
        self.sidebar.setMovable(False)
        self.sidebar.setIconSize(QSize(22, 22))
        self.sidebar.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextUnderIcon)
        self.addToolBar(Qt.ToolBarArea.LeftToolBarArea, self.sidebar)
        self._page_group = QActionGroup(self)
        self._page_group.setExclusive(True)
        self.act_settings = QAction(icon("settings"), "Settings", self)
        self.act_settings.setToolTip("Settings (Ctrl+,)")
        self.act_settings.triggered.connect(lambda: self.open_settings())

        # centre: conversations | stacked pages
        self.conversations = ConversationList()
        self.conversations.setMinimumWidth(150)
        self.conversations.sig_new.connect(self.new_chat)
        self.conversations.sig_open.connect(self.open_conversation)
        self.conversations.sig_rename.connect(self.rename_conversation)
        self.conversations.sig_delete.connect(self.delete_conversation)
        self.conversations.sig_search.connect(self.search_conversations)

        chat_page = QWidget()
        chat_page.setObjectName("centralArea")
        v = QVBoxLayout(chat_page)
        v.setContentsMargins(0, 0, 0, 0)
        self.window_notices = QVBoxLayout()
        self.window_notices.setContentsMargins(8, 4, 8, 0)
        v.addLayout(self.window_notices)
        self.chat = ChatView()
        self.chat.sig_chip_clicked.connect(self.select_tool_call)
        self.chat.sig_open_setting.connect(self.open_settings)
        self.chat.sig_dismiss_notice.connect(self._on_notice_dismissed)
        self.chat.suppress_notice_codes.update(self.settings.window.dismissed)
        self.chat.sig_regenerate.connect(self.regenerate)
        self.chat.sig_edit_resend.connect(self.edit_and_resend)
        v.addWidget(self.chat, 1)
        self.compose_row = QHBoxLayout()
        self.compose_row.setContentsMargins(12, 6, 12, 10)
        self.compose = ComposeEdit()
        self.compose.sig_submit.connect(self.send_or_stop_from_keyboard)
        self.compose_row.addWidget(self.compose, 1)
        from app.ui.tool_choice import ToolChoiceBox

        self.tool_choice_box = ToolChoiceBox(self.settings.chat.tool_choice)
        self.tool_choice_box.sig_choice.connect(lambda v: setattr(self.worker, "tool_choice", v))
        self.worker.tool_choice = self.tool_choice_box.value()
        self.worker.sig_loaded.connect(lambda info: self.tool_choice_box.set_tools(info.tools))
        self.compose_row.addWidget(self.tool_choice_box, 0, Qt.AlignmentFlag.AlignBottom)
        self.send_button = QPushButton("Send")
        self.send_button.setObjectName("sendButton")
        self.send_button.clicked.connect(self._on_send_button_clicked)
        self.compose_row.addWidget(self.send_button, 0, Qt.AlignmentFlag.AlignBottom)
        v.addLayout(self.compose_row)
        self.chat_page = chat_page

        self.stack = QStackedWidget()
        self.stack.setMinimumWidth(360)
        self.split = QSplitter()
        self.split.setObjectName("mainSplit")
        self.split.addWidget(self.conversations)
        self.split.addWidget(self.stack)
        self.split.setStretchFactor(1, 1)
        self.split.setCollapsible(1, False)
        self.split.setSizes([230, 800])
        self.setCentralWidget(self.split)
        self.conversations.setVisible(self.act_conversations.isChecked())

        self.add_page(
            "chat", "Chat", lambda: self.chat_page, tooltip="Chat with the loaded model", tool_panel=True
        )
        self.add_page("models", "Models", self._build_models_page, tooltip="Find, download and load models")
        self.add_page(
            "server",
            "Server",
            self._build_server_page,
            tooltip="Serve the OpenAI, Anthropic and Ollama APIs to other programs",
        )
        self.add_page(
            "check",
            "Check",
            self._build_check_page,
            tooltip="Will it call? Check how well a model or an endpoint calls tools",
        )
        if self.settings.server.enabled:  # it was on when the window last closed: it starts again
            self.page_widget("server")
        self.sidebar.addSeparator()
        self.sidebar.addAction(self.act_settings)

        # right: tool-call panel (hideable dock)
        self.tool_panel = ToolCallPanel()
        self.tool_dock = QDockWidget("Tool calls", self)
        self.tool_dock.setObjectName("toolDock")
        self.tool_dock.setWidget(self.tool_panel)
        self.tool_dock.setMinimumWidth(220)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.tool_dock)
        self.act_panel = self.tool_dock.toggleViewAction()
        self.act_panel.setText("Tool panel")
        self.act_panel.setIcon(icon("tools"))
        self.act_panel.setToolTip("Show or hide the tool-call panel (Ctrl+T)")
        self.act_panel.setShortcut(QKeySequence("Ctrl+T"))
        tb.addAction(self.act_panel)
        self.tool_dock.setVisible(bool(self.settings.window.panels.get("tools", False)))

        # status bar: TTFT, tokens/s, the context meter
        sb = self.statusBar()
        self.stat_ttft = QLabel("TTFT —")
        self.stat_tps = QLabel("— tok/s")
        self.stat_ctx = QLabel("context —")
        self.context_meter = QProgressBar()
        self.context_meter.setObjectName("contextMeter")
        self.context_meter.setRange(0, 100)
        self.context_meter.setValue(0)
        self.context_meter.setFormat("Context —")
        self.context_meter.setTextVisible(True)
        self.context_meter.setMaximumWidth(150)
        for w in (self.stat_ttft, self.stat_tps, self.stat_ctx):
            w.setObjectName("statLabel")
            sb.addPermanentWidget(w)
        sb.addPermanentWidget(self.context_meter)
        self.download_indicator = QPushButton("")
        self.download_indicator.setObjectName("downloadIndicator")
        self.download_indicator.setFlat(True)
        self.download_indicator.setVisible(False)
        self.download_indicator.clicked.connect(self.show_models_page)
        sb.insertPermanentWidget(0, self.download_indicator)
        self._update_send_button()
        self.show_page("chat")
        self.act_panel.toggled.connect(self._on_panel_toggled)

    def _on_panel_toggled(self, _on: bool) -> None:
        if self.pages["chat"].widget is self.stack.currentWidget():
            self._panel_hidden_for_page = False

    def _build_menus(self) -> None:
        bar = self.menuBar()
        file_menu = bar.addMenu("&File")
        act_new = file_menu.addAction("New chat")
        act_new.triggered.connect(self.new_chat)
        file_menu.addAction(self.act_settings)
        file_menu.addSeparator()
        self.act_quit = file_menu.addAction("Quit")
        self.act_quit.setShortcut(QKeySequence("Ctrl+Q"))
        self.act_quit.setShortcutContext(Qt.ShortcutContext.ApplicationShortcut)
        self.act_quit.triggered.connect(self.close)
        view_menu = bar.addMenu("&View")
        for page in self.pages.values():
            view_menu.addAction(page.action)
        view_menu.addSeparator()
        view_menu.addAction(self.act_conversations)
        view_menu.addAction(self.act_panel)
        self.view_menu = view_menu
        help_menu = bar.addMenu("&Help")
        act_keys = help_menu.addAction("Keyboard shortcuts")
        act_keys.triggered.connect(self.show_shortcuts)

    def _build_shortcuts(self) -> None:
        QShortcut(QKeySequence("Esc"), self, activated=self.stop)
        QShortcut(QKeySequence("Ctrl+N"), self, activated=self.new_chat)
        QShortcut(QKeySequence("Ctrl+K"), self, activated=self.focus_search)
        QShortcut(QKeySequence("Ctrl+,"), self, activated=lambda: self.open_settings())

    def shortcuts_text(self) -> str:
        return "\n".join(f"{key}\t{what}" for key, what in SHORTCUTS)

    def show_shortcuts(self) -> QMessageBox:
        box = QMessageBox(
            QMessageBox.Icon.NoIcon,
            "Keyboard shortcuts",
            "<table>"
            + "".join(f"<tr><td><b>{k}</b>&nbsp;&nbsp;</td><td>{w}</td></tr>" for k, w in SHORTCUTS)
            + "</table>",
            QMessageBox.StandardButton.Close,
            self,
        )
        box.setObjectName("shortcutsBox")
        box.open()
        return box

    def _on_conversations_toggled(self, on: bool) -> None:
        self.conversations.setVisible(on)

    # -- pages -------------------------------------------------------------------------------------
    def add_page(
        self,
        key: str,
        title: str,
        factory: Callable[[], QWidget],
        *,
        tooltip: str = "",
        icon_name: str | None = None,
        tool_panel: bool = False,
    ) -> Page:
        """Register a page: a checkable sidebar entry (before Settings) and, when first shown, the widget
        ``factory()`` builds. Other modules (Server, Check...) register theirs the same way."""
        if key in self.pages:
            raise ValueError(f"a page named {key!r} is already registered")
        act = QAction(icon(icon_name or key), title, self)
        act.setCheckable(True)
        act.setToolTip(tooltip or title)
        act.triggered.connect(lambda _on=False, k=key: self.show_page(k))
        self._page_group.addAction(act)
        before = self.act_settings if self.act_settings in self.sidebar.actions() else None
        if before is not None:
            sep = self.sidebar.actions()[self.sidebar.actions().index(before) - 1]
            self.sidebar.insertAction(sep, act)
        else:
            self.sidebar.addAction(act)
        page = Page(key, title, factory, act, tool_panel=tool_panel)
        self.pages[key] = page
        if hasattr(self, "view_menu"):
            self.view_menu.insertAction(self.view_menu.actions()[len(self.pages) - 1], act)
        return page

    def page_widget(self, key: str) -> QWidget:
        page = self.pages[key]
        if page.widget is None:
            try:
                widget = page.factory()
            except Exception as exc:  # noqa: BLE001 - a page that cannot be built must not break the window
                widget = QLabel(f"The {page.title} page could not be opened: {exc}")
                widget.setAlignment(Qt.AlignmentFlag.AlignCenter)
                widget.setWordWrap(True)
            page.widget = widget
            if self.stack.indexOf(widget) < 0:
                self.stack.addWidget(widget)
        return page.widget

    def show_page(self, key: str) -> QWidget:
        widget = self.page_widget(key)
        self.stack.setCurrentWidget(widget)
        page = self.pages[key]
        page.action.setChecked(True)
        # the tool-call panel belongs beside the chat: other pages get the room, the chat gets it back
        if not page.tool_panel and self.tool_dock.isVisible():
            self._panel_hidden_for_page = True
            self.tool_dock.setVisible(False)
        elif page.tool_panel and self._panel_hidden_for_page:
            self._panel_hidden_for_page = False
            self.tool_dock.setVisible(True)
        self.sig_page_changed.emit(key)
        return widget

    def current_page(self) -> str:
        for key, page in self.pages.items():
            if page.widget is not None and self.stack.currentWidget() is page.widget:
                return key
        return "chat"

    def show_chat_page(self) -> None:
        self.show_page("chat")

    def show_models_page(self) -> None:
        self.show_page("models")

    @property
    def act_chat(self) -> QAction:
        return self.pages["chat"].action

    @property
    def act_models(self) -> QAction:
        return self.pages["models"].action

    @property
    def _models_page(self) -> QWidget | None:
        page = self.pages.get("models")
        return page.widget if page is not None else None

    def models_page(self) -> QWidget:
        return self.page_widget("models")

    def _build_models_page(self) -> QWidget:
        from app.ui.models_page import ModelsPage

        page = ModelsPage()
        page.setObjectName("modelsPage")
        page.sig_load_requested.connect(self._on_models_page_load_requested)
        # a finished download, an import, a deletion or a new folder: the picker follows
        page.sig_library_done.connect(self.refresh_model_library)
        page.sig_downloads.connect(self._on_downloads)
        page.set_loaded_path(self.model_info.path if self.model_info else None)
        self.sig_model_ready.connect(lambda info: page.set_loaded_path(info.path))
        return page

    def _on_downloads(self, running: int, fraction: float) -> None:
        """The download indicator in the status bar, seen from every page."""
        b = self.download_indicator
        b.setVisible(running > 0)
        pct = f" {fraction * 100:.0f}%" if fraction >= 0 else ""
        b.setText(f"⬇ {running} download{'s' if running != 1 else ''}{pct}")
        b.setToolTip("Downloading on the Models page (click to open it)")

    def _build_server_page(self) -> QWidget:
        from app.ui.server_page import ServerPage

        return ServerPage(self.settings, model_path=self._local_model_path, save=self._save_settings_quietly)

    def _build_check_page(self) -> QWidget:
        from app.ui.check_page import CheckPage

        return CheckPage(model_path=self._local_model_path)

    def _local_model_path(self) -> str | None:
        """The loaded model's file (None for a remote engine's model: it is not a file here)."""
        info = self.model_info
        return str(info.path) if info is not None and info.remote is None else None

    def _on_models_page_load_requested(self, path: str) -> None:
        self.show_chat_page()
        self.load_model(path)

    # -- notices ------------------------------------------------------------------------------------
    def _on_worker_error(self, message: str) -> None:
        self.show_window_notice("error", message, None, kind="error")

    def _on_worker_window_notice(self, code: str, message: str, setting: str | None) -> None:
        self.show_window_notice(code, message, setting, kind="warning")

    def show_window_notice(
        self, code: str, message: str, setting: str | None, *, kind: str = "warning"
    ) -> NoticeBanner:
        """A banner above the chat (``kind``: info, warning or error); one per code, the newest wins."""
        for i in reversed(range(self.window_notices.count())):
            old = self.window_notices.itemAt(i).widget()
            if isinstance(old, NoticeBanner) and old.code == code:
                self.window_notices.removeWidget(old)
                old.hide()
                old.deleteLater()
        b = NoticeBanner(code, message, setting, kind=kind)
        b.sig_open_setting.connect(self.open_settings)
        close = QPushButton("Dismiss")
        close.setFlat(True)
        close.clicked.connect(b.deleteLater)
        b.layout().addWidget(close)
        self.window_notices.addWidget(b)
        return b

    def window_notice_texts(self) -> list[str]:
        out = []
        for i in range(self.window_notices.count()):
            w = self.window_notices.itemAt(i).widget()
            if isinstance(w, NoticeBanner):
                out.append(w.message)
        return out

    # -- settings -----------------------------------------------------------------------------------
    def open_settings(self, key: str | None = None) -> SettingsDialog:
        if self.settings_dialog is not None and self.settings_dialog.isVisible():
            dlg = self.settings_dialog
        else:
            info = self.model_info
            dlg = SettingsDialog(
                self.settings,
                detected_label=info.detected_label if info else None,
                model_path=info.path if info else None,
                model_name=Path(info.path).stem if info else None,  # the picker's name
                parent=self,
            )
            dlg.accepted.connect(lambda: self.apply_settings(dlg.settings))
            self.settings_dialog = dlg
        dlg.open_at(key or "chat.tool_format")
        return dlg

    def apply_settings(self, settings: Any) -> None:
        theme_changed = settings.window.theme != self.settings.window.theme
        self.settings = settings
        self._save_settings_quietly()
        self.tool_choice_box.default = settings.chat.tool_choice
        if self.model_info is not None:
            self.worker.configure(self.config_for(self.model_info.path))
        self._update_format_badge()
        if theme_changed:
            from PySide6.QtWidgets import QApplication

            from app.ui.theme import apply_theme

            app = QApplication.instance()
            if app is not None:
                apply_theme(app, settings.window.theme)
        self.sig_settings_saved.emit()

    def _save_settings_quietly(self) -> None:
        from app.storage.settings import save_settings

        try:
            save_settings(self.settings)
        except OSError as exc:  # SettingsSaveError (an OSError) says what failed
            self.show_window_notice("settings_save", str(exc), None, kind="error")

    # -- remembered state -----------------------------------------------------------------------------
    def _restore_geometry(self) -> None:
        geo = self.settings.window.geometry
        if geo:
            with contextlib.suppress(ValueError, TypeError):
                self.restoreGeometry(QByteArray.fromBase64(geo.encode("ascii")))

    def _reopen_last_conversation(self) -> None:
        cid = self.settings.window.last_conversation_id
        if cid is None:
            return
        from app.storage.history import ConversationNotFound

        try:
            self.history.load_conversation(cid)
        except ConversationNotFound:
            self.settings.window.last_conversation_id = None
            return
        self.open_conversation(cid)

    def _save_window_state(self) -> None:
        w = self.settings.window
        w.geometry = bytes(self.saveGeometry().toBase64()).decode("ascii")
        w.panels = {
            **w.panels,
            "tools": self.tool_dock.isVisible(),
            "conversations": self.act_conversations.isChecked(),
        }
        w.last_conversation_id = self.conversation_id

    # -- quitting -----------------------------------------------------------------------------------
    def closeEvent(self, e: QCloseEvent) -> None:  # noqa: N802
        from app.ui.models_page import ModelsPage

        page = self._models_page
        if isinstance(page, ModelsPage) and not page.confirm_quit():  # asks when a download runs
            e.ignore()
            return
        self.shutdown()
        super().closeEvent(e)

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        """Stop generation, join the worker thread, save the window state. Safe to call twice."""
        if self._shut:
            return True
        self._shut = True
        self._save_window_state()
        self._save_settings_quietly()
        if self.approval_dialog is not None:
            self.approval_dialog.reject()
        from app.ui.models_page import ModelsPage

        page = self._models_page
        if isinstance(page, ModelsPage):  # running downloads are paused, kept for next time
            page.shutdown()
        server = self.pages["server"].widget if "server" in self.pages else None
        if server is not None and hasattr(server, "shutdown"):  # the API server stops with the window
            server.shutdown()
        self.tasks.close(timeout_ms)
        return self.worker.shutdown(timeout_ms)
