"""``python -m app --screenshot PATH --state STATE`` renders real states in a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

REPO = Path(__file__).resolve().parents[2]


def _shoot(tmp_path: Path, state: str, *extra: str) -> QImage:
    out = tmp_path / f"{state}.png"
    env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "CALLISTO_HOME": str(tmp_path / f"home-{state}")}
    proc = subprocess.run([sys.executable, "-m", "app", "--screenshot", str(out), "--state", state,
                           "--quit-after", "60", *extra], cwd=REPO, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    img = QImage(str(out))
    assert not img.isNull() and img.width() > 300 and img.height() > 200
    return img


@pytest.mark.parametrize("state", ["banner", "settings"])
def test_screenshot_states_render(tmp_path, streaming_model, state):
    _shoot(tmp_path, state, "--model", str(streaming_model))
