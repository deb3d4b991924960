"""What the chat controller (:mod:`app.ui.window_chat`) reads of the engine and of history for a
turn: the live source a reply polls while it is written, whether the engine can continue a reply in
place, the name at a reply's head, the message a reply answers (which keeps its turn's settings), a
reply's stored versions, the statistics line of a finished turn, the approvals a person asked to
remember, and the replies' last code block."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.engine.events import DoneEvent, LiveProgress
from app.ui.chat.live import LiveSnapshot, stats_text
from app.ui.chat.records import reply_author
from app.ui.engine_types import recorded_model, written_by

if TYPE_CHECKING:
    from collections.abc import Callable

    from PySide6.QtWidgets import QAbstractButton, QStatusBar, QWidget

    from app.storage.history import Conversation, History, MessageRecord
    from app.storage.settings import Settings
    from app.ui.approval_dialog import ApprovalDialog
    from app.ui.chat import AssistantMessage, ChatView, UserMessage
    from app.ui.engine_types import ModelInfo
    from app.ui.worker import EngineWorker

__all__ = [
    "ask_attention",
    "copy_last_code_block",
    "last_code_block",
    "continues_in_place",
    "live_author",
    "live_source",
    "load_reply_version",
    "remember_approval",
    "reply_stats",
    "show_send_button",
    "stored_versions",
    "turn_message",
]


def live_author(info: ModelInfo | None, made: str | None) -> tuple[str, str]:
    """The head of a reply being written by ``info``'s model (the made model ``made`` over it):
    the words its record gives once it is stored (``records.reply_author`` over what
    ``TurnRecorder`` keeps), so a reopened chat reads as it did live."""
    if info is None:
        return "Assistant", ""
    return reply_author({"model": recorded_model(info), **written_by(info, made)})


def reply_stats(ev: DoneEvent) -> str:
    """ "123 tokens · 45.6 tok/s · 2.7 s" for the line under a reply (with the drafted tokens
    accepted, when speculative decoding drafted some)."""
    return stats_text(
        ev.generated_tokens,
        ev.tokens_per_s,
        ev.elapsed_s,
        ev.ttft_s,
        draft_tokens=ev.draft_tokens,
        draft_accepted=ev.draft_accepted,
    )


def _live_progress(session: object) -> LiveProgress | None:
    """The local engine's turn as it is written (``ChatSession.live``); None from any other engine."""
    from app.engine.chat import ChatSession

    return session.live if isinstance(session, ChatSession) else None


def continues_in_place(session: object) -> bool:
    """Whether the engine can go on from a cut reply in that same reply (``continue_reply``): the
    local one can; a remote one where its endpoint reads the cut text as the reply's start
    (``RemoteChatSession.continues_in_place``). Where it cannot, a message asks for the rest."""
    from app.engine.chat import ChatSession
    from app.engine.remote import RemoteChatSession

    if isinstance(session, ChatSession):
        return True
    return isinstance(session, RemoteChatSession) and session.continues_in_place()


def live_source(worker: EngineWorker) -> Callable[[], LiveSnapshot | None]:
    """What the coming turn's reply polls: the engine's tokens so far and the call being written
    (``ChatSession.live``); from an engine that does not count them (a remote one), the pieces
    streamed so far. The previous turn's progress, still there until the engine thread starts
    the new turn, is not read."""
    before = _live_progress(worker.session)
    counted = worker.turns.count  # an engine that does not count: the pieces streamed

    def snapshot() -> LiveSnapshot | None:
        live = _live_progress(worker.session)
        if isinstance(live, LiveProgress):
            return None if live is before else (live.tokens, live.call)
        count = worker.turns.count
        return None if count is counted else (count.pieces, None)

    return snapshot


def turn_message(chat: ChatView, reply: AssistantMessage) -> UserMessage | None:
    """The user message ``reply`` answers: it keeps the settings its turn was sent with (U3)."""
    i = chat.user_index_of(reply)
    return chat.user_messages()[i] if i >= 0 else None


