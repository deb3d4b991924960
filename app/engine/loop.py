"""What every chat loop shares: the local :class:`~app.engine.chat.ChatSession`, the remote
session (``app.engine.remote``) and the API server's turns (``app.server``).

- :class:`CallIds`: the one rule for a call's id in a conversation.
- :func:`cut_after_last_user`: what ``regenerate()`` drops.
- :func:`dispatch_call`: one call run through the dispatcher, with its events and the tool message.
- :func:`tokens_per_s`: the rate a :class:`~app.engine.events.DoneEvent` reports.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from app.calls import ToolCall
from app.engine.events import ChatEvent, ToolCallFinishedEvent, ToolCallStartedEvent
from app.engine.messages import Message, is_valid_call_id, local_call_id

__all__ = ["CallIds", "cut_after_last_user", "dispatch_call", "tokens_per_s"]

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
            assert proposed is not None
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
