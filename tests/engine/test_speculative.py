"""Speculative decoding (``app.engine.speculative``): n-gram drafts verified in one decode, on the
real llama.cpp path (tiny random-weight GGUFs with a byte-level vocabulary, SmolLM2 where marked
``live``), on the one-sequence path (``InProcessBackend.stream``) and in the scheduler's slots.
Drafting is shown by the results' counts (``draft_tokens``, ``draft_accepted``), never by timing;
greedy output is compared token for token with drafting off."""

from __future__ import annotations

import json
import threading

import pytest

from app.engine.constraints import compile_constraint
from app.engine.generation import TokenOptions, generate
from app.engine.llm import load_model
from app.engine.scheduler import Scheduler
from app.engine.speculative import DecodeCost, DraftPolicy, NgramDrafter, Speculation, verify
from tests.support.scheduling import drive, results

GREEDY = {"temperature": 0}
SENTENCE = "the quick brown fox jumps over the lazy dog"
#: twenty prompts for a random model: some repeat themselves, so its greedy reply may too
PROMPTS = [
    *(f"{w} {w} {w} {w}" for w in ("ab", "hello", "xyz", "one two", "la la")),
    *(f"{SENTENCE[: 8 + 3 * i]} | {SENTENCE[: 8 + 3 * i]}" for i in range(5)),
    "hello there",
    "a b c d e f",
    "zz yy xx",
    "0 1 2 3 4 5 6 7 8 9 0 1 2 3",
    "abcabcabcabc",
    "print(x)\nprint(x)\nprint(",
    "def f(x):\n    return x\n\ndef g(x):\n    return",
    "{'a': 1, 'b': 2, 'a': 1, 'b':",
    "- item\n- item\n- item\n-",
    "the end. the end. the end.",
]


@pytest.fixture(autouse=True)
def _drafts_without_timing(monkeypatch):
    """The draft lengths depend on what a decoded token costs, which the engine measures; the
    tests fix it (the CPU's default), so the drafts are the same on every run."""
    monkeypatch.setenv("CALLISTO_DRAFT_ALPHA", "0.35")


def _tiny(tiny_gguf, seed=3):
    return tiny_gguf(control_tokens=["<s>", "</s>"], bos="<s>", eos="</s>", seed=seed)


def _both(m, prompt, **kwargs):
    """The generation with drafting off, then on (an in-process model)."""
    m.backend.ngram_draft = False
    off = generate(m, prompt, **kwargs).run()
    m.backend.ngram_draft = True
    on = generate(m, prompt, **kwargs).run()
    return off, on


# -- the parts, without a model ------------------------------------------------------------------


def test_the_drafter_proposes_what_followed_the_longest_matching_tail():
    d = NgramDrafter([1, 2, 3, 4, 5, 9, 2, 3, 7, 8])
    d.extend([1, 2, 3])  # the tail 1 2 3 matches at the start (3-gram), 2 3 also later (2-gram)
    assert d.propose(4) == ([4, 5, 9, 2], 3)
    d.append(6)  # "2 3 6" unseen, "3 6" unseen, "6" unseen: nothing to propose
    assert d.propose(4) == ([], 0)
    d.append(9)  # "9" was followed by 2 3 7
    assert d.propose(3) == ([2, 3, 7], 1)
    assert NgramDrafter([5, 5]).propose(0) == ([], 0)


def test_the_match_length_counts_how_far_back_the_copy_agrees_and_long_copies_draft_longer():
    d = NgramDrafter([9, *range(1, 21), 8, *range(1, 11)])
    # the tail 1..10 agrees with the first copy for 10 tokens back (9 and 8 differ before them)
    assert d.propose(4) == ([11, 12, 13, 14], 10)
    d.extend([11, 12, 13])  # still copying: 13 tokens back
    assert d.propose(2) == ([14, 15], 13)
    assert NgramDrafter([1, 2, 3, 1, 2]).propose(3) == ([3, 1, 2], 2)  # no further back than the start
    # a long match and a short one are learned apart: misses after fresh 3-token matches do not
    # stop the drafts of a copy under way, which grow as they are accepted
    p = DraftPolicy(DecodeCost(alpha=0.35), k_max=16)
    for produced in range(0, 40, 4):
        p.update(produced, 3, 2, 0)
        p.update(produced + 1, 20, 6, 6)
    assert p.size(41, 3) == 0
    assert p.size(41, 20) > 6


