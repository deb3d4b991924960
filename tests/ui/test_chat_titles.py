"""Chats named by the model, in the real window over real SQLite and scripted GGUFs on real
llama.cpp: a conversation's menu -> *Name with the model* renames it with the title the model
writes; with Settings -> Chat -> *Name new chats* on, a new chat is named after its first reply
(once: not after the next ones, nor when the person renamed it meanwhile); off (the default),
nothing is asked of the model. What cannot be named says why."""

from __future__ import annotations

from PySide6.QtWidgets import QDialogButtonBox, QPushButton

from app.storage.history import History
from app.storage.settings import Settings, load_settings
from tests.support.history import history_of_chats
from tests.support.host_hold import hold
from tests.ui.scripted_gguf import CHATML, write_scripted_gguf
from tests.ui.test_pinned import menu_action
from tests.ui.turns import alphabet_window, send_turn

TIMEOUT = 30_000
ALPHABET_TITLE = "abcdefghijklmnopqrstuvwx"  # the alphabet model's 24 tokens (app.engine.titles.TITLE_TOKENS)


def _menu_name(w, cid: int) -> None:
    """The conversation's menu in the list -> Name with the model."""
    action, _texts = menu_action(w, cid, "nameWithModel")
    assert action.text() == "Name with the model"
    action.trigger()


def _title_model():
    """A ChatML GGUF in the models folder that answers anything with "Title: Roses in spring."."""
    from app.storage import paths

    words = ["Title:", " Roses", " in", " spring", "."]
    script = dict(zip(["\n", *words], [*words, "<|im_end|>"], strict=True))
    return write_scripted_gguf(
        paths.models_dir() / "titles.gguf",
        chat_template=CHATML,
        script=script,
        default_next="a",
        user_tokens=words,
    )


def test_a_chat_s_menu_names_it_with_the_model(qtbot, make_window):
    h, (garden, trip) = history_of_chats(["How do I prune old roses?", "Trip"])
    w = make_window(_title_model(), history=h)
    lst = w.conversations_ctl.list
    with qtbot.waitSignal(w.worker.sig_named, timeout=TIMEOUT) as named:
        _menu_name(w, garden)  # not the open chat: any in the list
        assert w.statusBar().currentMessage() == "Naming the chat with the model…"
    assert named.args == [garden, "Roses in spring", ""]
    assert h.get_conversation(garden).title == "Roses in spring"
    assert sorted(lst.titles()) == ["Roses in spring", "Trip"]
    assert w.statusBar().currentMessage() == "Named the chat “Roses in spring”."
    assert h.get_conversation(trip).title == "Trip" and w.conversation_id is None  # nothing else changed


def _name_many(w, *ids: int) -> None:
    """Choose the chats ``ids`` in the list, then their menu -> Name N chats with the model."""
    lst = w.conversations_ctl.list
    lst.list.clearSelection()
    for cid in ids:
        lst.item_for(cid).setSelected(True)
    menu = lst.menu_for(lst.item_for(ids[0]))
    (action,) = [a for a in menu.actions() if a.objectName() == "nameManyWithModel"]
    assert action.text() == f"Name {len(ids)} chats with the model"
    action.trigger()


def test_several_chats_chosen_are_named_one_after_another(qtbot, make_window):
    """Asked one at a time: a message sent meanwhile waits behind one title, not all of them. The
    engine's thread is held while they are asked, so what queues behind what is seen."""
    h, (garden, taxes, trip) = history_of_chats(["Garden", "Taxes", "Trip"])
    w = make_window(_title_model(), history=h)
    order: list[object] = []
    w.worker.sig_named.connect(lambda cid, _title, _why: order.append(cid))
    w.sig_turn_done.connect(lambda _done: order.append("reply"))
    release = hold(w.worker.host, owner="check")
    try:
        _name_many(w, garden, taxes, trip)
        assert len(w.titles.pending) == 1 and len(w.titles.queue) == 2  # one asked, two to come
        assert w.statusBar().currentMessage() == "Naming chats with the model: 1 of 3…"
        stop = w.findChild(QPushButton, "stopNaming")
        assert stop.isVisible() and stop.text() == "Stop naming"
        w.compose.setPlainText("a question meanwhile")
        assert w.send()
    finally:
        release.set()
    qtbot.waitUntil(lambda: len(order) == 4 and w.titles.batch == {}, timeout=TIMEOUT)
    # the chats as listed (the latest first), the reply after the first title
    assert order == [trip, "reply", taxes, garden]
    assert [h.get_conversation(c).title for c in (garden, taxes, trip)] == ["Roses in spring"] * 3
    assert w.statusBar().currentMessage() == "Named 3 chats with the model."
    assert not stop.isVisible() and w.titles.pending == {}


