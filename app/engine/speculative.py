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

:class:`DraftPolicy` adapts K per reply: it doubles while whole drafts are accepted, shrinks to
what was accepted after a partial one, and after misses in a row pauses drafting for a stretch of
tokens that doubles each time (a match of the longest n-gram is still tried while weaker ones
pause), so a reply that copies nothing pays a few verifications in all.

:func:`verify` is the acceptance loop both paths run (``app.engine.inprocess`` for one sequence,
``app.engine.scheduler`` for every slot of one decode). Qt-free, no llama.cpp import.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

__all__ = ["DraftPolicy", "NgramDrafter", "Speculation", "verify"]

#: n-gram lengths the drafter looks up, longest first
NGRAM_SIZES = (3, 2, 1)
#: the most tokens one draft proposes
MAX_DRAFT = 16


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
        matching tail, and the matched n (0: no match, no draft)."""
        toks = self.tokens
        if k <= 0:
            return [], 0
        end = len(toks)
        for n in self.sizes:
            if end <= n:
                continue
            at = self._seen[n].get(tuple(toks[end - n :]))
            if at is not None:
                return toks[at : min(at + k, end)], n
        return [], 0


class DraftPolicy:
    """How many tokens to draft next, per reply (see the module docstring)."""

    def __init__(self, k_start: int = 4, k_max: int = MAX_DRAFT, strong: int = NGRAM_SIZES[0]):
        self.k = max(1, min(k_start, k_max))
        self.k_max = k_max
        #: a match this long is "strong": it is tried while weaker matches pause
        self.strong = strong
        self._misses = [0, 0]  # misses in a row, weak and strong
        self._backoff = [8, 8]  # tokens the next pause lasts
        self._until = [0, 0]  # the reply's token count before which drafting pauses

    def size(self, produced: int, match: int) -> int:
        """The draft length for a match of ``match`` tokens when ``produced`` tokens are kept."""
        tier = int(match >= self.strong)
        return 0 if produced < self._until[tier] else self.k

    def update(self, produced: int, match: int, drafted: int, accepted: int) -> None:
        tier = int(match >= self.strong)
        if drafted <= 0:
            return
        if accepted >= drafted:
            self.k = min(self.k * 2, self.k_max)
            self._misses[tier] = 0
            self._backoff[tier] = 8
        elif accepted > 0:
            self.k = max(1, accepted + 1)
            self._misses[tier] = 0
        else:
            self.k = max(1, self.k // 2)
            self._misses[tier] += 1
            if self._misses[tier] >= 2:
                self._misses[tier] = 0
                self._until[tier] = produced + self._backoff[tier]
                self._backoff[tier] = min(self._backoff[tier] * 2, 1024)


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
    model_draft: Callable[[int], list[int]] | None = None
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
        model_draft: Callable[[int], list[int]] | None = None,
    ) -> Speculation:
        return cls(
            drafter=NgramDrafter() if ngram else None,
            policy=DraftPolicy(),
            prompt=prompt,
            model_draft=model_draft,
        )

    def kept(self, token: int) -> None:
        if self.drafter is not None:
            if self.produced == 0:
                self.drafter.extend(self.prompt)
            self.drafter.append(int(token))
        self.produced += 1

    def draft(self, room: int) -> list[int]:
        """The tokens to verify after the last kept one (empty: decode it alone)."""
        self._match = 0
        if room <= 0:
            return []
        room = min(room, self.policy.k_max)
        if self.drafter is not None:
            toks, n = self.drafter.propose(room)
            if toks:
                k = self.policy.size(self.produced, n)
                if k > 0:
                    self._match = n
                    return toks[:k]
        if self.model_draft is not None:
            k = self.policy.size(self.produced, self.policy.strong)
            if k > 0:
                self._match = self.policy.strong
                return self.model_draft(min(k, room))
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
