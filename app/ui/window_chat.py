"""The window's chat actions and what it does with the worker's events (a part of MainWindow).

UI action -> worker call (queued to the engine thread) -> typed events -> these slots. Failures
are shown inside the reply they belong to, in the error style, with the action that fixes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from app.engine.events import (
    DoneEvent,
    NoticeEvent,
    ToolCallFinishedEvent,
    ToolCallIncomplete,
    ToolCallStartedEvent,
)
from app.tools.builtins import FILE_TOOL_NAMES
from app.ui.approval_dialog import ApprovalDialog
from app.ui.call_view import CallView

if TYPE_CHECKING:
    from PySide6.QtWidgets import (
        QDockWidget,
        QHBoxLayout,
        QPushButton,
        QVBoxLayout,
        QWidget,
    )

    from app.ui.chat import AssistantMessage, ChatView, ComposeEdit
    from app.ui.tool_choice import ToolChoiceBox
    from app.ui.tool_panel import ToolCallPanel
    from app.ui.worker import EngineConfig, EngineWorker, ModelInfo

__all__ = ["CONTINUE_PROMPT", "ChatMixin", "reply_stats"]

CONTINUE_PROMPT = "Continue from where you stopped."
MAX_CONTEXT = 131_072


def reply_stats(ev: DoneEvent) -> str:
    """ "123 tokens · 45.6 tok/s · 2.7 s" for the line under a reply."""
    parts = []
    if ev.generated_tokens:
        parts.append(f"{ev.generated_tokens:,} tokens")
    if ev.tokens_per_s is not None:
        parts.append(f"{ev.tokens_per_s:.1f} tok/s")
    elapsed = ev.elapsed_s
    if elapsed is None and ev.tokens_per_s and ev.generated_tokens:
        elapsed = (ev.ttft_s or 0.0) + ev.generated_tokens / ev.tokens_per_s
    if elapsed is not None:
        parts.append(f"{elapsed:.1f} s")
    if ev.ttft_s is not None:
        parts.append(f"first token {ev.ttft_s * 1000:.0f} ms")
    return " · ".join(parts)


class ChatMixin:
    """Mixed into :class:`app.ui.main_window.MainWindow`."""

    settings: Any
    worker: EngineWorker
    chat: ChatView
    compose: ComposeEdit
    compose_row: QHBoxLayout
    send_button: QPushButton
    tool_choice_box: ToolChoiceBox
    window_notices: QVBoxLayout
    chat_page: QWidget
    _pending_text: str | None
    tool_panel: ToolCallPanel
    tool_dock: QDockWidget
    model_info: ModelInfo | None
    busy: bool
    approval_dialog: ApprovalDialog | None
    last_done: DoneEvent | None

    if TYPE_CHECKING:  # provided by the window (other parts, QMainWindow)

        def statusBar(self) -> Any: ...  # noqa: N802
        def _ensure_conversation(self, first_text: str) -> int: ...
        def new_chat(self) -> None: ...
        def config_for(self, model_path: str | None) -> EngineConfig: ...
        def apply_settings(self, settings: Any) -> None: ...
        def _save_settings_quietly(self) -> None: ...
        def open_settings(self, key: str | None = None) -> Any: ...
        def remote_removed(self) -> bool: ...
        def _show_turn_stats(self, ev: DoneEvent) -> None: ...
        def refresh_conversations(self) -> None: ...

        sig_turn_done: Any

        def show_window_notice(
            self, code: str, message: str, setting: str | None, *, kind: str = "info"
        ) -> Any: ...

    # -- the chat page ---------------------------------------------------------------------------------
    def _build_chat_page(self) -> QWidget:
        """Window banners, the chat view and the compose row (text, tool choice, Send)."""
        from PySide6.QtCore import Qt
        from PySide6.QtWidgets import QHBoxLayout, QPushButton, QVBoxLayout, QWidget

        from app.ui.chat import ChatView, ComposeEdit
        from app.ui.tool_choice import ToolChoiceBox

        page = QWidget()
        page.setObjectName("centralArea")
        v = QVBoxLayout(page)
        v.setContentsMargins(0, 0, 0, 0)
        self.window_notices = QVBoxLayout()
        self.window_notices.setContentsMargins(8, 4, 8, 0)
        v.addLayout(self.window_notices)
        self.chat = ChatView()
        self.chat.sig_chip_clicked.connect(self.select_tool_call)
        self.chat.sig_open_setting.connect(self.open_settings)
        self.chat.sig_dismiss_notice.connect(self._on_notice_dismissed)
        self.chat.suppress_notice_codes.update(self.settings.window.dismissed)
        self.chat.sig_regenerate.connect(self.regenerate)
        self.chat.sig_edit_resend.connect(self.edit_and_resend)
        v.addWidget(self.chat, 1)
        self.compose_row = QHBoxLayout()
        self.compose_row.setContentsMargins(12, 6, 12, 10)
        self.compose = ComposeEdit()
        self.compose.sig_submit.connect(self.send_or_stop_from_keyboard)
        self.compose_row.addWidget(self.compose, 1)
        self.tool_choice_box = ToolChoiceBox(self.settings.chat.tool_choice)
        self.tool_choice_box.sig_choice.connect(self._on_tool_choice)
        self.worker.tool_choice = self.tool_choice_box.value()
        self.worker.sig_loaded.connect(lambda info: self.tool_choice_box.set_tools(info.tools))
        self.compose_row.addWidget(self.tool_choice_box, 0, Qt.AlignmentFlag.AlignBottom)
        self.send_button = QPushButton("Send")
        self.send_button.setObjectName("sendButton")
        self.send_button.clicked.connect(self._on_send_button_clicked)
        self.compose_row.addWidget(self.send_button, 0, Qt.AlignmentFlag.AlignBottom)
        v.addLayout(self.compose_row)
        self.chat_page = page
        return page

    def _on_tool_choice(self, choice: Any) -> None:
        self.worker.tool_choice = choice  # the next send's tool_choice

    def _prompt_progress(self) -> tuple[int, int] | None:
        """How much of the prompt llama.cpp has read (None: not reading one, or a remote engine)."""
        model = self.worker.model
        return model.prompt_progress if model is not None else None

    # -- sending -----------------------------------------------------------------------------------
    def send_or_stop_from_keyboard(self) -> None:
        if not self.busy:
            self.send()

    def _on_send_button_clicked(self) -> None:
        if self.busy:
            self.stop()
        else:
            self.send()

    def send(self, text: str | None = None) -> bool:
        """Send the compose box's text (or ``text``); False if nothing was sent."""
        if self.busy:
            return False
        text = (text if text is not None else self.compose.toPlainText()).strip()
        if not text:
            return False
        if self.model_info is None:
            self.statusBar().showMessage("No model is loaded yet: pick one in the model picker.", 8000)
            return False
        if self.remote_removed():
            self.statusBar().showMessage(
                f"The remote engine {self.model_info.remote} was deleted: pick another model.", 8000
            )
            return False
        cid = self._ensure_conversation(text)
        self.compose.clear()
        self.chat.add_user(text)
        reply = self.chat.begin_assistant()
        reply.watch_prompt(self._prompt_progress)
        self._set_busy(True)
        self._pending_text = text
        self.worker.send(text, cid)
        return True

    def stop(self) -> None:
        if self.busy:
            self.worker.cancel()
            if self.approval_dialog is not None:
                self.approval_dialog.reject()

    def regenerate(self, user_index: int = -1) -> None:
        """Generate again the reply to the ``user_index``-th user message (-1 or the last: the last
        reply). An older reply is regenerated by resending its question: the later turns go."""
        if self.busy or self.model_info is None:
            return
        users = self.chat.user_messages()
        if 0 <= user_index < len(users) - 1:
            self.edit_and_resend(user_index, users[user_index].text)
            return
        last = self.chat.current_assistant()
        if last is None:
            return
        self._drop_panel_calls(last)
        self.chat.truncate_from(last)
        reply = self.chat.begin_assistant()
        reply.watch_prompt(self._prompt_progress)
        self._set_busy(True)
        self.worker.regenerate()

    def edit_and_resend(self, user_index: int, text: str) -> None:
        if self.busy or self.model_info is None:
            return
        users = self.chat.user_messages()
        if user_index >= len(users):
            return
        for m in self.chat.assistant_messages():  # the replies that go: their calls leave the panel
            if self.chat.user_index_of(m) >= user_index:
                self._drop_panel_calls(m)
        self.chat.truncate_from(users[user_index])
        self.worker.truncate_before_user(user_index)
        self.send(text)

    def continue_reply(self) -> None:
        """The Continue action of a reply cut off by the max-tokens limit."""
        self.send(CONTINUE_PROMPT)

    def increase_context(self) -> None:
        """The "Increase context" action: twice the context length, the model reloaded with it."""
        s = self.settings.model_copy(deep=True)
        s.model.context_length = min(MAX_CONTEXT, max(s.model.context_length * 2, 512))
        self.apply_settings(s)

    def _drop_panel_calls(self, reply: AssistantMessage) -> None:
        for call_id in list(reply.cards):
            self.tool_panel.remove_call(call_id)

    def _set_busy(self, busy: bool) -> None:
        self.busy = busy
        self.chat.set_busy(busy)
        self._update_send_button()

    def _update_send_button(self) -> None:
        b = self.send_button
        usable = self.model_info is not None and not self.remote_removed()
        if self.busy:
            b.setText("Stop")
            b.setToolTip("Stop the reply (Esc)")
            b.setProperty("mode", "stop")
        else:
            b.setText("Send")
            b.setToolTip(
                "Send (Enter)"
                if usable
                else "Its remote engine was deleted: pick another model"
                if self.model_info is not None
                else "Load a model first"
            )
            b.setProperty("mode", "send")
        b.setEnabled(self.busy or usable)
        b.style().unpolish(b)
        b.style().polish(b)

    # -- worker events -----------------------------------------------------------------------------
    def _on_worker_text(self, text: str) -> None:
        self.chat.append_text(text)

    def _on_worker_reasoning(self, text: str) -> None:
        self.chat.append_reasoning(text)

    def _show_call(self, view: CallView) -> None:
        """The one place a call is shown: its card in the reply and its row in the side panel."""
        self.chat.show_call(view)
        self.tool_panel.show_call(view)

    def _on_worker_tool_call_started(self, ev: ToolCallStartedEvent) -> None:
        self._show_call(CallView.from_event(ev))

    def _on_worker_tool_call_finished(self, ev: ToolCallFinishedEvent) -> None:
        known = self.tool_panel.entries.get(ev.call.id)
        view = known.finished(ev.outcome) if known is not None else CallView.from_event(ev)
        self._show_call(view)
        if not ev.outcome.ok and ev.call.name in FILE_TOOL_NAMES and not self.settings.tools.workspace:
            card = self.chat.find_card(ev.call.id)
            if card is not None:  # the file tools exist only with a workspace folder: say where to set it
                card.set_fix(
                    "Set a workspace folder to enable the file tools…",
                    lambda: self.open_settings("tools.workspace"),
                )

    def _on_worker_tool_call_incomplete(self, ev: ToolCallIncomplete) -> None:
        self.chat.add_incomplete_call(ev.call)

    def _on_worker_notice(self, ev: NoticeEvent) -> None:
        if ev.code in self.settings.window.dismissed:
            return  # "Don't show again"
        self.chat.add_notice(ev.code, ev.message, ev.setting)

    def _on_notice_dismissed(self, code: str) -> None:
        if code not in self.settings.window.dismissed:
            self.settings.window.dismissed = [*self.settings.window.dismissed, code]
            self._save_settings_quietly()

    def reload_crashed_model(self) -> None:
        """Start a fresh engine process for the model whose engine died."""
        info = self.model_info
        if info is not None and not info.remote:
            self.load_model(info.path)

    def _on_worker_done(self, ev: DoneEvent) -> None:
        self.last_done = ev
        for call_id, parser in ev.call_parsers.items():  # which parser read each call (remote engines)
            known = self.tool_panel.entries.get(call_id)
            if known is not None:
                self._show_call(known.read_by(parser))
        status = {"cancelled": "cancelled", "error": "error", "length": "length"}.get(
            ev.finish_reason, "done"
        )
        reply = self.chat.current_assistant()
        self.chat.end_assistant(status)
        if reply is not None:
            if ev.finish_reason == "error" and ev.context_full is not None:
                self.compose.setPlainText(self._pending_text or "")  # nothing typed is lost
                reply.set_error(
                    ev.error or "This conversation is full.",
                    [("New chat", self.new_chat), ("Increase context", self.increase_context)],
                )
                reply.btn_regen.setVisible(False)
            elif ev.finish_reason == "error" and ev.engine_crashed:
                # the engine process died: what was shown stays; a fresh engine is one click away
                reply.set_error(
                    ev.error or "The model crashed.", [("Reload the model", self.reload_crashed_model)]
                )
            elif ev.finish_reason == "error":
                reply.set_error(f"The reply failed: {ev.error or 'unknown error'}")
            elif ev.finish_reason == "length":
                reply.set_error(
                    "The reply reached the max-tokens limit and was cut off.",
                    [("Continue", self.continue_reply)],
                    kind="info",
                )
            elif ev.finish_reason != "cancelled" and any(c.failed() for c in reply.cards.values()):
                # the model's words may claim what the failed call did not do
                reply.set_error(
                    "A tool call in this reply did not run (marked ✗ above): the text may say otherwise.",
                    kind="info",
                )
            reply.set_stats(reply_stats(ev) if ev.finish_reason != "error" else "")
        self._show_turn_stats(ev)
        if self.approval_dialog is not None:
            self.approval_dialog.reject()
        self._set_busy(False)
        self.sig_turn_done.emit(ev)

    def _on_worker_conversation_saved(self, _cid: int) -> None:
        self.refresh_conversations()

    def _on_worker_approval_requested(self, request: Any) -> None:
        dlg = ApprovalDialog(request, self, workspace=self.settings.tools.workspace)  # type: ignore[arg-type]
        self.approval_dialog = dlg

        def answered(_result: int) -> None:
            self.worker.answer_approval(dlg.call_id, dlg.decision)
            if dlg.decision == "always":
                self.settings.tools.approvals = {**self.settings.tools.approvals, dlg.tool_name: "allow"}
                self._save_settings_quietly()
            if self.approval_dialog is dlg:
                self.approval_dialog = None

        dlg.finished.connect(answered)
        dlg.open()

    # -- tool panel ---------------------------------------------------------------------------------
    def select_tool_call(self, call_id: str) -> None:
        self.tool_dock.setVisible(True)
        self.tool_panel.select_call(call_id)
