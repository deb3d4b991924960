"""One tool call as the window shows it: the call, what came of it, how it was decoded, who read it.

The side panel (:class:`app.ui.tool_panel.ToolCallPanel`) and the card inline in the reply
(:class:`app.ui.chat.ToolCard`) show the same :class:`CallView`, and its :attr:`CallView.status` is
the one rule for "running", "ok", "error" and "denied". A view is built from the turn's events
(live) or from a stored call (a reopened conversation), and replaced, never changed, when more is
known. Qt-free.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Literal

from app.calls import DENIED_OUTCOMES, ToolCall, ToolResult
from app.engine.events import ToolCallFinishedEvent, ToolCallStartedEvent

if TYPE_CHECKING:
    from app.storage.history import StoredToolCall

__all__ = ["DECODING_NOT_RECORDED", "CallStatus", "CallView", "call_summary", "format_duration", "short"]

CallStatus = Literal["writing", "running", "ok", "error", "denied"]

#: How a reopened call saved before Callisto kept its decoding is described.
DECODING_NOT_RECORDED = "not recorded (saved by an older Callisto)"


@dataclass(frozen=True, slots=True)
class CallView:
    """A call (``call``) and what came of it (``outcome``, None while it runs or when it never ran).

    ``constrained`` describes the constraint that held the call while it was decoded (None: decoded
    freely, parsed after the fact); ``parser`` says which parser read it (a remote engine's
    ``DoneEvent.call_parsers`` value such as ``api:openai``; None for the local engine).
    ``writing``: the model is still writing the call (its arguments so far are ``call.arguments``,
    as text). ``decoding_known`` is False for a stored call saved before its decoding was kept.
    """

    call: ToolCall
    outcome: ToolResult | None = None
    constrained: str | None = None
    parser: str | None = None
    writing: bool = False
    decoding_known: bool = True

    @property
    def status(self) -> CallStatus:
        if self.writing:
            return "writing"
        if self.outcome is None:
            return "running"
        if self.outcome.ok:
            return "ok"
        return "denied" if self.outcome.approval in DENIED_OUTCOMES else "error"

    @property
    def failed(self) -> bool:
        """The call did not do its work (an error, a denial or a timeout)."""
        return self.status in ("error", "denied")

    def finished(self, outcome: ToolResult) -> CallView:
        """This call with what came of it."""
        return replace(self, outcome=outcome)

    def read_by(self, parser: str) -> CallView:
        """This call, read by ``parser``."""
        return replace(self, parser=parser)

    @classmethod
    def from_event(cls, ev: ToolCallStartedEvent | ToolCallFinishedEvent) -> CallView:
        if isinstance(ev, ToolCallStartedEvent):
            return cls(ev.call, constrained=ev.constrained)
        return cls(ev.call, ev.outcome)

    @property
    def decoding(self) -> str:
        """How the call was decoded, in words (the side panel's "Decoding" line)."""
        if not self.decoding_known:
            return DECODING_NOT_RECORDED
        return (
            f"held to its schema ({self.constrained})" if self.constrained else "free (parsed after the fact)"
        )

    @classmethod
    def being_written(cls, call_id: str, name: str, arguments: str) -> CallView:
        """A call the model is writing: its name, and its arguments so far (JSON text)."""
        return cls(ToolCall(id=call_id, name=name, arguments=arguments), writing=True)

    @classmethod
    def from_stored(cls, stored: StoredToolCall, extra: Mapping[str, Any] | None = None) -> CallView:
        """A stored call; ``extra`` is its reply's extra JSON (how each call was decoded, which
        parser read it)."""
        extra = extra or {}
        decoding = extra.get("call_decoding")
        parsers = extra.get("call_parsers")
        known = isinstance(decoding, dict) and stored.call_id in decoding
        constrained = decoding.get(stored.call_id) if known and isinstance(decoding, dict) else None
        parser = parsers.get(stored.call_id) if isinstance(parsers, dict) else None
        return cls(
            stored.call,
            stored.outcome,
            constrained=constrained if isinstance(constrained, str) else None,
            parser=parser if isinstance(parser, str) else None,
            decoding_known=known,
        )


def short(value: Any, limit: int) -> str:
    """``value`` on one line, cut to ``limit`` characters."""
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def call_summary(call: ToolCall, limit: int = 60) -> str:
    """``calculator(expression="6*7")``: the call in one line, long values cut."""
    arguments = call.arguments
    if isinstance(arguments, dict):
        args = ", ".join(
            f"{k}={json.dumps(v, ensure_ascii=False) if isinstance(v, str) else short(v, 30)}"
            for k, v in arguments.items()
        )
    else:
        args = str(arguments or "")
    return f"{call.name}({short(args, limit)})"


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    ms = seconds * 1000
    return f"{ms:.1f} ms" if ms < 10 else f"{ms:.0f} ms" if ms < 10_000 else f"{seconds:.1f} s"
