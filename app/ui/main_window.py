"""The main window: a sidebar of pages | conversations | chat (or another page) | tool-call panel.

The window is a frame (toolbar, splitter, tool-call dock, status bar) that composes controllers,
each in its own module, each given what it needs in its constructor; the window builds them and
wires their signals. What several of them read (settings, history, the model in use, the open
conversation, busy) is one :class:`~app.ui.window_state.WindowState`.

* :class:`~app.ui.window_pages.PageStack`            the sidebar, the page stack, page registration
* :class:`~app.ui.window_pages.WorkPages`            the Models, Server and Check pages
* :class:`~app.ui.model_bar.ModelBar`                the model picker, load progress, tool-format badge, the library
* :class:`~app.ui.remote_models.RemoteEngines`       remote engines: their models, adding, editing, deleting
* :class:`~app.ui.window_chat_page.ChatPage`          the chat page's widgets: banners, chat view, compose row
* :class:`~app.ui.window_chat.ChatController`        sending, stopping, regenerating, the worker's turn events
* :class:`~app.ui.window_conversations.ConversationsController` the conversation list: new, open, rename, delete
* :class:`~app.ui.window_settings.SettingsController` the settings dialog, saving, the remembered window state
* :class:`~app.ui.window_settings.Notices`           the banners above the chat
* :class:`~app.ui.window_menus.MenusController`      menus and keyboard shortcuts
* :class:`~app.ui.window_status.StatusController`    the status bar: TTFT, tokens/s, the context meter, downloads
* :mod:`app.ui.tasks`                                the one helper that runs blocking work off the UI thread

Views only render the worker's signals and call core APIs (storage, the worker).
"""

from __future__ import annotations

from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

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

from app.ui.icons import icon
from app.ui.model_bar import ModelBar
from app.ui.remote_models import RemoteEngines
from app.ui.tasks import BackgroundTasks
from app.ui.text_size import TextSize
from app.ui.tool_panel import ToolCallPanel
from app.ui.window_chat import ChatController
from app.ui.window_chat_page import ChatPage
from app.ui.window_chat_turns import copy_last_code_block
from app.ui.window_conversations import ConversationsController
from app.ui.window_draft import DraftMeter
from app.ui.window_drops import DropsController, dropped_files
from app.ui.window_menus import SHORTCUTS, MenusController
from app.ui.window_pages import Page, PageStack, WorkPages
from app.ui.window_part import WindowKit
from app.ui.window_reply_edit import ReplyEditController
from app.ui.window_settings import Notices, SettingsController
from app.ui.window_state import WindowState, engine_config_for
from app.ui.window_status import StatusController
from app.ui.window_titles import TitlesController
from app.ui.worker import EngineWorker

if TYPE_CHECKING:
    from collections.abc import Callable

    from app.ui.settings_dialog import SettingsDialog

__all__ = ["SHORTCUTS", "MainWindow", "Page", "engine_config_for"]


