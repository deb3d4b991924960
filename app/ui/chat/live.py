"""The live end of a reply being written: its tokens and tok/s while it streams, and the statistics
line every reply shows once it ended (live or reopened)."""

from __future__ import annotations

__all__ = ["LiveCounter", "LiveSnapshot", "elapsed_text", "stats_text"]


def stats_text(
    generated_tokens: int | None,
    tokens_per_s: float | None,
    elapsed_s: float | None = None,
    ttft_s: float | None = None,
    *,
    draft_tokens: int | None = None,
    draft_accepted: int | None = None,
) -> str:
    """ "123 tokens · 45.6 tok/s · 2.7 s · first token 80 ms": the line under a reply, live or
    reopened (the same words from a turn's done event and from its stored statistics). A reply
    written with speculative decoding adds "· 42 of 60 drafted tokens accepted"."""
    parts = []
    if generated_tokens:
        parts.append(f"{generated_tokens:,} token{'' if generated_tokens == 1 else 's'}")
    if tokens_per_s is not None:
        parts.append(f"{tokens_per_s:.1f} tok/s")
    if elapsed_s is None and tokens_per_s and generated_tokens:
        elapsed_s = (ttft_s or 0.0) + generated_tokens / tokens_per_s
    if elapsed_s is not None:
        parts.append(elapsed_text(elapsed_s))
    if ttft_s is not None:
        parts.append(f"first token {elapsed_text(ttft_s)}")
    if draft_tokens:
        parts.append(f"{draft_accepted or 0:,} of {draft_tokens:,} drafted tokens accepted")
    return " · ".join(parts)


def elapsed_text(seconds: float) -> str:
    """How long a reply took, as a person reads it: "40 ms", "2.7 s", "3 min 05 s", "1 h 02 min"."""
    if seconds < 0.9995:
        return f"{max(seconds, 0.0) * 1000:.0f} ms"
    if seconds < 59.95:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


#: What the engine says of a reply being written: (tokens so far, the call being written as
#: (id, name, arguments so far) or None).
LiveSnapshot = tuple[int, tuple[str, str, str] | None]


class LiveCounter:
    """The tokens of a reply being written and their rate, from the engine's running count
    (``source()``: tokens generated so far in this turn, or None when the engine cannot tell).

    The rate counts from the first token seen, so the time spent reading the prompt is not in it."""

    def __init__(self) -> None:
        self.tokens = 0
        self._base: int | None = None  # the count when the first token was seen
        self._t0: float | None = None

    def update(self, tokens: int, now: float) -> None:
        if self._base is None and tokens > 0:
            self._base, self._t0 = tokens, now
        self.tokens = max(self.tokens, tokens)

    def rate(self, now: float) -> float | None:
        if self._base is None or self._t0 is None or now - self._t0 <= 0 or self.tokens - self._base < 2:
            return None
        return (self.tokens - self._base) / (now - self._t0)

    def text(self, now: float) -> str:
        if not self.tokens:
            return ""
        rate = self.rate(now)
        return f"{self.tokens:,} tokens" + (f" · {rate:.1f} tok/s" if rate is not None else "")
