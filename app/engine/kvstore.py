"""The KV store: a conversation's llama.cpp state kept on disk, so reopening it does not read it again.

llama.cpp's per-sequence state (``llama_state_seq_get_data`` / ``llama_state_seq_set_data``: the
KV cache of sequence 0, which is the one llama-cpp-python's ``Llama`` uses) is written to one file
per saved conversation under ``<data folder>/kv``. A saved state is found by its tokens: before a
prompt is read, the longest saved token sequence that is a prefix of the prompt (and longer than
what the context already holds) is restored, so llama.cpp evaluates only the tokens after it
(:func:`switch`). This needs no conversation id from the caller and serves the window, the server
and the check alike; a ``conversation`` label is kept when one is given.

When a state is saved: when it is *left* (the next prompt shares less than 90 % of the tokens the
context holds: another conversation, whose reading overwrites them) and when the model is closed
(the app quits, the model is unloaded or reloaded). A turn that continues the conversation, or
regenerates or edits its last turn, writes nothing: the store costs no time while one conversation
goes on. A crash loses only the state not yet saved, never a file. The write happens on the
generating thread before the next prompt is read (a state of n tokens is n times the KV bytes per
token: ``app.engine.models.estimate.kv_cache_bytes``).

Bounds and safety:

* the folder holds at most ``max_bytes`` (default :data:`DEFAULT_MAX_BYTES`): after each save the
  least recently used files (their modification time, touched on restore) are deleted until the
  total fits; a state larger than the bound is not saved;
* states shorter than ``min_tokens`` (default :data:`DEFAULT_MIN_TOKENS`) are not saved: they are
  read again faster than a file is written;
* a saved state that continues into a newer one of the same model is deleted (one file per
  conversation, not one per turn);
* every file carries the *fingerprint* it was made under (:func:`fingerprint`: the model file's
  path, size and modification time, its chat template, the KV cache type, flash attention and the
  llama.cpp build): a file made under another fingerprint is never restored, so a changed model,
  template or setting invalidates it;
* files are written atomically (a temp file beside it, fsync, rename) and end with a SHA-256 of
  their contents: a corrupt, truncated or foreign file is ignored with a log line and deleted,
  never a crash; a state llama.cpp refuses is dropped the same way.

File layout: ``b"CKV1"``, a 4-byte little-endian header length, a JSON header (``fingerprint``,
``tokens``, ``conversation``), the state bytes, then the SHA-256 of everything before it.

The scheduler's slots (``app.engine.scheduler``: N sequences in one llama.cpp context) have the
same store through :class:`SlotKV`: before a generation takes a slot, the conversation the slot
holds is saved if the prompt leaves it, and the best saved state for the prompt is restored into
that slot's sequence, whatever sequence it was saved from (a state carries its cells' positions,
not a sequence id); every slot is saved when the model is closed. The same bound, files and
checks, and the same folder as the one-sequence path; but llama.cpp writes the number of KV
streams (one per slot) into a sequence's state and refuses a state of another number, so states
are kept per slot count (:func:`layout_fingerprint`): changing ``--parallel`` reads them again. A
slot's state is read out of llama.cpp on the scheduler's thread; its file is written by a thread
of :class:`SlotKV` (the checksum, the write and the fsync do not stall the other slots), and a
state not written yet is restored from memory.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import mmap
import os
import struct
import tempfile
import threading
import time
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

__all__ = [
    "DEFAULT_MAX_BYTES",
    "DEFAULT_MIN_TOKENS",
    "KVStore",
    "KVStoreConfig",
    "SavedState",
    "SlotKV",
    "SlotState",
    "common",
    "fingerprint",
    "layout_fingerprint",
    "read_sequence",
    "save_current",
    "switch",
    "write_sequence",
]

log = logging.getLogger(__name__)

DEFAULT_MAX_BYTES = 2 * 1024**3
DEFAULT_MIN_TOKENS = 256
_MAGIC = b"CKV1"
_SUFFIX = ".kvs"
_DIGEST = 32
#: a state is read and hashed this much at a time (hashed while the chunk is in the CPU's cache)
_CHUNK = 1 << 20
#: a saved state is replaced by a new one that shares at least this part of it (a later turn of
#: the same conversation: its last reply's tail may be written otherwise by the template)
_CONTINUES = 0.9
#: a temp file this old is a write that was cut short (another process may be writing a newer one)
_STALE_PART_S = 600.0


@dataclass(frozen=True)
class KVStoreConfig:
    """Where and how much: passed with a model's load options (plain data, it crosses to the engine
    process)."""

    folder: str
    max_bytes: int = DEFAULT_MAX_BYTES
    min_tokens: int = DEFAULT_MIN_TOKENS


@dataclass(frozen=True)
class SavedState:
    """One saved state's header: the file, its tokens, the fingerprint it was made under."""

    path: Path
    tokens: tuple[int, ...]
    fingerprint: str
    conversation: str | None
    size: int