def test_naming_several_stops_on_asking_and_says_what_could_not_be_named(qtbot, make_window):
    h, (garden, taxes, trip, zoo) = history_of_chats(["Garden", "Taxes", "Trip", "Zoo"])
    w = make_window(_title_model(), history=h)
    release = hold(w.worker.host, owner="check")
    try:
        _name_many(w, garden, taxes, trip, zoo)
        w.findChild(QPushButton, "stopNaming").click()  # the first is asked already: it is named
        assert w.titles.queue == []
    finally:
        release.set()
    qtbot.waitUntil(lambda: w.titles.batch == {}, timeout=TIMEOUT)
    titles = [h.get_conversation(c).title for c in (garden, taxes, trip, zoo)]
    assert titles == ["Garden", "Taxes", "Trip", "Roses in spring"]  # the first listed (the latest)
    assert w.statusBar().currentMessage() == "Named 1 of 4 chats with the model; stopped before 3."

    # a chat deleted while the others are named: said, the rest are named
    release = hold(w.worker.host, owner="check")
    try:
        _name_many(w, taxes, trip)
        h.delete_conversation(w.titles.queue[0])
    finally:
        release.set()
    qtbot.waitUntil(lambda: w.titles.batch == {}, timeout=TIMEOUT)
    assert w.statusBar().currentMessage() == (
        "Named 1 of 2 chats with the model; 1 could not be named: a chat was deleted."
    )
    assert "Roses in spring" in [c.title for c in h.list_conversations()]


def test_what_cannot_be_named_says_why(qtbot, make_window):
    h = History()
    empty = h.create_conversation("Empty").id
    _, (garden,) = history_of_chats(["Garden"])
    w = make_window(None, history=h)
    asked: list[tuple] = []
    w.worker.sig_named.connect(lambda *a: asked.append(a))
    _menu_name(w, garden)
    assert w.statusBar().currentMessage() == "Could not name the chat: no model is loaded. Load one first."
    _menu_name(w, empty)
    assert "it has no message to name it from yet" in w.statusBar().currentMessage()
    assert w.titles.pending == {} and asked == []
    assert h.get_conversation(garden).title == "Garden"


def test_new_chats_are_named_after_their_first_reply_when_the_settings_ask_it(qtbot, make_window):
    w = alphabet_window(qtbot, make_window)
    h = w.state.history
    assert Settings().chat.name_chats is False  # the default: nothing is asked of the model
    send_turn(qtbot, w, "Where do roses grow best?", timeout=TIMEOUT)
    first = w.conversation_id
    assert w.titles.pending == {} and h.get_conversation(first).title == "Where do roses grow best?"

    w.state.settings.chat.name_chats = True
    w.new_chat()
    with qtbot.waitSignal(w.worker.sig_named, timeout=TIMEOUT) as named:
        send_turn(qtbot, w, "And tulips?", timeout=TIMEOUT)
    cid = w.conversation_id
    assert named.args == [cid, ALPHABET_TITLE, ""] and w.titles.pending == {}
    assert (
        h.get_conversation(cid).title == ALPHABET_TITLE
        and ALPHABET_TITLE in w.conversations_ctl.list.titles()
    )
    assert h.get_conversation(first).title == "Where do roses grow best?"  # an older chat is left as it is

    send_turn(qtbot, w, "And lilies?", timeout=TIMEOUT)  # not after the next replies
    assert w.titles.pending == {}
    w.conversations_ctl.rename_conversation(cid, "Flowers")
    send_turn(qtbot, w, "And daisies?", timeout=TIMEOUT)
    assert w.titles.pending == {} and h.get_conversation(cid).title == "Flowers"


