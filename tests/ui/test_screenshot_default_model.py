"""U24: ``python -m app --screenshot X.png --state tool-call-with-panel`` without ``--model`` uses
the last (or demo) model, as the README says, and shows a real call of it: the tool control on
"Call calculator" and, where the template shows no format, Hermes, as a person would set them."""

from __future__ import annotations

import pytest

from tests.ui.test_screenshots import _shoot


@pytest.mark.live
def test_u24_the_tool_state_works_with_the_default_model(tmp_path, smollm2_path, monkeypatch):
    from app.storage.settings import Settings, save_settings

    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("CALLISTO_HOME", str(home))
    s = Settings()
    s.model.last_model_path = str(smollm2_path)  # the last model: no --model is passed
    save_settings(s)
    said = _shoot(tmp_path, "tool-call-with-panel", home=home)
    assert "SmolLM2" in said and "selected: calculator (" in said, said  # its own call (ok or not)
