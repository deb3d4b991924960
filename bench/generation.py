"""Figures 1 and 2: Callisto's chat turn against a bare llama-cpp-python token loop.

Callisto's side is the real path the window runs: ``ChatSession.send()`` (render the template,
tokenize, ``generate()``, the family's streaming parser, typed events) on a producer thread,
its events delivered through a queue to the consumer (the main thread here), text coalesced every
30 ms exactly as the UI's EngineWorker does before it emits Qt signals. The bare side is ``Llama.generate`` plus ``detokenize`` on
the same rendered prompt tokens, on the same ``Llama`` (same context, so same parameters).
Both: greedy, ``THREADS`` threads, up to 256 tokens, the KV cache forgotten before each run,
5 interleaved pairs (order alternating), medians and ratios.

* tokens/s = (tokens - 1) / generation time: bare, first token -> last token; Callisto, ``send()``
  -> DoneEvent delivered, less the engine's time to its first token (so template rendering,
  parsing and delivery are all charged to Callisto)
* TTFT = call -> first token (bare) / ``send()`` -> first text event at the consumer (Callisto)
"""

from __future__ import annotations

import queue
import threading
import time
from dataclasses import dataclass
from typing import Any

from bench.harness import Row, interleave, median, row
from bench.models import GREEDY, bare_generate

__all__ = ["PROMPT", "CallistoRun", "callisto_turn", "run"]

PROMPT = (
    "You are helping me plan a small vegetable garden behind a terraced house in a rainy, mild "
    "climate. The bed is four metres by one metre, gets sun from late morning until evening, and "
    "the soil is heavy clay that stays wet in winter. I want to grow tomatoes, beans, lettuce, "
    "carrots and some herbs, and I would like to keep slugs away without chemicals. Write a "
    "detailed, step-by-step guide: how to improve the soil, where each crop should go and why, "
    "when to sow and plant each one month by month, how to water and feed them, how to deal with "
    "slugs and other pests, and what to do at the end of the season. Use headings and lists."
)
MAX_TOKENS = 256
PAIRS = 5
FLUSH_S = 0.03  # app.ui.worker_turns.Turns.FLUSH_S (bench stays Qt-free)


@dataclass
class CallistoRun:
    tokens: int
    ttft_s: float
    gen_s: float
    events: int

    @property
    def tokens_per_s(self) -> float:
        return (self.tokens - 1) / self.gen_s if self.gen_s > 0 and self.tokens > 1 else 0.0


_END = object()


def callisto_turn(
    model: Any,
    text: str,
    *,
    max_tokens: int,
    tool_format: str = "hermes",
    messages: list[Any] | None = None,
    session: Any = None,
) -> CallistoRun:
    """One chat turn through ``ChatSession.send`` on this (the engine) thread, its events consumed
    on another thread, as in the app."""
    from app.engine.chat import ChatSession
    from app.engine.events import DoneEvent, ReasoningEvent, TextEvent

    if session is None:
        session = ChatSession(
            model,
            tool_format=tool_format,
            sampling=GREEDY,
            max_tokens=max_tokens,
            messages=list(messages or []),
        )
    q: queue.SimpleQueue[Any] = queue.SimpleQueue()
    failure: list[BaseException] = []

    def produce() -> None:
        # Delivery as the window's EngineWorker does it: text and reasoning deltas coalesced and
        # handed over at most every FLUSH_S (app.ui.worker_turns.Turns.FLUSH_S, 30 ms), other
        # events at once. (A hand-over per token wakes a third thread per token; on 2 cores with
        # 2 llama.cpp threads that costs up to a third of the decode rate.)
        pending: list[Any] = []
        last_flush = time.monotonic()
        try:
            for ev in session.send(text):
                if isinstance(ev, TextEvent | ReasoningEvent):
                    if pending and type(pending[-1]) is not type(ev):
                        q.put(pending)
                        pending = []
                    pending.append(ev)
                    now = time.monotonic()
                    if now - last_flush >= FLUSH_S:
                        q.put(pending)
                        pending = []
                        last_flush = now
                    continue
                if pending:
                    q.put(pending)
                    pending = []
                q.put(ev)
            if pending:
                q.put(pending)
        except BaseException as exc:  # noqa: BLE001 - re-raised once the consumer is done
            failure.append(exc)
        finally:
            q.put(_END)

    # The calling thread is the engine thread (it loaded the model, as the app's EngineWorker
    # does); a consumer thread stands in for the UI thread that receives the events.
    got: dict[str, Any] = {"first": None, "done": None, "end": None, "events": 0}

    def consume() -> None:
        while True:
            ev = q.get()
            if ev is _END:
                return
            if isinstance(ev, list):  # a coalesced run of deltas
                got["events"] += len(ev)
                if got["first"] is None:
                    got["first"] = time.perf_counter()
                continue
            got["events"] += 1
            if got["first"] is None and isinstance(ev, TextEvent | ReasoningEvent):
                got["first"] = time.perf_counter()
            if isinstance(ev, DoneEvent):
                got["done"], got["end"] = ev, time.perf_counter()

    th = threading.Thread(target=consume, name="bench-consumer", daemon=True)
    th.start()
    start = time.perf_counter()
    produce()
    th.join()
    first, done, end, n_events = got["first"], got["done"], got["end"], got["events"]
    if failure:
        raise failure[0]
    if done is None or done.finish_reason == "error":
        raise RuntimeError(f"the chat turn failed: {getattr(done, 'error', 'no DoneEvent')}")
    first = first if first is not None else end
    # Time to first token: the turn's own (send() to the first token: template rendering,
    # tokenization and prompt evaluation). The first *visible* text can come later by design (a
    # reply's leading whitespace is held while the parser decides whether reasoning opens).
    # Generation time as the consumer saw it: everything from send() to the delivered DoneEvent,
    # less that time to the first token (parser and delivery stay charged).
    inner_ttft = done.ttft_s if done.ttft_s is not None else first - start
    return CallistoRun(
        tokens=done.generated_tokens,
        ttft_s=inner_ttft,
        gen_s=max(1e-9, (end - start) - inner_ttft),
        events=n_events,
    )


