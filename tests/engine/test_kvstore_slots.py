"""The KV store of the scheduler's slots (``app.engine.kvstore.SlotKV``): a slot's llama.cpp state
saved when its conversation is left or the model closes, and restored into whichever sequence
takes the conversation again, also in a new context over the same model (a restart). Driven on
real multi-sequence llama.cpp contexts made as ``app.engine.scheduler.Scheduler`` makes its own
(tiny random-weight GGUFs; SmolLM2 where marked ``live``)."""

from __future__ import annotations

import logging
import os
import threading
from dataclasses import dataclass, field

import numpy as np
import pytest

from app.engine.generation import generate
from app.engine.kvstore import (
    KVStore,
    KVStoreConfig,
    SlotKV,
    fingerprint,
    layout_fingerprint,
)
from app.engine.llm import load_model
from app.engine.models.metadata import read_metadata
from app.engine.scheduler import Scheduler
from tests.support.scheduling import drive

N_CTX = 512
GREEDY = {"temperature": 0}


def _text(topic: str, n: int) -> str:
    return "".join(f"{topic} line {i}: the quick brown fox jumps over the lazy dog.\n" for i in range(n))


@dataclass
class _Slot:
    """What ``SlotKV.close`` reads of a scheduler's slot."""

    seq: int
    cached: list[int] = field(default_factory=list)


class _Context:
    """A llama.cpp context of ``n`` sequences (``n_seq_max`` n, not unified, ``n_ctx`` each) over a
    loaded model, made as the scheduler makes its own; :meth:`feed` decodes tokens into one
    sequence and returns the logits after the last."""

    def __init__(self, model, n: int, n_ctx: int = N_CTX):
        import llama_cpp
        from llama_cpp import _internals as internals

        self.lib = llama_cpp
        self.llm = model.backend.llm
        params = type(self.llm.context_params).from_buffer_copy(self.llm.context_params)
        params.n_ctx = n_ctx * n
        params.n_seq_max = n
        params.n_batch = min(512, n_ctx)
        params.n_ubatch = min(512, n_ctx)
        params.kv_unified = False
        self.c = internals.LlamaContext(model=self.llm._model, params=params, verbose=False)
        self.ctx = self.c.ctx
        self.mem = llama_cpp.llama_get_memory(self.ctx)
        self.batch = llama_cpp.llama_batch_init(min(512, n_ctx), 0, 1)

    def feed(self, seq: int, tokens, start: int) -> np.ndarray:
        b = self.batch
        for i, tok in enumerate(tokens):
            b.token[i] = tok
            b.pos[i] = start + i
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = seq
            b.logits[i] = i == len(tokens) - 1
        b.n_tokens = len(tokens)
        assert self.lib.llama_decode(self.ctx, b) == 0
        ptr = self.lib.llama_get_logits_ith(self.ctx, len(tokens) - 1)
        return np.ctypeslib.as_array(ptr, shape=(self.llm._n_vocab,)).copy()

    def held(self, seq: int) -> int:
        """How many positions sequence ``seq`` holds (its last position + 1)."""
        return int(self.lib.llama_memory_seq_pos_max(self.mem, seq)) + 1

    def close(self) -> None:
        self.lib.llama_batch_free(self.batch)
        self.c.close()


@pytest.fixture
def model(tiny_gguf):
    m = load_model(tiny_gguf(), n_ctx=N_CTX, n_threads=1, isolate=False)
    try:
        yield m
    finally:
        m.close()


@pytest.fixture
def contexts(model):
    """Factory: ``contexts(n)`` -> a new ``_Context`` of n sequences, closed after the test."""
    made: list[_Context] = []

    def make(n: int) -> _Context:
        made.append(_Context(model, n))
        return made[-1]

    yield make
    for c in made:
        c.close()


def _fp(model, *, kv_type="f16", template=None):
    path = model.backend.llm.model_path
    tmpl = template if template is not None else read_metadata(path).chat_template
    return fingerprint(path, template=tmpl, kv_type=kv_type, flash_attn=True)


def _kv(model, folder, *, streams=3, min_tokens=16, background=False, n_ctx=N_CTX, **kw) -> SlotKV:
    config = KVStoreConfig(str(folder), max_bytes=kw.pop("max_bytes", 64 * 1024**2), min_tokens=min_tokens)
    kv = SlotKV.from_config(config, _fp(model, **kw), streams=streams, n_ctx=n_ctx)
    kv.background = background
    return kv


