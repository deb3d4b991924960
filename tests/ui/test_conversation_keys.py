"""The conversation list from the keyboard, in the real window over real SQLite: Alt+Down / Alt+Up
open the next or the previous conversation as the list shows them (the pinned first, a search's
results), from none open the first, and stay at the ends; in the list, Up and Down move the cursor
over the chats and the folders' lines, Left and Right fold and unfold a folder as a tree's keys do,
Enter opens a chat, F2 renames, the Menu key opens the line's menu. A click on the open chat does
not stop its reply."""

from __future__ import annotations

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QApplication, QMenu

from app.storage.history import History, TurnMessage
from tests.support.history import history_of_chats
from tests.support.host_hold import hold
from tests.ui.test_pinned import CHAT_MENU
from tests.ui.turns import alphabet_window


def test_alt_down_and_up_walk_the_conversation_list(qtbot, make_window):
    h = History()
    ids = []
    for title in ("Garden", "Taxes", "Trip"):
        cid = h.create_conversation(title).id
        h.record_turn(cid, None, [TurnMessage("user", f"about {title}"), TurnMessage("assistant", "ok")])
        ids.append(cid)
    garden, taxes, trip = ids
    w = make_window(None, history=h)
    with qtbot.waitActive(w):
        w.activateWindow()
    w.compose.setFocus()
    lst = w.conversations_ctl.list
    assert lst.ids() == [trip, taxes, garden] and w.conversation_id is None

    def key(k) -> int | None:
        qtbot.keyClick(w.compose, k, Qt.KeyboardModifier.AltModifier)
        return w.conversation_id

    assert key(Qt.Key.Key_Down) == trip  # none open: the first
    assert key(Qt.Key.Key_Down) == taxes
    assert [m.text for m in w.chat.user_messages()] == ["about Taxes"]
    assert key(Qt.Key.Key_Down) == garden
    assert key(Qt.Key.Key_Down) == garden  # the end: it stays
    assert key(Qt.Key.Key_Up) == taxes
    w.conversations_ctl.pin_conversations([garden], True)  # the list's order: the pinned first
    assert lst.ids() == [garden, trip, taxes]
    assert key(Qt.Key.Key_Up) == trip
    assert key(Qt.Key.Key_Up) == garden
    assert key(Qt.Key.Key_Up) == garden
    w.conversations_ctl.search_conversations("Trip")  # a search: its results
    assert key(Qt.Key.Key_Down) == trip


def _keys(qtbot, lst, *names: str) -> str | None:
    """Press each key (``"Left"``, ``"Return"``…) in the list; the text of the current line after."""
    for name in names:
        qtbot.keyClick(lst.list, getattr(Qt.Key, f"Key_{name}"))
    it = lst.list.currentItem()
    return it.text() if it is not None else None


