"""The machinery every tool-call family shares: types, registry, the streaming engine.

A family is a :class:`Format` subclass that declares its markers and supplies two pieces:

* ``region_scanner(opener)``: an incremental scanner that, fed the text after a call opener,
  says where the call region ends (JSON-aware where the family's calls are JSON, so a marker
  inside a JSON string does not end the call);
* ``parse_region(opener, body, at_end=..., truncated=...)``: a strict, never-raising parser of
  one complete region, returning the calls as written (or ``None``: the region is text).

:class:`Stream` runs one state machine for every family: reasoning blocks, holdback of partial
markers, start-only formats, regions. ``Format.parse`` is the same machine fed the whole text, so
streaming equals parsing for every split by construction: every decision depends only on text
already seen and is taken only once the text seen decides it. Consumed text leaves the buffer,
so the work is linear in the output (``Stream.ops`` counts characters examined).

Reasoning before its closing tag is known
-----------------------------------------
Two states hold text because a later closing reasoning tag (``</think>``, ``[/THINK]``,
``<channel|>``) would change what it is: *window* (``orphan_close=True`` and the reply did not
open with the opening tag: a closing tag without an opening one may follow) and *tentative*
(inside a reasoning block, opened by the reply or by the prompt with ``in_reasoning=True``, once
a call opener has appeared in it: Qwen3.5/3.6 open calls without closing a prefilled
``<think>``). Both look for the closing tag and for call openers. A call opener starts a
*region* whose extent the family's scanner decides, exactly as after reasoning (JSON strings,
raw values, ``<|"|>`` strings: up to the end of the reply when the scanner never closes it);
the region is then parsed as it would be after reasoning (same ``at_end`` and ``truncated``).
Decision table, first matching row wins, ``C`` the closing tag:

========================================================  ==========================================
held text                                                 outcome
========================================================  ==========================================
``C`` outside every region                                everything held before ``C`` is reasoning
                                                          (call regions included: call-shaped text
                                                          in a block the model closes is reasoning,
                                                          unless the family's ``calls_in_reasoning``
                                                          says its models call from there: then its
                                                          regions that parse as calls are calls; or
                                                          ``calls_in_reasoning_if_alone``: calls that
                                                          end the block count if no call follows);
                                                          the text after ``C`` is read as after
                                                          reasoning
``C`` inside a region that parses as one or more calls    part of the call (an argument's text),
                                                          not a closing tag
``C`` inside a region that yields no call (malformed,     the region is plain text: its first ``C``
cut by ``truncated``)                                     closes reasoning as in the first row
end of reply, no closing ``C``, window                    the held text is a reply without
                                                          reasoning: its calls count
end of reply, no closing ``C``, tentative, not truncated  the opener ended the reasoning: text before
                                                          it is reasoning, the rest is read as after
                                                          reasoning (its calls count)
end of reply, no closing ``C``, tentative, truncated      all reasoning (a cut reply's unclosed
                                                          block stays reasoning)
========================================================  ==========================================

So ``A<tool_call>{.."</think>"..}</tool_call>B</think>C`` (window) is reasoning
``A<tool_call>{.."</think>"..}</tool_call>B`` and content ``C`` with no call, while
``<tool_call>{.."</think>"..}</tool_call>`` alone is one call whose argument holds ``</think>``.
Inside a block opened by ``<think>`` (or by the prompt), the first ``C`` before any call opener
ends it as always. A start-only family (its call may open only at the start of the reply) would
see no regions in these states: none of them has reasoning tags. Every row depends only on the
text up to the point it decides, so streaming still equals parsing for every split; a region's
text is scanned at most twice more (once when the window/tentative state ends without a closing
tag and its text is read again, once when a region that yields no call is searched for ``C``),
so the cost stays linear.

After the reply's reasoning block has closed, a closing tag written again in the answer
(``<think>a</think>Draft.</think>Answer``: DeepSeek V4 drafts a second round there and closes it
so, ds4 #678) is markup: dropped, never content, where the family spells its closing tag as an
XML closing tag (``</think>``, ``</seed:think>``); other closing markers may start the answer or
another message and stay as they are read. So too where the prompt closed the block
(``after_reasoning``: Qwen3's thinking switched off renders ``<think>\n\n</think>\n\n``, and
Qwen3.6 still writes ``</think>`` in its answer, ik_llama.cpp #2036). Before any block closed,
such a tag closes nothing and stays text (a template that does not open reasoning at all).

Right after the reply's calls, an opening reasoning tag with nothing after it but whitespace to
the reply's end (Qwen3.8 opens a new block after its calls, then stops before writing in it:
llama.cpp #28914) is markup too: dropped with the whitespace after it, the calls standing. The
whitespace between a call and what follows is held until the next word is known. With words
after it, or with no call before it, the tag stays text as before.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from app.calls import IncompleteCall, ToolCall
from app.engine.formats.events import (
    FormatEvent,
    ReasoningDelta,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallDone,
    ToolCallIncomplete,
    ToolCallStarted,
)
from app.engine.formats.jsonscan import JsonScanner
from app.engine.holdback import partial_start
from app.json_schema import tool_schemas, type_arguments

__all__ = [
    "FORMATS",
    "Format",
    "IncompleteCall",
    "JsonStateScanner",
    "MarkerRegion",
    "OwnStreamFormat",
    "ParsedCall",
    "RegionScanner",
    "Reply",
    "Stream",
    "THINK",
    "ToolCall",
    "find_marker",
    "fold_events",
    "name_hint",
    "one_call",
    "register",
    "tool_format_choices",
]


class Reply:
    """One reply as the parser read it: visible ``content``, ``reasoning`` text, the calls to run
    (``tool_calls``) and the calls that are not calls to run (``incomplete_calls``: cut off by the
    token limit, or to an undeclared tool; raw text kept). ``Format.parse`` returns one; a chat
    loop fills one from the parser's events with :meth:`take`."""

    __slots__ = ("_content", "_reasoning", "incomplete_calls", "tool_calls")

    def __init__(
        self,
        content: str = "",
        reasoning: str = "",
        tool_calls: list[ToolCall] | None = None,
        incomplete_calls: list[IncompleteCall] | None = None,
    ) -> None:
        self._content: list[str] = [content] if content else []
        self._reasoning: list[str] = [reasoning] if reasoning else []
        self.tool_calls: list[ToolCall] = list(tool_calls or [])
        self.incomplete_calls: list[IncompleteCall] = list(incomplete_calls or [])

    @property
    def content(self) -> str:
        return _joined(self._content)

    @property
    def reasoning(self) -> str:
        return _joined(self._reasoning)

    def take(self, ev: Any) -> bool:
        """Keep one parser event; True when it passes on to whoever shows the reply. Text and
        reasoning pass on (empty pieces are dropped); a complete call is kept for dispatch (it is
        announced when it runs); a call that is not one to run passes on and stays with the reply.
        A call's progress events stay here; anything else (a notice) passes on untouched."""
        if isinstance(ev, TextDelta | ReasoningDelta):
            if ev.text:
                (self._content if isinstance(ev, TextDelta) else self._reasoning).append(ev.text)
            return bool(ev.text)
        if isinstance(ev, ToolCallDone):
            self.tool_calls.append(ev.call)
            return False
        if isinstance(ev, ToolCallIncomplete):
            self.incomplete_calls.append(ev.call)
        return not isinstance(ev, ToolCallStarted | ToolCallArgsDelta)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Reply):
            return NotImplemented
        return (self.content, self.reasoning, self.tool_calls, self.incomplete_calls) == (
            other.content,
            other.reasoning,
            other.tool_calls,
            other.incomplete_calls,
        )

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return (
            f"Reply(content={self.content!r}, reasoning={self.reasoning!r}, "
            f"tool_calls={self.tool_calls!r}, incomplete_calls={self.incomplete_calls!r})"
        )