def test_the_policy_drafts_what_pays_for_its_cost_and_stops_on_misses():
    cost = DecodeCost(alpha=0.35)
    p = DraftPolicy(cost, k_max=16)
    assert p.size(0, 0) == 0  # no match, no draft
    first = p.size(0, 3)
    assert 0 < first < 16
    p.update(0, 3, first, first)  # all accepted: the next draft is longer
    p.update(first + 1, 3, first, first)
    assert p.size(2 * first + 2, 3) > first
    assert p.size(2 * first + 2, 3, room=2) <= 2
    for produced in (40, 41, 42):
        p.update(produced, 1, 1, 0)  # one-token matches keep missing: they are not drafted
    assert p.size(43, 1) == 0 and p.size(43, 3) > 0
    assert p.size(43 + 150, 1) > 0  # the evidence fades: tried again later
    # where a token more costs as much as a decode, nothing pays
    assert DraftPolicy(DecodeCost(alpha=1.0)).size(0, 3) == 0
    # the cost is learned from timed decodes, unless fixed
    assert DecodeCost().alpha == 0.35 and not DecodeCost().learns
    cost = DecodeCost()
    cost.learns = True
    for _ in range(200):
        cost.record(1, 0.010)
        cost.record(5, 0.012)
    assert 0.02 <= cost.alpha < 0.1


def test_the_decode_cost_is_measured_once_then_fixed_so_a_greedy_request_drafts_the_same_each_time(
    monkeypatch,
):
    """The draft lengths decide the shapes a reply's tokens are decoded in, and on a CPU the logits
    depend on the shape by a rounding: a cost that followed the clock would let the same greedy
    request part from itself at a near-tie. It is measured on the first decodes, then fixed."""
    monkeypatch.delenv("CALLISTO_DRAFT_ALPHA")
    cost = DecodeCost()
    assert cost.learns and cost.alpha == 0.35
    for _ in range(cost.SETTLE):
        cost.record(1, 0.010)  # one size only: no slope, nothing measured
    assert cost.learns and cost.alpha == 0.35
    for _ in range(cost.SETTLE):  # a slope: one more token adds 0.004 s to 0.010 s
        cost.record(1, 0.010)
        cost.record(3, 0.018)
        if not cost.learns:
            break
    assert not cost.learns and cost.batches == cost.SETTLE_BATCHES
    assert cost.alpha == pytest.approx(0.4)

    def lengths() -> list[int]:
        """The draft lengths of one reply that copies its prompt, all accepted."""
        spec = Speculation.start(list(range(40)) * 3, cost=cost)
        out = []
        for tok in range(40):
            spec.kept(tok)
            drafts = spec.draft(16)
            out.append(len(drafts))
            spec.verified(len(drafts), len(drafts))
        return out

    before = lengths()
    assert max(before) > 0
    # later decodes, near free per token (another load on the machine slowed the one-token ones),
    # change nothing: the same reply drafts the same tokens in the same shapes
    for _ in range(100):
        cost.record(1, 0.050)
        cost.record(4, 0.051)
    assert cost.alpha == pytest.approx(0.4) and not cost.learns
    assert lengths() == before


def test_verify_accepts_the_matching_prefix_then_keeps_the_correction():
    samples = [7, 8, 5, 1]
    taken: list[int] = []
    out, accepted = verify(lambda i: samples[i], [7, 8, 9], lambda t: taken.append(t) is None)
    assert out == [7, 8, 5] and accepted == 2 and taken == out  # each token taken once
    out, accepted = verify(lambda i: samples[i], [7, 8], lambda t: True)
    assert out == [7, 8, 5] and accepted == 2  # all accepted: the bonus token is kept
    out, accepted = verify(lambda i: samples[i], [7, 8], lambda t: t != 8)
    assert out == [7, 8] and accepted == 1  # the reply ended at 8: nothing after it is sampled


