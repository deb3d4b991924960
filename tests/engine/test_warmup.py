"""The warm-up decode at load (``app.engine.warmup``), on the real llama.cpp path (tiny
random-weight GGUFs): a loaded model's context, and a scheduler's, has decoded once before any
request and holds nothing after it; the first greedy reply is the one a model loaded without the
warm-up gives. Shown by llama.cpp's calls and outputs, never by timing."""

from __future__ import annotations

import llama_cpp
import pytest

from app.engine import warmup as warmup_mod
from app.engine.generation import generate
from app.engine.llm import load_model
from app.engine.scheduler import Scheduler

GREEDY = {"temperature": 0}
PROMPTS = ["hello there, how are you", "the quick brown fox jumps"]


@pytest.fixture
def decodes(monkeypatch):
    """The number of tokens of every ``llama_decode`` made (through either binding)."""
    calls: list[int] = []
    real = llama_cpp.llama_cpp.llama_decode

    def spy(ctx, batch):
        calls.append(int(batch.n_tokens))
        return real(ctx, batch)

    monkeypatch.setattr(llama_cpp.llama_cpp, "llama_decode", spy)
    monkeypatch.setattr(llama_cpp, "llama_decode", spy)
    return calls


def _empty(ctx, seqs=1) -> bool:
    mem = llama_cpp.llama_get_memory(ctx)
    return all(llama_cpp.llama_memory_seq_pos_max(mem, s) == -1 for s in range(seqs))


def test_a_model_decodes_once_at_load_and_its_context_is_left_empty(tiny_gguf, decodes):
    m = load_model(tiny_gguf(seed=5), n_ctx=256, n_threads=1, isolate=False)
    try:
        assert len(decodes) == 1 and 1 <= decodes[0] <= 2  # BOS (and EOS), before any request
        llm = m.backend.llm
        assert llm.n_tokens == 0 and _empty(llm._ctx.ctx)
        assert m.backend.total_eval == 0  # not counted as a request's tokens
    finally:
        m.close()


def test_the_first_greedy_replies_are_those_of_a_model_without_warm_up(tiny_gguf, monkeypatch):
    path = tiny_gguf(seed=7)

    def replies():
        m = load_model(path, n_ctx=256, n_threads=1, isolate=False)
        try:
            return [generate(m, p, max_tokens=16, sampling=GREEDY, stop=()).run().tokens for p in PROMPTS]
        finally:
            m.close()

    warm = replies()
    ran: list[bool] = []
    monkeypatch.setattr(warmup_mod, "warm_up", lambda ctx, model: ran.append(True) or False)
    cold = replies()
    assert ran  # the second model really loaded without the warm-up
    assert warm == cold and all(len(t) == 16 for t in warm)


def test_a_schedulers_context_is_warmed_up_and_left_empty(tiny_gguf, decodes):
    m = load_model(tiny_gguf(seed=9), n_ctx=256, n_threads=1, isolate=False)
    try:
        decodes.clear()
        sched = Scheduler(m, 2, lambda msg: None, lambda gid: False)
        try:
            assert len(decodes) == 1 and 1 <= decodes[0] <= 2
            assert _empty(sched._ctx.ctx, seqs=2)
        finally:
            sched.close()
    finally:
        m.close()