def fingerprint(
    model_path: str | os.PathLike[str], *, template: str | None, kv_type: str, flash_attn: bool
) -> str:
    """What a saved state is valid for: this model file (path, size, modification time), template,
    KV cache type, flash attention and llama.cpp build."""
    p = Path(model_path)
    try:
        st = p.stat()
        file_id = f"{p.resolve()}|{st.st_size}|{st.st_mtime_ns}"
    except OSError:
        file_id = str(p)
    try:
        import llama_cpp

        build = str(getattr(llama_cpp, "__version__", ""))
    except ImportError:  # pragma: no cover - the dependency is pinned
        build = ""
    raw = json.dumps([file_id, template or "", kv_type, bool(flash_attn), build])
    return hashlib.sha256(raw.encode("utf-8")).hexdigest()


def common(a: Sequence[int], b: Sequence[int]) -> int:
    """The length of the prefix ``a`` and ``b`` share."""
    k = min(len(a), len(b))
    if tuple(a[:k]) == tuple(b[:k]):  # the usual case, compared at C speed
        return k
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def _tokens_digest(tokens: Sequence[int]) -> str:
    return hashlib.sha256(json.dumps([int(t) for t in tokens]).encode("ascii")).hexdigest()


class KVStore:
    """The files of one folder, read and written for one ``fingerprint``."""

    def __init__(
        self,
        folder: str | os.PathLike[str],
        fingerprint: str,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        min_tokens: int = DEFAULT_MIN_TOKENS,
    ):
        if max_bytes <= 0:
            raise ValueError(f"max_bytes must be positive, got {max_bytes}")
        self.folder = Path(folder)
        self.fingerprint = fingerprint
        self.max_bytes = int(max_bytes)
        self.min_tokens = max(1, int(min_tokens))
        #: headers already read, by file name: (mtime_ns, size) -> SavedState | None (unreadable)
        self._headers: dict[str, tuple[tuple[int, int], SavedState | None]] = {}
        #: the folder's files and the headers: one thread at a time (a state's bytes are written
        #: to their temp file outside it: :class:`SlotKV` saves on a thread of its own)
        self._lock = threading.RLock()
        self._clear_stale_parts()

    def _clear_stale_parts(self) -> None:
        """Delete the temp files of writes cut short (a process killed while it saved)."""
        try:
            parts = list(self.folder.glob(".tmp-*.part"))
        except OSError:
            return
        now = time.time()
        for p in parts:
            with contextlib.suppress(OSError):
                if now - p.stat().st_mtime > _STALE_PART_S:
                    p.unlink()

    @classmethod
    def from_config(cls, config: KVStoreConfig, fingerprint: str) -> KVStore:
        return cls(config.folder, fingerprint, max_bytes=config.max_bytes, min_tokens=config.min_tokens)

    # -- reading ------------------------------------------------------------------------------------

    def _files(self) -> list[Path]:
        try:
            return [p for p in self.folder.iterdir() if p.suffix == _SUFFIX and p.is_file()]
        except OSError:
            return []

    def _header(self, path: Path) -> SavedState | None:
        try:
            st = path.stat()
        except OSError:
            return None
        stamp = (st.st_mtime_ns, st.st_size)
        cached = self._headers.get(path.name)
        if cached is not None and cached[0][1] == st.st_size:
            return cached[1]
        state: SavedState | None = None
        try:
            with path.open("rb") as f:
                head = f.read(8)
                if len(head) != 8 or head[:4] != _MAGIC:
                    raise ValueError("not a KV state file")
                (n,) = struct.unpack("<I", head[4:])
                if n > st.st_size:
                    raise ValueError("truncated header")
                meta = json.loads(f.read(n).decode("utf-8"))
            state = SavedState(
                path=path,
                tokens=tuple(int(t) for t in meta["tokens"]),
                fingerprint=str(meta["fingerprint"]),
                conversation=meta.get("conversation"),
                size=st.st_size,
            )
        except (OSError, ValueError, KeyError, TypeError, UnicodeDecodeError, struct.error) as exc:
            log.warning("KV store: ignoring %s (%s); it is deleted", path.name, exc)
            self._drop(path)
            return None
        self._headers[path.name] = (stamp, state)
        return state

    def entries(self) -> list[SavedState]:
        """Every readable saved state of this fingerprint."""
        out = []
        with self._lock:
            for p in self._files():
                s = self._header(p)
                if s is not None and s.fingerprint == self.fingerprint:
                    out.append(s)
        return out

    def lookup(
        self, tokens: Sequence[int], *, longer_than: int = 0, at_most: int | None = None
    ) -> SavedState | None:
        """The saved state of this fingerprint that shares the longest prefix with ``tokens``, if
        that prefix is longer than ``longer_than`` and at least ``min_tokens`` (:func:`common` of
        the two: the state's tail after it, say the end of the last reply that the template writes
        otherwise, is dropped when restored). ``at_most``: states of more tokens are passed over
        (they do not fit the context that would take them)."""
        best: SavedState | None = None
        best_n = max(int(longer_than), self.min_tokens - 1)
        for s in self.entries():
            if at_most is not None and len(s.tokens) > at_most:
                continue
            n = common(s.tokens, tokens)
            if n > best_n:
                best, best_n = s, n
        return best

    def load(self, saved: SavedState) -> memoryview | None:
        """The state bytes of ``saved``, checked against its digest; None (logged, file deleted)
        when the file is corrupt or gone. A load marks the file recently used.

        The state is read straight into one buffer (no copy of it is made: a state is tens of MB
        and each copy costs a restore what reading a few tokens does), chunk by chunk, each chunk
        hashed while it is in the cache; the digest covers the whole file as it was written."""
        with self._lock:
            try:
                state, ok = self._read_checked(saved.path)
            except OSError as exc:
                log.warning("KV store: cannot read %s (%s)", saved.path.name, exc)
                return None
            if not ok:
                log.warning(
                    "KV store: %s is corrupt (its checksum does not match); it is deleted", saved.path.name
                )
                self._drop(saved.path)
                return None
            with contextlib.suppress(OSError):
                os.utime(saved.path)
        return state

    @staticmethod
    def _read_checked(path: Path) -> tuple[memoryview | None, bool]:
        """Read the state bytes of the file at ``path`` into a new buffer, hashing as it reads:
        (the state, True), or (None, False) when the file is short, not a state file, or its
        digest does not match."""
        with path.open("rb", buffering=0) as f:
            size = os.fstat(f.fileno()).st_size
            head = f.read(8)
            if len(head) != 8 or head[:4] != _MAGIC:
                return None, False
            (n,) = struct.unpack("<I", head[4:])
            n_state = size - 8 - n - _DIGEST
            if n_state < 0:
                return None, False
            header = f.read(n)
            if len(header) != n:
                return None, False
            h = hashlib.sha256(head)
            h.update(header)
            buf = _fresh_buffer(n_state)
            at = 0
            while at < n_state:
                got = f.readinto(buf[at : at + _CHUNK])
                if not got:
                    return None, False  # shorter than when it was opened
                h.update(buf[at : at + got])
                at += got
            digest = f.read(_DIGEST + 1)  # one more: a file that grew meanwhile does not match
        if digest != h.digest():
            return None, False
        return buf, True

    # -- writing ------------------------------------------------------------------------------------

    def save(
        self, tokens: Sequence[int], state: bytes | memoryview, *, conversation: str | None = None
    ) -> Path | None:
        """Write ``state`` (llama.cpp's sequence state after ``tokens``) atomically; delete the saved
        states it continues, then the least recently used files beyond the bound. None when it is
        not kept (too short, larger than the bound, or the write failed: logged)."""
        toks = [int(t) for t in tokens]
        if len(toks) < self.min_tokens or not state:
            return None
        header = json.dumps(
            {"fingerprint": self.fingerprint, "tokens": toks, "conversation": conversation}
        ).encode("utf-8")
        head = _MAGIC + struct.pack("<I", len(header)) + header
        size = len(head) + len(state) + _DIGEST
        if size > self.max_bytes:
            log.info("KV store: a state of %d bytes exceeds the bound (%d): not saved", size, self.max_bytes)
            return None
        name = self._name(toks)
        target = self.folder / name
        if self.touch(toks):
            return target  # these very tokens are saved already (left again unchanged)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=self.folder, prefix=".tmp-", suffix=".part")
            try:
                with os.fdopen(fd, "wb") as f:
                    # the parts one after the other, never joined (a state is tens of MB)
                    h = hashlib.sha256(head)
                    h.update(state)
                    f.write(head)
                    f.write(state)
                    f.write(h.digest())
                    f.flush()
                    os.fsync(f.fileno())
                with self._lock:
                    os.replace(tmp, target)
                    self._headers.pop(name, None)
            except BaseException:
                with contextlib.suppress(OSError):
                    os.unlink(tmp)
                raise
        except OSError as exc:
            log.warning("KV store: could not save a state in %s (%s)", self.folder, exc)
            return None
        with self._lock:
            for s in self.entries():  # the states this one continues (earlier turns of the conversation)
                n = common(s.tokens, toks)
                if s.path != target and n >= len(s.tokens) * _CONTINUES and len(toks) > n:
                    self._drop(s.path)
            self.evict(keep=target)
        return target

    def _name(self, tokens: Sequence[int]) -> str:
        digest = f"{self.fingerprint}|{_tokens_digest(tokens)}"
        return hashlib.sha256(digest.encode()).hexdigest()[:40] + _SUFFIX

    def touch(self, tokens: Sequence[int]) -> bool:
        """Whether a readable state of exactly ``tokens`` is saved; if so it is marked recently
        used (a conversation left again unchanged: nothing to write)."""
        target = self.folder / self._name([int(t) for t in tokens])
        with self._lock:
            if not target.exists() or self._header(target) is None:
                return False
            with contextlib.suppress(OSError):
                os.utime(target)
        return True

    def evict(self, *, keep: Path | None = None) -> None:
        """Delete the least recently used files (any fingerprint) until the folder fits the bound."""
        with self._lock:
            files = []
            for p in self._files():
                try:
                    st = p.stat()
                except OSError:
                    continue
                files.append((st.st_mtime_ns, st.st_size, p))
            total = sum(size for _, size, _ in files)
            for _, size, p in sorted(files, key=lambda f: f[0]):
                if total <= self.max_bytes:
                    break
                if p == keep:
                    continue
                self._drop(p)
                total -= size

    def total_bytes(self) -> int:
        total = 0
        for p in self._files():
            with contextlib.suppress(OSError):
                total += p.stat().st_size
        return total

    def discard(self, saved: SavedState) -> None:
        """Delete a saved state (llama.cpp refused it)."""
        self._drop(saved.path)

    def _drop(self, path: Path) -> None:
        with self._lock:
            self._headers.pop(path.name, None)
            with contextlib.suppress(OSError):
                path.unlink()