def test_a_speculation_reads_its_prompt_with_the_first_kept_token():
    s = Speculation.start([4, 5, 6, 4, 5])
    assert s.draft(4) == []  # nothing kept yet
    s.kept(6)
    draft = s.draft(4)  # "4 5 6" was followed by 4 5 (then the 6 just kept)
    assert draft and [4, 5, 6][: len(draft)] == draft


# -- the one-sequence path -----------------------------------------------------------------------


def test_greedy_output_is_identical_with_and_without_drafting_on_the_single_path(tiny_gguf):
    m = load_model(_tiny(tiny_gguf), n_ctx=512, n_threads=1, isolate=False)
    try:
        drafted = 0
        for prompt in PROMPTS:
            off, on = _both(m, prompt, max_tokens=40, sampling=GREEDY, stop=())
            assert on.tokens == off.tokens and on.text == off.text, prompt
            assert on.finish_reason == off.finish_reason
            assert off.draft_tokens == 0
            assert 0 <= on.draft_accepted <= on.draft_tokens
            drafted += on.draft_tokens
        assert drafted > 0
    finally:
        m.close()


def test_a_grammar_that_copies_the_prompt_accepts_drafts_and_one_that_differs_rejects_them(tiny_gguf):
    m = load_model(_tiny(tiny_gguf), n_ctx=512, n_threads=1, isolate=False)
    try:
        grammar = f'root ::= "{SENTENCE}"'
        # the reply copies the prompt: the drafts from the prompt are what the grammar allows
        off, on = _both(m, f"say: {SENTENCE}\n", max_tokens=60, sampling=GREEDY, grammar=grammar, stop=())
        assert on.text == off.text == SENTENCE and on.tokens == off.tokens
        assert on.draft_accepted > 10
        # the prompt says "cat" where the grammar wants "fox": that draft is rejected
        other = SENTENCE.replace("fox", "cat").replace("lazy", "busy")
        off, on = _both(m, f"say: {other}\n", max_tokens=60, sampling=GREEDY, grammar=grammar, stop=())
        assert on.text == off.text == SENTENCE
        assert on.draft_accepted > 0 and on.draft_tokens > on.draft_accepted
    finally:
        m.close()


def test_a_json_schema_constraint_with_drafting_parses_and_rejects_what_it_forbids(tiny_gguf):
    m = load_model(_tiny(tiny_gguf), n_ctx=1024, n_threads=1, isolate=False)
    try:
        schema = {
            "type": "object",
            "properties": {"s": {"const": SENTENCE}, "n": {"enum": [7, 8, 9]}},
            "required": ["s", "n"],
            "additionalProperties": False,
        }
        rf = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
        c = compile_constraint(m, family=None, tools=None, tool_choice="auto", response_format=rf)
        copied = json.dumps({"s": SENTENCE.replace("fox", "cat"), "n": 7})
        prompt = f"copy this: {copied}\n{copied}\n"
        off, on = _both(m, prompt, max_tokens=120, sampling=GREEDY, constraint=c, stop=())
        assert on.tokens == off.tokens
        assert on.finish_reason == "stop"
        value = json.loads(on.text)
        assert value["s"] == SENTENCE and isinstance(value["n"], int)
        # the prompt's "cat" was drafted after "brown " and the constraint rejected it
        assert on.draft_accepted > 0 and on.draft_tokens > on.draft_accepted
    finally:
        m.close()


def test_stop_strings_and_max_tokens_are_exact_with_drafting(tiny_gguf):
    m = load_model(_tiny(tiny_gguf), n_ctx=512, n_threads=1, isolate=False)
    try:
        grammar = f'root ::= "{SENTENCE} {SENTENCE}"'
        prompt = f"say: {SENTENCE} {SENTENCE}\n"
        for n in (1, 2, 5, 13, 30):
            off, on = _both(m, prompt, max_tokens=n, sampling=GREEDY, grammar=grammar, stop=())
            assert on.tokens == off.tokens and len(on.tokens) == n and on.finish_reason == "length"
        off, on = _both(m, prompt, max_tokens=80, sampling=GREEDY, grammar=grammar, stop=("lazy",))
        assert on.text == off.text == "the quick brown fox jumps over the "
        assert on.finish_reason == "stop" and on.draft_accepted > 0
    finally:
        m.close()


