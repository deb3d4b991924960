"""Log probabilities of the tokens a generation keeps (the APIs' ``logprobs``).

A generation asked for them (``generate(..., options=TokenOptions(logprobs=N))``, N alternatives
a token, 0 to :data:`MAX_TOP_LOGPROBS`) gets, for each token it keeps, a :class:`TokenLogprob`: the token's
log probability and the N most likely tokens at its position, read from the model's logits at
the row the token was sampled from, before the sampler's chain (temperature, penalties, top-k/p,
a grammar or constraint): the model's own distribution, as OpenAI and llama-server report it. A
token a constraint forced may therefore be unlikely to the model, and say so.

Both backends record them where they sample (``app.engine.inprocess``, ``app.engine.scheduler``,
drafted tokens included: a verified draft's row is the one it was sampled from), in order; the
backend keeps a token's entry when it keeps the token (an end-of-generation token is not kept).

A generation may also ask for its prompt's (``prompt_logprobs``: what an eval harness scores a text
by, OpenAI's ``echo`` with ``logprobs``): the prompt is then read whole, with logits at every row
(never its KV prefix reused: those rows' logits are gone), :data:`SCORE_ROWS` rows a decode so the
logits buffer stays small on a large vocabulary; each token after the first gets the entry of the
row before it, the first one an entry whose ``logprob`` is None (nothing predicted it).
Qt-free; numpy and ``llama_cpp`` are imported when one is computed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["MAX_TOP_LOGPROBS", "SCORE_ROWS", "TokenLogprob", "logprob_at", "token_text"]

#: the most alternatives a token may ask for (OpenAI's and Ollama's bound)
MAX_TOP_LOGPROBS = 20
#: the most prompt rows with logits in one decode when a prompt's log probabilities are asked for
#: (the logits buffer holds a row of the vocabulary's size for each: 64 MiB at 256k tokens)
SCORE_ROWS = 64


@dataclass(frozen=True)
class TokenLogprob:
    """One kept token: its id, bytes and log probability, and the ``top`` alternatives at its
    position (most likely first; ``(id, bytes, logprob)``). A prompt's first token has None and
    no alternatives: no row predicted it."""

    token: int
    data: bytes
    logprob: float | None
    top: tuple[tuple[int, bytes, float], ...] = ()

    @property
    def text(self) -> str:
        return token_text(self.data)


def token_text(data: bytes) -> str:
    """A token's text as OpenAI writes it: its UTF-8, or ``bytes:\\xNN...`` for a token that is
    part of a character (its bytes are in the reply's ``bytes`` field either way)."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return "bytes:" + "".join(f"\\x{b:02x}" for b in data)


def logprob_at(
    ctx: Any, row: int, token: int, n_vocab: int, top: int, token_bytes: Callable[[int], bytes]
) -> TokenLogprob:
    """The entry of ``token``, sampled from the logits at batch row ``row`` of llama.cpp context
    ``ctx`` (a ``llama_context_p``; -1: the last row with logits)."""
    import llama_cpp
    import numpy as np

    ptr = llama_cpp.llama_get_logits_ith(ctx, row)
    logits = np.ctypeslib.as_array(ptr, shape=(n_vocab,)).astype(np.float64)
    peak = logits.max()
    norm = peak + np.log(np.exp(logits - peak).sum())  # log-sum-exp: the softmax's denominator
    best: tuple[tuple[int, bytes, float], ...] = ()
    if top > 0:
        k = min(top, n_vocab)
        ids = np.argpartition(logits, n_vocab - k)[n_vocab - k :]
        ids = ids[np.argsort(-logits[ids], kind="stable")]
        best = tuple((int(i), token_bytes(int(i)), float(logits[i] - norm)) for i in ids)
    return TokenLogprob(int(token), token_bytes(int(token)), float(logits[token] - norm), best)
