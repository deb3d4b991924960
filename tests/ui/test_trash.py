"""Recently deleted (File menu), in the real window over real SQLite: a deleted chat is kept in the
trash, across a restart of the app, listed with its folder, messages and when it was deleted; Put
back (a button, or a double-click) brings the chosen chats back as they were; Delete for good and
Empty forget them after asking (and Undo no longer offers them); the list follows a deletion made
while it is open; none deleted is said."""

from __future__ import annotations

import time
from datetime import datetime

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QMessageBox

from app.storage.history import TRASH_DAYS, History
from app.ui.trash_dialog import deleted_when
from tests.support.history import history_of_chats


def _status(w) -> str:
    return w.statusBar().currentMessage()


def _confirm(box, button: str) -> None:
    assert isinstance(box, QMessageBox) and box.isVisible()
    (b,) = [b for b in box.buttons() if b.text() == button]
    b.click()


def _open_trash(w):
    w.menus.act_trash.trigger()
    dlg = w.conversations_ctl.undo.trash_dialog
    assert dlg is not None and dlg.isVisible() and dlg.windowTitle() == "Recently deleted"
    return dlg


def test_a_deleted_chat_is_put_back_from_recently_deleted(qtbot, make_window):
    h, (garden, taxes) = history_of_chats(["Garden", "Taxes"])
    h.set_folder(garden, "Home")
    before = h.load_conversation(garden).to_dict()
    w = make_window(None, history=h)
    lst = w.conversations_ctl.list
    lst.list.setCurrentItem(lst.item_for(garden))
    lst.delete_selected()
    assert f"It stays in Recently deleted (File menu) for {TRASH_DAYS} days" in lst.confirm_box.text()
    _confirm(lst.confirm_box, "Delete")
    assert lst.ids() == [taxes]

    file_menu = w.menuBar().actions()[0].menu()
    file_menu.aboutToShow.emit()  # (the File menu opened: it says how many are there)
    assert w.menus.act_trash.text() == "Recently deleted (1)…"
    dlg = _open_trash(w)
    assert dlg.titles() == ["Garden"] and dlg.chosen() == dlg.ids()  # the first is chosen
    row = dlg.tree.topLevelItem(0)
    assert [row.text(c) for c in range(3)] == ["Garden", "Home", "2"]
    assert row.text(3).startswith("Today, ") and row.toolTip(3).startswith("Deleted for good on ")
    assert f"stay here for {TRASH_DAYS} days" in dlg.about.text()
    assert dlg.put_back_button.isEnabled() and dlg.empty_button.isEnabled()

    dlg.put_back_button.click()
    assert sorted(lst.ids()) == sorted([garden, taxes]) and lst.headers()[0] == "▾ Home (1)"
    assert h.load_conversation(garden).to_dict() == before
    assert _status(w) == "Brought back “Garden”."
    assert not w.conversations_ctl.undo.button.isVisible()  # (nothing left for Undo to bring)
    assert dlg.ids() == [] and not dlg.tree.isVisible()
    assert dlg.about.text() == f"No chats were deleted in the last {TRASH_DAYS} days."
    file_menu.aboutToShow.emit()
    assert w.menus.act_trash.text() == "Recently deleted…"
    assert not dlg.put_back_button.isEnabled() and not dlg.empty_button.isEnabled()


def test_the_trash_outlives_the_app_and_a_double_click_puts_back(qtbot, make_window, tmp_path):
    path = tmp_path / "history.sqlite3"
    h = History(path)
    for title in ("Old plans", "Recipes"):
        cid = h.create_conversation(title).id
        h.append_message(cid, "user", f"about {title}")
    w = make_window(None, history=h)
    for cid in w.conversations_ctl.list.ids():
        w.conversations_ctl.delete_conversation(cid)
    w.close()
    h.close()

    again = History(path)  # the app opened again: Undo is gone, the trash is not
    w2 = make_window(None, history=again)
    assert w2.conversations_ctl.list.ids() == [] and not w2.conversations_ctl.undo.button.isVisible()
    dlg = _open_trash(w2)
    assert sorted(dlg.titles()) == ["Old plans", "Recipes"]
    item = next(dlg.tree.topLevelItem(i) for i in range(2) if dlg.tree.topLevelItem(i).text(0) == "Recipes")
    at = dlg.tree.visualItemRect(item).center()
    qtbot.mouseClick(dlg.tree.viewport(), Qt.MouseButton.LeftButton, pos=at)  # (a double-click's press)
    qtbot.mouseDClick(dlg.tree.viewport(), Qt.MouseButton.LeftButton, pos=at)
    assert w2.conversations_ctl.list.titles() == ["Recipes"] and dlg.titles() == ["Old plans"]
    assert [m.content for m in again.load_conversation(w2.conversations_ctl.list.ids()[0]).messages] == [
        "about Recipes"
    ]