def test_a_cancel_while_drafted_tokens_wait_keeps_none_of_them(tiny_gguf):
    m = load_model(_tiny(tiny_gguf), n_ctx=512, n_threads=1, isolate=False)
    try:
        grammar = f'root ::= "{SENTENCE}"'
        cancel = threading.Event()
        gen = generate(
            m, f"say: {SENTENCE}\n", max_tokens=60, sampling=GREEDY, grammar=grammar, stop=(), cancel=cancel
        )
        pieces = []
        for piece in gen:
            pieces.append(piece)
            if gen.model.backend.total_eval and len("".join(pieces)) >= 12:
                cancel.set()
        result = gen.result
        assert result.finish_reason == "cancelled"
        assert result.text == "".join(pieces) and SENTENCE.startswith(result.text)
        assert len(result.text) < len(SENTENCE)
        # the context stays usable and its KV consistent: the same reply again, whole
        again = generate(m, f"say: {SENTENCE}\n", max_tokens=60, sampling=GREEDY, grammar=grammar, stop=())
        assert again.run().text == SENTENCE
    finally:
        m.close()


def test_the_next_turn_reuses_the_kv_of_a_drafted_reply(tiny_gguf):
    m = load_model(_tiny(tiny_gguf), n_ctx=512, n_threads=1, isolate=False)
    try:
        grammar = f'root ::= "{SENTENCE}"'
        prompt = f"say: {SENTENCE}\n"
        first = generate(m, prompt, max_tokens=60, sampling=GREEDY, grammar=grammar, stop=()).run()
        assert first.draft_accepted > 0
        follow = m.tokenize(prompt) + first.tokens + m.tokenize_text(" and more")
        second = generate(m, follow, max_tokens=5, sampling=GREEDY, stop=()).run()
        # only the new text (and the reply's last token, never decoded) is read again
        assert second.prompt_tokens_evaluated <= len(" and more") + 1
        m.reset_cache()
        m.backend.ngram_draft = False
        fresh = generate(m, follow, max_tokens=5, sampling=GREEDY, stop=()).run()
        assert fresh.tokens == second.tokens
    finally:
        m.close()


def test_sampled_generation_runs_with_drafting_and_stays_valid(tiny_gguf):
    m = load_model(_tiny(tiny_gguf), n_ctx=512, n_threads=1, isolate=False)
    try:
        grammar = 'root ::= ("yes" | "no") " " [a-z ]{1,30}'
        sampling = {"temperature": 0.9, "seed": 11}
        drafted = 0
        for prompt in PROMPTS[:8]:
            r = generate(m, prompt, max_tokens=40, sampling=sampling, grammar=grammar, stop=()).run()
            head, _, rest = r.text.partition(" ")
            assert head in ("yes", "no") and set(rest) <= set("abcdefghijklmnopqrstuvwxyz ")
            free = generate(m, prompt, max_tokens=40, sampling=sampling, stop=()).run()
            assert free.finish_reason in ("stop", "length") and len(free.tokens) <= 40
            drafted += r.draft_tokens + free.draft_tokens
        assert drafted > 0
    finally:
        m.close()


# -- the scheduler -------------------------------------------------------------------------------


