"""The conversation view: one widget per message in a scroll area, newest at the bottom.

Streaming stays cheap: text deltas only append to a Python string; a throttled timer (whose
interval grows with the cost of the previous render) renders what changed (see
:mod:`app.ui.chat.pacing` and :mod:`app.ui.chat.markdown`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal, Slot
from PySide6.QtWidgets import QHBoxLayout, QLabel, QScrollArea, QVBoxLayout, QWidget

from app.calls import IncompleteCall
from app.ui.call_view import CallView
from app.ui.chat.follow import FollowLatest
from app.ui.chat.markdown import MarkdownView, TextRun
from app.ui.chat.messages import AssistantMessage, UserMessage
from app.ui.chat.notices import NoticeBanner
from app.ui.chat.pacing import RenderPacer
from app.ui.chat.records import fill_reply, stored_turn_settings
from app.ui.chat.tool_card import ToolCard
from app.ui.theme import is_dark

if TYPE_CHECKING:
    from app.storage.history import MessageRecord

__all__ = ["WAIT_PREFIX", "ChatView", "ReplyWaits"]

#: how the worker's progress words begin while a job of the window waits (``app.ui.engine_jobs``)
WAIT_PREFIX = "Waiting for "


class ChatView(QScrollArea):
    """All messages of the open conversation, newest at the bottom."""

    sig_chip_clicked = Signal(str)
    sig_open_setting = Signal(str)
    sig_dismiss_notice = Signal(str)
    sig_regenerate = Signal(int)  # index of the user message (among user messages) whose reply it is, or -1
    sig_branch = Signal(int)  # Branch on a reply: the index (among user messages) of the message it answers
    sig_edit_resend = Signal(int, str)  # (index of the user message among user messages, new text)
    sig_continue = Signal(object)  # the reply (AssistantMessage) whose Continue was clicked
    sig_version = Signal(object, int)  # (the reply, the version number its pager asks for)
    sig_edit_reply = Signal(int, object)  # Edit reply text: (the index of the message it answers, the reply)
    sig_edit_ended = Signal()  # the edit of a sent message was sent or cancelled
    sig_cleared = Signal()  # the messages were taken away (another conversation opens)

    READING_WIDTH = 860  # px: long lines stay readable on a wide window

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chatView")
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._inner = QWidget()
        self._inner.setObjectName("chatInner")
        outer = QHBoxLayout(self._inner)
        outer.setContentsMargins(0, 0, 0, 0)
        self.column = QWidget()  # the reading column: bounded width, centred
        self.column.setObjectName("chatColumn")
        self.column.setMaximumWidth(self.READING_WIDTH)
        outer.addStretch(1)
        outer.addWidget(self.column, 100)
        outer.addStretch(1)
        self._col = QVBoxLayout(self.column)
        self._col.setContentsMargins(16, 12, 16, 12)
        self._col.setSpacing(10)
        self._empty = QLabel("Start a conversation: type a message below and press Enter.")
        self._empty.setObjectName("emptyHint")
        self._empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._empty.setWordWrap(True)  # a narrow chat column wraps the hint instead of cutting it (U17)
        self._col.addWidget(self._empty)
        self._col.addStretch(1)
        self.setWidget(self._inner)
        self.messages: list[UserMessage | AssistantMessage] = []
        self.pacer = RenderPacer(self.current_assistant, self)  # the throttled rendering
        self.follow = FollowLatest(self)  # keeps to the latest message; "↓ Latest" when scrolled up
        self.seen_notice_codes: set[str] = set()
        self.suppress_notice_codes: set[str] = set()
        self.rendered_dark = is_dark()  # the theme the messages' colours were rendered for
        self.waits = ReplyWaits(self)  # the reply being written says what its turn waits for

    def changeEvent(self, e) -> None:  # noqa: N802 (Qt API)
        super().changeEvent(e)
        # apply_theme sets the application palette (Settings → Appearance, or the OS switching for
        # "System"): rendered Markdown carries its colours inline, so it is rendered again.
        if e.type() == QEvent.Type.PaletteChange and is_dark() != self.rendered_dark:
            self.retheme()

    def retheme(self) -> None:
        """Render every message's Markdown again in the current theme's colours."""
        self.rendered_dark = dark = is_dark()
        for run in self._inner.findChildren(TextRun):
            run.rebuild(dark)
        for view in self._inner.findChildren(MarkdownView):
            if view.from_markdown:
                view.set_markdown_text(view.raw)

    # -- building ------------------------------------------------------------------------
    def clear(self) -> None:
        self.pacer.stop()
        for w in self.messages:
            self._col.removeWidget(w)
            w.hide()  # gone now for whoever looks before it is deleted (a search)
            w.deleteLater()
        self.messages = []
        self.seen_notice_codes = set()
        self._empty.setVisible(True)
        self.sig_cleared.emit()

    def _insert(self, w: UserMessage | AssistantMessage) -> None:
        self._empty.setVisible(False)
        self._col.insertWidget(self._col.count() - 1, w)
        self.messages.append(w)
        self.follow.following = True

    def add_user(self, text: str, images: Sequence[bytes] = ()) -> UserMessage:
        """A user message: ``text`` and its ``images`` (the files' bytes, shown as thumbnails)."""
        for reply in self.assistant_messages():  # the conversation goes on: no older reply continues
            reply.withdraw_continue()
        m = UserMessage(text, images=images)
        m.sig_edit_resend.connect(self._on_user_edit_resend)
        m.sig_edit_requested.connect(self._on_user_edit_requested)
        m.sig_edit_ended.connect(self.sig_edit_ended.emit)
        self._insert(m)
        return m

    def _new_reply(self) -> AssistantMessage:
        m = AssistantMessage()
        m.sig_chip_clicked.connect(self.sig_chip_clicked.emit)
        m.sig_open_setting.connect(self.sig_open_setting.emit)
        m.sig_dismiss_notice.connect(self._on_dismiss_notice)
        m.sig_regenerate.connect(lambda: self.sig_regenerate.emit(self.user_index_of(m)))
        m.sig_branch.connect(lambda: self.sig_branch.emit(self.user_index_of(m)))
        m.sig_continue.connect(lambda: self.sig_continue.emit(m))
        m.sig_version.connect(lambda number: self.sig_version.emit(m, number))
        m.sig_edit_text.connect(lambda: self.sig_edit_reply.emit(self.user_index_of(m), m))
        return m

    def begin_assistant(self) -> AssistantMessage:
        m = self._new_reply()
        self._insert(m)
        return m

    # -- a stored conversation -----------------------------------------------------------
    def show_records(
        self, records: Sequence[MessageRecord], versions: Mapping[int, tuple[int, int]] | None = None
    ) -> list[CallView]:
        """Show a stored conversation as it looked live (banners, reasoning, text, calls with how
        they were decoded, statistics, the cut-off mark and Continue on the last reply, stopped or
        failed replies, the version pager); returns the calls shown, for the side panel."""
        versions = versions or {}
        views: list[CallView] = []
        turn: list[MessageRecord] = []
        user: tuple[UserMessage, MessageRecord] | None = None  # the turn's message, shown and stored

        def end_turn() -> None:
            if user is not None:  # the settings the turn was sent with (U3)
                user[0].turn_settings = stored_turn_settings(user[1], turn)
            if turn:
                reply = self.begin_assistant()
                views.extend(fill_reply(reply, turn, add_notice=self.add_notice))
                if user is not None and user[1].position in versions:
                    reply.set_versions(*versions[user[1].position])
            turn.clear()

        for m in records:
            if m.role == "user":
                end_turn()
                user = (self.add_user(m.content, m.images), m)
                if m.created:
                    user[0].set_time(m.created)
            elif m.role in ("assistant", "tool"):
                turn.append(m)
        end_turn()
        last = self.current_assistant()
        for reply in self.assistant_messages():
            if reply is not last:
                reply.withdraw_continue()
        return views

    def replace_reply(
        self, old: AssistantMessage, records: Sequence[MessageRecord]
    ) -> tuple[AssistantMessage, list[CallView]]:
        """Show ``records`` (another version of the reply) in place of ``old``; returns the new
        reply and its calls."""
        i = self.messages.index(old)
        m = self._new_reply()
        self._col.insertWidget(self._col.indexOf(old), m)
        self._col.removeWidget(old)
        old.hide()
        old.deleteLater()
        self.messages[i] = m
        views = fill_reply(m, records, add_notice=lambda code, msg, setting: m.add_banner(code, msg, setting))
        if m is not self.messages[-1]:
            m.withdraw_continue()
        return m, views

    def current_assistant(self) -> AssistantMessage | None:
        if self.messages and isinstance(self.messages[-1], AssistantMessage):
            return self.messages[-1]
        return None

    def _ensure_assistant(self) -> AssistantMessage:
        return self.current_assistant() or self.begin_assistant()

    def truncate_from(self, widget: QWidget) -> None:
        """Remove ``widget`` and every message after it."""
        if widget not in self.messages:
            return
        i = self.messages.index(widget)
        for w in self.messages[i:]:
            self._col.removeWidget(w)
            w.hide()
            w.deleteLater()
        self.messages = self.messages[:i]
        self._empty.setVisible(not self.messages)

    def user_index_of(self, reply: QWidget) -> int:
        """The index (among user messages) of the user message ``reply`` answers; -1 if none."""
        if reply not in self.messages:
            return -1
        before = self.messages[: self.messages.index(reply)]
        return sum(1 for m in before if isinstance(m, UserMessage)) - 1

    def user_messages(self) -> list[UserMessage]:
        return [m for m in self.messages if isinstance(m, UserMessage)]

    def assistant_messages(self) -> list[AssistantMessage]:
        return [m for m in self.messages if isinstance(m, AssistantMessage)]

    # -- streaming -----------------------------------------------------------------------
    def append_text(self, text: str) -> None:
        self._ensure_assistant().append_text(text)
        self.pacer.schedule()

    def append_reasoning(self, text: str) -> None:
        self._ensure_assistant().append_reasoning(text)
        self.pacer.schedule()

    def show_call(self, view: CallView) -> ToolCard:
        """Show ``view`` in its card (a call not shown yet gets a card in the current reply)."""
        card = self.find_card(view.call.id)
        if card is None:
            return self._ensure_assistant().add_card(view)
        card.set_view(view)
        return card

    def add_incomplete_call(self, call: IncompleteCall) -> QLabel:
        return self._ensure_assistant().add_incomplete(call)

    def find_card(self, call_id: str) -> ToolCard | None:
        """The card of ``call_id``, looking from the newest reply back."""
        for m in reversed(self.assistant_messages()):
            if call_id in m.cards:
                return m.cards[call_id]
        return None

    def add_notice(self, code: str, message: str, setting: str | None) -> NoticeBanner | None:
        """A banner above the current reply, once per conversation for each notice code."""
        if code in self.seen_notice_codes or code in self.suppress_notice_codes:
            return None
        self.seen_notice_codes.add(code)
        return self._ensure_assistant().add_banner(code, message, setting)

    def end_assistant(self, status: str) -> None:
        m = self.current_assistant()
        if m is None:
            return
        self.pacer.stop()
        m.flush(final=True)
        m.set_status(status)

    def banners(self) -> list[NoticeBanner]:
        return [b for m in self.assistant_messages() for b in m.banners]

    def set_busy(self, busy: bool) -> None:
        for m in self.messages:
            m.set_actions_enabled(not busy)

    # -- the messages' requests ------------------------------------------------------------
    def _on_user_edit_requested(self, msg: UserMessage) -> None:
        later = len(self.messages) - self.messages.index(msg) - 2 if msg in self.messages else 0
        msg.start_edit(max(0, later))

    def edit_last(self) -> UserMessage | None:
        """Edit the last message sent (Up in the empty message box), shown in view; None when
        there is none or it cannot be edited now (a reply is being written)."""
        users = self.user_messages()
        if not users or not users[-1].btn_edit.isEnabled():
            return None
        msg = users[-1]
        self._on_user_edit_requested(msg)
        self.follow.following = False  # the edit box stays in view, wherever the chat's end is
        # once the box is laid out: brought into view (a long reply after it may hide it)
        QTimer.singleShot(0, lambda: self._show_editor(msg))
        return msg

    def _show_editor(self, msg: UserMessage) -> None:
        if msg in self.messages and msg.editing:  # (the chat may have been cleared meanwhile)
            self.ensureWidgetVisible(msg.editor, 0, 40)

    def _on_dismiss_notice(self, code: str) -> None:
        self.suppress_notice_codes.add(code)
        self.sig_dismiss_notice.emit(code)

    def _on_user_edit_resend(self, msg: UserMessage, text: str) -> None:
        users = self.user_messages()
        if msg in users:
            self.sig_edit_resend.emit(users.index(msg), text)


class ReplyWaits(QObject):
    """Tells the reply being written in ``chat`` what its turn waits for: the worker's progress
    words (the toolbar's, ``sig_load_progress``) that begin with "Waiting for ", until the turn
    starts. A QObject of the chat's thread: the words come from the engine's threads, queued."""

    def __init__(self, chat: ChatView) -> None:
        super().__init__(chat)
        self.chat = chat

    @Slot(float, str)
    def on_progress(self, _fraction: float, what: str) -> None:
        m = self.chat.current_assistant()
        if m is not None:
            m.show_wait(what if what.startswith(WAIT_PREFIX) else None)