def prompt_tokens(model: Any, text: str) -> list[int]:
    """The tokens ``ChatSession`` generates from for a first turn of ``text``."""
    from app.engine.messages import Message
    from app.engine.render import render_prompt

    return model.tokenize(render_prompt(model, [Message(role="user", content=text)]).text)


def compare(
    label: str, model: Any, *, pairs: int = PAIRS, max_tokens: int = MAX_TOKENS, log: Any = print
) -> dict[str, Any]:
    """Interleaved Callisto / bare runs on ``model``; medians of tokens/s and TTFT."""
    # Callisto's llama.cpp context is in its engine process; the bare loop's is in this process
    # (one context per process: a second Llama in one process slows the first one's decoding by a
    # third on this machine, measured 101 -> 70 tok/s, which would bias the comparison).
    from bench.models import bare_llama

    bare = bare_llama(model)
    toks = prompt_tokens(model, PROMPT)
    cal_runs: list[CallistoRun] = []
    bare_runs: list[Any] = []

    def one_callisto() -> float:
        model.reset_cache()
        r = callisto_turn(model, PROMPT, max_tokens=max_tokens)
        cal_runs.append(r)
        return r.tokens_per_s

    def one_bare() -> float:
        r = bare_generate(bare, toks, max_tokens, fresh=True)
        bare_runs.append(r)
        return r.tokens_per_s

    one_callisto()  # warm-up (page cache, allocator), not counted
    one_bare()
    cal_runs.clear()
    bare_runs.clear()
    interleave([one_callisto, one_bare], pairs)
    res = {
        "label": label,
        "prompt_tokens": len(toks),
        "callisto_tps": median(r.tokens_per_s for r in cal_runs),
        "bare_tps": median(r.tokens_per_s for r in bare_runs),
        "callisto_ttft_s": median(r.ttft_s for r in cal_runs),
        "bare_ttft_s": median(r.ttft_s for r in bare_runs),
        "callisto_tokens": [r.tokens for r in cal_runs],
        "bare_tokens": [r.tokens for r in bare_runs],
        "callisto_runs_tps": [round(r.tokens_per_s, 1) for r in cal_runs],
        "bare_runs_tps": [round(r.tokens_per_s, 1) for r in bare_runs],
    }
    log(
        f"  {label}: prompt {len(toks)} tokens; Callisto {res['callisto_tps']:.1f} tok/s "
        f"(tokens {res['callisto_tokens']}), bare {res['bare_tps']:.1f} tok/s (tokens {res['bare_tokens']}); "
        f"TTFT Callisto {res['callisto_ttft_s'] * 1000:.1f} ms, bare {res['bare_ttft_s'] * 1000:.1f} ms; "
        f"each run's tok/s, in order: Callisto {res['callisto_runs_tps']}, bare {res['bare_runs_tps']}"
    )
    return res


def run(
    loaded: list[tuple[str, Any]], *, pairs: int = PAIRS, max_tokens: int = MAX_TOKENS, log: Any = print
) -> tuple[list[Row], dict[str, dict[str, Any]]]:
    """Rows for figures 1 and 2, one per model; also the raw medians by label (figure 4 and the
    server comparison reuse the measured tokens/s)."""
    rows: list[Row] = []
    raw: dict[str, dict[str, Any]] = {}
    for label, model in loaded:
        r = compare(label, model, pairs=pairs, max_tokens=max_tokens, log=log)
        raw[label] = r
        rows.append(
            row(
                f"1. generation tokens/s, Callisto / bare llama-cpp-python loop ({label}, "
                f"{r['callisto_tps']:.1f} vs {r['bare_tps']:.1f} tok/s)",
                r["callisto_tps"] / r["bare_tps"],
                "ratio",
                ">= 0.97",
            )
        )
    for label, r in raw.items():
        rows.append(
            row(
                f"2. time to first token, Callisto chat turn / bare prompt evaluation ({label}, "
                f"{r['prompt_tokens']}-token prompt, {r['callisto_ttft_s'] * 1000:.0f} vs "
                f"{r['bare_ttft_s'] * 1000:.0f} ms)",
                r["callisto_ttft_s"] / r["bare_ttft_s"],
                "ratio",
                "<= 1.10",
            )
        )
    return rows, raw