def test_a_chat_renamed_while_the_model_writes_its_title_keeps_the_person_s_name(qtbot, make_window):
    """The rename comes at the end of the first turn, after the title was asked and before its
    answer can reach the window (a queued signal, delivered once the window's handler returns)."""
    w = alphabet_window(qtbot, make_window)
    w.state.settings.chat.name_chats = True
    seen: list[dict] = []

    def rename_now(_done) -> None:
        seen.append(dict(w.titles.pending))
        w.conversations_ctl.rename_conversation(w.conversation_id, "My garden")

    w.sig_turn_done.connect(rename_now)
    with qtbot.waitSignal(w.worker.sig_named, timeout=TIMEOUT) as named:
        send_turn(qtbot, w, "Plan my garden", timeout=TIMEOUT)
    cid = w.conversation_id
    assert seen == [{cid: "Plan my garden"}] and named.args == [cid, ALPHABET_TITLE, ""]  # written, not used
    assert w.state.history.get_conversation(cid).title == "My garden" and w.titles.pending == {}


def test_the_setting_is_in_settings_chat_and_saved(qtbot, make_window):
    w = make_window(None)
    dlg = w.open_settings()
    box = dlg.open_at("chat.name_chats")
    assert [box.itemText(i) for i in range(box.count())] == [
        "By the first message",
        "By the model, after the first reply",
    ]
    assert box.currentData() is False
    box.setCurrentIndex(box.findData(True))
    dlg.findChild(QDialogButtonBox).button(QDialogButtonBox.StandardButton.Save).click()
    assert not dlg.isVisible()
    assert w.state.settings.chat.name_chats is True
    assert load_settings()[0].chat.name_chats is True


def test_a_new_chat_whose_first_message_holds_a_file_is_named_too(qtbot, make_window, tmp_path):
    """Its title was given from the words typed; its stored first message also holds the file's
    text. The model is asked, and the title is replaced, all the same."""
    w = alphabet_window(qtbot, make_window)
    w.state.settings.chat.name_chats = True
    notes = tmp_path / "beds.txt"
    notes.write_text("north bed: roses\nsouth bed: tulips\n", encoding="utf-8")
    w.chat_ctl.files.add_paths([notes])
    qtbot.waitUntil(lambda: [f.name for f in w.chat_ctl.files.pending.files] == ["beds.txt"], timeout=TIMEOUT)
    with qtbot.waitSignal(w.worker.sig_named, timeout=TIMEOUT) as named:
        send_turn(qtbot, w, "Plan these beds", timeout=TIMEOUT)
    cid = w.conversation_id
    stored = w.state.history.load_conversation(cid)
    assert "south bed: tulips" in stored.messages[0].content  # the file's text is in the message
    assert named.args == [cid, ALPHABET_TITLE, ""] and stored.title == ALPHABET_TITLE


def test_a_title_job_that_never_runs_does_not_hold_the_others(qtbot, make_window):
    """A title job the engine drops before it runs (cancelled in its queue, the engine closing) still
    answers: the batch goes on with the next chat and says why that one was not named."""
    h, (garden, taxes) = history_of_chats(["Garden", "Taxes"])
    w = make_window(_title_model(), history=h)
    release = hold(w.worker.host, owner="check")
    try:
        _name_many(w, garden, taxes)
        (waiting,) = w.worker.jobs._waiting  # the first title job, queued behind the hold
        waiting.cancel.set()  # as the host drops a job it will not run
    finally:
        release.set()
    qtbot.waitUntil(lambda: w.titles.batch == {}, timeout=TIMEOUT)
    assert w.statusBar().currentMessage() == (
        "Named 1 of 2 chats with the model; 1 could not be named: the job was cancelled before it ran."
    )
    assert sorted(c.title for c in h.list_conversations()) == [
        "Roses in spring",
        "Taxes",
    ]  # (Taxes, listed first, dropped)
    assert w.titles.pending == {} and not w.findChild(QPushButton, "stopNaming").isVisible()
