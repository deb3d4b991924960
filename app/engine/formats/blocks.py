"""The machine of the families whose reply is a run of framed messages (Inkling's content blocks,
Muse Glimmer's addressed messages): each message is a header, then a body up to an end marker.

A family (a :class:`BlockFormat`) says what a header is (:meth:`BlockFormat.header`), which
markers end a body (``body_ends``; those in ``kept_ends`` belong to the message that they end,
the others begin the next message and are left for its header) and how a call message's body
reads (:meth:`BlockFormat.read_message_call`). :class:`BlockStream` runs every such family:

* a header decides the body's sink: reasoning, content, or a call (held until its body ends);
* reasoning and content bodies stream as they come (a partial end marker is held back);
* a call whose body ends at an end marker, or at the end of a reply that stopped normally, is a
  call when its family reads it, else its whole text (header, body, end marker) is content; a
  call body that the token limit cut is an incomplete call, never run;
* text where a header should stand that is no header is content, up to the next end marker;
  whitespace there is structure.

Every decision depends only on the text seen up to the point it is taken, so streaming equals
parsing for every split; each character is examined a bounded number of times (a header is read
from a window of at most ``max_header`` characters), so the work is linear in the reply.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

from app.calls import IncompleteCall
from app.engine.formats.base import OwnStreamFormat, ParsedCall, Stream
from app.engine.formats.events import ToolCallIncomplete
from app.engine.formats.sections import first_marker

__all__ = [
    "CALL",
    "CONTENT",
    "REASON",
    "BlockFormat",
    "BlockStream",
    "Header",
]

# What a message's body is.
REASON = "reason"
CONTENT = "content"
CALL = "call"
_HEAD = "head"
_DONE = "done"


class Header(NamedTuple):
    """What the family's header reader made of the text at a message's start.

    ``kind``: ``"wait"`` (more text decides), ``"skip"`` (``end`` characters are structure: drop
    them, read a header again), ``"text"`` (no header: ``buf[:end]`` and the body after it, up to
    the next end marker, are content), ``"open"`` (``buf[:end]`` is a header: ``body`` is its
    sink, ``name`` the recipient or tool name written in it), ``"cut"`` (the token limit cut the
    reply inside a header: ``buf[:end]`` is an incomplete call to ``name``, None where unknown).
    """

    kind: str
    end: int = 0
    body: str = ""
    name: str | None = None


WAIT = Header("wait")


class BlockStream(Stream):
    """The stream of a :class:`BlockFormat` (see the module docstring); same events and
    guarantees as every family's stream."""

    fmt: BlockFormat

    def __init__(self, fmt: BlockFormat, tools: list[dict[str, Any]] | None, **options: Any) -> None:
        # These families have no reasoning tags of the shared machine: ``orphan_close`` changes
        # nothing; ``in_reasoning`` (the prompt opened a reasoning message) starts in its body.
        super().__init__(fmt, tools, **options)
        self._head = ""  # the header of the call message being read
        self._name: str | None = None

    def _first_mode(self, in_reasoning: bool, lead: bool) -> str:
        return REASON if in_reasoning else _HEAD

    def _step_table(self) -> dict[str, Callable[[bool, bool], bool]]:
        return {
            _HEAD: self._h_head,
            REASON: self._h_sink,
            CONTENT: self._h_sink,
            CALL: self._h_call,
            _DONE: self._step_done,
        }

    def _h_head(self, final: bool, truncated: bool) -> bool:
        # Whitespace where a header should stand is structure (between messages, or before the
        # first): dropped as it comes, so a reader never looks at it twice.
        ws = len(self._buf) - len(self._buf.lstrip())
        self.ops += ws + 1
        if ws:
            self._consume(ws)
        if not self._buf:
            if final:
                self._mode = _DONE
            return False
        got = self.fmt.header(self._buf, final, truncated)
        self.ops += min(len(self._buf), self.fmt.max_header) + 1
        if got.kind == "wait":
            if final:  # a reader that waits at the end: what is left is content
                self._mode = CONTENT
                return True
            return False
        if got.kind == "skip":
            self._consume(max(1, got.end))
            return True
        if got.kind == "text":
            self._text(self._consume(got.end))
            self._mode = CONTENT
            return True
        head = self._consume(got.end)
        if got.kind == "cut":
            self._events.append(ToolCallIncomplete(IncompleteCall(head, got.name, "truncated")))
            self._consume(len(self._buf))
            self._mode = _DONE
            return False
        self._mode = got.body
        if got.body == CALL:
            self._head, self._name, self._parts = head, got.name, []
        return True

    def _body(self, final: bool) -> tuple[str, str | None]:
        """The body's text up to its end marker and the marker (None: not yet; at the end of the
        reply, the rest); a marker the body keeps is consumed, one that begins the next message
        is left for its header."""
        pos, m, safe = first_marker(self._buf, self.fmt.body_ends, 0, final)
        self.ops += (safe if pos == -1 else pos) + 1
        if pos == -1:
            return self._consume(len(self._buf) if final else safe), None
        text = self._consume(pos)
        if m in self.fmt.kept_ends:
            self._consume(len(m))
        return text, m

    def _h_sink(self, final: bool, truncated: bool) -> bool:
        text, m = self._body(final)
        (self._reason if self._mode == REASON else self._text)(text)
        if m is None and not final:
            return False
        self._mode = _HEAD if m is not None else _DONE
        return m is not None

    def _h_call(self, final: bool, truncated: bool) -> bool:
        text, m = self._body(final)
        self._parts.append(text)
        if m is None and not final:
            return False
        body = "".join(self._parts)
        self._parts = []
        raw = self._head + body + (m if m in self.fmt.kept_ends else "")
        if m is None and truncated:
            self._cut("", raw)  # cut off while writing the call: an incomplete call
        else:
            try:
                got = self.fmt.read_message_call(self._name, body, self._schemas)
            except Exception:  # noqa: BLE001 - parsers never raise on model output: the text stays
                got = None
            if got is None:
                self._text(raw)
            else:
                self._emit_call(ParsedCall(got[0], dict(got[1]), raw))
        self._mode = _HEAD if m is not None else _DONE
        return m is not None


class BlockFormat(OwnStreamFormat):
    """A family whose reply is a run of framed messages (see the module docstring)."""

    stream_class = BlockStream

    body_ends: tuple[str, ...] = ()  # markers that end a body (none may hold another)
    kept_ends: tuple[str, ...] = ()  # the ones that belong to the body they end
    max_header = 256  # the longest header read

    def header(self, buf: str, final: bool, truncated: bool) -> Header:  # pragma: no cover - abstract
        """What stands at the start of ``buf`` where a message begins (see :class:`Header`);
        ``buf`` is not empty and starts with no whitespace (the stream dropped it)."""
        raise NotImplementedError

    def read_message_call(
        self, name: str | None, body: str, schemas: dict[str, dict[str, Any]]
    ) -> tuple[str, dict[str, Any]] | None:  # pragma: no cover - abstract
        """The call a call message's ``body`` holds (``name``: what its header named), or None
        (the message is text)."""
        raise NotImplementedError
