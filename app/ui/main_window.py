"""The main window: conversations | chat (or Models page) | tool-call panel.

Views only render the worker's signals and call core APIs (storage, the worker).
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, Signal
from PySide6.QtGui import QAction, QCloseEvent, QKeySequence, QShortcut
from PySide6.QtWidgets import (
    QComboBox,
    QDockWidget,
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QMainWindow,
    QProgressBar,
    QPushButton,
    QSizePolicy,
    QSplitter,
    QStackedWidget,
    QToolBar,
    QVBoxLayout,
    QWidget,
)

from app.engine.events import DoneEvent, NoticeEvent, ToolCallFinishedEvent, ToolCallStartedEvent
from app.ui.approval_dialog import ApprovalDialog
from app.ui.chat_view import ChatView, ComposeEdit, NoticeBanner
from app.ui.conversation_list import ConversationList
from app.ui.settings_dialog import SettingsDialog
from app.ui.tool_panel import ToolCallPanel
from app.ui.worker import EngineConfig, EngineWorker, ModelInfo

__all__ = ["MainWindow", "engine_config_for"]

OPEN_FILE = "__open__"


def _path_key(path: str | Path) -> str:
    return os.path.realpath(os.path.expanduser(str(path)))


class _ScanResult(QObject):
    done = Signal(object)  # list of LocalModel, or an Exception


class _LibraryScan(QRunnable):
    """``Library.scan()`` (reads every GGUF's header) on a pool thread; the result is queued back."""

    def __init__(self, library: Any, result: _ScanResult) -> None:
        super().__init__()
        self.library, self.result = library, result

    def run(self) -> None:
        try:
            models: Any = self.library.scan()
        except Exception as exc:  # noqa: BLE001 - shown in the status bar, never fatal
            models = exc
        self.result.done.emit(models)


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
    )


