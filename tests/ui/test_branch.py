"""A reply's ⋯ → Branch from here in the real window: a new chat with the conversation through
that reply opens, the first chat is kept, and the next turn goes on from the branch (the model's
prompt holds the branch's messages only). A real scripted GGUF writes the replies."""

from __future__ import annotations

from app.storage.settings import Settings
from tests.ui.scripted_gguf import write_alphabet_model

TIMEOUT = 30_000


def _send(qtbot, w, text: str) -> None:
    w.compose.setPlainText(text)
    with qtbot.waitSignal(w.sig_turn_done, timeout=TIMEOUT):
        assert w.send()


def test_branch_from_an_earlier_reply_opens_a_new_chat_that_goes_on_from_it(qtbot, make_window):
    model = write_alphabet_model()
    s = Settings()
    s.sampling.max_tokens = 3
    w = make_window(model, settings=s)
    _send(qtbot, w, "First question")
    _send(qtbot, w, "Second question")
    first = w.conversation_id
    older = w.chat.assistant_messages()[0]
    assert [a.text() for a in older.btn_more.menu().actions()] == ["Branch from here", "Edit reply text"]

    older.act_branch.trigger()
    assert w.conversation_id not in (None, first)
    assert w.statusBar().currentMessage().startswith("Branched into “First question (branch)”")
    assert [m.text for m in w.chat.user_messages()] == ["First question"]
    assert [r.text() for r in w.chat.assistant_messages()] == ["abc"]
    assert sorted(w.conversations_ctl.list.ids()) == sorted([first, w.conversation_id])
    assert len(w.history.load_conversation(first).messages) == 4  # the first chat is kept

    _send(qtbot, w, "Another way")
    prompt = w.worker.state.session.last_prompt.text
    assert "First question" in prompt and "Another way" in prompt and "Second question" not in prompt
    assert [
        m.content for m in w.history.load_conversation(w.conversation_id).messages if m.role == "user"
    ] == [
        "First question",
        "Another way",
    ]


def test_branch_waits_while_a_reply_is_written(qtbot, make_window):
    model = write_alphabet_model()
    w = make_window(model)
    _send(qtbot, w, "Hi")
    reply = w.chat.current_assistant()
    w.chat_ctl.set_busy(True)  # as while the next reply is written
    try:
        assert not reply.act_branch.isEnabled()
        assert not w.conversations_ctl.branch_conversation(0)
        assert len(w.history.list_conversations()) == 1
    finally:
        w.chat_ctl.set_busy(False)
    assert reply.act_branch.isEnabled()
