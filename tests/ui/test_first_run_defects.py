"""The first-run review's defects, each reproduced with its steps on the real window, worker and models.

Each test is named after the defect it reproduces (``test_dN_...``).
"""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtGui import QKeySequence

from app.storage.settings import Settings

DONE_TIMEOUT = 30_000


def _settings(max_tokens: int = 4, **chat) -> Settings:
    s = Settings()
    s.sampling.max_tokens = max_tokens
    for k, v in chat.items():
        setattr(s.chat, k, v)
    return s


def _send(qtbot, w, text: str):
    w.compose.setFocus()
    w.compose.setPlainText(text)
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT) as blocker:
        qtbot.keyClick(w.compose, Qt.Key.Key_Return)
    return blocker.args[0]


def _truncated_copy(src, dst):
    data = src.read_bytes()
    dst.write_bytes(data[: len(data) // 2])
    return dst


def test_d1_failed_load_keeps_old_model_working_and_ui_in_sync(qtbot, make_window, streaming_model, tmp_path):
    w = make_window(streaming_model, settings=_settings())
    old = w.model_info.path
    broken = _truncated_copy(streaming_model, tmp_path / "truncated.gguf")
    with qtbot.waitSignal(w.worker.sig_load_failed, timeout=DONE_TIMEOUT):
        w.load_model(str(broken))
    qtbot.waitUntil(lambda: w.loading_path is None, timeout=5_000)
    # the picker, the badge and Send show the model that is still loaded
    assert w.model_info is not None and w.model_info.path == old
    assert w.model_picker.currentData() == old
    assert w.send_button.isEnabled()
    assert any("truncated.gguf" in t for t in w.window_notice_texts())
    # and it really works: the reply streams from the old model
    done = _send(qtbot, w, "Hi")
    assert done.finish_reason != "error"
    assert w.chat.current_assistant().text() == "abcd"


def test_d1_switching_models_keeps_the_conversation(qtbot, make_window, streaming_model, tool_model):
    w = make_window(streaming_model, settings=_settings())
    _send(qtbot, w, "first")
    other = tool_model("calculator", '{"expression": "1+1"}')
    with qtbot.waitSignal(w.sig_model_ready, timeout=DONE_TIMEOUT):
        w.load_model(str(other))
    assert w.model_info.path == str(other)
    roles = [m.role for m in w.worker.session.messages]
    assert roles[:2] == ["user", "assistant"]


def test_d2_leaving_a_conversation_with_an_older_call_selected_raises_nothing(qtbot, make_window, tool_model):
    path = tool_model("calculator", '{"expression": "6*7"}', answer="42.")
    w = make_window(path, settings=_settings(max_tokens=64))
    _send(qtbot, w, "What is 6*7?")
    _send(qtbot, w, "And again?")
    assert w.tool_panel.list.count() == 2
    # click the first reply's chip: the panel opens with that (older) call selected
    first_chip = next(iter(w.chat.assistant_messages()[0].chips.values()))
    qtbot.mouseClick(first_chip, Qt.MouseButton.LeftButton)
    assert w.tool_panel.selected_call_id() == first_chip.call_id
    # Ctrl+N: pytest-qt fails the test if a slot raises (the KeyError of the review)
    qtbot.keySequence(w, QKeySequence("Ctrl+N"))
    assert w.tool_panel.list.count() == 0 and w.tool_panel.entries == {}


def test_d3_regenerate_older_reply(qtbot, make_window, streaming_model):
    w = make_window(streaming_model, settings=_settings())
    _send(qtbot, w, "a poem")
    _send(qtbot, w, "an essay")
    first_reply = w.chat.assistant_messages()[0]
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT):
        qtbot.mouseClick(first_reply.btn_regen, Qt.MouseButton.LeftButton)
    # the clicked reply was generated again; the later turn (which followed from it) is gone
    assert [m.text for m in w.chat.user_messages()] == ["a poem"]
    assert len(w.chat.assistant_messages()) == 1
    msgs = w.history.load_conversation(w.conversation_id).messages
    assert [(m.role, m.content) for m in msgs] == [("user", "a poem"), ("assistant", "abcd")]
    assert [m.role for m in w.worker.session.messages] == ["user", "assistant"]
