"""The window asks for the person's attention (taskbar flash, Dock bounce: ``QApplication.alert``)
when a reply ends or a call waits for approval while it is in the background, and not while it is
the active window or when the person stopped the reply. The real window, worker and scripted GGUFs;
"in the background" is another real window being the active one."""

from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QWidget

from app.storage.settings import Settings
from tests.ui.scripted_gguf import write_alphabet_model
from tests.ui.turns import send_turn

TIMEOUT = 30_000


def _elsewhere(qtbot) -> QWidget:
    """Another window, made the active one (the person went to another program)."""
    other = QWidget()
    qtbot.addWidget(other)
    other.show()
    with qtbot.waitActive(other):
        other.activateWindow()
    return other


def test_a_reply_that_ends_in_the_background_asks_for_attention(qtbot, make_window):
    s = Settings()
    s.sampling.max_tokens = 3
    w = make_window(write_alphabet_model(), settings=s)
    with qtbot.waitActive(w):
        w.activateWindow()
    send_turn(qtbot, w, "here", timeout=TIMEOUT)
    assert w.chat_ctl.attention_asked == 0  # the person is looking

    _elsewhere(qtbot)
    assert not w.isActiveWindow()
    send_turn(qtbot, w, "while away", timeout=TIMEOUT)
    assert w.last_done.finish_reason == "length" and w.chat_ctl.attention_asked == 1

    # stopped by the person: nothing to tell
    w.state.settings.sampling.max_tokens = 3900
    w.settings_ctl.apply_settings(w.state.settings)
    w.compose.setPlainText("write on")
    assert w.send()
    qtbot.waitUntil(lambda: len(w.chat.current_assistant().text()) > 0, timeout=TIMEOUT)
    with qtbot.waitSignal(w.sig_turn_done, timeout=TIMEOUT):
        w.stop()
    assert w.last_done.finish_reason == "cancelled" and w.chat_ctl.attention_asked == 1


def test_a_call_waiting_for_approval_in_the_background_asks_for_attention(
    qtbot, make_window, tool_model, tmp_path
):
    ws = tmp_path / "workspace"
    ws.mkdir()
    s = Settings()
    s.sampling.max_tokens = 64
    s.tools.workspace = str(ws)
    w = make_window(
        tool_model("write_file", '{"path": "a.txt", "content": "hi"}', answer="Done."), settings=s
    )
    _elsewhere(qtbot)
    w.compose.setPlainText("Write a note")
    assert w.send()
    qtbot.waitUntil(lambda: w.approval_dialog is not None, timeout=TIMEOUT)
    assert w.chat_ctl.attention_asked == 1  # the call waits for the person
    with qtbot.waitSignal(w.sig_turn_done, timeout=TIMEOUT):
        qtbot.mouseClick(w.approval_dialog.btn_once, Qt.MouseButton.LeftButton)
    assert (ws / "a.txt").read_text() == "hi"
