"""The KV store (app.engine.kvstore): a conversation's llama.cpp state saved on disk and restored
when the conversation comes back, also after the model is loaded again (a restart), with its
bound (LRU eviction), its invalidation (a changed fingerprint) and its tolerance of bad files."""

from __future__ import annotations

import logging
import os

import pytest

from app.engine import kvstore as kvstore_mod
from app.engine.generation import generate
from app.engine.kvstore import KVStore, KVStoreConfig, fingerprint
from app.engine.llm import load_model

GREEDY = {"temperature": 0.0}


def _prompt(topic: str, n: int) -> str:
    return "".join(f"{topic} line {i}: the quick brown fox jumps over the lazy dog.\n" for i in range(n))


def _load(path, folder, *, isolate=False, min_tokens=16, **kw):
    return load_model(
        path,
        n_ctx=2048,
        n_threads=1,
        isolate=isolate,
        kv_store=KVStoreConfig(
            str(folder), max_bytes=kw.pop("max_bytes", 64 * 1024**2), min_tokens=min_tokens
        ),
        **kw,
    )


@pytest.mark.parametrize("isolate", [False, True], ids=["in-process", "engine-process"])
def test_conversation_reopened_after_reload_evaluates_only_new_tokens(tiny_gguf, tmp_path, isolate):
    path = tiny_gguf()
    folder = tmp_path / "kv"
    first = _prompt("conversation A", 12)
    m = _load(path, folder, isolate=isolate)
    try:
        r1 = generate(m, first, max_tokens=4, sampling=GREEDY).run()
        assert r1.prompt_tokens_evaluated == r1.prompt_tokens  # nothing saved yet: all read
        held = list(m.tokenize(first)) + r1.tokens  # what the context holds after the turn
    finally:
        m.close()  # the app quits: the open conversation is saved
    assert len(list(folder.glob("*.kvs"))) == 1

    m2 = _load(path, folder, isolate=isolate)  # a restart: a new model, the same data folder
    try:
        follow = first + "and one more question about it?"
        n_follow = len(m2.tokenize(follow))
        r2 = generate(m2, follow, max_tokens=4, sampling=GREEDY).run()
        # the saved tokens are a prefix of the new prompt: only the tokens after them are read
        common = 0
        for a, b in zip(held, m2.tokenize(follow), strict=False):
            if a != b:
                break
            common += 1
        assert common >= len(m2.tokenize(first)) - 1
        assert r2.prompt_tokens_evaluated == n_follow - common
        assert r2.prompt_tokens_evaluated < n_follow // 4
    finally:
        m2.close()


def test_restored_state_gives_the_same_greedy_reply(tiny_gguf, tmp_path):
    """A restored state is the state: the greedy reply after it equals the one after a full read."""
    path = tiny_gguf()
    text = _prompt("conversation B", 10)
    follow = text + "and then?"
    plain = load_model(path, n_ctx=2048, n_threads=1, isolate=False)
    try:
        want = generate(plain, follow, max_tokens=12, sampling=GREEDY).run()
    finally:
        plain.close()
    m = _load(path, tmp_path / "kv")
    try:
        generate(m, text, max_tokens=1, sampling=GREEDY).run()
    finally:
        m.close()
    m2 = _load(path, tmp_path / "kv")
    try:
        got = generate(m2, follow, max_tokens=12, sampling=GREEDY).run()
    finally:
        m2.close()
    assert got.prompt_tokens_evaluated < got.prompt_tokens
    assert got.tokens == want.tokens


def test_leaving_a_conversation_saves_it_and_coming_back_restores_it(tiny_gguf, tmp_path):
    path = tiny_gguf()
    a, b = _prompt("alpha", 10), _prompt("beta", 10)
    m = _load(path, tmp_path / "kv")
    try:
        generate(m, a, max_tokens=2, sampling=GREEDY).run()
        generate(m, a, max_tokens=2, sampling=GREEDY).run()  # A's last turn again (regenerate)
        assert not list((tmp_path / "kv").glob("*.kvs"))  # nothing written while A goes on
        rb = generate(m, b, max_tokens=2, sampling=GREEDY).run()  # A is left: saved
        assert rb.prompt_tokens_evaluated >= rb.prompt_tokens - 1
        assert len(list((tmp_path / "kv").glob("*.kvs"))) == 1
        back = a + "continued"
        ra = generate(m, back, max_tokens=2, sampling=GREEDY).run()  # B is left, A restored
        assert ra.prompt_tokens_evaluated < ra.prompt_tokens // 4
        assert len(list((tmp_path / "kv").glob("*.kvs"))) == 2
    finally:
        m.close()


