"""Tencent Hunyuan V4 (Hy4-preview) calls: Hy3's tags without ``<tool_sep>``, every marker ending
in the checkpoint's suffix ``S``::

    <tool_calls:6124c78e>
    <tool_call:6124c78e>NAME
    <arg_key:6124c78e>K</arg_key:6124c78e><arg_value:6124c78e>V</arg_value:6124c78e>
    </tool_call:6124c78e>
    </tool_calls:6124c78e>

``S`` is a per-checkpoint code the tokenizer's special tokens carry (Hy4-preview's template sets
``:6124c78e``; vLLM reads it from the vocabulary) or nothing. What is read as ``S``: ``:`` and
1 to 64 lowercase hexadecimal digits, or the empty suffix; one section uses one suffix in all its
tags (a tag in another spelling is text there, so is the whole section). Hy3's ``:opensource``
is Hy3's (the ``hunyuan`` family), not a code of this family. While streaming, ``<tool_calls:``
opens a section once its code and ``>`` follow; until then it is held back, and anything else
after it (a character that is no hex digit, a code too long) makes it text.

Any number of calls in one section, whitespace between the elements (between a key and its
value too) and nothing else. The name is what stands before the first ``<arg_key{S}>`` (or
before ``</tool_call{S}>`` in a call without arguments), whitespace around it dropped; it must
be a tool name as tools spell them. Values are raw text typed by the tool's schema, exactly as
written; a marker inside a value does not end the section. The text before and after the section
is the reply's content. A section not closed in a reply that ended normally is text; a reply cut
inside it keeps its complete calls.

Reasoning is a ``<think{S}>...</think{S}>`` block (Hy4-preview's template opens
``<think:6124c78e>`` in the generation prompt), ``S`` any code as above or none, one spelling per
reply: a reply that opens with a think tag keeps its spelling; one that does not (the prompt
opened the block, or a closing tag without an opening one) takes the spelling of its first
closing think tag, wherever it stands. A think tag in another spelling is text. The shared
machine reads reasoning tags as fixed strings, so this family's stream (``_Stream``) fixes the
reply's spelling before the machine looks: until then it scans the text for the first think tag
(each character once) and holds back a tail that may still become one (``</think:61``); once a
spelling is fixed the machine runs as for any family. Calls are written (example, grammar) in
Hy4-preview's spelling.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from app.calls import WIRE_NAME
from app.engine.formats.base import ParsedCall, RegionScanner, Stream, register
from app.engine.formats.sections import SkipValuesScanner, raw_text, run_section, skip_ws
from app.engine.formats.xml_params import ArgPairsFormat, read_arg_pairs

__all__ = ["HunyuanV4Format", "Tags"]

CODE = ":6124c78e"  # Hy4-preview's suffix: the spelling this family writes
_MAX_CODE = 64  # hex digits a suffix may have (a longer run is no code: the opener is text)
_HEX = frozenset("0123456789abcdef")
OPEN_CODED = "<tool_calls:"  # the opener of a suffixed section, before its code
OPEN_PLAIN = "<tool_calls>"
_NAME = re.compile(WIRE_NAME)
_CODE = re.compile(rf"[0-9a-f]{{1,{_MAX_CODE}}}>")


class Tags:
    """The markers of one suffix (``:CODE`` or empty)."""

    def __init__(self, suffix: str) -> None:
        def pair(name: str) -> tuple[str, str]:
            return f"<{name}{suffix}>", f"</{name}{suffix}>"

        self.open, self.close = pair("tool_calls")
        self.call, self.call_end = pair("tool_call")
        self.key, self.value, self.think = pair("arg_key"), pair("arg_value"), pair("think")


WRITTEN, PLAIN = Tags(CODE), Tags("")
WHOLE = {WRITTEN.open: WRITTEN, PLAIN.open: PLAIN}  # openers that are a whole section tag


def _tags(opener: str, body: str) -> tuple[Tags, int] | None:
    """The tags of a section opened by ``opener`` whose text after the opener is ``body``, and
    where its contents start in ``body``; None when no code stands there."""
    if opener in WHOLE:
        return WHOLE[opener], 0
    m = _CODE.match(body)
    if m is None:
        return None
    return Tags(":" + body[: m.end() - 1]), m.end()


class _Scanner(RegionScanner):
    """A section: after ``<tool_calls:`` its code and ``>`` (anything else ends the region there:
    text), then up to the closing tag in the section's spelling, skipping over values."""

    def __init__(self, opener: str) -> None:
        self.ops = 0
        self.code = "" if opener == OPEN_CODED else None  # the code read so far (None: read)
        self.inner: SkipValuesScanner | None = None if self.code is not None else self._inner(WHOLE[opener])

    @staticmethod
    def _inner(tags: Tags) -> SkipValuesScanner:
        return SkipValuesScanner(tags.close, *tags.value)

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i = 0
        if self.inner is None:
            assert self.code is not None
            while i < len(buf):
                self.ops += 1
                c = buf[i]
                if c == ">" and self.code:
                    i += 1
                    self.inner = self._inner(Tags(":" + self.code))
                    break
                if c not in _HEX or len(self.code) == _MAX_CODE:
                    return i, True  # no code: the opener is text
                self.code += c
                i += 1
            else:
                return i, False
        inner = self.inner
        inner.cut = self.cut
        before = inner.ops
        j, ended = inner.scan(buf[i:], final)
        self.ops += inner.ops - before
        return i + j, ended


