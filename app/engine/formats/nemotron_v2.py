"""NVIDIA Nemotron Nano v2 calls: ``<TOOLCALL>[{"name": NAME, "arguments": {...}}, ...]</TOOLCALL>``.

Any number of calls in one list, after an optional ``<think>...</think>`` block (the template's
generation prompt opens ``<think>``, so a reply usually starts inside it). ``arguments`` written
as a JSON string holding an object is read as that object. Each element must have exactly the
keys ``name`` and ``arguments``; anything else makes the region text.

One deviation is read: a single call object without the list,
``<TOOLCALL>{"name": NAME, "arguments": {...}}</TOOLCALL>`` (vLLM's ``nemotron_json`` parser
reads it by wrapping it in a list), strictly as one element of the list: exactly ``name`` and
``arguments``, nothing but whitespace around it before ``</TOOLCALL>``. Its closing tag is
implied, as the list's is, when the reply ended normally right after the object; a reply cut
inside the object is an incomplete call.
"""

from __future__ import annotations

from app.engine.formats.base import THINK, ParsedCall, RegionScanner, register
from app.engine.formats.json_list import JsonListFormat
from app.engine.formats.jsonscan import JsonScanner, loads_repaired
from app.engine.formats.sections import JsonTagScanner, skip_ws

__all__ = ["NEMOTRON_V2", "NemotronV2Format"]

OPEN = "<TOOLCALL>"
CLOSE = "</TOOLCALL>"


class NemotronV2Format(JsonListFormat):
    """Nemotron's list of calls, or one call object, between ``<TOOLCALL>`` tags."""

    def list_scanner(self) -> RegionScanner:
        # JSON-aware for an object too, so a closing tag inside one of its strings does not end it.
        return JsonTagScanner(self.close, opening="[", fences=False, also="{")

    def read_list(self, body: str, *, at_end: bool, truncated: bool) -> tuple[list[ParsedCall], str] | None:
        start = skip_ws(body, 0)
        if start < len(body) and body[start] == "{":
            return self._read_object(body, start, at_end=at_end, truncated=truncated)
        return super().read_list(body, at_end=at_end, truncated=truncated)

    def _read_object(
        self, body: str, start: int, *, at_end: bool, truncated: bool
    ) -> tuple[list[ParsedCall], str] | None:
        """One call object from ``body[start]``, closed as the list is (see ``parse_json_list``)."""
        end = JsonScanner().feed(body, start)
        if end == -1:
            return None  # not closed: text, or (cut) an incomplete call
        rest = body[end:]
        closed = rest.strip() == self.close
        implied = at_end and not truncated and not rest.strip()
        cut_in_tag = at_end and self.close.startswith(rest.lstrip())
        if not (closed or implied or cut_in_tag):
            return None
        ok, obj = loads_repaired(body[start:end])
        got = self.read_element(obj) if ok else None
        if got is None:
            return None
        name, args, cid = got
        return [ParsedCall(name, args, body[start:end], id=cid)], ""


NEMOTRON_V2 = register(
    NemotronV2Format(
        "nemotron-v2",
        "Nemotron v2 JSON list (NVIDIA Nemotron Nano v2, Llama 3.3 Nemotron Super 49B v1.5)",
        (OPEN,),
        close=CLOSE,
        reasoning=THINK,
        args_required=True,
    )
)
