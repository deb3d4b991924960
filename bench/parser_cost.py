"""Figure 4: the streaming parser's cost, per family, fed a long reply one character at a time
and in token-sized chunks (4 characters, about a token of English), at 10 KB, 100 KB and 1 MB.

The reply is Markdown prose with code, braces, angle brackets and JSON-looking lines (what makes
a tool-call parser look twice) but no call. Sizes are interleaved (10K, 100K, 1M, 100K, 10K, ...)
so drift hits them alike. Two rows per family:

* linearity: cost per character at 1 MB / at 10 KB (the worse of the two feeding modes) [<= 1.2]
* share of generation time: parser seconds per token (token-sized chunks, 1 MB) x the
  measured tokens/s of figure 1, in percent [< 1]
"""

from __future__ import annotations

import time
from typing import Any

from bench.harness import Row, median, row

__all__ = ["CHUNK", "SIZES", "feed_rate", "reply_text", "run"]

SIZES = (10_000, 100_000, 1_000_000)
CHUNK = 4  # characters per token-sized chunk

_PARAGRAPH = (
    "## Step {i}: prepare the bed\n\n"
    "Dig in two buckets of compost per square metre; if a < b then the clay is heavy, so add grit. "
    "Keep {{the}} paths narrow and the soil loose - it matters more than you think.\n\n"
    "- Tomatoes go at the north end (they grow tall) and get a stake each.\n"
    "- Beans climb a frame of canes; carrots and lettuce share the middle rows.\n\n"
    '```python\nfor row in range(4):\n    plant(row, spacing={{"cm": 30}})\n```\n\n'
    'A config line looks like {{"water": "daily", "feed": ["tomato", 2]}} and that is fine.\n\n'
)


def reply_text(size: int) -> str:
    """``size`` characters of a plain (call-free) reply."""
    parts: list[str] = []
    n = 0
    i = 0
    while n < size:
        p = _PARAGRAPH.format(i=i)
        parts.append(p)
        n += len(p)
        i += 1
    return "".join(parts)[:size]


def feed_rate(fmt: Any, text: str, chunk: int, *, min_chars: int = 100_000) -> float:
    """Characters per second for a reply fed in ``chunk``-character pieces (events discarded);
    a short reply is parsed again (a fresh stream each time) until ``min_chars`` were fed."""
    reps = max(1, min_chars // max(1, len(text)))
    elapsed = 0.0
    for _ in range(reps):
        s = fmt.stream([], in_reasoning=False, orphan_close=False)
        feed = s.feed
        start = time.perf_counter()
        for i in range(0, len(text), chunk):
            feed(text[i : i + chunk])
        s.finish()
        elapsed += time.perf_counter() - start
    return reps * len(text) / elapsed if elapsed > 0 else float("inf")


def _size(n: int) -> str:
    return f"{n // 1_000_000} MB" if n >= 1_000_000 else f"{n // 1000} KB"


def run(
    tokens_per_s: float,
    *,
    sizes: tuple[int, ...] = SIZES,
    families: list[str] | None = None,
    log: Any = print,
) -> list[Row]:
    from app.engine.formats import FORMATS

    texts = {n: reply_text(n) for n in sizes}
    small, large = sizes[0], sizes[-1]
    # Interleaved order: the smallest three times around each larger size.
    order = [small]
    for n in sizes[1:]:
        order += [n, small]
    order += [small]
    rows_lin: list[Row] = []
    rows_share: list[Row] = []
    for name in families or list(FORMATS):
        fmt = FORMATS[name]
        rates: dict[tuple[int, int], list[float]] = {}
        for chunk in (1, CHUNK):
            for n in order:
                rates.setdefault((chunk, n), []).append(feed_rate(fmt, texts[n], chunk))
        med = {k: median(v) for k, v in rates.items()}
        lin = max(med[(c, small)] / med[(c, large)] for c in (1, CHUNK))  # cost ratio = rate ratio inverted
        per_token_s = CHUNK / med[(CHUNK, large)]
        share = 100.0 * per_token_s * tokens_per_s
        log(
            f"  {name}: "
            + ", ".join(
                f"{'char' if c == 1 else 'chunk'}@{_size(n)} {med[(c, n)] / 1e6:.2f} Mchar/s"
                for (c, n) in sorted(med)
            )
        )
        rows_lin.append(
            row(
                f"4. parser cost per char at {_size(large)} / at {_size(small)} ({name}; {med[(1, large)] / 1e3:,.0f}K char/s one at a time, "
                f"{med[(CHUNK, large)] / 1e3:,.0f}K in token chunks)",
                lin,
                "ratio",
                "<= 1.2",
            )
        )
        rows_share.append(
            row(
                f"4. parsing share of generation time at {tokens_per_s:.0f} tok/s ({name})", share, "%", "< 1"
            )
        )
    return rows_lin + rows_share
