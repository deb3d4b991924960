"""The engine worker: the window's chat session on the shared engine.

The UI never touches llama.cpp. It calls the public methods of :class:`EngineWorker`
(any thread); each one becomes a job on the window's :class:`app.engine.host.EngineHost`, whose
loop runs on the worker's QThread and which the in-window server and the Check page share (one
engine, one queue, one set of loaded models). A turn streams on a slot thread of the host beside
the server's requests when the model has several slots (the in-window server runs), else on the
QThread; everything else runs on the QThread, alone. The worker iterates ``ChatSession.send(...)`` and
re-emits every engine event as a Qt signal (:class:`~app.ui.worker_signals.WorkerSignals`), which
Qt queues back to the UI thread. It is composed of collaborators over one
:class:`~app.ui.engine_types.EngineState`, each in its own module, each given what it needs:

* :mod:`app.ui.engine_jobs`     :class:`HostJobs`: requests as host jobs; following a model another job loaded
* :mod:`app.ui.worker_session`  :class:`Sessions`: loading, building the session, the model's info, the context meter
* :mod:`app.ui.worker_turns`    :class:`Turns`: sending, regenerating and recording turns

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
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QThread

from app.engine.host import EngineHost
from app.ui.approval_bridge import ApprovalBridge
from app.ui.engine_jobs import HostJobs, HostThread
from app.ui.engine_types import DEFAULT_APPROVAL_TIMEOUT_S, EngineConfig, EngineState, ModelInfo
from app.ui.mcp_host import McpHost
from app.ui.worker_session import Sessions
from app.ui.worker_signals import WorkerSignals
from app.ui.worker_turns import Turns

if TYPE_CHECKING:
    from collections.abc import Sequence

    from app.storage.history import MessageRecord
    from app.storage.settings import RemoteProviderSettings
    from app.ui.chat.turn_settings import TurnSettings

log = logging.getLogger(__name__)

__all__ = ["EngineConfig", "EngineWorker", "ModelInfo"]


def _state_choice(name: str, doc: str) -> Any:
    """A property that reads and sets the engine state's ``name`` (a choice for the next send)."""
    return property(
        attrgetter(f"state.{name}"), lambda self, value: setattr(self.state, name, value), doc=doc
    )


