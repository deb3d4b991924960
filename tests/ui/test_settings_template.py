"""Settings > This model's chat template: shown and saved with the model's override, said in words
under the editor as it is typed (the model's own, the call format it writes, or why it cannot be
read), and carried to the window's load settings and the window's server."""

from __future__ import annotations

from pathlib import Path

from app.storage.settings import ModelOverride, Settings, model_key
from app.ui.settings_dialog import SettingsDialog
from app.ui.window_state import engine_config_for

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates"


def test_this_model_tab_shows_checks_and_saves_a_chat_template(qtbot, tmp_path):
    from app.server._state import template_key
    from app.ui.engine_types import EngineState
    from app.ui.server_slots import load_fields
    from app.ui.worker_session import Sessions

    path = str(tmp_path / "m.gguf")
    s = Settings()
    s.set_override(model_key(path), ModelOverride(chat_template="{{ messages[0].content }}"))
    dlg = SettingsDialog(s, detected_label=None, model_path=path, model_name="m")
    qtbot.addWidget(dlg)
    edit, note = dlg.model_chat_template, dlg.override_tab.template_note
    assert edit is not None and note is not None
    assert edit.toPlainText() == "{{ messages[0].content }}"
    assert "writes no tool-call format" in note.text()

    hermes = (TEMPLATES / "Qwen-Qwen2.5-7B-Instruct.jinja").read_text(encoding="utf-8")
    edit.setPlainText(hermes)
    from app.ui.engine_types import format_label

    assert f"read as {format_label('hermes')}" in note.text() and "loads the model again" in note.text()
    out = dlg.result_settings()
    assert out.override_for(path).chat_template == hermes
    cfg = engine_config_for(out, path)
    assert (
        cfg.chat_template == hermes
        and engine_config_for(out, str(tmp_path / "other.gguf")).chat_template is None
    )
    sessions = Sessions(EngineState(config=cfg), host=None, signals=None, mcp_host=None, approvals=None)  # type: ignore[arg-type]
    assert sessions.load_settings().chat_template == hermes
    # the window's server loads this model with it, and only this one
    assert load_fields(out, path)["chat_templates"] == {template_key(path): hermes}

    edit.setPlainText("{% for m in messages %}")  # no endfor: kept (nothing typed is lost), said
    assert "cannot be read" in note.text()
    assert dlg.result_settings().override_for(path).chat_template == "{% for m in messages %}"

    edit.setPlainText("  \n")  # empty: the model's own, and no override is left
    assert note.text() == "The model's own template is used."
    assert dlg.result_settings().override_for(path) is None
