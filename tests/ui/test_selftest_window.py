"""The self-test's window check, from source: the bundle's ``--self-test --screenshot`` runs it."""

from __future__ import annotations

from PySide6.QtGui import QImage

from app.ui.selftest_window import render_main_window


def test_the_window_check_renders_the_window_and_saves_its_screenshot(qtbot, tmp_path):
    shot = tmp_path / "shots" / "window.png"
    info = render_main_window(shot)
    assert info["width"] > 0 and info["height"] > 0 and info["colours_sampled"] >= 3
    image = QImage(str(shot))
    assert not image.isNull() and (image.width(), image.height()) == (info["width"], info["height"])