def _joined(parts: list[str]) -> str:
    """The pieces as one string (joined once, then kept joined)."""
    if len(parts) > 1:
        parts[:] = ["".join(parts)]
    return parts[0] if parts else ""


@dataclass(slots=True)
class ParsedCall:
    """A call as a family's parser read it: arguments as written (not yet typed)."""

    name: str
    arguments: dict[str, Any]
    raw: str
    id: str | None = None
    #: whether the values are written as text (typed by the schema from text): None, the
    #: family's ``raw_values``; a family that reads another wire's calls too says so per call
    raw_values: bool | None = None


def one_call(
    opener: str, body: str, got: tuple[str, Mapping[str, Any]] | None
) -> tuple[list[ParsedCall], str] | None:
    """What a region that holds one call parses to: the call ``got`` read from it (its name and
    its arguments as written), the whole region being its text; None when nothing was read."""
    if got is None:
        return None
    name, args = got
    return [ParsedCall(name, dict(args), opener + body)], ""


class RegionScanner:
    """Finds where a call region ends. Subclasses keep state so each character is seen once.

    ``scan(buf, final)`` examines ``buf`` (the text after what was consumed before) and returns
    ``(consumed, ended)``: ``buf[:consumed]`` belongs to the region; when ``ended`` the region
    ends there, otherwise the rest of ``buf`` (a possible partial marker) is offered again with
    more text. With ``final`` there is no more text.
    """

    ops: int = 0
    state: str = ""  # where a state-machine scanner stands
    # Set with the last text when the token limit cut the reply: the end of the text is then no
    # evidence that a value or call ended there.
    cut: bool = False

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:  # pragma: no cover - abstract
        raise NotImplementedError

    def skip_space(self, buf: str, i: int) -> int:
        """The index of the first character of ``buf`` from ``i`` that is not whitespace
        (``len(buf)`` if none), the characters examined counted in ``ops``."""
        k = i
        while k < len(buf) and buf[k].isspace():
            k += 1
        self.ops += k - i + 1
        return k

    def feed_json(self, js: JsonScanner, buf: str, i: int = 0) -> int:
        """Feed the JSON value ``js`` is reading from ``buf[i]``, counting its work in ``ops``: the
        index after the value's end, or -1 while it is still open at the end of ``buf``."""
        before = js.ops
        j = js.feed(buf, i)
        self.ops += js.ops - before
        return j

    def json_state(self, js: JsonScanner, buf: str, i: int, then: str) -> int:
        """The step of a state that reads a JSON value with ``js``: once the value ends, the state
        becomes ``then`` and the index after the value is returned; -1 while it is still open at
        the end of ``buf``."""
        j = self.feed_json(js, buf, i)
        if j != -1:
            self.state = then
        return j


class JsonStateScanner(RegionScanner):
    """A state-machine scanner that reads a JSON value on its way: it starts in ``state`` with a
    fresh :class:`JsonScanner` in ``json`` (see :meth:`json_state`).

    Its :meth:`scan` reads the value in state ``json`` and goes on in state ``after_json``; a
    subclass writes the other states' :meth:`step` (or a ``scan`` of its own)."""

    after_json = "post"

    def __init__(self, state: str = "pre") -> None:
        self.state = state
        self.json = JsonScanner()
        self.ops = 0

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        i, n = 0, len(buf)
        while i < n:
            if self.state == "json":
                i = self.json_state(self.json, buf, i, self.after_json)
                if i == -1:
                    return n, False
                continue
            got = self.step(buf, i, final)
            if isinstance(got, tuple):
                return got
            i = got
        return n, False

    def step(self, buf: str, i: int, final: bool) -> int | tuple[int, bool]:  # pragma: no cover - abstract
        """One step at ``buf[i]`` in a state other than ``json``: the index to go on from, or what
        :meth:`scan` returns (where the region ends, or how far it goes until more text comes)."""
        raise NotImplementedError

    def value_start(self, buf: str, i: int, opening: str = "{") -> int | None:
        """One step of a state that waits for the value: whitespace at ``buf[i]`` is skipped (the
        next index); at ``opening`` the value starts (the state becomes ``json``, the index stays);
        None when anything else stands there (the region ends at ``i``)."""
        c = buf[i]
        if c.isspace():
            return i + 1
        if c != opening:
            return None
        self.state = "json"
        return i

    def fence_skip(self, buf: str, i: int) -> int | None:
        """What the states around a fenced value skip at ``buf[i]``: in state ``lang`` (after an
        opening markdown fence) a letter of the fence's language (at anything else the state
        becomes ``pre`` and the index stays), elsewhere whitespace. The index to go on from; None
        when ``buf[i]`` is something else."""
        if self.state == "lang":
            if buf[i].isalpha():
                return i + 1
            self.state = "pre"
            return i
        return i + 1 if buf[i].isspace() else None