def test_scheduler_slots_draft_and_keep_their_greedy_output(tiny_gguf):
    m = load_model(_tiny(tiny_gguf), n_ctx=512, n_threads=1, isolate=False)
    try:
        grammar = f'root ::= "{SENTENCE}"'
        m.backend.ngram_draft = False
        refs = [generate(m, p, max_tokens=40, sampling=GREEDY, stop=()).run() for p in PROMPTS]
        copy_ref = generate(m, f"say: {SENTENCE}\n", max_tokens=60, sampling=GREEDY, grammar=grammar).run()
        m.backend.ngram_draft = True
        sent: list[tuple] = []
        sched = Scheduler(m, 3, sent.append, lambda gid: False)
        assert sched.ngram_draft
        for gid, p in enumerate(PROMPTS):
            sched.submit(gid, gid, generate(m, p, max_tokens=40, sampling=GREEDY, stop=()))
        gid_copy = len(PROMPTS)
        sched.submit(
            gid_copy,
            gid_copy,
            generate(m, f"say: {SENTENCE}\n", max_tokens=60, sampling=GREEDY, grammar=grammar),
        )
        drive(sched, range(gid_copy + 1))
        ends = {msg[1]: msg for msg in sent if msg[0] == "end"}
        assert all(e[2] for e in ends.values())
        for gid, ref in enumerate(refs):
            got = ends[gid][3][0]
            assert got.tokens == ref.tokens and got.text == ref.text, PROMPTS[gid]
            assert got.finish_reason == ref.finish_reason
        copy = ends[gid_copy][3][0]
        assert copy.text == copy_ref.text == SENTENCE and copy.draft_accepted > 10
        stats = sched.stats
        assert stats.draft_accepted >= copy.draft_accepted and stats.draft_tokens >= stats.draft_accepted
        assert stats.max_seqs_in_batch >= 2
        sched.close()
    finally:
        m.close()


def test_scheduler_drafting_keeps_constraints_stops_and_budgets(tiny_gguf):
    m = load_model(_tiny(tiny_gguf), n_ctx=1024, n_threads=1, isolate=False)
    try:
        schema = {"type": "object", "properties": {"s": {"const": SENTENCE}}, "required": ["s"]}
        rf = {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}}
        c = compile_constraint(m, family=None, tools=None, tool_choice="auto", response_format=rf)
        copied = json.dumps({"s": SENTENCE.replace("fox", "cat")})
        grammar = f'root ::= "{SENTENCE} {SENTENCE}"'
        said = f"say: {SENTENCE} {SENTENCE}\n"
        cases = [
            (f"copy: {copied}\n{copied}\n", {"max_tokens": 100, "constraint": c, "stop": ()}),
            (said, {"max_tokens": 13, "grammar": grammar, "stop": ()}),
            (said, {"max_tokens": 80, "grammar": grammar, "stop": ("lazy",)}),
        ]
        m.backend.ngram_draft = False
        refs = [generate(m, p, sampling=GREEDY, **kw).run() for p, kw in cases]
        m.backend.ngram_draft = True
        sent: list[tuple] = []
        sched = Scheduler(m, 3, sent.append, lambda gid: False)
        for gid, (p, kw) in enumerate(cases):
            sched.submit(gid, gid, generate(m, p, sampling=GREEDY, **kw))
        drive(sched, range(len(cases)))
        ends = {msg[1]: msg[3][0] for msg in sent if msg[0] == "end"}
        for gid, ref in enumerate(refs):
            assert ends[gid].tokens == ref.tokens and ends[gid].text == ref.text
            assert ends[gid].finish_reason == ref.finish_reason
        assert json.loads(ends[0].text) == {"s": SENTENCE}
        assert ends[0].draft_tokens > ends[0].draft_accepted > 0  # "cat" was drafted and rejected
        assert len(ends[1].tokens) == 13 and ends[1].finish_reason == "length"
        assert ends[2].text == "the quick brown fox jumps over the " and ends[2].finish_reason == "stop"
        sched.close()
    finally:
        m.close()


