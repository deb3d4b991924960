"""The Qt binding the window runs on keeps ``None`` alive (``app.ui.binding_check``).

PySide6 6.12.0 on Python 3.11 gave back a reference to ``None`` on every Qt call that returns
nothing, and the process died ("deallocating None") once the count ran out: the pins keep it off
Python 3.11. This test fails on such an environment, before a long UI run or a user's session does.
"""

from __future__ import annotations

import sys

from app.ui.binding_check import binding_problem, releases_none


def test_qt_calls_that_return_nothing_leave_none_alive(qtbot):
    from PySide6.QtWidgets import QLabel

    label = QLabel("x")
    qtbot.addWidget(label)
    before = sys.getrefcount(None)
    for k in range(2_000):
        label.setText(str(k % 3))
        label.update()
    assert before - sys.getrefcount(None) < 1_000, "each call released None"
    assert not releases_none() and binding_problem() is None