def test_the_list_s_keys_walk_fold_and_open_as_a_tree_s(qtbot, make_window):
    h, (garden, taxes, trip) = history_of_chats(["Garden", "Taxes", "Trip"])
    for cid in (garden, taxes):
        h.set_folder(cid, "Home")
    w = make_window(None, history=h)
    with qtbot.waitActive(w):
        w.activateWindow()
    lst = w.conversations_ctl.list
    lst.sig_open.emit(trip)
    lst.list.setFocus()
    assert lst.headers() == ["▾ Home (2)", "Today"] and lst.list.currentItem() is lst.item_for(trip)

    # Up and Down move the cursor over the chats and the folder's line (shown selected); none opens
    assert _keys(qtbot, lst, "Up", "Up") == "Taxes" and w.conversation_id == trip
    assert _keys(qtbot, lst, "Up") == "▾ Home (2)"
    assert lst.list.selectedItems() == [lst.folder_item("Home")]  # the cursor is seen there
    assert lst.btn_rename.isEnabled() and not lst.btn_delete.isEnabled()

    # on the folder's line: Left folds, Right unfolds, then goes to its first chat; Left goes back
    assert _keys(qtbot, lst, "Left") == "▸ Home (2)"  # the line stays the current one
    assert lst.shown_ids() == [trip] and w.settings.window.collapsed_folders == ["Home"]
    assert _keys(qtbot, lst, "Left") == "▸ Home (2)"  # folded already: nothing
    assert _keys(qtbot, lst, "Down") == "Trip"  # over the chats folded away
    assert _keys(qtbot, lst, "Up", "Right") == "▾ Home (2)"
    assert lst.shown_ids() == [taxes, garden, trip] and w.settings.window.collapsed_folders == []
    assert _keys(qtbot, lst, "Right") == "Taxes"
    assert _keys(qtbot, lst, "Down", "Left") == "▾ Home (2)"  # from a chat in it: the folder's line
    assert _keys(qtbot, lst, "Return") == "▸ Home (2)"  # Enter and Space fold and unfold
    assert _keys(qtbot, lst, "Space") == "▾ Home (2)"
    assert _keys(qtbot, lst, "Down", "Down", "Down", "Left") == "Trip"  # a chat in none: Left stays
    assert w.conversation_id == trip

    # Enter opens the chat the cursor is on
    assert _keys(qtbot, lst, "Up", "Return") == "Garden"
    assert w.conversation_id == garden and [m.text for m in w.chat.user_messages()] == ["notes on Garden"]

    # F2 on the folder's line, or the Rename button, renames the folder (the dialog)
    assert _keys(qtbot, lst, "Up", "Up", "F2") == "▾ Home (2)"
    dialog = lst.folder_dialog
    assert dialog is not None and dialog.isVisible() and dialog.textValue() == "Home"
    dialog.setTextValue("House")
    dialog.accept()
    assert lst.headers() == ["▾ House (2)", "Today"] and h.folders() == ["House"]
    lst.list.setCurrentItem(lst.folder_item("House"))
    lst.btn_rename.click()
    assert lst.folder_dialog is not dialog and lst.folder_dialog.textValue() == "House"
    lst.folder_dialog.reject()

    # a search's results are shown unfolded: the folding keys change nothing there
    lst.search.setText("notes")
    w.conversations_ctl.search_conversations("notes")
    lst.list.setCurrentItem(lst.folder_item("House"))
    shown = lst.shown_ids()
    assert sorted(shown) == sorted([garden, taxes, trip])
    assert _keys(qtbot, lst, "Left") == "▾ House (2)" and lst.shown_ids() == shown
    assert w.settings.window.collapsed_folders == []


def test_the_menu_key_opens_the_current_line_s_menu(qtbot, make_window):
    h, (garden, trip) = history_of_chats(["Garden", "Trip"])
    h.set_folder(garden, "Home")
    w = make_window(None, history=h)
    with qtbot.waitActive(w):
        w.activateWindow()
    lst = w.conversations_ctl.list
    lst.list.setFocus()
    seen: list[list[str]] = []

    def read_and_close() -> None:
        menu = QApplication.activePopupWidget()
        assert isinstance(menu, QMenu)
        seen.append([a.text() for a in menu.actions() if not a.isSeparator()])
        menu.close()

    for line, shift_f10 in ((lst.folder_item("Home"), False), (lst.item_for(trip), True)):
        lst.list.setCurrentItem(line)
        QTimer.singleShot(0, read_and_close)
        if shift_f10:
            qtbot.keyClick(lst.list, Qt.Key.Key_F10, Qt.KeyboardModifier.ShiftModifier)
        else:
            qtbot.keyClick(lst.list, Qt.Key.Key_Menu)
    assert seen == [
        ["New chat here", "Fold", "Rename folder…", "Remove folder (keep its chats)"],
        CHAT_MENU,
    ]


def test_a_click_on_the_open_chat_does_not_stop_its_reply(qtbot, make_window):
    """The chat whose reply is being written, clicked (or Enter) in the list: it is not read again,
    so its reply goes on (another chat clicked stops it, as before). The turn waits behind a job
    that holds the engine's thread, so it is surely being written when the chat is clicked."""
    h, (garden,) = history_of_chats(["Garden"])
    w = alphabet_window(qtbot, make_window, history=h)
    lst = w.conversations_ctl.list
    lst.sig_open.emit(garden)
    stops: list[bool] = []
    w.conversations_ctl.sig_stop_requested.connect(lambda: stops.append(True))
    release = hold(w.worker.host, owner="check")
    try:
        w.compose.setPlainText("and the roses?")
        assert w.send() and w.busy
        qtbot.mouseClick(
            lst.list.viewport(),
            Qt.MouseButton.LeftButton,
            pos=lst.list.visualItemRect(lst.item_for(garden)).center(),
        )
        lst.list.setFocus()
        qtbot.keyClick(lst.list, Qt.Key.Key_Return)
        assert w.busy and stops == [] and w.conversation_id == garden
        assert [m.text for m in w.chat.user_messages()] == ["notes on Garden", "and the roses?"]
    finally:
        with qtbot.waitSignal(w.sig_turn_done, timeout=30_000) as blocker:
            release.set()
    assert blocker.args[0].finish_reason == "length" and w.chat.current_assistant().text() == "abc"