def test_scheduler_cancel_while_drafted_tokens_wait(tiny_gguf):
    m = load_model(_tiny(tiny_gguf), n_ctx=512, n_threads=1, isolate=False)
    try:
        grammar = f'root ::= "{SENTENCE}"'
        cancelled: set[int] = set()
        sent: list[tuple] = []
        sched = Scheduler(m, 2, sent.append, cancelled.__contains__)
        sched.submit(0, 0, generate(m, f"say: {SENTENCE}\n", max_tokens=60, sampling=GREEDY, grammar=grammar))
        sched.submit(1, 1, generate(m, f"say: {SENTENCE}\n", max_tokens=60, sampling=GREEDY, grammar=grammar))
        steps = 0
        while sched.active:
            sched.step()
            steps += 1
            assert steps < 2000
            job = sched.jobs.get(0)
            if job is not None and len(job.held) > 1:
                cancelled.add(0)  # drafts accepted and waiting for the reader: dropped
            sched.ack(0)
            sched.ack(1)
        ends = {msg[1]: msg[3][0] for msg in sent if msg[0] == "end"}
        assert ends[0].finish_reason == "cancelled" and SENTENCE.startswith(ends[0].text)
        assert len(ends[0].text) < len(SENTENCE)
        assert ends[1].text == SENTENCE and ends[1].draft_accepted > 0
        # the slot's KV is consistent: a new prompt reuses it and the output is unchanged
        sent.clear()
        sched.submit(2, 2, generate(m, f"say: {SENTENCE}\n", max_tokens=60, sampling=GREEDY, grammar=grammar))
        drive(sched, (2,))
        (end,) = [msg for msg in sent if msg[0] == "end"]
        assert end[3][0].text == SENTENCE
        sched.close()
    finally:
        m.close()


# -- in the engine process -----------------------------------------------------------------------


def test_engine_processes_pass_the_draft_setting_and_stream_identical_greedy_output(tiny_gguf, monkeypatch):
    path = _tiny(tiny_gguf)
    grammar = f'root ::= "{SENTENCE}"'
    prompts = [f"say: {SENTENCE}\n", *PROMPTS[:3]]
    results = {}
    for parallel, ngram in ((1, False), (1, True), (3, True)):
        monkeypatch.setenv("CALLISTO_ENGINE_PARALLEL", str(parallel))
        m = load_model(path, n_ctx=512, n_threads=1, ngram_draft=ngram)
        try:
            gens = [
                generate(m, p, max_tokens=40, sampling=GREEDY, stop=(), grammar=grammar if i == 0 else None)
                for i, p in enumerate(prompts)
            ]
            threads = [threading.Thread(target=g.run) for g in gens]
            for t in threads:
                t.start()
            for t in threads:
                t.join(120)
            results[(parallel, ngram)] = [g.result for g in gens]
        finally:
            m.close()
    off = results[(1, False)]
    assert all(r.draft_tokens == 0 for r in off)
    for key in ((1, True), (3, True)):
        for ref, got in zip(off, results[key], strict=True):
            assert got.tokens == ref.tokens
        assert results[key][0].draft_accepted > 10


# -- SmolLM2 -------------------------------------------------------------------------------------


def _copy_prompts(m):
    from app.engine.messages import Message
    from app.engine.render import render_prompt

    lines = [
        "The meeting is moved to Thursday at 3 pm in room 12.",
        "Please send the report to alice@example.com by Friday.",
        "def add(a, b):\n    return a + b",
        "Buy milk, eggs, bread and two apples.",
        "The train to Paris leaves from platform 4 at 9:15.",
    ]
    asks = ["Repeat this text exactly: {}", "Copy the following verbatim: {}", "Quote: {}", "Say again: {}"]
    return [
        render_prompt(m, [Message(role="user", content=a.format(line))]).text for a in asks for line in lines
    ]


@pytest.mark.live
def test_live_smollm2_greedy_identical_with_drafting_and_drafts_accepted(smollm2_path, monkeypatch):
    m = load_model(smollm2_path, n_ctx=1024, n_threads=1, isolate=False)
    try:
        prompts = _copy_prompts(m)
        assert len(prompts) == 20
        accepted = 0
        refs = []
        for p in prompts:
            off, on = _both(m, p, max_tokens=48, sampling=GREEDY)
            assert on.tokens == off.tokens, p
            accepted += on.draft_accepted
            refs.append(off)
        assert accepted > 20
    finally:
        m.close()
    # the scheduler, four slots streaming at once
    monkeypatch.setenv("CALLISTO_ENGINE_PARALLEL", "4")
    m = load_model(smollm2_path, n_ctx=1024, n_threads=1)
    try:
        gens = [generate(m, p, max_tokens=48, sampling=GREEDY) for p in prompts[:8]]
        threads = [threading.Thread(target=g.run) for g in gens]
        for t in threads:
            t.start()
        for t in threads:
            t.join(300)
        for ref, g in zip(refs, gens, strict=False):
            assert g.result.tokens == ref.tokens
        stats = m.backend.scheduler_stats()
        assert stats["draft_accepted"] > 0 and stats["max_seqs_in_batch"] >= 2
    finally:
        m.close()


