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

from app.engine.formats.base import JsonStateScanner, RegionScanner, register
from app.engine.formats.json_list import JsonListFormat, parse_json_list

__all__ = ["CommandRPlusFormat"]

OPEN = "Action:"
CHATBOT = "<|CHATBOT_TOKEN|>"
FENCE = "```"


class _FencedListScanner(JsonStateScanner):
    """After ``Action:``: ``[ws] [```lang] [json list] [```]``; the region ends after the list (and
    its fence), or at the first character that cannot continue that shape."""

    def __init__(self) -> None:
        super().__init__()
        self.fenced = False

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i, n = 0, len(buf)
        while i < n:
            st = self.state
            self.ops += 1
            if st == "json":
                j = self.feed_json(self.json, buf, i)
                if j == -1:
                    return n, False
                i = j
                if not self.fenced:
                    return i, True
                self.state = "post"
                continue
            c = buf[i]
            skip = self.fence_skip(buf, i)
            if skip is not None:
                i = skip
                continue
            rest = buf[i : i + len(FENCE)]
            if rest == FENCE and (st == "post" or not self.fenced):
                i += len(FENCE)
                if st == "post":
                    return i, True
                self.fenced = True
                self.state = "lang"
                continue
            if len(rest) < len(FENCE) and FENCE.startswith(rest) and (st == "post" or not self.fenced):
                return (n, False) if final else (i, False)  # a fence may be starting (or was cut)
            if st == "pre" and c == "[":
                self.state = "json"
                continue
            return i, True  # not an action list: the region ends (and reads as text)
        return n, False


def _partial_suffix(text: str, marker: str) -> int:
    """The length of the beginning of ``marker`` that ends ``text`` (0 if none)."""
    for k in range(min(len(marker) - 1, len(text)), 0, -1):
        if text.endswith(marker[:k]):
            return k
    return 0


def _unfence(body: str, *, at_end: bool, truncated: bool) -> tuple[str, bool] | None:
    """The list inside ``body`` (``[ws] [```lang] list [```]``) and whether the reply was cut
    inside it; None when a fence is left open before the reply went on (accepted at its end)."""
    text = body.strip()
    if not text.startswith(FENCE):
        return text, at_end and truncated
    text = text[len(FENCE) :]
    i = 0
    while i < len(text) and text[i].isalpha():
        i += 1
    text = text[i:].rstrip()
    if text.endswith(FENCE):
        return text[: -len(FENCE)], False
    if not at_end:
        return None
    if truncated:
        return text[: len(text) - _partial_suffix(text, FENCE)], True
    return text, False


class CommandRPlusFormat(JsonListFormat):
    """The action list after ``Action:``, fenced or bare, with no closing tag."""

    frame = (f"{OPEN}\n{FENCE}json\n", f"\n{FENCE}")
    layout = ("[\n    ", "\n]")
    name_key, args_key = "tool_name", "parameters"
    cut_rest = False  # the cut rest of a list stays text

    def list_scanner(self) -> RegionScanner:
        return _FencedListScanner()

    def read_list(self, body, *, at_end, truncated):
        got = _unfence(body, at_end=at_end, truncated=truncated)
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
