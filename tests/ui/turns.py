"""Driving a turn in the real window and waiting for its end (``sig_turn_done``)."""

from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt

__all__ = ["send_turn"]


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