def test_a_changed_fingerprint_invalidates_the_saved_state(tiny_gguf, tmp_path):
    path = tiny_gguf()
    folder = tmp_path / "kv"
    text = _prompt("gamma", 10)
    m = _load(path, folder)
    try:
        generate(m, text, max_tokens=2, sampling=GREEDY).run()
    finally:
        m.close()
    os.utime(path, ns=(1, 1))  # the model file changed (another download under the same name)
    m2 = _load(path, folder)
    try:
        r = generate(m2, text + "more", max_tokens=2, sampling=GREEDY).run()
        assert r.prompt_tokens_evaluated == r.prompt_tokens  # read in full: the state is not restored
    finally:
        m2.close()
    base = fingerprint(path, template="t", kv_type="f16", flash_attn=True)
    assert base != fingerprint(path, template="u", kv_type="f16", flash_attn=True)
    assert base != fingerprint(path, template="t", kv_type="q8_0", flash_attn=True)
    assert base != fingerprint(path, template="t", kv_type="f16", flash_attn=False)
    store = KVStore(folder, base, min_tokens=1)
    store.save([1, 2, 3], b"state")
    assert store.lookup([1, 2, 3, 4]) is not None
    assert KVStore(folder, "another", min_tokens=1).lookup([1, 2, 3, 4]) is None


def test_eviction_keeps_the_bound_least_recently_used_first(tmp_path):
    store = KVStore(tmp_path, "fp", max_bytes=10_000, min_tokens=1)
    saved = []
    for i in range(8):
        p = store.save([100 + i, 1, 2], bytes([i]) * 2_000)
        assert p is not None
        os.utime(p, ns=(i * 10**9, i * 10**9))  # a strict order of use, whatever the clock
        saved.append(p)
        assert store.total_bytes() <= 10_000
    # reading the oldest survivor makes it recently used: the next save evicts another
    survivors = [p for p in saved if p.exists()]
    assert survivors and saved[0] not in survivors
    oldest = min(survivors, key=lambda p: p.stat().st_mtime_ns)
    s = store.lookup([int(t) for t in store._header(oldest).tokens] + [9])
    assert s is not None and store.load(s) is not None
    store.save([200, 1, 2], b"x" * 2_000)
    assert oldest.exists()
    assert store.total_bytes() <= 10_000
    assert store.save([300], b"y" * 20_000) is None  # larger than the bound: not kept


def test_a_continued_conversation_replaces_its_earlier_state(tmp_path):
    store = KVStore(tmp_path, "fp", min_tokens=1)
    store.save([1, 2, 3], b"a")
    store.save([1, 2, 3, 4, 5], b"b")
    files = list(tmp_path.glob("*.kvs"))
    assert len(files) == 1
    found = store.lookup([1, 2, 3, 4, 5, 6])
    assert found is not None and found.tokens == (1, 2, 3, 4, 5) and store.load(found) == b"b"


