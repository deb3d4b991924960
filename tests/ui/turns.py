"""Driving a turn in the real window and waiting for its end (``sig_turn_done``), and the real
window over the scripted alphabet model, made active."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

__all__ = ["alphabet_window", "send_turn"]


def send_turn(qtbot: Any, w: Any, text: str, *, timeout: int, enter: bool = False) -> Any:
    """Type ``text`` and send it (the Send action, or Enter in the box with ``enter``); the turn's
    DoneEvent."""
    if enter:
        w.compose.setFocus()
    w.compose.setPlainText(text)
    with qtbot.waitSignal(w.sig_turn_done, timeout=timeout) as blocker:
        if enter:
            qtbot.keyClick(w.compose, Qt.Key.Key_Return)
        else:
            assert w.send()
    return blocker.args[0]


def alphabet_window(qtbot: Any, make_window: Any, *, max_tokens: int = 3, history: Any = None) -> Any:
    """The real window (``make_window``) with the scripted alphabet model loaded (each reply is
    "abc…", ``max_tokens`` long), made the active window so its shortcuts and focus work."""
    from app.storage.settings import Settings
    from tests.ui.scripted_gguf import write_alphabet_model

    s = Settings()
    s.sampling.max_tokens = max_tokens
    w = make_window(write_alphabet_model(), settings=s, history=history)
    with qtbot.waitActive(w):
        w.activateWindow()
    return w
