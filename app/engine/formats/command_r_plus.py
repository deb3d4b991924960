"""Command R+ actions (Cohere Command R+ and Command R, tool-use template).

``Action: ```json\\n[{"tool_name": NAME, "parameters": {...}}, ...]\\n``` ``: the word
``Action:`` then a JSON list of actions, in a markdown fence or bare; the fence, once opened,
must close (unless the reply ended normally right after the list). Text before the action is
content. The template writes the call turn after ``<|CHATBOT_TOKEN|>``; that marker, written by
the model, is structure. The list must hold only such objects (``parameters`` may be a JSON
string holding an object); the ``directly-answer`` pseudo-tool comes back as a call of that name
like any other (the dispatcher answers that no such tool exists).
"""

from __future__ import annotations

from typing import Any

from app.engine.formats.base import Format, ParsedCall, RegionScanner, register
from app.engine.formats.command_r import (
    JsonListScanner,
    MarkerRegion,
    partial_suffix,
    read_action_items,
    tool_name_hint,
)
from app.engine.formats.sections import json_text

__all__ = ["CommandRPlusFormat"]

OPEN = "Action:"
CHATBOT = "<|CHATBOT_TOKEN|>"
FENCE = "```"


def _unfence(body: str, *, at_end: bool, truncated: bool) -> tuple[str, bool] | None:
    """The list inside ``body`` (``[ws] [```lang] list [```]``) and whether the reply was cut
    inside it; None when a fence is left open before the reply went on (accepted at its end)."""
    text = body.strip()
    if not text.startswith(FENCE):
        return text, at_end and truncated
    text = text[len(FENCE):]
    i = 0
    while i < len(text) and text[i].isalpha():
        i += 1
    text = text[i:].rstrip()
    if text.endswith(FENCE):
        return text[: -len(FENCE)], False
    if not at_end:
        return None
    if truncated:
        return text[: len(text) - partial_suffix(text, FENCE)], True
    return text, False


class CommandRPlusFormat(Format):
    name = "command-r-plus"
    label = "Command R+ actions (Cohere Command R+, Command R)"
    detail = 'Action: ```json [{"tool_name": ..., "parameters": {...}}] ```'
    openers = (OPEN, CHATBOT)
    start_only = False
    reasoning = None

    def region_scanner(self, opener: str) -> RegionScanner:
        return JsonListScanner(None, fence=True) if opener == OPEN else MarkerRegion()

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if opener == CHATBOT:
            return [], ""  # the turn's marker: structure
        got = _unfence(body, at_end=at_end, truncated=truncated)
        if got is None:
            return None
        inner, cut = got
        read = read_action_items(inner, name_key="tool_name", args_key="parameters", cut=cut)
        if read is None:
            return None
        calls, rest = read
        return [ParsedCall(name, args, raw) for name, args, raw in calls], inner[rest:] if cut else ""

    def call_name(self, raw: str) -> str | None:
        return tool_name_hint(raw)

    def cut_call(self, opener, body, tools):
        return None if opener != OPEN else super().cut_call(opener, body, tools)

    def constraint_grammar(self, tools, *, forced, parallel, ctx):
        from app.engine.constraints.wires import json_array, json_call

        return json_array(ctx, self, tools, forced, parallel, open=f"{OPEN}\n{FENCE}json\n",
                          close=f"\n{FENCE}", opener=OPEN,
                          item=lambda t: json_call(t, name_key="tool_name", args_key="parameters"))

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        item = json_text({"tool_name": name, "parameters": dict(arguments)})
        return f"{OPEN}\n{FENCE}json\n[\n    {item}\n]\n{FENCE}"


register(CommandRPlusFormat())
