"""The engine worker: the window's chat session on the shared engine.

The UI never touches llama.cpp. It calls the public methods of :class:`EngineWorker`
(any thread); each one becomes a job on the window's :class:`app.engine.host.EngineHost`, whose
loop runs on the worker's QThread and which the in-window server and the Check page share (one
engine, one queue, one set of loaded models). The worker iterates ``ChatSession.send(...)`` and
re-emits every engine event as a Qt signal, which Qt queues back to the UI thread. Its parts,
each in its own module:

* :mod:`app.ui.engine_jobs`     requests as host jobs; following a model another job loaded
* :mod:`app.ui.worker_session`  building the session, the loaded model's info, the context meter
* :mod:`app.ui.worker_turns`    sending, regenerating and recording turns

* :mod:`app.ui.turn_stream`     one turn's events to the signals, text and reasoning coalesced
  every ``FLUSH_S`` (30 ms); each event also goes to the core's turn recorder (history)
* :mod:`app.ui.approval_bridge` the dispatcher asks on this thread; the window answers
  (``sig_approval_requested`` / :meth:`answer_approval`), a timeout, cancel or shutdown denies
* :mod:`app.ui.mcp_host`        the servers of ``config.mcp_servers_path`` (``mcp.json``), started
  here when a session is built and restarted when the file changes; problems are window notices
* :mod:`app.engine.context`     the context policy, applied before a message is sent

Loading keeps the current model until the new one has loaded (a failed load changes nothing).
Cancel sets a ``threading.Event`` that the engine checks at every token. :meth:`shutdown`
cancels, stops the thread's loop and joins it with a timeout.
"""

from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QObject, QThread, Signal

from app.engine.host import EngineHost
from app.ui.approval_bridge import ApprovalBridge
from app.ui.engine_jobs import HostGlue, HostThread
from app.ui.engine_types import DEFAULT_APPROVAL_TIMEOUT_S, EngineConfig, ModelInfo
from app.ui.mcp_host import McpHost
from app.ui.worker_session import SessionPart
from app.ui.worker_turns import TurnPart

if TYPE_CHECKING:
    from app.engine.chat import ChatSession
    from app.engine.llm import LoadedModel
    from app.tools.mcp import McpManager

log = logging.getLogger(__name__)

__all__ = ["EngineConfig", "EngineWorker", "ModelInfo"]


