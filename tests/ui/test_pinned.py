"""Pinning conversations in the real window's list: a conversation's menu pins it to the top under
"Pinned" (kept in the real history, so a new window lists it there too), a search lists the pinned
matches first, a chat that changes later stays below the pinned one, and Unpin puts it back in its
day."""

from __future__ import annotations

from PySide6.QtWidgets import QMenu

from app.storage.history import History, TurnMessage
from app.ui.conversation_list import PINNED
from tests.support.history import history_of_chats

#: a conversation's menu in the list (right-click), as an unpinned one shows it
CHAT_MENU = [
    "Pin to top",
    "Move to folder",
    "Rename",
    "Duplicate",
    "Name with the model",
    "Copy as Markdown",
    "Export…",
    "Delete",
]


def menu_action(w, cid: int, name: str):
    """The action ``name`` of conversation ``cid``'s menu in the list (as the right-click shows it)."""
    lst = w.conversations_ctl.list
    item = lst.item_for(cid)
    assert item is not None
    menu = QMenu(lst)
    lst.fill_menu(menu, item)
    (action,) = [a for a in menu.actions() if a.objectName() == name]
    return action, [a.text() for a in menu.actions()]


def test_a_pinned_conversation_is_listed_first_until_it_is_unpinned(qtbot, make_window):
    h, (garden, taxes, trip) = history_of_chats(["Garden", "Taxes", "Trip"])
    w = make_window(None, history=h)
    lst = w.conversations_ctl.list
    assert lst.ids() == [trip, taxes, garden] and lst.headers() == ["Today"]

    action, texts = menu_action(w, garden, "pinConversation")
    assert texts == CHAT_MENU
    action.trigger()
    assert lst.ids() == [garden, trip, taxes] and lst.pinned_ids() == [garden]
    assert lst.headers() == [PINNED, "Today"]
    assert h.get_conversation(garden).pinned

    # another chat changes later: it is the first of today's, still below the pinned one
    h.record_turn(taxes, None, [TurnMessage("user", "one more"), TurnMessage("assistant", "ok")])
    w.conversations_ctl.refresh_conversations()
    assert lst.ids() == [garden, taxes, trip]

    # a search lists the pinned matches first too
    w.conversations_ctl.search_conversations("notes")
    assert lst.ids() == [garden, taxes, trip] and lst.headers() == [PINNED, "Today"]
    w.conversations_ctl.search_conversations("Trip")
    assert lst.ids() == [trip] and lst.headers() == ["Today"]
    w.conversations_ctl.search_conversations("")

    # opening a pinned chat works as any other, and a new window lists it pinned
    lst.sig_open.emit(garden)
    assert w.conversation_id == garden and lst.list.currentItem() is lst.item_for(garden)
    w2 = make_window(None, history=History())
    assert w2.conversations_ctl.list.pinned_ids() == [garden]

    action, texts = menu_action(w, garden, "unpinConversation")
    assert texts[0] == "Unpin"
    action.trigger()
    assert lst.pinned_ids() == [] and lst.headers() == ["Today"]
    assert lst.ids() == [taxes, trip, garden]  # back in its place by its last change


def test_a_chat_deleted_meanwhile_is_not_pinned_renamed_or_deleted_and_the_list_drops_it(qtbot, make_window):
    """Another handle on the history (a second window, the CLI) deleted the chat after this list was
    shown: each change says why in the status bar, and the list is read again without it."""
    h, (taxes,) = history_of_chats(["Taxes"])
    w = make_window(None, history=h)
    lst = w.conversations_ctl.list
    ctl = w.conversations_ctl
    other = History()
    for why, act in (
        ("Could not pin: no conversation", lambda cid: menu_action(w, cid, "pinConversation")[0].trigger()),
        ("Could not rename: no conversation", lambda cid: ctl.rename_conversation(cid, "Allotment")),
        ("Could not delete: no conversation", lambda cid: ctl.delete_conversation(cid)),
    ):
        cid = h.create_conversation("Garden").id
        ctl.refresh_conversations()
        assert cid in lst.ids()
        other.delete_conversation(cid)
        act(cid)
        assert w.statusBar().currentMessage().startswith(why)
        assert lst.ids() == [taxes]
    assert h.get_conversation(taxes).title == "Taxes" and not h.get_conversation(taxes).pinned