@pytest.mark.parametrize("damage", ["flip", "truncate", "garbage"])
def test_a_corrupt_file_is_ignored_with_a_log_line(tiny_gguf, tmp_path, caplog, damage):
    path = tiny_gguf()
    folder = tmp_path / "kv"
    text = _prompt("delta", 10)
    m = _load(path, folder)
    try:
        generate(m, text, max_tokens=2, sampling=GREEDY).run()
    finally:
        m.close()
    (f,) = folder.glob("*.kvs")
    data = f.read_bytes()
    if damage == "flip":
        mid = len(data) // 2
        data = data[:mid] + bytes([data[mid] ^ 0xFF]) + data[mid + 1 :]
    elif damage == "truncate":
        data = data[: len(data) // 2]
    else:
        data = b"not a state" * 10
    f.write_bytes(data)
    caplog.set_level(logging.WARNING, logger="app.engine.kvstore")
    m2 = _load(path, folder)
    try:
        r = generate(m2, text + "more", max_tokens=2, sampling=GREEDY).run()
        assert r.prompt_tokens_evaluated == r.prompt_tokens  # read again, no crash
    finally:
        m2.close()
    assert any("KV store" in rec.getMessage() for rec in caplog.records)


@pytest.mark.parametrize("isolate", [False, True], ids=["in-process", "engine-process"])
def test_a_chat_reopened_after_a_restart_reads_only_its_new_message(tiny_gguf, tmp_path, isolate):
    """Issue 31, Must show 3 (as far as tests go): a ChatSession's turn, the model closed (the app
    quits), a new LoadedModel on the same data folder (a restart) and the conversation reopened:
    the next turn's DoneEvent says that only the tokens after the saved state were read."""
    from app.engine.chat import ChatSession
    from app.engine.events import DoneEvent

    path = tiny_gguf()
    folder = tmp_path / "kv"
    system = _prompt("system", 12)
    m = _load(path, folder, isolate=isolate)
    try:
        s = ChatSession(m, system_prompt=system, max_tokens=6, sampling=GREEDY, tool_format="none")
        first = [e for e in s.send("first question") if isinstance(e, DoneEvent)][-1]
        assert first.prompt_tokens_evaluated == first.prompt_tokens
        messages = list(s.messages)
    finally:
        m.close()

    m2 = _load(path, folder, isolate=isolate)
    try:
        s2 = ChatSession(
            m2, system_prompt=system, max_tokens=6, sampling=GREEDY, tool_format="none", messages=messages
        )
        done = [e for e in s2.send("second question") if isinstance(e, DoneEvent)][-1]
        # the tokens read are those after the first turn's prompt (the reply, written back by the
        # template, and the new message); the first turn's prompt came from the saved state
        assert done.prompt_tokens_evaluated is not None
        assert done.prompt_tokens_evaluated <= done.prompt_tokens - first.prompt_tokens
        assert done.prompt_tokens_evaluated < done.prompt_tokens // 4
    finally:
        m2.close()


def test_a_write_cut_short_leaves_no_lasting_temp_file(tmp_path):
    stale = tmp_path / ".tmp-abc.part"
    fresh = tmp_path / ".tmp-def.part"
    stale.write_bytes(b"x" * 100)
    fresh.write_bytes(b"y" * 100)
    os.utime(stale, (1, 1))
    KVStore(tmp_path, "fp")
    assert not stale.exists() and fresh.exists()  # a fresh one may be another process's write


@pytest.mark.live
def test_smollm2_conversation_of_1500_tokens_reopened_after_a_restart(smollm2_path, tmp_path):
    """Must show 3's case in the engine process: a 1,500-token conversation, the app restarted, the
    next turn reads only what follows the saved state (the bench times it)."""
    from app.engine.chat import ChatSession
    from app.engine.events import DoneEvent

    folder = tmp_path / "kv"
    system = _prompt("A long system prompt", 78)
    m = _load(smollm2_path, folder, isolate=True, min_tokens=256)
    try:
        s = ChatSession(m, system_prompt=system, max_tokens=16, sampling=GREEDY, tool_format="none")
        first = [e for e in s.send("Summarise the lines above.") if isinstance(e, DoneEvent)][-1]
        assert first.prompt_tokens >= 1500
        messages = list(s.messages)
    finally:
        m.close()
    m2 = _load(smollm2_path, folder, isolate=True, min_tokens=256)
    try:
        s2 = ChatSession(
            m2, system_prompt=system, max_tokens=16, sampling=GREEDY, tool_format="none", messages=messages
        )
        done = [e for e in s2.send("And the last line?") if isinstance(e, DoneEvent)][-1]
        assert done.prompt_tokens_evaluated is not None
        assert done.prompt_tokens_evaluated <= done.prompt_tokens - first.prompt_tokens
    finally:
        m2.close()


def test_a_state_llama_cpp_refuses_is_dropped_with_a_log_line(tiny_gguf, tmp_path, caplog):
    """A whole, checksummed file whose state llama.cpp cannot take (say, written by another build
    under the same fingerprint): logged, deleted, the prompt read in full."""
    from app.engine.models.metadata import read_metadata

    path = tiny_gguf()
    folder = tmp_path / "kv"
    fp = fingerprint(path, template=read_metadata(path).chat_template, kv_type="f16", flash_attn=True)
    m = _load(path, folder, min_tokens=4)
    try:
        text = _prompt("epsilon", 4)
        KVStore(folder, fp, min_tokens=4).save(m.tokenize(text)[:40], bytes(range(256)) * 8)
        caplog.set_level(logging.WARNING, logger="app.engine.kvstore")
        r = generate(m, text + "more", max_tokens=2, sampling=GREEDY).run()
        assert r.prompt_tokens_evaluated == r.prompt_tokens
    finally:
        m.close()
    assert any("refused" in rec.getMessage() for rec in caplog.records)
    # only the state saved at close is left: the refused one is gone
    assert all(len(s.tokens) != 40 for s in KVStore(folder, fp, min_tokens=4).entries())


def _state(n: int) -> bytes:
    """n bytes that differ from chunk to chunk (a state read in 1 MiB chunks)."""
    return bytes((i * 7 + i // 4099) & 0xFF for i in range(n))


def test_a_state_of_several_chunks_is_read_back_byte_for_byte(tmp_path):
    store = KVStore(tmp_path, "fp", min_tokens=1)
    state = _state(kvstore_mod._CHUNK * 2 + 12_345)  # the last chunk a partial one
    store.save([1, 2, 3], state)
    found = store.lookup([1, 2, 3, 4])
    assert found is not None
    assert bytes(store.load(found)) == state


#: every way a file made by ``save`` goes bad: a byte flipped in its header, in its state's first,
#: middle and last chunk and in its digest; one byte cut or added; cut inside its header
FILE_DAMAGE = {
    "flip-header": lambda d: _flip(d, 12),
    "flip-first-chunk": lambda d: _flip(d, 200),
    "flip-chunk-boundary": lambda d: _flip(d, kvstore_mod._CHUNK + 40),
    "flip-last-chunk": lambda d: _flip(d, len(d) - kvstore_mod._DIGEST - 1),
    "flip-digest": lambda d: _flip(d, len(d) - 1),
    "one-byte-short": lambda d: d[:-1],
    "one-byte-more": lambda d: d + b"\0",
    "cut-in-header": lambda d: d[:20],
}


def _flip(d: bytes, at: int) -> bytes:
    return d[:at] + bytes([d[at] ^ 0x01]) + d[at + 1 :]


@pytest.mark.parametrize("damage", sorted(FILE_DAMAGE))
def test_every_damaged_byte_is_detected_and_the_file_deleted(tmp_path, caplog, damage):
    store = KVStore(tmp_path, "fp", min_tokens=1)
    path = store.save([5, 6, 7], _state(kvstore_mod._CHUNK + 4_000))
    assert path is not None
    path.write_bytes(FILE_DAMAGE[damage](path.read_bytes()))
    caplog.set_level(logging.WARNING, logger="app.engine.kvstore")
    reader = KVStore(tmp_path, "fp", min_tokens=1)  # a restart: no header read yet
    found = reader.lookup([5, 6, 7, 8])
    assert found is None or reader.load(found) is None
    assert not path.exists()
    assert any("KV store" in rec.getMessage() for rec in caplog.records)


@pytest.mark.parametrize("populate", [True, False], ids=["populated-mapping", "plain-buffer"])
def test_a_state_is_read_into_a_buffer_of_its_own_either_way(tmp_path, monkeypatch, populate):
    # Linux maps the buffer's pages before the read (MAP_POPULATE); elsewhere (or when the
    # mapping fails) a plain buffer: the state read back is the same, and it is writable and
    # outlives the file (llama.cpp reads it after the store's file may be evicted)
    if not populate:
        monkeypatch.delattr(kvstore_mod.mmap, "MAP_POPULATE", raising=False)
    elif not hasattr(kvstore_mod.mmap, "MAP_POPULATE"):
        pytest.skip("this system has no MAP_POPULATE")
    store = KVStore(tmp_path, "fp", min_tokens=1)
    state = _state(kvstore_mod._CHUNK + 777)
    store.save([1, 2, 3], state)
    found = store.lookup([1, 2, 3, 4])
    assert found is not None
    buf = store.load(found)
    assert buf is not None and not buf.readonly and len(buf) == len(state)
    store.discard(found)
    assert not found.path.exists()
    assert bytes(buf) == state