class MarkerRegion(RegionScanner):
    """The region of a marker that stands alone (structure the family consumes): it ends where it
    starts."""

    def scan(self, buf: str, final: bool) -> tuple[int, bool]:
        return 0, True


@functools.lru_cache(maxsize=512)
def _marker_pattern(markers: tuple[str, ...]) -> re.Pattern[str]:
    """One search for the earliest of ``markers`` (the longest where several start there)."""
    return re.compile("|".join(re.escape(m) for m in sorted(set(markers), key=len, reverse=True)))


def find_marker(buf: str, markers: Iterable[str], final: bool, start: int = 0) -> tuple[int, str, int]:
    """Earliest marker in ``buf[start:]``.

    Returns ``(pos, marker, safe)``: ``marker`` found at ``pos``, or ``(-1, "", safe)`` where
    ``buf[:safe]`` cannot be part of a marker (the rest may be a marker's beginning). A marker is
    reported only when no partial marker could start before it.
    """
    markers = tuple(markers)
    if "" in markers:  # an empty marker stands everywhere: at ``start``, unless a longer one does
        markers = tuple(m for m in markers if m)
        hit = _marker_pattern(markers).match(buf, start) if markers else None
        best, found = start, hit.group() if hit else ""
    else:
        hit = _marker_pattern(markers).search(buf, start) if markers else None
        best, found = (hit.start(), hit.group()) if hit else (-1, "")
    limit = len(buf) if best == -1 else best
    safe = limit if final else min(limit, partial_start(buf, markers, start))
    if best != -1 and safe < best:
        return -1, "", safe
    if best != -1:
        return best, found, best
    return -1, "", safe


# Where a tool's name stands in the calls of the common wires (for an incomplete call's name).
_NAME_HINTS = tuple(
    re.compile(p)
    for p in (
        r'"name"\s*:\s*"([^"\\<>]+)"',  # JSON {"name": "NAME", ...}
        r'\b(?:name|tool)="([^"<>\s]+)"',  # name="NAME" / tool="NAME" attributes
        r"<function=([^>\s<]+)>",  # <function=NAME>
        r"\bto=(?:functions\.)?([^\s<>]+)",  # Harmony recipients
        r"functions\.([A-Za-z_][\w.\-/]*?)(?::\d+)?(?=[<\s{]|$)",  # functions.NAME:0
        r"\bcall:([A-Za-z_][\w.\-:/]*)",  # Gemma call:NAME
    )
)


def name_hint(raw: str) -> str | None:
    """The tool name a (possibly cut) call's text names, where one of the common wires shows it."""
    for pattern in _NAME_HINTS:
        m = pattern.search(raw)
        if m:
            return m.group(1)
    return None


FORMATS: dict[str, Format] = {}

THINK = ("<think>", "</think>")  # the reasoning block most families write


def register(fmt: Format) -> Format:
    """Add a family to :data:`FORMATS` (keyed by ``fmt.name``); a family module calls this once."""
    if not fmt.name or fmt.name in ("auto", "none"):
        raise ValueError(f"invalid format name {fmt.name!r}")
    FORMATS[fmt.name] = fmt
    return fmt


def tool_format_choices() -> list[tuple[str, str]]:
    """(value, label) choices of the ``chat.tool_format`` setting."""
    return (
        [("auto", "Automatic (from the model's template)")]
        + [(f.name, f.label) for f in FORMATS.values()]
        + [("none", "No tools")]
    )


def _has_setting(cls: type, key: str) -> bool:
    """Whether a family class declares the attribute ``key`` as data: with a value that is no
    method or property, or with an annotation alone."""
    for c in cls.__mro__:
        namespace = vars(c)
        if key in namespace:
            value = namespace[key]
            return not (callable(value) or isinstance(value, property | functools.cached_property))
        if key in namespace.get("__annotations__", {}):
            return True
    return False


