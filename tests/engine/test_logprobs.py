"""Token log probabilities (``app.engine.logprobs``) on the real llama.cpp path: the single
sequence path, the scheduler's slots, speculative decoding and the engine process. Every entry is
checked against a reference computed here from the same GGUF by llama-cpp-python itself (all
logits of prompt and reply in one evaluation, log-softmax in numpy), with a tolerance for the
different shape of computation."""

from __future__ import annotations

import math

import numpy as np
import pytest

from app.engine.generation import TokenOptions, generate
from app.engine.llm import load_model
from app.engine.logprobs import MAX_TOP_LOGPROBS, token_text
from app.engine.scheduler import Scheduler
from tests.support.scheduling import drive, results

GREEDY = {"temperature": 0}
SENTENCE = "the quick brown fox jumps over the lazy dog"
TOL = 0.05  # a batched decode and a one-token decode differ in the last digits (about 0.01 here)


@pytest.fixture(autouse=True)
def _drafts_without_timing(monkeypatch):
    """Draft lengths depend on what a decoded token costs, which the engine measures: fixed here
    (the CPU's default), so the drafts are the same on every run."""
    monkeypatch.setenv("CALLISTO_DRAFT_ALPHA", "0.35")


def _tiny(tiny_gguf, seed=3):
    return tiny_gguf(control_tokens=["<s>", "</s>"], bos="<s>", eos="</s>", seed=seed)


def _reference(path, prompt_tokens, reply_tokens) -> list[np.ndarray]:
    """The log-softmax of the logits that predicted each reply token."""
    from llama_cpp import Llama

    llm = Llama(str(path), n_ctx=512, n_threads=1, logits_all=True, verbose=False)
    try:
        llm.eval(list(prompt_tokens) + list(reply_tokens))
        scores = np.array(llm.scores[: llm.n_tokens], dtype=np.float64)
    finally:
        llm.close()
    rows = []
    for i in range(len(reply_tokens)):
        row = scores[len(prompt_tokens) - 1 + i]
        rows.append(row - (row.max() + np.log(np.exp(row - row.max()).sum())))
    return rows


def _check(path, prompt_tokens, result, top):
    """Each entry is its token's, with the reference's log probability and ``top`` alternatives."""
    entries = result.logprobs
    assert entries is not None and [e.token for e in entries] == result.tokens
    ref = _reference(path, prompt_tokens, result.tokens)
    for e, row in zip(entries, ref, strict=True):
        assert e.logprob <= 0 and math.isclose(e.logprob, row[e.token], abs_tol=TOL)
        assert len(e.top) == top
        want = np.sort(row)[::-1][:top]
        assert np.allclose([lp for _i, _d, lp in e.top], want, atol=TOL)
        for tid, _data, lp in e.top:  # each alternative is the token it names
            assert math.isclose(lp, row[tid], abs_tol=TOL)
        assert all(a[2] >= b[2] for a, b in zip(e.top, e.top[1:], strict=False))  # most likely first
        assert sum(math.exp(lp) for _i, _d, lp in e.top) <= 1 + 1e-6


def test_each_kept_token_has_the_log_probability_the_model_gave_it_not_the_samplers(tiny_gguf):
    """Sampled hot (temperature 1.5) or greedy, an entry is the model's own distribution."""
    path = _tiny(tiny_gguf)
    m = load_model(path, n_ctx=512, n_threads=1, isolate=False)
    try:
        hot = {"temperature": 1.5, "seed": 11}
        gen = generate(
            m, "hello there", max_tokens=24, sampling=hot, stop=(), options=TokenOptions(logprobs=5)
        )
        result = gen.run()
        assert result.generated_tokens == 24
        _check(path, gen.prompt_tokens, result, 5)
        # a hot sampler picks tokens the model does not rank first: their entries say so
        assert any(e.top[0][0] != e.token for e in result.logprobs)
        greedy = generate(
            m, "hello there", max_tokens=24, sampling=GREEDY, stop=(), options=TokenOptions(logprobs=3)
        )
        res = greedy.run()
        _check(path, greedy.prompt_tokens, res, 3)
        assert all(e.top[0][0] == e.token for e in res.logprobs)  # greedy: the most likely each time
        assert res.logprobs == greedy.token_logprobs
    finally:
        m.close()


def test_each_entry_is_there_before_its_text_is_yielded_and_none_without_asking(tiny_gguf):
    m = load_model(_tiny(tiny_gguf), n_ctx=512, n_threads=1, isolate=False)
    try:
        gen = generate(m, "a b c", max_tokens=16, sampling=GREEDY, stop=(), options=TokenOptions(logprobs=0))
        text = ""
        for piece in gen:
            text += piece
            seen = b"".join(e.data for e in gen.token_logprobs).decode("utf-8", errors="replace")
            assert seen.startswith(text)  # the tokens of every piece given so far have their entry
        assert all(e.top == () for e in gen.result.logprobs)
        plain = generate(m, "a b c", max_tokens=16, sampling=GREEDY, stop=()).run()
        assert plain.logprobs is None and plain.generated_tokens == 16
        with pytest.raises(ValueError, match="logprobs must be 0 to 20"):
            generate(m, "a b c", max_tokens=4, options=TokenOptions(logprobs=MAX_TOP_LOGPROBS + 1))
    finally:
        m.close()


