"""GigaChat 3 / 3.1 calls: one JSON object ``{"name": NAME, "arguments": {...}}`` after a marker.

As the templates render a call:

* GigaChat 3.1: ``content<|function_call|>{"name": ..., "arguments": {...}}<|message_sep|>``;
* GigaChat 3: the assistant's message ends (``content<|message_sep|>``) and a message of the
  ``function call`` role follows: ``\\n\\nfunction call<|role_sep|>\\n{"name": ...}<|message_sep|>``.
  A runtime that drops the separator token leaves ``function call<|role_sep|>\\n{...}``.

One call per message (the templates render only the first). The object must have exactly the
keys ``name`` and ``arguments`` (a JSON string holding an object is read as that object) and
must be followed by the end of the message (``<|message_sep|>``, consumed with the call) or the
end of the reply; the call is the object alone. No reasoning block.

GigaChat 3 may also write the end-of-sequence token as the literal text ``</s>`` after the call
(right after the object or after its ``<|message_sep|>``, whitespace between): it is consumed with
the call, never content. A ``</s>`` anywhere else is text.
"""

from __future__ import annotations

import json
from functools import partial

from app.engine.formats.base import Format, JsonStateScanner, ParsedCall, RegionScanner, register
from app.engine.formats.jsonscan import loads_repaired, name_arguments

__all__ = ["GigaChatFormat"]

FUNCTION_CALL = "<|function_call|>"
MESSAGE_SEP = "<|message_sep|>"
ROLE = "function call<|role_sep|>"
SEP_ROLE = MESSAGE_SEP + "\n\n" + ROLE
EOS = "</s>"  # the end-of-sequence token, written as text


class _Scanner(JsonStateScanner):
    """``[ws] {json}``, then ``[ws] <|message_sep|>`` when the separator follows (the end of the
    message, consumed with the call); anything else ends the region right after the object."""

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i, n = 0, len(buf)
        if self.state == "post":
            return self._after_object(buf, 0, final)
        if self.state == "post_sep":
            return self._after_sep(buf, 0, final)
        while i < n:
            self.ops += 1
            if self.state == "pre":
                j = self.value_start(buf, i)
                if j is None:
                    return i, True
                i = j
                continue
            j = self.feed_json(self.json, buf, i)
            if j == -1:
                return n, False
            self.state = "post"
            return self._after_object(buf, j, final)
        return n, False

    def _after_object(self, buf: str, j: int, final: bool) -> tuple[int, bool]:
        """``buf[j:]`` follows the object: consume ``[ws] <|message_sep|>`` and ``[ws] </s>`` if
        they are there, else end the region at ``j`` (nothing after the object is consumed until
        that is known)."""
        i = self.skip_space(buf, j)
        if buf.startswith(MESSAGE_SEP, i):
            self.state = "post_sep"
            return self._after_sep(buf, i + len(MESSAGE_SEP), final)
        if buf.startswith(EOS, i):
            return i + len(EOS), True
        rest = buf[i:]
        if not final and (MESSAGE_SEP.startswith(rest) or EOS.startswith(rest)):
            return j, False
        return j, True

    def _after_sep(self, buf: str, j: int, final: bool) -> tuple[int, bool]:
        """``buf[j:]`` follows the message's separator: consume ``[ws] </s>`` if it is there."""
        i = self.skip_space(buf, j)
        if buf.startswith(EOS, i):
            return i + len(EOS), True
        if not final and EOS.startswith(buf[i:]):
            return j, False
        return j, True


class GigaChatFormat(Format):
    name = "gigachat"
    label = "GigaChat function call (GigaChat 3, 3.1)"
    openers = (FUNCTION_CALL, SEP_ROLE, ROLE)

    def region_scanner(self, opener: str) -> RegionScanner:
        return _Scanner()

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        text = body[: -len(EOS)].rstrip() if body.endswith(EOS) else body
        text = text[: -len(MESSAGE_SEP)] if text.endswith(MESSAGE_SEP) else text
        start = len(text) - len(text.lstrip())
        obj_text = text.strip()
        if not obj_text.startswith("{") or not obj_text.endswith("}"):
            return None
        ok, obj = loads_repaired(obj_text)
        if not ok:
            return None
        got = name_arguments(obj)
        if got is None or "arguments" not in obj:
            return None
        return [ParsedCall(got[0], got[1], opener + text[: start + len(obj_text)])], ""

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import json_tagged

        return partial(json_tagged, open=FUNCTION_CALL, close="", single=True)

    def example_call(self, name: str, arguments: dict) -> str:
        return FUNCTION_CALL + json.dumps({"name": name, "arguments": dict(arguments)}, ensure_ascii=False)


register(GigaChatFormat())
