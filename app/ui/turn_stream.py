"""One turn's events, from the chat session to the window's signals (Qt-free).

Text and reasoning deltas are coalesced: flushed at most every ``flush_s`` (30 ms) and whenever
another kind of event comes, so order is kept and the UI thread gets a few dozen signals a second
whatever the token rate. Every event also goes to the core's turn recorder (history).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from app.engine.events import (
    DoneEvent,
    NoticeEvent,
    ReasoningEvent,
    TextEvent,
    ToolCallFinishedEvent,
    ToolCallIncomplete,
    ToolCallStartedEvent,
)

if TYPE_CHECKING:
    from app.engine.recorder import TurnRecorder

__all__ = ["StreamCount", "TurnSinks", "stream_turn"]

log = logging.getLogger(__name__)


@dataclass
class StreamCount:
    """The text and reasoning pieces a turn has streamed so far, read by the window while it runs
    (an engine that does not count its tokens as it writes, a remote one: about one a token)."""

    pieces: int = 0


@dataclass
class TurnSinks:
    """Where each kind of event goes (the worker's signals' ``emit``)."""

    text: Callable[[str], None]
    reasoning: Callable[[str], None]
    tool_started: Callable[[ToolCallStartedEvent], None]
    tool_finished: Callable[[ToolCallFinishedEvent], None]
    notice: Callable[[NoticeEvent], None]
    incomplete: Callable[[ToolCallIncomplete], None] | None = None  # a cut-off or undeclared call


def stream_turn(
    events: Callable[[], Iterable[Any]],
    sinks: TurnSinks,
    recorder: TurnRecorder | None,
    *,
    flush_s: float,
    cancelled: Callable[[], bool],
    count: StreamCount | None = None,
) -> tuple[DoneEvent, int]:
    """Run the turn; returns its done event and how many text/reasoning deltas it streamed."""
    pending_kind: str | None = None
    pending: list[str] = []
    last_flush = time.monotonic()
    done: DoneEvent | None = None
    deltas = 0

    def flush() -> None:
        nonlocal pending_kind, pending, last_flush
        if pending:
            (sinks.text if pending_kind == "text" else sinks.reasoning)("".join(pending))
        pending_kind, pending = None, []
        last_flush = time.monotonic()

    try:
        for ev in events():
            if isinstance(ev, TextEvent | ReasoningEvent):
                kind = "text" if isinstance(ev, TextEvent) else "reasoning"
                deltas += 1
                if count is not None:
                    count.pieces = deltas
                if pending_kind not in (None, kind):
                    flush()
                pending_kind = kind
                pending.append(ev.text)
                if time.monotonic() - last_flush >= flush_s:
                    flush()
                if recorder is not None:
                    recorder.observe(ev)
                continue
            flush()
            if recorder is not None:
                recorder.observe(ev)
            if isinstance(ev, ToolCallStartedEvent):
                sinks.tool_started(ev)
            elif isinstance(ev, ToolCallFinishedEvent):
                sinks.tool_finished(ev)
            elif isinstance(ev, NoticeEvent):
                sinks.notice(ev)
            elif isinstance(ev, ToolCallIncomplete) and sinks.incomplete is not None:
                sinks.incomplete(ev)
            elif isinstance(ev, DoneEvent):
                done = ev
    except Exception as exc:  # noqa: BLE001 - an engine bug must not kill the worker thread: it ends the turn
        flush()
        log.exception("the turn failed")
        done = DoneEvent(finish_reason="error", error=str(exc) or type(exc).__name__)
    flush()
    if done is None:
        done = DoneEvent(finish_reason="cancelled" if cancelled() else "stop")
    return done, deltas
