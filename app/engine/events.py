"""Typed events of the chat loop: what the engine tells whoever renders a conversation.

The UI turns each of these into a Qt signal; the CLI prints them (``--json``:
one per line). They are plain frozen dataclasses so any thread may pass them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

__all__ = [
    "ChatEvent",
    "DoneEvent",
    "NoticeEvent",
    "ReasoningEvent",
    "TextEvent",
    "ToolCallFinishedEvent",
    "ToolCallStartedEvent",
    "event_to_dict",
]


@dataclass(frozen=True, slots=True)
class TextEvent:
    """Visible reply text, already free of tool-call markers."""

    text: str


@dataclass(frozen=True, slots=True)
class ReasoningEvent:
    """Text of the model's reasoning ("Thinking") block."""

    text: str


@dataclass(frozen=True, slots=True)
class ToolCallStartedEvent:
    """A complete call was parsed and is about to be dispatched."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    raw: str = ""


@dataclass(frozen=True, slots=True)
class ToolCallFinishedEvent:
    """A call ran (or was refused): exactly one of ``result`` / ``error`` is set."""

    call_id: str
    name: str
    arguments: dict[str, Any]
    raw: str = ""
    result: str | None = None
    error: str | None = None
    duration_s: float = 0.0
    approval: str | None = None  # "auto", "allowed_once", "always", "denied", "timeout"


@dataclass(frozen=True, slots=True)
class NoticeEvent:
    """Something the user should know, shown as an inline banner above the reply.

    ``setting`` names the setting a link in the banner opens (e.g. ``chat.tool_format``).
    """

    code: str
    message: str
    setting: str | None = None


@dataclass(frozen=True, slots=True)
class DoneEvent:
    """The turn ended. ``finish_reason`` is stop, length, cancelled, deadline, rounds or error."""

    finish_reason: str
    ttft_s: float | None = None
    tokens_per_s: float | None = None
    prompt_tokens: int = 0
    generated_tokens: int = 0
    rounds: int = 1
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


ChatEvent = TextEvent | ReasoningEvent | ToolCallStartedEvent | ToolCallFinishedEvent | NoticeEvent | DoneEvent


def event_to_dict(event: ChatEvent) -> dict[str, Any]:
    """A JSON-ready dict with a ``type`` key (``text``, ``tool_call_started``...)."""
    names = {
        TextEvent: "text",
        ReasoningEvent: "reasoning",
        ToolCallStartedEvent: "tool_call_started",
        ToolCallFinishedEvent: "tool_call_finished",
        NoticeEvent: "notice",
        DoneEvent: "done",
    }
    return {"type": names[type(event)], **asdict(event)}
