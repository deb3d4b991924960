"""The window's conversation actions: list, search, new, open, rename, delete, branch (a part of
the main window; its folders are ``window_folders``', export and import ``window_export``'s).

History is read and written only through ``app.storage.history.History``'s methods; opening a
conversation rebuilds the chat view and the tool panel from the stored messages, and hands the
messages to the worker so the next turn continues them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Signal

from app.engine.titles import title_from_message
from app.ui.conversation_list import SEARCH_SHOWN, ConversationList
from app.ui.window_export import ExportController
from app.ui.window_folders import FoldersController
from app.ui.window_part import WindowKit, WindowPart, each_chat
from app.ui.window_undo import UndoDelete

if TYPE_CHECKING:
    from collections.abc import Callable

    from app.ui.window_chat_page import ChatPage

__all__ = ["TRASH_OFFER", "ConversationsController"]

TRASH_OFFER = "trash"  # the empty list's offer of Recently deleted (the others: backup.CHAT_APPS' keys)


class ConversationsController(WindowPart):
    """Owns the conversation list (``list``): listing and searching the history, new, open,
    rename, delete; opening one shows its stored messages in the chat and the tool panel and hands
    them to the worker, so the next turn continues them."""

    sig_stop_requested = Signal()  # another conversation opens while a reply is being written

    def __init__(self, kit: WindowKit, *, page: ChatPage) -> None:
        super().__init__(kit)
        kit.worker.sig_conversation_saved.connect(self._on_conversation_saved)
        self.chat, self.compose, self.tool_choice_box = page.chat, page.compose, page.tool_choice_box
        assert page.system_bar is not None and page.find_bar is not None and page.model_hint is not None
        self.system_bar, self.find_bar, self.model_hint = page.system_bar, page.find_bar, page.model_hint
        self.chat_model: Any = None  # the model the open chat's last reply was written with (ChatModel)
        self.system_bar.sig_edit.connect(self.edit_system_prompt)
        self.system_dialog: Any = None  # the open "This chat's system prompt" dialog, if any
        self.list = ConversationList()
        self.list.setMinimumWidth(150)
        self.list.sig_new.connect(self.new_chat)
        self.list.sig_open.connect(self._open_found)
        self.list.sig_rename.connect(self.rename_conversation)
        self.list.sig_delete.connect(self.delete_conversations)
        self.list.sig_pin.connect(self.pin_conversations)
        self.list.sig_duplicate.connect(self.duplicate_conversation)
        self.chat.sig_branch.connect(self.branch_conversation)
        self.list.sig_search.connect(self.search_conversations)
        self.folders = FoldersController(kit, conversations=self)
        self.exports = ExportController(kit, conversations=self)
        self.undo = UndoDelete(kit, conversations=self)
        self.list.sig_offer.connect(self._take_offer)
        #: the chats this window made, and the title each was given from its first message
        self.first_titles: dict[int, str] = {}

    def _on_conversation_saved(self, _cid: int) -> None:
        """A turn was saved: the list shows its conversation first, with its title."""
        self.refresh_conversations()

    def reopen_last(self) -> None:
        """The conversation open when the window last closed, if it is still in the history."""
        cid = self.state.settings.window.last_conversation_id
        if cid is None:
            return
        from app.storage.history import ConversationNotFound

        try:
            self.state.history.load_conversation(cid)
        except ConversationNotFound:
            self.state.settings.window.last_conversation_id = None
            return
        self.open_conversation(cid)

    def refresh_conversations(self, query: str | None = None) -> None:
        """Show the conversations matching ``query`` (default: the search box's text), or all."""
        q = (self.list.search.text() if query is None else query).strip()
        history = self.state.history
        try:
            convs = history.search(q, limit=SEARCH_SHOWN + 1) if q else history.list_conversations()
            more = bool(q) and len(convs) > SEARCH_SHOWN  # (said at the list's end)
            convs = convs[:SEARCH_SHOWN] if more else convs
            folders = history.folders()
            snippets = history.search_snippets(q, [c.id for c in convs]) if q else {}
        except Exception as exc:  # noqa: BLE001 - HistoryError and sqlite errors: said in the status bar
            self.window.statusBar().showMessage(f"Could not read the history: {exc}", 8000)
            return
        self.list.current_id = self.state.conversation_id
        offers = self._empty_offers() if not convs and not q else []
        self.list.set_conversations(convs, folders, snippets, more=more, offers=offers)
        self._show_title()

    def _empty_offers(self) -> list[tuple[str, str, str]]:
        """An empty list's offers: the chats in Recently deleted, if any; other apps' chats."""
        trashed = self.undo.trashed_count()
        trash = [
            (
                TRASH_OFFER,
                f"{trashed} chat{'' if trashed == 1 else 's'} in Recently deleted…",
                "Put back the chats deleted in the last days (File → Recently deleted…)",
            )
        ]
        return (trash if trashed else []) + _others_offers()

    def _take_offer(self, key: str) -> None:
        """An empty list's offer clicked: Recently deleted, or another app's chats."""
        if key == TRASH_OFFER:
            self.undo.show_trash()
        else:
            self.exports.import_app(key)

    def _show_title(self) -> None:
        """The window's title names the open chat ("Garden — Callisto"), as a document window does."""
        cid, title = self.state.conversation_id, ""
        if cid is not None:
            try:
                title = " ".join(self.state.history.get_conversation(cid).title.split())
            except Exception:  # noqa: BLE001 - deleted meanwhile, sqlite errors: the app's name alone
                title = ""
        self.window.setWindowTitle(f"{title} — Callisto" if title else "Callisto")

    def search_conversations(self, query: str) -> None:
        self.refresh_conversations(query)

    def focus_search(self) -> None:
        """Ctrl+K: the conversation list is shown and its search box has the focus."""
        self.list.setVisible(True)
        self.list.search.setFocus()
        self.list.search.selectAll()

    def _remember_conversation(self, cid: int | None) -> None:
        self.tool_choice_box.recall(cid)  # each conversation keeps its own tool choice
        self._show_title()
        if self.state.settings.window.last_conversation_id != cid:
            self.state.settings.window.last_conversation_id = cid

    def new_chat(self) -> None:
        if self.state.busy:
            self.sig_stop_requested.emit()
        self.state.conversation_id = None
        self._remember_conversation(None)
        self._show_system(None)
        self.chat_model = None
        self.show_model_hint()
        self.chat.clear()
        self.tool_panel.clear()
        self.status.reset_stats()
        self.worker.open_conversation(None, [])
        self.list.select(None)
        self.pages.show_chat_page()
        self.compose.setFocus()

    def write_history(self, what: str, change: Callable[[], object]) -> bool:
        """Run ``change`` (a history write); a failure (HistoryError, sqlite errors) is said in the
        status bar as "Could not ``what``". The list is shown again either way. True when written."""
        ok = True
        try:
            change()
        except Exception as exc:  # noqa: BLE001 - said in the status bar
            self.window.statusBar().showMessage(f"Could not {what}: {exc}", 8000)
            ok = False
        self.refresh_conversations()
        return ok

    def rename_conversation(self, cid: int, title: str) -> None:
        self.write_history("rename", lambda: self.state.history.rename_conversation(cid, title))

    def pin_conversations(self, ids: list[int], pinned: bool) -> None:
        """Pin the conversations to the top of the list (under "Pinned"), or unpin them."""
        set_pinned = self.state.history.set_pinned
        self.write_history("pin" if pinned else "unpin", each_chat(ids, lambda cid: set_pinned(cid, pinned)))

    def delete_conversation(self, cid: int) -> None:
        self.delete_conversations([cid])

    def delete_conversations(self, ids: list[int]) -> None:
        """Delete the chats ``ids`` (the open one among them: a new chat) to the trash: *Undo*
        puts them back, and File -> *Recently deleted…* for ``TRASH_DAYS`` days."""
        if self.state.conversation_id in ids:
            self.new_chat()
        gone: list[Any] = []
        history = self.state.history
        self.write_history("delete", each_chat(ids, lambda cid: gone.append(history.trash_conversation(cid))))
        self.undo.deleted_now(gone)

    def step_conversation(self, delta: int) -> int | None:
        """Alt+Down (``delta`` 1) / Alt+Up (-1): open the next or the previous conversation in the
        list as it shows them (none open: the first); at an end, stay. The id opened, or None."""
        ids = self.list.shown_ids()  # (not those in a folded folder)
        if not ids:
            return None
        cid = self.state.conversation_id
        at = ids.index(cid) + delta if cid in ids else 0
        if not 0 <= at < len(ids) or ids[at] == cid:
            return None
        self.open_conversation(ids[at])
        return ids[at]

    def find_in_chat(self, text: str | None = None) -> None:
        """Ctrl+F: the chat page, with its find bar open (``text``: find this)."""
        self.pages.show_chat_page()
        self.find_bar.open(text)

    def _open_found(self, cid: int) -> None:
        """A conversation clicked in the list (or Enter on it): opened, unless it is the open one
        (read again, its reply being written would be stopped). When the list shows a search's
        results, the find bar shows where the search's words are in it (the whole search, else its
        longest word; no bar when the chat was found by its title or folder alone)."""
        query = " ".join(self.list.search.text().split())
        if cid != self.state.conversation_id:
            self.open_conversation(cid)
        else:
            self.pages.show_chat_page()
        if query and self.state.conversation_id == cid:
            self.find_in_chat(query)
            if not self.find_bar.matches and " " in query:
                self.find_in_chat(max(query.split(), key=len))
            if not self.find_bar.matches:
                self.find_bar.close_bar()

    def open_conversation(self, cid: int) -> None:
        if self.state.busy:
            self.sig_stop_requested.emit()
        try:
            conv = self.state.history.load_conversation(cid)
        except Exception as exc:  # noqa: BLE001 - HistoryError and sqlite errors: said in the status bar
            self.window.statusBar().showMessage(f"Could not open the conversation: {exc}", 8000)
            return
        self.state.conversation_id = cid
        self._remember_conversation(cid)
        self._show_system(conv.system_prompt)
        self.list.select(cid)
        self.chat.clear()
        self.tool_panel.clear()
        self.status.reset_stats()
        # as it looked live: stats, cut-off mark and Continue, how each call was decoded, versions
        for view in self.chat.show_records(conv.messages, conv.versions):
            self.tool_panel.show_call(view)
        self.worker.open_conversation(cid, conv.messages, conv.system_prompt)
        from app.ui.chat_model_hint import chat_model

        self.chat_model = chat_model(conv.messages)
        self.show_model_hint()
        self.pages.show_chat_page()

    def show_model_hint(self) -> None:
        """The line above a chat written with another model than the one loaded (the window calls
        it again when a model is loaded)."""
        chat = self.chat_model
        self.model_hint.show_for(
            None if chat is None or self.state.uses_model(chat.path, chat.made) else chat
        )

    def open_new(self, cid: int) -> None:
        """Open a conversation just made (a branch, an import): listed, whatever was searched."""
        self.list.search.clear()
        self.refresh_conversations()
        self.open_conversation(cid)

    def duplicate_conversation(self, cid: int) -> int | None:
        """The list's Duplicate: a whole copy of the chat, "… (copy)", opened; the first is kept.
        The open chat is not copied while its reply is being written (the copy would hold half of
        it), and while a reply is being written the copy is listed but not opened (opening another
        chat stops that reply). The copy's id, or None."""
        st = self.state
        if st.busy and cid == st.conversation_id:
            msg = "Could not duplicate the chat: its reply is being written. Stop it or wait for it first."
            self.window.statusBar().showMessage(msg, 8000)
            return None
        try:
            copy = st.history.duplicate_conversation(cid)
        except Exception as exc:  # noqa: BLE001 - HistoryError and sqlite errors: said in the status bar
            self.window.statusBar().showMessage(f"Could not duplicate the chat: {exc}", 8000)
            self.refresh_conversations()  # (one deleted elsewhere goes from the list)
            return None
        if st.busy:
            self.list.search.clear()
            self.refresh_conversations()
        else:
            self.open_new(copy.id)
        self.window.statusBar().showMessage(
            f"Duplicated as “{copy.title}”: the first chat is kept as it was", 8000
        )
        return copy.id

    def branch_conversation(self, user_index: int) -> bool:
        """A reply's Branch: a new conversation with the open one's messages through the reply to
        its ``user_index``-th user message, opened to go on from there; the open one is kept."""
        cid = self.state.conversation_id
        if cid is None or user_index < 0 or self.state.busy:
            return False
        try:
            new = self.state.history.branch_conversation(cid, user_index)
        except Exception as exc:  # noqa: BLE001 - HistoryError and sqlite errors: said in the status bar
            self.window.statusBar().showMessage(f"Could not branch the conversation: {exc}", 8000)
            return False
        self.open_new(new.id)
        self.window.statusBar().showMessage(
            f"Branched into “{new.title}”: the first chat is kept as it was", 8000
        )
        self.compose.setFocus()
        return True

    # -- the chat's own system prompt ----------------------------------------------------------

    def _show_system(self, own: str | None) -> None:
        self.state.chat_system = own or None
        self.system_bar.show_prompt(self.state.chat_system)

    def edit_system_prompt(self) -> None:
        """Edit… on the line above the chat: the dialog, showing what the chat uses now."""
        from app.ui.chat_system import SystemPromptDialog

        st = self.state
        in_use = st.config_for(st.model_info.path).system_prompt if st.model_info is not None else ""
        dlg = SystemPromptDialog(st.chat_system, in_use or st.settings.chat.system_prompt, self.window)
        dlg.sig_chosen.connect(self.set_system_prompt)
        self.system_dialog = dlg
        dlg.open()

    def set_system_prompt(self, text: str | None) -> bool:
        """The open chat's own system prompt from its next turn on (None: the one in Settings or
        the made model's); kept with the conversation (a new chat keeps it once it is saved)."""
        cid = self.state.conversation_id
        if cid is not None:
            try:
                self.state.history.set_system_prompt(cid, text)
            except Exception as exc:  # noqa: BLE001 - HistoryError and sqlite errors: said in the status bar
                self.window.statusBar().showMessage(f"Could not keep the system prompt: {exc}", 8000)
                return False
        self._show_system(text)
        self.worker.set_chat_system(self.state.chat_system)
        said = "its own system prompt" if self.state.chat_system else "the system prompt in Settings again"
        self.window.statusBar().showMessage(f"This chat uses {said}, from its next reply on.", 8000)
        return True

    def ensure_conversation(self, first_text: str) -> int:
        if self.state.conversation_id is None:
            title = title_from_message(first_text)
            path = self.state.model_info.path if self.state.model_info else None
            conv = self.state.history.create_conversation(
                title,
                model_path=path,
                settings=self.state.config_for(path).__dict__,
                system_prompt=self.state.chat_system,  # one given before the first message
            )
            self.state.conversation_id = conv.id
            self.first_titles[conv.id] = title  # (a later title from the model replaces only this one)
            self._remember_conversation(conv.id)
            self.folders.file_new(conv.id)  # started in a folder: it goes there
            self.refresh_conversations()
            self.list.select(conv.id)
        return self.state.conversation_id


def _others_offers() -> list[tuple[str, str, str]]:
    """What an empty list offers a person who comes from another app: a line for each that keeps
    chats here ("Import your 12 chats from LM Studio…"), with its key and tooltip (the apps'
    folders' listings are only looked at, nothing is read)."""
    from app.storage.backup import offered_chats

    return [
        (
            app.key,
            f"Import your {n} chat{'' if n == 1 else 's'} from {app.name}…",
            f"Bring the chats {app.name} keeps into Callisto (File → Import from {app.name}…)",
        )
        for app, n in offered_chats()
    ]
