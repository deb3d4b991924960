"""RWKV calls (RWKV-7 G1 and the RWKV chat models vLLM's ``rwkv`` reader serves)::

    **Tool Call:**
    ```json
    {"name": "get_weather", "arguments": {"city": "Paris"}}
    ```

The bold marker, then one call object (``name``, and ``arguments`` as an object or as a JSON
string holding one) in a markdown fence (``json`` or no language word); a fence, once opened,
must close, unless the reply ended normally right after the object. Any number of calls, each
after its own marker, anywhere in the reply; the text around them is content. The object right
after the marker with no fence reads the same. RWKV's templates (RWKV World's ``User:`` /
``Assistant:`` turns) render no tools, so the family is chosen in Settings / ``--tool-format``
and the tools reach the prompt as guidance in this syntax; reasoning is a ``<think>`` block.

Not read: a ``<tool_call>`` line (Hermes' wire: the ``hermes`` family) and a fenced call object
without the marker (any code block in an answer would be a candidate call).
"""

from __future__ import annotations

from functools import partial
from typing import Any

from app.engine.formats.base import THINK, Format, one_call, register
from app.engine.formats.jsonscan import loads_repaired, name_arguments
from app.engine.formats.open_json import FENCE, MarkedFenceScanner, unfence
from app.engine.formats.sections import json_text

__all__ = ["RwkvFormat"]

OPEN = "**Tool Call:**"


class RwkvFormat(Format):
    name = "rwkv"
    label = "RWKV tool call block (RWKV-7 G1)"
    openers = (OPEN,)
    reasoning = THINK

    def region_scanner(self, opener: str) -> MarkedFenceScanner:
        return MarkedFenceScanner("{")

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        got = unfence(body, at_end=at_end, truncated=truncated)
        if got is None or got[1] or not got[0].strip():
            return None  # a fence left open, or a call the token limit cut: not a call
        ok, obj = loads_repaired(got[0].strip())
        return one_call(opener, body, name_arguments(obj) if ok else None)

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import json_tagged

        return partial(json_tagged, open=OPEN, close=FENCE, lead=f"\n{FENCE}json\n", trail="\n", sep="\n\n")

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return f"{OPEN}\n{FENCE}json\n{json_text({'name': name, 'arguments': dict(arguments)})}\n{FENCE}"


register(RwkvFormat())
