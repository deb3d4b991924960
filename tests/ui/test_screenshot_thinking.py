"""Issue 30: ``--screenshot --state thinking`` renders the thinking control (On, with a budget)
and the reply whose reasoning the budget closed, in both themes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

from tests.support.thinker import GREETING, write_screenshot_thinker

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_thinking_state_shows_the_control_and_a_bounded_reply(tmp_path, theme):
    model = write_screenshot_thinker(tmp_path / "Scripted-Thinker.gguf")
    out = tmp_path / "thinking.png"
    proc = subprocess.run(
        [sys.executable, "-m", "app", "--screenshot", str(out), "--state", "thinking", "--model", str(model)]
        + ["--quit-after", "60", "--theme", theme],
        cwd=REPO,
        env={
            **os.environ,
            "QT_QPA_PLATFORM": "offscreen",
            "CALLISTO_HOME": str(tmp_path / "home"),
            "PYTHONPATH": str(REPO),
        },
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    img = QImage(str(out))
    assert not img.isNull() and img.width() > 300 and img.height() > 200
    assert "thinking: Thinking: On, Budget: 8 tokens" in proc.stdout, proc.stdout
    assert f"answer: {GREETING}" in proc.stdout and "reasoning: 0 chars" not in proc.stdout


def test_thinking_state_needs_a_model_with_a_switch(tmp_path, streaming_model):
    out = tmp_path / "thinking.png"
    proc = subprocess.run(
        [sys.executable, "-m", "app", "--screenshot", str(out), "--state", "thinking"]
        + ["--model", str(streaming_model), "--quit-after", "60"],
        cwd=REPO,
        env={
            **os.environ,
            "QT_QPA_PLATFORM": "offscreen",
            "CALLISTO_HOME": str(tmp_path / "home"),
            "PYTHONPATH": str(REPO),
        },
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert proc.returncode == 2 and "thinking switch" in proc.stderr and not out.exists()