def test_a_turns_later_generations_keep_the_log_probabilities_and_the_bias_only():
    """A turn's first generation scores its prompt and drafts from the prediction; a later one (a
    thinking budget's continuation, the next round) has the reply so far in its prompt."""
    first = TokenOptions(logprobs=2, prompt_logprobs=True, prediction="x = 1", logit_bias={7: 5.0})
    assert first.later() == TokenOptions(logprobs=2, logit_bias={7: 5.0})
    assert first.later().later() == first.later() and first.prompt_logprobs  # (frozen: unchanged)


def test_stop_strings_keep_the_entries_of_the_tokens_kept(tiny_gguf):
    m = load_model(_tiny(tiny_gguf), n_ctx=512, n_threads=1, isolate=False)
    try:
        free = generate(m, "hello there", max_tokens=24, sampling=GREEDY, stop=()).run()
        stop = free.text[6:9]
        gen = generate(
            m, "hello there", max_tokens=24, sampling=GREEDY, stop=(stop,), options=TokenOptions(logprobs=1)
        )
        res = gen.run()
        assert res.finish_reason == "stop" and [e.token for e in res.logprobs] == res.tokens
    finally:
        m.close()


def test_drafted_tokens_have_the_entries_of_the_rows_they_were_verified_at(tiny_gguf):
    """A grammar that copies the prompt: most tokens are accepted drafts, each verified at its own
    row of one decode; the grammar forces tokens the random model finds unlikely, and their entries
    say how unlikely (the constraint does not change the model's distribution)."""
    path = _tiny(tiny_gguf)
    m = load_model(path, n_ctx=512, n_threads=1, isolate=False)
    try:
        m.backend.ngram_draft = True
        gen = generate(
            m,
            f"say: {SENTENCE}\n",
            max_tokens=60,
            sampling=GREEDY,
            grammar=f'root ::= "{SENTENCE}"',
            stop=(),
            options=TokenOptions(logprobs=2),
        )
        res = gen.run()
        assert res.text == SENTENCE and res.draft_accepted > 10
        _check(path, gen.prompt_tokens, res, 2)
        assert any(e.top[0][0] != e.token for e in res.logprobs)  # forced, not chosen
    finally:
        m.close()


def test_scheduler_slots_give_each_generation_its_own_entries(tiny_gguf):
    """Three slots batched in one decode a step (drafting on): each generation's entries are its
    tokens' as the single path gives them."""
    path = _tiny(tiny_gguf)
    m = load_model(path, n_ctx=512, n_threads=1, isolate=False)
    try:
        m.backend.ngram_draft = True
        prompts = ["hello there", "a b c d e f", f"say: {SENTENCE}\n"]
        grammar = [None, None, f'root ::= "{SENTENCE}"']
        sent: list[tuple] = []
        sched = Scheduler(m, 3, sent.append, lambda gid: False)
        gens = [
            generate(
                m, p, max_tokens=30, sampling=GREEDY, stop=(), grammar=g, options=TokenOptions(logprobs=4)
            )
            for p, g in zip(prompts, grammar, strict=True)
        ]
        for gid, g in enumerate(gens):
            sched.submit(gid, gid, g)
        drive(sched, range(3), most=500)
        assert sched.stats.max_seqs_in_batch >= 2
        ends = results(sent)
        for gid, g in enumerate(gens):
            res = ends[gid]
            _check(path, g.prompt_tokens, res, 4)
            # the pieces carried the entries of their tokens, in order; the end has them all
            carried = [e for msg in sent if msg[0] == "piece" and msg[1] == gid for e in msg[3]]
            assert carried == res.logprobs[: len(carried)]
        assert ends[2].draft_accepted > 10
        sched.close()
    finally:
        m.close()


@pytest.mark.parametrize("parallel", [1, 3])
def test_an_engine_process_streams_the_entries_with_their_pieces(tiny_gguf, monkeypatch, parallel):
    path = _tiny(tiny_gguf)
    monkeypatch.setenv("CALLISTO_ENGINE_PARALLEL", str(parallel))
    m = load_model(path, n_ctx=512, n_threads=1)
    try:
        assert m.backend.isolated and m.backend.parallel == parallel
        gen = generate(
            m, "hello there", max_tokens=20, sampling=GREEDY, stop=(), options=TokenOptions(logprobs=3)
        )
        text = ""
        for piece in gen:
            text += piece
            seen = b"".join(e.data for e in gen.token_logprobs).decode("utf-8", errors="replace")
            assert seen.startswith(text)
        res = gen.result
        assert res.logprobs == gen.token_logprobs and len(res.logprobs) == len(res.tokens) == 20
        prompt = m.tokenize("hello there")
        _check(path, prompt, res, 3)
    finally:
        m.close()


