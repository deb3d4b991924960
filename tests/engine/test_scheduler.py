"""Continuous batching (``app.engine.scheduler``): several generations on one model, one decode per
step for every slot, on the real llama.cpp path (tiny random-weight GGUFs, SmolLM2 where marked
``live``). Batching is shown by the scheduler's counts (decode calls, sequences in one decode),
never by timing."""

from __future__ import annotations

import json
import sys
import threading

import pytest

from app.engine import scheduler as scheduler_mod
from app.engine.constraints import compile_constraint
from app.engine.errors import ConstraintError, EngineBusy, EngineCrashedError, ModelLoadError
from app.engine.generation import generate
from app.engine.llm import load_model
from app.engine.scheduler import Scheduler
from tests.support.memory_bound import refusals_under_memory_bound
from tests.support.scheduling import drive

GREEDY = {"temperature": 0}
PROMPTS = ["hello there", "a b c d e f", "the quick brown fox", "zz yy xx"]

HERMES_TEMPLATE = (
    "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}"
)


def _path(tiny_gguf):
    return tiny_gguf(
        chat_template=HERMES_TEMPLATE,
        control_tokens=["<s>", "</s>", "<|im_start|>", "<|im_end|>"],
        user_tokens=["<tool_call>", "</tool_call>"],
        bos="<s>",
        eos="<|im_end|>",
        seed=3,
    )


def _single_outputs(path, prompts, max_tokens, monkeypatch):
    monkeypatch.setenv("CALLISTO_ENGINE_PARALLEL", "1")
    m = load_model(path, n_ctx=512, n_threads=1)
    try:
        assert m.backend.parallel == 1
        return [generate(m, p, max_tokens=max_tokens, sampling=GREEDY, stop=()).run() for p in prompts]
    finally:
        m.close()


def _parallel_model(path, monkeypatch, n=3):
    monkeypatch.setenv("CALLISTO_ENGINE_PARALLEL", str(n))
    m = load_model(path, n_ctx=512, n_threads=1)
    assert m.backend.parallel == n
    return m


