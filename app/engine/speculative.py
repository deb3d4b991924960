"""Speculative decoding: guess the next tokens cheaply, let the model check the guess in one decode.

A model writes one token per ``llama_decode``; a decode of a few tokens costs little more than a
decode of one (the weights are read once for all of them). So when the next tokens can be
guessed, the engine decodes ``[last token, d1 .. dK]`` in one batch with logits at every
position and samples at each position in turn with the reply's own sampler chain: while the
sample equals the draft, the draft is accepted and the next position's logits are already there;
the first sample that differs is kept as the correction, and when all K are accepted the sample
after the last is kept too (the bonus). Each verification so yields between 1 and K+1 tokens for
one decode; the KV of the rejected positions is removed (``llama_memory_seq_rm``).

**The output is the model's own.** Every kept token is the sample the reply's sampler chain
draws at its position, given exactly the tokens before it; a draft only decides how many
positions are decoded at once. The proposal is deterministic (a copy of earlier text, or a draft
model's greedy choice), and for a deterministic proposal q (one token with probability 1),
accepting "sample x ~ p; keep it, and go on while x equals the draft" is the rejection rule of
the literature (Leviathan et al. 2023, Chen et al. 2023: accept d with probability
min(1, p(d)/q(d)) = p(d), else sample from norm(max(0, p - q)), which is p without d): the kept
token is distributed exactly as p, so sampled output keeps its distribution, and greedy output is
token for token what it is without drafting. The chain accepts each kept token as it is sampled
(penalties, a GBNF grammar, the random state: one draw per kept token, in order), and the caller
feeds it to a constraint run (``consume``) before the next position is sampled, so a drafted
token that a grammar or constraint forbids is never sampled: it is rejected like any other miss.

Two drafters:

* :class:`NgramDrafter`, draftless "prompt lookup": the last n tokens (n = 3, 2, 1) of the
  prompt and the reply so far are looked up earlier in that history and the K tokens that
  followed are proposed. Tool calls whose arguments repeat the prompt and code edits that copy a
  block are written several tokens a decode; text that copies nothing finds no match (or wrong
  ones), and :class:`DraftPolicy` stops drafting for it.
* a draft model (``app.engine.inprocess.DraftModel``): a second, small GGUF with the same
  vocabulary that writes K tokens greedily.

:class:`DraftPolicy` chooses K per draft: it estimates, per match length, the chance that a
drafted token is accepted from the reply's own verifications, and drafts only as many tokens as
pay for their cost in the decode (:class:`DecodeCost`, measured on the model's first decodes): long
drafts while a copy goes on, none for a match length that keeps missing (tried again some 100
tokens later), so a reply that copies nothing pays a few short verifications in all.

:func:`verify` is the acceptance loop both paths run (``app.engine.inprocess`` for one sequence,
``app.engine.scheduler`` for every slot of one decode). Qt-free, no llama.cpp import.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["DecodeCost", "DraftPolicy", "NgramDrafter", "Speculation", "verify"]

#: n-gram lengths the drafter looks up, longest first
NGRAM_SIZES = (3, 2, 1)
#: the most tokens one draft proposes
MAX_DRAFT = 16

#: a one-token decode's time added by one more token, until a backend has measured it
DEFAULT_ALPHA = 0.35
#: how far back a match is measured (:meth:`NgramDrafter.propose`)
MAX_MATCH = 32
#: the per-token acceptance assumed, per match bucket (:func:`bucket`), before a reply says more
PRIOR = {1: 0.4, 2: 0.55, 3: 0.7, 4: 0.75, 5: 0.8, 6: 0.85}


def bucket(match: int) -> int:
    """The policy's class of a match of ``match`` tokens: 1, 2, 3, then 4-7, 8-15 and 16 or more
    (a copy under way matches far back, and its next tokens are the likeliest to follow)."""
    if match <= 3:
        return max(match, 1)
    return 4 if match < 8 else 5 if match < 16 else 6


class NgramDrafter:
    """Prompt lookup over a growing history (the prompt, then each token of the reply).

    For each n in ``sizes`` it keeps, per n-gram, where the most recent earlier occurrence ended,
    updated as tokens are appended (O(len(sizes)) a token), so a proposal costs a few dict
    look-ups whatever the prompt's length."""

    def __init__(self, history: Sequence[int] = (), sizes: Sequence[int] = NGRAM_SIZES):
        self.sizes = tuple(sorted({int(n) for n in sizes if n > 0}, reverse=True))
        self.tokens: list[int] = []
        self._seen: dict[int, dict[tuple[int, ...], int]] = {n: {} for n in self.sizes}
        self.extend(history)

    def extend(self, tokens: Sequence[int]) -> None:
        for t in tokens:
            self.append(int(t))

    def append(self, token: int) -> None:
        toks = self.tokens
        i = len(toks)
        # the n-grams that end just before the new token now have a continuation: token i
        for n in self.sizes:
            if i >= n:
                self._seen[n][tuple(toks[i - n : i])] = i
        toks.append(token)

    def propose(self, k: int) -> tuple[list[int], int]:
        """Up to ``k`` tokens that followed the latest earlier occurrence of the history's longest
        matching tail, and the match's length (0: no match, no draft): the n of the n-gram found,
        extended backwards while the tokens before both agree (up to :data:`MAX_MATCH`), so a copy
        that has gone on for a while says so. An image's positions (negative media ids,
        ``app.engine.vision``) are not tokens: a draft ends before the first one."""
        toks = self.tokens
        if k <= 0:
            return [], 0
        end = len(toks)
        for n in self.sizes:
            if end <= n:
                continue
            at = self._seen[n].get(tuple(toks[end - n :]))
            if at is not None:
                out = toks[at : min(at + k, end)]
                cut = next((i for i, t in enumerate(out) if t < 0), None)
                if cut is not None:
                    out = out[:cut]
                if not out:
                    return [], 0
                match, limit = n, min(MAX_MATCH, at)
                while match < limit and toks[at - 1 - match] == toks[end - 1 - match] >= 0:
                    match += 1
                return out, match
        return [], 0