def test_a_token_that_is_part_of_a_character_is_written_as_its_bytes():
    assert token_text("é".encode()) == "é"
    assert token_text("é".encode()[:1]) == "bytes:\\xc3"


# -- the prompt's ----------------------------------------------------------------------------------

LONG = "the prompt of an eval harness, " * 5  # longer than one scoring decode (SCORE_ROWS)


def _check_prompt(path, prompt_tokens, entries, top):
    """The first token has no log probability; each later one the reference's."""
    assert [e.token for e in entries] == list(prompt_tokens)
    assert entries[0].logprob is None and entries[0].top == ()
    ref = _reference(path, prompt_tokens[:1], prompt_tokens[1:])  # row i predicts token i + 1
    for e, row in zip(entries[1:], ref, strict=True):
        assert math.isclose(e.logprob, row[e.token], abs_tol=TOL)
        assert len(e.top) == top
        assert np.allclose([lp for _i, _d, lp in e.top], np.sort(row)[::-1][:top], atol=TOL)


def test_a_prompts_log_probabilities_are_read_from_every_row_and_the_reply_follows(tiny_gguf):
    from app.engine.logprobs import SCORE_ROWS

    path = _tiny(tiny_gguf)
    m = load_model(path, n_ctx=512, n_threads=1, isolate=False)
    try:
        generate(m, LONG, max_tokens=6, sampling=GREEDY, stop=()).run()
        # the KV of that prompt is there: scoring reads it again all the same
        gen = generate(
            m,
            LONG,
            max_tokens=6,
            sampling=GREEDY,
            stop=(),
            options=TokenOptions(logprobs=2, prompt_logprobs=True),
        )
        res = gen.run()
        assert len(gen.prompt_tokens) > SCORE_ROWS and res.prompt_tokens_evaluated == len(gen.prompt_tokens)
        _check_prompt(path, gen.prompt_tokens, res.prompt_logprobs, 2)
        _check(path, gen.prompt_tokens, res, 2)  # the reply's entries: the model's, after this prompt
        # max_tokens 0: the prompt is read and scored, nothing generated
        only = generate(m, LONG, max_tokens=0, stop=(), options=TokenOptions(prompt_logprobs=True)).run()
        assert only.generated_tokens == 0 and only.finish_reason == "length" and only.text == ""
        assert [e.logprob for e in only.prompt_logprobs] == [e.logprob for e in res.prompt_logprobs]
        assert all(e.top == () for e in only.prompt_logprobs)
        # and the next generation of that prompt goes on from the KV the scoring wrote: each of its
        # tokens has the model's log probability after the prompt and the tokens before it
        after = generate(m, LONG, max_tokens=6, sampling=GREEDY, stop=(), options=TokenOptions(logprobs=1))
        res = after.run()
        assert res.prompt_logprobs is None and res.generated_tokens == 6
        _check(path, after.prompt_tokens, res, 1)
    finally:
        m.close()


def test_scheduler_slots_score_their_prompts_beside_streams(tiny_gguf):
    path = _tiny(tiny_gguf)
    m = load_model(path, n_ctx=512, n_threads=1, isolate=False)
    try:
        sent: list[tuple] = []
        sched = Scheduler(m, 3, sent.append, lambda gid: False)
        gens = [
            generate(m, "hello there", max_tokens=30, sampling=GREEDY, stop=()),
            generate(
                m,
                LONG,
                max_tokens=4,
                sampling=GREEDY,
                stop=(),
                options=TokenOptions(logprobs=3, prompt_logprobs=True),
            ),
            generate(m, LONG + "again", max_tokens=0, stop=(), options=TokenOptions(prompt_logprobs=True)),
        ]
        for gid, g in enumerate(gens):
            sched.submit(gid, gid, g)
        drive(sched, range(3), most=500)
        assert sched.stats.max_seqs_in_batch >= 2
        ends = results(sent)
        assert set(ends) == {0, 1, 2}
        assert ends[0].prompt_logprobs is None and ends[0].generated_tokens == 30
        _check_prompt(path, gens[1].prompt_tokens, ends[1].prompt_logprobs, 3)
        _check(path, gens[1].prompt_tokens, ends[1], 3)
        _check_prompt(path, gens[2].prompt_tokens, ends[2].prompt_logprobs, 0)
        assert ends[2].generated_tokens == 0 and ends[2].finish_reason == "length"
        sched.close()
    finally:
        m.close()


@pytest.mark.parametrize("parallel", [1, 2])
def test_an_engine_process_returns_the_prompts_log_probabilities(tiny_gguf, monkeypatch, parallel):
    path = _tiny(tiny_gguf)
    monkeypatch.setenv("CALLISTO_ENGINE_PARALLEL", str(parallel))
    m = load_model(path, n_ctx=512, n_threads=1)
    try:
        res = generate(
            m, LONG, max_tokens=0, stop=(), options=TokenOptions(logprobs=1, prompt_logprobs=True)
        ).run()
        _check_prompt(path, m.tokenize(LONG), res.prompt_logprobs, 1)
    finally:
        m.close()
