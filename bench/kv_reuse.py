"""Figure 3: KV reuse. A conversation of about 1,500 tokens; the first turn evaluates it all,
the second turn (same session, one more exchange) should evaluate only what is new.

Each repetition: a fresh session on the model with an emptied KV cache, turn 1, turn 2; time to
first text event of each, interleaved by construction (turn 1 then turn 2), medians and ratio.
"""

from __future__ import annotations

from typing import Any

from bench.generation import callisto_turn
from bench.harness import Row, median, row
from bench.models import GREEDY

__all__ = ["conversation", "run"]

_TOPICS = [
    "rivers",
    "bread",
    "bicycles",
    "volcanoes",
    "chess",
    "tides",
    "bees",
    "glass",
    "maps",
    "clocks",
    "salt",
    "paper",
    "kites",
    "coral",
    "trains",
    "copper",
    "owls",
    "tea",
    "wind",
    "lighthouses",
]


def conversation(model: Any, target_tokens: int = 1500) -> list[Any]:
    """Alternating user/assistant messages whose rendered prompt is about ``target_tokens``."""
    from app.engine.messages import Message
    from app.engine.render import render_prompt

    msgs: list[Any] = []
    i = 0
    while True:
        topic = _TOPICS[i % len(_TOPICS)]
        msgs.append(Message(role="user", content=f"Tell me three facts about {topic}, briefly (note {i})."))
        msgs.append(
            Message(
                role="assistant",
                content=(
                    f"Here are three facts about {topic}. First, people have studied {topic} for centuries "
                    f"and written about them in many languages. Second, {topic} appear in stories, songs and "
                    f"proverbs around the world. Third, modern science keeps finding new things to learn "
                    f"about {topic}, from their history to the way they change over time."
                ),
            )
        )
        i += 1
        n = len(model.tokenize(render_prompt(model, msgs).text))
        if n >= target_tokens:
            return msgs


def run(loaded: list[tuple[str, Any]], *, reps: int = 5, log: Any = print) -> list[Row]:
    from app.engine.chat import ChatSession

    label, model = loaded[0]
    history = conversation(model)
    first: list[float] = []
    second: list[float] = []
    evaluated: list[tuple[int, int]] = []
    for _ in range(reps + 1):  # the first repetition warms up and is not counted
        model.reset_cache()
        session = ChatSession(
            model, tool_format="hermes", sampling=GREEDY, max_tokens=16, messages=list(history)
        )
        a = callisto_turn(model, "And one fact about the moon?", max_tokens=16, session=session)
        ev1 = model.last_prompt_eval
        b = callisto_turn(model, "And one about the sun?", max_tokens=16, session=session)
        ev2 = model.last_prompt_eval
        first.append(a.ttft_s)
        second.append(b.ttft_s)
        evaluated.append((ev1, ev2))
    first, second, evaluated = first[1:], second[1:], evaluated[1:]
    n_prompt = len(model.tokenize(session.last_prompt.text)) if session.last_prompt else 0
    t1, t2 = median(first), median(second)
    log(
        f"  {label}: conversation {n_prompt} tokens; TTFT turn 1 {t1 * 1000:.0f} ms, turn 2 {t2 * 1000:.0f} ms; "
        f"prompt tokens evaluated (turn 1, turn 2): {evaluated}"
    )
    return [
        row(
            f"3. KV reuse: second-turn TTFT / first-turn TTFT ({label}, ~{n_prompt}-token conversation, "
            f"{t2 * 1000:.0f} vs {t1 * 1000:.0f} ms)",
            t2 / t1,
            "ratio",
            "<= 0.25",
        )
    ]