class DecodeCost:
    """What a verification costs: ``alpha``, the time one more token in a decode adds, as a share
    of a one-token decode. A CPU decoding a small model is compute-bound (measured here: SmolLM2
    on one core, 0.4 a token); a GPU reads the weights once for the whole batch (near 0).

    :meth:`record` measures it on the decodes a backend times: a line ``time = a + b n`` fitted
    to the decodes of n tokens (sums that forget slowly), ``alpha = b / (a + b)``, once
    :attr:`SETTLE` were timed, :attr:`SETTLE_BATCHES` of them of more than one token; until then
    it is :data:`DEFAULT_ALPHA`, the CPU's, so a draft that cannot pay is not tried. Then it is
    **fixed for the model's life** (a reload measures again): a draft's length decides the shape
    of the decode its tokens are computed in, and on a CPU a token's logits depend on that shape
    by a rounding (ggml-cpu's flash attention reads a lone row's KV in per-thread chunks, a
    batch's rows in one pass; some quantized weights' one-row product is not their many-row one),
    so a cost that followed the wall clock would let the same greedy request, asked again, part
    at a near-tie: 256 tokens one time, 171 the next, measured on SmolLM2 at 2 threads. Fixed,
    the drafts follow the text alone and a greedy reply is the same every time it is asked.
    ``CALLISTO_DRAFT_ALPHA`` (a number in (0, 1]) fixes it from the start instead (tests,
    comparisons); so does an ``alpha`` given here."""

    FORGET = 0.98
    #: the timed decodes the cost is measured on before it is fixed, and how many of them must
    #: hold more than one token (a slope needs decodes of different sizes)
    SETTLE = 48
    SETTLE_BATCHES = 12

    def __init__(self, alpha: float | None = None):
        fixed = alpha if alpha is not None else _env_alpha()
        self.alpha = DEFAULT_ALPHA if fixed is None else fixed
        self.learns = fixed is None
        self.decodes = self.batches = 0  # the timed decodes recorded so far; of more than one token
        self._w = self._n = self._t = self._nn = self._nt = 0.0

    def record(self, n_tokens: int, seconds: float) -> None:
        if not self.learns or seconds <= 0 or n_tokens <= 0:
            return
        self.decodes += 1
        self.batches += int(n_tokens > 1)
        f, n = self.FORGET, float(n_tokens)
        self._w = self._w * f + 1.0
        self._n = self._n * f + n
        self._t = self._t * f + seconds
        self._nn = self._nn * f + n * n
        self._nt = self._nt * f + n * seconds
        mean_n, mean_t = self._n / self._w, self._t / self._w
        var = self._nn / self._w - mean_n * mean_n
        if self.decodes < self.SETTLE or self.batches < self.SETTLE_BATCHES or var < 0.25:
            return  # not enough decodes of different sizes yet
        b = (self._nt / self._w - mean_n * mean_t) / var
        a = mean_t - b * mean_n
        if a + b > 0:
            self.alpha = min(1.0, max(0.02, b / (a + b)))
            self.learns = False  # measured: fixed from now on (see the class docstring)

    def shared(self, sequences: int) -> float:
        """``alpha`` for a decode that also carries the next token of ``sequences`` sequences in
        all (a scheduler's step: this one and the others generating beside it). A drafted token
        costs what one more token always costs (``b``), but the step it rides on already yields
        a token per sequence: measured against that step's cost per token it yields,
        ``(a + b m) / m``, a draft costs ``b m / (a + b m)``, which is ``alpha`` for one sequence
        and nears 1 as the batch fills (a CPU: 0.38 alone, 0.83 beside 7 others for SmolLM2),
        so drafts crowd a shared step only where they are nearly sure to be accepted."""
        m = max(1, int(sequences))
        if m == 1 or self.alpha >= 1.0:
            return self.alpha
        r = self.alpha / (1.0 - self.alpha)  # b / a
        return (r * m) / (1.0 + r * m)


