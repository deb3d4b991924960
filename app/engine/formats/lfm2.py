"""LFM2 pythonic calls in markers (Liquid LFM2.5-8B-A1B).

``<|tool_call_start|>[get_weather(city='Paris', days=3)]<|tool_call_end|>`` anywhere in the
reply, after an optional ``<think>...</think>`` block. Inside the markers stands a Python list of
calls with keyword arguments, read by the pythonic family's literal-only reader
(:func:`app.engine.formats.pycalls.parse_call_list`, never evaluated): strings as Python
literals, objects as JSON or Python dicts, ``True``/``False``/``None``. A marker inside a string
does not end the call. A missing ``<|tool_call_end|>`` is accepted only when the reply ended
normally right after the list; a reply cut inside the list keeps the calls written completely.

What LFM2 writes besides its format, read strictly (``lenient`` Python notation, as its agent
traces show it: vLLM #48171, SGLang #34237):

* a NUL character inside a string argument: the call is read, the character kept (``\\u0000`` in
  the arguments' JSON); a NUL anywhere else makes the list text, as any other stray character;
* a raw newline or carriage return inside a one-line string (a heredoc in a shell command): kept
  as written;
* an argument named by a Python keyword (``memory_get(from=1)``);
* a set (its items as written, each once: JSON has no set) and an f-string without a
  placeholder (its text);
* an integer written with leading zeros (``zip=02139``, ``days=007``: tabbyAPI #464), which
  Python refuses: typed by the tool's schema, a string property keeps the text as written, a
  number that may not be a string is the integer (``app.json_schema.PaddedInt``);
* an echo of the call body right after ``<|tool_call_end|>``: the very text between the markers
  (stripped), after optional whitespace, written again. It is structure, never content; text
  that only starts like it is content as written (a reply cut inside the echo drops the cut
  echo with it).
"""

from __future__ import annotations

from typing import Any

from app.engine.formats.base import THINK, Format, ParsedCall, RegionScanner, register
from app.engine.formats.pycalls import (
    PyListScanner,
    call_list_grammar,
    call_list_text,
    first_call_name,
    parse_call_list,
    parse_cut_list,
)
from app.engine.holdback import partial_start

__all__ = ["Lfm2Format"]

OPEN = "<|tool_call_start|>"
CLOSE = "<|tool_call_end|>"


class _Scanner(RegionScanner):
    """The list up to ``<|tool_call_end|>`` (:class:`PyListScanner`), then the echo of its body
    when one follows: whitespace, then as much of the body's text (stripped) as matches it. The
    region ends after a whole echo or at the first character that departs from it (the matched
    part stays in the region: its parser gives it back as text)."""

    def __init__(self) -> None:
        self.list = PyListScanner(CLOSE)
        self.seen: list[str] = []
        self.echo: str | None = None  # the body to match, once the list closed
        self.matched = 0
        self.ops = 0

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i = 0
        if self.echo is None:
            before = self.list.ops
            i, ended = self.list.scan(buf, final)
            self.ops += self.list.ops - before
            self.seen.append(buf[:i])
            if not ended:
                return i, False
            body = "".join(self.seen)
            self.seen = []
            echo = body[: -len(CLOSE)].strip() if body.endswith(CLOSE) else ""
            if not echo:
                return i, True
            self.echo = echo
        echo, n = self.echo, len(buf)
        if self.matched == 0:
            i = self.skip_space(buf, i)
        while i < n and self.matched < len(echo):
            self.ops += 1
            if buf[i] != echo[self.matched]:
                return i, True
            i += 1
            self.matched += 1
        # The reply ended: a whole echo or text; cut by the token limit: the echo may have gone on.
        return i, self.matched == len(echo) or (final and not self.cut)


def _list_end(body: str) -> int:
    """Where the list's ``<|tool_call_end|>`` ends in ``body`` (0 if it has none)."""
    sc = PyListScanner(CLOSE)
    end, ended = sc.scan(body, True)
    return end if ended and body[:end].endswith(CLOSE) else 0


class Lfm2Format(Format):
    """A Python call list between the markers, then the echo of its body (structure)."""

    def region_scanner(self, opener: str) -> RegionScanner:
        return _Scanner()

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        end = _list_end(body)
        leftover = ""
        if end:
            source, tail = body[: end - len(CLOSE)], body[end:]
            echo = source.strip()
            if tail.strip() != echo and not (at_end and truncated and echo.startswith(tail.lstrip())):
                leftover = tail  # not (all of) the echo: text as written
        elif at_end:
            if truncated:  # cut at max_tokens: the complete calls count, the cut rest is text
                cut = partial_start(body, (CLOSE,))  # a cut closing marker is structure
                got = parse_cut_list(body[:cut], lenient=True)
                if got is None:
                    return None
                calls, rest = got
                return [ParsedCall(n, a, raw) for n, a, raw in calls], body[rest:cut]
            source = body  # the reply ended right after the list: the closing marker is implied
        else:
            return None
        if not source.strip().startswith("[") or not source.rstrip().endswith("]"):
            return None
        listed = parse_call_list(source, lenient=True)
        if not listed:
            return None
        return [ParsedCall(n, a, raw) for n, a, raw in listed], leftover

    def call_name(self, raw: str) -> str | None:
        return first_call_name(raw)

    def grammar_wire(self, ctx):
        return call_list_grammar(opener=OPEN, section=(OPEN + "[", "]" + CLOSE))

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return OPEN + call_list_text(name, arguments) + CLOSE


register(Lfm2Format("lfm2", "LFM2 pythonic (Liquid LFM2.5)", (OPEN,), reasoning=THINK))
