"""StepFun Step-Audio 2 calls (Step-Audio 2 mini, Step-Audio 2 mini Think), as its text output.

``<tool_call>function\\nNAME\\n{JSON arguments}</tool_call>``: Hermes' tags around a body of three
lines, the call's type (always ``function``), the tool's name and the arguments as one JSON
object, the way StepFun's chat template writes a past call and its vLLM/SGLang servers read it.
Any number per reply (the template writes them back to back), after text and an optional
``<think>...</think>`` block (Step-Audio 2 mini Think).

Read: the body exactly so, except that whitespace may stand around the JSON object (the servers
load that line with ``json.loads``, which allows it) and a trailing comma in it is repaired. A
``</tool_call>`` inside a JSON string does not end the call. A tool that was not declared is read
(the dispatcher refuses it and says so), where the servers drop the call silently.

Text, byte for byte: a region whose body does not open with exactly ``function\\n`` (Hermes'
``<tool_call>\\n{"name": ...}``, GLM's ``<tool_call>NAME<arg_key>``, Qwen's ``<function=...>``
are other families' calls, never this one's), whose name line is not a tool name, whose arguments
are not one JSON object (a list, a JSON string, nothing) or are followed by anything but
whitespace before ``</tool_call>``; a region not closed by ``</tool_call>`` in a reply that ended
normally (the servers drop such a call too). A malformed region ends at its ``</tool_call>`` or
before the next ``<tool_call>``, so a call after it is still read. A reply cut by the token limit
inside a call is an incomplete call, never run.

No published Jinja template was found (StepFun's servers build the prompt in code, ``<|BOT|>ROLE\\n
...<|EOT|>`` turns, the tools in a ``tool_json_schemas`` turn): a template is known as this
family's by its rendered call; otherwise the family is chosen in Settings / ``--tool-format``.
"""

from __future__ import annotations

import re
from functools import partial
from typing import Any

from app.calls import WIRE_NAME
from app.engine.formats.base import THINK, Format, ParsedCall, RegionScanner, find_marker, register
from app.engine.formats.jsonscan import loads_repaired
from app.engine.formats.sections import JsonTagScanner, json_text

__all__ = ["STEP_AUDIO2", "StepAudio2Format", "StepAudio2Scanner"]

OPEN = "<tool_call>"
CLOSE = "</tool_call>"
KIND = "function\n"  # the call's type line: what tells this body from Hermes' and GLM's

# The whole body before the closing tag: the type line, the name line, one JSON object.
_BODY = re.compile(re.escape(KIND) + r"(" + WIRE_NAME + r")\n\s*(\{.*\})\s*", re.S)
_CUT_NAME = re.compile(re.escape(OPEN + KIND) + r"(" + WIRE_NAME + r")\n")
# Characters that end a name line early (the region is then text): markup, JSON, whitespace.
_NOT_NAME = frozenset("<>{}[]\"'`")


class StepAudio2Scanner(JsonTagScanner):
    """``function\\n NAME \\n [ws] {json} [ws] </tool_call>``, JSON-aware; on anything else the
    region runs to the next ``</tool_call>`` (included) or stops right before the next
    ``<tool_call>`` (that region is text; the opener after it starts a region of its own)."""

    def __init__(self) -> None:
        super().__init__(CLOSE, fences=False)
        self.state = "kind"
        self.k = 0  # characters of KIND read so far
        self.named = False  # a character of the name was read

    def step(self, buf: str, i: int, final: bool) -> int | tuple[int, bool]:
        st = self.state
        if st == "kind":
            self.ops += 1
            if buf[i] != KIND[self.k]:
                self.state = "seek"
                return i
            self.k += 1
            if self.k == len(KIND):
                self.state = "name"
            return i + 1
        if st == "name":
            self.ops += 1
            c = buf[i]
            if c == "\n" and self.named:
                self.state = "pre"  # JsonTagScanner's: whitespace, then the object
                return i + 1
            if c.isspace() or c in _NOT_NAME:
                self.state = "seek"
                return i
            self.named = True
            return i + 1
        if st == "seek":
            pos, m, safe = find_marker(buf, (CLOSE, OPEN), final, start=i)
            self.ops += (pos + len(m) - i) if pos != -1 else len(buf) - i
            if pos == -1:
                return safe, False
            return (pos + len(CLOSE), True) if m == CLOSE else (pos, True)
        return super().step(buf, i, final)


class StepAudio2Format(Format):
    """Step-Audio 2's ``<tool_call>function\\nNAME\\n{args}</tool_call>`` calls."""

    name = "step-audio2"
    label = "Step-Audio 2 function JSON (StepFun Step-Audio 2, Step-Audio-2-mini, mini Think)"
    openers = (OPEN,)
    reasoning = THINK

    def region_scanner(self, opener: str) -> RegionScanner:
        return StepAudio2Scanner()

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        if (at_end and truncated) or not body.endswith(CLOSE):
            return None  # cut by the token limit, or not closed: no call
        m = _BODY.fullmatch(body, 0, len(body) - len(CLOSE))
        if m is None:
            return None
        ok, args = loads_repaired(m.group(2))
        if not ok or not isinstance(args, dict):
            return None
        return [ParsedCall(m.group(1), args, opener + body)], ""

    def call_name(self, raw: str) -> str | None:
        m = _CUT_NAME.match(raw)
        return m.group(1) if m else None

    def head(self, name: str) -> str:
        """What a call is written with before its arguments."""
        return f"{OPEN}{KIND}{name}\n"

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import json_section

        # No section around the calls: each call is its own tagged block, back to back.
        return partial(json_section, section=None, head=self.head, tail=CLOSE, opener=OPEN)

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return f"{self.head(name)}{json_text(dict(arguments))}{CLOSE}"


STEP_AUDIO2 = register(StepAudio2Format())
