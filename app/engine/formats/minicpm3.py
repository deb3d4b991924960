"""OpenBMB MiniCPM3 calls: Python calls in a fence between ``<|tool_call_start|>`` and ``<|tool_call_end|>``.

MiniCPM3-4B's own template (its ``tokenizer_config.json``; vLLM publishes it as
``tool_chat_template_minicpm3.jinja``, Gorilla's BFCL quotes it) teaches the model to answer::

    <|thought_start|>
    why a call, or none, and the plan
    <|thought_end|>
    <|tool_call_start|>
    ```python
    get_weather(city="Paris")
    search(query="x", limit=3)
    ```
    <|tool_call_end|>
    the answer, or a question for the user

Read: reasoning in ``<|thought_start|>...<|thought_end|>``; in the call region, a code fence
(```` ```python ```` or ```` ``` ````, left out as OpenBMB's and vLLM's readers allow) around Python
calls with keyword arguments, one per line, read by the pythonic families' literal-only reader
(:mod:`app.engine.formats.pycalls`, never evaluated): values as the template writes past calls
(JSON: ``"Paris"``, ``true``, ``null``) or as Python literals (``'Paris'``, ``True``, ``None``,
as OpenBMB's function-call code writes them). A closing token inside a string does not end the
region. The text after the region is the answer. The closing token is implied when the reply
ended normally right after the fence (or the last call); a region the token limit cut is an
incomplete call; anything else in the region (a positional argument, an assignment, two calls on
one line, a fence left open) makes it text.

LFM2 (a Python list) and openPangu (a JSON list) write between the same two tokens: the region's
body tells the three apart, and each family reads only its own.
"""

from __future__ import annotations

from typing import Any

from app.engine.formats.base import register
from app.engine.formats.olmo3 import Olmo3Format
from app.engine.formats.pycalls import call_list_grammar, call_text

__all__ = ["MINICPM3", "MiniCpm3Format"]

OPEN = "<|tool_call_start|>"
CLOSE = "<|tool_call_end|>"
THOUGHT = ("<|thought_start|>", "<|thought_end|>")
FENCE = "```"
LANGUAGE = "python"


def _unfenced(inner: str) -> str | None:
    """The calls' source inside the region: the fence's lines taken away where it has one (its
    opening line exactly ```` ``` ```` or ```` ```python ````, its closing ```` ``` ```` last);
    None where a fence opens and is not closed so."""
    src = inner.strip()
    if not src.startswith(FENCE):
        return src
    head, _, rest = src.partition("\n")
    if head[len(FENCE) :].strip() not in ("", LANGUAGE) or not rest.rstrip().endswith(FENCE):
        return None
    return rest.rstrip()[: -len(FENCE)]


class MiniCpm3Format(Olmo3Format):
    """Python calls, one per line, in a fence inside one ``<|tool_call_start|>`` region."""

    close = CLOSE
    last = (FENCE, ")")  # the closing token implied after the fence, or after the last call

    def calls_source(self, inner: str) -> str | None:
        return _unfenced(inner)

    def grammar_wire(self, ctx):
        fence = f"{FENCE}{LANGUAGE}\n"
        return call_list_grammar(opener=OPEN, section=(f"{OPEN}\n{fence}", f"\n{FENCE}\n{CLOSE}"), sep="\n")

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return f"{OPEN}\n{FENCE}{LANGUAGE}\n{call_text(name, arguments)}\n{FENCE}\n{CLOSE}"


MINICPM3 = register(
    MiniCpm3Format(
        "minicpm3",
        "MiniCPM3 Python calls in a fence (OpenBMB MiniCPM3-4B)",
        (OPEN,),
        reasoning=THOUGHT,
    )
)
