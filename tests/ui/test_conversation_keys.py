"""Alt+Down / Alt+Up in the real window open the next or the previous conversation in the list as
it shows them (the pinned first, a search's results), from none open the first, and stay at the
ends. Real SQLite."""

from __future__ import annotations

from PySide6.QtCore import Qt

from app.storage.history import History, TurnMessage


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
    w.conversations_ctl.pin_conversation(garden, True)  # the list's order: the pinned first
    assert lst.ids() == [garden, trip, taxes]
    assert key(Qt.Key.Key_Up) == trip
    assert key(Qt.Key.Key_Up) == garden
    assert key(Qt.Key.Key_Up) == garden
    w.conversations_ctl.search_conversations("Trip")  # a search: its results
    assert key(Qt.Key.Key_Down) == trip
