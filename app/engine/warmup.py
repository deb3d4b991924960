"""A warm-up decode when a llama.cpp context is made, as llama-server does at load (``--warmup``).

A context's first ``llama_decode`` costs more than the next ones: llama.cpp builds and allocates
its compute graph, the CPU backend starts its threads, the memory of the compute buffers and the
weights is touched for the first time. Left to the first request, that cost is in the user's first
time to first token, and in a reopened conversation's (bench figure 11: a fresh engine process
restores a saved KV state, then reads the few new tokens in its first decode). So the engine
pays it when the model is loaded: :func:`warm_up` decodes the vocabulary's BOS and EOS tokens
(what llama.cpp's ``common_init_from_params`` decodes, with ``llama_set_warmup`` on: a
mixture-of-experts model runs every expert, so all of its weights are touched), then clears the
context's memory and its performance counters. The context holds nothing after it: the first
reply is the one a context without a warm-up gives.

Called by ``app.engine.inprocess.InProcessBackend.load`` (the one-sequence context) and by
``app.engine.scheduler.Scheduler`` (the slots' context). Qt-free; ``llama_cpp`` is imported when
called.
"""

from __future__ import annotations

from typing import Any

__all__ = ["warm_up"]


def warm_up(ctx: Any, model: Any) -> bool:
    """Decode BOS (and EOS) once in the context ``ctx`` (a ``llama_context_p``) of ``model`` (a
    ``llama_model_p``), then empty the context's memory. Returns whether a decode ran: an
    encoder-decoder model (T5) is left cold (its decoder needs an encoded input first)."""
    import llama_cpp

    if llama_cpp.llama_model_has_encoder(model) or not llama_cpp.llama_model_has_decoder(model):
        return False
    vocab = llama_cpp.llama_model_get_vocab(model)
    ids = [
        int(t)
        for t in (llama_cpp.llama_vocab_bos(vocab), llama_cpp.llama_vocab_eos(vocab))
        if int(t) != llama_cpp.LLAMA_TOKEN_NULL
    ] or [0]
    tokens = (llama_cpp.llama_token * len(ids))(*ids)
    llama_cpp.llama_set_warmup(ctx, True)
    try:
        # the return code is not checked, as llama.cpp's own warm-up does not: a decode that
        # fails here fails again on the first request, which reports it
        llama_cpp.llama_decode(ctx, llama_cpp.llama_batch_get_one(tokens, len(ids)))
    finally:
        llama_cpp.llama_memory_clear(llama_cpp.llama_get_memory(ctx), True)
        llama_cpp.llama_synchronize(ctx)
        llama_cpp.llama_perf_context_reset(ctx)
        llama_cpp.llama_set_warmup(ctx, False)
    return True
