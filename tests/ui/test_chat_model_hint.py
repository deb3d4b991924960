"""A reopened chat written with another model than the one loaded says so above the chat, with a
Load button that loads that model (the real worker loads the scripted GGUF, and the next reply is
its); the line is gone once that model is loaded, for a new chat, for a chat with the loaded model,
and when the chat's model file is not on this computer."""

from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import Qt

from app.storage.history import Conversation, MessageRecord
from app.storage.settings import Settings
from app.ui.chat_model_hint import ChatModel, chat_model
from tests.ui.scripted_gguf import write_alphabet_model
from tests.ui.turns import send_turn

TIMEOUT = 30_000


def _load(qtbot, w, path: Path) -> None:
    with qtbot.waitSignal(w.sig_model_ready, timeout=TIMEOUT):
        w.model_bar.load_model(str(path))


def test_a_chat_with_another_model_offers_to_load_it(qtbot, make_window):
    alpha, beta = write_alphabet_model("alpha"), write_alphabet_model("beta")
    s = Settings()
    s.sampling.max_tokens = 2
    w = make_window(alpha, settings=s)
    hint = w.conversations_ctl.model_hint
    send_turn(qtbot, w, "with alpha", timeout=TIMEOUT)
    with_alpha = w.conversation_id
    assert hint.isHidden()  # written with the model loaded

    w.new_chat()
    _load(qtbot, w, beta)
    w.open_conversation(with_alpha)
    assert hint.isVisible() and hint.label.text() == "This chat was with alpha"
    assert hint.load_button.text() == "Load alpha" and str(alpha) in hint.load_button.toolTip()

    with qtbot.waitSignal(w.sig_model_ready, timeout=TIMEOUT):
        qtbot.mouseClick(hint.load_button, Qt.MouseButton.LeftButton)
    assert Path(w.model_info.path) == alpha and hint.isHidden()
    send_turn(qtbot, w, "on with alpha", timeout=TIMEOUT)
    assert w.chat.current_assistant().who.text() == "alpha"
    assert w.conversation_id == with_alpha

    _load(qtbot, w, beta)  # the model changes while the chat is open: the line comes back
    assert hint.isVisible()
    w.new_chat()
    assert hint.isHidden()


def test_no_line_for_a_model_that_is_not_here_and_what_a_chat_was_with(qtbot, make_window, tmp_path):
    gone = str(tmp_path / "deleted.gguf")
    w = make_window(write_alphabet_model("alpha"))
    conv = Conversation(
        id=0, title="Old", created=1.0, updated=2.0,
        messages=[
            MessageRecord(0, 0, 0, "user", "hi", created=1.0),
            MessageRecord(0, 0, 1, "assistant", "hello", created=2.0, extra={"model": gone}),
        ],
    )  # fmt: skip
    cid = w.history.restore_conversation(conv).id
    w.open_conversation(cid)
    assert w.conversations_ctl.chat_model == ChatModel(gone, None, "deleted")
    assert w.conversations_ctl.model_hint.isHidden()  # the file is not on this computer

    def reply(extra: dict) -> MessageRecord:
        return MessageRecord(0, 0, 1, "assistant", "x", extra=extra)

    user = MessageRecord(0, 0, 0, "user", "q")
    assert chat_model([user]) is None  # no reply yet
    assert chat_model([user, reply({"model": "Lab box: qwen3"})]) is None  # a remote engine's
    assert chat_model([user, reply({})]) is None  # an old record naming no model
    made = chat_model([user, reply({"model": "/m/base.gguf", "made_model": "helper", "model_name": "base"})])
    assert made == ChatModel("/m/base.gguf", "helper", "helper")
    older = [user, reply({"model": "/m/a.gguf"}), user, reply({"model": "/m/b.gguf"})]
    assert chat_model(older) == ChatModel("/m/b.gguf", None, "b")  # the last reply's
