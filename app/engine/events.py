"""Typed events of the chat loop: what the engine tells whoever renders a conversation.

The UI turns each of these into a Qt signal; the CLI prints them (``--json``:
one per line). They are plain frozen dataclasses so any thread may pass them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from app.calls import ToolCall, ToolResult
from app.engine.formats.events import ReasoningDelta, TextDelta, ToolCallIncomplete

__all__ = [
    "ChatEvent",
    "DoneEvent",
    "NoticeEvent",
    "ReasoningEvent",
    "TextEvent",
    "ToolCallFinishedEvent",
    "ToolCallIncomplete",
    "ToolCallStartedEvent",
    "event_to_dict",
]


# The parser's text events are the chat loop's: one vocabulary from the parser to the view.
TextEvent = TextDelta
ReasoningEvent = ReasoningDelta


@dataclass(frozen=True, slots=True)
class ToolCallStartedEvent:
    """A complete call was parsed and is about to be dispatched. ``constrained`` describes the
    grammar that held it (``app.engine.constraints``), or None when decoding was free."""

    call: ToolCall
    constrained: str | None = None

    @property
    def call_id(self) -> str:
        return self.call.id

    @property
    def name(self) -> str:
        return self.call.name

    @property
    def arguments(self) -> dict[str, Any] | str:
        return self.call.arguments

    @property
    def raw(self) -> str:
        return self.call.raw


@dataclass(frozen=True, slots=True)
class ToolCallFinishedEvent:
    """A call ran (or was refused): ``outcome`` says what came of it."""

    call: ToolCall
    outcome: ToolResult

    @property
    def call_id(self) -> str:
        return self.call.id

    @property
    def name(self) -> str:
        return self.call.name

    @property
    def arguments(self) -> dict[str, Any] | str:
        return self.call.arguments

    @property
    def raw(self) -> str:
        return self.call.raw

    @property
    def result(self) -> str | None:
        """The tool's output, or None when it failed."""
        return self.outcome.content if self.outcome.error is None else None

    @property
    def error(self) -> str | None:
        return self.outcome.error

    @property
    def duration_s(self) -> float:
        return self.outcome.duration_s

    @property
    def approval(self) -> str | None:  # "auto", "allowed_once", "always", "denied", "timeout"
        return self.outcome.approval


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
    """The turn ended. ``finish_reason`` is stop, length, cancelled, deadline, rounds or error.

    ``engine_crashed``: the error is the model's engine process dying (``error`` says how, in
    plain words); the model must be loaded again before the next turn."""

    finish_reason: str
    ttft_s: float | None = None
    tokens_per_s: float | None = None
    prompt_tokens: int = 0
    generated_tokens: int = 0
    rounds: int = 1
    error: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)
    engine_crashed: bool = False


# A call the model did not finish (or addressed to an undeclared tool) is the parser's own event:
# its raw text is kept, it is never run and never content.
ChatEvent = (
    TextEvent
    | ReasoningEvent
    | ToolCallStartedEvent
    | ToolCallFinishedEvent
    | ToolCallIncomplete
    | NoticeEvent
    | DoneEvent
)


def event_to_dict(event: ChatEvent) -> dict[str, Any]:
    """A JSON-ready dict with a ``type`` key (``text``, ``tool_call_started``...).

    Tool-call events are flat (``call_id``, ``name``, ``arguments``, ``raw`` and, once finished,
    ``result``, ``error``, ``duration_s``, ``approval``): the CLI's ``--json`` lines.
    """
    if isinstance(event, ToolCallStartedEvent | ToolCallFinishedEvent):
        c = event.call
        d: dict[str, Any] = {"call_id": c.id, "name": c.name, "arguments": c.arguments, "raw": c.raw}
        if isinstance(event, ToolCallStartedEvent):
            d["constrained"] = event.constrained
        if isinstance(event, ToolCallFinishedEvent):
            d.update(
                result=event.result, error=event.error, duration_s=event.duration_s, approval=event.approval
            )
        return {
            "type": "tool_call_started" if isinstance(event, ToolCallStartedEvent) else "tool_call_finished",
            **d,
        }
    if isinstance(event, ToolCallIncomplete):
        return {"type": "tool_call_incomplete", **event.call.to_dict()}
    names = {
        TextDelta: "text",
        ReasoningDelta: "reasoning",
        NoticeEvent: "notice",
        DoneEvent: "done",
    }
    return {"type": names[type(event)], **asdict(event)}