# -- llama-cpp-python's Llama (in-process) ---------------------------------------------------------


def _fresh_buffer(n: int) -> memoryview:
    """``n`` writable bytes to read a state into, their pages mapped before it is read where the
    system can (Linux's ``MAP_POPULATE``: the kernel maps them in one call, where a new buffer
    otherwise takes a page fault per 4 KiB as it is first written: tens of ms for a state of tens
    of MB, and the most variable part of a restore on a virtual machine); elsewhere a buffer that
    is not zeroed first (``np.empty``: bytearray and ctypes arrays are)."""
    populate = getattr(mmap, "MAP_POPULATE", 0)
    if populate and n > 0:
        try:
            return memoryview(mmap.mmap(-1, n, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS | populate))
        except (OSError, ValueError):
            pass  # no room to map it now: the plain buffer below
    import numpy as np

    return np.empty(n, dtype=np.uint8).data


def _cached(llm: Any) -> list[int]:
    n = int(getattr(llm, "n_tokens", 0) or 0)
    return [int(t) for t in llm.input_ids[:n]] if n > 0 else []


def read_sequence(ctx: Any, seq_id: int = 0) -> memoryview | None:
    """llama.cpp's state of sequence ``seq_id`` of the context ``ctx`` (a ``llama_context_p``), or
    None when it has none. For a scheduler with several sequences in one context: save a slot's.
    The bytes are llama.cpp's own, in a buffer of their own (not copied again)."""
    import ctypes

    import llama_cpp
    import numpy as np

    size = int(llama_cpp.llama_state_seq_get_size(ctx, seq_id))
    if size <= 0:
        return None
    arr = np.empty(size, dtype=np.uint8)
    n = int(
        llama_cpp.llama_state_seq_get_data(
            ctx, arr.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8)), size, seq_id
        )
    )
    return arr.data[:n] if n > 0 else None