#: ways a saved file goes bad: a flipped byte in its state, cut in half, not a state file at all
DAMAGE = {
    "flip": lambda d: d[: len(d) // 2] + bytes([d[len(d) // 2] ^ 0xFF]) + d[len(d) // 2 + 1 :],
    "truncate": lambda d: d[: len(d) // 2],
    "garbage": lambda d: b"not a state" * 10,
}


def _files(folder):
    return sorted(folder.glob("*.kvs"))


# -- a state restored into another sequence of another context -----------------------------------


def test_a_slot_state_restores_into_another_sequence_of_a_new_context(model, contexts, tmp_path):
    """Saved from sequence 2, restored into sequence 0 of a new context (a restart): the next
    token's logits are those of a sequence that read the same tokens itself, bit for bit."""
    toks = model.tokenize(_text("alpha", 4))
    assert len(toks) > 100
    first = contexts(3)
    first.feed(2, toks[:-1], 0)
    kv = _kv(model, tmp_path / "kv")
    kv.close(first.ctx, [_Slot(0), _Slot(1), _Slot(2, toks[:-1])])  # the model is closed
    assert len(_files(tmp_path / "kv")) == 1

    again = contexts(3)  # a restart: a new context over the same model file
    kv2 = _kv(model, tmp_path / "kv")
    held = kv2.before_start(again.ctx, 0, [], toks)
    assert held == toks[:-1]
    assert again.held(0) == len(toks) - 1 and again.held(1) == 0 and again.held(2) == 0
    restored = again.feed(0, toks[-1:], len(toks) - 1)

    reader = contexts(3)
    reader.feed(1, toks[:-1], 0)
    read = reader.feed(1, toks[-1:], len(toks) - 1)
    assert np.array_equal(restored, read)
    assert int(restored.argmax()) == int(read.argmax())


def test_leaving_a_slot_saves_it_and_another_slot_restores_it(model, contexts, tmp_path):
    a = model.tokenize(_text("conversation A", 3))
    b = model.tokenize(_text("conversation B", 3))
    folder = tmp_path / "kv"
    ctx = contexts(2)
    kv = _kv(model, folder, streams=2)
    ctx.feed(0, a, 0)
    # A's next turn on the slot that holds it: nothing is left, nothing written
    follow = a + model.tokenize_text(" and more")
    assert kv.before_start(ctx.ctx, 0, a, follow) == a
    assert not _files(folder)
    # B takes the slot: A is saved before B's reading overwrites it
    assert kv.before_start(ctx.ctx, 0, a, b) == a  # nothing saved for B: A's KV stays to be trimmed
    (saved,) = _files(folder)
    ctx.lib.llama_memory_seq_rm(ctx.mem, 0, 0, -1)
    ctx.feed(0, b, 0)
    # A comes back on the other slot, which holds nothing: its state is restored there
    assert kv.before_start(ctx.ctx, 1, [], follow) == a
    assert ctx.held(1) == len(a) and ctx.held(0) == len(b)
    # A goes on, then is left: its longer state replaces the earlier (one file a conversation)
    ctx.feed(1, follow[len(a) :], len(a))
    kv.before_start(ctx.ctx, 1, follow, b)
    files = _files(folder)
    assert len(files) == 1 and files != [saved]
    assert KVStore(folder, kv.store.fingerprint, min_tokens=16).entries()[0].tokens == tuple(follow)


def test_a_scheduler_restarted_reads_only_the_new_turn_with_the_same_greedy_reply(tiny_gguf, tmp_path):
    """The scheduler's own hooks: closing it saves its slots' conversations, and a new scheduler
    over the same model file restores one into the slot its next turn takes, reads only the new
    turn and replies what it replies when its slot kept the conversation all along."""
    path = tiny_gguf(seed=5)
    folder = tmp_path / "kv"
    first, follow = _text("delta", 3), _text("delta", 3) + "and then what?"

    def serve(sched, sent, m, text, gid):
        gen = generate(m, text, max_tokens=10, sampling=GREEDY, stop=())
        sched.submit(gid, gid, gen)
        drive(sched, (gid,), most=500)
        (end,) = [msg for msg in sent if msg[0] == "end" and msg[1] == gid]
        assert end[2], end
        return end[3][0]

    m = load_model(
        path, n_ctx=N_CTX, n_threads=1, isolate=False, kv_store=KVStoreConfig(str(folder), min_tokens=16)
    )
    try:
        sent: list[tuple] = []
        sched = Scheduler(m, 2, sent.append, lambda gid: False)
        assert sched.kv is not None and sched.kv.store.fingerprint != m.backend.kv_store.fingerprint
        read_first = serve(sched, sent, m, first, 1)
        sched.close()  # the model is closed: its slots are saved
        assert len(_files(folder)) == 1

        # the reference: the second turn on the slot that kept the first
        sent = []
        sched = Scheduler(m, 2, sent.append, lambda gid: False)
        serve(sched, sent, m, first, 1)
        want = serve(sched, sent, m, follow, 2)
        sched.close()
        assert want.prompt_tokens_evaluated < want.prompt_tokens // 4

        # a restart: a new scheduler; the second turn comes first and finds its conversation
        sent = []
        sched = Scheduler(m, 2, sent.append, lambda gid: False)
        got = serve(sched, sent, m, follow, 3)
        sched.close()
    finally:
        m.close()
    assert read_first.prompt_tokens_evaluated == read_first.prompt_tokens  # nothing to restore then
    # the reference's close saved the longer conversation (the second turn too): at most the new
    # turn is read
    assert got.prompt_tokens_evaluated <= want.prompt_tokens_evaluated
    assert got.tokens == want.tokens and got.text == want.text


# -- what is never restored ------------------------------------------------------------------------


@pytest.mark.parametrize("change", ["kv_type", "template", "slots", "model file"])
def test_a_changed_fingerprint_is_never_restored(model, contexts, tmp_path, change):
    toks = model.tokenize(_text("epsilon", 3))
    folder = tmp_path / "kv"
    ctx = contexts(3)
    ctx.feed(0, toks, 0)
    _kv(model, folder).close(ctx.ctx, [_Slot(0, toks)])
    assert len(_files(folder)) == 1
    prompt = toks + model.tokenize_text(" more")
    assert _kv(model, folder).before_start(contexts(3).ctx, 1, [], prompt) == toks  # the same: restored
    if change == "kv_type":
        kv = _kv(model, folder, kv_type="q8_0")
    elif change == "template":
        kv = _kv(model, folder, template="{{ messages }}")
    elif change == "slots":
        kv = _kv(model, folder, streams=2)  # llama.cpp would refuse it: another stream count
    else:
        os.utime(model.backend.llm.model_path, ns=(1, 1))  # another file under the same name
        kv = _kv(model, folder)
    other = contexts(2 if change == "slots" else 3)
    assert kv.before_start(other.ctx, 1, [], prompt) == []
    assert other.held(1) == 0
    assert len(_files(folder)) == 1  # not deleted: it is valid for its own fingerprint


def test_slot_fingerprints_differ_by_stream_count_only_past_one():
    assert layout_fingerprint("fp", 1) == "fp"  # one stream: the one-sequence path's states
    assert len({layout_fingerprint("fp", n) for n in (1, 2, 3, 4)}) == 4


@pytest.mark.parametrize("damage", sorted(DAMAGE))
def test_a_corrupt_file_is_ignored_and_deleted(model, contexts, tmp_path, caplog, damage):
    toks = model.tokenize(_text("zeta", 3))
    folder = tmp_path / "kv"
    ctx = contexts(3)
    ctx.feed(0, toks, 0)
    _kv(model, folder).close(ctx.ctx, [_Slot(0, toks)])
    (f,) = _files(folder)
    f.write_bytes(DAMAGE[damage](f.read_bytes()))
    caplog.set_level(logging.WARNING, logger="app.engine.kvstore")
    other = contexts(3)
    other.feed(2, toks[:20], 0)
    held = toks[:20]
    assert _kv(model, folder).before_start(other.ctx, 2, held, toks + [toks[5]]) is held  # unchanged
    assert other.held(2) == 20
    assert not f.exists()
    assert any("KV store" in rec.getMessage() for rec in caplog.records)


def test_a_state_llama_cpp_refuses_is_deleted_and_the_sequence_emptied(model, contexts, tmp_path, caplog):
    toks = model.tokenize(_text("eta", 3))
    folder = tmp_path / "kv"
    kv = _kv(model, folder)
    kv.store.save(toks, bytes(range(256)) * 8)  # a whole, checksummed file llama.cpp cannot take
    ctx = contexts(3)
    ctx.feed(1, toks[:20], 0)
    caplog.set_level(logging.WARNING, logger="app.engine.kvstore")
    assert kv.before_start(ctx.ctx, 1, toks[:20], toks + [toks[3]]) == []
    assert ctx.held(1) == 0  # emptied: its cells may have been half written
    assert not _files(folder)
    assert any("refused" in rec.getMessage() for rec in caplog.records)


# -- bounds ------------------------------------------------------------------------------------------


def test_states_shorter_than_min_tokens_are_not_saved(model, contexts, tmp_path):
    short = model.tokenize("a short chat")
    assert 1 < len(short) < 16
    folder = tmp_path / "kv"
    ctx = contexts(2)
    ctx.feed(0, short, 0)
    kv = _kv(model, folder, streams=2, min_tokens=16)
    kv.before_start(ctx.ctx, 0, short, model.tokenize(_text("theta", 2)))  # left
    kv.close(ctx.ctx, [_Slot(0, short), _Slot(1)])
    assert not _files(folder)
    kv = _kv(model, folder, streams=2, min_tokens=len(short))
    kv.close(ctx.ctx, [_Slot(0, short)])
    assert len(_files(folder)) == 1  # the control: as long as min_tokens, it is saved


def test_the_bound_holds_and_the_least_recently_used_state_goes_first(model, contexts, tmp_path):
    convs = [model.tokenize(_text(topic, 2)) for topic in ("iota", "kappa", "lambda")]
    ctx = contexts(3)
    for seq, toks in enumerate(convs):
        ctx.feed(seq, toks, 0)
    folder = tmp_path / "kv"
    one = _kv(model, folder, max_bytes=64 * 1024**2)
    one.close(ctx.ctx, [_Slot(0, convs[0])])
    size = _files(folder)[0].stat().st_size
    bound = int(size * 2.5)  # room for two of them
    kv = _kv(model, folder, max_bytes=bound)
    paths = []
    for i, seq in enumerate((0, 1)):
        kv.close(ctx.ctx, [_Slot(seq, convs[seq])])
        (new,) = set(_files(folder)) - set(paths)
        os.utime(new, ns=((i + 1) * 10**9, (i + 1) * 10**9))  # a strict order of use, whatever the clock
        paths.append(new)
    # the oldest (A) is restored: it is the most recently used now, so B goes when C is saved
    fresh = contexts(3)
    assert kv.before_start(fresh.ctx, 2, [], convs[0] + [convs[0][4]]) == convs[0]
    kv.close(ctx.ctx, [_Slot(2, convs[2])])
    left = _files(folder)
    assert kv.store.total_bytes() <= bound and len(left) == 2
    assert paths[0] in left and paths[1] not in left


def test_a_state_not_written_yet_is_restored_from_memory(model, contexts, tmp_path):
    """The file is written by the store's own thread: a conversation that comes back before its
    file is written is restored from the bytes waiting for it, and the file follows."""
    a = model.tokenize(_text("mu", 3))
    b = model.tokenize(_text("nu", 3))
    folder = tmp_path / "kv"
    kv = _kv(model, folder, background=True)
    gate = threading.Event()
    real_save = kv.store.save

    def slow_save(*args, **kwargs):
        assert gate.wait(60)
        return real_save(*args, **kwargs)

    kv.store.save = slow_save  # type: ignore[method-assign]
    ctx = contexts(3)
    ctx.feed(0, a, 0)
    try:
        assert kv.before_start(ctx.ctx, 0, a, b) == a  # A left: handed to the writer
        assert not _files(folder)
        assert kv.before_start(ctx.ctx, 2, [], a + [a[7]]) == a  # from memory
        assert ctx.held(2) == len(a)
    finally:
        gate.set()
    kv.flush(stop=True)
    assert len(_files(folder)) == 1


@pytest.mark.live
def test_smollm2_conversation_of_1500_tokens_restored_into_another_slot(smollm2_path, tmp_path):
    """Must show 3's case for the scheduler: a 1,500-token conversation saved from one slot when the
    model closes, restored into another slot of a new context, decodes what the slot that read it
    all decodes."""
    n_ctx = 2048
    m = load_model(smollm2_path, n_ctx=n_ctx, n_threads=2, isolate=False)
    made: list[_Context] = []
    try:
        toks = m.tokenize(_text("A long system prompt", 78))
        assert 1500 <= len(toks) < n_ctx
        first = _Context(m, 2, n_ctx)
        made.append(first)
        for i in range(0, len(toks) - 1, 512):
            first.feed(0, toks[i : min(i + 512, len(toks) - 1)], i)
        folder = tmp_path / "kv"
        _kv(m, folder, streams=2, min_tokens=256, n_ctx=n_ctx).close(
            first.ctx, [_Slot(0, toks[:-1]), _Slot(1)]
        )
        again = _Context(m, 2, n_ctx)  # a restart
        made.append(again)
        kv = _kv(m, folder, streams=2, min_tokens=256, n_ctx=n_ctx)
        assert kv.before_start(again.ctx, 1, [], toks) == toks[:-1]
        restored = again.feed(1, toks[-1:], len(toks) - 1)
        read = first.feed(0, toks[-1:], len(toks) - 1)
        assert np.array_equal(restored, read)
    finally:
        for c in made:
            c.close()
        m.close()
