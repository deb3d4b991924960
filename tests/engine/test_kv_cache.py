"""The KV cache's type (f16, q8_0, q4_0) and flash attention as load options: what llama.cpp
keeps per token (measured: the sequence state llama.cpp reports), the memory estimate that the
Models page shows, the refusal of a quantized cache without flash attention, and how q8_0 changes
greedy output (only at near-ties of the f16 model: measured on SmolLM2, a live test)."""

from __future__ import annotations

import ctypes
import sys

import pytest

from app.engine.errors import ModelLoadError
from app.engine.generation import generate
from app.engine.llm import LoadSettings, load_model
from app.engine.models.estimate import KV_BYTES_PER_ELEMENT, estimate_memory, estimate_remote, kv_cache_bytes
from tests.support.memory_bound import refusals_under_memory_bound

GREEDY = {"temperature": 0.0}
PROMPTS = [
    "The capital of France is",
    "def fibonacci(n):",
    "Once upon a time, in a small village,",
    "List three colors:",
    "Water boils at",
    "The quick brown fox",
    "import numpy as np\n",
    "Translate to French: good morning",
    "1, 2, 3, 4,",
    "My favourite book is",
]


def _seq_state_bytes(model) -> int:
    """The bytes llama.cpp reports for sequence 0's state (its KV cells, plus a small header)."""
    import llama_cpp

    return int(llama_cpp.llama_state_seq_get_size(model.llm._ctx.ctx, 0))


def _kv_sizes(path, text: str, n_ctx: int = 1024) -> dict[str, int]:
    sizes = {}
    for kv in ("f16", "q8_0", "q4_0"):
        m = load_model(path, n_ctx=n_ctx, n_threads=1, isolate=False, kv_type=kv)
        try:
            generate(m, text, max_tokens=1, sampling=GREEDY).run()
            assert m.llm.n_tokens >= 300
            sizes[kv] = _seq_state_bytes(m)
        finally:
            m.close()
    return sizes


def test_q8_0_halves_the_kv_memory_and_the_estimate_says_so(tiny_gguf):
    # head_dim 32: llama.cpp's quantized blocks hold 32 values
    path = tiny_gguf(embedding_length=128, head_count=4, block_count=2)
    sizes = _kv_sizes(path, "hello world " * 40)
    assert 0.45 <= sizes["q8_0"] / sizes["f16"] <= 0.56  # 34 bytes per 32 values against 64
    assert 0.25 <= sizes["q4_0"] / sizes["f16"] <= 0.31  # 18 against 64
    # the estimate uses the same ratios
    f16 = kv_cache_bytes(2, 4096, 4, 32)
    for kv in ("q8_0", "q4_0"):
        est = kv_cache_bytes(2, 4096, 4, 32, kv_type=kv)
        assert est / f16 == pytest.approx(KV_BYTES_PER_ELEMENT[kv] / 2)
        assert est / f16 == pytest.approx(sizes[kv] / sizes["f16"], rel=0.06)


def test_the_memory_estimate_follows_the_kv_type():
    ram = (64 * 1024**3, 32 * 1024**3)
    shape = {
        "weights_bytes": 10**9,
        "n_layers": 32,
        "n_kv_heads": 8,
        "head_dim": 128,
        "n_ctx": 32768,
        "ram": ram,
    }
    f16, q8, q4 = (estimate_memory(**shape, kv_type=kv) for kv in ("f16", "q8_0", "q4_0"))
    assert f16.kv_bytes == 2 * 32 * 32768 * 8 * 128 * 2
    assert q8.kv_bytes == f16.kv_bytes * 34 // 64
    assert q4.kv_bytes == f16.kv_bytes * 18 // 64
    assert q8.total_bytes < f16.total_bytes and f16.weights_bytes == q8.weights_bytes
    r16, r8 = (estimate_remote(4 * 10**9, "Q4_K_M", 32768, ram=ram, kv_type=kv) for kv in ("f16", "q8_0"))
    assert r8.kv_bytes == pytest.approx(r16.kv_bytes * 34 / 64, rel=1e-6)
    with pytest.raises(ValueError, match="KV cache type"):
        kv_cache_bytes(2, 10, 1, 32, kv_type="q3")


def test_a_quantized_kv_cache_needs_flash_attention(tiny_gguf):
    path = tiny_gguf(embedding_length=128, head_count=4)
    for kv in ("q8_0", "q4_0"):
        with pytest.raises(ModelLoadError, match="flash attention"):
            load_model(path, n_ctx=512, n_threads=1, isolate=False, kv_type=kv, flash_attn=False)
    with pytest.raises(ModelLoadError, match="KV cache type"):
        load_model(path, n_ctx=512, n_threads=1, isolate=False, kv_type="q5_9")
    # f16 without flash attention loads
    m = load_model(path, n_ctx=512, n_threads=1, isolate=False, flash_attn=False)
    try:
        assert generate(m, "hi", max_tokens=2, sampling=GREEDY).run().generated_tokens >= 0
    finally:
        m.close()