# -- a draft model -------------------------------------------------------------------------------


def test_a_draft_model_with_the_same_vocabulary_drafts_and_greedy_output_is_unchanged(tiny_gguf, monkeypatch):
    target = _tiny(tiny_gguf, seed=3)
    twin = _tiny(tiny_gguf, seed=3)  # the model itself as its draft: every draft is accepted
    other = _tiny(tiny_gguf, seed=5)  # the same vocabulary, other weights: most are rejected
    ref = load_model(target, n_ctx=512, n_threads=1, isolate=False, ngram_draft=False)
    try:
        refs = [generate(ref, p, max_tokens=30, sampling=GREEDY, stop=()).run() for p in PROMPTS[:6]]
    finally:
        ref.close()
    for draft, all_accepted in ((twin, True), (other, False)):
        m = load_model(
            target, n_ctx=512, n_threads=1, isolate=False, ngram_draft=False, draft_model=str(draft)
        )
        try:
            drafted = accepted = 0
            for p, r in zip(PROMPTS[:6], refs, strict=True):
                got = generate(m, p, max_tokens=30, sampling=GREEDY, stop=()).run()
                assert got.tokens == r.tokens, p
                drafted += got.draft_tokens
                accepted += got.draft_accepted
            assert drafted > 0
            if all_accepted:
                assert accepted == drafted
            else:
                assert accepted < drafted
        finally:
            m.close()
    # through an engine process: the setting reaches the child
    monkeypatch.setenv("CALLISTO_ENGINE_PARALLEL", "1")
    m = load_model(target, n_ctx=512, n_threads=1, ngram_draft=False, draft_model=str(twin))
    try:
        got = generate(m, PROMPTS[0], max_tokens=30, sampling=GREEDY, stop=()).run()
        assert got.tokens == refs[0].tokens and got.draft_accepted > 0
    finally:
        m.close()
    # slots draft n-grams only: the draft model is left out, the engine serves as without it
    monkeypatch.setenv("CALLISTO_ENGINE_PARALLEL", "2")
    m = load_model(target, n_ctx=512, n_threads=1, ngram_draft=False, draft_model=str(twin))
    try:
        assert m.backend.parallel == 2
        got = generate(m, PROMPTS[0], max_tokens=30, sampling=GREEDY, stop=()).run()
        assert got.tokens == refs[0].tokens and got.draft_tokens == 0
    finally:
        m.close()


def test_a_draft_model_with_another_vocabulary_is_refused(tiny_gguf):
    from app.engine.errors import ModelLoadError

    target = _tiny(tiny_gguf)
    alien = tiny_gguf(control_tokens=["<s>", "</s>", "<x>"], bos="<s>", eos="</s>", seed=3)
    with pytest.raises(ModelLoadError, match="vocabulary"):
        load_model(target, n_ctx=512, n_threads=1, isolate=False, draft_model=str(alien))


def test_a_model_whose_state_cannot_roll_back_never_drafts(tiny_gguf):
    from app.engine.inprocess import InProcessBackend

    m = load_model(_tiny(tiny_gguf), n_ctx=512, n_threads=1, isolate=False)
    try:
        llm = m.backend.llm
        assert m.backend.can_draft and m.backend.ngram_draft
        llm._is_hybrid = True  # as llama.cpp reports a hybrid (recurrent + attention) model
        hybrid = InProcessBackend(llm, m.metadata, "hybrid", ngram_draft=True)
        assert not hybrid.can_draft and not hybrid.ngram_draft
        llm._is_hybrid = False
    finally:
        m.close()


