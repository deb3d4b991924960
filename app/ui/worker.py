"""The engine worker: one long-lived thread that owns the model and the chat session.

The UI never touches llama.cpp. It calls the public methods of :class:`EngineWorker`
(any thread); each one emits a private signal that is queued into the worker thread.
The worker iterates ``ChatSession.send(...)`` and re-emits every engine event as a Qt
signal, which Qt queues back to the UI thread.

* Text and reasoning deltas are coalesced: flushed at most every ``FLUSH_S`` (30 ms),
  and whenever another kind of event comes, so order is kept.
* Cancel sets a ``threading.Event`` that the engine checks at every token.
* Tool approval: the dispatcher calls :meth:`_approve` on this thread; it emits
  ``sig_approval_requested`` and blocks until :meth:`answer_approval` (UI thread) or the
  timeout (-> deny), or a cancel / shutdown (-> deny).
* History: each turn's events go to the core's ``app.engine.recorder.TurnRecorder`` (the CLI's
  ``--save`` uses the same one): the user message at send, the partial reply every
  ``PARTIAL_SAVE_S`` (status "streaming" -> "interrupted" if the app dies), then the turn's final
  messages in one transaction. Notices (banners) are saved with the reply they belong to.
* MCP servers: the servers of ``config.mcp_servers_path`` (``mcp.json``) start on this thread
  when the first session is built (again when the path changes); their tools join the built-in
  ones in the session's registry, behind the same dispatcher and approval. A broken file or a
  failed server is a ``sig_window_notice`` banner. They stop when the thread stops.
* :meth:`shutdown` cancels, stops the thread's loop and joins it with a timeout.
"""

from __future__ import annotations

import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, Qt, QThread, Signal, Slot

from app.engine.events import (
    DoneEvent,
    NoticeEvent,
    ReasoningEvent,
    TextEvent,
    ToolCallFinishedEvent,
    ToolCallStartedEvent,
)
from app.engine.recorder import TurnRecorder

__all__ = ["EngineConfig", "EngineWorker", "ModelInfo"]

DEFAULT_APPROVAL_TIMEOUT_S = 300.0


@dataclass
class EngineConfig:
    """What a chat session is built with (from the effective settings for the loaded model)."""

    tool_format: str = "auto"
    system_prompt: str = ""
    sampling: dict[str, Any] = field(default_factory=dict)
    max_tokens: int = 1024
    n_ctx: int = 4096
    n_gpu_layers: int = 0
    n_threads: int | None = None
    workspace: str | None = None
    approvals: dict[str, str] = field(default_factory=dict)  # tool name -> "ask" | "allow"
    default_approval: str = "ask"
    approval_timeout_s: float = DEFAULT_APPROVAL_TIMEOUT_S
    mcp_servers_path: str | None = None  # mcp.json; its servers' tools join the built-in ones
    context_policy: str = "stop"  # app.engine.context.POLICIES: what a full context does


@dataclass
class ModelInfo:
    """What the model picker shows about the loaded model."""

    path: str
    name: str
    n_ctx: int
    detected_format: str | None  # family name, or None when auto finds none
    detected_label: str | None
    effective_format: str | None
    template_is_fallback: bool = False


def _format_label(name: str | None) -> str | None:
    if not name:
        return None
    try:
        from app.engine.formats import FORMATS

        fmt = FORMATS.get(name) if isinstance(FORMATS, dict) else None
        label = getattr(fmt, "label", None)
        return label or name
    except Exception:  # noqa: BLE001 - formats may still be landing; the name is a fine label
        return name


