"""The KV cache settings: a global default, a per-model override, and the rule that a quantized
KV cache needs flash attention (without it the effective cache is f16)."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from app.storage.settings import ModelOverride, Settings, effective_settings, model_key


def test_kv_type_and_flash_attention_per_model(tmp_path):
    s = Settings()
    path = str(tmp_path / "m.gguf")
    eff = effective_settings(s, path)
    assert (eff.kv_type, eff.flash_attn) == ("f16", True)
    s.model.kv_type = "q4_0"
    assert effective_settings(s, path).kv_type == "q4_0"
    s.set_override(model_key(path), ModelOverride(kv_type="q8_0"))
    eff = effective_settings(s, path)
    assert (eff.kv_type, eff.flash_attn) == ("q8_0", True)
    assert "kv_type" in eff.overridden and eff.to_dict()["kv_type"] == "q8_0"
    assert effective_settings(s, str(tmp_path / "other.gguf")).kv_type == "q4_0"
    s.set_override(model_key(path), ModelOverride(kv_type="q8_0", flash_attn=False))
    eff = effective_settings(s, path)
    assert (eff.kv_type, eff.flash_attn) == ("f16", False)  # llama.cpp quantizes V only with flash attention


def test_kv_settings_round_trip_and_reject_unknown_types(tmp_path):
    s = Settings()
    s.model.kv_store_mib = 512
    s.set_override("abc", ModelOverride(kv_type="q4_0", flash_attn=True))
    back = Settings.model_validate_json(s.model_dump_json())
    assert back.model.kv_store_mib == 512
    assert back.model_overrides["abc"].kv_type == "q4_0"
    with pytest.raises(ValidationError):
        ModelOverride(kv_type="q5_1")
    with pytest.raises(ValidationError):
        Settings.model_validate({"model": {"kv_store_mib": -1}})
