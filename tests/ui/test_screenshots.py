"""``python -m app --screenshot PATH --state STATE`` renders real states in a real process, only
once the state is really reached, and fails loudly (exit 2, nothing saved) when it is not."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from PySide6.QtGui import QImage

REPO = Path(__file__).resolve().parents[2]


def _run(
    tmp_path: Path, state: str, *extra: str, home: Path | None = None
) -> tuple[subprocess.CompletedProcess, Path]:
    out = tmp_path / f"{state}.png"
    env = {
        **os.environ,
        "QT_QPA_PLATFORM": "offscreen",
        "CALLISTO_HOME": str(home or tmp_path / f"home-{state}"),
    }
    proc = subprocess.run(
        [sys.executable, "-m", "app", "--screenshot", str(out), "--state", state, *extra],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    return proc, out


def _shoot(tmp_path: Path, state: str, *extra: str, home: Path | None = None) -> str:
    proc, out = _run(tmp_path, state, "--quit-after", "60", *extra, home=home)
    assert proc.returncode == 0, proc.stderr[-3000:]
    img = QImage(str(out))
    assert not img.isNull() and img.width() > 300 and img.height() > 200
    return proc.stdout


@pytest.mark.parametrize("state", ["banner", "settings"])
def test_screenshot_states_render(tmp_path, streaming_model, state):
    said = _shoot(tmp_path, state, "--model", str(streaming_model))
    assert f": {state} (model: stream.gguf" in said
    if state == "banner":
        assert "banners: no_tool_format" in said


def test_tool_call_state_shows_a_real_call_of_a_tool_calling_model(tmp_path, tool_model):
    model = tool_model("calculator", '{"expression": "17 * 23"}', answer="It is 391.")
    said = _shoot(tmp_path, "tool-call-with-panel", "--model", str(model))
    assert "tool calls: 1; selected: calculator (ok)" in said


def test_tool_call_state_with_a_model_that_calls_no_tool_fails_and_saves_nothing(tmp_path, streaming_model):
    home = tmp_path / "home"
    os.environ["CALLISTO_HOME"] = str(home)
    try:
        from app.storage.settings import Settings, save_settings

        s = Settings()
        s.sampling.max_tokens = 40  # the reply ends soon, without a call
        save_settings(s)
    finally:
        del os.environ["CALLISTO_HOME"]
    proc, out = _run(
        tmp_path, "tool-call-with-panel", "--quit-after", "60", "--model", str(streaming_model), home=home
    )
    assert proc.returncode == 2
    assert "needs a model that calls a tool (pass --model)" in proc.stderr
    assert not out.exists()


@pytest.mark.slow
def test_state_not_reached_within_the_limit_fails_and_saves_nothing(tmp_path):
    from tests.ui.scripted_gguf import CHATML, streaming_script, write_scripted_gguf

    model = write_scripted_gguf(
        tmp_path / "long.gguf",
        chat_template=CHATML,
        script=streaming_script(),
        default_next="a",
        context_length=65_536,
    )
    home = tmp_path / "home"
    os.environ["CALLISTO_HOME"] = str(home)
    try:
        from app.storage.settings import Settings, save_settings

        s = Settings()
        s.sampling.max_tokens = 200_000  # the reply does not finish within the limit: 60k tokens take
        s.model.context_length = 65_536  # far longer than 3 s on a CPU
        save_settings(s)
    finally:
        del os.environ["CALLISTO_HOME"]
    proc, out = _run(tmp_path, "banner", "--quit-after", "3", "--model", str(model), home=home)
    assert proc.returncode == 2, proc.stderr[-2000:]
    # The reason names what was still under way: the reply on a quick machine, or the model's load
    # on a loaded one (3 s can pass before a 64k context is allocated).
    assert re.search(
        r"'banner' state was not reached within 3 s \((the reply had not finished|the model was still loading)",
        proc.stderr,
    ), proc.stderr[-2000:]
    assert not out.exists()


def test_models_state_waits_for_the_library_scan(tmp_path, streaming_model):
    home = tmp_path / "home"
    os.environ["CALLISTO_HOME"] = str(home)
    try:
        from app.engine.models.library import Library

        Library().import_in_place(streaming_model)
    finally:
        del os.environ["CALLISTO_HOME"]
    said = _shoot(tmp_path, "models", home=home)
    rows = said.split("library rows: ")[1]
    assert int(rows.split(":")[0]) >= 1 and "stream" in rows.split(":", 1)[1], said


@pytest.mark.parametrize("state", ["cut-off", "context-full", "failed-load", "recommended"])
def test_new_first_run_states_render(tmp_path, streaming_model, state):
    said = _shoot(tmp_path, state, "--model", str(streaming_model), "--theme", "dark")
    assert f": {state} (model: " in said


def test_server_state_shows_the_running_server_and_its_log(tmp_path, streaming_model):
    said = _shoot(tmp_path, "server", "--model", str(streaming_model))
    assert ": server (model: stream.gguf; server: http://127.0.0.1:" in said and "log rows: 3" in said
    assert "; failed: model 'gpt-4o' not found; available models: stream" in said  # its row says why


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_reply_versions_state_shows_the_pager_on_the_first_version(tmp_path, tool_model, theme):
    model = tool_model("calculator", '{"expression": "17 * 23"}', answer="It is 391.")
    said = _shoot(tmp_path, "reply-versions", "--model", str(model), "--theme", theme)
    assert ": reply-versions (model: " in said and "version 1/2; tool calls: 1" in said


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_live_call_state_shows_a_call_being_written_and_the_counter(tmp_path, theme):
    from tests.support.screenshots import _writing_model

    said = _shoot(tmp_path, "live-call", "--model", str(_writing_model(tmp_path)), "--theme", theme)
    assert "writing a call to: calculator; live: " in said and " tokens" in said


# -- Must show 6: an empty chat without a model, the Models page at 800x600, a theme switched at run time --


def _png_size(tmp_path: Path, state: str) -> tuple[int, int]:
    img = QImage(str(tmp_path / f"{state}.png"))
    return img.width(), img.height()


def _mean_lightness(tmp_path: Path, state: str) -> float:
    """The picture's mean lightness (0 black to 255 white), over a grid of its pixels."""
    img = QImage(str(tmp_path / f"{state}.png"))
    values = [
        img.pixelColor(x, y).lightness()
        for x in range(0, img.width(), 10)
        for y in range(0, img.height(), 10)
    ]
    return sum(values) / len(values)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_empty_no_model_state_points_to_the_recommended_models_and_import(tmp_path, theme):
    said = _shoot(tmp_path, "empty-no-model", "--theme", theme)
    assert ": empty-no-model (model: no model; first contact: Recommended models, Import GGUF…)" in said
    assert _png_size(tmp_path, "empty-no-model") == (1200, 760)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_models_800x600_state_shows_every_action_without_sideways_scrolling(tmp_path, streaming_model, theme):
    home = tmp_path / "home"
    os.environ["CALLISTO_HOME"] = str(home)
    try:
        from app.engine.models.library import Library

        Library().import_in_place(streaming_model)  # a library row: its Load now, Delete and Remove
    finally:
        del os.environ["CALLISTO_HOME"]
    said = _shoot(tmp_path, "models-800x600", "--theme", theme, home=home)
    assert ": models-800x600 (window: 800x600; actions in view: Import GGUF…, Add folder…, Refresh;" in said
    assert "buttons cut at the side: none" in said and "sideways scrolling: none" in said, said
    assert "library rows: " in said and "stream" in said.split("library rows: ")[1], said
    assert _png_size(tmp_path, "models-800x600") == (800, 600)


@pytest.mark.parametrize("theme", ["light", "dark"])
def test_theme_switch_state_switches_to_the_requested_theme_at_run_time(tmp_path, tool_model, theme):
    from PySide6.QtGui import QPalette

    from app.ui.theme import palette

    model = tool_model("calculator", '{"expression": "17 * 23"}', answer="It is 391.")
    said = _shoot(tmp_path, "theme-switch", "--model", str(model), "--theme", theme)
    other = "light" if theme == "dark" else "dark"
    pal = palette(theme == "dark")
    window, text = (pal.color(r).name() for r in (QPalette.ColorRole.Window, QPalette.ColorRole.WindowText))
    assert (
        f"theme: {theme} ({theme}, switched from {other}); palette: {window}, {text}; "
        f"sidebar icons: {text}; tool calls: 1"
    ) in said, said
    assert _png_size(tmp_path, "theme-switch") == (1200, 760)
    lightness = _mean_lightness(tmp_path, "theme-switch")  # the picture itself is in the new theme
    assert lightness < 100 if theme == "dark" else lightness > 160, lightness
