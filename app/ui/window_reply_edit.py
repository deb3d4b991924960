"""Editing a reply's text (a part of the main window): the reply's ⋯ → *Edit reply text* opens a
box over its text; Save writes it to the history (``History.edit_reply_text``) and hands the
conversation to the worker again, so the next turn reads the edited reply. Nothing is generated.

A reply can be edited when it is stored, finished and its text is in one piece: a reply whose text
is split by its tool calls, or a reply's older version shown by its pager, is refused with why."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from app.ui.chat.markdown import TextRun
from app.ui.chat.reply_edit import ReplyEditor
from app.ui.theme import is_dark
from app.ui.window_part import WindowKit, WindowPart

if TYPE_CHECKING:
    from collections.abc import Sequence

    from app.storage.history import MessageRecord
    from app.ui.chat.messages import AssistantMessage
    from app.ui.chat.view import ChatView
    from app.ui.window_conversations import ConversationsController

__all__ = ["ReplyEditController", "reply_text_record"]

STATUS_MS = 8000


def _words(text: str) -> str:
    return " ".join(text.split())


def reply_text_record(messages: Sequence[MessageRecord], user_index: int) -> MessageRecord | str:
    """The stored message holding the text of the reply to the ``user_index``-th user message, or
    why there is none to edit."""
    users = [i for i, m in enumerate(messages) if m.role == "user"]
    if not 0 <= user_index < len(users):
        return "This reply is not saved in the chat yet."
    end = users[user_index + 1] if user_index + 1 < len(users) else len(messages)
    texts = [m for m in messages[users[user_index] + 1 : end] if m.role == "assistant" and m.content.strip()]
    if not texts:
        return "This reply has no text to edit."
    if len(texts) > 1:
        return "This reply's text is in parts between its tool calls: it cannot be edited as one."
    if texts[0].status == "streaming":
        return "This reply is still being written."
    return texts[0]


class ReplyEditController(WindowPart):
    """Opens the box that edits a reply's text (one at a time) and saves what it holds."""

    def __init__(self, kit: WindowKit, *, chat: ChatView, conversations: ConversationsController) -> None:
        super().__init__(kit)
        self.chat, self.conversations = chat, conversations
        self.editor: ReplyEditor | None = None
        self._target: Any = None  # (the conversation's id, the message's id) being edited
        chat.sig_edit_reply.connect(self.start)
        chat.sig_cleared.connect(self._forget)

    def _say(self, text: str) -> None:
        self.window.statusBar().showMessage(text, STATUS_MS)

    def start(self, user_index: int, reply: AssistantMessage) -> bool:
        """Open the box over ``reply``'s text (the reply to the ``user_index``-th user message)."""
        self.cancel()
        cid = self.state.conversation_id
        if self.state.busy:
            self._say("A reply is being written: edit a reply once it has ended.")
            return False
        if cid is None:
            self._say("This reply is not saved in the chat yet.")
            return False
        try:
            conv = self.state.history.load_conversation(cid)
        except Exception as exc:  # noqa: BLE001 - HistoryError and sqlite errors: said in the status bar
            self._say(f"Could not read the chat: {exc}")
            return False
        found = reply_text_record(conv.messages, user_index)
        if isinstance(found, str):
            self._say(found)
            return False
        upos = [m for m in conv.messages if m.role == "user"][user_index].position
        held = conv.versions.get(upos)  # (the version the chat went on from, how many)
        runs = [b for b in reply.blocks if isinstance(b, TextRun) and b.raw.strip()]
        if held is not None and reply.version[0] != held[0]:
            self._say(
                "This is another version of the reply than the chat went on from: show that one to edit it."
            )
            return False
        if len(runs) != 1 or _words(runs[0].raw) != _words(found.content):
            self._say("The reply shown is not the one saved: open the chat again to edit it.")
            return False
        self.editor = ReplyEditor(found.content, runs[0])
        self._target = (cid, found.id)
        self.editor.sig_save.connect(self.save)
        self.editor.sig_cancel.connect(self.cancel)
        return True

    def save(self, text: str) -> bool:
        """Store ``text`` as the reply's and show it; the box stays open (the text kept) when it
        cannot be saved."""
        editor, target = self.editor, self._target
        if editor is None or target is None:
            return False
        cid, message_id = target
        if self.state.busy:
            self._say("A reply is being written: save the edit once it has ended.")
            return False
        try:
            self.state.history.edit_reply_text(message_id, text)
            conv = self.state.history.load_conversation(cid)
        except Exception as exc:  # noqa: BLE001 - HistoryError, sqlite errors (a full disk): said
            self._say(f"Could not save the reply: {exc}")
            return False
        run = editor.run
        assert isinstance(run, TextRun)
        run.rebuild(is_dark(), text)
        self.cancel()
        if self.state.conversation_id == cid:
            self.worker.open_conversation(cid, conv.messages, conv.system_prompt)  # the next turn reads it
        self.conversations.refresh_conversations()
        self._say("Reply saved: the model reads your text from now on.")
        return True

    def cancel(self) -> None:
        """Close the box (nothing saved)."""
        editor, self.editor, self._target = self.editor, None, None
        if editor is not None:
            try:
                editor.close_editor()
            except RuntimeError:  # it went with its reply (the chat cleared)
                pass

    def _forget(self) -> None:
        self.editor, self._target = None, None