def write_sequence(ctx: Any, data: bytes | memoryview, seq_id: int = 0) -> bool:
    """Load a state from :func:`read_sequence` or :meth:`KVStore.load` into the (emptied) sequence
    ``seq_id``; False when llama.cpp refuses it (another model or cache layout, a context too
    small): then clear the sequence, whose cells may be half written. The bytes are handed to
    llama.cpp where they lie (no copy)."""
    import ctypes

    import llama_cpp
    import numpy as np

    arr = np.frombuffer(data, dtype=np.uint8)
    if arr.size == 0:
        return False
    ptr = arr.ctypes.data_as(ctypes.POINTER(ctypes.c_uint8))
    return int(llama_cpp.llama_state_seq_set_data(ctx, ptr, arr.size, seq_id)) > 0


def save_current(llm: Any, store: KVStore) -> Path | None:
    """Save the tokens the context of ``llm`` holds now (sequence 0), if they are long enough."""
    tokens = _cached(llm)
    if len(tokens) < store.min_tokens:
        return None
    data = read_sequence(llm._ctx.ctx, 0)
    return store.save(tokens, data) if data else None


def switch(llm: Any, store: KVStore, prompt: Sequence[int]) -> int:
    """Before ``prompt`` is read on ``llm``: save the conversation being left (the context holds
    tokens the prompt does not continue), then restore the saved state that shares the longest
    prefix with ``prompt`` when it shares more than the context does. Returns the tokens restored
    (its whole state: llama-cpp-python then keeps the shared prefix and reads the rest; 0: none)."""
    cached = _cached(llm)
    shared = common(cached, prompt)
    if cached and shared < len(cached) * _CONTINUES:
        # another conversation: the context is about to be overwritten, keep what it holds (a
        # regenerated or edited last turn of the same one is not a leave: it is saved when left)
        save_current(llm, store)
    saved = store.lookup(prompt, longer_than=shared)
    if saved is None:
        return 0
    data = store.load(saved)
    if data is None:
        return 0
    llm._ctx.kv_cache_seq_rm(-1, 0, -1)
    llm.n_tokens = 0
    if not write_sequence(llm._ctx.ctx, data, 0):
        log.warning("KV store: llama.cpp refused %s; it is deleted", saved.path.name)
        llm._ctx.kv_cache_seq_rm(-1, 0, -1)
        store.discard(saved)
        return 0
    n = len(saved.tokens)
    llm.input_ids[:n] = saved.tokens
    llm.n_tokens = n
    if hasattr(llm, "_requires_eval"):
        llm._requires_eval = True  # the logits are not the restored state's: evaluate a token
    return n