def _call(tags: Tags, text: str, start: int) -> tuple[ParsedCall, int] | None:
    """One ``<tool_call{S}>NAME pairs</tool_call{S}>`` at ``text[start]``: the call and the index
    after it."""
    if not text.startswith(tags.call, start):
        return None
    m = _NAME.match(text, skip_ws(text, start + len(tags.call)))
    if m is None:
        return None
    got = read_arg_pairs(text, m.end(), key=tags.key, value=tags.value, close=tags.call_end)
    if got is None:
        return None
    args, end = got
    return ParsedCall(m.group(0), dict(args), text[start:end]), end


# Think tags of any spelling; the longest proper prefix of one is "</think:" and 64 digits.
_SUFFIX = rf"(?::[0-9a-f]{{1,{_MAX_CODE}}})?"  # a tag's code, or none
_THINK = re.compile(rf"</?think{_SUFFIX}>")
_CLOSE = re.compile(rf"</think{_SUFFIX}>")
_MAX_PART = len("</think:") + _MAX_CODE
_OPEN_END = re.compile(rf"<think{_SUFFIX}>\Z")
# The shared machine's states where reasoning tags are looked for (base.Stream's names).
_LEAD, _HELD = "lead", ("window", "reason", "tentative")


def _tag_prefix(rest: str, close_only: bool) -> bool:
    """Whether ``rest`` (the end of the text seen, from a ``<``) may still become a think tag
    (a closing one with ``close_only``)."""
    if not rest.startswith("<") or len(rest) > _MAX_PART:
        return False
    if rest.startswith("</"):
        body = rest[2:]
    elif close_only and rest != "<":
        return False
    else:
        body = rest[1:]
    if len(body) <= len("think"):
        return "think".startswith(body)
    code = body[len("think") :]
    return body.startswith("think:") and all(c in _HEX for c in code[1:])


