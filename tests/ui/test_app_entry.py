"""``python -m app``: the window is titled Callisto and ``--screenshot`` renders it headlessly (with
Python's cycle collector moved to the GUI thread, as every start of the window does)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from PySide6.QtGui import QImage

REPO = Path(__file__).resolve().parents[2]


def test_screenshot_writes_png_of_the_callisto_window(tmp_path):
    target = tmp_path / "shot.png"
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "CALLISTO_HOME": str(tmp_path / "home"),
    }
    out = subprocess.run(
        [sys.executable, "-m", "app", "--screenshot", str(target), "--quit-after", "60"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert target.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    img = QImage(str(target))
    assert img.width() >= 640 and img.height() >= 400
    # not a blank image: the window drew something
    colours = {img.pixel(x, y) for x in range(0, img.width(), 37) for y in range(0, img.height(), 29)}
    assert len(colours) > 3
    # the window frees reference cycles on its GUI thread only (app.ui.collector)
    log = (tmp_path / "home" / "logs" / "callisto.log").read_text(encoding="utf-8")
    assert "[MainThread] cycle collection runs on the GUI thread" in log


def test_main_window_is_titled_callisto(qtbot, tmp_path, monkeypatch):
    monkeypatch.setenv("CALLISTO_HOME", str(tmp_path))
    from app.ui.main_window import MainWindow

    window = MainWindow(autoload=False)
    qtbot.addWidget(window)
    window.show()
    assert window.windowTitle() == "Callisto"
    assert window.shutdown()


def test_screenshot_in_a_build_without_the_development_tools_says_so(tmp_path, monkeypatch, capsys):
    """The bundle leaves ``app.ui.dev`` out: ``--screenshot`` then exits 2 with a plain reason
    instead of a traceback, and saves nothing."""
    import importlib.util

    from app.ui import application

    real = importlib.util.find_spec
    monkeypatch.setattr(
        application.importlib.util,
        "find_spec",
        lambda name, *a: None if name == "app.ui.dev" else real(name, *a),
    )
    target = tmp_path / "shot.png"
    assert application.main(["--screenshot", str(target)]) == 2
    assert "development tool" in capsys.readouterr().err and not target.exists()