class Format:
    """One tool-call family. Subclasses set the class attributes and the two region methods."""

    name: str = ""
    label: str = ""
    openers: tuple[str, ...] = ()
    start_only: bool = False  # a call may open only at the start of the reply (after reasoning)
    reasoning: tuple[str, str] | None = None  # (open, close) tags of a reasoning block
    # More (open, close) pairs the family's models also write (Mistral derivatives that reason in
    # <think>); any of the closing tags closes a block. A closing tag may be a marker that starts
    # the answer (Kimi K3's response frame): it ends reasoning and is structure.
    reasoning_alt: tuple[tuple[str, str], ...] = ()
    # The family's models may repeat the closing tag right after it (MiniMax-M3 writes
    # ``</mm:think></mm:think>``): each repeat written right after a closing tag is dropped.
    repeated_close: bool = False
    # The family's models call tools from inside their reasoning (Kimi K2 Thinking interleaves its
    # calls with its thinking): a call region inside a reasoning block the model closes is still
    # a call, the text around it reasoning. Off: call-shaped text in a closed block is reasoning.
    calls_in_reasoning: bool = False
    # The family's models now and then write their only call inside their reasoning and close the
    # block right after it (Qwen3.5 and 3.6: vllm-mlx #433, LM Studio #2045): a complete call
    # there, in the family's own opener, to a declared tool, with nothing but whitespace between
    # it and the closing tag, counts when the reply writes no call after the block and was not
    # cut; its text stays reasoning too. Thinking after it, or a call after the block, means it
    # was a draft: reasoning only.
    calls_in_reasoning_if_alone: bool = False
    # The machine that reads the family's replies (None: the region machine, :class:`Stream`); a
    # family with a machine of its own names its subclass.
    stream_class: type[Stream] | None = None
    # How the family's own templates write a past call's id, where its models copy that id's
    # shape into their next call (Kimi K2's ``functions.{name}:{index}``): a conversation's calls
    # are rendered with such ids (``{index}`` counts the conversation's calls from 0). None: the
    # ids as they are.
    history_id: str | None = None
    # The reasoning block as a thinking budget sees it (``app.engine.chat``): its (open, close)
    # markers (None: ``reasoning``; Harmony's analysis channel has no tags of its own) and the text
    # that closes a block the engine ends (None: the closing tag, then a blank line).
    thinking_markers: tuple[str, str] | None = None
    thinking_close: str | None = None
    # A family whose turn is several messages (HyperCLOVA X): (the end of a message, which
    # llama.cpp may count as an end of generation, and what begins the turn's next message).
    # A reply that ends at that end token goes on while the model writes that beginning next.
    message_end: tuple[str, str] | None = None
    # Where the family's reply has ended though llama.cpp may not count it as an end of generation
    # (GLM-4's GGUFs: ``<|observation|>``, the header of the result the model would otherwise go
    # on to write itself): stop strings of every generation in the family's syntax.
    turn_stops: tuple[str, ...] = ()
    raw_values: bool = False  # arguments are written as text (typed by the schema from text)
    # Openers of a start-only family that open a call anywhere in the reply (special tokens such
    # as Llama 4's <|python_start|>); the other openers stay start-only.
    anywhere: tuple[str, ...] = ()

    def __init__(
        self, name: str = "", label: str = "", openers: tuple[str, ...] = (), **settings: Any
    ) -> None:
        """A family built from data: ``name``, ``label``, ``openers`` and, by keyword, any other
        attribute the class gives a default (``reasoning``, a closing tag, ...) take this family's
        values; what is left out keeps the class's (``TypeError`` for an attribute it does not have). So families that differ only in data are
        instances of one class (``JsonTagFormat("longcat", LABEL, (OPEN,), close=CLOSE)``); a
        family with code of its own is a subclass, built the same way with its data (or setting
        it as class attributes)."""
        if name:
            self.name = name
        if label:
            self.label = label
        if openers:
            self.openers = openers
        for key, value in settings.items():
            if key.startswith("_") or not _has_setting(type(self), key):
                raise TypeError(f"{type(self).__name__} has no setting {key!r}")
            setattr(self, key, value)

    @property
    def detail(self) -> str:
        """The family's wire in one example: a call of ``NAME`` with one argument, as
        :meth:`example_call` writes it (so the sketch never drifts from the writer)."""
        return self.example_call("NAME", {"K": "V"})

    def region_scanner(self, opener: str) -> RegionScanner:  # pragma: no cover - abstract
        raise NotImplementedError

    def parse_region(
        self, opener: str, body: str, *, at_end: bool, truncated: bool, tools: list[dict[str, Any]] | None
    ) -> tuple[list[ParsedCall], str] | None:
        """Parse one region (``opener`` + ``body``). ``at_end``: the reply ended inside or right
        after it without the scanner closing it. Returns (calls, leftover text) or None."""
        raise NotImplementedError  # pragma: no cover - abstract

    def example_call(self, name: str, arguments: dict[str, Any]) -> str:
        """One call of ``name`` with ``arguments``, written exactly as the model writes it (and
        as this family's parser reads it back): the tool guidance's example and the text of a past
        call replayed through a template that does not render calls."""
        raise NotImplementedError(f"the tool-call format {self.name!r} has no example call writer")

    def constraint_grammar(
        self, tools: list[dict[str, Any]], *, forced: str | None, parallel: bool, ctx: Any
    ) -> str:
        """A Lark grammar holding calls to ``tools`` in this family's syntax (``forced``: only that
        tool; ``ctx``: an ``app.engine.grammar.lark.GrammarContext``); written with the builders
        of ``app.engine.grammar.wires``. Raises ``ConstraintError``."""
        from app.engine.errors import ConstraintError

        wire = self.grammar_wire(ctx)
        if wire is None:
            raise ConstraintError(f"the tool-call format {self.name!r} cannot hold calls to a schema yet")
        return wire(ctx, self, tools, forced, parallel)

    def grammar_wire(self, ctx: Any) -> Callable[..., str] | None:
        """The builder of ``app.engine.grammar.wires`` that writes this family's grammar, with the
        family's markers bound (``functools.partial``): :meth:`constraint_grammar` calls it with
        ``(ctx, format, tools, forced, parallel)``. None: the family has no grammar."""
        return None

    def cut_call(self, opener: str, body: str, tools: list[dict[str, Any]] | None) -> IncompleteCall | None:
        """What a region cut off by the token limit is: an incomplete call (its raw text kept, the
        tool's name where it was written), or None when such a region may be plain text (a
        family whose opener is ordinary text, like ``{`` or ``[``, overrides this)."""
        raw = opener + body
        return IncompleteCall(raw, self.call_name(raw), "truncated")

    def call_name(self, raw: str) -> str | None:
        """The name of the tool a cut call was being written to, where it can be read."""
        return name_hint(raw)

    # -- public API -------------------------------------------------------------------------

    def thinking_tags(self) -> tuple[str, str] | None:
        """The (open, close) markers of the family's reasoning block (None: it has none)."""
        return self.thinking_markers or self.reasoning

    def closing_text(self) -> str | None:
        """What closes a reasoning block in the family's own syntax when the engine ends it (a
        spent thinking budget), so the model answers next. None: the family has no block."""
        if self.thinking_close is not None:
            return self.thinking_close
        tags = self.thinking_tags()
        return None if tags is None else tags[1] + "\n\n"

    def reply_thinking(self, prompt: Any, text: str = "") -> tuple[tuple[str, str], str] | None:
        """The (open, close) markers of the reasoning block of a reply that wrote ``text`` after
        the rendered ``prompt``, and what closes it when the engine ends it: the family's own
        (:meth:`thinking_tags`, :meth:`closing_text`). A family whose checkpoints spell the tags in
        more than one way (Hunyuan V4's codes) answers in the spelling the prompt or the reply
        chose. None: the family has no block."""
        tags, close = self.thinking_tags(), self.closing_text()
        return None if tags is None or close is None else (tags, close)

    def call_begun(self, answer: str) -> bool:
        """Whether ``answer`` (a reply's text after its reasoning) has begun a call: one of the
        family's openers stands in it; a start-only opener (Llama 3's bare ``{``, Hermes' strays)
        only at its start."""
        if not isinstance(answer, str):
            return False
        if any(o in answer for o in (self.anywhere if self.start_only else self.openers)):
            return True
        lead = answer.lstrip()
        return self.start_only and any(lead.startswith(o) for o in self.openers)

    def opens_in_reasoning(self, prompt: str) -> bool:
        """True when the rendered ``prompt`` ends inside an open reasoning block."""
        if not self.reasoning or not isinstance(prompt, str):
            return False
        return prompt.rstrip().endswith(self.reasoning[0])

    def closes_in_prompt(self, prompt: str) -> bool:
        """True when the rendered ``prompt`` ends with a closed reasoning block (Qwen3's
        ``enable_thinking=False`` prefill ``<think>\n\n</think>\n\n``): the reply is an answer."""
        if not self.reasoning or not isinstance(prompt, str):
            return False
        return prompt.rstrip().endswith(self.reasoning[1])

    def expects_orphan_close(self, template_source: str, prompt: str) -> bool:
        """Whether a reply rendered with ``prompt`` may close a reasoning block it never opened
        (the template or the runtime opened it): the template mentions the family's closing
        reasoning tag and the rendered ``prompt`` does not already end with a closed block
        (Qwen3's ``enable_thinking=False`` prefill ``<think>\n\n</think>\n\n``). Pass the
        answer as ``orphan_close`` to :meth:`stream` / :meth:`parse`. Unknown inputs (not
        strings) answer True, the cautious default."""
        if not self.reasoning:
            return False
        if not isinstance(template_source, str) or not isinstance(prompt, str):
            return True
        return self.reasoning[1] in template_source and not self.closes_in_prompt(prompt)

    def stream(
        self,
        tools: list[dict[str, Any]] | None,
        *,
        in_reasoning: bool = False,
        orphan_close: bool = True,
        after_reasoning: bool = False,
    ) -> Stream:
        """An incremental parser of one reply. ``orphan_close`` (default True): a reply that
        does not open with the reasoning tag may still close reasoning later (``...</think>``
        makes the text before it reasoning), so such a reply is held until the closing tag or the
        end. False: such a reply is plain text from its first character and streams at once; a
        closing tag is then a reasoning close only at the very start of the reply (after
        whitespace, ending an empty block), anywhere later it is text. Both rules decide on text
        already seen, so streaming equals :meth:`parse` for every split either way.
        ``after_reasoning``: the prompt already closed a reasoning block (:meth:`closes_in_prompt`),
        so the reply is an answer after reasoning from its first character: a closing tag in it
        is markup (see the module docstring), as after a block the reply closes itself."""
        cls = self.stream_class or Stream
        return cls(
            self, tools, in_reasoning=in_reasoning, orphan_close=orphan_close, after_reasoning=after_reasoning
        )

    def parse(
        self,
        text: str,
        tools: list[dict[str, Any]] | None,
        *,
        in_reasoning: bool = False,
        truncated: bool = False,
        orphan_close: bool = True,
        after_reasoning: bool = False,
    ) -> Reply:
        s = self.stream(
            tools, in_reasoning=in_reasoning, orphan_close=orphan_close, after_reasoning=after_reasoning
        )
        text = text if isinstance(text, str) else str(text)
        events = _feed_pieces(s, text)
        events += s.finish(truncated=truncated)
        return fold_events(events)

    def __repr__(self) -> str:
        return f"<Format {self.name}>"


