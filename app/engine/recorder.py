"""Saving a turn as it streams and when it ends (Qt-free): the window and the CLI share it.

A :class:`TurnRecorder` watches the chat loop's events for one turn of one conversation:

* :meth:`begin` stores an empty streaming reply, so a killed process still shows what it had;
* :meth:`observe` keeps the text and reasoning, saves the reply so far at most every
  ``partial_save_s`` seconds, saves a notice at once, and keeps what came of each tool call;
* :meth:`finish` stores the turn: a stopped or failed reply keeps what was shown (marked
  interrupted or error); a finished one replaces the streaming reply with the turn's messages
  (assistant replies, their calls with results, tool results) in one transaction, so a failed
  save loses nothing that was saved before.

Saving never breaks the chat: a failure is reported through ``on_error`` and the turn goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from app.calls import ToolResult
from app.engine.events import DoneEvent, NoticeEvent, ToolCallFinishedEvent, ToolCallStartedEvent
from app.engine.formats.events import ReasoningDelta, TextDelta

if TYPE_CHECKING:
    from app.engine.messages import Message
    from app.storage.history import History, MessageRecord, MessageStatus

__all__ = ["TurnRecorder"]

_FAILED = object()
_AUTHOR_KEYS = ("model_name", "made_model")


class TurnRecorder:
    """Records one turn of conversation ``conversation_id`` in ``history``.

    ``model`` (a file name or path) and ``settings`` (the settings the turn was made with) are
    stored with each reply of the turn, the settings with its user message too (what Regenerate
    sends again). ``author`` is what the reply keeps beside ``model`` of what wrote it: the name
    shown for the model (``model_name``) and the made model chatted with (``made_model``).
    ``on_error`` receives one sentence when saving fails.
    """

    def __init__(
        self,
        history: History,
        conversation_id: int,
        *,
        model: str | None = None,
        author: Mapping[str, str] | None = None,
        settings: Mapping[str, Any] | None = None,
        on_error: Callable[[str], None] | None = None,
        partial_save_s: float = 1.0,
    ) -> None:
        self.history = history
        self.conversation_id = conversation_id
        self.model = model
        self.author = {k: v for k, v in (author or {}).items() if k in _AUTHOR_KEYS and v}
        self.settings = dict(settings or {})
        self.on_error = on_error
        self.partial_save_s = partial_save_s
        self.partial: MessageRecord | None = None
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.notices: list[dict[str, Any]] = []
        self.results: dict[str, ToolResult] = {}
        self.decoding: dict[str, str | None] = {}  # call id -> the constraint that held it (None: free)
        self.turn_start: int | None = None  # Continue: the stored turn's first message (see resume)
        self._last_save = time.monotonic()

    # -- saving with a clear error -----------------------------------------------------------

    def _save(self, what: str, fn: Callable[[], Any]) -> Any:
        """``fn()``'s value, or ``_FAILED`` (reported through ``on_error``) when it raised."""
        try:
            return fn()
        except Exception as exc:  # noqa: BLE001 - saving must never break the chat; the user is told
            if self.on_error is not None:
                self.on_error(f"Could not save {what}: {exc}")
            return _FAILED

    # -- the turn ----------------------------------------------------------------------------

    def begin(self) -> None:
        """Store the empty streaming reply (call before the first event)."""
        partial = self._save(
            "the conversation", lambda: self.history.begin_assistant_message(self.conversation_id)
        )
        self.partial = None if partial is _FAILED else partial
        self._last_save = time.monotonic()

    def resume(self) -> bool:
        """Continue (instead of :meth:`begin`): the turn's last stored reply goes on in place. It is
        the partial reply (its text so far is the cut text), and the finished turn replaces the
        stored turn from its first message, keeping its banners and how its calls were decoded.
        False when the conversation does not end with a reply (then nothing is saved)."""

        def load() -> Any:
            return self.history.load_conversation(self.conversation_id).messages

        msgs = self._save("the conversation", load)
        if msgs is _FAILED:
            return False
        last_user = max((i for i, m in enumerate(msgs) if m.role == "user"), default=-1)
        turn = msgs[last_user + 1 :]
        if not turn or turn[-1].role != "assistant":
            return False
        self.partial, self.turn_start = turn[-1], turn[0].id
        self.text = [turn[-1].content]
        self.reasoning = [turn[-1].reasoning] if turn[-1].reasoning else []
        self.notices = [n for m in turn for n in m.notices]
        for m in turn:
            decoding = m.extra.get("call_decoding")
            if isinstance(decoding, dict):
                self.decoding.update(decoding)
            for tc in m.tool_calls:
                if tc.outcome is not None:
                    self.results[tc.call_id] = tc.outcome
        self._last_save = time.monotonic()
        return True

    def user_message(self, text: str, images: Sequence[bytes] = ()) -> None:
        """Store the user's message of this turn (and its ``images``, the files' bytes), with its
        settings (call before :meth:`begin`)."""
        turn = self.settings or None
        self._save(
            "the conversation",
            lambda: self.history.append_message(
                self.conversation_id, "user", text, turn_settings=turn, images=images
            ),
        )

    def observe(self, ev: Any) -> None:
        """Take one chat event of the turn."""
        if isinstance(ev, TextDelta | ReasoningDelta):
            (self.text if isinstance(ev, TextDelta) else self.reasoning).append(ev.text)
            now = time.monotonic()
            if self.partial is not None and now - self._last_save >= self.partial_save_s:
                self._last_save = now
                pid, text, reasoning = self.partial.id, "".join(self.text), "".join(self.reasoning) or None
                self._save("the reply so far", lambda: self.history.update_partial(pid, text, reasoning))
        elif isinstance(ev, ToolCallStartedEvent):
            self.decoding[ev.call.id] = ev.constrained
        elif isinstance(ev, ToolCallFinishedEvent):
            self.results[ev.call.id] = ev.outcome
        elif isinstance(ev, NoticeEvent):
            self.notices.append({"code": ev.code, "message": ev.message, "setting": ev.setting})
            if self.partial is not None:  # saved at once: a killed app still shows it
                pid = self.partial.id
                self._save("a notice", lambda: self.history.add_notice(pid, ev.code, ev.message, ev.setting))

    def finish(self, done: DoneEvent, messages: Sequence[Message]) -> bool:
        """Store the turn that ended with ``done``; ``messages`` is the session's conversation
        (the turn is what follows its last user message). True when it was saved."""
        if self.partial is None:
            return False
        text, reasoning = "".join(self.text), "".join(self.reasoning) or None
        if done.finish_reason in ("cancelled", "error"):
            status: MessageStatus = "interrupted" if done.finish_reason == "cancelled" else "error"
            pid = self.partial.id
            extra = {**self._extra_base(), "stats": self._stats(done)}  # "stopped" reads as it did live
            return (
                self._save(
                    "the reply",
                    lambda: self.history.finish_message(
                        pid, status, content=text, reasoning=reasoning, error=done.error, extra=extra
                    ),
                )
                is not _FAILED
            )
        turn = self._turn_messages(done, messages)
        pid = self.turn_start if self.turn_start is not None else self.partial.id
        return (
            self._save("the reply", lambda: self.history.record_turn(self.conversation_id, pid, turn))
            is not _FAILED
        )

    def _turn_messages(self, done: DoneEvent, messages: Sequence[Message]) -> list[Any]:
        from app.storage.history import TurnMessage

        msgs = list(messages)
        last_user = max((i for i, m in enumerate(msgs) if m.role == "user"), default=-1)
        stats = self._stats(done)
        extra_base = self._extra_base()
        out = []
        notices = list(self.notices)
        assistants = [i for i in range(last_user + 1, len(msgs)) if msgs[i].role == "assistant"]
        for i in range(last_user + 1, len(msgs)):
            m = msgs[i]
            extra = dict(extra_base) if m.role == "assistant" else {}
            if assistants and i == assistants[-1]:
                extra["stats"] = stats
            if m.tool_calls:  # how each call was decoded and, from a remote engine, who read it
                extra["call_decoding"] = {c.id: self.decoding.get(c.id) for c in m.tool_calls}
                parsers = {c.id: done.call_parsers[c.id] for c in m.tool_calls if c.id in done.call_parsers}
                if parsers:
                    extra["call_parsers"] = parsers
            if m.incomplete_calls:  # cut off or undeclared calls: shown with the reply, never run
                extra["incomplete_calls"] = [c.to_dict() for c in m.incomplete_calls]
            out.append(
                TurnMessage(
                    role=m.role,
                    content=m.content,
                    reasoning=m.reasoning or None,
                    tool_call_id=m.tool_call_id,
                    name=m.name,
                    tool_calls=tuple(m.tool_calls),
                    results=dict(self.results),
                    notices=notices if m.role == "assistant" else (),
                    extra=extra,
                )
            )
            if m.role == "assistant":
                notices = []  # the banners belong above the turn's first reply
        return out

    def _extra_base(self) -> dict[str, Any]:
        extra: dict[str, Any] = {}
        if self.model:
            extra["model"] = self.model
        extra.update(self.author)
        if self.settings:
            extra["settings"] = self.settings
        return extra

    @staticmethod
    def _stats(done: DoneEvent) -> dict[str, Any]:
        return {
            "finish_reason": done.finish_reason,
            "prompt_tokens": done.prompt_tokens,
            "generated_tokens": done.generated_tokens,
            "tokens_per_s": done.tokens_per_s,
            "ttft_s": done.ttft_s,
            "elapsed_s": done.elapsed_s,
            "rounds": done.rounds,
            "draft_tokens": done.draft_tokens,
            "draft_accepted": done.draft_accepted,
        }
