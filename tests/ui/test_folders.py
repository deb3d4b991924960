"""Folders in the real window's conversation list, over a real history: a conversation's menu files
it in a new folder (asked by a dialog that does not block) or one there is, and takes it out; the
folders are listed after the pinned chats and before the days; a click folds a folder (kept in the
settings, so a new window shows it folded), a search shows its matches unfolded, Alt+Down skips
what is folded away; a folder's menu renames it (folded as it was) or removes it (its chats kept);
a name refused is said and changes nothing; a conversation dragged onto a folder moves there, onto
the chats in none moves out, and files dragged from outside are still the window's."""

from __future__ import annotations

from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDragMoveEvent, QDropEvent
from PySide6.QtWidgets import QApplication, QMenu

from app.storage.history import MAX_FOLDER_NAME, History
from app.storage.settings import load_settings
from app.ui.conversation_folders import fill_folder_menu
from app.ui.conversation_list import PINNED
from tests.support.drag import drag_event
from tests.support.history import history_of_chats


def _move_menu(w, cid: int) -> QMenu:
    """Conversation ``cid``'s "Move to folder" menu, as the right-click shows it."""
    lst = w.conversations_ctl.list
    menu = QMenu(lst)
    lst.fill_menu(menu, lst.item_for(cid))
    (move,) = [a for a in menu.actions() if a.text() == "Move to folder"]
    sub = move.menu()
    assert sub is not None
    w._kept_menu = menu  # (the submenu lives as long as its menu)
    return sub


def _texts(menu: QMenu) -> list[str]:
    return [a.text() if not a.isSeparator() else "—" for a in menu.actions()]


def _action(menu: QMenu, text: str):
    (action,) = [a for a in menu.actions() if a.text() == text]
    return action


def _answer(w, name: str) -> None:
    """Type ``name`` in the open folder name dialog and press OK."""
    dialog = w.conversations_ctl.list.folder_dialog
    assert dialog is not None and dialog.isVisible() and dialog.objectName() == "folderName"
    dialog.setTextValue(name)
    dialog.accept()


def _click_folder(qtbot, w, name: str) -> None:
    lst = w.conversations_ctl.list
    item = lst.folder_item(name)
    assert item is not None
    qtbot.mouseClick(
        lst.list.viewport(), Qt.MouseButton.LeftButton, pos=lst.list.visualItemRect(item).center()
    )


def test_a_conversation_is_filed_in_a_new_folder_then_in_one_there_is_and_taken_out(qtbot, make_window):
    h, (garden, taxes, trip) = history_of_chats(["Garden", "Taxes", "Trip"])
    w = make_window(None, history=h)
    lst = w.conversations_ctl.list
    before = h.get_conversation(taxes).updated
    sub = _move_menu(w, taxes)
    assert _texts(sub) == ["New folder…"]  # no folder yet
    _action(sub, "New folder…").trigger()
    _answer(w, "  Money   matters ")
    assert lst.headers() == ["▾ Money matters (1)", "Today"]
    assert lst.ids() == [taxes, trip, garden] and h.get_conversation(taxes).folder == "Money matters"
    assert h.get_conversation(taxes).updated == before  # filing is no change to the chat

    sub = _move_menu(w, garden)
    assert _texts(sub) == ["Money matters", "—", "New folder…"]
    _action(sub, "Money matters").trigger()
    assert lst.headers() == ["▾ Money matters (2)", "Today"]
    assert lst.ids() == [taxes, garden, trip]  # in the folder, the latest change first

    sub = _move_menu(w, taxes)  # the folder it is in: checked, not offered again; and the way out
    here = _action(sub, "Money matters")
    assert here.isChecked() and not here.isEnabled()
    assert _texts(sub)[-1] == "Remove from “Money matters”"
    _action(sub, "Remove from “Money matters”").trigger()
    assert lst.headers() == ["▾ Money matters (1)", "Today"] and lst.ids() == [garden, trip, taxes]
    assert h.get_conversation(taxes).folder is None

    # a pinned chat is listed under Pinned (its folder kept for when it is unpinned)
    h.set_pinned(garden, True)
    w.conversations_ctl.refresh_conversations()
    assert lst.headers() == [PINNED, "Today"] and lst.pinned_ids() == [garden]
    assert _action(_move_menu(w, garden), "Money matters").isChecked()
    h.set_pinned(garden, False)
    w.conversations_ctl.refresh_conversations()
    assert lst.headers() == ["▾ Money matters (1)", "Today"]

    # a blank answer is no answer; a name too long is refused, said, and nothing changes
    _action(_move_menu(w, trip), "New folder…").trigger()
    _answer(w, "   ")
    assert h.get_conversation(trip).folder is None
    lst.sig_folder.emit([trip], "x" * (MAX_FOLDER_NAME + 5))
    assert "Could not move the chat" in w.statusBar().currentMessage()
    assert h.get_conversation(trip).folder is None and h.folders() == ["Money matters"]


