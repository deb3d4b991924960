"""The worker's turn running (on the engine thread, or on a slot thread of the engine host beside
the server's requests when the model has several slots: everything a turn does, the session, the
tools' dispatch and approvals, the recorder and the signals, is safe there, and nothing else of the
window runs meanwhile): the context policy before a message is sent,
one turn's events to the window's signals and to the core's turn recorder, and the saved
conversation kept in step when a reply is regenerated or a message edited.

Each turn is sent with :class:`~app.ui.chat.turn_settings.TurnSettings`: a new message with the
current ones, Regenerate and Continue with those its turn was first sent with (U3). They are
recorded with the turn (history) and kept in ``Turns.last_settings`` for the window."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from app.engine.events import DoneEvent
from app.engine.recorder import TurnRecorder
from app.ui.chat.turn_settings import TurnSettings
from app.ui.engine_types import recorded_model, written_by
from app.ui.turn_stream import StreamCount, TurnSinks, stream_turn

if TYPE_CHECKING:
    from app.ui.engine_types import EngineState
    from app.ui.worker_session import Sessions
    from app.ui.worker_signals import WorkerSignals

__all__ = ["Turns"]

log = logging.getLogger(__name__)


class Turns:
    """Sends, regenerates and records the window's turns (on the engine thread or a slot thread)."""

    FLUSH_S = 0.03
    PARTIAL_SAVE_S = 1.0

    def __init__(
        self,
        state: EngineState,
        *,
        history: Any,
        sessions: Sessions,
        signals: WorkerSignals,
    ) -> None:
        self.state = state
        self.history = history
        self.sessions = sessions
        self.signals = signals
        self.flush_s = self.FLUSH_S
        self.partial_save_s = self.PARTIAL_SAVE_S  # how often a reply being written is saved
        self.tokens_emitted = 0  # the text/reasoning deltas of the last turn
        self.count = StreamCount()  # the running turn's pieces so far (a new one each turn)
        self.generation_thread_ident: int | None = None  # the thread the last turn ran on
        self.last_settings: TurnSettings | None = None  # what the last turn was sent with

    def _save_failed(self, exc: Exception) -> None:
        self.signals.sig_error.emit(f"Could not update the saved conversation: {exc}")

    def truncate_users(self, user_index: int) -> None:
        session, cid = self.state.session, self.state.conversation_id
        if session is None:
            return
        msgs = list(session.messages)
        seen = -1
        for i, m in enumerate(msgs):
            if m.role == "user":
                seen += 1
                if seen == user_index:
                    session.messages[:] = msgs[:i]
                    break
        if self.history is not None and cid is not None:
            try:
                conv = self.history.load_conversation(cid)
                users = [m for m in conv.messages if m.role == "user"]
                if user_index < len(users):
                    self.history.truncate_after(cid, users[user_index].position - 1)
            except Exception as exc:  # noqa: BLE001 - HistoryError or sqlite: the chat goes on, the window says so
                self._save_failed(exc)

    def revive(self) -> None:
        """A model whose engine process died gets a fresh one before the next turn (the
        conversation goes on: the session is rebuilt with its messages). On the engine thread
        only (a load is the host's): a turn on a slot thread was given a live model; if it died
        since, the turn ends with the crash and the next one, on the engine thread, revives it."""
        model = self.state.model
        if threading.get_ident() != self.sessions.host.thread_ident:
            return
        if self.state.remote is None and model is not None and model.crash is not None:
            self.sessions.load(str(model.path), None)

    def current_settings(self) -> TurnSettings:
        """The settings a new message is sent with: the window's tool and thinking choices, the
        sampling and max_tokens the session is built with."""
        from app.engine.thinking import parse_thinking

        st = self.state
        return TurnSettings(
            tool_choice=st.tool_choice,
            thinking=parse_thinking(st.thinking),
            sampling=dict(st.config.sampling),
            max_tokens=st.config.max_tokens,
        )

    def _settings(self, turn: TurnSettings | None = None) -> TurnSettings:
        """The settings of the turn starting: ``turn``'s (what it recorded; the current ones for
        the rest), or the current ones; kept in ``last_settings``."""
        current = self.current_settings()
        self.last_settings = turn.over(current) if turn is not None else current
        return self.last_settings

    def send(self, text: str, conversation_id: int | None, images: list[bytes] | None = None) -> None:
        """Send the user message ``text`` with its ``images`` (the files' bytes; the engine
        process checks and decodes them)."""
        st, sig = self.state, self.signals
        images = list(images or [])
        if conversation_id is not None:
            st.conversation_id = conversation_id
        used = self._settings()
        self.revive()
        session = st.session
        if session is None:
            st.busy.clear()
            sig.sig_error.emit("No model is loaded: pick one in the model picker or on the Models page.")
            sig.sig_done.emit(DoneEvent(finish_reason="error", error="no model loaded"))
            return
        if images and st.remote is not None:  # the remote sessions send text only
            st.busy.clear()
            sig.sig_done.emit(
                DoneEvent(
                    finish_reason="error",
                    error="images go to a local model with a vision projector; a remote engine takes text only",
                )
            )
            return
        if st.remote is None and not self._make_room(text):  # a remote engine keeps its own context
            return
        # the window's tool-choice and thinking controls; both session kinds take them
        with_images = {"images": images} if images else {}  # a remote session takes text alone
        self._run(
            lambda: session.send(
                text, cancel=st.cancel, tool_choice=used.tool_choice, thinking=used.thinking, **with_images
            ),
            used,
            user_text=text,
            user_images=images,
        )

    def regenerate(self, turn: TurnSettings | None) -> None:
        """Reply again to the last user message with the settings its ``turn`` was sent with (U3);
        the reply it replaces is kept in history as a version (``History.archive_reply``)."""
        st = self.state
        used = self._settings(turn)
        self.revive()
        session, cid = st.session, st.conversation_id
        if session is None:
            st.busy.clear()
            self.signals.sig_done.emit(DoneEvent(finish_reason="error", error="no model loaded"))
            return
        # the reply being replaced leaves the saved conversation, kept as a version of this turn
        if self.history is not None and cid is not None:
            try:
                conv = self.history.load_conversation(cid)
                users = [m for m in conv.messages if m.role == "user"]
                if users:
                    self.history.archive_reply(cid, users[-1].position)
            except Exception as exc:  # noqa: BLE001 - HistoryError or sqlite: the chat goes on, the window says so
                self._save_failed(exc)
        self._run(lambda: session.regenerate(cancel=st.cancel, **used.options()), used)

    def continue_reply(self, turn: TurnSettings | None) -> None:
        """Continue the last reply in place where it was cut, with the settings its ``turn`` was
        sent with; history's stored reply goes on too."""
        st = self.state
        used = self._settings(turn)
        self.revive()
        session = st.session
        go_on = getattr(session, "continue_reply", None)
        if session is None or go_on is None:
            st.busy.clear()
            self.signals.sig_done.emit(
                DoneEvent(finish_reason="error", error="this engine cannot continue a reply in place")
            )
            return
        # a forced call would be forced in the middle of the text: only "none" (no tools) is kept
        choice = "none" if used.tool_choice == "none" else "auto"
        try:
            events = go_on(cancel=st.cancel, **{**used.options(), "tool_choice": choice})
        except ValueError as exc:
            st.busy.clear()
            self.signals.sig_done.emit(DoneEvent(finish_reason="error", error=str(exc)))
            return
        self._run(lambda: events, used, resume=True)

    def _make_room(self, text: str) -> bool:
        """Apply the context policy before ``text`` is sent; False (and a done event saying why) when
        the conversation cannot fit: nothing is sent or saved then."""
        from app.engine.context import fit_turn, full_context_done, trimmed_notice

        st, sig = self.state, self.signals
        try:
            fit = fit_turn(st.session, text, st.config.context_policy)
        except Exception:  # noqa: BLE001 - a template that fails here fails in the turn too, with its error
            log.exception("measuring the context failed")
            return True
        if (notice := trimmed_notice(fit)) is not None:
            sig.sig_notice.emit(notice)
        if fit.fits:
            return True
        st.busy.clear()
        sig.sig_context.emit(fit.usage)
        sig.sig_done.emit(full_context_done(fit.usage))
        return False

    def _recorder(self, used: TurnSettings) -> TurnRecorder | None:
        """The core's turn recorder for the open conversation (None without history): the turn's
        settings go with its user message and its replies."""
        st = self.state
        if self.history is None or st.conversation_id is None:
            return None
        return TurnRecorder(
            self.history,
            st.conversation_id,
            model=recorded_model(st.info),  # the file, or the remote engine and its model
            author=written_by(st.info, st.config.made),
            settings={
                "tool_format": st.config.tool_format,
                **used.to_record(),
            },  # what Regenerate sends again
            on_error=self.signals.sig_error.emit,
            partial_save_s=self.partial_save_s,
        )

    def _run(
        self,
        start: Callable[[], Any],
        used: TurnSettings,
        user_text: str | None = None,
        *,
        user_images: list[bytes] | None = None,
        resume: bool = False,
    ) -> None:
        st, sig = self.state, self.signals
        assert st.session is not None
        self.generation_thread_ident = threading.get_ident()
        self.count = StreamCount()
        sig.sig_busy.emit(True)
        recorder = self._recorder(used)
        if recorder is not None:
            if user_text is not None:
                recorder.user_message(user_text, user_images or ())
            if not resume:
                recorder.begin()
            elif not recorder.resume():
                recorder = None  # nothing stored to continue: the turn is not saved
        sinks = TurnSinks(
            text=sig.sig_text.emit,
            reasoning=sig.sig_reasoning.emit,
            tool_started=sig.sig_tool_call_started.emit,
            tool_finished=sig.sig_tool_call_finished.emit,
            notice=sig.sig_notice.emit,
            incomplete=sig.sig_tool_call_incomplete.emit,
        )
        done, self.tokens_emitted = stream_turn(
            start,
            sinks,
            recorder,
            flush_s=self.flush_s,
            cancelled=st.cancel.is_set,
            count=self.count,
        )
        if recorder is not None and recorder.finish(done, st.session.messages):
            sig.sig_conversation_saved.emit(recorder.conversation_id)
        self.sessions.emit_context()  # before Done: a window told the turn is over already has its meter
        st.busy.clear()
        sig.sig_busy.emit(False)
        sig.sig_done.emit(done)
