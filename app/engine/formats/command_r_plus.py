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

from app.engine.formats.base import RegionScanner, register
from app.engine.formats.json_list import JsonListFormat, parse_json_list
from app.engine.formats.open_json import FENCE, MarkedFenceScanner, unfence

__all__ = ["CommandRPlusFormat"]

OPEN = "Action:"
CHATBOT = "<|CHATBOT_TOKEN|>"


class CommandRPlusFormat(JsonListFormat):
    """The action list after ``Action:``, fenced or bare, with no closing tag."""

    frame = (f"{OPEN}\n{FENCE}json\n", f"\n{FENCE}")
    layout = ("[\n    ", "\n]")
    name_key, args_key = "tool_name", "parameters"
    cut_rest = False  # the cut rest of a list stays text

    def list_scanner(self) -> RegionScanner:
        return MarkedFenceScanner("[")

    def read_list(self, body, *, at_end, truncated):
        got = unfence(body, at_end=at_end, truncated=truncated)
        if got is None:
            return None
        inner, cut = got
        return parse_json_list(inner, "", at_end=at_end, truncated=cut, read_element=self.read_element)


register(
    CommandRPlusFormat(
        "command-r-plus",
        "Command R+ actions (Cohere Command R+, Command R)",
        (OPEN, CHATBOT),  # CHATBOT: the turn's marker, structure
    )
)
