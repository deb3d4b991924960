"""Undo after deleting chats, in the real window over real SQLite: the status bar says what was
deleted and shows Undo; Undo (or Ctrl+Z in the list) puts the chats back as they were (the same ids, messages, folder),
one or several at once; only the last deletion is kept, and not past its time (the timer's end is
sent here, not waited for)."""

from __future__ import annotations

from PySide6.QtWidgets import QMessageBox

from app.ui.window_undo import UNDO_MS
from tests.support.history import history_of_chats


def _confirm(lst) -> None:
    box = lst.confirm_box
    assert isinstance(box, QMessageBox) and box.isVisible()
    (delete,) = [b for b in box.buttons() if b.text() == "Delete"]
    delete.click()


def test_a_deleted_chat_is_brought_back_by_undo(qtbot, make_window):
    h, (garden, taxes, trip) = history_of_chats(["Garden", "Taxes", "Trip"])
    h.set_folder(garden, "Home")
    w = make_window(None, history=h)
    w.show()
    lst, undo = w.conversations_ctl.list, w.conversations_ctl.undo
    before = h.load_conversation(garden).to_dict()
    assert not undo.button.isVisible()

    lst.list.setCurrentItem(lst.item_for(garden))
    lst.delete_selected()
    assert "Undo in the status bar brings it back" in lst.confirm_box.text()
    _confirm(lst)
    assert garden not in lst.ids() and w.statusBar().currentMessage() == "Deleted “Garden”."
    assert undo.button.isVisible() and undo.timer.isActive() and undo.timer.interval() == UNDO_MS

    undo.button.click()
    assert h.load_conversation(garden).to_dict() == before  # the same id, messages, folder
    assert sorted(lst.ids()) == sorted([garden, taxes, trip]) and lst.headers()[0] == "▾ Home (1)"
    assert w.statusBar().currentMessage() == "Brought back “Garden”." and not undo.button.isVisible()


def test_several_deleted_at_once_come_back_at_once_and_only_the_last_deletion(qtbot, make_window):
    h, (garden, taxes, trip, zoo) = history_of_chats(["Garden", "Taxes", "Trip", "Zoo"])
    w = make_window(None, history=h)
    w.show()
    lst, undo = w.conversations_ctl.list, w.conversations_ctl.undo
    w.open_conversation(trip)

    lst.list.setCurrentItem(lst.item_for(zoo))
    lst.delete_selected()
    _confirm(lst)  # a first deletion: Zoo
    lst.list.clearSelection()
    for cid in (garden, trip):
        lst.item_for(cid).setSelected(True)
    lst.delete_selected()
    _confirm(lst)  # the open one among them: a new chat
    assert lst.ids() == [taxes] and w.conversation_id is None
    assert w.statusBar().currentMessage() == "Deleted 2 chats."

    undo.button.click()
    assert sorted(lst.ids()) == sorted([garden, taxes, trip])  # the last deletion, not Zoo
    assert w.statusBar().currentMessage() == "Brought back 2 chats."
    assert [m.content for m in h.load_conversation(trip).messages] == ["notes on Trip", "ok"]


def test_undo_goes_when_its_time_is_up(qtbot, make_window):
    h, (garden, taxes) = history_of_chats(["Garden", "Taxes"])
    w = make_window(None, history=h)
    w.show()
    lst, undo = w.conversations_ctl.list, w.conversations_ctl.undo
    w.conversations_ctl.delete_conversation(garden)
    assert undo.button.isVisible() and len(undo.deleted) == 1
    undo.timer.timeout.emit()  # (the timer's end)
    assert not undo.button.isVisible() and undo.deleted == [] and undo.undo() == 0
    assert lst.ids() == [taxes] and w.statusBar().currentMessage().startswith("Nothing to undo")


def test_ctrl_z_in_the_list_puts_back_what_the_delete_key_deleted(qtbot, make_window):
    from PySide6.QtCore import Qt

    h, (garden, taxes) = history_of_chats(["Garden", "Taxes"])
    w = make_window(None, history=h)
    with qtbot.waitActive(w):
        w.activateWindow()
    lst = w.conversations_ctl.list
    lst.list.setFocus()
    lst.list.setCurrentItem(lst.item_for(garden))
    qtbot.keyClick(lst.list, Qt.Key.Key_Delete)
    _confirm(lst)
    assert lst.ids() == [taxes]
    lst.list.setFocus()
    qtbot.keyClick(lst.list, Qt.Key.Key_Z, Qt.KeyboardModifier.ControlModifier)
    assert sorted(lst.ids()) == sorted([garden, taxes])
    assert w.statusBar().currentMessage() == "Brought back “Garden”."