class MainWindow(QMainWindow):
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
        history_notice = None
        if history is None:
            from app.storage.history import open_history

            history, history_notice = open_history()  # a bad or locked file never stops the start
        from app.storage.settings_store import SettingsStore

        self.store = SettingsStore(settings)  # the one source of every setting (its changes are told)
        self.state = WindowState(store=self.store, history=history)
        self.history = history
        self.tasks = BackgroundTasks(self)
        self.worker = EngineWorker(history=history, max_loaded=settings.server.max_loaded_models)
        self._build_parts()
        self.settings_ctl.restore_geometry()
        if settings_notice is not None:
            self.notices.show("settings", str(settings_notice.message), None, kind="warning")
        if history_notice is not None:
            self.notices.show("history", history_notice.message, None, kind="warning")
        self.conversations_ctl.refresh_conversations()
        self.model_bar.fill_model_picker()
        if autoload:
            path = model_path or self.model_bar.startup_model()
            if path is not None:  # the made model last chatted with, unless a file was asked for
                made = None if model_path else self.state.settings.model.last_made
                self.model_bar.open_on(str(path), made)
        self.model_bar.refresh_model_library()
        self.remote_engines.refresh_remote_models()  # the remote engines' models join the picker as they are listed
        self.conversations_ctl.reopen_last()

    # -- construction ----------------------------------------------------------------------------
    def _build_parts(self) -> None:
        """The frame and its controllers, each given what it needs."""
        st, worker = self.state, self.worker
        self.notices = Notices(self)
        self.store.on_save_error = self._on_settings_not_saved
        self.tool_panel = ToolCallPanel()
        self.tool_dock = QDockWidget("Tool calls", self)
        self.tool_dock.setObjectName("toolDock")
        self.tool_dock.setWidget(self.tool_panel)
        self.tool_dock.setMinimumWidth(220)
        self.page_stack = PageStack(self, tool_dock=self.tool_dock, open_settings=self.open_settings)
        self.status = StatusController(self.statusBar(), show_models_page=self.page_stack.show_models_page)
        kit = WindowKit(  # what the parts share (typed fields: mypy checks the order)
            self,
            st,
            worker,
            self.tasks,
            self.notices,
            self.status,
            self.page_stack,
            self.tool_panel,
            self.tool_dock,
        )
        self.settings_ctl = SettingsController(kit)
        self.remote_engines = RemoteEngines(kit)
        toolbar = self._build_toolbar()
        self.model_bar = ModelBar(kit, toolbar=toolbar, remote=self.remote_engines)
        self._finish_toolbar(toolbar)
        page = ChatPage.build(banners=self.notices.layout, tool_choice=st.settings.chat.tool_choice)
        self.conversations_ctl = ConversationsController(kit, page=page)
        self.chat_ctl = ChatController(
            kit,
            page=page,
            conversations=self.conversations_ctl,
            settings=self.settings_ctl,
            model_bar=self.model_bar,
        )
        self.conversations = self.conversations_ctl.list
        self.reply_edit = ReplyEditController(kit, chat=page.chat, conversations=self.conversations_ctl)
        self.titles = TitlesController(
            kit, conversations=self.conversations_ctl, turn_done=self.chat_ctl.sig_turn_done
        )
        self.draft_meter = DraftMeter(
            kit, page=page, files=self.chat_ctl.files
        )  # the context meter counts the message being written
        assert page.model_hint is not None  # its Load: the model a reopened chat was with
        page.model_hint.sig_load.connect(lambda path, made: self.model_bar.load_model(path, made or None))
        self.model_bar.sig_model_ready.connect(lambda _info: self.conversations_ctl.show_model_hint())
        # the chat's text size
        self.text_size = TextSize(kit, targets=[page.chat.column, page.compose], wheel=page.chat.viewport())
        self.drops = DropsController(  # models, exported chats, images and text files dropped on the window
            kit,
            model_bar=self.model_bar,
            conversations=self.conversations_ctl,
            images=self.chat_ctl.images.add_mime,
            files=self.chat_ctl.files.add_paths,
        )
        page.compose.takes_files = lambda mime: bool(dropped_files(mime))  # pasted or dropped on it
        page.compose.sig_files.connect(self.drops.take_mime)
        self.page_stack.add_page(
            "chat", "Chat", lambda: page.widget, tooltip="Chat with the loaded model", tool_panel=True
        )
        self.work_pages = WorkPages(kit, model_bar=self.model_bar)
        self.split = QSplitter()
        self.split.setObjectName("mainSplit")
        self.split.addWidget(self.conversations)
        self.split.addWidget(self.page_stack.stack)
        self.split.setStretchFactor(1, 1)
        self.split.setCollapsible(1, False)
        self.split.setSizes([230, 800])
        self.setCentralWidget(self.split)
        self.page_stack.sig_page_changed.connect(lambda _key: self._show_conversations())
        self._show_conversations()
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.tool_dock)
        self.tool_dock.setVisible(bool(st.settings.window.panels.get("tools", False)))
        self.menus = MenusController(
            self,
            pages=self.page_stack,
            panel_actions=(self.act_conversations, self.act_panel),
            conversations=self.conversations_ctl,
            stop=self.chat_ctl.stop,
            open_settings=self.open_settings,
            regenerate=self.chat_ctl.regenerate,
            copy_code=lambda: copy_last_code_block(page.chat, self.statusBar()),
            text_size=self.text_size.step,
        )
        self._wire_parts()
        self._chat_page = page
        assert page.recommended_button is not None and page.import_button is not None
        page.recommended_button.clicked.connect(self.show_recommended_models)
        page.import_button.clicked.connect(self.import_model)
        page.others_button.clicked.connect(
            lambda: self._models_page_then(lambda p: p.library.others.use_all())
        )
        self.model_bar.sig_state_changed.connect(self._update_no_model)
        self._update_no_model()
        # the tool panel's hint says the tools on now and the workspace (U13), as they change
        self.worker.sig_loaded.connect(lambda _info: self._update_tool_hint())
        self.store.subscribe(lambda _sections: self._update_tool_hint())
        self._update_tool_hint()
        self.chat_ctl.update_send_button()
        self.page_stack.show_page("chat")
        # the widgets and pages tests and tools reach for, by their old names
        self.chat, self.compose, self.send_button = page.chat, page.compose, page.send_button
        self.tool_choice_box, self.chat_page, self.window_notices = (
            page.tool_choice_box,
            page.widget,
            self.notices.layout,
        )
        self.pages = self.page_stack.pages
        self.stack, self.sidebar = self.page_stack.stack, self.page_stack.sidebar
        self.act_settings = self.page_stack.act_settings
        self.act_chat, self.act_models = self.pages["chat"].action, self.pages["models"].action
        self.act_quit, self.view_menu = self.menus.act_quit, self.menus.view_menu
        self.model_picker, self.format_badge = self.model_bar.model_picker, self.model_bar.format_badge
        self.load_label, self.library = self.model_bar.load_label, self.model_bar.library
        self.stat_ttft, self.stat_tps = self.status.stat_ttft, self.status.stat_tps
        self.stat_ctx, self.context_meter = self.status.stat_ctx, self.status.context_meter

    def _on_settings_not_saved(self, message: str) -> None:
        self.notices.show("settings_save", message, None, kind="error")

    def _build_toolbar(self) -> QToolBar:
        """The top toolbar: the conversations toggle, then the model bar's widgets."""
        tb = QToolBar("Model")
        tb.setObjectName("mainToolbar")
        tb.setMovable(False)
        tb.setIconSize(QSize(18, 18))
        self.addToolBar(tb)
        self.act_conversations = QAction(icon("conversations"), "Conversations", self)
        self.act_conversations.setCheckable(True)
        self.act_conversations.setChecked(bool(self.state.settings.window.panels.get("conversations", True)))
        self.act_conversations.setToolTip("Show or hide the conversation list (Ctrl+B)")
        self.act_conversations.setShortcut(QKeySequence("Ctrl+B"))
        self.act_conversations.toggled.connect(lambda _on: self._show_conversations())
        tb.addAction(self.act_conversations)
        return tb

    def _finish_toolbar(self, tb: QToolBar) -> None:
        """After the model bar: room, then the tool panel's toggle."""
        spacer = QWidget()
        spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        tb.addWidget(spacer)
        self.act_panel = self.tool_dock.toggleViewAction()
        self.act_panel.setText("Tool panel")
        self.act_panel.setIcon(icon("tools"))
        self.act_panel.setToolTip("Show or hide the tool-call panel (Ctrl+T)")
        self.act_panel.setShortcut(QKeySequence("Ctrl+T"))
        tb.addAction(self.act_panel)

    def _wire_parts(self) -> None:
        """What one part tells another, and the window's own signals."""
        bar, remote, settings, chat = self.model_bar, self.remote_engines, self.settings_ctl, self.chat_ctl
        remote.sig_changed.connect(bar.fill_model_picker)
        remote.sig_changed.connect(chat.update_send_button)
        remote.sig_loading.connect(bar.begin_loading)
        bar.sig_state_changed.connect(chat.update_send_button)
        settings.sig_settings_saved.connect(bar.update_format_badge)
        self.conversations_ctl.sig_stop_requested.connect(chat.stop)
        for said, retold in (  # what the window itself tells its callers, as its parts say it
            (bar.sig_model_ready, self.sig_model_ready),
            (bar.sig_library_refreshed, self.sig_library_refreshed),
            (settings.sig_settings_saved, self.sig_settings_saved),
            (chat.sig_turn_done, self.sig_turn_done),
            (self.page_stack.sig_page_changed, self.sig_page_changed),
        ):
            said.connect(retold)
        w = self.worker
        w.sig_error.connect(self.notices.show_error)
        w.sig_window_notice.connect(self.notices.show_warning)
        w.sig_context.connect(self.status.show_context)

    # -- the state the parts share, read where each part keeps it -------------------------------
    settings = property(attrgetter("state.settings"))
    model_info = property(attrgetter("state.model_info"))
    loading_path = property(attrgetter("state.loading_path"))
    conversation_id = property(attrgetter("state.conversation_id"))
    busy = property(attrgetter("state.busy"))
    context_usage = property(attrgetter("status.context_usage"))
    settings_dialog = property(attrgetter("settings_ctl.settings_dialog"))
    approval_dialog = property(attrgetter("chat_ctl.approval_dialog"))
    last_done = property(attrgetter("chat_ctl.last_done"), doc="The last turn's done event.")

    # -- what other parts and tools ask of the window ------------------------------------------------
    def open_settings(self, key: str | None = None) -> SettingsDialog:
        return self.settings_ctl.open_settings(key)

    def load_model(self, path: str) -> None:
        self.model_bar.load_model(path)

    def show_page(self, key: str) -> QWidget:
        return self.page_stack.show_page(key)

    def models_page(self) -> QWidget:
        return self.page_stack.models_page()

    def window_notice_texts(self) -> list[str]:
        return self.notices.texts()

    def apply_settings(self, settings: Any) -> None:
        self.settings_ctl.apply_settings(settings)

    def _show_conversations(self) -> None:
        """The conversation list belongs beside the chat (U10): other pages get its room."""
        on_chat = self.page_stack.current_page() == "chat"
        self.conversations.setVisible(self.act_conversations.isChecked() and on_chat)

    # -- first contact ---------------------------------------------------------------------------------
    def _update_no_model(self) -> None:
        st = self.state
        self._chat_page.show_no_model(
            st.model_info is None and st.loading_path is None, self.model_bar.library
        )

    def _update_tool_hint(self) -> None:
        info = self.state.model_info
        self.tool_panel.set_setup(
            info.tools if info is not None else None, self.state.settings.tools.workspace
        )

    def _models_page_then(self, do: Callable[[Any], object]) -> None:
        """The Models page, then ``do(page)``: its recommended list, its Import GGUF… dialog, or the
        models other apps keep taken in (the first-contact hint's buttons)."""
        from app.ui.models_page import ModelsPage

        page = self.page_stack.show_page("models")
        if isinstance(page, ModelsPage):
            do(page)

    def show_recommended_models(self) -> None:
        self._models_page_then(lambda page: page.sources.setCurrentIndex(0))

    def import_model(self) -> None:
        self._models_page_then(lambda page: page.import_button.click())

    # -- the chat's actions ----------------------------------------------------------------------------
    def send(self, text: str | None = None) -> bool:
        """Send the compose box's text (or ``text``); False if nothing was sent."""
        return self.chat_ctl.send(text)

    def stop(self) -> None:
        self.chat_ctl.stop()

    def new_chat(self) -> None:
        self.conversations_ctl.new_chat()

    def open_conversation(self, cid: int) -> None:
        self.conversations_ctl.open_conversation(cid)

    # -- quitting -----------------------------------------------------------------------------------
    def closeEvent(self, e: QCloseEvent) -> None:  # noqa: N802
        if not self.work_pages.confirm_quit():  # asks when a download runs
            e.ignore()
            return
        self.shutdown()
        super().closeEvent(e)

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        """Stop generation, join the worker thread, save the window state. Safe to call twice."""
        if self.state.shut:
            return True
        self.state.shut = True
        self.settings_ctl.save_window_state(
            tool_dock=self.tool_dock, act_conversations=self.act_conversations
        )
        self.settings_ctl.save_quietly()
        if self.chat_ctl.approval_dialog is not None:
            self.chat_ctl.approval_dialog.reject()
        self.work_pages.shutdown()  # downloads paused (kept for next time), the API server stopped
        self.model_bar.shutdown()
        self.tasks.close(timeout_ms)
        return self.worker.shutdown(timeout_ms)