def test_a_click_folds_a_folder_and_a_new_window_shows_it_folded(qtbot, make_window):
    h, (garden, taxes, trip) = history_of_chats(["Garden", "Taxes", "Trip"])
    for cid in (garden, taxes):
        h.set_folder(cid, "Home")
    w = make_window(None, history=h)
    lst = w.conversations_ctl.list
    assert lst.headers() == ["▾ Home (2)", "Today"] and lst.shown_ids() == [taxes, garden, trip]

    lst.sig_open.emit(trip)
    _click_folder(qtbot, w, "Home")
    assert lst.headers() == ["▸ Home (2)", "Today"]
    assert lst.list.currentItem() is lst.item_for(trip)  # the open chat stays marked
    assert lst.shown_ids() == [trip] and lst.ids() == [taxes, garden, trip]
    assert w.settings.window.collapsed_folders == ["Home"]
    assert load_settings()[0].window.collapsed_folders == ["Home"]  # saved

    # Alt+Up / Alt+Down walk what is shown: from the open chat, nothing above or below it
    assert w.conversations_ctl.step_conversation(-1) is None
    assert w.conversations_ctl.step_conversation(1) is None
    _click_folder(qtbot, w, "Home")
    assert w.conversations_ctl.step_conversation(-1) == garden  # unfolded: the one above
    _click_folder(qtbot, w, "Home")
    assert w.conversations_ctl.step_conversation(1) == trip  # from a chat folded away: the first shown

    # a search shows the folder's matches unfolded; cleared, it is folded again
    lst.search.setText("notes")
    w.conversations_ctl.search_conversations("notes")
    assert lst.headers() == ["▾ Home (2)", "Today"] and lst.shown_ids() == [taxes, garden, trip]
    lst.search.setText("home")  # the folder's name finds its chats
    w.conversations_ctl.search_conversations("home")
    assert lst.headers() == ["▾ Home (2)"] and lst.shown_ids() == [taxes, garden]
    lst.search.setText("")
    w.conversations_ctl.search_conversations("")
    assert lst.headers() == ["▸ Home (2)", "Today"] and lst.shown_ids() == [trip]

    w2 = make_window(None, history=History(), settings=load_settings()[0])
    assert w2.conversations_ctl.list.headers() == ["▸ Home (2)", "Today"]
    assert w2.conversations_ctl.list.shown_ids() == [trip]

    # a chat moved into a folded folder unfolds it: the person sees where it went
    lst.sig_folder.emit([trip], "Home")
    assert lst.headers() == ["▾ Home (3)"] and lst.shown_ids() == [trip, taxes, garden]
    assert w.settings.window.collapsed_folders == []
    _click_folder(qtbot, w, "Home")
    _click_folder(qtbot, w, "Home")  # and a click unfolds it again
    assert lst.headers() == ["▾ Home (3)"] and w.settings.window.collapsed_folders == []


def test_a_folder_is_renamed_and_removed_from_its_menu(qtbot, make_window):
    h, (garden, taxes, trip) = history_of_chats(["Garden", "Taxes", "Trip"])
    for cid in (garden, taxes):
        h.set_folder(cid, "Drafts")
    h.set_folder(trip, "Final")
    w = make_window(None, history=h)
    lst = w.conversations_ctl.list
    _click_folder(qtbot, w, "Drafts")
    assert lst.headers() == ["▸ Drafts (2)", "▾ Final (1)"]

    menu = QMenu(lst)
    fill_folder_menu(lst, menu, "Drafts")
    assert _texts(menu) == ["New chat here", "Unfold", "Rename folder…", "Remove folder (keep its chats)"]
    _action(menu, "Rename folder…").trigger()
    assert lst.folder_dialog.textValue() == "Drafts"  # the name proposed, to edit
    _answer(w, "Early drafts")
    assert lst.headers() == ["▸ Early drafts (2)", "▾ Final (1)"]  # folded as it was
    assert h.folders() == ["Early drafts", "Final"]
    assert w.settings.window.collapsed_folders == ["Early drafts"]

    lst.sig_rename_folder.emit("Final", " ")  # refused: said, nothing changed
    assert "Could not rename the folder" in w.statusBar().currentMessage()
    assert h.folders() == ["Early drafts", "Final"]

    menu = QMenu(lst)
    fill_folder_menu(lst, menu, "Early drafts")
    _action(menu, "Remove folder (keep its chats)").trigger()
    assert lst.headers() == ["▾ Final (1)", "Today"] and lst.ids() == [trip, taxes, garden]
    assert h.folders() == ["Final"] and len(h.list_conversations()) == 3
    assert w.settings.window.collapsed_folders == []  # nothing left folded under that name


