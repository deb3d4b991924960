"""The conversation list's folders (a part of the main window): a conversation filed in a folder
or taken out, a folder renamed or removed, and which folders are folded (kept in the settings,
``window.collapsed_folders``). History is written only through ``History``'s folder methods."""

from __future__ import annotations

from typing import TYPE_CHECKING

from app.ui.window_part import WindowKit, WindowPart, each_chat

if TYPE_CHECKING:
    from app.ui.window_conversations import ConversationsController

__all__ = ["FoldersController"]


class FoldersController(WindowPart):
    """Answers the list's folder actions; a failure (a name refused, the history unwritable) is
    said in the status bar and changes nothing."""

    def __init__(self, kit: WindowKit, *, conversations: ConversationsController) -> None:
        super().__init__(kit)
        self.conversations = conversations
        self.list = lst = conversations.list
        lst.collapsed = set(self.state.settings.window.collapsed_folders)
        lst.sig_folder.connect(self.move)
        lst.sig_rename_folder.connect(self.rename)
        lst.sig_remove_folder.connect(self.remove)
        lst.sig_collapsed.connect(self._keep_collapsed)
        lst.sig_new_in_folder.connect(self.new_chat_in)
        #: the folder the new chat goes in once it is saved (a folder's "New chat here")
        self.pending: str | None = None
        conversations.chat.sig_cleared.connect(self._drop_pending)  # another chat opened

    def _done(self, what: str, change: object) -> bool:
        """Run ``change`` (a history write); a failure is said in the status bar. The list is
        shown again either way, and folded names of folders no longer there are forgotten."""
        ok = True
        try:
            change()  # type: ignore[operator]
        except Exception as exc:  # noqa: BLE001 - ValueError (the name), HistoryError, sqlite errors
            self.window.statusBar().showMessage(f"Could not {what}: {exc}", 8000)
            ok = False
        try:
            there = set(self.state.history.folders())
        except Exception:  # noqa: BLE001 - the refresh below says it
            there = self.list.collapsed
        self._keep_collapsed(sorted(self.list.collapsed & there))
        self.conversations.refresh_conversations()
        return ok

    def _name(self, text: str, what: str) -> str | None:
        """``text`` as a folder's name is kept, or None after saying why it is refused."""
        from app.storage.history import folder_name

        try:
            return folder_name(text)
        except ValueError as exc:
            self.window.statusBar().showMessage(f"Could not {what}: {exc}", 8000)
            return None

    def move(self, ids: list[int], folder: str | None) -> bool:
        """File the conversations in ``folder`` (unfolded, so they are seen there), or in none
        (None): one write, the list shown again once."""
        what = "move the chat" if len(ids) == 1 else f"move {len(ids)} chats"
        if folder is not None:
            folder = self._name(folder, what)
            if folder is None:
                return False
            self.list.collapsed.discard(folder)
        set_folder = self.state.history.set_folder
        return self._done(what, each_chat(ids, lambda cid: set_folder(cid, folder)))

    def rename(self, old: str, new: str) -> bool:
        """Name the folder ``old`` ``new`` (folded or not as it was)."""
        name = self._name(new, "rename the folder")
        if name is None:
            return False
        if old in self.list.collapsed:
            self.list.collapsed = (self.list.collapsed - {old}) | {name}
        return self._done("rename the folder", lambda: self.state.history.rename_folder(old, name))

    def remove(self, name: str) -> bool:
        """The folder's conversations go back among the others (none is deleted)."""
        self.list.collapsed.discard(name)
        return self._done("remove the folder", lambda: self.state.history.remove_folder(name))

    def new_chat_in(self, name: str) -> None:
        """A new chat that goes in the folder ``name`` when its first message is sent."""
        self.conversations.new_chat()
        self.pending = name
        self.window.statusBar().showMessage(f"New chat: it goes in “{name}” once you send a message.", 8000)

    def _drop_pending(self) -> None:
        self.pending = None

    def file_new(self, cid: int) -> None:
        """The new chat ``cid`` was just saved: in the folder it was started in, if any."""
        name, self.pending = self.pending, None
        if name is not None:
            self.move([cid], name)

    def _keep_collapsed(self, names: list[str]) -> None:
        self.list.collapsed = set(names)
        if self.state.settings.window.collapsed_folders != names:
            self.state.settings.window.collapsed_folders = names
            self.save_settings()
