"""Command R7B calls (Cohere Command R7B, Command A and the Cohere2 MoE models).

``<|START_ACTION|>[{"tool_call_id": "0", "tool_name": NAME, "parameters": {...}}, ...]<|END_ACTION|>``
after an optional ``<|START_THINKING|>...<|END_THINKING|>`` plan (the generation prompt of some
templates opens it); text for the user stands in ``<|START_RESPONSE|>...<|END_RESPONSE|>``,
whose markers are structure, not content. The action list must hold only such objects
(``parameters`` may be a JSON string holding an object); ``<|END_ACTION|>`` is required unless the
reply ended normally right after the list. An empty list is no call (text). The list is read by
the shared JSON-list reader (:mod:`app.engine.formats.json_list`): each call's raw is its element,
and a list cut by the token limit keeps its complete elements.
"""

from __future__ import annotations

from app.engine.formats.base import register
from app.engine.formats.json_list import JsonListFormat

__all__ = ["CommandRFormat"]

OPEN = "<|START_ACTION|>"
CLOSE = "<|END_ACTION|>"
RESPONSE_OPEN = "<|START_RESPONSE|>"
RESPONSE_CLOSE = "<|END_RESPONSE|>"
THINK = ("<|START_THINKING|>", "<|END_THINKING|>")


class CommandRFormat(JsonListFormat):
    name = "command-r"
    label = "Command R7B actions (Cohere Command R7B, Command A)"
    openers = (OPEN, RESPONSE_OPEN, RESPONSE_CLOSE)
    reasoning = THINK
    extra_keys = ("tool_call_id",)
    list_open, list_close = OPEN, CLOSE
    layout = ("[\n    ", "\n]")
    name_key, args_key = "tool_name", "parameters"
    cut_rest = False  # the cut rest of a list stays text

    def list_item(self, name, arguments):
        return {"tool_call_id": "0", "tool_name": name, "parameters": dict(arguments)}


register(CommandRFormat())
