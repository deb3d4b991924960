"""A long prompt is read batch by batch with progress, on the real llama.cpp path (a tiny GGUF).

The batches are the ones llama-cpp-python's own generate() would decode, so the reply is the same
token for token; between batches the progress is reported and a cancel is honoured.

These tests watch llama.cpp's own decode calls, so the model is loaded in this process
(``isolate=False``: the code the engine process runs); the last test reads a long prompt through
an engine process and checks the same progress reaches the caller."""

from __future__ import annotations

import threading

import pytest

from app.engine.generation import generate
from app.engine.llm import load_model

GREEDY = {"temperature": 0.0, "seed": 1}


@pytest.fixture
def model(tiny_gguf):
    m = load_model(tiny_gguf(), n_ctx=2048, n_threads=1, isolate=False)
    assert m.n_ctx == 2048 and m.llm.n_batch == 512
    yield m
    m.close()


def _prompt(model, n: int) -> list[int]:
    ids = model.tokenize("the quick brown fox jumps over the lazy dog " * 200)
    assert len(ids) >= n
    return ids[:n]


def _record_decodes(m) -> list[int]:
    """The batch size of every llama_decode call the model makes from now on."""
    sizes: list[int] = []
    ctx = m.llm._ctx
    original = ctx.decode

    def decode(batch):
        sizes.append(batch.batch.n_tokens)
        return original(batch)

    ctx.decode = decode
    return sizes


def test_long_prompt_reports_progress_per_batch_and_replies_as_before(model, tiny_gguf):
    prompt = _prompt(model, 1300)
    seen: list[tuple[int, int]] = []
    sizes = _record_decodes(model)
    g = generate(
        model,
        prompt,
        max_tokens=8,
        sampling=GREEDY,
        stop=(),
        progress=lambda done, total: seen.append((done, total)),
    )
    text = "".join(g)
    # 1300 = 512 + 512 + 276: two batches read here, the last one by llama-cpp-python's generate()
    assert seen == [(512, 1300), (1024, 1300)]
    assert g.result.prompt_tokens_evaluated == 1300 and g.result.generated_tokens == 8
    assert model.prompt_progress is None  # only set while the prompt is read
    # the same prompt on a second copy of the model, read in one go by llama-cpp-python: same reply
    other = load_model(tiny_gguf(), n_ctx=2048, n_threads=1, isolate=False)
    try:
        other.llm.reset()
        ref_sizes = _record_decodes(other)
        gen = other.llm.generate(prompt, reset=True, **_greedy_kwargs())
        ref_tokens = [next(gen) for _ in range(8)]
        gen.close()
    finally:
        other.close()
    assert g.result.tokens == ref_tokens and text
    # and the very same llama_decode calls, batch for batch: reading it here costs no speed
    assert sizes[:3] == [512, 512, 276] and sizes[:10] == ref_sizes[:10]


def _greedy_kwargs():
    from app.engine.sampling import resolve_sampling

    return resolve_sampling({}, GREEDY).llama_kwargs()


def test_kv_prefix_is_reused_and_only_the_new_batches_are_read(model):
    prompt = _prompt(model, 1300)
    generate(model, prompt, max_tokens=2, sampling=GREEDY, stop=()).run()
    longer = prompt + _prompt(model, 700)
    seen: list[tuple[int, int]] = []
    r = generate(
        model, longer, max_tokens=2, sampling=GREEDY, stop=(), progress=lambda d, t: seen.append((d, t))
    ).run()
    assert r.prompt_tokens_evaluated == 700  # the first 1300 tokens come from the KV cache
    assert seen == [(1812, 2000)]  # 1300 + 512, then the last 188 by generate()


def test_short_prompt_is_left_to_llama_cpp_in_one_batch(model):
    seen: list[tuple[int, int]] = []
    r = generate(
        model,
        _prompt(model, 300),
        max_tokens=2,
        sampling=GREEDY,
        stop=(),
        progress=lambda d, t: seen.append((d, t)),
    ).run()
    assert seen == [] and r.prompt_tokens_evaluated == 300 and r.generated_tokens == 2


def test_cancel_while_the_prompt_is_read_stops_before_the_next_batch(model):
    cancel = threading.Event()
    seen: list[int] = []

    def progress(done: int, _total: int) -> None:
        seen.append(done)
        cancel.set()  # Esc pressed while "Processing prompt…"

    r = generate(
        model, _prompt(model, 1800), max_tokens=8, sampling=GREEDY, stop=(), cancel=cancel, progress=progress
    ).run()
    assert seen == [512]
    assert r.finish_reason == "cancelled" and r.generated_tokens == 0 and r.text == ""
    assert model.prompt_progress is None
    # the model still works afterwards, from what it had read
    again = generate(model, _prompt(model, 1800), max_tokens=2, sampling=GREEDY, stop=()).run()
    assert again.generated_tokens == 2 and again.prompt_tokens_evaluated == 1800 - 512


def test_progress_and_the_reply_come_back_from_the_engine_process(model, tiny_gguf):
    isolated = load_model(tiny_gguf(), n_ctx=2048, n_threads=1)
    try:
        assert isolated.isolated and isolated.llm is None
        prompt = _prompt(model, 1300)
        seen: list[tuple[int, int]] = []
        watched: list[object] = []

        def progress(done: int, total: int) -> None:
            seen.append((done, total))
            watched.append(isolated.prompt_progress)

        g = generate(isolated, prompt, max_tokens=8, sampling=GREEDY, stop=(), progress=progress)
        text = "".join(g)
        assert seen == [(512, 1300), (1024, 1300)] and watched == seen
        assert isolated.prompt_progress is None
        ref = generate(model, prompt, max_tokens=8, sampling=GREEDY, stop=())
        assert "".join(ref) == text and ref.result.tokens == g.result.tokens
        assert g.result.prompt_tokens_evaluated == 1300 == isolated.last_prompt_eval
    finally:
        isolated.close()
