"""The engine worker: one long-lived thread that owns the model and the chat session.

The UI never touches llama.cpp. It calls the public methods of :class:`EngineWorker`
(any thread); each one emits a private signal that is queued into the worker thread.
The worker iterates ``ChatSession.send(...)`` and re-emits every engine event as a Qt
signal, which Qt queues back to the UI thread. Its parts, each in its own module:

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

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from app.engine.events import DoneEvent
from app.engine.recorder import TurnRecorder
from app.ui.approval_bridge import ApprovalBridge
from app.ui.engine_types import DEFAULT_APPROVAL_TIMEOUT_S, EngineConfig, ModelInfo, format_label
from app.ui.mcp_host import McpHost
from app.ui.turn_stream import TurnSinks, stream_turn

if TYPE_CHECKING:
    from app.engine.chat import ChatSession
    from app.engine.llm import LoadedModel
    from app.tools.mcp import McpManager
    from app.tools.types import ApprovalRequest

log = logging.getLogger(__name__)

__all__ = ["EngineConfig", "EngineWorker", "ModelInfo"]


class EngineWorker(QObject):
    """Owns the model and the ChatSession on its own QThread; talks to the UI with signals."""

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

    # requests, queued into the worker thread
    _req_load = Signal(str, object)
    _req_load_remote = Signal(object, str, object)
    _req_send = Signal(str, object)
    _req_regenerate = Signal(object)
    _req_configure = Signal(object)
    _req_open = Signal(object, object)
    _req_truncate_users = Signal(int)
    _req_stop_thread = Signal()

    FLUSH_S = 0.03
    PARTIAL_SAVE_S = 1.0

    def __init__(self, history: Any = None) -> None:
        super().__init__()
        self.history = history
        self.tool_choice: Any = "auto"  # the next send's tool_choice (the window's control sets it)
        self._thread = QThread()
        self._thread.setObjectName("callisto-engine")
        self.moveToThread(self._thread)
        q = Qt.ConnectionType.QueuedConnection
        self._req_load.connect(self._do_load, q)
        self._req_load_remote.connect(self._do_load_remote, q)
        self._req_send.connect(self._do_send, q)
        self._req_regenerate.connect(self._do_regenerate, q)
        self._req_configure.connect(self._do_configure, q)
        self._req_open.connect(self._do_open, q)
        self._req_truncate_users.connect(self._do_truncate_users, q)
        self._req_stop_thread.connect(self._do_stop_thread, q)
        self._cancel = threading.Event()
        self._busy = threading.Event()
        self._closing = False
        self.approvals = ApprovalBridge(self.sig_approval_requested.emit, DEFAULT_APPROVAL_TIMEOUT_S)
        # owned by the worker thread:
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
        self._req_load.emit(str(path), config)

    def load_remote(self, entry: Any, model: str, config: EngineConfig | None = None) -> None:
        """Chat with ``model`` of the remote provider ``entry`` (a ``settings.remote`` entry): its
        key is read from the keychain on the worker thread; the local model is closed once it works."""
        self._req_load_remote.emit(entry, model, config)

    def configure(self, config: EngineConfig) -> None:
        """New settings: the session is rebuilt (its messages kept) before the next turn."""
        self._req_configure.emit(config)

    def open_conversation(self, conversation_id: int | None, messages: list[dict] | None = None) -> None:
        """Switch to a conversation (``None``: a new, unsaved one) with its earlier messages."""
        self._req_open.emit(conversation_id, list(messages or []))

    def send(self, text: str, conversation_id: int | None = None) -> None:
        self._cancel.clear()
        self._busy.set()
        self._req_send.emit(text, conversation_id)

    def regenerate(self) -> None:
        self._cancel.clear()
        self._busy.set()
        self._req_regenerate.emit(None)

    def truncate_before_user(self, user_index: int) -> None:
        """Drop the ``user_index``-th user message and all after it (edit-and-resend)."""
        self._req_truncate_users.emit(user_index)

    def cancel(self) -> None:
        """Stop the current generation at the next token; a pending approval becomes deny."""
        self._cancel.set()
        self.approvals.release("deny")

    def answer_approval(self, call_id: str, decision: str) -> None:
        """The UI's answer to ``sig_approval_requested``: allow_once, always or deny."""
        self.approvals.answer(call_id, decision)

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        """Cancel, close the model and join the thread; True if it ended within the timeout."""
        if self._closing:
            return not self._thread.isRunning()
        self._closing = True
        self.cancel()
        self._req_stop_thread.emit()
        ok = self._thread.wait(timeout_ms)
        if not ok:  # still loading a huge model: keep the objects alive rather than crash
            _LEAKED.append(self)
        return bool(ok)

    # -- worker thread ------------------------------------------------------------------------
    @Slot()
    def _do_stop_thread(self) -> None:
        if self.model is not None:
            try:
                self.model.close()
            except Exception:  # noqa: BLE001 - closing is best effort at exit; the process ends anyway
                log.exception("closing the model failed")
        self.mcp_host.close()
        self.model = None
        self.session = None
        self._thread.quit()

    @Slot(str, object)
    def _do_load(self, path: str, config: EngineConfig | None) -> None:
        if self._closing:
            return
        if config is not None:
            self.config = config
        self.sig_load_progress.emit(0.05, f"Reading {Path(path).name}…")
        # The current model stays loaded (and usable) until the new one has loaded: a failed load
        # leaves the old model and its session as they were.
        try:
            from app.engine.llm import load_model

            self.sig_load_progress.emit(-1.0, f"Loading {Path(path).name}…")
            model = load_model(
                path,
                n_ctx=self.config.n_ctx,
                n_gpu_layers=self.config.n_gpu_layers,
                n_threads=self.config.n_threads,
            )
        except Exception as exc:  # noqa: BLE001 - ModelLoadError and anything llama.cpp raises
            self.sig_load_progress.emit(0.0, "")
            self.sig_load_failed.emit(path, f"Could not load {Path(path).name}: {exc}")
            return
        if self.session is not None:
            messages = list(self.session.messages)  # the open conversation goes on with the new model
        else:
            pending, self._pending_messages = self._pending_messages, []
            messages = self._messages_from_dicts(pending) if pending else []
        old, self.model, self.session = self.model, model, None
        self.remote = None
        if old is not None:
            try:
                old.close()
            except Exception:  # noqa: BLE001 - the old model is gone either way; the new one works
                log.exception("closing the previous model failed")
        try:
            self._build_session(messages=messages)
        except Exception as exc:  # noqa: BLE001 - a template or tool problem: said in the window, the model stays
            self.sig_error.emit(f"The model loaded but a chat session could not start: {exc}")
            return
        self.sig_load_progress.emit(1.0, "Loaded")
        self.info = self._model_info()
        self.sig_loaded.emit(self.info)
        self._emit_context()

    @Slot(object, str, object)
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
        if old is not None:
            try:
                old.close()
            except Exception:  # noqa: BLE001 - the old model is gone either way; the remote one works
                log.exception("closing the previous model failed")
        self.sig_load_progress.emit(1.0, "Connected")
        self.info = self._model_info()
        self.sig_loaded.emit(self.info)

    def _model_info(self) -> ModelInfo:
        if self.remote is not None:
            from app.ui.remote_models import remote_key

            entry, name, _provider = self.remote
            session = self.session
            return ModelInfo(
                path=remote_key(entry.name, name),
                name=name,
                n_ctx=0,
                detected_format=None,
                detected_label=None,
                effective_format=None,
                remote=entry.name,
                remote_mode=entry.mode,
                tools=tuple(t["function"]["name"] for t in (session.tools or [])) if session else (),
            )
        m = self.model
        assert m is not None
        from app.engine.chat import detect_model_format

        session = self.session
        detected = session.detected_format if session is not None else detect_model_format(m)
        return ModelInfo(
            path=str(m.path),
            name=str(m.name),
            n_ctx=int(m.n_ctx),
            detected_format=detected,
            detected_label=format_label(detected),
            effective_format=session.effective_format if session is not None else None,
            template_is_fallback=bool(m.template_is_fallback),
            tools=tuple(t["function"]["name"] for t in (session.tools or [])) if session is not None else (),
        )

    def _build_session(self, messages: list[Any]) -> None:
        """A session from the config: the core's builder, with this worker's approval dialog.
        Problems that turned some tools off are told to the window."""
        from app.engine.session import build_session, build_tools

        cfg = self.config
        self.mcp_host.ensure(cfg.mcp_servers_path, closing=self._closing)
        tools = build_tools(
            workspace=cfg.workspace,
            mcp=self.mcp,
            approval=self._approve,
            approvals=cfg.approvals,
            default_approval=cfg.default_approval,
            approval_timeout_s=cfg.approval_timeout_s,
        )
        for problem in tools.problems:
            if problem.code == "workspace_unusable":
                self.sig_error.emit(problem.message)
            else:
                self.sig_window_notice.emit(problem.code, problem.message, problem.setting)
        if self.remote is not None:
            from app.engine.remote import RemoteChatSession

            entry, name, provider = self.remote
            self.session = RemoteChatSession(  # type: ignore[assignment]
                provider,
                name,
                template=entry.template or None,
                tool_format="auto" if cfg.tool_format == "none" else cfg.tool_format,
                registry=None if cfg.tool_format == "none" else tools.registry,
                dispatcher=None if cfg.tool_format == "none" else tools.dispatcher,
                system_prompt=cfg.system_prompt or None,
                sampling=self._sampling(cfg),
                max_tokens=cfg.max_tokens,
                messages=messages,
            )
            return
        self.session = build_session(
            self.model,
            tools=tools,
            tool_format=cfg.tool_format,
            system_prompt=cfg.system_prompt,
            sampling=self._sampling(cfg),
            max_tokens=cfg.max_tokens,
            messages=messages,
        )

    @staticmethod
    def _sampling(cfg: EngineConfig) -> Any:
        """The user's sampler values; the engine fills the rest from the model's GGUF recommendations."""
        return dict(cfg.sampling) or None

    def _messages_from_dicts(self, dicts: list[dict]) -> list[Any]:
        from app.engine.chat import Message

        return [Message.from_dict(d) for d in dicts]

    @Slot(object)
    def _do_configure(self, config: EngineConfig) -> None:
        reload = self.model is not None and (config.n_ctx, config.n_gpu_layers, config.n_threads) != (
            self.config.n_ctx,
            self.config.n_gpu_layers,
            self.config.n_threads,
        )
        self.config = config
        if self.model is None and self.remote is None:
            return
        if reload:
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

    @Slot(object, object)
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

    @Slot(int)
    def _do_truncate_users(self, user_index: int) -> None:
        if self.session is None:
            return
        msgs = list(self.session.messages)
        seen = -1
        for i, m in enumerate(msgs):
            if m.role == "user":
                seen += 1
                if seen == user_index:
                    self.session.messages[:] = msgs[:i]
                    break
        if self.history is not None and self.conversation_id is not None:
            try:
                conv = self.history.load_conversation(self.conversation_id)
                users = [m for m in conv.messages if m.role == "user"]
                if user_index < len(users):
                    self.history.truncate_after(self.conversation_id, users[user_index].position - 1)
            except Exception as exc:  # noqa: BLE001 - HistoryError or sqlite: the chat goes on, the window says so
                self.sig_error.emit(f"Could not update the saved conversation: {exc}")

    @Slot(str, object)
    def _do_send(self, text: str, conversation_id: int | None) -> None:
        if conversation_id is not None:
            self.conversation_id = conversation_id
        if self.session is None:
            self._busy.clear()
            self.sig_error.emit("No model is loaded: pick one in the model picker or on the Models page.")
            self.sig_done.emit(DoneEvent(finish_reason="error", error="no model loaded"))
            return
        if self.remote is None and not self._make_room(text):  # a remote engine keeps its own context
            return
        choice = self.tool_choice  # set by the window's tool-choice control
        self._run_turn(
            lambda: self.session.send(text, cancel=self._cancel, tool_choice=choice), user_text=text
        )

    @Slot(object)
    def _do_regenerate(self, _unused: object) -> None:
        if self.session is None:
            self._busy.clear()
            self.sig_done.emit(DoneEvent(finish_reason="error", error="no model loaded"))
            return
        # the reply being replaced goes from the saved conversation too
        if self.history is not None and self.conversation_id is not None:
            try:
                conv = self.history.load_conversation(self.conversation_id)
                users = [m for m in conv.messages if m.role == "user"]
                if users:
                    self.history.truncate_after(self.conversation_id, users[-1].position)
            except Exception as exc:  # noqa: BLE001 - HistoryError or sqlite: the chat goes on, the window says so
                self.sig_error.emit(f"Could not update the saved conversation: {exc}")
        self._run_turn(lambda: self.session.regenerate(cancel=self._cancel))

    def _make_room(self, text: str) -> bool:
        """Apply the context policy before ``text`` is sent; False (and a done event saying why) when
        the conversation cannot fit: nothing is sent or saved then."""
        from app.engine.context import fit_turn, full_context_done, trimmed_notice

        try:
            fit = fit_turn(self.session, text, self.config.context_policy)
        except Exception:  # noqa: BLE001 - a template that fails here fails in the turn too, with its error
            log.exception("measuring the context failed")
            return True
        if (notice := trimmed_notice(fit)) is not None:
            self.sig_notice.emit(notice)
        if fit.fits:
            return True
        self._busy.clear()
        self.sig_context.emit(fit.usage)
        self.sig_done.emit(full_context_done(fit.usage))
        return False

    def _emit_context(self) -> None:
        """Tell the window how much of the context the open conversation takes."""
        if self.session is None or self.remote is not None:  # a remote engine's tokenizer is not here
            return
        from app.engine.context import measure

        try:
            self.sig_context.emit(measure(self.session))
        except Exception:  # noqa: BLE001 - the meter is informative; a turn reports real errors itself
            log.exception("measuring the context failed")

    def _recorder(self) -> TurnRecorder | None:
        """The core's turn recorder for the open conversation (None without history)."""
        if self.history is None or self.conversation_id is None:
            return None
        model = str(self.model.path) if self.model is not None else None
        if self.remote is not None:
            model = f"{self.remote[0].name}: {self.remote[1]}"  # the provider and its model
        return TurnRecorder(
            self.history,
            self.conversation_id,
            model=model,
            settings={
                "tool_format": self.config.tool_format,
                "max_tokens": self.config.max_tokens,
                "sampling": dict(self.config.sampling),
            },
            on_error=self.sig_error.emit,
            partial_save_s=self.PARTIAL_SAVE_S,
        )

    def _run_turn(self, start, user_text: str | None = None) -> None:
        assert self.session is not None
        self.generation_thread_ident = threading.get_ident()
        self.sig_busy.emit(True)
        recorder = self._recorder()
        if recorder is not None:
            if user_text is not None:
                recorder.user_message(user_text)
            recorder.begin()
        sinks = TurnSinks(
            text=self.sig_text.emit,
            reasoning=self.sig_reasoning.emit,
            tool_started=self.sig_tool_call_started.emit,
            tool_finished=self.sig_tool_call_finished.emit,
            notice=self.sig_notice.emit,
            incomplete=self.sig_tool_call_incomplete.emit,
        )
        done, self.tokens_emitted = stream_turn(
            start,
            sinks,
            recorder,
            flush_s=self.FLUSH_S,
            tools_off=self.config.tool_format == "none",
            cancelled=self._cancel.is_set,
        )
        if recorder is not None and recorder.finish(done, self.session.messages):
            self.sig_conversation_saved.emit(recorder.conversation_id)
        self._emit_context()  # before Done: a window told the turn is over already has its meter
        self._busy.clear()
        self.sig_busy.emit(False)
        self.sig_done.emit(done)

    # -- approval (called by the dispatcher on this thread) ------------------------------------
    def _approve(self, request: ApprovalRequest) -> str:
        return self.approvals.ask(request, refuse=self._cancel.is_set() or self._closing)


_LEAKED: list[EngineWorker] = []
