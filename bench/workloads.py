"""Prompts shared by figures 10 and 11: replies that copy from their context, and replies that do not.

* :func:`tool_copy` - a tool call whose argument repeats a note given in the prompt: the user asks
  for ``save_note`` with the note's exact text, and the reply is started as the Hermes call
  (``<tool_call>{"name": "save_note", "arguments": {"text": "``), so the model goes on to copy it;
* :func:`code_rewrite` - a 40-line Python file to be written again with one change, the reply
  started with the code fence, so the model copies the file;
* :func:`free` - a reply that copies nothing (the garden guide of figures 1 and 2).

Each is the full prompt text (the model's template, then the reply's start), so it runs the same
through ``app.engine.generation.generate`` on any model, with or without a chat template of its
own. :func:`mixed_prompts` is a mix of 20 such prompts, for the figures' "greedy output is the
same" rows.
"""

from __future__ import annotations

from typing import Any

__all__ = ["CODE", "CODE_CHANGES", "NOTES", "QUESTIONS", "code_rewrite", "free", "mixed_prompts", "tool_copy"]

NOTES = (
    "The quarterly planning meeting moves from Tuesday the 14th to Thursday the 16th at 10:30, in "
    "room 4B on the second floor. Bring the updated budget spreadsheet, the list of open hiring "
    "requests, and your notes on the customer interviews from last month. Maria will present the "
    "roadmap for the mobile app, and Tom will walk us through the new deployment checklist. Lunch "
    "is provided; tell Priya by Wednesday noon if you have dietary requirements.",
    "Water the tomatoes every second morning before nine, more often when it is above 28 degrees. "
    "Feed them with the liquid seaweed from the shed once a week, diluted one cap to five litres. "
    "Pinch out the side shoots on the cordon plants but leave the bush variety alone. The beans on "
    "the left trellis need tying in on Saturday, and the lettuce in the cold frame can be picked "
    "from the outside leaves. Check the slug traps by the back fence and empty them into the compost.",
    "To reset the router, hold the small button on the back for ten seconds until the light turns "
    "orange, then wait two minutes for it to restart. Connect to the network named HOME-5G with "
    "the password printed on the sticker underneath. Open a browser at 192.168.1.1, sign in with "
    "the admin password from the blue folder, and turn the guest network back on under Wireless, "
    "Guest Access. Finally, restart the printer so that it finds the network again.",
    "The library books are due back on the 3rd: the atlas of old railways, the two novels by the "
    "same author with the green covers, and the cookbook about fermentation. The museum tickets for "
    "Sunday are in the kitchen drawer, printed, and the exhibition opens at eleven. Granddad is "
    "picked up from the station at 4:15 by whoever has the car; he will have one suitcase and the "
    "box of apples from his garden, so leave the back seat empty.",
    "Flight 712 to Lisbon leaves at 07:40 from terminal 2; check-in closes forty minutes before. "
    "The hotel is on Rua das Flores, number 28, and the booking reference is KX4-99P. The conference "
    "badge can be collected from the registration desk on the ground floor from eight on Monday. "
    "The talk is on Wednesday at 14:00 in hall C, twenty minutes plus ten for questions, and the "
    "slides must be uploaded by Tuesday evening to the shared folder.",
    "Dear neighbours, the building's water will be off on Friday from 9 until about 15 while the "
    "pipes in the basement are replaced. Please fill a few bottles the evening before and do not use "
    "the washing machines that morning. The bicycle room will be closed too, so take your bikes "
    "out on Thursday if you need them. The workers will use the side entrance. Thank you for your "
    "patience; questions go to the caretaker in flat 1.",
    "Recipe for the lemon cake: beat 200 g of soft butter with 200 g of sugar until pale, add four "
    "eggs one at a time, then fold in 200 g of self-raising flour and the grated zest of two lemons. "
    "Bake in a lined tin at 180 degrees for about 45 minutes, until a skewer comes out clean. While "
    "it is still warm, pour over the juice of the lemons mixed with 100 g of icing sugar, and let it "
    "cool in the tin before slicing.",
)

