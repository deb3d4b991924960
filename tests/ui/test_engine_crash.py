"""The model's engine process dies mid-reply (SIGKILL, what the out-of-memory killer sends): the
window stays, keeps what was shown, says what happened in plain words, and a fresh engine is one
click (or the next message) away. Real window, real llama.cpp in its real engine process."""

from __future__ import annotations

import os
import signal
import sys

import pytest
from PySide6.QtCore import Qt

from app.storage.settings import Settings

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

DONE_TIMEOUT = 30_000


def _settings(max_tokens: int) -> Settings:
    s = Settings()
    s.sampling.max_tokens = max_tokens
    return s


def _start(qtbot, w, text: str) -> None:
    w.compose.setFocus()
    w.compose.setPlainText(text)
    qtbot.keyClick(w.compose, Qt.Key.Key_Return)


def _kill_mid_reply(qtbot, w):
    _start(qtbot, w, "tell me everything")
    qtbot.waitUntil(
        lambda: w.chat.current_assistant() is not None and len(w.chat.current_assistant().text()) > 20,
        timeout=DONE_TIMEOUT,
    )
    pid = w.worker.model.engine.pid
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT) as blocker:
        os.kill(pid, signal.SIGKILL)
    return pid, blocker.args[0]


def test_a_crash_mid_reply_keeps_the_window_and_the_text_and_reload_starts_a_fresh_engine(
    qtbot, make_window, streaming_model
):
    w = make_window(streaming_model, settings=_settings(max_tokens=100_000))
    pid, done = _kill_mid_reply(qtbot, w)
    assert done.finish_reason == "error" and done.engine_crashed
    reply = w.chat.current_assistant()
    assert w.isVisible()
    assert reply.text().startswith("abc")  # what was shown stays
    box = reply.error_box
    assert box is not None and "crashed while generating" in box.message and "killed" in box.message
    assert "Reload the model" in box.buttons
    with qtbot.waitSignal(w.sig_model_ready, timeout=DONE_TIMEOUT):
        box.buttons["Reload the model"].click()
    assert w.worker.model.engine.pid != pid and w.worker.model.crash is None
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT) as blocker:
        _start(qtbot, w, "again")
        qtbot.waitUntil(lambda: len(w.chat.current_assistant().text()) > 5, timeout=DONE_TIMEOUT)
        w.worker.cancel()
    assert blocker.args[0].finish_reason == "cancelled"


def test_the_next_message_after_a_crash_gets_a_fresh_engine_by_itself(qtbot, make_window, streaming_model):
    w = make_window(streaming_model, settings=_settings(max_tokens=100_000))
    pid, done = _kill_mid_reply(qtbot, w)
    assert done.engine_crashed
    with qtbot.waitSignal(w.sig_turn_done, timeout=DONE_TIMEOUT) as blocker:
        _start(qtbot, w, "hello again")  # the send starts a fresh engine first, then replies
        qtbot.waitUntil(
            lambda: (
                w.worker.model is not None
                and w.worker.model.engine is not None
                and w.worker.model.engine.pid != pid
                and len(w.chat.current_assistant().text()) > 5
            ),
            timeout=DONE_TIMEOUT,
        )
        w.worker.cancel()
    assert blocker.args[0].finish_reason == "cancelled" and not blocker.args[0].engine_crashed
    assert w.worker.model.crash is None