class OwnStreamFormat(Format):
    """A family whose replies a stream machine of its own reads (``stream_class``: Harmony's
    channels, framed message blocks), not the region machine: it has no region scanner and no
    region parser."""

    stream_class: type[Stream]

    def region_scanner(self, opener: str) -> RegionScanner:  # pragma: no cover - its own machine
        raise NotImplementedError

    def parse_region(self, opener, body, *, at_end, truncated, tools):  # pragma: no cover
        return None


def fold_events(events: Iterable[FormatEvent]) -> Reply:
    """The :class:`Reply` a sequence of events describes."""
    reply = Reply()
    for ev in events:
        reply.take(ev)
    return reply


# States of the stream's machine.
_PARSE_PIECE = 4096  # characters per feed when a whole text is parsed


def _feed_pieces(stream: Stream, text: str) -> list[FormatEvent]:
    """The events of feeding ``text`` to ``stream`` in pieces, as a stream is fed: its buffer
    stays small, so a whole text (a reply parsed at once, a held reply read again at its end) is
    read in time linear in its length (one feed of 400 KB of openers was quadratic: 23 s; a held
    reply of 48,000 calls read again in one feed spent most of its time copying the buffer)."""
    events: list[FormatEvent] = []
    for i in range(0, len(text), _PARSE_PIECE):
        events += stream.feed(text[i : i + _PARSE_PIECE])
    return events


_LEAD = "lead"  # start of a reply of a family with reasoning tags: an opening tag may follow
_WINDOW = "window"  # no opening tag: text is held in case a closing tag without opening follows
_REASON = "reason"  # inside a reasoning block
_TENTATIVE = "tentative"  # a call opener inside an unclosed reasoning block: held until decided
_CALLSTART = "callstart"  # start-only family: does the reply open as a call?
_TEXT = "text"
_REGION = "region"
_DONE = "done"
_RECLOSE = "reclose"  # right after a closing reasoning tag: a repeat of it may follow (dropped)
# right after a call: an opening reasoning tag with nothing after it to the reply's end (Qwen3.8
# opens a block after its calls, then stops: llama.cpp #28914) is markup, dropped
_POSTCALL = "postcall"


