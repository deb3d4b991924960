"""Streaming events of a tool-call format parser.

Folding the events of any split of a reply gives exactly ``Format.parse`` of the whole reply:
``content`` is the concatenation of every :class:`TextDelta`, ``reasoning`` of every
:class:`ReasoningDelta`, and ``tool_calls`` the ``call`` of every :class:`ToolCallDone`, in order.

``index`` is the position the call will take in ``reply.tool_calls``. A
:class:`ToolCallStarted` that is not followed by a :class:`ToolCallDone` of the same index was
abandoned (malformed): its text then arrives as :class:`TextDelta`, and a later call reuses the
index. A call the model did not finish (generation stopped inside it) or addressed to a tool that
was not declared is a :class:`ToolCallIncomplete`: never a call to run, never content; its raw
text is kept (``reply.incomplete_calls``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.calls import IncompleteCall, ToolCall

__all__ = [
    "FormatEvent",
    "ReasoningDelta",
    "TextDelta",
    "ToolCallArgsDelta",
    "ToolCallDone",
    "ToolCallIncomplete",
    "ToolCallStarted",
]


@dataclass(frozen=True, slots=True)
class TextDelta:
    """Visible reply text, free of call markers."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """Text of the model's reasoning block."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    index: int
    id: str
    name: str


@dataclass(frozen=True, slots=True)
class ToolCallArgsDelta:
    """A fragment of the call's arguments as JSON text (the fragments of a call concatenate to it)."""

    index: int
    fragment: str


@dataclass(frozen=True, slots=True)
class ToolCallDone:
    index: int
    call: ToolCall


@dataclass(frozen=True, slots=True)
class ToolCallIncomplete:
    """A call that is not a call to run: cut off by the token limit, or to an undeclared tool."""

    call: IncompleteCall


FormatEvent = (
    TextDelta | ReasoningDelta | ToolCallStarted | ToolCallArgsDelta | ToolCallDone | ToolCallIncomplete
)
