"""Issue 32: the round limit of a turn's tool calls is a setting the window shows and saves."""

from __future__ import annotations

from app.storage.settings import Settings
from app.ui.settings_dialog import SettingsDialog


def test_i32_the_settings_dialog_shows_and_saves_the_tool_round_limit(qtbot):
    s = Settings()
    s.chat.max_tool_rounds = 5
    dlg = SettingsDialog(s, detected_label=None, model_path=None, model_name=None)
    qtbot.addWidget(dlg)
    spin = dlg.open_at("chat.max_tool_rounds")  # the round-limit notice's link opens it
    assert spin is dlg.max_tool_rounds and spin.value() == 5
    assert (spin.minimum(), spin.maximum()) == (1, 100)
    spin.setValue(12)
    assert dlg.result_settings().chat.max_tool_rounds == 12
    assert s.chat.max_tool_rounds == 5  # the original is untouched until saved
