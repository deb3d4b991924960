"""What every chat loop shares: the local :class:`~app.engine.chat.ChatSession`, the remote
session (``app.engine.remote``) and the API server's turns (``app.server``).

- :class:`CallIds`: the one rule for a call's id in a conversation.
- :class:`Reply`: what one generation wrote, collected from the parser's events.
- :func:`end_round`: the reply into the conversation, and whether its calls run.
- :func:`dispatch_call`: one call run through the dispatcher, with its events and the tool message.
- :func:`cut_after_last_user`: what ``regenerate()`` drops.
- :func:`tokens_per_s`: the rate a :class:`~app.engine.events.DoneEvent` reports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from app.calls import IncompleteCall, ToolCall
from app.engine.events import ChatEvent, NoticeEvent, ToolCallFinishedEvent, ToolCallStartedEvent
from app.engine.formats.events import ReasoningDelta, TextDelta, ToolCallDone, ToolCallIncomplete
from app.engine.messages import Message, is_valid_call_id, local_call_id

__all__ = ["CallIds", "Reply", "cut_after_last_user", "dispatch_call", "end_round", "tokens_per_s"]

_API_ID_MAX = 128  # longer ids from an endpoint are replaced (no API documents longer ones)


class CallIds:
    """The ids of one conversation's calls, each used once.

    A parser's id (the one the model wrote) is kept when every template accepts it (9 letters or
    digits) and it is new in the conversation; otherwise the call gets the next fresh id.
    ``fresh(n)`` makes the n-th candidate: ``call00000``, ``call00001``... by default."""

    def __init__(self, used: Iterable[str] = (), fresh: Callable[[int], str] = local_call_id):
        self.used: set[str] = set(used)
        self._fresh = fresh
        self._n = 0

    @classmethod
    def of(cls, messages: Iterable[Message], **kwargs: Any) -> CallIds:
        """The ids already used by the calls in ``messages``."""
        return cls((c.id for m in messages for c in m.tool_calls), **kwargs)

    def issue(self, proposed: str | None) -> str:
        """``proposed`` when a template accepts it and it is new here, else a fresh id."""
        if is_valid_call_id(proposed) and proposed not in self.used:
            self.used.add(proposed)
            return proposed
        while True:
            cid = self._fresh(self._n)
            self._n += 1
            if cid not in self.used:
                self.used.add(cid)
                return cid

    def keep(self, proposed: str | None) -> str:
        """An endpoint's own id (an API call's result must come back with it) when it is new here
        and not absurdly long, else a fresh id."""
        if (
            isinstance(proposed, str)
            and proposed
            and proposed not in self.used
            and len(proposed) <= _API_ID_MAX
        ):
            self.used.add(proposed)
            return proposed
        return self.issue(None)


class Reply:
    """What one generation wrote: its text, reasoning, the calls to run and the calls not to."""

    def __init__(self) -> None:
        self.content: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[ToolCall] = []
        self.incomplete: list[IncompleteCall] = []

    def take(self, ev: Any) -> Iterator[ChatEvent]:
        """Keep one parser event. Text and reasoning pass on as they are; a complete call is kept
        for dispatch (the loop announces it when it runs); a call that is not one to run passes on
        and stays with the reply."""
        if isinstance(ev, TextDelta):
            if ev.text:
                self.content.append(ev.text)
                yield ev
        elif isinstance(ev, ReasoningDelta):
            if ev.text:
                self.reasoning.append(ev.text)
                yield ev
        elif isinstance(ev, ToolCallDone):
            self.calls.append(ev.call)
        elif isinstance(ev, ToolCallIncomplete):
            self.incomplete.append(ev.call)
            yield ev


def end_round(
    messages: list[Message], reply: Reply, finish: str, *, rounds: int, max_rounds: int
) -> tuple[str, list[ChatEvent], bool]:
    """Append ``reply`` to ``messages`` as the assistant's message; return the turn's finish
    reason so far, the events to yield, and whether to run the reply's calls.

    Calls run only from a reply that ended normally (``finish == "stop"``) within the round limit.
    Otherwise nothing runs: the calls' text is kept in the reply (and shown) so nothing is lost or
    hidden, a notice says why, and at the round limit the finish becomes ``rounds``."""
    text, reasoning = "".join(reply.content), "".join(reply.reasoning)
    calls = reply.calls
    if calls and (finish != "stop" or rounds >= max_rounds):
        names = ", ".join(c.name for c in calls)
        if finish == "stop":
            finish = "rounds"
            msg = (
                f"Stopped after {max_rounds} rounds of tool calls (the round limit); "
                f"the last call(s) ({names}) were not run."
            )
        else:
            msg = f"The reply ended ({finish}) before the model's turn was over; its call(s) ({names}) were not run."
        raw = "".join(c.raw for c in calls)
        events: list[ChatEvent] = [TextDelta(raw)] if raw else []
        events.append(NoticeEvent(code="round_limit" if finish == "rounds" else "calls_not_run", message=msg))
        messages.append(
            Message(
                role="assistant", content=text + raw, reasoning=reasoning, incomplete_calls=reply.incomplete
            )
        )
        return finish, events, False
    messages.append(
        Message(
            role="assistant",
            content=text,
            reasoning=reasoning,
            tool_calls=list(calls),
            incomplete_calls=reply.incomplete,
        )
    )
    return finish, [], bool(calls)


def cut_after_last_user(messages: list[Message]) -> None:
    """Drop everything after the last user message (``regenerate()``); ValueError when there is none."""
    idx = max((i for i, m in enumerate(messages) if m.role == "user"), default=None)
    if idx is None:
        raise ValueError("there is no user message to reply to")
    del messages[idx + 1 :]


def dispatch_call(
    dispatcher: Any, call: ToolCall, messages: list[Message], *, constrained: str | None = None
) -> Iterator[ChatEvent]:
    """Run ``call``: its started and finished events, and its result appended as a tool message."""
    yield ToolCallStartedEvent(call, constrained=constrained)
    result = dispatcher.dispatch(call)
    yield ToolCallFinishedEvent(call, result)
    messages.append(
        Message(role="tool", content=result.to_model_text(), tool_call_id=call.id, name=call.name)
    )


def tokens_per_s(tokens: int, seconds: float) -> float | None:
    """Generation speed, or None when it means nothing (under two tokens, no time measured)."""
    return tokens / seconds if seconds > 0 and tokens > 1 else None
