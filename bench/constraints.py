"""Figure 7: constrained decoding (``app.engine.constraints``) against free decoding.

On the same rendered prompt (the hermes format forced, five tools in its guidance), interleaved
pairs of ``generate()`` runs with and without the ``required`` constraint (parallel calls, so the
held reply goes on as calls until ``max_tokens``), greedy, the KV cache forgotten before each:

* tokens/s = (tokens - 1) / (last token - first token), held / free: goal >= 0.95;
* time to first token, held / free: the held side's clock starts before ``compile_constraint``
  (a cache hit) so looking up the constraint and the first mask are charged to it: goal <= 1.10;
* constraint build time for 32 tools: first time (a tool set never seen, the model's tokenizer
  already built) and cached: goal < 50 ms each.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from bench.harness import Row, interleave, median, row
from bench.models import GREEDY

__all__ = ["run"]

PROMPT = "Look up the weather in Oslo, then book a table for four at eight and note it in my calendar."


def _tool(name: str, props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool.",
            "parameters": {"type": "object", "properties": props, "required": required},
        },
    }


FIVE = [
    _tool("get_weather", {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}}, ["city"]),
    _tool(
        "book_table",
        {"restaurant": {"type": "string"}, "people": {"type": "integer"}, "time": {"type": "string"}},
        ["restaurant", "people"],
    ),
    _tool(
        "add_event",
        {
            "title": {"type": "string"},
            "when": {"type": "string"},
            "attendees": {"type": "array", "items": {"type": "string"}},
        },
        ["title", "when"],
    ),
    _tool("send_message", {"to": {"type": "string"}, "text": {"type": "string"}}, ["to", "text"]),
    _tool("search", {"query": {"type": "string"}, "limit": {"type": "integer"}}, ["query"]),
]


def thirty_two(tag: str) -> list[dict[str, Any]]:
    """32 tools (names made unique by ``tag``, so each set is new to the cache)."""
    return [
        _tool(
            f"{tag}_tool_{i}",
            {
                "text": {"type": "string"},
                "count": {"type": "integer"},
                "mode": {"enum": ["a", "b", "c"]},
                "flag": {"type": "boolean"},
            },
            ["text"],
        )
        for i in range(32)
    ]


def run(
    loaded: list[tuple[str, Any]],
    *,
    pairs: int = 5,
    max_tokens: int = 128,
    log: Callable[[str], None] = print,
    on_engine: Callable[[Callable[[], Any]], Any] | None = None,
) -> list[Row]:
    from app.engine import generate
    from app.engine.constraints import compile_constraint
    from app.engine.messages import Message
    from app.engine.render import render_prompt

    call = on_engine or (lambda fn: fn())
    rows: list[Row] = []
    for label, model in loaded:
        t0 = time.perf_counter()
        # the first compile builds the model's llguidance tokenizer (in its engine process)
        warm = thirty_two("warmup")[:1]
        call(lambda m=model, w=warm: compile_constraint(m, family="hermes", tools=w, tool_choice="required"))
        log(
            f"  {label}: llguidance tokenizer built in {(time.perf_counter() - t0) * 1000:.0f} ms (once per model)"
        )
        text = render_prompt(
            model, [Message(role="user", content=PROMPT)], tools=FIVE, tool_format="hermes"
        ).text
        stats: dict[str, list[tuple[float, float]]] = {"free": [], "held": []}

        def one(held: bool, m: Any = model, prompt: str = text, stats: dict = stats) -> float:
            m.reset_cache()
            start = time.perf_counter()
            c = compile_constraint(m, family="hermes", tools=FIVE, tool_choice="required") if held else None
            g = generate(m, prompt, max_tokens=max_tokens, constraint=c, sampling=GREEDY, stop=())
            res = g.run()
            tps = res.tokens_per_s or 0.0
            # from before the constraint lookup (held) to the first token
            ttft = (time.perf_counter() - start) - res.elapsed_s + (res.ttft_s or 0.0)
            stats["held" if held else "free"].append((tps, ttft))
            return tps

        call(lambda: one(True))  # warm-up (also compiles and caches the constraint)
        call(lambda: one(False))
        stats["free"].clear()
        stats["held"].clear()
        call(lambda: interleave([lambda: one(False), lambda: one(True)], pairs))
        free_tps = median(t for t, _ in stats["free"])
        held_tps = median(t for t, _ in stats["held"])
        free_ttft = median(f for _, f in stats["free"])
        held_ttft = median(f for _, f in stats["held"])
        log(
            f"  {label}: {held_tps:.1f} tok/s held vs {free_tps:.1f} free; TTFT {held_ttft * 1000:.0f} vs "
            f"{free_ttft * 1000:.0f} ms"
        )
        rows.append(
            row(
                f"7. generation tokens/s, required (5 tools) / unconstrained ({label}, "
                f"{held_tps:.1f} vs {free_tps:.1f} tok/s)",
                held_tps / free_tps,
                "ratio",
                ">= 0.95",
            )
        )
        rows.append(
            row(
                f"7. time to first token, required / unconstrained ({label}, {held_ttft * 1000:.0f} vs "
                f"{free_ttft * 1000:.0f} ms)",
                held_ttft / free_ttft,
                "ratio",
                "<= 1.10",
            )
        )

        firsts, cached = [], []
        for i in range(3):
            tools = thirty_two(f"{label.split('-')[0].lower()}{i}{time.monotonic_ns() % 100000}")
            t0 = time.perf_counter()
            call(
                lambda t=tools, m=model: compile_constraint(
                    m, family="hermes", tools=t, tool_choice="required"
                )
            )
            t1 = time.perf_counter()
            call(
                lambda t=tools, m=model: compile_constraint(
                    m, family="hermes", tools=t, tool_choice="required"
                )
            )
            t2 = time.perf_counter()
            firsts.append((t1 - t0) * 1000)
            cached.append((t2 - t1) * 1000)
        rows.append(row(f"7. constraint build, 32 tools, first time ({label})", median(firsts), "ms", "< 50"))
        rows.append(row(f"7. constraint build, 32 tools, cached ({label})", median(cached), "ms", "< 50"))
    return rows
