"""When each message was written, in its head's tooltip: a message sent says "Sent …", a reply says
who wrote it and when it began; a reopened conversation shows the stored times (real SQLite),
as the computer's clock tells them."""

from __future__ import annotations

from datetime import datetime

from app.storage.history import Conversation, History, MessageRecord
from app.storage.settings import Settings
from app.ui.chat.bubble import when_text
from tests.ui.scripted_gguf import write_alphabet_model

TIMEOUT = 30_000


def test_a_reopened_conversation_shows_when_each_message_was_written(qtbot, make_window):
    sent = datetime(2026, 3, 7, 9, 5).timestamp()
    answered = datetime(2026, 3, 7, 9, 6).timestamp()
    h = History()
    conv = Conversation(
        id=0, title="Old chat", created=sent, updated=answered,
        messages=[
            MessageRecord(0, 0, 0, "user", "Hello there", created=sent),
            MessageRecord(0, 0, 1, "assistant", "Hi.", created=answered, extra={"model": "/m/alpha.gguf"}),
        ],
    )  # fmt: skip
    cid = h.restore_conversation(conv).id
    w = make_window(None, history=h)
    w.conversations_ctl.open_conversation(cid)
    (user,), (reply,) = w.chat.user_messages(), w.chat.assistant_messages()
    assert user.who.toolTip() == "Sent 7 Mar 2026, 09:05"
    assert reply.who.text() == "alpha"
    assert reply.who.toolTip().splitlines()[-1] == "7 Mar 2026, 09:06"
    assert reply.who.toolTip().splitlines()[0].startswith("Written by alpha")
    assert when_text(datetime(2026, 12, 25, 23, 59).timestamp()) == "25 Dec 2026, 23:59"


def test_a_message_sent_now_says_so(qtbot, make_window):
    s = Settings()
    s.sampling.max_tokens = 2
    w = make_window(write_alphabet_model(), settings=s)
    before = datetime.now().timestamp()
    w.compose.setPlainText("Now")
    with qtbot.waitSignal(w.sig_turn_done, timeout=TIMEOUT):
        assert w.send()
    after = datetime.now().timestamp()
    (user,), (reply,) = w.chat.user_messages(), w.chat.assistant_messages()
    # the clock's minute when it was sent (a minute may turn meanwhile: either is right)
    assert user.who.toolTip() in {f"Sent {when_text(before)}", f"Sent {when_text(after)}"}
    assert reply.who.toolTip().splitlines()[-1] in {when_text(before), when_text(after)}
