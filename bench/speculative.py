"""Figure 10: speculative decoding by n-gram drafting (prompt lookup), with it and without, side by side.

Each package model is loaded twice, Callisto's way (``app.engine.llm.load_model``, an engine
process each), the same in all but ``LoadSettings.ngram_draft`` (True / False), both held for the
whole figure. On three workloads (``bench.workloads``) - a tool call whose argument repeats a
note from the prompt, a 40-line code file written again with one change (both copy from their
context), and the garden guide (copies nothing) - one greedy generation of up to 256 tokens
runs on each model, interleaved (order alternating), 5 pairs, the KV cache forgotten before each
run; tokens/s = (tokens - 1) / (generation time less the engine's time to its first token), timed
here around ``generate()`` (pieces read as they come, the pipe included). Medians, ratio
drafting / none. The accepted drafts (``GenerationResult.draft_accepted`` of ``draft_tokens``)
are given in the row names.

Then 20 prompts per model (``bench.workloads.mixed_prompts``: copying and not), up to 96 tokens
each, greedy on both: the generated tokens must be the same (speculative decoding verifies every
drafted token against the model's own choice).

Goals: copying workloads >= 1.5x; the one that copies nothing >= 0.97x; identical outputs 20 of 20.

Why greedy outputs part on a CPU (measured 2026-12-03 on these 20 prompts, the same script with
one setting changed at a time). Every kept token is the model's own argmax at its position, but
a drafted position's logits come from a decode of several rows and an undrafted one's from a
decode of one, and ggml-cpu does not always compute a row the same way in both:

* its flash attention reads a lone row's KV in one chunk per thread once the cache's view holds
  512 cells or more (``use_split_kv_path`` in ``ggml-cpu/ops.cpp``, f16/f32 K and V only) and
  merges the chunks, and a batch's rows in one pass; the sums round apart. SmolLM2 (Q4_1
  weights): 16 of 20 identical at 2 threads with an f16 KV cache, **20 of 20 at 1 thread** (one
  chunk) and **20 of 20 at 2 threads with a q8_0 KV cache** (never split); the prompts that
  parted were those whose cache went past 256 cells, the short ones never did. Without flash
  attention it is worse (11 of 20): the K.Q product of one row and of several go through
  different kernels.
* the product of some quantized weights with one row is not their product with several (Gemma 3,
  Q5_0, Q4_K and Q8_0 weights: 14 of 20 at 1 thread, 12 of 20 at 2 threads with a q8_0 KV cache).

A draft that parts from the undrafted reply at such a near-tie writes another reply from there
(SmolLM2's copy workload: 190 tokens that stop copying, against 256), which is also why its
tokens/s vary with the drafts' shapes; the cost the drafts are sized by is measured once per
model and then fixed (``app.engine.speculative.DecodeCost``), so the same request always gets
the same reply.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from bench.harness import Row, interleave, median, row
from bench.models import GREEDY, THREADS

__all__ = ["SpecRun", "generate_once", "load_pair", "run", "run_prediction"]

N_CTX = 4096
IDENTICAL_PROMPTS = 20
IDENTICAL_TOKENS = 96


@dataclass
class SpecRun:
    tokens: list[int]
    ttft_s: float
    gen_s: float
    drafted: int
    accepted: int

    @property
    def tokens_per_s(self) -> float:
        n = len(self.tokens)
        return (n - 1) / self.gen_s if self.gen_s > 0 and n > 1 else 0.0


def _workloads() -> list[tuple[str, str, Callable[[Any], str], str]]:
    from bench import workloads

    return [
        ("a tool call whose arguments repeat the prompt", "copy", workloads.tool_copy, ">= 1.5"),
        ("rewriting a 40-line code block with one change", "code", workloads.code_rewrite, ">= 1.5"),
        ("a reply that copies nothing", "free", workloads.free, ">= 0.97"),
    ]


def load_pair(path: Path, *, n_ctx: int = N_CTX) -> tuple[Any, Any]:
    """(drafting, not drafting): the same model loaded twice, ``ngram_draft`` True and False."""
    from app.engine.llm import LoadSettings, load_model

    on = load_model(path, settings=LoadSettings(n_ctx=n_ctx, n_threads=THREADS, ngram_draft=True))
    try:
        off = load_model(path, settings=LoadSettings(n_ctx=n_ctx, n_threads=THREADS, ngram_draft=False))
    except BaseException:
        on.close()
        raise
    return on, off


def generate_once(
    model: Any, prompt: str, max_tokens: int, *, fresh: bool = True, prediction: str | None = None
) -> SpecRun:
    """One greedy generation of ``prompt``, timed here; ``fresh``: the KV cache forgotten first;
    ``prediction``: the text the reply is expected to say (OpenAI's predicted outputs)."""
    from app.engine.generation import TokenOptions, generate

    if fresh:
        model.reset_cache()
    start = time.perf_counter()
    options = TokenOptions(prediction=prediction)
    gen = generate(model, prompt, max_tokens=max_tokens, sampling=GREEDY, options=options)
    res = gen.run()
    end = time.perf_counter()
    if res.finish_reason not in ("stop", "length"):
        raise RuntimeError(f"the generation ended with {res.finish_reason!r}")
    ttft = res.ttft_s if res.ttft_s is not None else 0.0
    return SpecRun(
        tokens=list(res.tokens),
        ttft_s=ttft,
        gen_s=max(1e-9, (end - start) - ttft),
        drafted=int(getattr(res, "draft_tokens", 0) or 0),
        accepted=int(getattr(res, "draft_accepted", 0) or 0),
    )


def run(
    models: list[tuple[str, Path]],
    *,
    pairs: int = 5,
    max_tokens: int = 256,
    n_prompts: int = IDENTICAL_PROMPTS,
    identical_tokens: int = IDENTICAL_TOKENS,
    log: Any = print,
) -> list[Row]:
    rows: list[Row] = []
    for label, path in models:
        on, off = load_pair(path)
        try:
            rows += _speed(label, on, off, pairs=pairs, max_tokens=max_tokens, log=log)
            rows.append(_identical(label, on, off, n=n_prompts, max_tokens=identical_tokens, log=log))
        finally:
            on.close()
            off.close()
    return rows


def _speed(label: str, on: Any, off: Any, *, pairs: int, max_tokens: int, log: Any) -> list[Row]:
    rows: list[Row] = []
    for title, _key, make, goal in _workloads():
        prompt = make(on)
        with_runs, without = _paired(
            partial(generate_once, on, prompt, max_tokens),
            partial(generate_once, off, prompt, max_tokens),
            pairs,
        )
        a = median(r.tokens_per_s for r in with_runs)
        b = median(r.tokens_per_s for r in without)
        drafted = with_runs[-1].drafted
        accepted = with_runs[-1].accepted
        n_tokens = len(with_runs[-1].tokens)
        log(
            f"  {label}, {title}: drafting {a:.1f} tok/s, none {b:.1f} tok/s "
            f"({[round(r.tokens_per_s, 1) for r in with_runs]} / {[round(r.tokens_per_s, 1) for r in without]}); "
            f"{n_tokens} tokens, {accepted} of {drafted} drafted accepted"
        )
        rows.append(
            row(
                f"10. tokens/s, n-gram drafting / none, {title} ({label}, {a:.1f} vs {b:.1f} tok/s, "
                f"{accepted} of {drafted} drafted accepted)",
                a / b if b else None,
                "ratio",
                goal,
            )
        )
    return rows


def _paired(
    first: Callable[[], SpecRun], second: Callable[[], SpecRun], pairs: int
) -> tuple[list[SpecRun], list[SpecRun]]:
    """``pairs`` runs of each, interleaved (``bench.harness.interleave``) after one warm-up run
    of each that is not counted: (the first's runs, the second's)."""
    runs: tuple[list[SpecRun], list[SpecRun]] = ([], [])

    def timed(fn: Callable[[], SpecRun], out: list[SpecRun]) -> Callable[[], float]:
        def one() -> float:
            out.append(fn())
            return out[-1].tokens_per_s

        return one

    ones = [timed(first, runs[0]), timed(second, runs[1])]
    for one in ones:  # warm-up, not counted
        one()
    runs[0].clear()
    runs[1].clear()
    interleave(ones, pairs)
    return runs


def _identical(label: str, on: Any, off: Any, *, n: int, max_tokens: int, log: Any) -> Row:
    from bench.workloads import mixed_prompts

    same = 0
    drafted = accepted = 0
    differ: list[int] = []
    for i, prompt in enumerate(mixed_prompts(on, n)):
        a = generate_once(on, prompt, max_tokens)
        b = generate_once(off, prompt, max_tokens)
        drafted += a.drafted
        accepted += a.accepted
        if a.tokens == b.tokens:
            same += 1
        else:
            differ.append(i)
    log(
        f"  {label}: greedy outputs identical on {same} of {n} prompts (differ: {differ}); "
        f"{accepted} of {drafted} drafted accepted"
    )
    return row(
        f"10. greedy outputs identical with n-gram drafting and without ({label}, {same} of {n} prompts, "
        f"{accepted} of {drafted} drafted accepted)",
        same / n if n else None,
        "ratio",
        ">= 1",
    )


def run_prediction(
    models: list[tuple[str, Path]], *, pairs: int = 5, max_tokens: int = 256, log: Any = print
) -> list[Row]:
    """Figure 10b: predicted outputs (OpenAI's ``prediction``). The 40-line code file written again
    with one change, as an editor asks for it: with the file as the prediction and without, on the
    same model with n-gram drafting off, so the drafts come from the prediction alone."""
    from app.engine.llm import LoadSettings, load_model

    rows: list[Row] = []
    for label, path in models:
        model = load_model(path, settings=LoadSettings(n_ctx=N_CTX, n_threads=THREADS, ngram_draft=False))
        try:
            rows.append(_predicted(label, model, pairs=pairs, max_tokens=max_tokens, log=log))
        finally:
            model.close()
    return rows


def _predicted(label: str, model: Any, *, pairs: int, max_tokens: int, log: Any) -> Row:
    from bench.workloads import CODE, code_rewrite

    prompt = code_rewrite(model)
    told, untold = _paired(
        partial(generate_once, model, prompt, max_tokens, prediction=CODE),
        partial(generate_once, model, prompt, max_tokens),
        pairs,
    )
    a = median(r.tokens_per_s for r in told)
    b = median(r.tokens_per_s for r in untold)
    last = told[-1]
    same = sum(t.tokens == u.tokens for t, u in zip(told, untold, strict=True))
    log(
        f"  {label}, predicted output: {a:.1f} tok/s, none {b:.1f} tok/s "
        f"({[round(r.tokens_per_s, 1) for r in told]} / {[round(r.tokens_per_s, 1) for r in untold]}); "
        f"{len(last.tokens)} tokens, {last.accepted} of {last.drafted} drafted accepted; "
        f"the same reply in {same} of {len(told)} pairs"
    )
    return row(
        f"10b. tokens/s, predicted output / none, rewriting a 40-line code block with one change "
        f"({label}, {a:.1f} vs {b:.1f} tok/s, {last.accepted} of {last.drafted} drafted accepted)",
        a / b if b else None,
        "ratio",
        ">= 1.5",
    )
