"""A reply of the model in a conversation: notice banners, a Thinking block, then text runs and
tool-call cards in order; its versions pager, its live tokens and the card of a call being written,
and Continue in place. The person's messages are :mod:`~app.ui.chat.bubble`'s, the live counter and
the statistics line :mod:`~app.ui.chat.live`'s (both re-exported here)."""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QMenu,
    QProgressBar,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.calls import IncompleteCall
from app.ui.call_view import CallView
from app.ui.chat.bubble import (
    COPIED_MS,
    ThinkingBlock,
    UserMessage,
    copy_with_feedback,
    small_button,
    when_text,
)
from app.ui.chat.live import LiveCounter, LiveSnapshot, stats_text
from app.ui.chat.markdown import TextRun
from app.ui.chat.notices import ErrorBox, NoticeBanner
from app.ui.chat.tool_card import ToolCard
from app.ui.labels import ElidedLabel

__all__ = [
    "COPIED_MS",
    "AssistantMessage",
    "LiveCounter",
    "LiveSnapshot",
    "ThinkingBlock",
    "UserMessage",
    "copy_with_feedback",
    "stats_text",
]


class AssistantMessage(QFrame):
    """A reply: notice banners, a Thinking block, then text blocks and tool-call cards in order."""

    sig_chip_clicked = Signal(str)
    sig_open_setting = Signal(str)
    sig_dismiss_notice = Signal(str)  # a notice code the user does not want to see again
    sig_regenerate = Signal()
    sig_branch = Signal()  # Branch: a new chat through this reply
    sig_continue = Signal()  # the Continue action of a reply cut off by the max-tokens limit
    sig_version = Signal(int)  # the version (1, 2, ...) the pager asks for
    sig_edit_text = Signal()  # ⋯ → Edit reply text

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("assistantMessage")
        self.role = "assistant"
        self.status = "streaming"
        self.finish_reason: str | None = None  # the turn's, once it ended
        self.version = (1, 1)  # (the version shown, how many there are)
        self._lay = QVBoxLayout(self)
        self._lay.setContentsMargins(12, 8, 12, 8)
        self._lay.setSpacing(4)
        head = QHBoxLayout()
        self.who = ElidedLabel("Assistant")
        self.who.setObjectName("roleLabel")
        self.written_at = time.time()  # when it began (the head's tooltip says it)
        head.addWidget(self.who)
        self.status_label = ElidedLabel("Processing prompt…", fills=True)  # cut before the name
        self.status_label.setObjectName("msgStatus")
        head.addWidget(self.status_label, 1)  # what the name and the actions leave
        self.progress = QProgressBar()  # until the first token: the prompt is being read
        self.progress.setObjectName("promptProgress")
        self.progress.setRange(0, 0)
        self.progress.setMaximumSize(90, 8)
        self.progress.setTextVisible(False)
        head.addWidget(self.progress)
        self.live = ElidedLabel("")  # tokens and tok/s while the reply is written
        self.live.setObjectName("msgLive")
        self.live.setVisible(False)
        head.addWidget(self.live)
        # a narrow reply cuts the labels ("…": the status first, then the name), never its actions (U5)
        self.btn_prev = small_button("‹", "The previous version of this reply")
        self.btn_prev.clicked.connect(lambda: self.sig_version.emit(self.version[0] - 1))
        self.version_label = QLabel("")
        self.version_label.setObjectName("msgVersion")
        self.btn_next = small_button("›", "The next version of this reply")
        self.btn_next.clicked.connect(lambda: self.sig_version.emit(self.version[0] + 1))
        for w in (self.btn_prev, self.version_label, self.btn_next):
            w.setVisible(False)
            head.addWidget(w)
        self.btn_copy = small_button("Copy", "Copy this reply")
        self.btn_copy.clicked.connect(lambda: copy_with_feedback(self.btn_copy, self.text()))
        self.btn_regen = small_button(
            "Regenerate", "Generate this reply again (the earlier one is kept as a version)"
        )
        self.btn_regen.clicked.connect(self.sig_regenerate.emit)
        # "⋯": what a reply offers besides Copy and Regenerate (a narrow window keeps them visible)
        self.btn_more = small_button("⋯", "More actions for this reply")
        self.btn_more.setPopupMode(QToolButton.ToolButtonPopupMode.InstantPopup)
        self.btn_more.setStyleSheet("QToolButton::menu-indicator { image: none; width: 0px; }")
        more = QMenu(self.btn_more)
        self.act_branch = more.addAction("Branch from here")
        self.act_branch.setToolTip("A new chat with the conversation up to this reply, to go on another way")
        self.act_branch.triggered.connect(self.sig_branch.emit)
        self.act_edit = more.addAction("Edit reply text")
        self.act_edit.setToolTip("Correct what the model wrote: it reads your text from now on")
        self.act_edit.triggered.connect(self.sig_edit_text.emit)
        self.btn_more.setMenu(more)
        head.addWidget(self.btn_copy)
        head.addWidget(self.btn_regen)
        head.addWidget(self.btn_more)
        self._lay.addLayout(head)
        self.version_note = QLabel("")
        self.version_note.setObjectName("msgStats")
        self.version_note.setWordWrap(True)
        self.version_note.setVisible(False)
        self._lay.addWidget(self.version_note)
        self.banners: list[NoticeBanner] = []
        self._banner_box = QVBoxLayout()
        self._lay.addLayout(self._banner_box)
        self.thinking = ThinkingBlock()
        self.thinking.setVisible(False)
        self._lay.addWidget(self.thinking)
        self.blocks: list[QWidget] = []
        self.incomplete: list[QLabel] = []  # calls the model did not finish (or not offered): never run
        self.cards: dict[str, ToolCard] = {}  # call id -> its card
        self._cur: TextRun | None = None
        self._chip_row: QVBoxLayout | None = None
        self.dirty = False
        self.reasoning = ""
        self.error_box: ErrorBox | None = None
        self.empty_label = QLabel("(empty reply)")  # a reply that ended with nothing in it
        self.empty_label.setObjectName("emptyReply")
        self.empty_label.setToolTip("The model ended its reply without writing anything.")
        self.empty_label.setVisible(False)
        self._lay.addWidget(self.empty_label)
        self.stats = QLabel("")
        self.stats.setObjectName("msgStats")
        self.stats.setWordWrap(True)  # a narrow reply wraps its statistics, never widens for them (U5)
        self.stats.setVisible(False)
        self._lay.addWidget(self.stats)
        self.started = False  # the first token (or call) arrived
        self.waiting: str | None = None  # what the turn waits for before it starts (show_wait)
        self.prompt_source: Callable[[], tuple[int, int] | None] | None = None
        self._prompt_timer: QTimer | None = None
        self.counter = LiveCounter()
        self.token_source: Callable[[], LiveSnapshot | None] | None = None
        self.on_rate: Callable[[float], None] | None = None  # told the live rate (the status bar)
        self._live_timer: QTimer | None = None

    # -- versions and the live counter -----------------------------------------------------
    def set_versions(self, shown: int, count: int, *, note: str = "") -> None:
        """The pager ‹ shown/count › (hidden for a reply with one version); ``note`` under it."""
        self.version = (shown, count)
        many = count > 1
        for w in (self.btn_prev, self.version_label, self.btn_next):
            w.setVisible(many)
        self.version_label.setText(f"{shown}/{count}")
        self.btn_prev.setEnabled(many and shown > 1)
        self.btn_next.setEnabled(many and shown < count)
        self.version_note.setText(note)
        self.version_note.setVisible(bool(note))

    def watch_tokens(
        self,
        source: Callable[[], LiveSnapshot | None],
        interval_ms: int = 250,
        on_rate: Callable[[float], None] | None = None,
    ) -> None:
        """While the reply is written, show its tokens and tok/s, and the call being written as a
        card whose arguments fill in: ``source()`` gives the engine's (tokens so far in the turn,
        the call being written as (id, name, arguments so far) or None), or None when it cannot
        tell (a remote engine); ``on_rate`` is told the tok/s shown, each time it is. Stops when
        the reply ends."""
        self.token_source = source
        self.on_rate = on_rate
        self._live_timer = self._poll_every(self._live_timer, self.poll_tokens, interval_ms)

    def _poll_every(self, timer: QTimer | None, poll: Callable[[], None], interval_ms: int) -> QTimer:
        """``timer`` (made the first time, calling ``poll``), started at ``interval_ms``."""
        if timer is None:
            timer = QTimer(self)
            timer.timeout.connect(poll)
        timer.start(interval_ms)
        return timer

    def poll_tokens(self) -> None:
        if self.status != "streaming" or self.token_source is None:
            if self._live_timer is not None:
                self._live_timer.stop()
            self.live.setVisible(False)
            return
        snap = self.token_source()
        if snap is None:
            return
        n, call = snap
        if n > 0:
            self._started()  # the model writes (perhaps a call, which shows no text)
        now = time.monotonic()
        self.counter.update(n, now)
        text = self.counter.text(now)
        rate = self.counter.rate(now)
        if rate is not None and self.on_rate is not None:
            self.on_rate(rate)
        self.live.setText(text)
        self.live.setVisible(bool(text))
        if call is not None:
            self.show_writing(CallView.being_written(*call))
            self.status_label.setText(f"writing a call to {call[1]}…")
        elif self.started and self.status_label.text().startswith("writing a call"):
            self.status_label.setText("…")

    def show_writing(self, view: CallView) -> ToolCard:
        """The card of a call being written (its arguments so far); it becomes the call's card
        when the call runs."""
        card = self.cards.get(view.call.id)
        if card is None:
            return self.add_card(view)
        if card.view.writing:
            card.set_view(view)
        return card

    def drop_unfinished_cards(self) -> None:
        """At the end of the reply: the cards of calls that were being written and never ran (the
        model abandoned them, or they were cut off: the cut-off chip says so)."""
        for call_id, card in list(self.cards.items()):
            if card.view.writing:
                del self.cards[call_id]
                card.hide()
                card.deleteLater()

    def offer_continue(self) -> None:
        """The mark of a reply cut off by the max-tokens limit, with its Continue action."""
        self.set_error(
            "The reply reached the max-tokens limit and was cut off.",
            [("Continue", self.sig_continue.emit)],
            kind="info",
        )

    def resume(self) -> None:
        """Continue in place: the reply streams again after what it has (its cut-off mark, its
        statistics and its last text run's end are undone; the text goes on in that run)."""
        if self.error_box is not None:
            self._lay.removeWidget(self.error_box)
            self.error_box.hide()
            self.error_box.deleteLater()
            self.error_box = None
        self.set_stats("")
        self.empty_label.setVisible(False)
        self.finish_reason = None
        for chip in [c for c in self.incomplete if c.property("reason") == "truncated"]:
            self.incomplete.remove(chip)  # the call it cut goes on: it is shown again as it ends
            self._lay.removeWidget(chip)
            chip.hide()
            chip.deleteLater()
        self.status = "streaming"
        self.status_label.setText("…")
        last = self.blocks[-1] if self.blocks and isinstance(self.blocks[-1], TextRun) else None
        if last is not None:  # the text goes on in an open run (one Markdown text, not two)
            run = TextRun()
            run.append(last.raw)
            self._lay.insertWidget(self._lay.indexOf(last), run)
            self._lay.removeWidget(last)
            last.hide()
            last.deleteLater()
            self.blocks[-1] = run
            self._cur = run
            self.dirty = True
            self.flush()

    def withdraw_continue(self) -> None:
        """Continue was used, or the conversation went on: the mark stays, its button goes."""
        button = self.error_box.buttons.get("Continue") if self.error_box is not None else None
        if button is not None:
            button.hide()
            button.setEnabled(False)

    def watch_prompt(self, source: Callable[[], tuple[int, int] | None], interval_ms: int = 150) -> None:
        """Until the first token, show how much of the prompt is read: ``source()`` gives (done, total)
        or None (the engine's ``LoadedModel.prompt_progress``, written by the generating thread)."""
        self.prompt_source = source
        self._prompt_timer = self._poll_every(self._prompt_timer, self._poll_prompt, interval_ms)

    def show_wait(self, text: str | None) -> None:
        """Until the reply starts: ``text`` while its turn waits for a free slot or someone else's
        job ("Waiting for a free slot: 2 server requests are generating…", the words of the
        toolbar's progress area), "Processing prompt…" again once ``text`` is None."""
        if self.started or self.status != "streaming" or text == self.waiting:
            return
        self.waiting = text
        self.status_label.setText(text or "Processing prompt…")

    def _poll_prompt(self) -> None:
        if self.started or self.status != "streaming" or self.prompt_source is None:
            if self._prompt_timer is not None:
                self._prompt_timer.stop()
            return
        if self.waiting is not None:  # not this turn's prompt: another slot's (or none yet)
            return
        p = self.prompt_source()
        if p and p[1] > 0:
            pct = max(0, min(99, int(100 * p[0] / p[1])))
            if self.progress.maximum() != 100:
                self.progress.setRange(0, 100)
            self.progress.setValue(pct)
            self.status_label.setText(f"Processing prompt… {pct}%")

    # -- content -------------------------------------------------------------------------
    def _started(self) -> None:
        if not self.started:
            self.started = True
            self.progress.setVisible(False)
            if self._prompt_timer is not None:
                self._prompt_timer.stop()
            if self.status == "streaming":
                self.status_label.setText("…")

    def _add_block(self, w: QWidget) -> None:
        """Content goes above the stats line and the error box."""
        self._lay.insertWidget(self._lay.indexOf(self.stats), w)

    def set_error(
        self, message: str, actions: Sequence[tuple[str, Callable[[], None]]] = (), *, kind: str = "error"
    ) -> ErrorBox:
        """Show ``message`` inside the reply in the error style (or ``kind="info"``), with actions."""
        if self.error_box is not None:
            self._lay.removeWidget(self.error_box)
            self.error_box.hide()  # not drawn until it is deleted
            self.error_box.deleteLater()
        self._started()
        self.error_box = ErrorBox(message, list(actions), kind=kind)
        self._lay.addWidget(self.error_box)
        return self.error_box

    def set_author(self, name: str, tooltip: str = "", written_at: float | None = None) -> None:
        """The head's name: the model that writes the reply (``records.reply_author``); its tooltip
        says who, with the file, and when the reply began (``written_at``: a stored reply's time)."""
        self.who.setText(name or "Assistant")
        if written_at is not None:
            self.written_at = written_at
        self.who.setToolTip("\n".join(t for t in (tooltip, when_text(self.written_at)) if t))

    def set_stats(self, text: str) -> None:
        self.stats.setText(text)
        self.stats.setVisible(bool(text))

    def add_banner(self, code: str, message: str, setting: str | None) -> NoticeBanner:
        b = NoticeBanner(code, message, setting)
        b.sig_open_setting.connect(self.sig_open_setting.emit)
        b.sig_dismiss_forever.connect(self.sig_dismiss_notice.emit)
        self.banners.append(b)
        self._banner_box.addWidget(b)
        return b

    def append_text(self, text: str) -> None:
        if self._cur is None or self._cur.md.final:
            self._cur = TextRun()
            self.blocks.append(self._cur)
            self._add_block(self._cur)
            self._chip_row = None
        self._started()
        self._cur.append(text)
        self.dirty = True

    def append_reasoning(self, text: str) -> None:
        self._started()
        self.reasoning += text
        self.thinking.setVisible(True)
        self.thinking.set_text(self.reasoning)

    def add_card(self, view: CallView) -> ToolCard:
        """A tool-call card; consecutive calls share one block. A call that runs takes the card
        that showed it being written (the first such card: calls run in the order written)."""
        if not view.writing:
            written = next((c for c in self.cards.values() if c.view.writing), None)
            if written is not None:
                del self.cards[written.view.call.id]
                self.cards[view.call.id] = written
                written.set_view(view)
                return written
        self.flush(final=True)
        self._cur = None
        if self._chip_row is None:
            row = QWidget()
            row.setObjectName("chipRow")
            self._chip_row = QVBoxLayout(row)
            self._chip_row.setContentsMargins(0, 0, 0, 0)
            self._chip_row.setSpacing(2)
            self.blocks.append(row)
            self._add_block(row)
        self._started()
        card = ToolCard(view)
        card.chip.clicked.connect(lambda: self.sig_chip_clicked.emit(card.view.call.id))
        self._chip_row.addWidget(card)
        self.cards[view.call.id] = card
        return card

    def add_incomplete(self, call: IncompleteCall) -> QLabel:
        """A chip for a call that was not run: cut off by the token limit (\"cut off while writing a
        call to NAME\") or addressed to a tool that was not offered; its raw text is the tooltip."""
        self.flush(final=True)
        self._cur = None
        self._chip_row = None
        self._started()
        what = call.name or "a tool"
        chip = QLabel(
            f"cut off while writing a call to {what}"
            if call.reason == "truncated"
            else f"not run: {what} was not offered to the model"
        )
        chip.setObjectName("incompleteChip")
        chip.setProperty("reason", call.reason)
        chip.setToolTip(call.raw[:2000])
        self.incomplete.append(chip)
        self._add_block(chip)
        return chip

    def flush(self, *, final: bool = False) -> float:
        """Render what changed in the reasoning and the current text run (``final``: the run is
        complete); returns seconds spent."""
        t0 = time.perf_counter()
        self.thinking.render_text()  # (appends what was added since: reasoning streams at the render's pace)
        if self._cur is None or not (self.dirty or final):
            self.dirty = False
            return time.perf_counter() - t0
        self._cur.flush(final=final)
        self.dirty = False
        return time.perf_counter() - t0

    def text(self) -> str:
        return "".join(b.raw for b in self.blocks if isinstance(b, TextRun))

    def is_empty(self) -> bool:
        """Nothing was written: no text, reasoning, call or cut-off call."""
        return not (self.text().strip() or self.reasoning.strip() or self.cards or self.incomplete)

    def set_status(self, status: str) -> None:
        self.status = status
        if status != "streaming":
            self.progress.setVisible(False)
            self.poll_tokens()  # stops the live counter
            self.drop_unfinished_cards()
        self.empty_label.setVisible(status in ("done", "length") and self.is_empty())
        self.status_label.setText(
            {
                "streaming": "…" if self.started else "Processing prompt…",
                "done": "",
                "interrupted": "(interrupted)",
                "cancelled": "(stopped)",
                "error": "(error)",
                "length": "(max tokens reached)",
            }.get(status, f"({status})")
        )

    def set_actions_enabled(self, on: bool) -> None:
        self.btn_regen.setEnabled(on)
        self.act_branch.setEnabled(on)
        self.act_edit.setEnabled(on)