def test_a_quantized_kv_cache_on_heads_its_blocks_do_not_divide_is_refused_with_why(tiny_gguf):
    """llama.cpp's context fails with no word of why (its log says it) when a head's size is not
    a multiple of the quantized blocks' 32 values (phi-2's 80, the default tiny model's 16)."""
    path = tiny_gguf()  # 64 values over 4 heads: 16 a head
    for kv in ("q8_0", "q4_0"):
        with pytest.raises(
            ModelLoadError,
            match=f"a {kv} KV cache stores a head in blocks of 32 values and "
            "this model's heads are 16 values long: load it with an f16 KV cache",
        ):
            load_model(path, n_ctx=512, n_threads=1, isolate=False, kv_type=kv)
    load_model(path, n_ctx=512, n_threads=1, isolate=False).close()  # f16 loads


def test_the_engine_process_loads_with_the_kv_type(tiny_gguf):
    """The options cross to the engine process (LoadSettings, as the host and the window pass them)."""
    path = tiny_gguf(embedding_length=128, head_count=4)
    m = load_model(path, settings=LoadSettings(n_ctx=512, n_threads=1, kv_type="q4_0"))
    try:
        assert m.isolated
        r = generate(m, "hello " * 20, max_tokens=3, sampling=GREEDY).run()
        assert r.prompt_tokens_evaluated == r.prompt_tokens
    finally:
        m.close()
    with pytest.raises(ModelLoadError, match="flash attention"):
        load_model(path, settings=LoadSettings(n_ctx=512, n_threads=1, kv_type="q8_0", flash_attn=False))


def _last_logits(model, tokens: list[int]):
    import llama_cpp
    import numpy as np

    llm = model.llm
    llm.reset()
    llm.eval(tokens)
    ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
    return np.ctypeslib.as_array(
        ctypes.cast(ptr, ctypes.POINTER(ctypes.c_float)), shape=(llm.n_vocab(),)
    ).copy()


@pytest.mark.live
def test_q8_0_kv_on_smollm2_halves_memory_and_changes_greedy_output_only_at_near_ties(smollm2_path):
    """Measured on SmolLM2-135M (Q4_1), 10 prompts, 24 greedy tokens each: the q8_0 sequence state
    is 0.53 of f16's (34/64). Greedy output is identical on about half of the prompts; where it
    differs, the two paths part at a near-tie of the f16 model (its top two candidates within a
    fraction of a logit, less than the quantization's perturbation of the logits), never where the
    f16 model is sure. This is what the test holds: every divergence is such a near-tie, and most of
    the generated tokens agree."""
    sizes = _kv_sizes(smollm2_path, "hello " * 300)
    assert 0.50 <= sizes["q8_0"] / sizes["f16"] <= 0.56

    models = {
        kv: load_model(smollm2_path, n_ctx=1024, n_threads=1, isolate=False, kv_type=kv)
        for kv in ("f16", "q8_0")
    }
    try:
        outs: dict[str, list[list[int]]] = {kv: [] for kv in models}
        for kv, m in models.items():
            for q in PROMPTS:
                m.reset_cache()
                outs[kv].append(generate(m, q, max_tokens=24, sampling=GREEDY).run().tokens)
        agree = 0
        f16 = models["f16"]
        for q, a, b in zip(PROMPTS, outs["f16"], outs["q8_0"], strict=True):
            i = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
            agree += i
            if a == b:
                continue
            lf = _last_logits(f16, f16.tokenize(q) + a[:i])
            lq = _last_logits(models["q8_0"], f16.tokenize(q) + a[:i])
            fa, qb = int(lf.argmax()), int(lq.argmax())  # each one's choice there (an end token included)
            assert fa != qb
            assert lf[fa] - lf[qb] < 1.0, f"{q!r}: q8_0 left the f16 path where f16 was sure"
        assert agree >= 0.5 * sum(len(a) for a in outs["f16"])
    finally:
        for m in models.values():
            m.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS bounds memory on Linux only")
def test_a_context_whose_kv_cache_does_not_fit_is_a_load_error_that_says_its_size(tiny_gguf):
    path = tiny_gguf(context_length=2**24)  # 2 layers, 4 KV heads of 16, f16: 512 bytes a token
    refusals = refusals_under_memory_bound(
        "from app.engine.llm import load_model",
        # 4 M tokens: 2 GiB of KV, past the 1 GiB the bound leaves
        "load_model(sys.argv[1], n_ctx=2**22, n_threads=1, isolate=False).close()",
        "load_model(sys.argv[1], n_ctx=512, n_threads=1, isolate=False).close()  # a context that fits loads",
        str(path),
        headroom_mib=1024,
    )
    assert refusals == [
        f"Cannot load {path}: llama.cpp could not load the model (Failed to create llama_context): a KV "
        "cache of about 2.0 GiB for 4,194,304 tokens may not fit in this machine's memory; lower the "
        "context length"
    ]