def _run_all(gens):
    """Consume every generation on a thread of its own; return the errors by index."""
    errors: dict[int, BaseException] = {}

    def consume(i, g):
        try:
            for _ in g:
                pass
        except BaseException as exc:  # noqa: BLE001 - the test reads it
            errors[i] = exc

    threads = [threading.Thread(target=consume, args=(i, g)) for i, g in enumerate(gens)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not any(t.is_alive() for t in threads)
    return errors


# -- in this process: the scheduler driven step by step -----------------------------------------


def test_two_sequences_share_one_decode_and_keep_their_greedy_output(tiny_gguf):
    path = _path(tiny_gguf)
    m = load_model(path, n_ctx=512, n_threads=1, isolate=False)
    try:
        refs = [generate(m, p, max_tokens=12, sampling=GREEDY, stop=()).run() for p in PROMPTS[:2]]
        sent: list[tuple] = []
        sched = Scheduler(m, 2, sent.append, lambda gid: False)
        gens = [generate(m, p, max_tokens=12, sampling=GREEDY, stop=()) for p in PROMPTS[:2]]
        for i, g in enumerate(gens):
            sched.submit(100 + i, i, g)
        drive(sched, (0, 1), most=200)
        ends = {msg[1]: msg for msg in sent if msg[0] == "end"}
        assert set(ends) == {100, 101} and all(e[2] for e in ends.values())
        results = [ends[100 + i][3][0] for i in range(2)]
        for ref, got in zip(refs, results, strict=True):
            assert got.tokens == ref.tokens and got.text == ref.text
            assert got.finish_reason == ref.finish_reason
        stats = sched.stats
        # the first step read both prompts in one decode; then one decode a token for both
        assert stats.max_seqs_in_batch == 2 and stats.batched_steps >= 1
        serial = sum(len(r.tokens) + 1 for r in refs)
        assert stats.decode_calls < serial
        sched.close()
    finally:
        m.close()


def test_a_slot_reuses_the_longest_shared_prefix(tiny_gguf):
    m = load_model(_path(tiny_gguf), n_ctx=512, n_threads=1, isolate=False)
    try:
        sent: list[tuple] = []
        sched = Scheduler(m, 2, sent.append, lambda gid: False)
        long = "one two three four five six seven eight nine ten"
        for gid, prompt in enumerate([long, "zz yy"]):
            sched.submit(gid, gid, generate(m, prompt, max_tokens=2, sampling=GREEDY, stop=()))
        drive(sched, (0, 1))
        sent.clear()
        follow = generate(m, long + " eleven", max_tokens=2, sampling=GREEDY, stop=())
        sched.submit(9, 9, follow)
        drive(sched, (9,))
        (end,) = [msg for msg in sent if msg[0] == "end"]
        result = end[3][0]
        # only the new words were read: the slot that held the long prompt was chosen
        assert result.prompt_tokens_evaluated < result.prompt_tokens - 5
        sched.close()
    finally:
        m.close()


def test_a_step_writes_its_rows_in_slot_order_whatever_order_the_jobs_came_in(tiny_gguf):
    """llama.cpp cuts a batch for a per-sequence KV cache into ubatches of consecutive sequence ids:
    rows for slots 2, 0, 1 would be two graphs where 0, 1, 2 are one. Jobs that take their slots in
    another order than they came still put their rows in slot order."""
    m = load_model(_path(tiny_gguf), n_ctx=512, n_threads=1, isolate=False)
    try:
        sched = Scheduler(m, 3, lambda _msg: None, lambda gid: False)
        prompts = ["one two three four five six", "a b c d e f g h", "zz yy xx ww vv"]
        for gid, prompt in enumerate(prompts):  # slot k keeps prompt k's KV
            sched.submit(gid, gid, generate(m, prompt, max_tokens=2, sampling=GREEDY, stop=()))
        drive(sched, [0, 1, 2])
        lib = sched._lib
        orders: list[list[int]] = []

        class Spy:
            def __getattr__(self, name):
                return getattr(lib, name)

            def llama_decode(self, ctx, batch):
                orders.append([batch.seq_id[i][0] for i in range(batch.n_tokens)])
                return lib.llama_decode(ctx, batch)

        sched._lib = Spy()
        # the longest shared prefix sends them to slots 2, 0, 1, in that order
        gids = [10, 11, 12]
        for gid, k in zip(gids, (2, 0, 1), strict=True):
            sched.submit(gid, gid, generate(m, prompts[k] + " more", max_tokens=6, sampling=GREEDY, stop=()))
        sched.step()
        assert [sched.jobs[gid].slot.seq for gid in gids] == [2, 0, 1]
        drive(sched, gids)
        assert len(orders) >= 3 and any(len(set(o)) == 3 for o in orders)
        for order in orders:
            assert order == sorted(order), order
        sched.close()
    finally:
        m.close()


def test_a_prompt_that_ends_while_others_generate_is_decoded_first_and_its_token_goes_out_at_once(tiny_gguf):
    """A new request's first token does not wait for the other slots' step: the step where its
    prompt ends decodes the prompt alone, keeps (and sends) the first token, then writes the
    generating slots' rows with that first token among them. Greedy output is the single path's."""
    m = load_model(_path(tiny_gguf), n_ctx=512, n_threads=1, isolate=False)
    try:
        refs = [generate(m, p, max_tokens=16, sampling=GREEDY, stop=()).run() for p in PROMPTS[:2]]
        sent: list[tuple] = []
        sched = Scheduler(m, 2, sent.append, lambda gid: False)
        sched.submit(100, 0, generate(m, PROMPTS[0], max_tokens=16, sampling=GREEDY, stop=()))
        assert len(refs[0].tokens) > 4  # it still generates when the second one comes
        sched.step()  # admitted, its prompt read
        while len(sched.jobs[0].tokens) < 2:  # it generates
            sched.step()
            sched.ack(0)
        lib = sched._lib
        calls: list[tuple[dict[int, list[int]], int]] = []  # (positions by sequence, B's kept tokens)

        class Spy:
            def __getattr__(self, name):
                return getattr(lib, name)

            def llama_decode(self, ctx, batch):
                rows: dict[int, list[int]] = {}
                for i in range(batch.n_tokens):
                    rows.setdefault(batch.seq_id[i][0], []).append(batch.pos[i])
                b = sched.jobs.get(1)
                calls.append((rows, len(b.tokens) if b is not None else -1))
                return lib.llama_decode(ctx, batch)

        sched._lib = Spy()
        late = generate(m, PROMPTS[1], max_tokens=16, sampling=GREEDY, stop=())
        sched.submit(101, 1, late)
        sched.step()
        n_prompt = len(late.prompt_tokens)
        (a_seq,) = {sched.jobs[0].slot.seq}
        b_seq = sched.jobs[1].slot.seq
        assert len(calls) == 2, calls
        (prompt_rows, b_kept_before), (gen_rows, b_kept_between) = calls
        assert prompt_rows == {b_seq: list(range(n_prompt))} and b_kept_before == 0  # the prompt alone
        assert b_kept_between == 1  # its first token was kept (and sent) before the others' decode
        assert set(gen_rows) == {a_seq, b_seq} and gen_rows[b_seq] == [n_prompt]
        assert sched.jobs[1].first_at is not None
        drive(sched, [0, 1])
        ends = {msg[1]: msg[3][0] for msg in sent if msg[0] == "end"}
        for ref, got in zip(refs, (ends[100], ends[101]), strict=True):
            assert got.tokens == ref.tokens and got.finish_reason == ref.finish_reason
        sched.close()
    finally:
        m.close()


def test_a_generation_past_every_slot_and_the_waiting_bound_is_refused(tiny_gguf, monkeypatch):
    monkeypatch.setattr(scheduler_mod, "MAX_WAITING", 2)
    m = load_model(_path(tiny_gguf), n_ctx=512, n_threads=1, isolate=False)
    try:
        sched = Scheduler(m, 1, lambda msg: None, lambda gid: False)
        for gid in range(3):  # one takes the slot, two wait
            sched.submit(gid, gid, generate(m, "hi", max_tokens=2))
            if gid == 0:
                sched.step()
        with pytest.raises(EngineBusy):
            sched.submit(7, 7, generate(m, "hi", max_tokens=2))
        sched.close()
    finally:
        m.close()


# -- in the engine process ----------------------------------------------------------------------


def test_concurrent_generations_on_one_engine_all_finish_with_their_single_output(tiny_gguf, monkeypatch):
    path = _path(tiny_gguf)
    refs = _single_outputs(path, PROMPTS[:3], 20, monkeypatch)
    m = _parallel_model(path, monkeypatch)
    try:
        gens = [generate(m, p, max_tokens=20, sampling=GREEDY, stop=()) for p in PROMPTS[:3]]
        assert _run_all(gens) == {}
        for ref, g in zip(refs, gens, strict=True):
            assert g.result.tokens == ref.tokens and g.result.text == ref.text
        stats = m.backend.scheduler_stats()
        assert stats["slots"] == 3 and stats["decode_calls"] >= 1
        assert stats["tokens_decoded"] >= sum(len(r.tokens) for r in refs)
    finally:
        m.close()


def test_cancel_of_one_slot_leaves_the_others_streaming(tiny_gguf, monkeypatch):
    path = _path(tiny_gguf)
    refs = _single_outputs(path, PROMPTS[:3], 30, monkeypatch)
    m = _parallel_model(path, monkeypatch)
    try:
        cancel = threading.Event()
        gens = [
            generate(m, p, max_tokens=30, sampling=GREEDY, stop=(), cancel=cancel if i == 0 else None)
            for i, p in enumerate(PROMPTS[:3])
        ]
        its = [iter(g) for g in gens]
        firsts = [next(it) for it in its]  # all three hold a slot, each waits for its reader
        assert all(firsts)
        cancel.set()
        for _ in its[0]:
            pass
        assert gens[0].result.finish_reason == "cancelled"
        assert gens[0].result.generated_tokens < refs[0].generated_tokens
        for it, g, ref in zip(its[1:], gens[1:], refs[1:], strict=True):
            for _ in it:
                pass
            assert g.result.tokens == ref.tokens
        # the engine goes on serving
        assert generate(m, "again", max_tokens=3, stop=()).run().generated_tokens <= 3
    finally:
        m.close()


def test_a_constraint_that_fails_to_build_fails_alone(tiny_gguf, monkeypatch):
    m = _parallel_model(_path(tiny_gguf), monkeypatch)
    try:
        free = [generate(m, p, max_tokens=16, stop=()) for p in PROMPTS[:2]]
        its = [iter(g) for g in free]
        for it in its:
            next(it, None)  # both stream, each in its slot (unless its random first token ended it)
        with pytest.raises(ConstraintError):
            compile_constraint(m, family="hermes", tools=[], tool_choice="required")
        rf = {"type": "json_schema", "json_schema": {"name": "n", "schema": {"type": "object"}}}
        c = compile_constraint(m, family=None, tools=None, tool_choice="auto", response_format=rf)
        constrained = generate(m, "give json", max_tokens=60, constraint=c, stop=())
        errors = _run_all([*its, constrained])
        assert errors == {}
        assert all(g.result.finish_reason in ("stop", "length") for g in free)
        if constrained.result.finish_reason == "stop":
            assert isinstance(json.loads(constrained.result.text), dict)
    finally:
        m.close()


def test_an_engine_crash_with_several_slots_active_is_a_clear_error_for_every_caller(tiny_gguf, monkeypatch):
    path = _path(tiny_gguf)
    m = _parallel_model(path, monkeypatch)
    try:
        # held to a long string, no slot can end (a random model may sample its end token first)
        from app.engine.constraints import compile_constraint

        long = {
            "type": "object",
            "properties": {"s": {"type": "string", "minLength": 150}},
            "required": ["s"],
        }
        rf = {"type": "json_schema", "json_schema": {"schema": long}}
        c = compile_constraint(m, family=None, tools=None, response_format=rf)
        gens = [generate(m, p, max_tokens=200, stop=(), constraint=c) for p in PROMPTS[:3]]
        its = [iter(g) for g in gens]
        for it in its:
            next(it)  # three slots active, each holding its next token for its reader
        m.engine.kill()
        errors = _run_all(its)
        assert sorted(errors) == [0, 1, 2]
        for err in errors.values():
            assert isinstance(err, EngineCrashedError)
            assert str(err).startswith("The model tiny-test-model crashed while generating")
    finally:
        m.close()
    again = _parallel_model(path, monkeypatch)
    try:
        gens = [generate(again, p, max_tokens=3, stop=()) for p in PROMPTS[:2]]
        assert _run_all(gens) == {}
    finally:
        again.close()


@pytest.mark.live
def test_live_smollm2_batched_streams_equal_their_single_greedy_output(smollm2_path, monkeypatch):
    from app.engine.messages import Message
    from app.engine.render import render_prompt

    questions = ["Count to five.", "Name a color.", "What is 2+2?", "Say hello in French."]
    monkeypatch.setenv("CALLISTO_ENGINE_PARALLEL", "1")
    single = load_model(smollm2_path, n_ctx=1024, n_threads=1)
    try:
        prompts = [render_prompt(single, [Message(role="user", content=q)]).text for q in questions]
        refs = [generate(single, p, max_tokens=32, sampling=GREEDY).run() for p in prompts]
    finally:
        single.close()
    m = _parallel_model(smollm2_path, monkeypatch, n=4)
    try:
        gens = [generate(m, p, max_tokens=32, sampling=GREEDY) for p in prompts]
        assert _run_all(gens) == {}
        for ref, g in zip(refs, gens, strict=True):
            assert g.result.text == ref.text
    finally:
        m.close()


def test_stop_strings_and_deadlines_hold_per_slot(tiny_gguf):
    m = load_model(_path(tiny_gguf), n_ctx=512, n_threads=1, isolate=False)
    try:
        free = generate(m, PROMPTS[0], max_tokens=20, sampling=GREEDY, stop=()).run()
        assert len(free.text) > 4
        stop = free.text[2:4]
        single = generate(m, PROMPTS[0], max_tokens=20, sampling=GREEDY, stop=(stop,)).run()
        sent: list[tuple] = []
        sched = Scheduler(m, 3, sent.append, lambda gid: False)
        sched.submit(0, 0, generate(m, PROMPTS[0], max_tokens=20, sampling=GREEDY, stop=(stop,)))
        sched.submit(1, 1, generate(m, PROMPTS[1], max_tokens=20, sampling=GREEDY, deadline_s=0))
        sched.submit(2, 2, generate(m, PROMPTS[2], max_tokens=5, sampling=GREEDY, stop=()))
        drive(sched, (0, 1, 2))
        ends = {msg[1]: msg[3][0] for msg in sent if msg[0] == "end"}
        assert ends[0].text == single.text and ends[0].finish_reason == "stop" == single.finish_reason
        assert stop not in ends[0].text and ends[0].stop == single.stop == stop
        assert ends[2].stop is None
        assert ends[1].finish_reason == "deadline" and ends[1].generated_tokens == 0
        assert ends[2].finish_reason in ("stop", "length") and ends[2].generated_tokens <= 5
        sched.close()
    finally:
        m.close()


def test_each_slot_gets_the_whole_context_the_user_set(tiny_gguf):
    m = load_model(_path(tiny_gguf), n_ctx=512, n_threads=1, isolate=False)
    try:
        sent: list[tuple] = []
        sched = Scheduler(m, 2, sent.append, lambda gid: False)
        words = " ".join(["a"] * 800)
        prompts = []
        for gid in range(2):
            toks = m.tokenize(f"{gid} {words}")[:480]
            prompts.append(toks)
            sched.submit(gid, gid, generate(m, toks, max_tokens=100, sampling=GREEDY, stop=()))
        drive(sched, (0, 1))
        ends = {msg[1]: msg for msg in sent if msg[0] == "end"}
        for gid in range(2):
            ok, value = ends[gid][2], ends[gid][3]
            assert ok, value  # 2 x 512 tokens fit: the context was not divided between the slots
            result = value[0]
            assert result.prompt_tokens == 480
            assert result.finish_reason == "stop" or result.generated_tokens == 512 - 480
        sched.close()
    finally:
        m.close()


def test_a_gbnf_grammar_holds_its_slot_alone(tiny_gguf):
    m = load_model(_path(tiny_gguf), n_ctx=512, n_threads=1, isolate=False)
    try:
        grammar = 'root ::= ("yes" | "no") " " [a-z]{1,8}'
        single = generate(m, PROMPTS[0], max_tokens=12, sampling=GREEDY, grammar=grammar, stop=()).run()
        free_ref = generate(m, PROMPTS[1], max_tokens=12, sampling=GREEDY, stop=()).run()
        sent: list[tuple] = []
        sched = Scheduler(m, 2, sent.append, lambda gid: False)
        sched.submit(0, 0, generate(m, PROMPTS[0], max_tokens=12, sampling=GREEDY, grammar=grammar, stop=()))
        sched.submit(1, 1, generate(m, PROMPTS[1], max_tokens=12, sampling=GREEDY, stop=()))
        drive(sched, (0, 1))
        ends = {msg[1]: msg[3][0] for msg in sent if msg[0] == "end"}
        assert ends[0].text == single.text and ends[0].text.split(" ")[0] in ("yes", "no")
        assert ends[1].tokens == free_ref.tokens  # the other slot is not held to the grammar
        sched.close()
    finally:
        m.close()


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS bounds memory on Linux only")
def test_slots_whose_kv_cache_does_not_fit_are_a_load_error_that_says_what_to_lower(tiny_gguf):
    path = _path(tiny_gguf)
    refusals = refusals_under_memory_bound(
        """
        from app.engine.llm import load_model
        from app.engine.scheduler import Scheduler
        m = load_model(sys.argv[1], n_ctx=512, n_threads=1, isolate=False)
        m.n_ctx = 2**20
        """,
        # 4 slots of 1 M tokens: 2 GiB of KV, past the 512 MiB the bound leaves
        "Scheduler(m, 4, lambda msg: None, lambda gid: False)",
        """
        m.n_ctx = 512
        Scheduler(m, 4, lambda msg: None, lambda gid: False).close()  # the model is left as it was
        m.close()
        """,
        str(path),
        headroom_mib=512,
    )
    # the tiny model: 2 layers, 4 KV heads of 16, f16: 512 bytes a token
    assert refusals == [
        f"Cannot load {path}: llama.cpp could not make a context of 4 slots of 1,048,576 tokens each (a KV "
        "cache of about 2.0 GiB for 4,194,304 tokens): lower the parallel requests (serve --parallel, Server > "
        "Parallel requests) or the context length"
    ]


def test_slots_past_llama_cpp_limits_are_refused_before_anything_is_allocated(tiny_gguf):
    m = load_model(_path(tiny_gguf), n_ctx=512, n_threads=1, isolate=False)
    try:
        with pytest.raises(ValueError, match=r"parallel must be 1 to 256 \(llama.cpp's limit\), got 257"):
            Scheduler(m, 257, lambda msg: None, lambda gid: False)
        # 256 slots of 16 M tokens: 2**32 tokens, which llama.cpp's 32-bit n_ctx would take as 0
        m.n_ctx = 2**24
        with pytest.raises(
            ModelLoadError, match="could not make a context of 256 slots of 16,777,216 tokens"
        ):
            Scheduler(m, 256, lambda msg: None, lambda gid: False)
    finally:
        m.n_ctx = 512
        m.close()
