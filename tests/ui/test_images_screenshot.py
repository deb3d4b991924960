"""Issue 30: ``--screenshot --state image-chat`` renders a message with a picture's thumbnail and
the reply to it, in both themes (``make screenshots`` uses the same scripted vision model); a model
that reads no images cannot reach the state."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

from app.engine.vision import mtmd_available
from tests.support.screenshots import VISION_ANSWER, write_vision_model

REPO = Path(__file__).resolve().parents[2]
HAVE_MTMD, WHY_NOT = mtmd_available()


def _shoot(
    tmp_path: Path, model: Path, theme: str = "light"
) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path / "image-chat.png"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "app",
            "--screenshot",
            str(out),
            "--state",
            "image-chat",
            "--model",
            str(model),
        ]
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
    return proc, out


@pytest.mark.skipif(not HAVE_MTMD, reason=WHY_NOT)
@pytest.mark.parametrize("theme", ["light", "dark"])
def test_image_chat_state_shows_the_thumbnail_and_the_reply(tmp_path, theme):
    proc, out = _shoot(tmp_path, write_vision_model(tmp_path / "vision"), theme)
    assert proc.returncode == 0, proc.stderr[-3000:]
    img = QImage(str(out))
    assert not img.isNull() and img.width() > 300 and img.height() > 200
    assert "image thumbnails: 1" in proc.stdout, proc.stdout
    assert f"reply characters: {len(VISION_ANSWER)}" in proc.stdout, proc.stdout


def test_image_chat_state_needs_a_model_that_reads_images(tmp_path, streaming_model):
    proc, out = _shoot(tmp_path, streaming_model)
    assert proc.returncode == 2 and "needs a model that reads images" in proc.stderr and not out.exists()