CODE = """import csv
import statistics
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Reading:
    station: str
    temperature: float
    rainfall: float


def load_readings(path: Path) -> list[Reading]:
    readings = []
    with path.open(newline="") as handle:
        for row in csv.DictReader(handle):
            readings.append(
                Reading(
                    station=row["station"],
                    temperature=float(row["temperature"]),
                    rainfall=float(row["rainfall"]),
                )
            )
    return readings


def summarize(readings: list[Reading]) -> dict[str, float]:
    temperatures = [r.temperature for r in readings]
    rainfall = [r.rainfall for r in readings]
    return {
        "mean_temperature": statistics.mean(temperatures),
        "max_temperature": max(temperatures),
        "total_rainfall": sum(rainfall),
    }


def main() -> None:
    readings = load_readings(Path("weather.csv"))
    print(summarize(readings))
"""

#: one change each: what the user asks for in the rewrite
CODE_CHANGES = (
    "rename the function `summarize` to `summarise`",
    "rename the field `rainfall` to `precipitation` everywhere",
    "make `main` read the file name `readings.csv` instead of `weather.csv`",
    "add a `min_temperature` entry to the summary",
    "rename the class `Reading` to `Measurement`",
    "change `load_readings` to skip rows whose temperature is empty",
    "rename the variable `handle` to `stream`",
)

QUESTIONS = (
    "Write a short story about a lighthouse keeper who finds a message in a bottle.",
    "Explain how a refrigerator keeps food cold, for a curious ten-year-old.",
    "Give me ten ideas for a rainy Sunday afternoon with two children.",
    "What are the main differences between a violin and a viola? Answer in a few paragraphs.",
    "Describe a walk through a busy market in the morning, using all five senses.",
    "Write a polite letter to a landlord asking for a broken heater to be repaired.",
)

_TOOL_PREFILL = '<tool_call>\n{"name": "save_note", "arguments": {"text": "'


def _render(model: Any, user: str) -> str:
    from app.engine.messages import Message
    from app.engine.render import render_prompt

    return str(render_prompt(model, [Message(role="user", content=user)]).text)


def tool_copy(model: Any, k: int = 0) -> str:
    """A reply that is a tool call repeating note ``k`` of :data:`NOTES` from the prompt."""
    note = NOTES[k % len(NOTES)]
    user = (
        "You can call one tool, save_note(text: string), which stores a note. Call it in the form "
        '<tool_call>{"name": "save_note", "arguments": {"text": ...}}</tool_call> to save the '
        f"following note, word for word, exactly as written:\n\n{note}"
    )
    return _render(model, user) + _TOOL_PREFILL


def code_rewrite(model: Any, k: int = 0) -> str:
    """A reply that writes the 40-line :data:`CODE` again with change ``k`` of :data:`CODE_CHANGES`."""
    change = CODE_CHANGES[k % len(CODE_CHANGES)]
    user = (
        f"Here is a Python file:\n\n```python\n{CODE}```\n\nRewrite the whole file with one change: "
        f"{change}. Output the complete file and nothing else."
    )
    return _render(model, user) + "```python\n"


def free(model: Any, k: int = -1) -> str:
    """A reply that copies nothing from the prompt: the garden guide (``k`` -1) or question ``k``."""
    from bench.generation import PROMPT

    return _render(model, PROMPT if k < 0 else QUESTIONS[k % len(QUESTIONS)])


def mixed_prompts(model: Any, n: int = 20) -> list[str]:
    """``n`` prompts, copying and not: the notes, the code changes and the questions, in turn."""
    kinds = (
        [lambda k=k: tool_copy(model, k) for k in range(len(NOTES))],
        [lambda k=k: code_rewrite(model, k) for k in range(len(CODE_CHANGES))],
        [lambda k=k: free(model, k) for k in range(len(QUESTIONS))],
    )
    # round robin over the three kinds, so a short list still has each
    order = [kind[i] for i in range(max(map(len, kinds))) for kind in kinds if i < len(kind)]
    return [order[i % len(order)]() for i in range(n)]