class MainWindow(QMainWindow):
    sig_settings_saved = Signal()
    sig_turn_done = Signal(object)  # DoneEvent, after the window has rendered the end of a turn
    sig_model_ready = Signal(object)  # ModelInfo, after the picker shows the loaded model
    sig_library_refreshed = Signal()  # the model picker lists the library's models again

    def __init__(self, *, history: Any = None, settings: Any = None, settings_notice: Any = None,
                 autoload: bool = True, model_path: str | Path | None = None) -> None:
        super().__init__()
        self.setWindowTitle("Callisto")
        self.setObjectName("mainWindow")
        from app.storage.settings import load_settings

        if settings is None:
            settings, notice = load_settings()
            settings_notice = settings_notice or notice
        self.settings = settings
        if history is None:
            from app.storage.history import History

            history = History()
        self.history = history
        self.conversation_id: int | None = None
        self.model_info: ModelInfo | None = None
        self.loading_path: str | None = None
        self.busy = False
        self.settings_dialog: SettingsDialog | None = None
        self.approval_dialog: ApprovalDialog | None = None
        self.last_done: DoneEvent | None = None
        self._models_page: QWidget | None = None
        self.library_models: list[Any] = []  # usable LocalModels of the last library scan
        self._library: Any = None
        self._scan_pool = QThreadPool(self)
        self._scan_pool.setMaxThreadCount(1)
        self._scan_results: set[_ScanResult] = set()

        self.worker = EngineWorker(history=self.history)
        self._connect_worker()
        self._build_ui()
        self._build_shortcuts()
        if settings_notice is not None:
            self.show_window_notice("settings", getattr(settings_notice, "message", str(settings_notice)), None)
        self.refresh_conversations()
        self._fill_model_picker()
        if autoload:
            path = model_path or self._startup_model()
            if path is not None:
                self.load_model(str(path))
        self.refresh_model_library()

    # -- construction ----------------------------------------------------------------------------
    def _connect_worker(self) -> None:
        w = self.worker
        w.sig_text.connect(self._on_worker_text)
        w.sig_reasoning.connect(self._on_worker_reasoning)
        w.sig_tool_call_started.connect(self._on_worker_tool_call_started)
        w.sig_tool_call_finished.connect(self._on_worker_tool_call_finished)
        w.sig_notice.connect(self._on_worker_notice)
        w.sig_done.connect(self._on_worker_done)
        w.sig_load_progress.connect(self._on_worker_load_progress)
        w.sig_loaded.connect(self._on_worker_loaded)
        w.sig_error.connect(self._on_worker_error)
        w.sig_load_failed.connect(self._on_worker_load_failed)
        w.sig_approval_requested.connect(self._on_worker_approval_requested)
        w.sig_conversation_saved.connect(self._on_worker_conversation_saved)
        w.sig_window_notice.connect(self.show_window_notice)

    def _build_ui(self) -> None:
        # toolbar: model picker, format badge, load progress, models, settings, panel toggle
        tb = QToolBar("Main")
        tb.setObjectName("mainToolbar")
        tb.setMovable(False)
        self.addToolBar(tb)
        tb.addWidget(QLabel(" Model: "))
        self.model_picker = QComboBox()
        self.model_picker.setObjectName("modelPicker")
        self.model_picker.setMinimumWidth(280)
        self.model_picker.activated.connect(self._on_model_picker_activated)
        tb.addWidget(self.model_picker)
        self.format_badge = QLabel("")
        self.format_badge.setObjectName("formatBadge")
        tb.addWidget(self.format_badge)
        self.load_progress = QProgressBar()
        self.load_progress.setObjectName("loadProgress")
        self.load_progress.setMaximumWidth(180)
        self.load_progress.setRange(0, 100)
        self._progress_action = tb.addWidget(self.load_progress)  # a toolbar shows/hides the action
        self._progress_action.setVisible(False)
        self.load_label = QLabel("")
        tb.addWidget(self.load_label)
        spacer = QWidget()
        spacer.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Preferred)
        tb.addWidget(spacer)
        self.act_chat = QAction("Chat", self)
        self.act_chat.triggered.connect(self.show_chat_page)
        self.act_models = QAction("Models", self)
        self.act_models.setToolTip("Find, download and load models")
        self.act_models.triggered.connect(self.show_models_page)
        self.act_settings = QAction("Settings", self)
        self.act_settings.setToolTip("Settings (Ctrl+,)")
        self.act_settings.triggered.connect(lambda: self.open_settings())
        tb.addAction(self.act_chat)
        tb.addAction(self.act_models)
        tb.addAction(self.act_settings)

        # centre: conversations | stacked(chat page, models page)
        self.conversations = ConversationList()
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
        self.chat.sig_regenerate.connect(self.regenerate)
        self.chat.sig_edit_resend.connect(self.edit_and_resend)
        v.addWidget(self.chat, 1)
        row = QHBoxLayout()
        row.setContentsMargins(12, 6, 12, 10)
        self.compose = ComposeEdit()
        self.compose.sig_submit.connect(self.send_or_stop_from_keyboard)
        row.addWidget(self.compose, 1)
        self.send_button = QPushButton("Send")
        self.send_button.setObjectName("sendButton")
        self.send_button.clicked.connect(self._on_send_button_clicked)
        row.addWidget(self.send_button, 0, Qt.AlignmentFlag.AlignBottom)
        v.addLayout(row)

        self.stack = QStackedWidget()
        self.stack.addWidget(chat_page)
        self.chat_page = chat_page
        split = QSplitter()
        split.addWidget(self.conversations)
        split.addWidget(self.stack)
        split.setStretchFactor(1, 1)
        split.setSizes([230, 800])
        self.setCentralWidget(split)

        # right: tool-call panel (hideable dock)
        self.tool_panel = ToolCallPanel()
        self.tool_dock = QDockWidget("Tool calls", self)
        self.tool_dock.setObjectName("toolDock")
        self.tool_dock.setWidget(self.tool_panel)
        self.addDockWidget(Qt.DockWidgetArea.RightDockWidgetArea, self.tool_dock)
        self.act_panel = self.tool_dock.toggleViewAction()
        self.act_panel.setText("Tool panel")
        self.act_panel.setShortcut(QKeySequence("Ctrl+T"))
        tb.addAction(self.act_panel)
        self.tool_dock.setVisible(bool(self.settings.window.panels.get("tools", False)))

        # status bar: TTFT, tokens/s, context used
        sb = self.statusBar()
        self.stat_ttft = QLabel("TTFT —")
        self.stat_tps = QLabel("— tok/s")
        self.stat_ctx = QLabel("context —")
        for w in (self.stat_ttft, self.stat_tps, self.stat_ctx):
            w.setObjectName("statLabel")
            sb.addPermanentWidget(w)
        self._update_send_button()

    def _build_shortcuts(self) -> None:
        QShortcut(QKeySequence("Esc"), self, activated=self.stop)
        QShortcut(QKeySequence("Ctrl+N"), self, activated=self.new_chat)
        QShortcut(QKeySequence("Ctrl+,"), self, activated=lambda: self.open_settings())

    # -- model picker ------------------------------------------------------------------------------
    def _startup_model(self) -> str | None:
        last = self.settings.model.last_model_path
        if last and Path(last).is_file():
            return last
        try:
            from app.engine.models.demo import demo_model_path

            demo = demo_model_path()
        except Exception:  # noqa: BLE001
            demo = None
        if demo is not None:
            self._add_to_library(demo)
            return str(demo)
        return None

    def _add_to_library(self, path: Path) -> None:
        """Record the demo model in the models library (in place, no copy); never fatal."""
        try:
            from app.engine.models.library import Library

            Library().import_in_place(path)
        except Exception as exc:  # noqa: BLE001 - the chat works without a library entry
            self.statusBar().showMessage(f"The demo model could not be added to the library: {exc}", 8000)

    def refresh_model_library(self) -> None:
        """Rescan the models library (models folder, added folders, imports) off the UI thread;
        the picker lists what it finds (``sig_library_refreshed``)."""
        if getattr(self, "_shut", False):
            return
        if self._library is None:
            try:
                from app.engine.models.library import Library

                self._library = Library()
            except Exception as exc:  # noqa: BLE001 - the picker still offers last/demo/open file
                self.statusBar().showMessage(f"The models library cannot be read: {exc}", 8000)
                return
        result = _ScanResult()
        self._scan_results.add(result)

        def done(models: Any) -> None:
            self._scan_results.discard(result)
            self._on_library_scanned(models)

        result.done.connect(done)
        self._scan_pool.start(_LibraryScan(self._library, result))

    def _on_library_scanned(self, models: Any) -> None:
        if isinstance(models, Exception):
            self.statusBar().showMessage(f"The models library could not be scanned: {models}", 8000)
        else:
            self.library_models = [m for m in models if getattr(m, "usable", True)]
            self._fill_model_picker()
        self.sig_library_refreshed.emit()

    def _known_models(self) -> list[tuple[str, str]]:
        """(label, path) of every model the picker offers: the library's, then the last used,
        the demo, the loaded and the loading one when they are not in it."""
        out: list[tuple[str, str]] = []
        seen: set[str] = set()

        def add(label: str, path: str) -> None:
            key = _path_key(path)
            if key not in seen:
                seen.add(key)
                out.append((label, path))

        for m in self.library_models:
            add(str(m.name), str(m.path))
        for p in self._extra_models():
            add(Path(p).stem, p)
        return out

    def _extra_models(self) -> list[str]:
        paths: list[str] = []
        if self.settings.model.last_model_path:
            paths.append(self.settings.model.last_model_path)
        try:
            from app.engine.models.demo import demo_model_path

            d = demo_model_path()
            if d is not None:
                paths.append(str(d))
        except Exception:  # noqa: BLE001
            pass
        for p in (self.model_info.path if self.model_info else None, self.loading_path):
            if p:
                paths.append(p)
        return paths

    def _fill_model_picker(self) -> None:
        self.model_picker.blockSignals(True)
        self.model_picker.clear()
        current = self.loading_path or (self.model_info.path if self.model_info else None)
        i = 0
        for label, p in self._known_models():
            if current and _path_key(p) == _path_key(current):
                i = self.model_picker.count()
                p = current  # the path as loaded
            self.model_picker.addItem(label, p)
            self.model_picker.setItemData(self.model_picker.count() - 1, p, Qt.ItemDataRole.ToolTipRole)
        if self.model_picker.count() == 0:
            self.model_picker.addItem("No model loaded", None)
        self.model_picker.addItem("Open a GGUF file…", OPEN_FILE)
        self.model_picker.setCurrentIndex(i)
        self.model_picker.blockSignals(False)

    def _on_model_picker_activated(self, index: int) -> None:
        data = self.model_picker.itemData(index)
        if data == OPEN_FILE:
            path, _ = QFileDialog.getOpenFileName(self, "Open a GGUF model", "", "GGUF models (*.gguf)")
            if path:
                self.load_model(path)
            else:
                self._fill_model_picker()
        elif data and (self.model_info is None or _path_key(data) != _path_key(self.model_info.path)):
            self.load_model(data)

    def load_model(self, path: str) -> None:
        """Load in the background; the picker shows progress, the window stays usable."""
        self.loading_path = str(path)
        self._fill_model_picker()
        self._progress_action.setVisible(True)
        self.load_progress.setRange(0, 0)
        self.load_label.setText(f"Loading {Path(path).name}…")
        self._update_send_button()
        self.worker.load(path, engine_config_for(self.settings, str(path)))

    def _on_worker_load_progress(self, fraction: float, what: str) -> None:
        if fraction < 0:
            self.load_progress.setRange(0, 0)
        else:
            self.load_progress.setRange(0, 100)
            self.load_progress.setValue(int(fraction * 100))
        self.load_label.setText(what)

    def _on_worker_loaded(self, info: ModelInfo) -> None:
        self.model_info = info
        self.loading_path = None
        self._progress_action.setVisible(False)
        self.load_label.setText("")
        if self.settings.model.last_model_path != info.path:
            self.settings.model.last_model_path = info.path
            self._save_settings_quietly()
        self._fill_model_picker()
        self._update_format_badge()
        self.stat_ctx.setText(f"context 0 / {info.n_ctx}")
        self._update_send_button()
        self.sig_model_ready.emit(info)

    def _update_format_badge(self) -> None:
        info = self.model_info
        if info is None:
            self.format_badge.setText("")
            return
        eff = engine_config_for(self.settings, info.path).tool_format
        if eff == "none":
            text, warn = "Tools off", False
        elif eff == "auto":
            if info.detected_format:
                text, warn = f"Tool format: {info.detected_label or info.detected_format} (auto)", False
            else:
                text, warn = "Tool format: none detected", True
        else:
            text, warn = f"Tool format: {eff} (set)", False
        self.format_badge.setText(text)
        self.format_badge.setProperty("warn", "true" if warn else "false")
        self.format_badge.style().unpolish(self.format_badge)
        self.format_badge.style().polish(self.format_badge)

    # -- pages -------------------------------------------------------------------------------------
    def models_page(self) -> QWidget:
        if self._models_page is None:
            try:
                from app.ui.models_page import ModelsPage

                page = ModelsPage()
                page.sig_load_requested.connect(self._on_models_page_load_requested)
                # a finished download, an import, a deletion or a new folder: the picker follows
                page.sig_library_done.connect(self.refresh_model_library)
            except Exception as exc:  # noqa: BLE001 - the page is built elsewhere; never break the window
                page = QLabel(f"The Models page could not be opened: {exc}")
                page.setAlignment(Qt.AlignmentFlag.AlignCenter)
                page.setWordWrap(True)
            page.setObjectName("modelsPage")
            self._models_page = page
            self.stack.addWidget(page)
        return self._models_page

    def show_models_page(self) -> None:
        self.stack.setCurrentWidget(self.models_page())

    def show_chat_page(self) -> None:
        self.stack.setCurrentWidget(self.chat_page)

    def _on_models_page_load_requested(self, path: str) -> None:
        self.show_chat_page()
        self.load_model(path)

    # -- conversations -----------------------------------------------------------------------------
    def refresh_conversations(self) -> None:
        q = self.conversations.search.text().strip()
        try:
            convs = self.history.search(q) if q else self.history.list_conversations()
        except Exception as exc:  # noqa: BLE001
            self.statusBar().showMessage(f"Could not read the history: {exc}", 8000)
            return
        self.conversations.current_id = self.conversation_id
        self.conversations.set_conversations(convs)

    def search_conversations(self, _query: str) -> None:
        self.refresh_conversations()

    def new_chat(self) -> None:
        if self.busy:
            self.stop()
        self.conversation_id = None
        self.chat.clear()
        self.tool_panel.clear()
        self.worker.open_conversation(None, [])
        self.conversations.select(None)
        self.show_chat_page()
        self.compose.setFocus()

    def rename_conversation(self, cid: int, title: str) -> None:
        try:
            self.history.rename_conversation(cid, title)
        except Exception as exc:  # noqa: BLE001
            self.statusBar().showMessage(f"Could not rename: {exc}", 8000)
        self.refresh_conversations()

    def delete_conversation(self, cid: int) -> None:
        if cid == self.conversation_id:
            self.new_chat()
        try:
            self.history.delete_conversation(cid)
        except Exception as exc:  # noqa: BLE001
            self.statusBar().showMessage(f"Could not delete: {exc}", 8000)
        self.refresh_conversations()

    def open_conversation(self, cid: int) -> None:
        if self.busy:
            self.stop()
        try:
            conv = self.history.load_conversation(cid)
        except Exception as exc:  # noqa: BLE001
            self.statusBar().showMessage(f"Could not open the conversation: {exc}", 8000)
            return
        self.conversation_id = cid
        self.conversations.select(cid)
        self.chat.clear()
        self.tool_panel.clear()
        current = None
        for m in conv.messages:
            if m.role == "user":
                self.chat.add_user(m.content)
                current = None
            elif m.role in ("assistant", "tool"):
                if current is None:
                    current = self.chat.begin_assistant()
                if m.role == "assistant":
                    for n in getattr(m, "notices", None) or []:  # the banners shown above it
                        self.chat.add_notice(n.get("code", ""), n.get("message", ""), n.get("setting"))
                    if m.reasoning:
                        current.append_reasoning(m.reasoning)
                    if m.content:
                        current.append_text(m.content)
                    for tc in m.tool_calls:
                        chip = current.add_chip(tc.call_id, tc.name)
                        self.tool_panel.add_call(tc.call_id, tc.name, tc.arguments, tc.raw)
                        if tc.result is not None or tc.error is not None:
                            self.tool_panel.finish_call(tc.call_id, tc.name, tc.arguments, tc.raw, tc.result,
                                                        tc.error, tc.duration_s, tc.approval)
                            chip.set_finished(tc.error is None, tc.approval)
                    current.flush()
                    current.set_status("done" if m.status == "complete" else m.status)
        dicts = [m.to_chat_dict() for m in conv.messages if m.role in ("user", "assistant", "tool", "system")]
        self.worker.open_conversation(cid, dicts)
        self.show_chat_page()

    def _ensure_conversation(self, first_text: str) -> int:
        if self.conversation_id is None:
            title = " ".join(first_text.split())[:48] or "New chat"
            snap = None
            with contextlib.suppress(Exception):
                snap = engine_config_for(self.settings, self.model_info.path if self.model_info else None).__dict__
            conv = self.history.create_conversation(
                title, model_path=self.model_info.path if self.model_info else None, settings=snap)
            self.conversation_id = conv.id
            self.refresh_conversations()
            self.conversations.select(conv.id)
        return self.conversation_id

    # -- sending -----------------------------------------------------------------------------------
    def send_or_stop_from_keyboard(self) -> None:
        if not self.busy:
            self.send()

    def _on_send_button_clicked(self) -> None:
        if self.busy:
            self.stop()
        else:
            self.send()

    def send(self, text: str | None = None) -> bool:
        """Send the compose box's text (or ``text``); False if nothing was sent."""
        if self.busy:
            return False
        text = (text if text is not None else self.compose.toPlainText()).strip()
        if not text:
            return False
        if self.model_info is None:
            self.statusBar().showMessage("No model is loaded yet: pick one in the model picker.", 8000)
            return False
        cid = self._ensure_conversation(text)
        self.compose.clear()
        self.chat.add_user(text)
        self.chat.begin_assistant()
        self._set_busy(True)
        self.worker.send(text, cid)
        return True

    def stop(self) -> None:
        if self.busy:
            self.worker.cancel()
            if self.approval_dialog is not None:
                self.approval_dialog.reject()

    def regenerate(self, user_index: int = -1) -> None:
        """Generate again the reply to the ``user_index``-th user message (-1 or the last: the last
        reply). An older reply is regenerated by resending its question: the later turns go."""
        if self.busy or self.model_info is None:
            return
        users = self.chat.user_messages()
        if 0 <= user_index < len(users) - 1:
            self.edit_and_resend(user_index, users[user_index].text)
            return
        last = self.chat.current_assistant()
        if last is None:
            return
        self.chat.truncate_from(last)
        self.chat.begin_assistant()
        self._set_busy(True)
        self.worker.regenerate()

    def edit_and_resend(self, user_index: int, text: str) -> None:
        if self.busy or self.model_info is None:
            return
        users = self.chat.user_messages()
        if user_index >= len(users):
            return
        self.chat.truncate_from(users[user_index])
        self.worker.truncate_before_user(user_index)
        self.send(text)

    def _set_busy(self, busy: bool) -> None:
        self.busy = busy
        self.chat.set_busy(busy)
        self._update_send_button()

    def _update_send_button(self) -> None:
        b = self.send_button
        if self.busy:
            b.setText("Stop")
            b.setToolTip("Stop the reply (Esc)")
            b.setProperty("mode", "stop")
        else:
            b.setText("Send")
            b.setToolTip("Send (Enter)")
            b.setProperty("mode", "send")
        b.setEnabled(self.busy or self.model_info is not None)
        b.style().unpolish(b)
        b.style().polish(b)

    # -- worker events -----------------------------------------------------------------------------
    def _on_worker_text(self, text: str) -> None:
        self.chat.append_text(text)

    def _on_worker_reasoning(self, text: str) -> None:
        self.chat.append_reasoning(text)

    def _on_worker_tool_call_started(self, ev: ToolCallStartedEvent) -> None:
        self.chat.add_tool_call(ev.call_id, ev.name)
        self.tool_panel.add_call(ev.call_id, ev.name, ev.arguments, ev.raw)

    def _on_worker_tool_call_finished(self, ev: ToolCallFinishedEvent) -> None:
        if self.chat.find_chip(ev.call_id) is None:
            self.chat.add_tool_call(ev.call_id, ev.name)
        self.chat.finish_tool_call(ev.call_id, ev.error is None, ev.approval)
        self.tool_panel.finish_call(ev.call_id, ev.name, ev.arguments, ev.raw, ev.result, ev.error,
                                    ev.duration_s, ev.approval)

    def _on_worker_notice(self, ev: NoticeEvent) -> None:
        info = self.model_info
        eff = engine_config_for(self.settings, info.path if info else None).tool_format
        if eff == "none" and ev.setting == "chat.tool_format":
            return  # the user chose no tools: nothing to tell
        self.chat.add_notice(ev.code, ev.message, ev.setting)

    def _on_worker_done(self, ev: DoneEvent) -> None:
        self.last_done = ev
        status = {"cancelled": "cancelled", "error": "error"}.get(ev.finish_reason, "done")
        self.chat.end_assistant(status)
        if ev.error and ev.finish_reason == "error":
            self.statusBar().showMessage(f"The reply failed: {ev.error}", 10000)
        if ev.ttft_s is not None:
            self.stat_ttft.setText(f"TTFT {ev.ttft_s * 1000:.0f} ms")
        if ev.tokens_per_s is not None:
            self.stat_tps.setText(f"{ev.tokens_per_s:.1f} tok/s")
        if self.model_info is not None:
            used = int(ev.prompt_tokens or 0) + int(ev.generated_tokens or 0)
            pct = 100.0 * used / max(1, self.model_info.n_ctx)
            self.stat_ctx.setText(f"context {used} / {self.model_info.n_ctx} ({pct:.0f}%)")
        if self.approval_dialog is not None:
            self.approval_dialog.reject()
        self._set_busy(False)
        self.sig_turn_done.emit(ev)

    def _on_worker_error(self, message: str) -> None:
        self.show_window_notice("error", message, None)

    def _on_worker_load_failed(self, path: str, message: str) -> None:
        """The worker kept the model it had: the picker, badge and Send show that one again."""
        if self.loading_path is not None and _path_key(self.loading_path) == _path_key(path):
            self.loading_path = None
            self._progress_action.setVisible(False)
            self.load_label.setText("")
            self._fill_model_picker()
            self._update_format_badge()
            self._update_send_button()
        self.show_window_notice("load_error", message, None)

    def _on_worker_conversation_saved(self, _cid: int) -> None:
        self.refresh_conversations()

    def _on_worker_approval_requested(self, request: Any) -> None:
        dlg = ApprovalDialog(request, self)
        self.approval_dialog = dlg

        def answered(_result: int) -> None:
            self.worker.answer_approval(dlg.call_id, dlg.decision)
            if dlg.decision == "always":
                self.settings.tools.approvals = {**self.settings.tools.approvals, dlg.tool_name: "allow"}
                self._save_settings_quietly()
            if self.approval_dialog is dlg:
                self.approval_dialog = None

        dlg.finished.connect(answered)
        dlg.open()

    # -- tool panel ---------------------------------------------------------------------------------
    def select_tool_call(self, call_id: str) -> None:
        self.tool_dock.setVisible(True)
        self.tool_panel.select_call(call_id)

    # -- notices ------------------------------------------------------------------------------------
    def show_window_notice(self, code: str, message: str, setting: str | None) -> NoticeBanner:
        b = NoticeBanner(code, message, setting)
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
            dlg = SettingsDialog(self.settings, detected_label=info.detected_label if info else None,
                                 model_path=info.path if info else None, model_name=info.name if info else None,
                                 parent=self)
            dlg.accepted.connect(lambda: self.apply_settings(dlg.settings))
            self.settings_dialog = dlg
        dlg.open_at(key or "chat.tool_format")
        return dlg

    def apply_settings(self, settings: Any) -> None:
        self.settings = settings
        self._save_settings_quietly()
        if self.model_info is not None:
            self.worker.configure(engine_config_for(settings, self.model_info.path))
        self._update_format_badge()
        self.sig_settings_saved.emit()

    def _save_settings_quietly(self) -> None:
        from app.storage.settings import save_settings

        try:
            save_settings(self.settings)
        except Exception as exc:  # noqa: BLE001 - SettingsSaveError says what failed
            self.show_window_notice("settings_save", str(exc), None)

    # -- quitting -----------------------------------------------------------------------------------
    def closeEvent(self, e: QCloseEvent) -> None:  # noqa: N802
        self.shutdown()
        super().closeEvent(e)

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        """Stop generation, join the worker thread, save the window state. Safe to call twice."""
        if getattr(self, "_shut", False):
            return True
        self._shut = True
        with contextlib.suppress(Exception):
            self.settings.window.panels = {**self.settings.window.panels, "tools": self.tool_dock.isVisible()}
            self._save_settings_quietly()
        if self.approval_dialog is not None:
            self.approval_dialog.reject()
        page_shutdown = getattr(self._models_page, "shutdown", None)
        if page_shutdown is not None:  # running downloads are paused, kept for next time
            with contextlib.suppress(Exception):
                page_shutdown()
        self._scan_pool.waitForDone(timeout_ms)
        return self.worker.shutdown(timeout_ms)