def _env_alpha() -> float | None:
    try:
        value = float(os.environ.get("CALLISTO_DRAFT_ALPHA", ""))
    except ValueError:
        return None
    return value if 0 < value <= 1 else None


class DraftPolicy:
    """How many tokens to draft next, per reply (see the module docstring).

    For each match length (1, 2, 3, 4-7, 8-15, 16 or more tokens: :func:`bucket`) it estimates
    the chance a drafted token is accepted, from the reply's own verifications (accepted tokens,
    and the first rejected one of each draft) over a prior (:data:`PRIOR`); the evidence fades as the reply goes on (0.97 a
    token), so a match length that stopped paying is tried again some 100 tokens later. The draft
    length K is the one that maximises the tokens a decode yields over its cost (``1 + alpha K``,
    :class:`DecodeCost`) under that chance; no draft when none gains ``MIN_GAIN``."""

    MIN_GAIN = 1.02
    FADE = 0.97
    WEIGHT = 2.0  # the prior's weight, in verifications

    def __init__(self, cost: DecodeCost | None = None, k_max: int = MAX_DRAFT):
        self.cost = cost if cost is not None else DecodeCost(DEFAULT_ALPHA)
        self.k_max = k_max
        self._acc = {n: 0.0 for n in PRIOR}  # faded accepted tokens, by match length
        self._rej = {n: 0.0 for n in PRIOR}  # faded rejections
        self._at = 0  # the reply's token count the evidence was faded to

    def chance(self, match: int) -> float:
        n = bucket(match)
        prior = PRIOR[n]
        return (self._acc[n] + self.WEIGHT * prior) / (self._acc[n] + self._rej[n] + self.WEIGHT)

    def _fade(self, produced: int) -> None:
        if produced > self._at:
            f = self.FADE ** (produced - self._at)
            for n in PRIOR:
                self._acc[n] *= f
                self._rej[n] *= f
            self._at = produced

    def size(self, produced: int, match: int, room: int | None = None, sharing: int = 1) -> int:
        """The draft length for a match of ``match`` tokens when ``produced`` tokens are kept;
        ``sharing``: the sequences whose next token the same decode carries (this one included,
        :meth:`DecodeCost.shared`)."""
        if match <= 0:
            return 0
        self._fade(produced)
        p = min(self.chance(match), 0.999)
        alpha = self.cost.shared(sharing)
        limit = self.k_max if room is None else min(room, self.k_max)
        best, best_gain = 0, self.MIN_GAIN
        yielded, term = 1.0, 1.0
        for k in range(1, limit + 1):
            term *= p
            yielded += term  # expected tokens of a draft of k: 1 + p + ... + p^k
            gain = yielded / (1.0 + alpha * k)
            if gain > best_gain:
                best, best_gain = k, gain
        return best

    def update(self, produced: int, match: int, drafted: int, accepted: int) -> None:
        if drafted <= 0 or match <= 0:
            return
        self._fade(produced)
        n = bucket(match)
        self._acc[n] += accepted
        if accepted < drafted:
            self._rej[n] += 1.0


