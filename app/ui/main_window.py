"""The main window: a sidebar of pages | conversations | chat (or another page) | tool-call panel.

The window is assembled from parts, each in its own module; this one builds the frame (toolbar,
splitter, tool-call dock, status bar), connects the worker and shuts everything down:

* :mod:`app.ui.window_pages`         the sidebar, the page stack, the Models / Server / Check pages
* :mod:`app.ui.model_bar`            the model picker, load progress, tool-format badge, the library
* :mod:`app.ui.remote_models`        remote engines: their models in the picker, adding, editing, deleting
* :mod:`app.ui.window_chat`          the chat page: sending, stopping, regenerating, the worker's events
* :mod:`app.ui.window_conversations` the conversation list's actions (new, open, rename, delete)
* :mod:`app.ui.window_settings`      the settings dialog, saving, window state, banners above the chat
* :mod:`app.ui.window_menus`         menus and keyboard shortcuts
* :mod:`app.ui.window_status`        the status bar: TTFT, tokens/s, the context meter, downloads
* :mod:`app.ui.tasks`                the one helper that runs blocking work off the UI thread

Views only render the worker's signals and call core APIs (storage, the worker).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QSize, Qt, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence
from PySide6.QtWidgets import (
    QDockWidget,
    QMainWindow,
    QSizePolicy,
    QSplitter,
    QToolBar,
    QWidget,
)

from app.engine.events import DoneEvent
from app.ui.approval_dialog import ApprovalDialog
from app.ui.conversation_list import ConversationList
from app.ui.icons import icon
from app.ui.model_bar import ModelBarMixin
from app.ui.remote_models import RemoteModelsMixin
from app.ui.settings_dialog import SettingsDialog
from app.ui.tasks import BackgroundTasks
from app.ui.tool_panel import ToolCallPanel
from app.ui.window_chat import ChatMixin
from app.ui.window_conversations import ConversationsMixin
from app.ui.window_menus import SHORTCUTS, MenusMixin
from app.ui.window_pages import Page, PagesMixin
from app.ui.window_settings import SettingsMixin, engine_config_for
from app.ui.window_status import StatusBarMixin
from app.ui.worker import EngineWorker, ModelInfo

__all__ = ["SHORTCUTS", "MainWindow", "Page", "engine_config_for"]


class MainWindow(
    ConversationsMixin,
    ChatMixin,
    RemoteModelsMixin,
    ModelBarMixin,
    PagesMixin,
    MenusMixin,
    SettingsMixin,
    StatusBarMixin,
    QMainWindow,
):
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
        self.view_menu = None
        self._shut = False
        self._pending_text: str | None = None
        self._panel_hidden_for_page = False
        self.tasks = BackgroundTasks(self)
        self._open_library()

        self.worker = EngineWorker(history=self.history, max_loaded=self.settings.server.max_loaded_models)
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
        # top toolbar: conversations toggle, model picker, format badge, load progress, tool panel toggle
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
        self._build_model_toolbar(tb)
        spacer = QWidget()
        spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        tb.addWidget(spacer)

        # centre: conversations | stacked pages (the chat page first); the sidebar lists the pages
        self.conversations = ConversationList()
        self.conversations.setMinimumWidth(150)
        self.conversations.sig_new.connect(self.new_chat)
        self.conversations.sig_open.connect(self.open_conversation)
        self.conversations.sig_rename.connect(self.rename_conversation)
        self.conversations.sig_delete.connect(self.delete_conversation)
        self.conversations.sig_search.connect(self.search_conversations)
        self._build_sidebar(self._build_chat_page())
        self.split = QSplitter()
        self.split.setObjectName("mainSplit")
        self.split.addWidget(self.conversations)
        self.split.addWidget(self.stack)
        self.split.setStretchFactor(1, 1)
        self.split.setCollapsible(1, False)
        self.split.setSizes([230, 800])
        self.setCentralWidget(self.split)
        self.conversations.setVisible(self.act_conversations.isChecked())

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

        self._build_status_bar()
        self._update_send_button()
        self.show_page("chat")
        self.act_panel.toggled.connect(self._on_panel_toggled)

    def _on_conversations_toggled(self, on: bool) -> None:
        self.conversations.setVisible(on)

    # -- quitting -----------------------------------------------------------------------------------
    def closeEvent(self, e: QCloseEvent) -> None:  # noqa: N802
        page = self.built_page("models")
        if page is not None:
            from app.ui.models_page import ModelsPage

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
        self._shutdown_pages()  # downloads paused (kept for next time), the API server stopped
        if self._model_manager is not None:
            self._model_manager.shutdown()
        self.tasks.close(timeout_ms)
        return self.worker.shutdown(timeout_ms)
