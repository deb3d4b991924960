"""Chats named by the model (a part of the main window): a conversation's menu -> *Name with the
model*, and, with Settings -> Chat -> *Name new chats* on, a new chat after its first reply (a
local model, or a remote engine's through its API). The model's words come from the worker
(``EngineWorker.name_conversation``, ``app.engine.titles``); the history is written only through
``History.rename_conversation``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from app.ui.window_part import WindowKit, WindowPart

if TYPE_CHECKING:
    from PySide6.QtCore import SignalInstance

    from app.ui.window_conversations import ConversationsController

__all__ = ["TitlesController"]


class TitlesController(WindowPart):
    """Asks the model for a chat's title and files it. A new chat named automatically is renamed
    only while it still has the title it was given from its first message (one the person chose
    is kept); one asked for from the menu is renamed whatever it is called, and a failure is said
    in the status bar."""

    def __init__(self, kit: WindowKit, *, conversations: ConversationsController, turn_done: SignalInstance):
        super().__init__(kit)
        self.conversations = conversations
        #: the chats whose title the model is writing: None, asked from the menu; automatic: the
        #: title the chat had when it was asked (it is renamed only if it still has it)
        self.pending: dict[int, str | None] = {}
        conversations.list.sig_name.connect(self.name)
        self.worker.sig_named.connect(self._named)
        turn_done.connect(self._after_turn)

    def _first_turn(self, cid: int) -> tuple[str, str, int] | None:
        """The chat's first message, its first reply's text ("" before one) and how many messages
        the person has sent in it; None when it has no message (or cannot be read)."""
        try:
            messages = self.state.history.load_conversation(cid).messages
        except Exception:  # noqa: BLE001 - HistoryError, sqlite errors: nothing to name it from
            return None
        users = [m for m in messages if m.role == "user"]
        if not users:
            return None
        answer = next(
            (m.content for m in messages if m.role == "assistant" and (m.content or "").strip()), ""
        )
        return users[0].content or "", answer or "", len(users)

    def name(self, cid: int) -> bool:
        """A conversation's menu -> *Name with the model*: asked of the loaded model (after what it
        is doing). False, said in the status bar, when there is nothing to ask it with."""
        bar = self.window.statusBar()
        first = self._first_turn(cid)
        if first is None or not first[0].strip():
            bar.showMessage("Could not name the chat: it has no message to name it from yet.", 8000)
            return False
        if self.state.model_info is None:
            bar.showMessage("Could not name the chat: no model is loaded. Load one first.", 8000)
            return False
        self.pending[cid] = None
        bar.showMessage("Naming the chat with the model…", 8000)
        self.worker.name_conversation(cid, first[0], first[1], asked=True)
        return True

    def _after_turn(self, done: Any) -> None:
        """A new chat's first reply ended: its title from the model, when the settings ask it."""
        cid = self.state.conversation_id
        if (
            not self.state.settings.chat.name_chats
            or cid is None
            or cid in self.pending
            or done.finish_reason in ("cancelled", "error")
            or self.state.model_info is None
        ):
            return
        given = self.conversations.first_titles.get(cid)  # (None: a chat this window did not make)
        first = self._first_turn(cid)
        if (
            given is None
            or first is None
            or first[2] != 1
            or not first[1].strip()
            or self._title(cid) != given
        ):
            return
        self.pending[cid] = given
        self.worker.name_conversation(cid, first[0], first[1], asked=False)

    def _title(self, cid: int) -> str | None:
        try:
            return self.state.history.get_conversation(cid).title
        except Exception:  # noqa: BLE001 - deleted meanwhile, sqlite errors: not to be named
            return None

    def _named(self, cid: int, title: str, why: str) -> None:
        if cid not in self.pending:
            return
        had = self.pending.pop(cid)
        asked = had is None
        bar = self.window.statusBar()
        if not title:
            if asked:
                bar.showMessage(f"Could not name the chat: {why}.", 8000)
            return
        if not asked and self._title(cid) != had:
            return  # renamed by the person meanwhile: their name is kept
        if self.conversations.write_history(
            "name the chat", lambda: self.state.history.rename_conversation(cid, title)
        ):
            if asked:
                bar.showMessage(f"Named the chat “{title}”.", 8000)