@dataclass
class Speculation:
    """One reply's drafting: its n-gram drafter over prompt and reply, its policy, its counts.

    ``draft(room)`` proposes tokens for the next decode (at most ``room``); ``verified(...)``
    records the outcome; ``kept(token)`` adds a kept token to the history (the prompt is added
    with the first, so a reply's first token never waits for the n-gram index)."""

    drafter: NgramDrafter | None
    policy: DraftPolicy
    prompt: Sequence[int] = ()
    #: a draft model's proposer, ``(history, k) -> tokens`` (None: n-gram only)
    model_draft: Callable[[Sequence[int], int], list[int]] | None = None
    #: the prompt and the kept tokens (kept for a draft model only)
    history: list[int] | None = None
    #: what the reply is expected to say (OpenAI's predicted output), as tokens: looked up after
    #: the prompt, so a reply that follows it drafts from it first
    hint: Sequence[int] = ()
    drafted: int = 0
    accepted: int = 0
    produced: int = 0
    _match: int = 0

    @classmethod
    def start(
        cls,
        prompt: Sequence[int],
        *,
        ngram: bool = True,
        cost: DecodeCost | None = None,
        model_draft: Callable[[Sequence[int], int], list[int]] | None = None,
        hint: Sequence[int] = (),
    ) -> Speculation:
        """A reply's drafting; ``hint``: the tokens it is expected to say (n-gram lookup runs over
        them too, even with ``ngram`` off: the client asked for it)."""
        return cls(
            drafter=NgramDrafter() if ngram or hint else None,
            policy=DraftPolicy(cost),
            prompt=prompt,
            model_draft=model_draft,
            history=None if model_draft is None else list(prompt),
            hint=hint,
        )

    def kept(self, token: int) -> None:
        if self.drafter is not None:
            if self.produced == 0:
                self.drafter.extend(self.prompt)
                self.drafter.extend(self.hint)
            self.drafter.append(int(token))
        if self.history is not None:
            self.history.append(int(token))
        self.produced += 1

    def draft(self, room: int, sharing: int = 1) -> list[int]:
        """The tokens to verify after the last kept one (empty: decode it alone); ``sharing``:
        the sequences whose next token the same decode carries (a scheduler's generating slots,
        this one included), which makes each drafted token dearer (:meth:`DecodeCost.shared`)."""
        self._match = 0
        if room <= 0:
            return []
        room = min(room, self.policy.k_max)
        if self.drafter is not None:
            toks, n = self.drafter.propose(room)
            if toks:
                k = self.policy.size(self.produced, n, len(toks), sharing)
                if k > 0:
                    self._match = n
                    return toks[:k]
        if self.model_draft is not None and self.history is not None:
            k = self.policy.size(self.produced, 3, room, sharing)
            if k > 0:
                self._match = 3
                return self.model_draft(self.history, k)[:k]
        return []

    def verified(self, drafted: int, accepted: int) -> None:
        self.drafted += drafted
        self.accepted += accepted
        self.policy.update(self.produced, self._match, drafted, accepted)


def verify(
    sample: Callable[[int], int],
    drafts: Sequence[int],
    take: Callable[[int], bool],
) -> tuple[list[int], int]:
    """Sample the positions of one verification in turn: ``sample(i)`` draws at batch offset i
    (offset 0 holds the last kept token, offset i the draft ``drafts[i-1]``); ``take(token)``
    hands a sampled token to the reply (a constraint consumes it) and says whether the reply may
    go on after it (False: an end-of-generation token, or the budget is full).

    Returns the sampled tokens (the accepted drafts, then the correction or bonus, or fewer when
    ``take`` ended it) and the number of drafts accepted: the positions ``0 .. accepted`` hold
    valid KV, later ones are to be removed."""
    out: list[int] = []
    i = 0
    while True:
        tok = int(sample(i))
        out.append(tok)
        # a reply that ends at tok keeps the drafts before it all the same
        if not take(tok) or i == len(drafts) or tok != drafts[i]:
            return out, i
        i += 1
