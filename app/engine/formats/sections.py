"""Building blocks shared by several families' scanners and parsers.

* :func:`first_marker` finds the earliest marker without looking past it.
* :class:`SectionScanner` holds the steps the marker-delimited section scanners share (DeepSeek,
  Kimi: skip whitespace, expect one of some markers, read a value that may be a JSON
  object/array, read a tag's head, fall back to searching for the section's end), each counting
  the characters it examines in ``ops``; :func:`scan_section` scans a whole region with one and
  says what is left after its calls (DeepSeek DSML, Kimi K3).
* :class:`SkipValuesScanner` is the "skip values until the close" scanner of the XML-like
  families whose values are raw text (Qwen XML, GLM, Seed-OSS, MiniMax; MiniCPM5's CDATA
  sections): the region ends at its closing tag outside every value, so the closing tag written
  inside a value does not end the call.
* :class:`JsonTagScanner` (a JSON call between tags, Hermes and its kin), :class:`JsonCallSection`
  and :meth:`JsonSectionFormat.parse_region` (sections of JSON calls), :class:`JsonSectionFormat` (a family
  made of such sections: DeepSeek V3 / V3.1, Kimi K2) and :data:`NAME` (what a tool name may be
  on those wires) are shared by the JSON families.
* :func:`skip_ws`, :func:`after_ws_startswith`, :func:`closed_body` (a region's body without
  its closing tag, or with it implied) and :func:`read_run` (calls one after another) are the
  small text helpers their parsers share;
  :func:`json_text`, :func:`raw_text` and :func:`notation_text` write values for the families'
  example-call writers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

from app.engine.formats.base import (
    Format,
    IncompleteCall,
    JsonStateScanner,
    ParsedCall,
    RegionScanner,
    find_marker,
)
from app.engine.formats.jsonscan import LENIENT_DECODER, JsonScanner, loads_repaired
from app.engine.holdback import partial_start
from app.json_schema import tool_schemas

__all__ = [
    "NAME",
    "JsonCallSection",
    "JsonSectionFormat",
    "JsonTagScanner",
    "MarkerFinder",
    "SectionScanner",
    "SkipValuesScanner",
    "after_ws_startswith",
    "closed_body",
    "first_marker",
    "json_text",
    "notation_text",
    "raw_text",
    "read_run",
    "run_section",
    "scan_section",
    "skip_ws",
]

_FENCE = "```"


def first_marker(
    buf: str, markers: tuple[str, ...], start: int, final: bool, end: int | None = None
) -> tuple[int, str, int]:
    """Earliest of ``markers`` in ``buf[start:end]``, looking no further than the nearest one.

    Returns ``(pos, marker, pos)`` or ``(-1, "", safe)`` where ``buf[:safe]`` holds no part of a
    marker (a partial marker at the very end is held back unless ``final`` or ``end`` is given).
    The markers must not contain one another, so the earliest complete one is final.
    """
    n = len(buf) if end is None else end
    best, found = -1, ""
    for m in markers:
        p = buf.find(m, start, n if best == -1 else best + len(m) - 1)
        if p != -1 and (best == -1 or p < best):
            best, found = p, m
    if best != -1:
        return best, found, best
    if final or end is not None:
        return -1, "", n
    return -1, "", partial_start(buf, markers, start)


class MarkerFinder:
    """The earliest of several markers in ``text`` at or after a position, each marker's next
    place kept, so that a walk forward through ``text`` (every parameter of a call, every call of
    a run) looks at each character once per marker, however often it asks. A walk that asks
    :meth:`first` again and again from a moving position with plain ``text.find`` calls would
    search past a rare marker to the end of the text on every step: quadratic.

    ``scanned`` counts the characters searched (tests hold it to the text's length). Asking
    from an earlier position than before is allowed (the marker is searched for again there).
    """

    def __init__(self, text: str, markers: tuple[str, ...]) -> None:
        self.text = text
        # marker -> (searched from, found at or -1); a marker not in it was not searched for yet
        self._next: dict[str, tuple[int, int]] = {}
        self._markers = markers
        self.scanned = 0

    def find(self, marker: str, j: int) -> int:
        """``text.find(marker, j)``, from what was found before where it still holds."""
        got = self._next.get(marker)
        if got is not None and got[0] <= j and (got[1] == -1 or got[1] >= j):
            return got[1]
        p = self.text.find(marker, j)
        self.scanned += (len(self.text) if p == -1 else p + len(marker)) - j
        self._next[marker] = (j, p)
        return p

    def first(self, j: int) -> tuple[int, str] | None:
        """``(position, marker)`` of the earliest marker at or after ``j``, or None."""
        best: tuple[int, str] | None = None
        for m in self._markers:
            p = self.find(m, j)
            if p != -1 and (best is None or p < best[0]):
                best = (p, m)
        return best


class SectionScanner(RegionScanner):
    """State shared by the section scanners: ``state``, ``base`` (the absolute offset of the next
    ``buf[0]``), ``parts`` (a value or tag read across chunks), ``json``, ``bad`` and ``ops``.

    A subclass's ``scan`` is a state machine; the states ``"seek"`` (after a fault) and
    ``"done"`` are common to all. It records the complete calls it read in ``calls``, each a
    tuple whose last item is where the call ends in the region (:func:`scan_section` reads it).
    """

    calls: Sequence[tuple[Any, ...]]

    def __init__(self, state: str) -> None:
        self.state = state
        self.base = 0
        self.parts: list[str] = []
        self.json: JsonScanner | None = None
        self.bad = False
        self.ops = 0

    def _ret(self, consumed: int, ended: bool) -> tuple[int, bool]:
        self.base += consumed
        return consumed, ended

    def _fail(self) -> None:
        """Not the expected structure: drop what was gathered and search for the section's end."""
        self.parts = []
        self.bad = True
        self.state = "seek"

    def _skip_space(self, buf: str, i: int) -> int:
        n = len(buf)
        while i < n and buf[i].isspace():
            i += 1
            self.ops += 1
        return i

    def _expect(self, buf: str, i: int, wanted: tuple[str, ...], final: bool) -> tuple[int, str | None]:
        """Skip whitespace, then which of ``wanted`` starts at the cursor.

        Returns ``(i, marker)``; ``marker`` is ``None`` when more text is needed (``buf`` ran out,
        or it ends in what may be a marker's beginning: wait at ``i``) and ``""`` when something
        else stands there.
        """
        i = self._skip_space(buf, i)
        if i >= len(buf):
            return i, None
        self.ops += 1
        for m in wanted:
            if buf.startswith(m, i):
                return i, m
        rest = buf[i:]
        if not final and any(len(rest) < len(m) and m.startswith(rest) for m in wanted):
            return i, None
        return i, ""

    def _head(
        self, buf: str, i: int, end: str, bad: tuple[str, ...], final: bool
    ) -> tuple[int, str | None, bool]:
        """A tag's head: the text up to ``end``, gathered across chunks.

        Returns ``(cursor, head, wait)``: ``head`` once ``end`` is read (the cursor is after it);
        ``wait`` when ``buf`` is used up and ``scan`` must return ``cursor`` consumed. When one of
        ``bad`` comes first the scanner fails (``head`` None, the cursor at that marker).
        """
        pos, m, safe = first_marker(buf, (end, *bad), i, final)
        self.ops += (safe if pos == -1 else pos) - i + 1
        if pos == -1:
            stop = len(buf) if final else safe
            self.parts.append(buf[i:stop])
            return stop, None, True
        if m != end:
            self._fail()
            return pos, None, False
        head = "".join(self.parts) + buf[i:pos]
        self.parts = []
        return pos + len(end), head, False

    def _feed_json(self, buf: str, i: int) -> int:
        """Feed ``self.json`` from ``i``: the index after the value's end, or -1 while it is open."""
        assert self.json is not None  # a value is being read
        return self.feed_json(self.json, buf, i)

    def _value_start(self, buf: str, i: int) -> int:
        """State ``"value_json"``: leading whitespace, then a JSON object/array (state ``"json"``,
        scanned JSON-aware) or any other text (state ``"value"``). Returns the new cursor."""
        n = len(buf)
        j = self.skip_space(buf, i)
        self.parts.append(buf[i:j])
        if j < n:
            if buf[j] in "{[":
                self.json = JsonScanner()
                self.state = "json"
            else:
                self.state = "value"
        return j

    def _json_value(self, buf: str, i: int) -> int:
        """State ``"json"``: the new cursor once the JSON value has ended (state ``"value"``),
        or -1 when ``buf`` is used up."""
        j = self._feed_json(buf, i)
        if j == -1:
            self.parts.append(buf[i:])
            return -1
        self.parts.append(buf[i:j])
        self.state = "value"
        return j

    def _raw_value(self, buf: str, i: int, end: str, final: bool) -> tuple[int, str | None]:
        """State ``"value"``: text up to the marker ``end``.

        Returns ``(cursor after end, the whole value)``, or ``(consumed, None)`` when ``buf`` holds
        no ``end`` yet (what may be its beginning is left unconsumed unless ``final``).
        """
        pos, _m, safe = first_marker(buf, (end,), i, final)
        self.ops += (safe if pos == -1 else pos) - i + 1
        if pos == -1:
            stop = len(buf) if final else safe
            self.parts.append(buf[i:stop])
            return stop, None
        self.parts.append(buf[i:pos])
        value = "".join(self.parts)
        self.parts = []
        return pos + len(end), value

    VALUE_STATES = ("value_json", "json", "value")

    def _value_step(self, buf: str, i: int, end: str, final: bool) -> tuple[int, str | None, bool]:
        """One step in a ``VALUE_STATES`` state (a value closed by the marker ``end``).

        Returns ``(cursor, value, wait)``: ``value`` once it is complete (the cursor is after
        ``end``); ``wait`` when ``buf`` is used up and ``scan`` must return ``cursor`` consumed.
        """
        if self.state == "value_json":
            return self._value_start(buf, i), None, False
        if self.state == "json":
            j = self._json_value(buf, i)
            return (len(buf), None, True) if j == -1 else (j, None, False)
        i, value = self._raw_value(buf, i, end, final)
        return i, value, value is None

    def _seek(self, buf: str, i: int, end: str, final: bool) -> tuple[int, bool]:
        """State ``"seek"``: a plain search for ``end``; returns ``scan``'s result (through ``_ret``)."""
        pos, _m, safe = first_marker(buf, (end,), i, final)
        self.ops += (safe if pos == -1 else pos) - i + 1
        if pos != -1:
            self.state = "done"
            return self._ret(pos + len(end), True)
        return self._ret(len(buf) if final else safe, False)


def scan_section(
    sc: SectionScanner, body: str, *, at_end: bool, truncated: bool, implied_end: bool = False
) -> str | None:
    """Scan a whole region with ``sc``: the text left after its calls (``sc.calls``), or None when
    the region is not a section that can be trusted.

    A section that ended must end the region (nothing left). A reply cut inside it (``at_end`` and
    ``truncated``: scanned as if more could follow, so a half marker is no fault) keeps the
    complete calls before the cut, the cut remainder is left over. ``implied_end``: a section
    missing only its end marker is read when the reply ended normally between two calls.
    """
    cut = at_end and truncated
    consumed, ended = sc.scan(body, not cut)
    if sc.bad:
        return None
    last = sc.calls[-1][-1] if sc.calls else 0
    if ended:
        return "" if consumed == len(body) else None
    if cut:
        return body[last:] if sc.calls else None
    if implied_end and at_end and sc.state == "between":
        return body[last:]
    return None


def read_run(
    text: str, read: Callable[[str, int], tuple[ParsedCall, int] | None]
) -> tuple[list[ParsedCall], int, int]:
    """Calls read one after another by ``read`` (a call at ``text[i]`` and the index after it, or
    None) from the start of ``text``, whitespace between: the calls, where reading stopped
    (``len(text)``, or the first thing that is not a call) and where the last call ended (0 if
    none)."""
    calls: list[ParsedCall] = []
    i = skip_ws(text, 0)
    last = 0
    while i < len(text):
        got = read(text, i)
        if got is None:
            break
        call, last = got
        calls.append(call)
        i = skip_ws(text, last)
    return calls, i, last


def run_section(
    text: str, read: Callable[[str, int], tuple[ParsedCall, int] | None], *, close: str, closed: bool
) -> tuple[list[ParsedCall], str] | None:
    """A section of calls one after another (:func:`read_run`): ``text`` is its body without its
    closing tag ``close`` where it was ``closed``, else the body of a section the token limit cut.
    A closed section holds calls only; a cut one keeps its complete calls and gives the rest back
    as text (none where the cut fell inside the closing tag). None: not a section of calls."""
    calls, i, last = read_run(text, read)
    if not calls or (closed and i < len(text)):
        return None
    rest = "" if closed else text[last:]
    if close.startswith(rest.strip()):
        rest = ""  # cut in the section's closing tag: every call is complete
    return calls, rest


def skip_ws(s: str, i: int) -> int:
    """The index of the first non-whitespace character of ``s`` from ``i`` (``len(s)`` if none)."""
    while i < len(s) and s[i].isspace():
        i += 1
    return i


def closed_body(
    body: str, close: str, *, last: str | tuple[str, ...], at_end: bool, truncated: bool
) -> str | None:
    """A region's body without its closing tag ``close``; the whole body when the tag is missing
    but the reply ended normally right after ``last`` (the closing tag of the region's last
    element, or any of several: the region's is implied); None otherwise."""
    if body.endswith(close):
        return body[: -len(close)]
    if at_end and not truncated and body.rstrip().endswith(last):
        return body
    return None


def after_ws_startswith(s: str, i: int, prefixes: tuple[str, ...]) -> bool:
    """Whether ``s`` from ``i``, after whitespace, starts with one of ``prefixes``."""
    return s.startswith(prefixes, skip_ws(s, i))


class SkipValuesScanner(RegionScanner):
    """A region up to ``close``, skipping over ``value_open ... value_close`` contents.

    ``value_close`` ends a value only when what follows it (after whitespace) starts with one of
    ``followers`` (when given) or is the end of the text: a value may then hold ``value_close``
    literally. With ``followers``, a ``close`` inside an open value that is followed (after
    whitespace) by the end of the text or by one of ``reopen`` ends the region (a last value
    whose ``value_close`` is missing); so does ``exit[0]`` inside a value when ``exit[1]`` follows
    it (Qwen's ``</function></tool_call>`` after a parameter missing its close). Outside values,
    ``split[0]`` followed (after whitespace) by ``split[1]`` ends the region right after
    ``split[0]`` (the region's ``close`` left out before the next region's opener). The lookahead
    is bounded by the whitespace and the longest follower, so the work stays linear.
    """

    def __init__(
        self,
        close: str,
        value_open: str,
        value_close: str,
        *,
        followers: tuple[str, ...] | None = None,
        reopen: tuple[str, ...] = (),
        exit: tuple[str, str] | None = None,
        split: tuple[str, str] | None = None,
    ) -> None:
        self.close, self.value_open, self.value_close = close, value_open, value_close
        self.followers = followers
        self.reopen = reopen
        self.exit = exit
        self.split = split
        self.outside = (value_open, close) if split is None else (value_open, close, split[0])
        self.inside = False
        self.ops = 0

    def _follows(self, buf: str, j: int, wanted: tuple[str, ...], final: bool) -> bool | None:
        """Whether ``buf[j:]`` (after whitespace) is the end or starts with one of ``wanted``;
        None when more text is needed to tell."""
        k = self.skip_space(buf, j)
        if k >= len(buf):
            return None if not final else not self.cut
        if buf.startswith(wanted, k):
            return True
        # (only as much of the rest as the longest follower: a copy of the whole rest for every
        # value would make a region of many values quadratic)
        rest = buf[k : k + max(map(len, wanted), default=0)]
        if not final and any(len(rest) < len(w) and w.startswith(rest) for w in wanted):
            return None
        return False

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        return self.scan_from(buf, final, 0)

    def scan_from(self, buf: str, final: bool, start: int) -> tuple[int, bool]:
        """:meth:`scan` of ``buf`` from ``start`` (a caller that reads region after region of one
        text passes where it is, rather than a copy of the rest); the index it returns is in
        ``buf``."""
        i = start
        while True:
            if self.inside:
                markers: tuple[str, ...] = (
                    (self.value_close,) if self.followers is None else (self.value_close, self.close)
                )
                if self.exit is not None:
                    markers += (self.exit[0],)
            else:
                markers = self.outside
            pos, m, safe = find_marker(buf, markers, final, start=i)
            self.ops += (pos + len(m) - i) if pos != -1 else len(buf) - i
            if pos == -1:
                return safe, False
            j = pos + len(m)
            if not self.inside:
                if m == self.close:
                    return j, True
                if self.split is not None and m == self.split[0]:
                    nxt = self.split[1]
                    k = self.skip_space(buf, j)
                    rest = buf[k : k + len(nxt)]
                    if rest == nxt:
                        return j, True  # the next region opens: this one's close was left out
                    if not final and len(rest) < len(nxt) and nxt.startswith(rest):
                        return pos, False  # wait here for the text that decides
                    i = j
                    continue
                self.inside = True
                i = j
                continue
            if self.followers is None:
                self.inside = False
                i = j
                continue
            if self.exit is not None and m == self.exit[0]:
                k = self.skip_space(buf, j)
                rest = buf[k : k + len(self.exit[1])]
                if rest == self.exit[1]:
                    return k + len(rest), True  # the value's close was missing: the region ends here
                if not final and len(rest) < len(self.exit[1]) and self.exit[1].startswith(rest):
                    return pos, False
                i = j
                continue
            wanted = self.followers if m == self.value_close else self.reopen
            got = self._follows(buf, j, wanted, final)
            if got is None:
                return pos, False  # wait here for the text that decides
            if m == self.close:
                if got:
                    return j, True  # a last value without its close: the region ends here
                i = j
                continue
            if got:
                self.inside = False
            i = j


def json_text(value: Any) -> str:
    """``value`` as JSON text, unicode kept (how the families' example calls write JSON)."""
    return json.dumps(value, ensure_ascii=False)


def raw_text(value: Any) -> str:
    """A value written as text on a raw wire (a string as it is, anything else as JSON)."""
    return value if isinstance(value, str) else json_text(value)


def notation_text(
    value: Any, *, scalar: Callable[[Any], str], key: Callable[[Any], str], kv: str, sep: str, notation: str
) -> str:
    """``value`` written in a value notation (Python literals, Gemma's): ``scalar`` writes a
    string, number, boolean or None and ``key`` an object's key; ``kv`` stands between a key and
    its value and ``sep`` between items, objects in braces, lists and tuples in brackets. Anything
    else raises ``TypeError`` (``notation`` says in what it cannot be written)."""

    def write(v: Any) -> str:
        if isinstance(v, dict):
            return "{" + sep.join(f"{key(k)}{kv}{write(x)}" for k, x in v.items()) + "}"
        if isinstance(v, (list, tuple)):
            return "[" + sep.join(write(x) for x in v) + "]"
        if v is None or isinstance(v, (str, int, float)):
            return scalar(v)
        raise TypeError(f"cannot write {type(v).__name__} {notation}")

    return write(value)


# A tool name: no whitespace, no markup or JSON punctuation.
NAME = r"[^\s<>{}\[\]\"'`｜|,:]+(?::[^\s<>{}\[\]\"'`｜|,:]+)*"


class JsonTagScanner(JsonStateScanner):
    """Region ``[ws][fence] {json} [ws][fence][ws] CLOSE``; on anything else, up to the next CLOSE.

    ``opening``: the bracket the JSON value opens with (``"["``: a list of calls); ``also``: other
    brackets it may open with (a family that reads an object or a list between its tags);
    ``fences``: whether a markdown fence may stand around the value (without, a fence is
    "anything else").
    """

    def __init__(self, close: str, *, opening: str = "{", fences: bool = True, also: str = ""):
        super().__init__()
        self.close = close
        self.opening = opening
        self.also = also
        self.fences = fences

    def step(self, buf: str, i: int, final: bool) -> int | tuple[int, bool]:
        st, close = self.state, self.close
        if st == "seek":  # a plain search for the closing marker
            pos, _m, safe = find_marker(buf, (close,), final, start=i)
            self.ops += (pos + len(close) - i) if pos != -1 else len(buf) - i
            return (pos + len(close), True) if pos != -1 else (safe, False)
        c = buf[i]  # pre, lang or post
        self.ops += 1
        j = self.fence_skip(buf, i)
        if j is not None:
            return j
        if self.fences and buf.startswith(_FENCE, i):
            self.state = "lang" if st == "pre" else "post"
            return i + len(_FENCE)
        if st == "post" and buf.startswith(close, i):
            return i + len(close), True
        rest = buf[i : i + len(close)]
        if (
            not final
            and len(rest) < len(close)
            and ((self.fences and _FENCE.startswith(rest)) or (st == "post" and close.startswith(rest)))
        ):
            return i, False
        self.state = "json" if st == "pre" and (c == self.opening or c in self.also) else "seek"
        return i


class JsonCallSection(SectionScanner):
    """``(ws CALL_BEGIN header {json} post CALL_END)* ws SECTION_END``.

    The header (up to the JSON's ``{``) and the text after the JSON are checked by the parser;
    the scanner only follows the structure, records each call's span and, on anything
    unexpected, falls back to a plain search for ``SECTION_END`` (``bad`` is then set).

    ``noise``: text between the section's markers that is none of them (Kimi K2 writes some) is
    skipped instead; it belongs to the raw text of the call after it (``raw_spans``, one per call);
    noise after the last call is the section's leftover text.

    ``args_end``: a marker that must close the JSON before ``CALL_END`` (PLaMo 3's
    ``<|plamo:end_tool_arguments:plamo|>``), whitespace around it; empty: none.
    """

    def __init__(
        self,
        call_begin: str,
        call_end: str,
        section_end: str,
        *,
        noise: bool = False,
        args_end: str = "",
        opened: bool = False,
    ):
        super().__init__("header" if opened else "between")  # opened: CALL_BEGIN was the opener
        self.cb, self.ce, self.se = call_begin, call_end, section_end
        self.noise = noise
        self.args_end = args_end
        self.args_closed = False  # the current call's args_end was read
        self.noise_from = -1  # where skipped noise before the next call began
        self.start = self.json_start = self.json_end = 0
        self.calls: list[tuple[int, int, int, int]] = []  # (start, json start, json end, end)
        self.raw_spans: list[tuple[int, int]] = []

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i, n = 0, len(buf)
        cb, ce, se = self.cb, self.ce, self.se
        while i < n:
            st = self.state
            if st == "between" or st == "post":
                i = self._skip_space(buf, i)
                if st == "post" and buf.startswith(_FENCE, i):
                    i += len(_FENCE)
                    self.ops += len(_FENCE)
                    continue
                # After the JSON: args_end first where the family has one, then CALL_END.
                close = self.args_end if self.args_end and not self.args_closed else ce
                i, hit = self._expect(buf, i, (cb, se) if st == "between" else (close, _FENCE), final)
                if hit is None:
                    return self._ret(i, False)
                if st == "post" and hit and hit == self.args_end and not self.args_closed:
                    i += len(hit)
                    self.args_closed = True
                elif hit == cb:
                    self.start = self.base + i
                    i += len(cb)
                    self.state = "header"
                elif hit == se:
                    self.state = "done"
                    return self._ret(i + len(se), True)
                elif hit == ce:
                    i += len(ce)
                    self.args_closed = False
                    self.calls.append((self.start, self.json_start, self.json_end, self.base + i))
                    first = self.noise_from if self.noise_from != -1 else self.start
                    self.raw_spans.append((first, self.base + i))
                    self.noise_from = -1
                    self.state = "between"
                elif st == "between" and self.noise:
                    self.state = "noise"
                else:
                    self._fail()
                continue
            if st == "noise":
                pos, _m, safe = first_marker(buf, (cb, se), i, final)
                self.ops += (safe if pos == -1 else pos) - i + 1
                if self.noise_from == -1:
                    self.noise_from = self.base + i
                if pos == -1:
                    return self._ret(safe, False)
                i = pos
                self.state = "between"
                continue
            if st == "header":
                j = buf.find("{", i)
                pos, _m, safe = first_marker(buf, (cb, ce, se), i, final, None if j == -1 else j)
                self.ops += (safe if pos == -1 else pos) - i + 1
                if pos != -1:
                    i = pos
                    self._fail()
                    continue
                if j == -1:
                    return self._ret(safe, False)
                i = j
                self.json_start = self.base + i
                self.json = JsonScanner()
                self.state = "json"
                continue
            if st == "json":
                j = self._feed_json(buf, i)
                if j == -1:
                    return self._ret(n, False)
                i = j
                self.json_end = self.base + i
                self.state = "post"
                continue
            return self._seek(buf, i, se, final)
        return self._ret(n, False)


class JsonSectionFormat(Format):
    """A family whose calls are a section of JSON calls (DeepSeek V3 / V3.1, Kimi K2)::

        SECTION_BEGIN (CALL_BEGIN header {json} CALL_END)* SECTION_END

    scanned by :class:`JsonCallSection` and read by :meth:`parse_region`. A family (an instance,
    see :class:`Format`) sets its markers, ``header`` (see :meth:`parse_region`, with the reading
    options ``fence_in_header``, ``implied_end`` and ``noise``) and how a call is written:
    ``head_frame`` (what stands before and after the name, up to the arguments: see
    :meth:`call_head`), ``call_index`` (a call counter after the head, as (before, after)) and
    ``call_tail``; the grammar and the example call follow from them. ``args_end``: a marker that
    closes the JSON before ``CALL_END`` (see :class:`JsonCallSection`; ``call_tail`` writes it).
    ``alt_sections``: other (begin, end) pairs a section is read between (an opener each too).
    ``name_of``: where the header names a call by an id (Kimi's ``functions.NAME:0``), the tool the
    call is to, from the header's name, the call's arguments (None for a call the token limit cut)
    and the offered tools (None: the header's name as written). ``unwrapped``: calls whose
    wrappers were left out are read too, all markers being special tokens: a section of
    ``header {json}`` calls without CALL_BEGIN and CALL_END, and calls without the section around
    them (CALL_BEGIN then opens one, its SECTION_END optional at the end of the reply).
    """

    section_begin: str
    section_end: str
    call_begin: str
    call_end: str
    header: re.Pattern[str]
    fence_in_header = True
    implied_end = False
    noise = False
    call_index: tuple[str, str] | None = None
    call_tail = ""
    head_frame = ("", "")
    args_end = ""
    alt_sections: tuple[tuple[str, str], ...] = ()
    name_of: Callable[[str, dict[str, Any] | None, list[dict[str, Any]] | None], str] | None = None
    unwrapped = False

    def _section_end(self, opener: str) -> str:
        """The end marker of a section opened by ``opener``."""
        return next((end for begin, end in self.alt_sections if begin == opener), self.section_end)

    def call_head(self, name: str) -> str:
        """What a call is written with before its arguments (and index)."""
        before, after = self.head_frame
        return f"{before}{name}{after}"

    def region_scanner(self, opener: str) -> JsonCallSection:
        return JsonCallSection(
            self.call_begin,
            self.call_end,
            self._section_end(opener),
            noise=self.noise,
            args_end=self.args_end,
            opened=opener == self.call_begin,
        )

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        """Strictly read a section of JSON calls scanned by :class:`JsonCallSection`.

        ``header`` must fully match the text between ``call_begin`` and the JSON; its first group is
        the tool name and a group named ``fence`` (optional) says a fence opened.
        ``implied_end``: a section missing only its end marker is read when the reply ended normally
        right after a complete call. A reply cut inside the section (``at_end`` and ``truncated``)
        keeps the complete calls before the cut; the cut remainder is returned for the stream to report
        as an incomplete call. ``noise``: text between the markers is skipped (part of a call's raw),
        and a closed section without calls is no call and no markup (its noise, if any, is text).
        """
        if opener == self.call_begin:  # a call without its section: read as the section's body
            got = self.parse_region("", opener + body, at_end=at_end, truncated=truncated, tools=tools)
            return got if got is not None and got[0] else None
        sc = self.region_scanner(opener)
        section_end = self._section_end(opener)
        # A cut reply is scanned as if more could follow, so a marker cut in half is not a fault.
        cut = at_end and truncated
        consumed, ended = sc.scan(body, not cut)
        if sc.bad:
            return None
        if not sc.calls:
            if self.noise and ended and consumed == len(body):
                inner = body[: -len(section_end)]
                if self.unwrapped and (calls := self._unwrapped_calls(inner, tools)):
                    return calls, ""
                return [], inner if inner.strip() else ""
            return None
        last_end = sc.raw_spans[-1][1]
        if ended:
            if consumed != len(body):
                return None
            tail = body[last_end : len(body) - len(section_end)]
            leftover = tail if self.noise and tail.strip() else ""  # noise after the last call is text
        elif cut:
            leftover = body[last_end:]  # the complete calls before the cut count; the rest is text
        elif self.implied_end and at_end and sc.state == "between" and not body[last_end:].strip():
            leftover = body[last_end:]  # the reply ended right after a call: the section end is implied
        else:
            return None
        out: list[ParsedCall] = []
        for (start, js, je, end), (raw_start, raw_end) in zip(sc.calls, sc.raw_spans, strict=True):
            m = self.header.fullmatch(body, start + len(self.call_begin), js)
            if m is None:
                return None
            fenced = bool(m.groupdict().get("fence")) if self.fence_in_header else False
            post = body[je : end - len(self.call_end)].strip()
            if self.args_end:  # the scanner read it last before CALL_END
                post = post.removesuffix(self.args_end).rstrip()
            if post not in (("```",) if fenced else ("",)):
                return None
            ok, args = loads_repaired(body[js:je])
            if not ok or not isinstance(args, dict):
                return None
            name = m.group(1) if self.name_of is None else self.name_of(m.group(1), args, tools)
            out.append(ParsedCall(name, args, body[raw_start:raw_end]))
        return out, leftover

    def _unwrapped_calls(self, inner: str, tools: list[dict[str, Any]] | None) -> list[ParsedCall] | None:
        """A section's body written as ``header {json}`` calls without CALL_BEGIN and CALL_END
        (whitespace around each): the calls, or None when it is anything else."""
        out: list[ParsedCall] = []
        i = skip_ws(inner, 0)
        while i < len(inner):
            m = self.header.match(inner, i)
            if m is None or not inner.startswith("{", m.end()):
                return None
            try:
                args, end = LENIENT_DECODER.raw_decode(inner, m.end())
            except ValueError:
                return None
            if not isinstance(args, dict):
                return None
            name = m.group(1) if self.name_of is None else self.name_of(m.group(1), args, tools)
            out.append(ParsedCall(name, args, inner[i:end]))
            i = skip_ws(inner, end)
        return out or None

    def cut_call(self, opener: str, body: str, tools: list[dict[str, Any]] | None) -> IncompleteCall | None:
        """The cut call, named by ``name_of`` where its header was written whole (a copied id)."""
        inc = super().cut_call(opener, body, tools)
        if inc is None or self.name_of is None:
            return inc
        at = inc.raw.rfind(self.call_begin)
        m = None if at == -1 else self.header.match(inc.raw, at + len(self.call_begin))
        name = None if m is None else self.name_of(m.group(1), None, tools)
        return inc if name is None or name not in tool_schemas(tools) else replace(inc, name=name)

    def grammar_wire(self, ctx):
        from app.engine.grammar.wires import json_section

        return partial(
            json_section,
            section=(self.section_begin, self.section_end),
            head=self.call_head,
            index=self.call_index,
            tail=self.call_tail,
        )

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        index = "" if self.call_index is None else f"{self.call_index[0]}0{self.call_index[1]}"
        return (
            f"{self.section_begin}{self.call_head(name)}{index}{json_text(dict(arguments))}"
            f"{self.call_tail}{self.section_end}"
        )