def _fmt_name(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return getattr(value, "name", None) or str(value)


class EngineWorker(QObject):
    """Owns the model and the ChatSession on its own QThread; talks to the UI with signals."""

    sig_text = Signal(str)
    sig_reasoning = Signal(str)
    sig_tool_call_started = Signal(object)  # ToolCallStartedEvent
    sig_tool_call_finished = Signal(object)  # ToolCallFinishedEvent
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
        self._thread = QThread()
        self._thread.setObjectName("callisto-engine")
        self.moveToThread(self._thread)
        q = Qt.ConnectionType.QueuedConnection
        self._req_load.connect(self._do_load, q)
        self._req_send.connect(self._do_send, q)
        self._req_regenerate.connect(self._do_regenerate, q)
        self._req_configure.connect(self._do_configure, q)
        self._req_open.connect(self._do_open, q)
        self._req_truncate_users.connect(self._do_truncate_users, q)
        self._req_stop_thread.connect(self._do_stop_thread, q)
        self._cancel = threading.Event()
        self._approval_lock = threading.Lock()
        self._approval_waits: dict[str, tuple[threading.Event, list[str]]] = {}
        self._busy = threading.Event()
        self._closing = False
        # owned by the worker thread:
        self.model: Any = None
        self.session: Any = None
        self.config = EngineConfig()
        self.conversation_id: int | None = None
        self.info: ModelInfo | None = None
        self.tokens_emitted = 0
        self.generation_thread_ident: int | None = None  # the thread the last turn ran on
        self._pending_messages: list[dict] = []
        self.mcp: Any = None  # app.tools.mcp.McpManager of config.mcp_servers_path
        self._mcp_path: str | None = None
        self._mcp_fingerprint: bytes | None = None  # digest of the mcp.json the servers were started from
        self._mcp_tried = False  # the servers of (_mcp_path, _mcp_fingerprint) were started (or failed to)
        self._thread.start()

    # -- public API (any thread) -------------------------------------------------------------
    @property
    def thread_handle(self) -> QThread:
        return self._thread

    def is_busy(self) -> bool:
        return self._busy.is_set()

    def load(self, path: str | Path, config: EngineConfig | None = None) -> None:
        self._req_load.emit(str(path), config)

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
        self._release_approvals("deny")

    def answer_approval(self, call_id: str, decision: str) -> None:
        """The UI's answer to ``sig_approval_requested``: allow_once, always or deny."""
        with self._approval_lock:
            waiter = self._approval_waits.get(call_id)
        if waiter is not None:
            waiter[1].append(decision)
            waiter[0].set()

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
        try:
            if self.model is not None and hasattr(self.model, "close"):
                self.model.close()
        except Exception:  # noqa: BLE001 - closing is best effort at exit
            pass
        self._close_mcp()
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
                path, n_ctx=self.config.n_ctx, n_gpu_layers=self.config.n_gpu_layers, n_threads=self.config.n_threads
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
        if old is not None and hasattr(old, "close"):
            try:
                old.close()
            except Exception:  # noqa: BLE001 - the old model is gone either way; the new one works
                traceback.print_exc()
        try:
            self._build_session(messages=messages)
        except Exception as exc:  # noqa: BLE001
            self.sig_error.emit(f"The model loaded but a chat session could not start: {exc}")
            return
        self.sig_load_progress.emit(1.0, "Loaded")
        self.info = self._model_info()
        self.sig_loaded.emit(self.info)
        self._emit_context()

    def _model_info(self) -> ModelInfo:
        m = self.model
        from app.engine.chat import detect_model_format

        effective = _fmt_name(self.session.effective_format) if self.session is not None else None
        detected = _fmt_name(self.session.detected_format if self.session is not None
                             else detect_model_format(m))
        return ModelInfo(
            path=str(getattr(m, "path", "")),
            name=str(getattr(m, "name", "")),
            n_ctx=int(getattr(m, "n_ctx", 0) or 0),
            detected_format=detected,
            detected_label=_format_label(detected),
            effective_format=effective,
            template_is_fallback=bool(getattr(m, "template_is_fallback", False)),
        )

    # -- MCP servers (started, called and stopped on this thread) -----------------------------
    def _close_mcp(self) -> None:
        mcp, self.mcp = self.mcp, None
        self._mcp_path = None
        self._mcp_fingerprint = None
        if mcp is not None:
            try:
                mcp.close()
            except Exception:  # noqa: BLE001 - stopping is best effort
                traceback.print_exc()

    @staticmethod
    def _fingerprint(path: str | None) -> bytes | None:
        """A digest of the file's bytes (None when there is no path or it cannot be read)."""
        if path is None:
            return None
        import hashlib

        try:
            return hashlib.sha256(Path(path).expanduser().read_bytes()).digest()
        except OSError:
            return None

    def _ensure_mcp(self) -> None:
        """Start the servers of ``config.mcp_servers_path``; restart them when the path or the file's
        contents changed since they were started (checked whenever settings are applied or a session is
        built). A failed server or a broken file becomes a window notice, never an exception."""
        path = (self.config.mcp_servers_path or "").strip() or None
        fingerprint = self._fingerprint(path)
        if path == self._mcp_path and fingerprint == self._mcp_fingerprint and (path is None or self._mcp_tried):
            return
        self._close_mcp()
        self._mcp_path, self._mcp_fingerprint = path, fingerprint
        self._mcp_tried = path is not None
        if path is None or self._closing:
            return
        setting = "tools.mcp_servers_path"
        try:
            from app.tools.mcp import McpManager

            manager = McpManager(path)
        except Exception as exc:  # noqa: BLE001 - McpConfigError names the file and the field
            self.sig_window_notice.emit("mcp_config", f"The MCP servers file cannot be used: {exc}", setting)
            return
        self.mcp = manager
        self.sig_load_progress.emit(-1.0, "Starting MCP servers…")
        for st in manager.start():
            if st.state == "failed":
                self.sig_window_notice.emit(
                    "mcp_server_failed", f"MCP server '{st.name}' failed and its tools are off: {st.error}", setting)

    def _build_session(self, messages: list[Any]) -> None:
        """A session from the config: the core's builder, with this worker's approval dialog.
        Problems that turned some tools off are told to the window."""
        from app.engine.session import build_session, build_tools

        self._ensure_mcp()
        cfg = self.config
        tools = build_tools(workspace=cfg.workspace, mcp=self.mcp, approval=self._approve,
                            approvals=cfg.approvals, default_approval=cfg.default_approval,
                            approval_timeout_s=cfg.approval_timeout_s)
        for problem in tools.problems:
            if problem.code == "workspace_unusable":
                self.sig_error.emit(problem.message)
            else:
                self.sig_window_notice.emit(problem.code, problem.message, problem.setting)
        self.session = build_session(self.model, tools=tools, tool_format=cfg.tool_format,
                                     system_prompt=cfg.system_prompt, sampling=self._sampling(cfg),
                                     max_tokens=cfg.max_tokens, messages=messages)

    @staticmethod
    def _sampling(cfg: EngineConfig) -> Any:
        """The user's sampler values; the engine fills the rest from the model's GGUF recommendations."""
        return dict(cfg.sampling) or None

    def _messages_from_dicts(self, dicts: list[dict]) -> list[Any]:
        from app.engine.chat import Message

        return [Message.from_dict(d) for d in dicts]

    @Slot(object)
    def _do_configure(self, config: EngineConfig) -> None:
        reload = (
            self.model is not None
            and (config.n_ctx, config.n_gpu_layers, config.n_threads)
            != (self.config.n_ctx, self.config.n_gpu_layers, self.config.n_threads)
        )
        self.config = config
        if self.model is None:
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
        except Exception as exc:  # noqa: BLE001
            self.sig_error.emit(f"Could not apply the settings: {exc}")

    @Slot(object, object)
    def _do_open(self, conversation_id: int | None, dicts: list[dict]) -> None:
        self.conversation_id = conversation_id
        if self.model is None:
            self._pending_messages = dicts
            return
        try:
            self._build_session(self._messages_from_dicts(dicts))
        except Exception as exc:  # noqa: BLE001
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
            if getattr(m, "role", None) == "user":
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
            except Exception as exc:  # noqa: BLE001
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
        if not self._make_room(text):
            return
        self._run_turn(lambda: self.session.send(text, cancel=self._cancel), user_text=text)

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
            except Exception as exc:  # noqa: BLE001
                self.sig_error.emit(f"Could not update the saved conversation: {exc}")
        self._run_turn(lambda: self.session.regenerate(cancel=self._cancel))

    def _make_room(self, text: str) -> bool:
        """Apply the context policy before ``text`` is sent; False (and a done event saying why) when
        the conversation cannot fit: nothing is sent or saved then."""
        from app.engine.context import fit_turn

        try:
            fit = fit_turn(self.session, text, self.config.context_policy)
        except Exception:  # noqa: BLE001 - a template that fails here fails in the turn too, with its error
            traceback.print_exc()
            return True
        if fit.dropped_turns:
            self.sig_notice.emit(NoticeEvent(
                code="context_trimmed",
                message=f"The conversation no longer fits the context: the model no longer sees the "
                        f"{fit.dropped_turns} oldest exchange(s)."))
        if fit.fits:
            return True
        u = fit.usage
        self._busy.clear()
        self.sig_context.emit(u)
        self.sig_done.emit(DoneEvent(
            finish_reason="error", prompt_tokens=u.prompt_tokens,
            error=(f"This conversation is full: the next prompt takes {u.prompt_tokens:,} tokens"
                   + (f" ({u.tool_tokens:,} of them tool descriptions)" if u.tool_tokens else "")
                   + f" and the model's context holds {u.n_ctx:,}, with {u.reserve:,} kept for the reply."),
            extra={"context_full": True, "n_ctx": u.n_ctx, "tool_tokens": u.tool_tokens}))
        return False

    def _emit_context(self) -> None:
        """Tell the window how much of the context the open conversation takes."""
        if self.session is None:
            return
        from app.engine.context import measure

        try:
            self.sig_context.emit(measure(self.session))
        except Exception:  # noqa: BLE001 - the meter is informative; a turn reports real errors itself
            traceback.print_exc()

    def _recorder(self) -> TurnRecorder | None:
        """The core's turn recorder for the open conversation (None without history)."""
        if self.history is None or self.conversation_id is None:
            return None
        model = str(self.model.path) if self.model is not None else None
        return TurnRecorder(self.history, self.conversation_id, model=model,
                            settings={"tool_format": self.config.tool_format, "max_tokens": self.config.max_tokens,
                                      "sampling": dict(self.config.sampling)},
                            on_error=self.sig_error.emit, partial_save_s=self.PARTIAL_SAVE_S)

    def _run_turn(self, start, user_text: str | None = None) -> None:
        self.generation_thread_ident = threading.get_ident()
        self.sig_busy.emit(True)
        recorder = self._recorder()
        if recorder is not None:
            if user_text is not None:
                recorder.user_message(user_text)
            recorder.begin()
        pending_kind: str | None = None
        pending: list[str] = []
        last_flush = time.monotonic()
        done: DoneEvent | None = None
        self.tokens_emitted = 0

        def flush() -> None:
            nonlocal pending_kind, pending, last_flush
            if pending:
                chunk = "".join(pending)
                (self.sig_text if pending_kind == "text" else self.sig_reasoning).emit(chunk)
            pending_kind, pending = None, []
            last_flush = time.monotonic()

        try:
            for ev in start():
                if isinstance(ev, TextEvent | ReasoningEvent):
                    kind = "text" if isinstance(ev, TextEvent) else "reasoning"
                    self.tokens_emitted += 1
                    if pending_kind not in (None, kind):
                        flush()
                    pending_kind = kind
                    pending.append(ev.text)
                    if time.monotonic() - last_flush >= self.FLUSH_S:
                        flush()
                    if recorder is not None:
                        recorder.observe(ev)
                    continue
                flush()
                if isinstance(ev, NoticeEvent) and self.config.tool_format == "none" \
                        and ev.setting == "chat.tool_format":
                    continue  # the user chose no tools: nothing to tell
                if recorder is not None:
                    recorder.observe(ev)
                if isinstance(ev, ToolCallStartedEvent):
                    self.sig_tool_call_started.emit(ev)
                elif isinstance(ev, ToolCallFinishedEvent):
                    self.sig_tool_call_finished.emit(ev)
                elif isinstance(ev, NoticeEvent):
                    self.sig_notice.emit(ev)
                elif isinstance(ev, DoneEvent):
                    done = ev
        except Exception as exc:  # noqa: BLE001 - an engine bug must not kill the worker thread
            flush()
            traceback.print_exc()
            done = DoneEvent(finish_reason="error", error=f"{type(exc).__name__}: {exc}")
        flush()
        if done is None:
            done = DoneEvent(finish_reason="cancelled" if self._cancel.is_set() else "stop")
        if recorder is not None and recorder.finish(done, self.session.messages):
            self.sig_conversation_saved.emit(recorder.conversation_id)
        self._busy.clear()
        self.sig_busy.emit(False)
        self.sig_done.emit(done)
        self._emit_context()

    # -- approval (called by the dispatcher on this thread) ------------------------------------
    def _approve(self, request: Any) -> str:
        # Remembered approvals are the dispatcher's policy (built from settings): it asks only
        # for calls that policy does not allow.
        if self._cancel.is_set() or self._closing:
            return "deny"
        ev = threading.Event()
        answer: list[str] = []
        call_id = str(getattr(request, "call_id", id(request)))
        with self._approval_lock:
            self._approval_waits[call_id] = (ev, answer)
        try:
            self.sig_approval_requested.emit(request)
            timeout = getattr(request, "timeout_s", None) or self.config.approval_timeout_s
            if not ev.wait(timeout) or not answer:
                return "deny"
            decision = answer[0]
            if decision not in ("allow_once", "always", "deny"):
                return "deny"
            return decision
        finally:
            with self._approval_lock:
                self._approval_waits.pop(call_id, None)

    def _release_approvals(self, decision: str) -> None:
        with self._approval_lock:
            waits = list(self._approval_waits.values())
        for ev, answer in waits:
            answer.append(decision)
            ev.set()


_LEAKED: list[EngineWorker] = []
