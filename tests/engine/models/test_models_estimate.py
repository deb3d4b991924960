"""Memory estimates and quantization names."""

from __future__ import annotations

import pytest

from app.engine.models.estimate import (
    FITS,
    TIGHT,
    TOO_LARGE,
    classify,
    estimate_memory,
    estimate_remote,
    kv_cache_bytes,
    quant_from_filename,
    system_ram,
)

GIB = 1024**3


@pytest.mark.parametrize(
    ("name", "quant"),
    [
        ("Qwen3-8B-Q4_K_M.gguf", "Q4_K_M"),
        ("model.Q8_0.gguf", "Q8_0"),
        ("Llama-3.3-70B-Instruct-IQ2_XXS-00001-of-00002.gguf", "IQ2_XXS"),
        ("gemma-3-4b-it-bf16.gguf", "BF16"),
        ("SmolLM2-135M-Instruct.Q4_1.gguf", "Q4_1"),
        ("phi-4-IQ4_NL.gguf", "IQ4_NL"),
        ("plain-model.gguf", None),
    ],
)
def test_quant_from_filename(name, quant):
    assert quant_from_filename(name) == quant


def test_kv_cache_formula():
    # Llama 3 8B: 32 layers, 8 KV heads of 128 dims, 8192 tokens, f16 -> 1 GiB
    assert kv_cache_bytes(32, 8192, 8, 128) == 1 * GIB


def test_classify_thresholds():
    assert classify(69, 100) == FITS
    assert classify(70, 100) == TIGHT
    assert classify(89, 100) == TIGHT
    assert classify(90, 100) == TOO_LARGE


def test_context_raises_the_estimate():
    small = estimate_remote(4 * GIB, "Q4_K_M", 2048, ram=(16 * GIB, 8 * GIB))
    big = estimate_remote(4 * GIB, "Q4_K_M", 131072, ram=(16 * GIB, 8 * GIB))
    assert small.weights_bytes == big.weights_bytes == 4 * GIB
    assert big.kv_bytes > 32 * small.kv_bytes
    assert small.fit == FITS and big.fit == TOO_LARGE


def test_local_estimate_uses_the_shape():
    est = estimate_memory(
        weights_bytes=GIB, n_layers=16, n_kv_heads=8, head_dim=64, n_ctx=4096, ram=(8 * GIB, GIB)
    )
    assert est.kv_bytes == 2 * 16 * 4096 * 8 * 64 * 2
    assert est.total_bytes == est.weights_bytes + est.kv_bytes + est.overhead_bytes
    assert "GiB" in est.describe()


def test_system_ram_is_real():
    total, available = system_ram()
    assert total > 0 and 0 < available <= total
