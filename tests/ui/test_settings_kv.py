"""Issue 31: the KV cache's type and flash attention in Settings -> Model (global) and This model
(per model), through to the worker's config and the load settings the engine gets."""

from __future__ import annotations

from app.storage.settings import ModelOverride, Settings, model_key
from app.ui.settings_dialog import SettingsDialog
from app.ui.window_state import engine_config_for


def test_the_model_tabs_show_and_save_the_kv_settings(qtbot, tmp_path):
    path = str(tmp_path / "m.gguf")
    s = Settings()
    s.set_override(model_key(path), ModelOverride(kv_type="q8_0"))
    dlg = SettingsDialog(s, detected_label=None, model_path=path, model_name="m")
    qtbot.addWidget(dlg)
    assert dlg.open_at("model.kv_type") is dlg.kv_type
    assert dlg.kv_type.currentData() == "f16" and dlg.flash_attn.currentData() is True
    assert dlg.model_kv_type is not None and dlg.model_kv_type.currentData() == "q8_0"
    assert dlg.model_flash_attn is not None and dlg.model_flash_attn.currentData() is None
    dlg.kv_type.setCurrentIndex(dlg.kv_type.findData("q4_0"))
    dlg.kv_store_mib.setValue(256)
    dlg.model_flash_attn.setCurrentIndex(dlg.model_flash_attn.findData(False))
    out = dlg.result_settings()
    assert (out.model.kv_type, out.model.flash_attn, out.model.kv_store_mib) == ("q4_0", True, 256)
    ov = out.override_for(path)
    assert ov is not None and (ov.kv_type, ov.flash_attn) == ("q8_0", False)
    # the worker's config: the override on top, a quantized cache without flash attention is f16
    cfg = engine_config_for(out, path)
    assert (cfg.kv_type, cfg.flash_attn, cfg.kv_store_mib) == ("f16", False, 256)
    assert engine_config_for(out, str(tmp_path / "other.gguf")).kv_type == "q4_0"
    # back to the global values: the override is removed
    dlg.model_kv_type.setCurrentIndex(0)
    dlg.model_flash_attn.setCurrentIndex(0)
    assert dlg.result_settings().override_for(path) is None


def test_the_worker_loads_with_the_kv_settings(tmp_path):
    from app.ui.engine_types import EngineConfig, EngineState
    from app.ui.worker_session import Sessions

    state = EngineState(config=EngineConfig(kv_type="q8_0", flash_attn=True, kv_store_mib=64))
    sessions = Sessions(state, host=None, signals=None, mcp_host=None, approvals=None)  # type: ignore[arg-type]
    ls = sessions.load_settings()
    assert (ls.kv_type, ls.flash_attn) == ("q8_0", True)
    assert ls.kv_store is not None and ls.kv_store.max_bytes == 64 * 1024**2
    assert ls.kv_store.folder.endswith("kv")
    state.config.kv_store_mib = 0
    assert sessions.load_settings().kv_store is None
