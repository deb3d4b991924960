"""The worker's turn running (on the engine thread): the context policy before a message is sent,
one turn's events to the window's signals and to the core's turn recorder, and the saved
conversation kept in step when a reply is regenerated or a message edited."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from app.engine.events import DoneEvent
from app.engine.recorder import TurnRecorder
from app.ui.turn_stream import TurnSinks, stream_turn

if TYPE_CHECKING:
    from app.engine.chat import ChatSession
    from app.engine.llm import LoadedModel
    from app.tools.types import ApprovalRequest
    from app.ui.approval_bridge import ApprovalBridge
    from app.ui.engine_types import EngineConfig

__all__ = ["TurnPart"]

log = logging.getLogger(__name__)


class TurnPart:
    """Part of :class:`app.ui.worker.EngineWorker`: sends, regenerates and records turns."""

    FLUSH_S = 0.03
    PARTIAL_SAVE_S = 1.0

    history: Any
    model: LoadedModel | None
    remote: tuple[Any, str, Any] | None
    session: ChatSession | None
    config: EngineConfig
    conversation_id: int | None
    tool_choice: Any
    tokens_emitted: int
    generation_thread_ident: int | None
    approvals: ApprovalBridge
    _cancel: threading.Event
    _busy: threading.Event
    _closing: bool
    _emit_context: Callable[[], None]  # SessionPart's
    _do_load: Callable[[str, EngineConfig | None], None]  # the worker's
    sig_text: Any
    sig_reasoning: Any
    sig_tool_call_started: Any
    sig_tool_call_finished: Any
    sig_tool_call_incomplete: Any
    sig_notice: Any
    sig_done: Any
    sig_error: Any
    sig_busy: Any
    sig_context: Any
    sig_conversation_saved: Any

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

    def _revive(self) -> None:
        """A model whose engine process died gets a fresh one before the next turn (the
        conversation goes on: the session is rebuilt with its messages)."""
        model = self.model
        if self.remote is None and model is not None and model.crash is not None:
            self._do_load(str(model.path), None)

    def _do_send(self, text: str, conversation_id: int | None) -> None:
        if conversation_id is not None:
            self.conversation_id = conversation_id
        self._revive()
        session = self.session
        if session is None:
            self._busy.clear()
            self.sig_error.emit("No model is loaded: pick one in the model picker or on the Models page.")
            self.sig_done.emit(DoneEvent(finish_reason="error", error="no model loaded"))
            return
        if self.remote is None and not self._make_room(text):  # a remote engine keeps its own context
            return
        choice = self.tool_choice  # set by the window's tool-choice control
        self._run_turn(lambda: session.send(text, cancel=self._cancel, tool_choice=choice), user_text=text)

    def _do_regenerate(self) -> None:
        self._revive()
        session = self.session
        if session is None:
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
        self._run_turn(lambda: session.regenerate(cancel=self._cancel))

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

    def _run_turn(self, start: Callable[[], Any], user_text: str | None = None) -> None:
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
            cancelled=self._cancel.is_set,
        )
        if recorder is not None and recorder.finish(done, self.session.messages):
            self.sig_conversation_saved.emit(recorder.conversation_id)
        self._emit_context()  # before Done: a window told the turn is over already has its meter
        self._busy.clear()
        self.sig_busy.emit(False)
        self.sig_done.emit(done)

    # -- approval (called by the dispatcher on the engine thread) -------------------------------------
    def _approve(self, request: ApprovalRequest) -> str:
        return self.approvals.ask(request, refuse=self._cancel.is_set() or self._closing)