class EngineWorker(WorkerSignals):
    """Owns the window's ChatSession and the engine host's thread; talks to the UI with signals."""

    def __init__(self, history: Any = None, *, max_loaded: int = 1, queue_size: int = 16) -> None:
        super().__init__()
        self.history = history
        self.state = EngineState()
        #: the one engine of the window: its chat, the in-window server and the Check page share it
        self.host = EngineHost(max_loaded=max_loaded, queue_size=queue_size)
        self._thread = HostThread(self.host)
        self.approvals = ApprovalBridge(self.sig_approval_requested.emit, DEFAULT_APPROVAL_TIMEOUT_S)
        self.mcp_host = McpHost(self.sig_window_notice.emit, self.sig_load_progress.emit)
        self.sessions = Sessions(
            self.state, host=self.host, signals=self, mcp_host=self.mcp_host, approvals=self.approvals
        )
        self.jobs = HostJobs(self.host, self.state, signals=self, sessions=self.sessions)
        self.turns = Turns(self.state, history=history, sessions=self.sessions, signals=self)
        self._thread.start()

    # -- what the window reads ----------------------------------------------------------------
    mcp = property(
        attrgetter("mcp_host.manager"),
        doc="The running MCP servers of ``config.mcp_servers_path`` (None when there are none).",
    )
    model = property(
        attrgetter("state.model"), doc="The window's local model (None: none, or a remote engine's)."
    )
    session = property(attrgetter("state.session"))
    conversation_id = property(attrgetter("state.conversation_id"))
    generation_thread_ident = property(
        attrgetter("turns.generation_thread_ident"), doc="The thread the last turn ran on."
    )
    turn_settings = property(
        attrgetter("turns.last_settings"),
        doc="The settings the last turn was sent with (a TurnSettings; read once it is done).",
    )

    tool_choice = _state_choice("tool_choice", "The next send's tool_choice (the window's control sets it).")
    thinking = _state_choice(
        "thinking", "The next send's thinking choice (the window's thinking control sets it; None: auto)."
    )

    # -- public API (any thread) -------------------------------------------------------------
    @property
    def thread_handle(self) -> QThread:
        return self._thread

    def is_busy(self) -> bool:
        return self.state.busy.is_set()

    def load(self, path: str | Path, config: EngineConfig | None = None) -> None:
        self.jobs.submit(lambda: self.sessions.load(str(path), config))

    def load_remote(
        self, entry: RemoteProviderSettings, model: str, config: EngineConfig | None = None
    ) -> None:
        """Chat with ``model`` of the remote provider ``entry`` (a ``settings.remote`` entry): its
        key is read from the keychain on the worker thread; the local model is closed once it works."""
        self.jobs.submit(lambda: self.sessions.load_remote(entry, model, config))

    def configure(self, config: EngineConfig) -> None:
        """New settings: the session is rebuilt (its messages kept) before the next turn."""
        self.jobs.submit(lambda: self.sessions.configure(config))

    def open_conversation(
        self,
        conversation_id: int | None,
        messages: Sequence[MessageRecord] | None = None,
        system_prompt: str | None = None,
    ) -> None:
        """Switch to a conversation (``None``: a new, unsaved one) with its earlier, stored messages
        and its own system prompt (None: the one the config has)."""
        records = list(messages or [])
        self.jobs.submit(lambda: self.sessions.open(conversation_id, records, system_prompt))

    def set_chat_system(self, text: str | None) -> None:
        """The open conversation's own system prompt from now on (None: the one the config has)."""
        self.jobs.submit(lambda: self.sessions.set_chat_system(text))

    def send(self, text: str, conversation_id: int | None = None, images: list[bytes] | None = None) -> None:
        """Send a user message: ``text``, and ``images`` (the image files' bytes, in order)."""
        self.state.cancel.clear()
        self.state.busy.set()
        sent = list(images or [])
        self.jobs.submit(
            lambda: self.turns.send(text, conversation_id, sent), uses_model=True, batchable=True
        )

    def regenerate(self, settings: TurnSettings | None = None) -> None:
        """Reply again to the last user message with ``settings``, those its turn was sent with
        (what they do not record, and all of them when None: the current ones): the reply it
        replaces is kept in history as a version."""
        self.state.cancel.clear()
        self.state.busy.set()
        self.jobs.submit(lambda: self.turns.regenerate(settings), uses_model=True, batchable=True)

    def continue_reply(self, settings: TurnSettings | None = None) -> None:
        """Continue the last reply in place where it was cut (``ChatSession.continue_reply``), with
        ``settings``, those its turn was sent with (as :meth:`regenerate`'s)."""
        self.state.cancel.clear()
        self.state.busy.set()
        self.jobs.submit(lambda: self.turns.continue_reply(settings), uses_model=True, batchable=True)

    def truncate_before_user(self, user_index: int) -> None:
        """Drop the ``user_index``-th user message and all after it (edit-and-resend)."""
        self.jobs.submit(lambda: self.turns.truncate_users(user_index))

    def measure_draft(self, text: str) -> bool:
        """Count ``text`` (the message being written) in the context meter (``sig_context``), when
        the engine is free: a measure never waits behind a turn, the server or the check, nor holds
        them up. False (nothing asked) while it is not, or for a remote model."""
        st = self.state
        if (
            st.busy.is_set()
            or st.closing
            or st.remote is not None
            or st.session is None
            or not self.jobs.idle()
        ):
            return False
        st.draft = text
        if not st.draft_asked:  # one measure queued at a time: it reads the latest text
            st.draft_asked = True
            self.jobs.submit(self.sessions.emit_draft_context, quiet=True)
        return True

    def name_conversation(self, cid: int, question: str, answer: str, *, asked: bool = True) -> None:
        """Ask the loaded model for a title of the chat ``cid`` (its first message, ``question``,
        and the reply, ``answer``), after the jobs waiting: ``sig_named``. Not ``asked`` (the
        window's own after a first reply): the window does not say it waits for it."""
        self.jobs.submit(
            lambda: self.sessions.name_chat(cid, question, answer),
            uses_model=True,
            quiet=not asked,
            on_failed=lambda exc: self.sig_named.emit(cid, "", str(exc) or type(exc).__name__),
        )

    def cancel(self) -> None:
        """Stop the current generation at the next token; a pending approval becomes deny."""
        self.state.cancel.set()
        self.approvals.release("deny")

    def answer_approval(self, call_id: str, decision: str) -> None:
        """The UI's answer to ``sig_approval_requested``: allow_once, always or deny."""
        self.approvals.answer(call_id, decision)

    def shutdown(self, timeout_ms: int = 10_000) -> bool:
        """Cancel, close the models and join the thread; True if it ended within the timeout."""
        if self.state.closing:
            return not self._thread.isRunning()
        self.state.closing = True
        self.cancel()
        self.host.stop()  # waiting jobs are dropped; the loop closes the models after the running one
        ok = self._thread.wait(timeout_ms)
        if not ok:  # still loading a huge model: keep the objects alive rather than crash
            _LEAKED.append(self)
            return False
        self.mcp_host.close()
        self.state.model = None
        self.state.session = None
        return True


_LEAKED: list[EngineWorker] = []