def test_a_draft_in_a_shared_step_costs_more_and_the_policy_drafts_less():
    # a scheduler's step carries every generating slot's next token: a drafted token costs what
    # one more token costs, against a step that already yields a token per slot
    cost = DecodeCost(alpha=0.38)
    assert cost.shared(1) == 0.38
    shares = [cost.shared(m) for m in (1, 2, 4, 8)]
    assert shares == sorted(shares) and shares[-1] < 1.0
    assert abs(cost.shared(8) - (0.38 / 0.62 * 8) / (1 + 0.38 / 0.62 * 8)) < 1e-12
    assert DecodeCost(alpha=1.0).shared(8) == 1.0
    p = DraftPolicy(DecodeCost(alpha=0.38))
    alone, shared = p.size(0, 3), p.size(0, 3, sharing=8)
    assert alone > 0 and shared < alone  # a 3-token match drafts alone, hardly beside 7 others
    assert p.size(0, 20, sharing=8) == 0  # a long match on the prior alone is not sure enough
    for produced in range(0, 40, 8):  # ... but a copy that keeps being accepted is
        p.update(produced, 20, 8, 8)
    long_alone, long_shared = p.size(40, 20), p.size(40, 20, sharing=8)
    assert 0 < long_shared <= long_alone
    # a GPU (a decode of a few tokens costs little more than one) drafts in a shared step too
    gpu = DraftPolicy(DecodeCost(alpha=0.02))
    assert gpu.size(0, 3, sharing=8) > 0


# -- predicted outputs ---------------------------------------------------------------------------


def test_a_prediction_is_drafted_from_even_with_ngram_drafting_off(tiny_gguf):
    """OpenAI's predicted outputs: the text the reply is expected to say. The prompt does not hold
    the sentence the grammar forces, so only the prediction can draft it; the reply is the same
    with a right prediction, a wrong one and none."""
    m = load_model(_tiny(tiny_gguf), n_ctx=512, n_threads=1, isolate=False)
    try:
        m.backend.ngram_draft = False
        kw = dict(max_tokens=60, sampling=GREEDY, grammar=f'root ::= "{SENTENCE}"', stop=())
        plain = generate(m, "say it\n", **kw).run()
        right = generate(m, "say it\n", **kw, options=TokenOptions(prediction=SENTENCE)).run()
        wrong = generate(
            m, "say it\n", **kw, options=TokenOptions(prediction="lorem ipsum dolor sit amet " * 3)
        ).run()
        assert plain.text == right.text == wrong.text == SENTENCE
        assert plain.tokens == right.tokens == wrong.tokens
        assert plain.draft_tokens == 0 and right.draft_accepted > 10
        assert wrong.draft_accepted <= wrong.draft_tokens
        # in a scheduler slot too
        sent: list[tuple] = []
        sched = Scheduler(m, 2, sent.append, lambda gid: False)
        assert not sched.ngram_draft
        sched.submit(0, 0, generate(m, "say it\n", **kw, options=TokenOptions(prediction=SENTENCE)))
        sched.submit(1, 1, generate(m, "hello there", max_tokens=20, sampling=GREEDY, stop=()))
        drive(sched, range(2))
        ends = results(sent)
        assert ends[0].text == SENTENCE and ends[0].tokens == plain.tokens and ends[0].draft_accepted > 10
        assert ends[1].draft_tokens == 0
        sched.close()
    finally:
        m.close()


def test_a_prediction_of_megabytes_is_cut_to_a_context_of_tokens(tiny_gguf):
    """A reply never holds more than a context of tokens, so no more of a prediction is drafted
    from (a 32 MiB request body could otherwise make the drafter index millions of n-grams); what
    is kept is the prediction's start, and a right prediction still drafts."""
    m = load_model(_tiny(tiny_gguf), n_ctx=512, n_threads=1, isolate=False)
    try:
        m.backend.ngram_draft = False
        huge = SENTENCE + "z" * (4 << 20)  # 4 MiB: a byte vocabulary's 4 million tokens
        kw = dict(max_tokens=60, sampling=GREEDY, grammar=f'root ::= "{SENTENCE}"', stop=())
        gen = generate(m, "say it\n", **kw, options=TokenOptions(prediction=huge))
        assert len(gen.prediction_tokens) == m.n_ctx
        assert gen.prediction_tokens[: len(SENTENCE)] == m.tokenize_text(SENTENCE, special=False)
        res = gen.run()
        assert res.text == SENTENCE and res.draft_accepted > 10
    finally:
        m.close()