def load_reply_version(
    history: History, cid: int, user_index: int, number: int, count: int, is_last: bool
) -> tuple[Conversation, list[MessageRecord], str]:
    """Version ``number`` of the reply to the ``user_index``-th user message: (the conversation,
    the version's records, a note). The last reply's version becomes the one the conversation goes
    on from; an older reply's is read only, with a note saying which one the chat went on from.
    Raises what history raises."""
    conv = history.load_conversation(cid)
    users = [m for m in conv.messages if m.role == "user"]
    upos = users[user_index].position
    if is_last:
        history.select_reply_version(cid, upos, number)
        conv = history.load_conversation(cid)
        return conv, [m for m in conv.messages if m.position > upos], ""
    records = history.reply_version(cid, upos, number)
    went_on = conv.versions.get(upos, (number, count))[0]
    note = f"The conversation went on from version {went_on} of this reply." if went_on != number else ""
    return conv, records, note


def stored_versions(history: History, cid: int) -> tuple[int, int] | None:
    """(the version shown, how many) of the conversation's last reply, as history counts them;
    None when history cannot tell."""
    try:
        conv = history.load_conversation(cid)
    except Exception:  # noqa: BLE001 - the pager keeps the count it had
        return None
    users = [m for m in conv.messages if m.role == "user"]
    if users and users[-1].position in conv.versions:
        return conv.versions[users[-1].position]
    return None


def remember_approval(settings: Settings, dlg: ApprovalDialog) -> bool:
    """Keep the answered dialog's decision in the tool settings (approvals and pins); True when
    they changed (the settings are then to be saved)."""
    if dlg.decision == "deny":
        return False
    from app.calls import remember_decision

    tools = settings.tools
    approvals, pins = remember_decision(
        tools.approvals,
        tools.pins,
        tool_name=dlg.tool_name,
        trust=dlg.trust,
        decision=dlg.decision,
    )
    if (approvals, pins) == (tools.approvals, tools.pins):
        return False
    tools.approvals, tools.pins = approvals, pins  # type: ignore[assignment]
    return True


def ask_attention(window: QWidget) -> bool:
    """When ``window`` is in the background: its taskbar button flashes (Windows) or its Dock icon
    bounces (macOS) until the person comes back, as a reply ends or a call waits for their
    approval. False (and nothing) when it is the active window."""
    if window.isActiveWindow():
        return False
    from PySide6.QtWidgets import QApplication

    QApplication.alert(window, 0)
    return True


def show_send_button(b: QAbstractButton, busy: bool, loaded: bool, usable: bool) -> None:
    """The Send button: Stop while a reply is written; Send when the model can be used, else off,
    its tooltip saying why (no model ``loaded``, or its remote engine was deleted)."""
    if busy:
        b.setText("Stop")
        b.setToolTip("Stop the reply (Esc)")
        b.setProperty("mode", "stop")
    else:
        b.setText("Send")
        b.setToolTip(
            "Send (Enter)"
            if usable
            else "Its remote engine was deleted: pick another model"
            if loaded
            else "Load a model first"
        )
        b.setProperty("mode", "send")
    b.setEnabled(busy or usable)
    b.style().unpolish(b)
    b.style().polish(b)


def last_code_block(chat: ChatView) -> str | None:
    """The last code block of the replies shown (the newest reply with one), or None."""
    from app.ui.chat.markdown import TextRun

    for reply in reversed(chat.assistant_messages()):
        reply.flush()  # (a reply being written: what it holds so far)
        codes = [c for b in reply.blocks if isinstance(b, TextRun) for c in b.code_blocks]
        if codes:
            return codes[-1]
    return None


def copy_last_code_block(chat: ChatView, status_bar: QStatusBar) -> bool:
    """Ctrl+Shift+; : the replies' last code block on the clipboard, said in the status bar."""
    from PySide6.QtGui import QGuiApplication

    code = last_code_block(chat)
    if code is None:
        status_bar.showMessage("No code block in the replies yet.", 5000)
        return False
    QGuiApplication.clipboard().setText(code)
    lines = code.count("\n") + (0 if code.endswith("\n") else 1)
    status_bar.showMessage(f"Copied the last code block ({lines} line{'s' if lines != 1 else ''}).", 5000)
    return True