def test_delete_for_good_and_empty_ask_first_and_undo_then_offers_nothing(qtbot, make_window):
    h, (a, b, c, d) = history_of_chats(["A", "B", "C", "D"])
    w = make_window(None, history=h)
    ctl, undo = w.conversations_ctl, w.conversations_ctl.undo
    ctl.delete_conversations([a, b])
    dlg = _open_trash(w)
    ctl.delete_conversations([c])  # while the list is open: it follows
    assert dlg.titles()[0] == "C" and sorted(dlg.titles()) == ["A", "B", "C"]
    assert undo.button.isVisible() and [t.title for t in undo.deleted] == ["C"]

    dlg.select([i for i, t in zip(dlg.ids(), dlg.titles(), strict=True) if t in ("A", "C")])
    dlg.forget_button.click()
    assert dlg.confirm_box.text() == "Delete these 2 chats for good? This cannot be undone."
    _confirm(dlg.confirm_box, "Cancel")
    assert sorted(dlg.titles()) == ["A", "B", "C"]  # asked, and nothing happened
    dlg.forget_button.click()
    _confirm(dlg.confirm_box, "Delete for good")
    assert dlg.titles() == ["B"] and _status(w) == "Deleted 2 chats for good."
    assert not undo.button.isVisible() and undo.undo() == 0  # C is gone for good: no Undo for it
    assert ctl.list.ids() == [d]

    dlg.tree.setFocus()
    qtbot.keyClick(dlg.tree, Qt.Key.Key_Delete)  # the Delete key asks the same
    assert dlg.confirm_box.text() == "Delete “B” for good? This cannot be undone."
    _confirm(dlg.confirm_box, "Cancel")
    dlg.empty_button.click()
    assert dlg.confirm_box.text() == "Delete the chat in Recently deleted for good? This cannot be undone."
    _confirm(dlg.confirm_box, "Delete for good")
    assert dlg.ids() == [] and h.trashed() == [] and _status(w) == "Deleted 1 chat for good."
    assert ctl.list.ids() == [d]


def test_undo_still_brings_back_the_last_deletion_from_the_trash(qtbot, make_window):
    h, (garden, taxes) = history_of_chats(["Garden", "Taxes"])
    w = make_window(None, history=h)
    ctl = w.conversations_ctl
    ctl.delete_conversations([garden, taxes])
    assert [t.title for t in h.trashed()] == ["Taxes", "Garden"]
    ctl.undo.button.click()
    assert sorted(ctl.list.ids()) == sorted([garden, taxes]) and h.trashed() == []
    assert _status(w) == "Brought back 2 chats."


def test_when_a_chat_was_deleted_is_said_as_a_list_says_it():
    now = datetime(2026, 12, 6, 15, 30).timestamp()

    def at(*args: int) -> float:
        return datetime(*args).timestamp()

    assert deleted_when(at(2026, 12, 6, 9, 5), now) == "Today, 09:05"
    assert deleted_when(at(2026, 12, 5, 23, 59), now) == "Yesterday, 23:59"
    assert deleted_when(at(2026, 12, 2, 18, 40), now) == datetime(2026, 12, 2).strftime("%a") + ", 18:40"
    assert deleted_when(at(2026, 11, 29, 8, 0), now) == "29 " + datetime(2026, 11, 1).strftime("%b")
    assert deleted_when(at(2025, 12, 30, 8, 0), now) == "30 " + datetime(2025, 12, 1).strftime("%b") + " 2025"
    assert deleted_when(time.time()).startswith("Today, ")


def test_an_empty_list_offers_the_chats_in_recently_deleted(qtbot, make_window):
    h, (garden,) = history_of_chats(["Garden"])
    w = make_window(None, history=h)
    lst = w.conversations_ctl.list
    w.conversations_ctl.delete_conversations([garden])
    offer = lst.list.item(1)
    assert offer.text() == "1 chat in Recently deleted…" and lst.list.count() == 2
    assert "File → Recently deleted…" in offer.toolTip()
    qtbot.mouseClick(
        lst.list.viewport(), Qt.MouseButton.LeftButton, pos=lst.list.visualItemRect(offer).center()
    )
    dlg = w.conversations_ctl.undo.trash_dialog
    assert dlg is not None and dlg.isVisible() and dlg.titles() == ["Garden"]
    dlg.put_back_button.click()
    assert lst.ids() == [garden]
    w.conversations_ctl.delete_conversations([garden])
    w.conversations_ctl.undo.forget_for_good(None)  # Empty: the offer goes with them
    assert lst.list.count() == 1  # none deleted: no offer, only "No conversations yet"
