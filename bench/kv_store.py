"""Figure 11: the KV cache as a store and as a setting.

**Reopening after a restart.** A conversation of about 1,500 tokens (figure 3's,
``bench.kv_reuse.conversation``) on a model loaded with a KV store
(``LoadSettings.kv_store``: a fresh folder each repetition). Each repetition: engine A reads the
whole conversation for a turn (a full prompt read, its time to first token logged for scale),
then is closed (the store saves the conversation's state); engine B, a fresh engine process with
the same store folder (the app restarted), reopens the conversation and sends the next turn
(time to first token: the store restores the saved state and reads only what is new), then a
second turn in the same session (time to first token: the context holds it). Greedy, 16 tokens a
turn; the first repetition warms up and is not counted; medians and ratio reopened / second turn
[<= 1.5].

**q8_0 KV.** The model loaded with a q8_0 KV cache and with f16 (each an engine process, same
context): the KV memory is *measured* as the sum of llama.cpp's own "KV buffer size" lines in the
engine's log (Gemma 3 has two caches: the sliding window's and the global one) [q8_0 / f16 <= 0.55].
The 20 mixed prompts of figure 10 (``bench.workloads.mixed_prompts``), up to 96 tokens each,
greedy on both: how many replies are token for token the same, and where the others part
[20 of 20; the row says exactly how they differ].
"""

from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

from bench.generation import callisto_turn
from bench.harness import Row, median, row
from bench.models import GREEDY, THREADS

__all__ = ["kv_buffer_mib", "run"]

N_CTX = 4096
TURN_TOKENS = 16
IDENTICAL_PROMPTS = 20
IDENTICAL_TOKENS = 96
_KV_BUFFER = re.compile(r"KV buffer size\s*=\s*([0-9.]+)\s*MiB")


def _load(path: Path, **settings: Any) -> Any:
    from app.engine.llm import LoadSettings, load_model

    return load_model(path, settings=LoadSettings(n_ctx=N_CTX, n_threads=THREADS, **settings))


def kv_buffer_mib(log_text: str) -> float | None:
    """The KV cache's size in MiB from llama.cpp's load log: the sum of its "KV buffer size" lines
    (one per cache and device), None when there is none."""
    sizes = [float(m.group(1)) for m in _KV_BUFFER.finditer(log_text)]
    return sum(sizes) if sizes else None


def _engine_log(model: Any) -> str:
    """The engine process's log so far (llama.cpp writes its load log there)."""
    engine = getattr(model, "engine", None)
    path = getattr(engine, "_stderr_path", None)
    if not path:
        return ""
    try:
        return Path(path).read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def run(
    models: list[tuple[str, Path]],
    *,
    reps: int = 5,
    conversation_tokens: int = 1500,
    n_prompts: int = IDENTICAL_PROMPTS,
    identical_tokens: int = IDENTICAL_TOKENS,
    log: Any = print,
) -> list[Row]:
    rows: list[Row] = []
    for label, path in models:
        rows.append(_reopen(label, path, reps=reps, target=conversation_tokens, log=log))
        rows += _quantized(label, path, n=n_prompts, max_tokens=identical_tokens, log=log)
    return rows


