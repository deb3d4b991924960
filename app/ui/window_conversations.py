"""The window's conversation actions: list, search, new, open, rename, delete (a part of MainWindow).

History is read and written only through ``app.storage.history.History``'s methods; opening a
conversation rebuilds the chat view and the tool panel from the stored messages, and hands the
messages to the worker so the next turn continues them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from app.ui.call_view import CallView

if TYPE_CHECKING:
    from app.ui.chat import ChatView, ComposeEdit
    from app.ui.conversation_list import ConversationList
    from app.ui.tool_panel import ToolCallPanel
    from app.ui.worker import EngineConfig, EngineWorker, ModelInfo

__all__ = ["ConversationsMixin"]


class ConversationsMixin:
    """Mixed into :class:`app.ui.main_window.MainWindow`."""

    history: Any
    settings: Any
    worker: EngineWorker
    conversations: ConversationList
    chat: ChatView
    compose: ComposeEdit
    tool_panel: ToolCallPanel
    conversation_id: int | None
    model_info: ModelInfo | None
    busy: bool

    if TYPE_CHECKING:  # provided by the window (other parts, QMainWindow)

        def statusBar(self) -> Any: ...  # noqa: N802
        def stop(self) -> None: ...
        def show_chat_page(self) -> None: ...
        def config_for(self, model_path: str | None) -> EngineConfig: ...
        def _reset_stats(self) -> None: ...
        def _save_settings_quietly(self) -> None: ...

    def refresh_conversations(self, query: str | None = None) -> None:
        """Show the conversations matching ``query`` (default: the search box's text), or all."""
        q = (self.conversations.search.text() if query is None else query).strip()
        try:
            convs = self.history.search(q) if q else self.history.list_conversations()
        except Exception as exc:  # noqa: BLE001 - HistoryError and sqlite errors: said in the status bar
            self.statusBar().showMessage(f"Could not read the history: {exc}", 8000)
            return
        self.conversations.current_id = self.conversation_id
        self.conversations.set_conversations(convs)

    def search_conversations(self, query: str) -> None:
        self.refresh_conversations(query)

    def focus_search(self) -> None:
        """Ctrl+K: the conversation list is shown and its search box has the focus."""
        self.conversations.setVisible(True)
        self.conversations.search.setFocus()
        self.conversations.search.selectAll()

    def _remember_conversation(self, cid: int | None) -> None:
        self.tool_choice_box.recall(cid)  # each conversation keeps its own tool choice
        if self.settings.window.last_conversation_id != cid:
            self.settings.window.last_conversation_id = cid

    def new_chat(self) -> None:
        if self.busy:
            self.stop()
        self.conversation_id = None
        self._remember_conversation(None)
        self.chat.clear()
        self.tool_panel.clear()
        self._reset_stats()
        self.worker.open_conversation(None, [])
        self.conversations.select(None)
        self.show_chat_page()
        self.compose.setFocus()

    def rename_conversation(self, cid: int, title: str) -> None:
        try:
            self.history.rename_conversation(cid, title)
        except Exception as exc:  # noqa: BLE001 - HistoryError and sqlite errors: said in the status bar
            self.statusBar().showMessage(f"Could not rename: {exc}", 8000)
        self.refresh_conversations()

    def delete_conversation(self, cid: int) -> None:
        if cid == self.conversation_id:
            self.new_chat()
        try:
            self.history.delete_conversation(cid)
        except Exception as exc:  # noqa: BLE001 - HistoryError and sqlite errors: said in the status bar
            self.statusBar().showMessage(f"Could not delete: {exc}", 8000)
        self.refresh_conversations()

    def open_conversation(self, cid: int) -> None:
        if self.busy:
            self.stop()
        try:
            conv = self.history.load_conversation(cid)
        except Exception as exc:  # noqa: BLE001 - HistoryError and sqlite errors: said in the status bar
            self.statusBar().showMessage(f"Could not open the conversation: {exc}", 8000)
            return
        self.conversation_id = cid
        self._remember_conversation(cid)
        self.conversations.select(cid)
        self.chat.clear()
        self.tool_panel.clear()
        self._reset_stats()
        current = None
        for m in conv.messages:
            if m.role == "user":
                self.chat.add_user(m.content)
                current = None
            elif m.role in ("assistant", "tool"):
                if current is None:
                    current = self.chat.begin_assistant()
                if m.role == "assistant":
                    for n in m.shown_notices:  # the banners shown above it
                        self.chat.add_notice(n.code, n.message, n.setting)
                    if m.reasoning:
                        current.append_reasoning(m.reasoning)
                    if m.content:
                        current.append_text(m.content)
                    for inc in m.incomplete_calls:  # cut off or undeclared, not run
                        current.add_incomplete(inc)
                    for tc in m.tool_calls:
                        view = CallView.from_stored(tc)
                        current.add_card(view)
                        self.tool_panel.show_call(view)
                    current.flush()
                    current.set_status("done" if m.status == "complete" else m.status)
                    if m.status == "error" and m.error:
                        current.set_error(f"The reply failed: {m.error}")
        self.worker.open_conversation(cid, conv.messages)
        self.show_chat_page()

    def _ensure_conversation(self, first_text: str) -> int:
        if self.conversation_id is None:
            title = " ".join(first_text.split())[:48] or "New chat"
            path = self.model_info.path if self.model_info else None
            conv = self.history.create_conversation(
                title, model_path=path, settings=self.config_for(path).__dict__
            )
            self.conversation_id = conv.id
            self._remember_conversation(conv.id)
            self.refresh_conversations()
            self.conversations.select(conv.id)
        return self.conversation_id
