"""``logit_bias`` (``app.engine.sampling.LogitBias``): each token id's bias to its logit, on the
real llama.cpp path: the single sequence path, the scheduler's slots and the engine process. A
random-weight tiny GGUF (a byte vocabulary): a +100 bias makes its token the greedy choice every
time, -100 takes a token out, and the reported log probabilities stay the model's own."""

from __future__ import annotations

import math
import pickle

import pytest

from app.engine.errors import TokenIdError
from app.engine.generation import TokenOptions, generate
from app.engine.llm import load_model
from app.engine.scheduler import Scheduler
from tests.support.scheduling import drive, results

GREEDY = {"temperature": 0}
X = ord("x")  # the byte vocabulary's token for "x"


def _tiny(tiny_gguf):
    return tiny_gguf(control_tokens=["<s>", "</s>"], bos="<s>", eos="</s>", seed=3)


def test_a_bias_raises_lowers_or_bans_a_token_and_the_log_probabilities_stay_the_models(tiny_gguf):
    m = load_model(_tiny(tiny_gguf), n_ctx=512, n_threads=1, isolate=False)
    try:
        plain = generate(
            m, "hello there", max_tokens=12, sampling=GREEDY, stop=(), options=TokenOptions(logprobs=1)
        ).run()
        assert X not in plain.tokens
        forced = generate(
            m,
            "hello there",
            max_tokens=12,
            sampling=GREEDY,
            stop=(),
            options=TokenOptions(logit_bias={X: 100}, logprobs=1),
        ).run()
        assert forced.tokens == [X] * 12 and forced.text == "x" * 12
        # the first entry is the model's own: the bias does not change what it reports
        first = generate(
            m, "hello there", max_tokens=1, sampling=GREEDY, stop=(), options=TokenOptions(logprobs=5)
        ).run()
        assert math.isclose(
            forced.logprobs[0].logprob, _logprob_of(m, "hello there", X), abs_tol=0.05
        )  # (one decode of the prompt here, chunks there)
        assert forced.logprobs[0].logprob < first.logprobs[0].logprob  # "x" was not the model's pick
        # banned: the greedy reply never writes the token it would have written first
        banned = generate(
            m,
            "hello there",
            max_tokens=12,
            sampling=GREEDY,
            stop=(),
            options=TokenOptions(logit_bias={plain.tokens[0]: -100}),
        ).run()
        assert plain.tokens[0] not in banned.tokens
        # sampled hot with the token banned: never drawn
        hot = generate(
            m,
            "hello there",
            max_tokens=40,
            sampling={"temperature": 2.0, "seed": 5},
            stop=(),
            options=TokenOptions(logit_bias={t: -100 for t in range(ord("a"), ord("z") + 1)}),
        ).run()
        assert not any(ord("a") <= t <= ord("z") for t in hot.tokens)
    finally:
        m.close()


def test_a_token_id_outside_the_vocabulary_is_refused_before_anything_runs_and_says_where(tiny_gguf):
    """In a ``logit_bias``, in a prompt of token ids or in ids to detokenize, on the single path and with the model in
    its engine process: a :class:`TokenIdError` naming the id, the vocabulary's range and the field
    (the server's 400 names it as its ``param``); it keeps its field across a pickle (the engine
    process's pipe)."""
    path = _tiny(tiny_gguf)
    for isolate in (False, True):
        m = load_model(path, n_ctx=512, n_threads=1, isolate=isolate)
        try:
            top = m.n_vocab - 1
            for prompt, options, where in (
                ("hi", TokenOptions(logit_bias={10**6: 1.0}), "logit_bias"),
                ("hi", TokenOptions(logit_bias={-1: 1.0}), "logit_bias"),
                ([1, 2, m.n_vocab], TokenOptions(), "prompt"),
                ([-1], TokenOptions(), "prompt"),
            ):
                with pytest.raises(
                    TokenIdError, match=rf"outside the model's vocabulary \(0 to {top}\)"
                ) as err:
                    generate(m, prompt, max_tokens=2, options=options)
                assert err.value.param == where and isinstance(err.value, ValueError)
            with pytest.raises(TokenIdError, match=f"tokens holds token id {m.n_vocab}, outside") as err:
                m.detokenize([1, m.n_vocab])  # (llama.cpp is never given it)
            assert err.value.param == "tokens"
            # the model still answers: nothing was queued or half-run
            res = generate(m, [1, 2, top], max_tokens=2, sampling=GREEDY, stop=()).run()
            assert res.prompt_tokens == 3 and res.finish_reason in ("length", "stop")
        finally:
            m.close()
    again = pickle.loads(pickle.dumps(TokenIdError("prompt holds token id 9", "prompt")))
    assert str(again) == "prompt holds token id 9" and again.param == "prompt"


def _logprob_of(m, prompt: str, token: int) -> float:
    """The model's log probability of ``token`` as the first token after ``prompt`` (llama-cpp-python)."""
    import numpy as np
    from llama_cpp import Llama

    llm = Llama(str(m.path), n_ctx=512, n_threads=1, logits_all=True, verbose=False)
    try:
        llm.eval(m.tokenize(prompt))
        row = np.array(llm.scores[llm.n_tokens - 1], dtype=np.float64)
    finally:
        llm.close()
    return float(row[token] - (row.max() + np.log(np.exp(row - row.max()).sum())))


def test_scheduler_slots_and_engine_processes_bias_each_generation_alone(tiny_gguf, monkeypatch):
    path = _tiny(tiny_gguf)
    m = load_model(path, n_ctx=512, n_threads=1, isolate=False)
    try:
        plain = generate(m, "a b c", max_tokens=10, sampling=GREEDY, stop=()).run()
        sent: list[tuple] = []
        sched = Scheduler(m, 2, sent.append, lambda gid: False)
        sched.submit(
            0,
            0,
            generate(
                m, "a b c", max_tokens=10, sampling=GREEDY, stop=(), options=TokenOptions(logit_bias={X: 100})
            ),
        )
        sched.submit(1, 1, generate(m, "a b c", max_tokens=10, sampling=GREEDY, stop=()))
        drive(sched, (0, 1), most=200)
        ends = results(sent)
        assert ends[0].tokens == [X] * 10 and ends[1].tokens == plain.tokens
        sched.close()
    finally:
        m.close()
    for parallel in (1, 2):
        monkeypatch.setenv("CALLISTO_ENGINE_PARALLEL", str(parallel))
        iso = load_model(path, n_ctx=512, n_threads=1)
        try:
            assert iso.backend.isolated and iso.backend.parallel == parallel
            res = generate(
                iso,
                "a b c",
                max_tokens=6,
                sampling=GREEDY,
                stop=(),
                options=TokenOptions(logit_bias={X: 100}),
            ).run()
            assert res.text == "x" * 6
        finally:
            iso.close()
