"""A chat duplicated from the real window's list (a chat's menu → *Duplicate*), over real SQLite and
a scripted GGUF on real llama.cpp: the whole copy, "… (copy)", is listed first in the same folder
and opened, the first chat kept as it was. While a reply is being written, the open chat is not
copied (the copy would hold half a reply) and another chat's copy is listed without being opened
(opening it would stop the reply); a chat deleted meanwhile is said."""

from __future__ import annotations

from tests.support.history import history_of_chats
from tests.support.host_hold import hold
from tests.ui.test_pinned import menu_action
from tests.ui.turns import alphabet_window


def _duplicate(w, cid: int) -> None:
    action, _texts = menu_action(w, cid, "duplicateConversation")
    assert action.text() == "Duplicate"
    action.trigger()


def test_a_duplicate_is_listed_first_and_opened_and_the_first_is_kept(qtbot, make_window):
    h, (garden, taxes) = history_of_chats(["Garden", "Taxes"])
    h.set_folder(garden, "Home")
    h.rename_conversation(garden, "Roses")
    w = make_window(None, history=h)
    lst = w.conversations_ctl.list
    lst.sig_open.emit(taxes)
    lst.search.setText("notes")  # a search that the copy's title would not match
    w.conversations_ctl.search_conversations("notes")
    before = h.load_conversation(garden)

    _duplicate(w, garden)
    copy = w.conversation_id
    assert copy not in (garden, taxes, None)
    assert h.get_conversation(copy).title == "Roses (copy)" and h.get_conversation(copy).folder == "Home"
    assert lst.search.text() == "" and lst.headers() == ["▾ Home (2)", "Today"]
    assert lst.shown_ids() == [copy, garden, taxes]  # made now: first in its folder
    assert [m.text for m in w.chat.user_messages()] == ["notes on Garden"]
    assert w.windowTitle() == "Roses (copy) — Callisto"
    assert "Duplicated as “Roses (copy)”" in w.statusBar().currentMessage()
    assert h.load_conversation(garden).to_dict() == before.to_dict()


def test_while_a_reply_is_written_the_open_chat_is_not_copied_and_another_is_not_opened(qtbot, make_window):
    h, (garden, taxes) = history_of_chats(["Garden", "Taxes"])
    w = alphabet_window(qtbot, make_window, history=h)
    lst = w.conversations_ctl.list
    lst.sig_open.emit(garden)
    stops: list[bool] = []
    w.conversations_ctl.sig_stop_requested.connect(lambda: stops.append(True))
    release = hold(w.worker.host, owner="check")  # the turn waits: surely being written meanwhile
    try:
        w.compose.setPlainText("and the roses?")
        assert w.send() and w.busy
        _duplicate(w, garden)
        assert "its reply is being written" in w.statusBar().currentMessage()
        assert len(h.list_conversations()) == 2

        _duplicate(w, taxes)
        (copy,) = [c.id for c in h.list_conversations() if c.id not in (garden, taxes)]
        assert h.get_conversation(copy).title == "Taxes (copy)" and copy in lst.ids()
        assert w.busy and stops == [] and w.conversation_id == garden  # the reply goes on
    finally:
        with qtbot.waitSignal(w.sig_turn_done, timeout=30_000) as blocker:
            release.set()
    assert blocker.args[0].finish_reason == "length" and w.chat.current_assistant().text() == "abc"

    # a chat deleted elsewhere (another window, the CLI) before Duplicate: said, and it leaves the list
    h.delete_conversation(taxes)
    _duplicate(w, taxes)
    assert f"Could not duplicate the chat: no conversation with id {taxes}" in w.statusBar().currentMessage()
    assert taxes not in lst.ids() and len(h.list_conversations()) == 2
