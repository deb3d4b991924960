"""The window's title names the open chat, as a document window names its document ("Garden —
Callisto"), in the real window over real SQLite: opened, renamed, named by its first message,
another opened, a new one (just "Callisto"), the open one deleted."""

from __future__ import annotations

from tests.support.history import history_of_chats
from tests.ui.turns import alphabet_window, send_turn

TIMEOUT = 30_000


def test_the_title_bar_names_the_open_chat(qtbot, make_window):
    h, (garden, taxes) = history_of_chats(["Garden", "Taxes  \n2026"])
    w = alphabet_window(qtbot, make_window, history=h)
    assert w.windowTitle() == "Callisto"  # no chat open
    w.open_conversation(garden)
    assert w.windowTitle() == "Garden — Callisto"
    w.conversations_ctl.rename_conversation(garden, "Roses")
    assert w.windowTitle() == "Roses — Callisto"
    w.conversations_ctl.list.sig_open.emit(taxes)
    assert w.windowTitle() == "Taxes 2026 — Callisto"  # on one line

    w.new_chat()
    assert w.windowTitle() == "Callisto"
    send_turn(qtbot, w, "Which tulips flower first?", timeout=TIMEOUT)
    assert w.windowTitle() == "Which tulips flower first? — Callisto"
    w.conversations_ctl.delete_conversation(w.conversation_id)
    assert w.windowTitle() == "Callisto" and w.conversation_id is None