class EngineWorker(QObject, HostGlue, SessionPart, TurnPart):
    """Owns the window's ChatSession and the engine host's thread; talks to the UI with signals."""

    sig_text = Signal(str)
    sig_reasoning = Signal(str)
    sig_tool_call_started = Signal(object)  # ToolCallStartedEvent
    sig_tool_call_finished = Signal(object)  # ToolCallFinishedEvent
    sig_tool_call_incomplete = Signal(object)  # ToolCallIncomplete: cut off or undeclared, not run
    sig_notice = Signal(object)  # NoticeEvent
    sig_done = Signal(object)  # DoneEvent
    sig_load_progress = Signal(float, str)  # fraction (<0: unknown), what is happening
    sig_loaded = Signal(object)  # ModelInfo
    sig_error = Signal(str)
    sig_load_failed = Signal(str, str)  # path, message: the model loaded before (if any) is still loaded
    sig_approval_requested = Signal(object)  # app.tools.ApprovalRequest
    sig_busy = Signal(bool)
    sig_conversation_saved = Signal(int)  # conversation id whose messages changed
    sig_window_notice = Signal(str, str, object)  # code, message, setting (or None): a window banner
    sig_context = Signal(object)  # app.engine.context.ContextUsage of the open conversation

    def __init__(self, history: Any = None, *, max_loaded: int = 1, queue_size: int = 16) -> None:
        super().__init__()
        self.history = history
        self.tool_choice: Any = "auto"  # the next send's tool_choice (the window's control sets it)
        #: the one engine of the window: its chat, the in-window server and the Check page share it
        self.host = EngineHost(max_loaded=max_loaded, queue_size=queue_size)
        self.host.add_listener(self._on_model_change)
        self._thread = HostThread(self.host)
        self._cancel = threading.Event()
        self._busy = threading.Event()
        self._closing = False
        self.approvals = ApprovalBridge(self.sig_approval_requested.emit, DEFAULT_APPROVAL_TIMEOUT_S)
        # used on the engine thread:
        self.model: LoadedModel | None = None
        self.remote: tuple[Any, str, Any] | None = None  # (RemoteProviderSettings, model, Provider)
        self.session: ChatSession | None = None
        self.config = EngineConfig()
        self.conversation_id: int | None = None
        self.info: ModelInfo | None = None
        self.tokens_emitted = 0
        self.generation_thread_ident: int | None = None  # the thread the last turn ran on
        self._pending_messages: list[dict] = []
        self.mcp_host = McpHost(self.sig_window_notice.emit, self.sig_load_progress.emit)
        self._thread.start()

    @property
    def mcp(self) -> McpManager | None:
        """The running MCP servers of ``config.mcp_servers_path`` (None when there are none)."""
        return self.mcp_host.manager

    # -- public API (any thread) -------------------------------------------------------------
    @property
    def thread_handle(self) -> QThread:
        return self._thread

    def is_busy(self) -> bool:
        return self._busy.is_set()

    def load(self, path: str | Path, config: EngineConfig | None = None) -> None:
        self._submit(lambda: self._do_load(str(path), config))

    def load_remote(self, entry: Any, model: str, config: EngineConfig | None = None) -> None:
        """Chat with ``model`` of the remote provider ``entry`` (a ``settings.remote`` entry): its
        key is read from the keychain on the worker thread; the local model is closed once it works."""
        self._submit(lambda: self._do_load_remote(entry, model, config))

    def configure(self, config: EngineConfig) -> None:
        """New settings: the session is rebuilt (its messages kept) before the next turn."""
        self._submit(lambda: self._do_configure(config))

    def open_conversation(self, conversation_id: int | None, messages: list[dict] | None = None) -> None:
        """Switch to a conversation (``None``: a new, unsaved one) with its earlier messages."""
        dicts = list(messages or [])
        self._submit(lambda: self._do_open(conversation_id, dicts))

    def send(self, text: str, conversation_id: int | None = None) -> None:
        self._cancel.clear()
        self._busy.set()
        self._submit(lambda: self._do_send(text, conversation_id), uses_model=True)

    def regenerate(self) -> None:
        self._cancel.clear()
        self._busy.set()
        self._submit(self._do_regenerate, uses_model=True)

    def truncate_before_user(self, user_index: int) -> None:
        """Drop the ``user_index``-th user message and all after it (edit-and-resend)."""
        self._submit(lambda: self._do_truncate_users(user_index))

    def cancel(self) -> None:
        """Stop the current generation at the next token; a pending approval becomes deny."""
        self._cancel.set()
        self.approvals.release("deny")

    def answer_approval(self, call_id: str, decision: str) -> None:
        """The UI's answer to ``sig_approval_requested``: allow_once, always or deny."""
        self.approvals.answer(call_id, decision)

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        """Cancel, close the models and join the thread; True if it ended within the timeout."""
        if self._closing:
            return not self._thread.isRunning()
        self._closing = True
        self.cancel()
        self.host.stop()  # waiting jobs are dropped; the loop closes the models after the running one
        ok = self._thread.wait(timeout_ms)
        if not ok:  # still loading a huge model: keep the objects alive rather than crash
            _LEAKED.append(self)
            return False
        self.mcp_host.close()
        self.model = None
        self.session = None
        return True

    # -- engine thread ------------------------------------------------------------------------
    def _load_settings(self) -> Any:
        from app.engine.llm import LoadSettings

        cfg = self.config
        return LoadSettings(n_ctx=cfg.n_ctx, n_gpu_layers=cfg.n_gpu_layers, n_threads=cfg.n_threads)

    def _do_load(self, path: str, config: EngineConfig | None) -> None:
        if self._closing:
            return
        if config is not None:
            self.config = config
        self.sig_load_progress.emit(0.05, f"Reading {Path(path).name}…")
        # The current model stays loaded (and usable) until the new one has loaded: a failed load
        # leaves the old model and its session as they were.
        try:
            self.sig_load_progress.emit(-1.0, f"Loading {Path(path).name}…")
            settings = self._load_settings()
            self.host.settings = settings  # what the server and the check load models with
            model = self.host.ensure(path, settings=settings, exact=True, owner="window")
        except Exception as exc:  # noqa: BLE001 - ModelLoadError and anything llama.cpp raises
            self.sig_load_progress.emit(0.0, "")
            self.sig_load_failed.emit(path, f"Could not load {Path(path).name}: {exc}")
            return
        if self.session is not None:
            messages = list(self.session.messages)  # the open conversation goes on with the new model
        else:
            pending, self._pending_messages = self._pending_messages, []
            messages = self._messages_from_dicts(pending) if pending else []
        self.model, self.session = model, None
        self.remote = None
        try:
            self._build_session(messages=messages)
        except Exception as exc:  # noqa: BLE001 - a template or tool problem: said in the window, the model stays
            self.sig_error.emit(f"The model loaded but a chat session could not start: {exc}")
            return
        self.sig_load_progress.emit(1.0, "Loaded")
        self.info = self._model_info()
        self.sig_loaded.emit(self.info)
        self._emit_context()

    def _do_load_remote(self, entry: Any, model: str, config: EngineConfig | None) -> None:
        from app.ui.remote_models import remote_key

        if self._closing:
            return
        key = remote_key(entry.name, model)
        if config is not None:
            self.config = config
        self.sig_load_progress.emit(-1.0, f"Connecting to {entry.name}…")
        if self.session is not None:
            messages = list(self.session.messages)
        else:
            pending, self._pending_messages = self._pending_messages, []
            messages = self._messages_from_dicts(pending) if pending else []
        previous, previous_session = self.remote, self.session
        try:
            from app.engine.remote.keys import provider_from_settings

            self.remote = (entry, model, provider_from_settings(entry))
            self._build_session(messages=messages)
        except Exception as exc:  # noqa: BLE001 - a keychain, URL or template problem: the old model stays
            self.remote, self.session = previous, previous_session
            self.sig_load_progress.emit(0.0, "")
            self.sig_load_failed.emit(key, f"Could not use {model} on {entry.name}: {exc}")
            return
        old, self.model = self.model, None
        if old is not None:  # the window's local model is closed (the server loads it again if asked)
            self.host.unload(old.path)
        self.sig_load_progress.emit(1.0, "Connected")
        self.info = self._model_info()
        self.sig_loaded.emit(self.info)

    def _do_configure(self, config: EngineConfig) -> None:
        reload = self.model is not None and (config.n_ctx, config.n_gpu_layers, config.n_threads) != (
            self.config.n_ctx,
            self.config.n_gpu_layers,
            self.config.n_threads,
        )
        self.config = config
        if self.model is None and self.remote is None:
            return
        if reload and self.model is not None:
            messages = list(self.session.messages) if self.session is not None else []
            self._do_load(str(self.model.path), config)
            if self.session is not None and messages:
                self._build_session(messages)
            return
        try:
            messages = list(self.session.messages) if self.session is not None else []
            self._build_session(messages)
            self.info = self._model_info()
            self.sig_loaded.emit(self.info)
            self._emit_context()
        except Exception as exc:  # noqa: BLE001 - a template or tool problem: said in the window
            self.sig_error.emit(f"Could not apply the settings: {exc}")

    def _do_open(self, conversation_id: int | None, dicts: list[dict]) -> None:
        self.conversation_id = conversation_id
        if self.model is None and self.remote is None:
            self._pending_messages = dicts
            return
        try:
            self._build_session(self._messages_from_dicts(dicts))
        except Exception as exc:  # noqa: BLE001 - a stored message the session refuses: said in the window
            self.sig_error.emit(f"Could not open the conversation: {exc}")
            return
        self._emit_context()


_LEAKED: list[EngineWorker] = []
