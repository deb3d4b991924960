"""The window's chat actions and what it does with the worker's events (a part of the main window).

UI action -> worker call (queued to the engine thread) -> typed events -> these slots. Failures
are shown inside the reply they belong to, in the error style, with the action that fixes them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Signal

from app.engine.events import (
    DoneEvent,
    NoticeEvent,
    ToolCallFinishedEvent,
    ToolCallIncomplete,
    ToolCallStartedEvent,
)
from app.tools.builtins import FILE_TOOL_NAMES
from app.ui import window_chat_turns as turns
from app.ui.approval_dialog import ApprovalDialog
from app.ui.call_view import CallView
from app.ui.chat.records import end_reply
from app.ui.thinking_control import ThinkingController
from app.ui.window_chat_turns import reply_stats
from app.ui.window_files import FilesController
from app.ui.window_images import ImagesController
from app.ui.window_part import WindowKit, WindowPart

if TYPE_CHECKING:
    from app.ui.chat import AssistantMessage, UserMessage
    from app.ui.model_bar import ModelBar
    from app.ui.window_chat_page import ChatPage
    from app.ui.window_conversations import ConversationsController
    from app.ui.window_settings import SettingsController

__all__ = ["CONTINUE_PROMPT", "ChatController", "reply_stats"]

CONTINUE_PROMPT = "Continue from where you stopped."
MAX_CONTEXT = 131_072


class ChatController(WindowPart):
    """Owns the chat page's actions (send, stop, regenerate, edit and resend, continue), the
    approval dialog (``approval_dialog``), the last turn's done event (``last_done``) and the text
    of the message being answered; renders the worker's turn events in the chat view and the
    tool-call panel."""

    sig_turn_done = Signal(object)  # DoneEvent, after the end of a turn is rendered

    def __init__(
        self,
        kit: WindowKit,
        *,
        page: ChatPage,
        conversations: ConversationsController,
        settings: SettingsController,
        model_bar: ModelBar,
    ) -> None:
        super().__init__(kit)
        state, worker = self.state, self.worker
        self.page = page
        self.chat, self.compose, self.send_button = page.chat, page.compose, page.send_button
        self.tool_choice_box = page.tool_choice_box
        self.conversations = conversations
        self.settings_ctl = settings
        self.remote = model_bar.remote
        self.model_bar = model_bar
        self.approval_dialog: ApprovalDialog | None = None
        self.attention_asked = 0  # how often the window asked for the person's attention
        self.last_done: DoneEvent | None = None
        self._pending_text: str | None = None
        self._turn_user: UserMessage | None = None  # the message of the turn running: it keeps its settings
        self.chat.sig_chip_clicked.connect(self.select_tool_call)
        self.chat.sig_open_setting.connect(settings.open_settings)
        self.chat.sig_dismiss_notice.connect(self._on_notice_dismissed)
        self.chat.suppress_notice_codes.update(state.settings.window.dismissed)
        self.chat.sig_regenerate.connect(self.regenerate)
        self.chat.sig_edit_resend.connect(self.edit_and_resend)
        self.chat.sig_continue.connect(self.continue_reply)
        self.chat.sig_version.connect(self.show_version)
        self.compose.sig_submit.connect(self.send_or_stop_from_keyboard)
        self.compose.up_edits_last = True  # Up in the empty box edits the last message sent
        self.compose.sig_edit_last.connect(self.chat.edit_last)
        self.chat.sig_edit_ended.connect(self.compose.setFocus)  # back to the box after an edit
        self.tool_choice_box.sig_choice.connect(self._on_tool_choice)
        worker.tool_choice = self.tool_choice_box.value()
        self.thinking = ThinkingController(page.thinking_box, worker, state.store)  # issue 30
        self.images = ImagesController(kit, page=page)  # the message's images (issue 30)
        self.files = FilesController(kit, page=page)  # the message's text files
        worker.sig_loaded.connect(lambda info: self.tool_choice_box.set_tools(info.tools))
        self.send_button.clicked.connect(self._on_send_button_clicked)
        settings.sig_settings_saved.connect(self._on_settings_saved)
        worker.sig_text.connect(self._on_worker_text)
        worker.sig_reasoning.connect(self._on_worker_reasoning)
        worker.sig_tool_call_started.connect(self._on_worker_tool_call_started)
        worker.sig_tool_call_finished.connect(self._on_worker_tool_call_finished)
        worker.sig_notice.connect(self._on_worker_notice)
        worker.sig_tool_call_incomplete.connect(self._on_worker_tool_call_incomplete)
        worker.sig_done.connect(self._on_worker_done)
        worker.sig_load_progress.connect(self.chat.waits.on_progress)  # what a reply's turn waits for
        worker.sig_approval_requested.connect(self._on_worker_approval_requested)

    def _on_settings_saved(self) -> None:
        self.tool_choice_box.default = self.state.settings.chat.tool_choice

    def _on_tool_choice(self, choice: Any) -> None:
        self.worker.tool_choice = choice  # the next send's tool_choice

    def _prompt_progress(self) -> tuple[int, int] | None:
        """How much of the prompt llama.cpp has read (None: not reading one, or a remote engine)."""
        model = self.worker.model
        return model.prompt_progress if model is not None else None

    # -- sending -----------------------------------------------------------------------------------
    def send_or_stop_from_keyboard(self) -> None:
        if not self.state.busy:
            self.send()

    def _on_send_button_clicked(self) -> None:
        if self.state.busy:
            self.stop()
        else:
            self.send()

    def send(self, text: str | None = None, images: list[bytes] | None = None) -> bool:
        """Send the compose box's text (or ``text``) and its images (or ``images``); False if
        nothing was sent."""
        if self.state.busy:
            return False
        text = (text if text is not None else self.compose.toPlainText()).strip()
        files = self.files.pending.files
        if not text and not files and not (images if images is not None else self.images.pending.images):
            return False
        if self.state.model_info is None:
            self.window.statusBar().showMessage("No model is loaded yet: pick one in the model picker.", 8000)
            return False
        if self.remote.remote_removed():
            self.window.statusBar().showMessage(
                f"The remote engine {self.state.model_info.remote} was deleted: pick another model.", 8000
            )
            return False
        title = text or " ".join(f.name for f in files) or "Image"
        text = self.files.into_message(text)  # their text goes in it, kept and sent whole
        cid = self.conversations.ensure_conversation(title)
        sent = self.images.take() if images is None else list(images)
        self.images.before_send()
        self.compose.clear()
        self._turn_user = self.chat.add_user(text, sent)
        self._begin_reply()
        self.set_busy(True)
        self._pending_text = text
        self.worker.send(text, cid, sent)
        return True

    def _begin_reply(self) -> AssistantMessage:
        """A new reply being written: the prompt's progress, then its live tokens and calls."""
        reply = self.chat.begin_assistant()
        reply.set_author(*turns.live_author(self.state.model_info, self.state.made))
        reply.watch_prompt(self._prompt_progress)
        reply.watch_tokens(turns.live_source(self.worker), on_rate=self.status.show_rate)
        self.status.begin_turn()
        return reply

    def stop(self) -> None:
        if self.state.busy:
            self.worker.cancel()
            if self.approval_dialog is not None:
                self.approval_dialog.reject()

    def regenerate(self, user_index: int = -1) -> None:
        """Generate again the reply to the ``user_index``-th user message (-1 or the last: the last
        reply), with the settings that turn was sent with (U3: its tool and thinking choices,
        sampling and max_tokens; the current ones where it recorded none). The reply it replaces
        is kept as a version (‹ 1/2 ›, U22); regenerating an older reply drops the later turns
        first (they followed from it)."""
        if self.state.busy or self.state.model_info is None:
            return
        users = self.chat.user_messages()
        if 0 <= user_index < len(users) - 1:
            for m in self.chat.assistant_messages():  # the later replies go: their calls leave the panel
                if self.chat.user_index_of(m) > user_index:
                    self._drop_panel_calls(m)
            self.chat.truncate_from(users[user_index + 1])
            self.worker.truncate_before_user(user_index + 1)
        last = self.chat.current_assistant()
        if last is None:
            return
        self._turn_user = user = turns.turn_message(self.chat, last)
        count = last.version[1]
        self._drop_panel_calls(last)
        self.chat.truncate_from(last)
        self._begin_reply().set_versions(count + 1, count + 1)
        self.set_busy(True)
        self.worker.regenerate(user.turn_settings if user is not None else None)

    def show_version(self, reply: AssistantMessage, number: int) -> None:
        """The reply's pager: show version ``number``. The last reply's version becomes the one
        the conversation goes on from (history and the model's conversation follow); an older
        reply's versions are shown for reading, with a note saying which one the chat went on from."""
        cid, history = self.state.conversation_id, self.state.history
        shown, count = reply.version
        if self.state.busy or cid is None or reply not in self.chat.messages:
            return
        if not 1 <= number <= count or number == shown:
            return
        is_last = reply is self.chat.current_assistant()
        user_index = self.chat.user_index_of(reply)
        try:
            conv, records, note = turns.load_reply_version(history, cid, user_index, number, count, is_last)
        except Exception as exc:  # noqa: BLE001 - HistoryError and sqlite errors: said in the status bar
            self.window.statusBar().showMessage(f"Could not show that version: {exc}", 8000)
            return
        self._drop_panel_calls(reply)
        new, views = self.chat.replace_reply(reply, records)
        new.set_versions(number, count, note=note)
        for view in views:  # the side panel shows the calls of the version shown
            self.tool_panel.show_call(view)
        if is_last:
            self.worker.open_conversation(cid, conv.messages, conv.system_prompt)

    def edit_and_resend(self, user_index: int, text: str) -> None:
        if self.state.busy or self.state.model_info is None:
            return
        users = self.chat.user_messages()
        if user_index >= len(users):
            return
        for m in self.chat.assistant_messages():  # the replies that go: their calls leave the panel
            if self.chat.user_index_of(m) >= user_index:
                self._drop_panel_calls(m)
        images = users[user_index].images  # an edited message keeps its images
        self.chat.truncate_from(users[user_index])
        self.worker.truncate_before_user(user_index)
        self.send(text, images)

    def continue_reply(self, reply: AssistantMessage | None = None) -> None:
        """The Continue action of a reply cut off by the max-tokens limit (the last reply only; its
        button goes once used, U9), with the settings its turn was sent with (U3)."""
        reply = reply if reply is not None else self.chat.current_assistant()
        if self.state.busy or reply is None or reply is not self.chat.current_assistant():
            return
        reply.withdraw_continue()
        if self.state.model_info is None:
            reply.offer_continue()  # nothing can go on without a model: it can still be continued
            self.window.statusBar().showMessage("No model is loaded yet: pick one in the model picker.", 8000)
            return
        if not turns.continues_in_place(self.worker.session):
            # an engine that cannot go on from a reply (a remote one): a message asks it to
            if not self.send(CONTINUE_PROMPT, []):
                reply.offer_continue()
            return
        reply.resume()  # in place: the same reply goes on, no message is added (U9)
        # the model going on may be another one than the one that began the reply
        reply.set_author(*turns.live_author(self.state.model_info, self.state.made))
        reply.watch_tokens(turns.live_source(self.worker), on_rate=self.status.show_rate)
        self.status.begin_turn()
        self.set_busy(True)
        self._turn_user = user = turns.turn_message(self.chat, reply)
        self.worker.continue_reply(user.turn_settings if user is not None else None)

    def increase_context(self) -> None:
        """The "Increase context" action: twice the context length, the model reloaded with it."""
        s = self.state.settings.model_copy(deep=True)
        s.model.context_length = min(MAX_CONTEXT, max(s.model.context_length * 2, 512))
        self.settings_ctl.apply_settings(s)

    def _drop_panel_calls(self, reply: AssistantMessage) -> None:
        for call_id in list(reply.cards):
            self.tool_panel.remove_call(call_id)

    def set_busy(self, busy: bool) -> None:
        self.state.busy = busy
        self.chat.set_busy(busy)
        self.update_send_button()

    def update_send_button(self) -> None:
        loaded = self.state.model_info is not None
        turns.show_send_button(
            self.send_button, self.state.busy, loaded, loaded and not self.remote.remote_removed()
        )

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
        if not ev.outcome.ok and ev.call.name in FILE_TOOL_NAMES and not self.state.settings.tools.workspace:
            card = self.chat.find_card(ev.call.id)
            if card is not None:  # the file tools exist only with a workspace folder: say where to set it
                card.set_fix(
                    "Set a workspace folder to enable the file tools…",
                    lambda: self.settings_ctl.open_settings("tools.workspace"),
                )

    def _on_worker_tool_call_incomplete(self, ev: ToolCallIncomplete) -> None:
        self.chat.add_incomplete_call(ev.call)

    def _on_worker_notice(self, ev: NoticeEvent) -> None:
        if ev.code in self.state.settings.window.dismissed:
            return  # "Don't show again"
        self.chat.add_notice(ev.code, ev.message, ev.setting)

    def _on_notice_dismissed(self, code: str) -> None:
        if code not in self.state.settings.window.dismissed:
            self.state.settings.window.dismissed = [*self.state.settings.window.dismissed, code]
            self.settings_ctl.save_quietly()

    def reload_crashed_model(self) -> None:
        """Start a fresh engine process for the model whose engine died."""
        info = self.state.model_info
        if info is not None and not info.remote:
            self.model_bar.load_model(info.path, made=self.state.made)

    def _on_worker_done(self, ev: DoneEvent) -> None:
        self.last_done = ev
        user, self._turn_user = self._turn_user, None
        if user is not None and user in self.chat.messages and self.worker.turn_settings is not None:
            user.turn_settings = self.worker.turn_settings  # what Regenerate and Continue send again
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
            end_reply(reply, ev.finish_reason, reply_stats(ev))
            if ev.finish_reason == "error" and ev.context_full is not None:
                self.compose.setPlainText(self._pending_text or "")  # nothing typed is lost
                reply.set_error(
                    ev.error or "This conversation is full.",
                    [("New chat", self.conversations.new_chat), ("Increase context", self.increase_context)],
                )
                reply.btn_regen.setVisible(False)
            elif ev.finish_reason == "error" and ev.engine_crashed:
                # the engine process died: what was shown stays; a fresh engine is one click away
                reply.set_error(
                    ev.error or "The model crashed.", [("Reload the model", self.reload_crashed_model)]
                )
            elif ev.finish_reason == "error":
                reply.set_error(f"The reply failed: {ev.error or 'unknown error'}")
            if reply.version[1] > 1:
                self._sync_versions(reply)
        self.status.show_turn_stats(ev)
        self.images.turn_ended(ev, self._pending_text)  # a failed message's images are not lost
        if self.approval_dialog is not None:
            self.approval_dialog.reject()
        self.set_busy(False)
        if ev.finish_reason != "cancelled":  # (one the person stopped needs no telling)
            self.attention_asked += turns.ask_attention(self.window)
        self.sig_turn_done.emit(ev)

    def _sync_versions(self, reply: AssistantMessage) -> None:
        """The regenerated reply's pager, as history counts its versions."""
        cid = self.state.conversation_id
        if cid is None or reply is not self.chat.current_assistant():
            return
        versions = turns.stored_versions(self.state.history, cid)
        if versions is not None:
            reply.set_versions(*versions)

    def _on_worker_approval_requested(self, request: Any) -> None:
        dlg = ApprovalDialog(request, self.window, workspace=self.state.settings.tools.workspace)
        self.approval_dialog = dlg

        def answered(_result: int) -> None:
            self.worker.answer_approval(dlg.call_id, dlg.decision)
            if turns.remember_approval(self.state.settings, dlg):
                self.settings_ctl.save_quietly()
            if self.approval_dialog is dlg:
                self.approval_dialog = None

        dlg.finished.connect(answered)
        self.attention_asked += turns.ask_attention(self.window)  # (asked before the dialog is up)
        dlg.open()

    # -- tool panel ---------------------------------------------------------------------------------
    def select_tool_call(self, call_id: str) -> None:
        self.tool_dock.setVisible(True)
        self.tool_panel.select_call(call_id)
