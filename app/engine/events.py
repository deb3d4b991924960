"""Typed events of the chat loop: what the engine tells whoever renders a conversation.

The UI turns each of these into a Qt signal; the CLI prints them (``--json``:
one per line). They are plain frozen dataclasses so any thread may pass them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any

from app.calls import ToolCall, ToolResult
from app.engine.formats.events import ReasoningDelta, TextDelta, ToolCallDone, ToolCallIncomplete

__all__ = [
    "ChatEvent",
    "ContextFull",
    "DoneEvent",
    "LiveProgress",
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


@dataclass(frozen=True, slots=True)
class ToolCallFinishedEvent:
    """A call ran (or was refused): ``outcome`` says what came of it."""

    call: ToolCall
    outcome: ToolResult


@dataclass(frozen=True, slots=True)
class NoticeEvent:
    """Something the user should know, shown as an inline banner above the reply.

    ``setting`` names the setting a link in the banner opens (e.g. ``chat.tool_format``).
    """

    code: str
    message: str
    setting: str | None = None


@dataclass(frozen=True, slots=True)
class ContextFull:
    """Why a turn was refused: the conversation no longer fits the model's context."""

    n_ctx: int
    tool_tokens: int = 0


@dataclass(frozen=True, slots=True)
class DoneEvent:
    """The turn ended. ``finish_reason`` is stop, length, cancelled, deadline, rounds or error.

    ``engine_crashed``: the error is the model's engine process dying (``error`` says how, in
    plain words); the model must be loaded again before the next turn. ``context_full``: the turn
    was refused because the conversation no longer fits. ``prompt_tokens_evaluated``: the prompt
    tokens actually read (the rest came from the KV cache). ``constraint``: the last generation's
    constraint, described (None: decoding was free). A remote session also says which ``parser``
    read the reply, which parser read each call (``call_parsers``: call id -> ``api:openai``,
    ``callisto:hermes``...), the ``remote`` API kind, its ``endpoint`` and ``template_source``,
    and when it failed, its ``error_code`` and the text shown so far (``kept_text``).
    ``draft_tokens`` / ``draft_accepted``: speculative decoding's drafted tokens that were verified
    in the turn's rounds, and how many of them the model accepted (``app.engine.speculative``;
    0 and 0 without drafting)."""

    finish_reason: str
    ttft_s: float | None = None
    tokens_per_s: float | None = None
    prompt_tokens: int = 0
    generated_tokens: int = 0
    rounds: int = 1
    error: str | None = None
    engine_crashed: bool = False
    prompt_tokens_evaluated: int | None = None
    tool_format: str | None = None
    constraint: str | None = None
    call_parsers: Mapping[str, str] = field(default_factory=dict)
    parser: str | None = None
    context_full: ContextFull | None = None
    error_code: str | None = None
    kept_text: str | None = None
    elapsed_s: float | None = None
    remote: str | None = None
    endpoint: str | None = None
    template_source: str | None = None
    draft_tokens: int = 0
    draft_accepted: int = 0


@dataclass
class LiveProgress:
    """A turn being written, as the generating thread sees it; read by polling from another thread
    (like ``LoadedModel.prompt_progress``), never an event. ``tokens``: the pieces decoded so far
    in the turn (about one a token; the done event has the exact count). ``call``: the call being
    written, as (a provisional id, the tool's name, its arguments so far as written) from the
    moment its name can be read, None outside a call; the provisional id is ``writing-N`` for the
    turn's N-th call region (the call's own id comes when it is complete). Each field is replaced
    whole, so a reader never sees half an update."""

    tokens: int = 0
    call: tuple[str, str, str] | None = None
    calls: int = 0  # the call regions of the turn that ended (a call, or one cut off)

    def see(self, ev: Any) -> None:
        """Follow one parser event of the reply: a call that ended ends the one being written."""
        if isinstance(ev, ToolCallDone | ToolCallIncomplete):
            self.calls += 1
            self.call = None

    def writing(self, raw: str | None, name: str | None) -> None:
        """The call region being read (``raw``: its text so far; None: there is none now) and the
        tool's name where it can be read."""
        if raw is None:
            self.call = None
        elif name:
            tail = raw[raw.find(name) + len(name) :] if name in raw else raw
            for key in ('"arguments"', '"parameters"'):
                if (i := tail.find(key)) >= 0:
                    tail = tail[i + len(key) :]
                    break
            self.call = (f"writing-{self.calls}", name, tail.lstrip(" \t\r\n\"':,=>"))


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
    ``result``, ``error``, ``duration_s``, ``approval``), and so is ``done`` (its fields, with
    ``context_full`` as ``{"n_ctx", "tool_tokens"}`` or None): the CLI's ``--json`` lines.
    """
    if isinstance(event, ToolCallStartedEvent | ToolCallFinishedEvent):
        c = event.call
        d: dict[str, Any] = {"call_id": c.id, "name": c.name, "arguments": c.arguments, "raw": c.raw}
        if isinstance(event, ToolCallStartedEvent):
            d["constrained"] = event.constrained
        if isinstance(event, ToolCallFinishedEvent):
            o = event.outcome
            d.update(
                result=o.content if o.error is None else None,
                error=o.error,
                duration_s=o.duration_s,
                approval=o.approval,
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
