"""Several conversations chosen at once in the real window's list, over real SQLite and real files:
Ctrl+click and Shift+click choose (nothing opens), and the chosen ones are moved to a folder,
dragged onto one, exported to a new folder or deleted (after one question) together; a plain
click opens one chat and chooses it alone again."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QPointF, Qt
from PySide6.QtGui import QDropEvent
from PySide6.QtWidgets import QMenu, QMessageBox

from tests.support.history import history_of_chats
from tests.support.host_hold import hold
from tests.ui.turns import alphabet_window

TIMEOUT = 30_000
CTRL, SHIFT = Qt.KeyboardModifier.ControlModifier, Qt.KeyboardModifier.ShiftModifier


def _click(qtbot, lst, cid: int, modifier=Qt.KeyboardModifier.NoModifier) -> None:
    rect = lst.list.visualItemRect(lst.item_for(cid))
    qtbot.mouseClick(lst.list.viewport(), Qt.MouseButton.LeftButton, modifier, rect.center())


def _texts(menu: QMenu) -> list[str]:
    return [a.text() for a in menu.actions() if not a.isSeparator()]


def _action(menu: QMenu, text: str):
    (action,) = [a for a in menu.actions() if a.text() == text]
    return action


def _window(qtbot, make_window):
    h, ids = history_of_chats(["Garden", "Taxes", "Trip", "Zoo"])
    w = make_window(None, history=h)
    with qtbot.waitActive(w):
        w.activateWindow()
    return w, h, ids


def test_ctrl_and_shift_click_choose_several_and_a_plain_click_opens_one(qtbot, make_window):
    w, _h, (garden, taxes, trip, zoo) = _window(qtbot, make_window)
    lst = w.conversations_ctl.list
    assert lst.ids() == [zoo, trip, taxes, garden]
    _click(qtbot, lst, zoo)
    assert w.conversation_id == zoo and lst.selected_ids() == [zoo]
    _click(qtbot, lst, taxes, CTRL)
    assert lst.selected_ids() == [zoo, taxes] and w.conversation_id == zoo  # nothing opened
    _click(qtbot, lst, garden, SHIFT)  # from the last clicked to this one, the others kept
    assert lst.selected_ids() == [zoo, taxes, garden] and w.conversation_id == zoo
    assert lst.btn_delete.text() == "Delete 3" and not lst.btn_rename.isEnabled()
    _click(qtbot, lst, taxes, CTRL)  # Ctrl+click on a chosen one: out of the chosen
    assert lst.selected_ids() == [zoo, garden] and w.conversation_id == zoo
    assert lst.btn_delete.text() == "Delete 2"
    w.conversations_ctl.refresh_conversations()  # the list shown again (a reply saved): still chosen
    assert lst.selected_ids() == [zoo, garden] and lst.btn_delete.text() == "Delete 2"
    _click(qtbot, lst, zoo, CTRL)
    _click(qtbot, lst, taxes, CTRL)  # the open chat left out of those chosen
    w.conversations_ctl.refresh_conversations()
    assert lst.selected_ids() == [taxes, garden] and w.conversation_id == zoo
    _click(qtbot, lst, zoo, CTRL)
    _click(qtbot, lst, taxes, CTRL)
    _click(qtbot, lst, trip)  # a plain click: that chat, alone
    assert w.conversation_id == trip and lst.selected_ids() == [trip]
    assert lst.btn_delete.text() == "Delete" and lst.btn_rename.isEnabled()


def test_the_chosen_chats_move_to_a_folder_together_from_their_menu_or_by_a_drag(qtbot, make_window):
    w, h, (garden, taxes, trip, zoo) = _window(qtbot, make_window)
    lst = w.conversations_ctl.list
    _click(qtbot, lst, zoo)
    _click(qtbot, lst, taxes, CTRL)
    menu = lst.menu_for(lst.item_for(taxes))
    assert _texts(menu) == [
        "Pin 2 chats to top",
        "Move 2 chats to folder",
        "Name 2 chats with the model",
        "Copy 2 chats as Markdown",
        "Export 2 chats…",
        "Delete 2 chats…",
    ]
    move = _action(menu, "Move 2 chats to folder").menu()
    assert _texts(move) == ["New folder…"]  # no folder yet, and none of them in one
    _action(move, "New folder…").trigger()
    lst.folder_dialog.setTextValue("Errands")
    lst.folder_dialog.accept()
    assert h.get_conversation(zoo).folder == "Errands" and h.get_conversation(taxes).folder == "Errands"
    assert lst.headers() == ["▾ Errands (2)", "Today"]

    # dragged together: Trip and one already in Errands onto the folder's line; then out of it
    lst.list.clearSelection()
    for cid in (trip, taxes):
        lst.item_for(cid).setSelected(True)
    mime = lst.list.mimeData(lst.list.selectedItems())
    target = lst.list.visualItemRect(lst.folder_item("Errands")).center()
    drop = QDropEvent(
        QPointF(target),
        Qt.DropAction.MoveAction,
        mime,
        Qt.MouseButton.LeftButton,
        Qt.KeyboardModifier.NoModifier,
    )
    lst.list.dropEvent(drop)
    assert drop.isAccepted() and h.get_conversation(trip).folder == "Errands"
    assert lst.headers() == ["▾ Errands (3)", "Today"]
    assert lst.selected_ids() == [trip, taxes]  # still chosen where they went, as a file manager does

    lst.list.clearSelection()
    for cid in (trip, zoo):
        lst.item_for(cid).setSelected(True)
    move = _action(lst.menu_for(lst.item_for(zoo)), "Move 2 chats to folder").menu()
    assert _texts(move) == ["Errands", "New folder…", "Remove from “Errands”"]
    assert not _action(move, "Errands").isEnabled()
    _action(move, "Remove from “Errands”").trigger()
    assert [h.get_conversation(c).folder for c in (garden, taxes, trip, zoo)] == [None, "Errands", None, None]


def test_the_chosen_chats_are_copied_as_markdown_one_after_the_other(qtbot, make_window):
    from PySide6.QtGui import QGuiApplication

    w, _h, (garden, taxes, trip, zoo) = _window(qtbot, make_window)
    lst = w.conversations_ctl.list
    _click(qtbot, lst, zoo)
    _click(qtbot, lst, garden, CTRL)
    _action(lst.menu_for(lst.item_for(garden)), "Copy 2 chats as Markdown").trigger()
    text = QGuiApplication.clipboard().text()
    assert text.startswith("# Zoo\n") and "\n\n---\n\n# Garden\n" in text and "notes on Garden" in text
    assert "Taxes" not in text and w.statusBar().currentMessage() == "Copied 2 chats as Markdown"


def test_the_chosen_chats_are_exported_together_to_a_new_folder(qtbot, make_window, tmp_path):
    w, _h, (garden, taxes, trip, zoo) = _window(qtbot, make_window)
    lst = w.conversations_ctl.list
    _click(qtbot, lst, garden)
    _click(qtbot, lst, trip, CTRL)
    _action(lst.menu_for(lst.item_for(trip)), "Export 2 chats…").trigger()
    dlg = w.conversations_ctl.exports.export_dialog
    assert dlg.isVisible() and dlg.windowTitle() == "Export 2 chats to a new folder in…"
    dlg.fileSelected.emit(str(tmp_path))
    dlg.reject()
    qtbot.waitUntil(
        lambda: w.statusBar().currentMessage().startswith("Exported 2 chats to "), timeout=TIMEOUT
    )
    folder = Path(w.statusBar().currentMessage().removeprefix("Exported 2 chats to "))
    assert sorted(p.name for p in folder.iterdir()) == ["Garden.json", "Trip.json"]


def test_the_chosen_chats_are_deleted_together_after_one_question(qtbot, make_window):
    w, h, (garden, taxes, trip, zoo) = _window(qtbot, make_window)
    lst = w.conversations_ctl.list
    _click(qtbot, lst, trip)  # the open one, among them
    _click(qtbot, lst, zoo, CTRL)
    _click(qtbot, lst, garden, CTRL)
    lst.list.setFocus()
    qtbot.keyClick(lst.list, Qt.Key.Key_Delete)
    box = lst.confirm_box
    assert isinstance(box, QMessageBox) and box.isVisible() and box.windowTitle() == "Delete conversations"
    assert box.text() == (
        "Delete these 3 conversations and all their messages?\n\nThey stay in Recently deleted (File menu) "
        "for 30 days; Undo in the status bar brings them back now."
    )
    box.button(QMessageBox.StandardButton.Cancel).click()
    assert len(h.list_conversations()) == 4  # Cancel: nothing

    _action(lst.menu_for(lst.item_for(zoo)), "Delete 3 chats…").trigger()
    box = lst.confirm_box
    (delete,) = [b for b in box.buttons() if b.text() == "Delete"]
    delete.click()
    assert [c.id for c in h.list_conversations()] == [taxes] and lst.ids() == [taxes]
    assert w.conversation_id is None and w.windowTitle() == "Callisto"  # the open one went: a new chat


def test_a_new_chat_leaves_nothing_chosen_behind(qtbot, make_window):
    w, _h, (garden, taxes, trip, zoo) = _window(qtbot, make_window)
    lst = w.conversations_ctl.list
    _click(qtbot, lst, zoo)
    _click(qtbot, lst, trip, CTRL)
    w.new_chat()
    assert lst.selected_ids() == [] and not lst.btn_delete.isEnabled() and lst.btn_delete.text() == "Delete"


def test_the_chosen_chats_are_pinned_and_unpinned_together(qtbot, make_window):
    w, h, (garden, taxes, trip, zoo) = _window(qtbot, make_window)
    lst = w.conversations_ctl.list

    def choose(*ids: int):
        lst.list.clearSelection()
        for cid in ids:
            lst.item_for(cid).setSelected(True)
        return lst.menu_for(lst.item_for(ids[0]))

    _click(qtbot, lst, garden)
    _click(qtbot, lst, trip, CTRL)
    _action(lst.menu_for(lst.item_for(trip)), "Pin 2 chats to top").trigger()
    assert lst.pinned_ids() == [trip, garden] and h.get_conversation(garden).pinned
    _action(choose(zoo, trip), "Pin 2 chats to top").trigger()  # one not pinned: both are pinned
    assert sorted(lst.pinned_ids()) == sorted([garden, trip, zoo])
    _action(choose(garden, trip), "Unpin 2 chats").trigger()  # all pinned: unpinned together
    assert lst.pinned_ids() == [zoo] and not h.get_conversation(trip).pinned
    assert not h.get_conversation(taxes).pinned


def test_the_chosen_chats_are_written_together_and_the_list_read_once(qtbot, make_window, monkeypatch):
    """Moving, pinning or deleting the chats chosen is one history write: the list is read again
    once, not once a chat (a few hundred chosen would read it a few hundred times on the UI
    thread). A chat deleted elsewhere meanwhile stops none of the others, and is said."""
    w, h, (garden, taxes, trip, zoo) = _window(qtbot, make_window)
    lst = w.conversations_ctl.list
    reads: list[int] = []
    read = h.list_conversations

    def counted():
        reads.append(1)
        return read()

    monkeypatch.setattr(h, "list_conversations", counted)

    def choose(*ids: int) -> QMenu:
        lst.list.clearSelection()
        for cid in ids:
            lst.item_for(cid).setSelected(True)
        return lst.menu_for(lst.item_for(ids[0]))

    move = _action(choose(zoo, trip, taxes), "Move 3 chats to folder").menu()
    _action(move, "New folder…").trigger()
    lst.folder_dialog.setTextValue("Errands")
    lst.folder_dialog.accept()
    assert [h.get_conversation(c).folder for c in (taxes, trip, zoo)] == ["Errands"] * 3
    assert len(reads) == 1 and lst.headers() == ["▾ Errands (3)", "Today"]

    reads.clear()
    _action(choose(garden, trip, zoo), "Pin 3 chats to top").trigger()
    assert len(reads) == 1 and sorted(lst.pinned_ids()) == sorted([garden, trip, zoo])

    # one of those chosen is deleted elsewhere (another window, the CLI) before the move
    reads.clear()
    move = _action(choose(garden, trip, zoo), "Move 3 chats to folder").menu()
    h.delete_conversation(trip)
    _action(move, "Out of their folders").trigger()
    assert len(reads) == 1
    assert h.get_conversation(zoo).folder is None and h.get_conversation(garden).folder is None
    assert f"Could not move 3 chats: no conversation with id {trip}" in w.statusBar().currentMessage()
    assert trip not in lst.ids() and lst.headers() == ["Pinned", "▾ Errands (1)"]

    reads.clear()
    choose(garden, zoo)
    lst.delete_selected()
    (delete,) = [b for b in lst.confirm_box.buttons() if b.text() == "Delete"]
    delete.click()
    assert len(reads) == 1 and lst.ids() == [taxes]


def test_ctrl_a_in_the_list_chooses_every_chat_and_esc_leaves_the_open_one(qtbot, make_window):
    w, h, (garden, taxes, trip, zoo) = _window(qtbot, make_window)
    h.set_folder(garden, "Old")
    w.conversations_ctl.refresh_conversations()
    lst = w.conversations_ctl.list
    _click(qtbot, lst, trip)
    qtbot.keyClick(lst.list, Qt.Key.Key_A, CTRL)
    assert sorted(lst.selected_ids()) == sorted([garden, taxes, trip, zoo]) and w.conversation_id == trip
    assert lst.btn_delete.text() == "Delete 4"
    assert _texts(lst.menu_for(lst.item_for(zoo)))[0] == "Pin 4 chats to top"
    qtbot.keyClick(lst.list, Qt.Key.Key_Escape)
    assert lst.selected_ids() == [trip] and lst.btn_delete.text() == "Delete"
    # another chat opened another way (Alt+Down) chooses it alone: Delete deletes only it
    qtbot.keyClick(lst.list, Qt.Key.Key_A, CTRL)
    opened = w.conversations_ctl.step_conversation(1)
    assert opened not in (None, trip) and lst.selected_ids() == [opened]
    assert lst.btn_delete.text() == "Delete"


def test_esc_leaves_the_chosen_before_it_stops_the_reply(qtbot, make_window):
    """While a reply is written: Esc in the list with several chosen leaves them (the reply goes
    on); Esc again, one chosen, is the window's Stop. The turn waits behind a job holding the
    engine's thread, so it is surely being written when each key is pressed."""
    h, (garden, taxes, trip) = history_of_chats(["Garden", "Taxes", "Trip"])
    w = alphabet_window(qtbot, make_window, history=h)
    lst = w.conversations_ctl.list
    lst.sig_open.emit(garden)

    def reply_with_keys(*keys: int) -> str:
        release = hold(w.worker.host, owner="check")
        try:
            w.compose.setPlainText("and the roses?")
            assert w.send() and w.busy
            for cid in (taxes, trip):
                lst.item_for(cid).setSelected(True)
            lst.list.setFocus()
            for n, key in enumerate(keys):
                qtbot.keyClick(lst.list, key)
                if n == 0:
                    assert lst.selected_ids() == [garden] and w.busy  # left the chosen only
        finally:
            with qtbot.waitSignal(w.sig_turn_done, timeout=30_000) as blocker:
                release.set()
        return blocker.args[0].finish_reason

    assert reply_with_keys(Qt.Key.Key_Escape) == "length"  # written to its end
    assert reply_with_keys(Qt.Key.Key_Escape, Qt.Key.Key_Escape) == "cancelled"