# -- the scheduler's slots (several sequences in one context) --------------------------------------

#: states handed to the writer thread and not written yet; past it a save waits for the writer
_MAX_PENDING = 4


def layout_fingerprint(fingerprint: str, streams: int) -> str:
    """The fingerprint of states made in a context whose KV cache has ``streams`` streams (a
    scheduler's cache, not unified, has one per slot). llama.cpp writes the stream count into a
    sequence's state and refuses a state of another count ("n_stream mismatch"), so such states
    are kept apart; one stream is the one-sequence path's own ``fingerprint``."""
    if streams <= 1:
        return fingerprint
    return hashlib.sha256(f"{fingerprint}|streams={int(streams)}".encode()).hexdigest()


class SlotState(Protocol):
    """What :meth:`SlotKV.close` reads of a scheduler's slot."""

    @property
    def seq(self) -> int: ...

    @property
    def cached(self) -> Sequence[int]: ...


class SlotKV:
    """The KV store of a scheduler's slots (``app.engine.scheduler``): :func:`switch` per sequence.

    :meth:`before_start` is called on the scheduler's thread when a generation is about to take
    sequence ``seq``: the conversation the sequence holds is saved when the prompt leaves it (as
    :func:`switch` decides), and the saved state that shares the longest prefix with the prompt,
    longer than what the sequence holds, is restored into it (a state restores into any sequence
    id: it carries the cells' positions, not the sequence it came from). :meth:`close` saves every
    slot worth it (the model is closed). Reading a sequence's state out of llama.cpp happens on the
    caller's thread; the file (its checksum, write and fsync) is written by a thread of its own
    (``background``), so the other slots do not stall meanwhile; a state handed to it and not
    written yet is found by :meth:`before_start` as a saved one. Never raises: the store is a
    cache, without it the prompt is read."""

    def __init__(self, store: KVStore, *, n_ctx: int | None = None, background: bool = True):
        self.store = store
        #: the tokens a sequence holds at most: a longer state is not restored (it does not fit)
        self.n_ctx = n_ctx
        self.background = background
        self._cond = threading.Condition()
        self._pending: dict[tuple[int, ...], bytes | memoryview] = {}  # handed to the writer, not written yet
        self._queue: deque[tuple[int, ...]] = deque()
        self._writer: threading.Thread | None = None

    @classmethod
    def from_config(
        cls, config: KVStoreConfig, fingerprint: str, *, streams: int, n_ctx: int | None = None
    ) -> SlotKV:
        """The store of ``config`` for a context of ``streams`` KV streams (a scheduler of that
        many slots) whose model has ``fingerprint`` (:func:`fingerprint`)."""
        fp = layout_fingerprint(fingerprint, streams)
        return cls(KVStore.from_config(config, fp), n_ctx=n_ctx)

    @classmethod
    def for_store(cls, store: KVStore | None, *, streams: int, n_ctx: int | None = None) -> SlotKV | None:
        """The slots' store beside a model's one-sequence ``store`` (the backend's ``kv_store``: its
        folder, bound and fingerprint), None without one."""
        if store is None:
            return None
        fp = layout_fingerprint(store.fingerprint, streams)
        kv = KVStore(store.folder, fp, max_bytes=store.max_bytes, min_tokens=store.min_tokens)
        return cls(kv, n_ctx=n_ctx)

    # -- the scheduler's hooks -----------------------------------------------------------------------

    def before_start(self, ctx: Any, seq: int, cached: list[int], prompt: Sequence[int]) -> list[int]:
        """Sequence ``seq`` of the context ``ctx`` (a ``llama_context_p``), whose KV holds
        ``cached``, is about to read ``prompt``: save what it holds if the prompt leaves it,
        restore the best saved state for the prompt. Returns the tokens the sequence holds now
        (``cached`` itself when nothing was restored; [] when a restore failed and the sequence
        was emptied)."""
        try:
            shared = common(cached, prompt)
            if cached and shared < len(cached) * _CONTINUES:
                self._save_sequence(ctx, seq, cached)
            found = self._find(prompt, longer_than=shared)
        except Exception:  # noqa: BLE001 - a state not saved is read again, never a crash
            log.exception("KV store: no state saved or restored for sequence %d", seq)
            return cached
        if found is None:
            return cached
        tokens, data, saved = found
        import llama_cpp

        mem = llama_cpp.llama_get_memory(ctx)
        llama_cpp.llama_memory_seq_rm(mem, seq, -1, -1)
        try:
            ok = write_sequence(ctx, data, seq)
        except Exception:  # noqa: BLE001 - handled as a refusal
            log.exception("KV store: restoring a state into sequence %d failed", seq)
            ok = False
        if not ok:
            what = saved.path.name if saved is not None else "a state not written yet"
            log.warning("KV store: llama.cpp refused %s; it is deleted", what)
            llama_cpp.llama_memory_seq_rm(mem, seq, -1, -1)  # its cells may be half written
            if saved is not None:
                self.store.discard(saved)
            else:
                with self._cond:
                    self._pending.pop(tokens, None)
            return []
        return list(tokens)

    def close(self, ctx: Any, slots: Iterable[SlotState]) -> None:
        """Save what every slot holds (if long enough and not saved yet), then wait until every
        state is written. Call before the context is freed; the store may be used again after."""
        for slot in slots:
            try:
                if slot.cached:
                    self._save_sequence(ctx, slot.seq, slot.cached)
            except Exception:  # noqa: BLE001 - a state not saved is read again, never a crash
                log.exception("KV store: the state of sequence %d at close was not saved", slot.seq)
        self.flush(stop=True)

    def flush(self, *, stop: bool = False) -> None:
        """Wait until every state handed to the writer is written (``stop``: and end the writer)."""
        with self._cond:
            while self._pending and self._writer is not None and self._writer.is_alive():
                self._cond.wait(1.0)
            writer = self._writer
            if stop:
                self._writer = None
                self._cond.notify_all()
        if stop and writer is not None:
            writer.join()

    # -- inside --------------------------------------------------------------------------------------

    def _save_sequence(self, ctx: Any, seq: int, tokens: Sequence[int]) -> None:
        toks = tuple(int(t) for t in tokens)
        if len(toks) < self.store.min_tokens:
            return
        with self._cond:
            if toks in self._pending:
                return
        if self.store.touch(toks):
            return  # left again unchanged: saved already
        data = read_sequence(ctx, seq)
        if not data:
            return
        if not self.background:
            self.store.save(toks, data)
            return
        with self._cond:
            while len(self._pending) >= _MAX_PENDING and self._writer is not None:
                self._cond.wait(1.0)
            self._pending[toks] = data
            self._queue.append(toks)
            if self._writer is None or not self._writer.is_alive():
                self._writer = threading.Thread(target=self._write_loop, name="kv-store-writer", daemon=True)
                self._writer.start()
            self._cond.notify_all()

    def _write_loop(self) -> None:
        me = threading.current_thread()
        while True:
            with self._cond:
                while not self._queue and self._writer is me:
                    self._cond.wait()
                if not self._queue:
                    return
                toks = self._queue.popleft()
                data = self._pending.get(toks)  # None: dropped meanwhile (llama.cpp refused it)
            try:
                if data is not None:
                    self.store.save(toks, data)
            except Exception:  # noqa: BLE001 - a state not saved is read again
                log.exception("KV store: a state was not saved")
            with self._cond:
                self._pending.pop(toks, None)
                self._cond.notify_all()

    def _find(
        self, prompt: Sequence[int], *, longer_than: int
    ) -> tuple[tuple[int, ...], bytes | memoryview, SavedState | None] | None:
        """The state to restore for ``prompt``: its tokens, its bytes and its file (None: one not
        written yet)."""
        best: tuple[tuple[int, ...], bytes | memoryview, SavedState | None] | None = None
        best_n = max(int(longer_than), self.store.min_tokens - 1)
        with self._cond:
            for toks, data in self._pending.items():
                if self.n_ctx is not None and len(toks) > self.n_ctx:
                    continue
                n = common(toks, prompt)
                if n > best_n:
                    best, best_n = (toks, data, None), n
        saved = self.store.lookup(prompt, longer_than=best_n, at_most=self.n_ctx)
        if saved is not None:
            state = self.store.load(saved)
            if state is not None:
                return saved.tokens, state, saved
        return best