def _send_drag(view, mime: QMimeData, at: QPoint, drop: bool) -> bool:
    """``mime`` dragged over ``view`` (a list) at ``at`` and dropped there (``drop``): whether
    it was taken (by the list, or by the window around it)."""
    where = QPointF(at)
    move = Qt.DropAction.MoveAction | Qt.DropAction.CopyAction
    left, none = Qt.MouseButton.LeftButton, Qt.KeyboardModifier.NoModifier
    QApplication.sendEvent(view.viewport(), drag_event(QDragEnterEvent, where, move, mime, left, none))
    over = drag_event(QDragMoveEvent, where, move, mime, left, none)
    QApplication.sendEvent(view.viewport(), over)
    if not drop:
        return over.isAccepted()
    event = QDropEvent(where, move, mime, left, none)
    QApplication.sendEvent(view.viewport(), event)
    return event.isAccepted()


def _drag(w, cid: int, onto, *, drop: bool = True) -> bool:
    """Drag conversation ``cid`` (the list's own drag data) over ``onto`` (an item, or None: the
    space below the list) and drop it there; whether the list took the drop."""
    view = w.conversations_ctl.list.list
    mime = view.mimeData([w.conversations_ctl.list.item_for(cid)])
    if onto is None:
        last = view.visualItemRect(view.item(view.count() - 1))
        at = QPoint(last.center().x(), min(last.bottom() + 20, view.viewport().height() - 2))
    else:
        at = view.visualItemRect(onto).center()
    return _send_drag(view, mime, at, drop)


def test_a_conversation_dragged_onto_a_folder_moves_there_and_onto_the_others_moves_out(
    qtbot, make_window, tmp_path
):
    h, (garden, taxes, trip, budget) = history_of_chats(["Garden", "Taxes", "Trip", "Budget"])
    h.set_folder(garden, "Home")
    h.set_pinned(budget, True)
    w = make_window(None, history=h)
    lst = w.conversations_ctl.list
    assert lst.headers() == [PINNED, "▾ Home (1)", "Today"]

    assert _drag(w, trip, lst.folder_item("Home"))  # onto the folder's line
    assert h.get_conversation(trip).folder == "Home" and lst.headers() == [PINNED, "▾ Home (2)", "Today"]
    assert _drag(w, taxes, lst.item_for(garden))  # onto a chat in the folder
    assert h.get_conversation(taxes).folder == "Home" and lst.headers() == [PINNED, "▾ Home (3)"]
    assert lst.ids() == [budget, trip, taxes, garden]  # the list is the history's, nothing lost

    h.set_folder(garden, None)
    w.conversations_ctl.refresh_conversations()
    assert _drag(w, trip, lst.item_for(garden))  # onto a chat in no folder: out of its folder
    assert h.get_conversation(trip).folder is None
    assert _drag(w, taxes, None)  # onto the space below the list: out too
    assert h.get_conversation(taxes).folder is None and h.folders() == []

    # no target: the pinned chats, the folder it is in; a file from outside is the window's
    h.set_folder(trip, "Home")
    w.conversations_ctl.refresh_conversations()
    assert not _drag(w, trip, lst.item_for(budget)) and not _drag(w, trip, lst.folder_item("Home"))
    assert not _drag(w, trip, lst.item_for(budget), drop=False)
    assert h.get_conversation(trip).folder == "Home" and not h.get_conversation(trip).pinned
    # a file dragged from outside onto the list is the window's: attached to the message
    notes = tmp_path / "notes.txt"
    notes.write_text("pack a coat\n", encoding="utf-8")
    files = QMimeData()
    files.setUrls([QUrl.fromLocalFile(str(notes))])
    assert _send_drag(lst.list, files, lst.list.visualItemRect(lst.folder_item("Home")).center(), True)
    qtbot.waitUntil(lambda: [f.name for f in w.chat_ctl.files.pending.files] == ["notes.txt"])
    assert h.folders() == ["Home"] and len(h.list_conversations()) == 4


def test_a_chat_started_from_a_folder_s_menu_goes_in_it_once_sent(qtbot, make_window):
    from tests.ui.turns import alphabet_window, send_turn

    h, (garden, taxes) = history_of_chats(["Garden", "Taxes"])
    h.set_folder(garden, "Home")
    w = alphabet_window(qtbot, make_window, history=h)
    lst = w.conversations_ctl.list
    lst.sig_open.emit(taxes)
    menu = QMenu(lst)
    fill_folder_menu(lst, menu, "Home")
    _action(menu, "New chat here").trigger()
    assert w.conversation_id is None and w.chat.messages == []  # a new, empty chat
    assert "goes in “Home”" in w.statusBar().currentMessage()
    assert h.folders() == ["Home"] and len(h.list_conversations()) == 2  # nothing stored yet
    send_turn(qtbot, w, "Plant tulips when?", timeout=30_000)
    new = w.conversation_id
    assert new not in (garden, taxes) and h.get_conversation(new).folder == "Home"
    assert lst.headers() == ["▾ Home (2)", "Today"] and lst.ids()[:2] == [new, garden]

    # started in a folder, then another chat opened: the next new chat goes in none
    fill_folder_menu(lst, menu := QMenu(lst), "Home")
    _action(menu, "New chat here").trigger()
    lst.sig_open.emit(taxes)
    w.new_chat()
    send_turn(qtbot, w, "Something else", timeout=30_000)
    assert h.get_conversation(w.conversation_id).folder is None