class _Stream(Stream):
    """The shared machine, with the reply's think-tag spelling fixed before it looks for tags.

    Until a spelling is fixed, every step of a state that reads reasoning tags first scans the
    text not yet scanned: at the reply's lead for a think tag at its start (opening or closing),
    in the other states for the first closing think tag anywhere. The tag found fixes the spelling
    (the machine's tags become that spelling's pair). A tail that may still become a tag is hidden
    from the step until more text decides it, so the step never acts on a tag it cannot see whole.
    The machine's decisions depend only on the text seen, so streaming still equals parsing; the
    scan offset moves forward as text is consumed, so each character is scanned once (plus the
    hidden tail, at most one tag long, again with each feed)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self._spelling: str | None = None  # the reply's suffix, once a think tag fixed it
        self._scanned = 0  # characters at the start of the buffer scanned without finding a tag
        super().__init__(*args, **kwargs)

    def _step_table(self) -> dict[str, Callable[[bool, bool], bool]]:
        table = super()._step_table()
        table[_LEAD] = partial(self._tagged, table[_LEAD], True)
        for state in _HELD:
            table[state] = partial(self._tagged, table[state], False)
        return table

    def _consume(self, n: int) -> str:
        self._scanned = max(0, self._scanned - n)
        return super()._consume(n)

    def _tagged(self, step: Callable[[bool, bool], bool], lead: bool, final: bool, truncated: bool) -> bool:
        if self._spelling is not None:
            return step(final, truncated)
        hide = self._scan(lead, final)
        if hide is None:
            return step(final, truncated)
        buf = self._buf
        self._buf = buf[:hide]
        try:
            return step(final, truncated)
        finally:
            self._buf += buf[hide:]

    def _scan(self, lead: bool, final: bool) -> int | None:
        """Fix the spelling where the text seen shows it; where the tail of the text may still
        become the tag that fixes it, the index it starts at (None: nothing to hide)."""
        buf = self._buf
        if lead:
            i = self._leading_ws()
            m = _THINK.match(buf, i)
            self.ops += min(len(buf) - i, _MAX_PART) + 1
            if m is not None:
                self._fix(m.group())
                return None
            return i if not final and i < len(buf) and _tag_prefix(buf[i:], False) else None
        start = min(self._scanned, len(buf))
        m = _CLOSE.search(buf, start)
        if m is not None:
            self.ops += m.end() - start + 1
            self._fix(m.group())
            return None
        self.ops += len(buf) - start + 1
        k = buf.rfind("<", max(start, len(buf) - _MAX_PART))
        if not final and k != -1 and _tag_prefix(buf[k:], True):
            self._scanned = k
            return k
        self._scanned = len(buf)
        return None

    def _fix(self, tag: str) -> None:
        self._spelling = _suffix(tag)
        self._opens, self._closes = ((t,) for t in Tags(self._spelling).think)


def _suffix(tag: str) -> str:
    """The suffix (``:CODE`` or empty) of a think tag."""
    return tag[tag.index("think") + len("think") : -1]


class HunyuanV4Format(ArgPairsFormat):
    name = "hunyuan-v4"
    label = "Hunyuan V4 XML (Tencent HY V4, Hy4-preview)"
    # Hy4-preview's whole opener first (the one written and held by the grammar; where it stands,
    # the longest opener wins, and it reads as ``<tool_calls:`` followed by its code would).
    openers = (WRITTEN.open, OPEN_CODED, OPEN_PLAIN)
    reasoning = WRITTEN.think
    reasoning_alt = (PLAIN.think,)
    section = (WRITTEN.open + "\n", WRITTEN.close)
    tail = f"{WRITTEN.call_end}\n"
    key_tags, value_tags = WRITTEN.key, WRITTEN.value
    param_close = WRITTEN.value[1]

    def region_scanner(self, opener: str) -> RegionScanner:
        return _Scanner(opener)

    def parse_region(self, opener, body, *, at_end, truncated, tools):
        got = _tags(opener, body)
        if got is None:
            return None
        tags, start = got
        closed = body.endswith(tags.close)
        text = body[start : len(body) - len(tags.close)] if closed else body[start:]
        if not closed and not (at_end and truncated):
            return None  # a section the reply left open is text
        return run_section(text, partial(_call, tags), close=tags.close, closed=closed)

    stream_class = _Stream

    def opens_in_reasoning(self, prompt: str) -> bool:
        if not isinstance(prompt, str):
            return False
        # The generation prompt ends with an opening think tag in any spelling.
        return _OPEN_END.search(prompt.rstrip()[-_MAX_PART:]) is not None

    def reply_thinking(self, prompt: Any, text: str = "") -> tuple[tuple[str, str], str] | None:
        # The spelling the stream fixes (a think tag at the reply's start, else its first closing
        # one), else the one the generation prompt opened, else Hy4-preview's.
        m = None
        if isinstance(text, str):
            m = _THINK.match(text, len(text) - len(text.lstrip())) or _CLOSE.search(text)
        if m is None and isinstance(prompt, str):
            m = _OPEN_END.search(prompt.rstrip()[-_MAX_PART:])
        tags = Tags(_suffix(m.group())).think if m is not None else WRITTEN.think
        return tags, tags[1] + "\n\n"

    def head(self, name: str) -> str:
        return f"{WRITTEN.call}{name}\n"

    def param_head(self, key: str) -> str:
        # vLLM's reader wants the value's tag right after the key's.
        (k_open, k_close), v_open = WRITTEN.key, WRITTEN.value[0]
        return f"{k_open}{key}{k_close}{v_open}"

    def pairs_text(self, arguments: Mapping[str, Any]) -> str:
        # As param_head: each value right after its key, a newline after each pair.
        return "".join(f"{self.param_head(k)}{raw_text(v)}{self.param_close}\n" for k, v in arguments.items())

    def call_name(self, raw: str) -> str | None:
        m = re.search(r"<tool_call(?::[0-9a-f]+)?>\s*(" + WIRE_NAME + r")(?=\s|<)", raw)
        return m.group(1) if m else None

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        return f"{WRITTEN.open}\n{self.head(name)}{self.pairs_text(arguments)}{self.tail}{WRITTEN.close}"


register(HunyuanV4Format())