class Stream:
    """Incremental parser of one reply: ``feed(delta)`` then ``finish(truncated=...)``."""

    def __init__(
        self,
        fmt: Format,
        tools: list[dict[str, Any]] | None,
        *,
        in_reasoning: bool = False,
        orphan_close: bool = True,
        after_reasoning: bool = False,
        _lead: bool = True,
        _first_index: int = 0,
    ):
        self.fmt = fmt
        self.orphan_close = bool(orphan_close)
        self.tools = tools
        self._schemas = tool_schemas(tools)
        self._buf = ""
        # Held text; a call region held in a family with ``calls_in_reasoning`` keeps its parse
        self._held: list[str | tuple[str, tuple[list[ParsedCall], str]]] = []
        # Calls read inside a closed reasoning block, kept for the end of the reply (a family with
        # ``calls_in_reasoning_if_alone``), and the calls emitted (complete or not) when it closed
        self._drafts: list[ParsedCall] = []
        self._drafts_at = 0
        self._nincomplete = 0
        self._events: list[FormatEvent] = []
        self._ncalls = _first_index
        # Issues each call's id, given the id the model wrote (or None): the chat loop sets it so
        # the id a call gets here is its id everywhere after (prompt, history, UI).
        self.call_ids: Callable[[str | None], str] | None = None
        self._finished = False
        self._region: RegionScanner | None = None
        self._opener = ""
        self._parts: list[str] = []
        self._hregion: RegionScanner | None = None  # a call region inside held text
        self._hopener = ""
        self._hparts: list[str] = []
        self._ws = 0  # whitespace already checked at the start of the buffer (lead / callstart)
        self._tail = 0  # the buffer scanned after an opening tag right after a call (postcall)
        self.ops = 0
        pairs = ((fmt.reasoning,) if fmt.reasoning else ()) + tuple(fmt.reasoning_alt)
        self._opens = tuple(dict.fromkeys(o for o, _c in pairs))
        self._closes = tuple(dict.fromkeys(c for _o, c in pairs))
        # A closing reasoning tag in the answer after the reply's reasoning block closed
        # (``</think>`` again: ds4 #678, a second round of drafting closed so): markup, never
        # content. Only the tags spelt as XML closing tags: other families' closing markers may
        # start the answer or another message. Searched for once a block has closed.
        self._strays = tuple(c for c in self._closes if c.startswith("</"))
        self._text_markers = fmt.anywhere if fmt.start_only else fmt.openers
        self._stray_search = False
        if after_reasoning and not in_reasoning:
            self._search_strays()  # the prompt closed the block
        self._mode = self._first_mode(in_reasoning, _lead)
        self._steps = self._step_table()

    # -- public -----------------------------------------------------------------------------

    def feed(self, delta: str) -> list[FormatEvent]:
        if self._finished:
            raise RuntimeError("feed() after finish()")
        if delta:
            self._buf += delta
            self._run(final=False, truncated=False)
        return self._take()

    def writing_call(self) -> str | None:
        """The raw text of the call region being read (its opener and body so far), or None
        outside one: what the window shows of a call while the model writes it."""
        if self._region is not None:
            return self._opener + "".join(self._parts)
        if self._hregion is not None:  # a region inside text still held (the reply's lead)
            return self._hopener + "".join(self._hparts)
        return None

    def finish(self, truncated: bool = False) -> list[FormatEvent]:
        if self._finished:
            return []
        self._finished = True
        self._run(final=True, truncated=truncated)
        if self._drafts:
            # the reply's only calls were inside its reasoning: they count (see the family's
            # ``calls_in_reasoning_if_alone``), unless it was cut
            alone = self._ncalls + self._nincomplete == self._drafts_at and not truncated
            if alone and all(pc.name in self._schemas for pc in self._drafts):
                for pc in self._drafts:
                    self._emit_call(pc)
            self._drafts = []
        return self._take()

    # -- machinery --------------------------------------------------------------------------

    def _take(self) -> list[FormatEvent]:
        out, self._events = self._events, []
        return out

    def _text(self, s: str) -> None:
        if s:
            self._events.append(TextDelta(s))

    def _reason(self, s: str) -> None:
        if s:
            self._events.append(ReasoningDelta(s))

    def _first_mode(self, in_reasoning: bool, lead: bool) -> str:
        """The state the reply starts in: inside a reasoning block the prompt opened, at its lead
        (an opening reasoning tag may follow), or straight after reasoning."""
        if self.fmt.reasoning and in_reasoning:
            return _REASON
        if self.fmt.reasoning and lead:
            return _LEAD
        return self._after_reasoning()

    def _after_reasoning(self) -> str:
        return _CALLSTART if self.fmt.start_only else _TEXT

    def _after_calls(self) -> str:
        """The state after a region's calls (and the whitespace after them) were read: text,
        unless the family's next call opens without a marker (see GLM-4's)."""
        return _TEXT

    def _search_strays(self) -> None:
        """From here on, a closing reasoning tag in the answer is markup (dropped)."""
        if self._strays and not self._stray_search:
            self._stray_search = True
            self._text_markers = (*self._text_markers, *self._strays)

    def _after_close(self) -> str:
        """The state after a closing reasoning tag."""
        self._search_strays()
        return _RECLOSE if self.fmt.repeated_close else self._after_reasoning()

    def _step_reclose(self, final: bool, truncated: bool) -> bool:
        buf = self._buf
        self.ops += 1
        close = next((c for c in self._closes if buf.startswith(c)), None)
        if close is not None:
            self._consume(len(close))
            return True
        if not final and any(c.startswith(buf) for c in self._closes):
            return False  # may still be a repeat
        self._mode = self._after_reasoning()
        return True

    def _consume(self, n: int) -> str:
        s, self._buf = self._buf[:n], self._buf[n:]
        return s

    def _step_table(self) -> dict[str, Callable[[bool, bool], bool]]:
        """The step of each state of the machine, built once per stream (a stream with states of
        its own returns its table)."""
        return {
            _LEAD: self._step_lead,
            _WINDOW: self._step_window,
            _REASON: self._step_reason,
            _TENTATIVE: self._step_tentative,
            _CALLSTART: self._step_callstart,
            _TEXT: self._step_text,
            _REGION: self._step_region,
            _DONE: self._step_done,
            _RECLOSE: self._step_reclose,
            _POSTCALL: self._step_postcall,
        }

    def _run(self, final: bool, truncated: bool) -> None:
        # Each step returns True when it changed state and the machine should step again; with
        # ``final`` every state either consumes the whole buffer or hands over to another.
        steps = self._steps
        while steps[self._mode](final, truncated):
            pass

    def _step_done(self, final: bool, truncated: bool) -> bool:
        return False

    def _leading_ws(self) -> int:
        buf = self._buf
        i = self._ws
        while i < len(buf) and buf[i].isspace():
            i += 1
        self.ops += i - self._ws + 1
        self._ws = i
        return i

    def _step_postcall(self, final: bool, truncated: bool) -> bool:
        i = self._leading_ws()
        buf = self._buf
        open_tag = next((o for o in self._opens if buf.startswith(o, i)), None)
        if open_tag is not None:
            # whitespace after the tag, scanned once (``_tail``: how far it was scanned before)
            k = max(self._tail, i + len(open_tag))
            while k < len(buf) and buf[k].isspace():
                k += 1
            self.ops += k - max(self._tail, i + len(open_tag)) + 1
            self._tail = k
            if k == len(buf):
                if not final:
                    return False  # the reply may end here
                self._text(self._consume(i))
                self._consume(len(buf) - i)  # the tag, and the whitespace after it: dropped
        elif not final and any(o.startswith(buf[i:]) for o in self._opens):
            return False  # whitespace, or the start of a tag
        self._ws = self._tail = 0
        self._mode = self._after_calls()
        return True

    def _step_lead(self, final: bool, truncated: bool) -> bool:
        i = self._leading_ws()
        rest = self._buf[i:]
        open_tag = next((o for o in self._opens if rest.startswith(o)), None)
        if open_tag is not None:
            self._text(self._consume(i))
            self._consume(len(open_tag))
            self._ws = 0
            self._mode = _REASON
            return True
        close_tag = next((c for c in self._closes if rest.startswith(c)), None)
        if not self.orphan_close and close_tag is not None:
            # Without orphan closes, only a closing tag right at the start ends a (empty) block.
            self._reason(self._consume(i))
            self._consume(len(close_tag))
            self._ws = 0
            self._mode = self._after_close()
            return True
        if not final and (
            rest == ""
            or any(o.startswith(rest) for o in self._opens)
            or (not self.orphan_close and any(c.startswith(rest) for c in self._closes))
        ):
            return False
        self._ws = 0
        self._mode = _WINDOW if self.orphan_close else self._after_reasoning()
        return True

    def _step_window(self, final: bool, truncated: bool) -> bool:
        return self._step_held(final, truncated, tentative=False)

    def _step_tentative(self, final: bool, truncated: bool) -> bool:
        return self._step_held(final, truncated, tentative=True)

    def _step_held(self, final: bool, truncated: bool, *, tentative: bool) -> bool:
        # Window / tentative: text is held until a closing tag outside any call region decides it
        # is reasoning, or the reply ends (see the decision table in the module docstring).
        if self._hregion is not None:
            return self._step_held_region(final, truncated)
        closes = self._closes
        # A start-only family's calls open here only with its openers that stand anywhere (Hermes'
        # tags; a bare JSON call is the whole reply, read again from its start below).
        openers = self.fmt.anywhere if self.fmt.start_only else self.fmt.openers
        pos, m, safe = find_marker(self._buf, (*closes, *openers), final)
        self.ops += (pos + len(m)) if pos != -1 else len(self._buf)
        if pos != -1 and m in closes:
            self._held.append(self._consume(pos))
            self._consume(len(m))
            self._end_held_reasoning()
            return True
        if pos != -1:
            self._held.append(self._consume(pos))
            self._open_held_region(m)
            return True
        self._held.append(self._consume(safe))
        if final:
            rest = self._held_text() + self._consume(len(self._buf))
            self._held = []
            self._mode = _DONE
            if tentative and truncated:
                self._reason(rest)  # a cut reply: the unclosed block stays reasoning
            else:
                # Window: no reasoning after all. Tentative: the opener ended the reasoning.
                self._reparse(rest, truncated)
        return False

    def _open_held_region(self, opener: str) -> None:
        self._consume(len(opener))
        self._hopener = opener
        self._hparts = []
        self._hregion = self.fmt.region_scanner(opener)

    def _step_held_region(self, final: bool, truncated: bool) -> bool:
        scanner = self._hregion
        assert scanner is not None  # this state has a held region
        before = scanner.ops
        scanner.cut = final and truncated  # the text ends here because the token limit cut it
        try:
            consumed, ended = scanner.scan(self._buf, final)
        except Exception:  # noqa: BLE001 - as in _step_region: the rest is the region
            consumed, ended = len(self._buf), False
        self.ops += scanner.ops - before + 1
        consumed = max(0, min(consumed, len(self._buf)))
        self._hparts.append(self._consume(consumed))
        if not ended and not final:
            return False
        at_end = not ended
        if at_end:
            self._hparts.append(self._consume(len(self._buf)))
        opener, body = self._hopener, "".join(self._hparts)
        self._hregion, self._hopener, self._hparts = None, "", []
        try:
            result = self.fmt.parse_region(
                opener, body, at_end=at_end, truncated=truncated and at_end, tools=self.tools
            )
        except Exception:  # noqa: BLE001 - parsers never raise on model output
            result = None
        region = opener + body
        if result is not None and result[0]:
            # a call: a closing tag inside it is its argument's text
            keep = self.fmt.calls_in_reasoning or self.fmt.calls_in_reasoning_if_alone
            self._held.append((region, result) if keep else region)
            return True
        pos, close, _safe = find_marker(region, self._closes, True)
        self.ops += (pos + len(close)) if pos != -1 else len(region)
        if pos == -1:
            self._held.append(region)  # not a call and no closing tag in it: plain held text
            return True
        # Not a call: the region is plain text and its closing tag ends the reasoning; what
        # follows the tag is read again as after reasoning (once: the held state is over).
        self._held.append(region[:pos])
        self._buf = region[pos + len(close) :] + self._buf
        self._end_held_reasoning()
        return True

    def _end_held_reasoning(self) -> None:
        run: list[ParsedCall] = []  # the calls that end the block, only whitespace between them
        for held in self._held:
            if isinstance(held, str):
                self._reason(held)
                run = run if not held.strip() else []
                continue
            calls, leftover = held[1]  # a call the family's models make while they think
            if not self.fmt.calls_in_reasoning:
                # one that counts only where it ends the block, written with the family's own
                # opener, and no call follows the block (see ``calls_in_reasoning_if_alone``)
                self._reason(held[0])
                own = held[0].startswith(self.fmt.openers[0]) and not leftover.strip()
                run = [*run, *calls] if own else []
                continue
            for pc in calls:
                self._emit_call(pc)
            self._reason(leftover)
        if run:
            self._drafts, self._drafts_at = run, self._ncalls + self._nincomplete
        self._held = []
        self._mode = self._after_close()

    def _held_text(self) -> str:
        return "".join(h if isinstance(h, str) else h[0] for h in self._held)

    def _step_reason(self, final: bool, truncated: bool) -> bool:
        closes = self._closes
        markers = (*closes, *(self.fmt.anywhere if self.fmt.start_only else self.fmt.openers))
        pos, m, safe = find_marker(self._buf, markers, final)
        self.ops += (pos + len(m)) if pos != -1 else len(self._buf)
        if pos == -1:
            self._reason(self._consume(safe))
            if final:
                self._reason(self._consume(len(self._buf)))
            return False
        self._reason(self._consume(pos))
        if m in closes:
            self._consume(len(m))
            self._mode = self._after_close()
        else:
            self._held = []
            self._open_held_region(m)
            self._mode = _TENTATIVE
        return True

    def _reparse(self, text: str, truncated: bool) -> None:
        # the family's own machine: a family whose answer opens in a message of its own (GLM-4)
        # reads the held reply as it reads any answer
        sub = type(self)(
            self.fmt,
            self.tools,
            in_reasoning=False,
            after_reasoning=self._stray_search,
            _lead=False,
            _first_index=self._ncalls,
        )
        sub.call_ids = self.call_ids
        self._events.extend(_feed_pieces(sub, text))
        self._events.extend(sub.finish(truncated=truncated))
        self._ncalls = sub._ncalls
        self._nincomplete += sub._nincomplete
        self.ops += sub.ops

    def _step_callstart(self, final: bool, truncated: bool) -> bool:
        i = self._leading_ws()
        rest = self._buf[i:]
        for op in self.fmt.openers:
            if rest.startswith(op):
                self._text(self._consume(i))
                self._ws = 0
                self._open_region(op)
                return True
        if not final and (rest == "" or any(op.startswith(rest) for op in self.fmt.openers)):
            return False
        self._ws = 0
        self._mode = _TEXT
        return True

    def _step_text(self, final: bool, truncated: bool) -> bool:
        markers = self._text_markers
        if not markers:
            self._text(self._consume(len(self._buf)))
            return False
        pos, m, safe = find_marker(self._buf, markers, final)
        self.ops += (pos + len(m)) if pos != -1 else len(self._buf)
        if pos == -1:
            self._text(self._consume(safe))
            if final:
                self._text(self._consume(len(self._buf)))
            return False
        self._text(self._consume(pos))
        if m in self._strays:
            self._consume(len(m))  # a stray closing reasoning tag: dropped
            return True
        self._open_region(m)
        return True

    def _open_region(self, opener: str) -> None:
        self._consume(len(opener))
        self._opener = opener
        self._parts = []
        self._region = self.fmt.region_scanner(opener)
        self._mode = _REGION

    def _step_region(self, final: bool, truncated: bool) -> bool:
        scanner = self._region
        assert scanner is not None  # this state has a region
        before = scanner.ops
        scanner.cut = final and truncated  # the text ends here because the token limit cut it
        try:
            consumed, ended = scanner.scan(self._buf, final)
        except Exception:  # noqa: BLE001 - a scanner bug must not lose text: the rest is the region
            consumed, ended = len(self._buf), False
        self.ops += scanner.ops - before + 1
        consumed = max(0, min(consumed, len(self._buf)))
        self._parts.append(self._consume(consumed))
        if ended:
            self._close_region(at_end=False, truncated=truncated)
            return True
        if final:
            self._parts.append(self._consume(len(self._buf)))
            self._close_region(at_end=True, truncated=truncated)
            return True
        return False

    def _close_region(self, *, at_end: bool, truncated: bool) -> None:
        body = "".join(self._parts)
        opener = self._opener
        self._parts = []
        self._region = None
        self._mode = _TEXT
        try:
            result = self.fmt.parse_region(
                opener, body, at_end=at_end, truncated=truncated and at_end, tools=self.tools
            )
        except Exception:  # noqa: BLE001 - parsers never raise on model output
            result = None
        cut = at_end and truncated
        if result is None:
            if cut:
                self._cut(opener, body)
            else:
                self._text(opener + body)
            return
        calls, leftover = result
        for pc in calls:
            self._emit_call(pc)
        if calls and self._opens and not leftover.strip() and not cut:
            self._buf = leftover + self._buf  # whitespace: held until what follows it is known
            self._mode = _POSTCALL
            return
        if cut and leftover.strip():
            # The complete calls before the cut count; the cut one is an incomplete call.
            lead = len(leftover) - len(leftover.lstrip())
            self._text(leftover[:lead])
            self._cut("", leftover[lead:])
        else:
            self._text(leftover)
            if calls:
                self._mode = self._after_calls()

    def _cut(self, opener: str, body: str) -> None:
        """A region the token limit cut: an incomplete call, or text where the family says so."""
        try:
            inc = self.fmt.cut_call(opener, body, self.tools)
        except Exception:  # noqa: BLE001 - never lose the text
            inc = None
        if inc is None:
            self._text(opener + body)
        else:
            self._nincomplete += 1
            self._events.append(ToolCallIncomplete(inc))

    def _undeclared(self, raw: str, name: str | None) -> None:
        """A call to a tool or recipient that was not declared: kept, shown, never run."""
        self._nincomplete += 1
        self._events.append(ToolCallIncomplete(IncompleteCall(raw, name, "undeclared")))

    def _emit_call(self, pc: ParsedCall) -> None:
        index = self._ncalls
        self._ncalls += 1
        written = pc.id if isinstance(pc.id, str) and pc.id else None
        if self.call_ids is not None:
            call_id = self.call_ids(written)
        else:
            call_id = written or f"call{index:05d}"
        args = pc.arguments
        schema = self._schemas.get(pc.name)
        if schema is not None:
            try:
                raw = self.fmt.raw_values if pc.raw_values is None else pc.raw_values
                args = type_arguments(args, schema, raw=raw)
            except Exception:  # noqa: BLE001 - keep as written for the dispatcher to reject
                args = pc.arguments
        call = ToolCall(call_id, pc.name, args, pc.raw)
        self._events.append(ToolCallStarted(index, call_id, pc.name))
        try:
            fragment = json.dumps(args, ensure_ascii=False, default=str)
        except (TypeError, ValueError):
            fragment = "{}"
        self._events.append(ToolCallArgsDelta(index, fragment))
        self._events.append(ToolCallDone(index, call))