def _reopen(label: str, path: Path, *, reps: int, target: int, log: Any) -> Row:
    from app.engine.chat import ChatSession
    from app.engine.kvstore import KVStoreConfig
    from bench.kv_reuse import conversation

    full: list[float] = []
    reopened: list[float] = []
    second: list[float] = []
    evaluated: list[tuple[int, int, int]] = []
    n_prompt = 0
    root = Path(tempfile.mkdtemp(prefix="callisto-bench-kv-"))
    try:
        for rep in range(reps + 1):  # the first repetition warms up and is not counted
            store = KVStoreConfig(str(root / f"rep-{rep}"))
            a = _load(path, kv_store=store)
            try:
                history = conversation(a, target)
                session = ChatSession(
                    a, tool_format="hermes", sampling=GREEDY, max_tokens=TURN_TOKENS, messages=list(history)
                )
                t_full = callisto_turn(
                    a, "And one fact about the moon?", max_tokens=TURN_TOKENS, session=session
                )
                ev_full = a.last_prompt_eval
                messages = list(session.messages)
            finally:
                a.close()  # the store saves the conversation it holds
            saved = sorted(Path(store.folder).glob("*.kvs"))
            b = _load(path, kv_store=store)  # the app restarted: a fresh engine process
            try:
                session = ChatSession(
                    b, tool_format="hermes", sampling=GREEDY, max_tokens=TURN_TOKENS, messages=messages
                )
                t_open = callisto_turn(b, "And one about the sun?", max_tokens=TURN_TOKENS, session=session)
                ev_open = b.last_prompt_eval
                t_next = callisto_turn(b, "And one about the stars?", max_tokens=TURN_TOKENS, session=session)
                ev_next = b.last_prompt_eval
                if session.last_prompt is not None:
                    n_prompt = len(b.tokenize(session.last_prompt.text))
            finally:
                b.close()
            if rep == 0 and reps > 0:
                log(f"  {label}: warm-up; {len(saved)} state file(s) saved at close")
                continue
            full.append(t_full.ttft_s)
            reopened.append(t_open.ttft_s)
            second.append(t_next.ttft_s)
            evaluated.append((ev_full, ev_open, ev_next))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    t_full_m, t_open_m, t_next_m = median(full), median(reopened), median(second)
    log(
        f"  {label}: conversation ~{n_prompt} tokens; TTFT full read {t_full_m * 1000:.0f} ms, reopened after a "
        f"restart {t_open_m * 1000:.0f} ms, second turn {t_next_m * 1000:.0f} ms; prompt tokens evaluated "
        f"(full, reopened, second): {evaluated}"
    )
    return row(
        f"11. KV store: time to first token reopening a conversation after a restart / a second turn's "
        f"({label}, ~{n_prompt}-token conversation, {t_open_m * 1000:.0f} vs {t_next_m * 1000:.0f} ms; "
        f"read from scratch {t_full_m * 1000:.0f} ms)",
        t_open_m / t_next_m if t_next_m else None,
        "ratio",
        "<= 1.5",
    )


def _quantized(label: str, path: Path, *, n: int, max_tokens: int, log: Any) -> list[Row]:
    from bench.speculative import generate_once
    from bench.workloads import mixed_prompts

    f16 = _load(path, kv_type="f16")
    try:
        q8 = _load(path, kv_type="q8_0")
    except BaseException:
        f16.close()
        raise
    try:
        mib_f16 = kv_buffer_mib(_engine_log(f16))
        mib_q8 = kv_buffer_mib(_engine_log(q8))
        same = 0
        parted: list[int] = []  # where the replies that differ part: the first token that differs
        for prompt in mixed_prompts(f16, n):
            a = generate_once(f16, prompt, max_tokens).tokens
            b = generate_once(q8, prompt, max_tokens).tokens
            if a == b:
                same += 1
            else:
                parted.append(
                    next(
                        (i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b))
                    )
                )
    finally:
        f16.close()
        q8.close()
    log(
        f"  {label}: KV buffers f16 {mib_f16} MiB, q8_0 {mib_q8} MiB at {N_CTX} tokens; greedy replies "
        f"identical on {same} of {n} prompts (the others part at tokens {parted})"
    )
    measured = mib_f16 is not None and mib_q8 is not None and mib_f16 > 0
    mem = row(
        f"11. KV cache memory, q8_0 / f16 ({label}, "
        + (
            f"{mib_q8:.1f} vs {mib_f16:.1f} MiB at {N_CTX} tokens, llama.cpp's KV buffers)"
            if measured
            else "llama.cpp's log gave no KV buffer size)"
        ),
        (mib_q8 / mib_f16) if measured else None,  # type: ignore[operator]
        "ratio",
        "<= 0.55",
    )
    how = (
        f"; the other {len(parted)} part at generated token {', '.join(str(p + 1) for p in parted)} of {max_tokens}"
        if parted
        else ""
    )
    ident = row(
        f"11. greedy replies identical with a q8_0 KV cache and f16 ({label}, {same} of {n} prompts{how})",
        same / n if n else None,
        "ratio",
        ">= 1",
    )
    return [mem, ident]
