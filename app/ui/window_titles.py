"""Chats named by the model (a part of the main window): a conversation's menu -> *Name with the
model*, and, with Settings -> Chat -> *Name new chats* on, a new chat after its first reply (a
local model, or a remote engine's through its API). The model's words come from the worker
(``EngineWorker.name_conversation``, ``app.engine.titles``); the history is written only through
``History.rename_conversation``. Several chats asked together (*Name N chats with the model*) are
asked one after another, so a message sent meanwhile waits behind one title, not all of them; the
status bar counts them and its *Stop naming* button stops the rest."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtWidgets import QPushButton

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
        conversations.list.sig_name_many.connect(self.name_many)
        #: the chats asked together still to be asked, in order; and how that batch went
        self.queue: list[int] = []
        self.batch: dict[str, Any] = {}
        self.stop_button = QPushButton("Stop naming")
        self.stop_button.setObjectName("stopNaming")
        self.stop_button.setToolTip("Name no more of the chats chosen (the one being named is finished)")
        self.stop_button.clicked.connect(self.stop_naming)
        self.stop_button.hide()
        self.window.statusBar().addPermanentWidget(self.stop_button)
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

    def name_many(self, ids: list[int]) -> bool:
        """*Name N chats with the model* (several chosen): each asked in turn, after the one before
        has its title (more chosen meanwhile join the batch). False, said, when no model is loaded."""
        bar = self.window.statusBar()
        if self.state.model_info is None:
            bar.showMessage("Could not name the chats: no model is loaded. Load one first.", 8000)
            return False
        new = [cid for cid in ids if cid not in self.queue and cid not in self.pending]
        if not self.batch:
            self.batch = {"asked": 0, "named": 0, "failed": 0, "why": ""}
        self.batch["asked"] += len(new)
        self.queue += new
        if not self.batch.get("asking"):  # (else the next is asked when that one has its title)
            self._ask_next()
        return True

    def _ask_next(self) -> None:
        """Ask the next chat of the batch; the batch is said once none is left."""
        b, bar = self.batch, self.window.statusBar()
        while self.queue:
            cid = self.queue.pop(0)
            first = self._first_turn(cid)
            if first is None or not first[0].strip():
                b["failed"] += 1
                gone = self._title(cid) is None
                b["why"] = b["why"] or ("a chat was deleted" if gone else "a chat has no message yet")
                continue
            b["asking"] = cid
            self.pending[cid] = None
            done = b["named"] + b["failed"]
            bar.showMessage(f"Naming chats with the model: {done + 1} of {b['asked']}…")
            self.stop_button.show()
            self.worker.name_conversation(cid, first[0], first[1], asked=True)
            return
        self._batch_said()

    def stop_naming(self) -> None:
        """*Stop naming*: the chats not yet asked are left as they are called."""
        left, self.queue = len(self.queue), []
        if left and self.batch:
            self.batch["stopped"] = left
            if not self.batch.get("asking"):
                self._batch_said()

    def _batch_said(self) -> None:
        b, self.batch = self.batch, {}
        self.stop_button.hide()
        if not b:
            return
        n, named, stopped = b["asked"], b["named"], b.get("stopped", 0)
        said = (
            f"Named {named} of {n} chats with the model" if named < n else f"Named {n} chats with the model"
        )
        if stopped:
            said += f"; stopped before {stopped}"
        if b["failed"]:
            said += f"; {b['failed']} could not be named: {b['why']}"
        self.window.statusBar().showMessage(said + ".", 12000)

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
        if self.batch.get("asking") == cid:
            self._batch_named(cid, title, why)
            return
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

    def _batch_named(self, cid: int, title: str, why: str) -> None:
        """A chat of the batch has its title (or why not): filed, then the next is asked. With no
        model left to ask, the rest are not asked."""
        b = self.batch
        b["asking"] = None
        if title and self.conversations.write_history(
            "name the chat", lambda: self.state.history.rename_conversation(cid, title)
        ):
            b["named"] += 1
        else:
            b["failed"] += 1
            b["why"] = b["why"] or why or "the history could not be written"
            if why == "no model is loaded":
                b["failed"] += len(self.queue)
                self.queue = []
        self._ask_next()
