"""The one chat loop: a turn of rounds (render -> generate -> parse -> dispatch -> end of the
round), shared by the local :class:`~app.engine.chat.ChatSession`, the remote session
(``app.engine.remote``) and the API server's turns (``app.server``).

- :class:`Session`: what the window and the CLI hold: a conversation that ``send()`` and
  ``regenerate()`` answer with :mod:`~app.engine.events`.
- :class:`TurnOptions`: what one turn may choose instead of its session (Regenerate and Continue
  pass the settings the turn was first sent with).
- :class:`ReplySource`: what each of them supplies: how one reply is generated and parsed
  (``generate_reply``, a generator of parser events that returns a :class:`RoundEnd`) and what
  it adds to the turn's :class:`~app.engine.events.DoneEvent` (``finish_turn``).
- :func:`run_rounds`: the loop itself. Each round's events pass through one
  :class:`~app.engine.formats.Reply`; at the end of a round the reply joins the conversation
  (:func:`end_round`) and its calls run (:func:`dispatch_call`) until a reply has none, the turn
  is cancelled or the round limit is reached. Without a dispatcher the calls are the caller's:
  they pass on as they are parsed and the turn ends with the reply (the API server).

Call lists end. A reply's list of calls ends at its ``max_calls``-th call, or at a call identical
to an earlier one of the same reply (:func:`call_key`: same name, same arguments as JSON values):
the loop stops the generation there (the source's ``cancel`` is set for that round only), the
repeat is never passed on, and the reply is the distinct calls before it. Across the rounds of a
turn, a call identical to one already answered is not run again: the model reads the earlier
result with a short note (:data:`REPEAT_NOTE`), and the round limit (``max_rounds``, the
``chat.max_tool_rounds`` setting in the window) ends a turn that goes on calling, with a notice
and the last calls kept as text.
- :class:`RoundStop`: the ``cancel`` of one round's generation.
- :class:`CallIds`: the one rule for a call's id in a conversation.
- :func:`cut_after_last_user`: what ``regenerate()`` drops.
- :func:`take_cut_reply` / :class:`Continued`: the reply ``continue_reply()`` goes on from, and how
  the continuation joins it.
- :func:`dispatcher_for`: a session's dispatcher, made from its tools when none is given.
- :func:`tokens_per_s`: the rate a :class:`~app.engine.events.DoneEvent` reports.
- :func:`call_key`: what makes two calls the same call.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Generator, Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol, TypedDict

from app.calls import ToolCall, ToolResult
from app.engine.events import ChatEvent, DoneEvent, NoticeEvent, ToolCallFinishedEvent, ToolCallStartedEvent
from app.engine.formats.base import Reply
from app.engine.formats.events import TextDelta, ToolCallDone
from app.engine.messages import Message, is_valid_call_id, local_call_id

if TYPE_CHECKING:
    from app.engine.thinking import Thinking

__all__ = [
    "MAX_ROUNDS_SETTING",
    "REPEAT_NOTE",
    "CallIds",
    "Continued",
    "Reply",
    "ReplySource",
    "RoundEnd",
    "RoundStop",
    "Session",
    "TurnOptions",
    "answered_before",
    "call_key",
    "cut_after_last_user",
    "dispatch_call",
    "dispatcher_for",
    "end_round",
    "run_rounds",
    "take_cut_reply",
    "tokens_per_s",
]

_API_ID_MAX = 128  # longer ids from an endpoint are replaced (no API documents longer ones)

#: The setting that bounds the rounds of a turn in the window (``max_rounds`` here).
MAX_ROUNDS_SETTING = "chat.max_tool_rounds"
#: What the model reads after the earlier result of a call it repeated in the same turn.
REPEAT_NOTE = (
    "(Not run again: {name} was already called with these same arguments in this turn, and the "
    "result above is the one it gave then. Use it to answer, or call something else.)"
)


class TurnOptions(TypedDict, total=False):
    """What one turn (``send``, ``regenerate``, ``continue_reply``) may choose instead of its
    session's defaults; a key left out is the session's."""

    tool_choice: Any  # auto | none | required | {"type": "function", "function": {"name": ...}}
    parallel_tool_calls: bool
    response_format: Any  # {"type": "json_object"} or {"type": "json_schema", ...}
    thinking: Any  # an app.engine.thinking choice (parse_thinking); None: the template's default
    sampling: Mapping[str, Any] | None  # None or {}: the model's recommended values
    max_tokens: int


class Session(Protocol):
    """A conversation with a model, local or remote: what the window swaps when the model changes.
    ``regenerate`` takes the settings the turn was first sent with (its sampling and max_tokens
    too: a turn replied to again is the same request)."""

    messages: list[Message]
    effective_format: str | None  # the tool-call family replies are read in (None: tools off or API)

    @property
    def tools(self) -> list[dict[str, Any]] | None: ...

    def send(
        self,
        text: str,
        *,
        cancel: threading.Event | None = None,
        tool_choice: Any = ...,
        thinking: Thinking | None = ...,
    ) -> Iterator[ChatEvent]: ...

    def regenerate(
        self,
        *,
        cancel: threading.Event | None = None,
        tool_choice: Any = ...,
        thinking: Thinking | None = ...,
        sampling: Mapping[str, Any] | None = ...,
        max_tokens: int = ...,
    ) -> Iterator[ChatEvent]: ...


@dataclass
class RoundEnd:
    """How one generation ended, as its :class:`ReplySource` tells the loop."""

    finish: str = "stop"  # stop, length, cancelled, deadline or error
    prompt_tokens: int = 0
    prompt_tokens_evaluated: int | None = None  # None: the source cannot tell
    generated_tokens: int = 0
    first_token_at: float | None = None  # time.monotonic() when the first token came
    decode_s: float = 0.0  # time spent generating after the first token
    constraint: str | None = None  # describe() of the constraint that held the reply (None: free)
    error: str | None = None
    error_code: str | None = None
    engine_crashed: bool = False
    keep: bool = False  # after an error: what was shown stays in the conversation
    draft_tokens: int = 0  # speculative decoding: drafted tokens verified (GenerationResult's)
    draft_accepted: int = 0  # and how many of them were accepted


class ReplySource(Protocol):
    """How one session generates one reply; everything else is :func:`run_rounds`'."""

    def generate_reply(self, round: int, cancel: threading.Event | None) -> Generator[Any, None, RoundEnd]:
        """Generate and parse reply number ``round`` of the turn (1 is the first): yield the
        parser's events (``app.engine.formats.events``) and any notices, return how it ended.
        A failure the turn should report is a :class:`RoundEnd` with ``finish="error"``."""
        ...

    def finish_turn(self, done: DoneEvent) -> DoneEvent:
        """The turn's done event with what only this session knows (``dataclasses.replace``)."""
        ...


def run_rounds(
    source: ReplySource,
    messages: list[Message],
    *,
    dispatcher: Any,
    max_rounds: int,
    cancel: threading.Event | None = None,
    max_calls: int | None = None,
    continues: Continued | None = None,
) -> Iterator[ChatEvent]:
    """One turn: rounds of ``source``'s replies appended to ``messages``, their calls run through
    ``dispatcher``; ends with a :class:`~app.engine.events.DoneEvent`. With ``dispatcher=None`` the
    calls are not run: each passes on (``ToolCallDone``) as it is parsed and the turn is one reply.

    A reply's calls end at its ``max_calls``-th (None: no count) or at a repeat of one of its
    own calls (then generation stops there); a call repeating one answered earlier in the turn is
    answered with the earlier result and :data:`REPEAT_NOTE` instead of running again.

    ``continues``: the turn goes on from a cut reply (Continue, :func:`take_cut_reply`); the first
    reply joins it as soon as it is in ``messages``, so a later round reads the whole reply, and
    the cut reply stays as it was when nothing was written."""
    at = len(messages)
    try:
        done = yield from _rounds(source, messages, dispatcher, max_rounds, cancel, max_calls, at, continues)
    finally:
        if continues is not None:
            continues.join(messages, at)  # (once: a round may have joined it)
    yield source.finish_turn(done)


def _rounds(
    source: ReplySource,
    messages: list[Message],
    dispatcher: Any,
    max_rounds: int,
    cancel: threading.Event | None,
    max_calls: int | None,
    at: int,
    continues: Continued | None,
) -> Generator[ChatEvent, None, DoneEvent]:
    """:func:`run_rounds`' rounds; returns the turn's done event (the cut reply joined)."""
    tally = _Tally(time.monotonic())
    answered: dict[tuple[str, str], ToolResult] = {}
    noted: set[str] = set()  # the notices said once a turn
    rounds = 0
    while True:
        rounds += 1
        reply = Reply()
        stop = RoundStop(cancel)
        calls = _CallList(max_calls, noted=noted)
        end = yield from _collect(
            source.generate_reply(rounds, stop), reply, calls=dispatcher is None, stop=stop, call_list=calls
        )
        if (
            calls.ended
            and end.finish in ("cancelled", "length")
            and not (cancel is not None and cancel.is_set())
        ):
            end = replace(end, finish="stop")  # the loop ended the list: the reply is complete
        tally.add(end)
        if end.finish == "error":
            if end.keep:
                _keep(messages, reply)
            done = tally.done("error", rounds, error=end, kept_text=reply.content if end.keep else None)
            break
        if dispatcher is None:  # the caller runs the calls
            messages.append(_message(reply, calls=True))
            done = tally.done(end.finish, rounds)
            break
        finish, events, run = end_round(messages, reply, end.finish, rounds=rounds, max_rounds=max_rounds)
        if continues is not None and run:
            continues.join(messages, at)  # before its calls run: the next round reads the whole reply
        yield from events
        if not run:
            done = tally.done(finish, rounds)
            break
        for call in reply.tool_calls:
            key = call_key(call)
            earlier = answered.get(key)
            if earlier is None:
                answered[key] = yield from dispatch_call(
                    dispatcher, call, messages, constrained=end.constraint
                )
            else:
                yield from _answer_again(call, earlier, messages, constrained=end.constraint)
        if cancel is not None and cancel.is_set():
            done = tally.done("cancelled", rounds)
            break
    return done


@dataclass
class _Tally:
    """What the rounds of a turn add up to, for its :class:`~app.engine.events.DoneEvent`."""

    start: float
    ttft: float | None = None  # the turn's time to its first token
    generated: int = 0
    decode_s: float = 0.0
    prompt_tokens: int = 0  # the latest round's prompt
    evaluated: int | None = None
    constraint: str | None = None  # the latest round's
    draft_tokens: int = 0  # every round's, summed
    draft_accepted: int = 0

    def add(self, end: RoundEnd) -> None:
        if self.ttft is None and end.first_token_at is not None:
            self.ttft = max(0.0, end.first_token_at - self.start)
        self.generated += end.generated_tokens
        self.decode_s += end.decode_s
        self.prompt_tokens = end.prompt_tokens or self.prompt_tokens
        if end.prompt_tokens_evaluated is not None:
            self.evaluated = (self.evaluated or 0) + end.prompt_tokens_evaluated
        self.constraint = end.constraint
        self.draft_tokens += end.draft_tokens
        self.draft_accepted += end.draft_accepted

    def done(
        self, finish: str, rounds: int, *, error: RoundEnd | None = None, kept_text: str | None = None
    ) -> DoneEvent:
        return DoneEvent(
            finish_reason=finish,
            ttft_s=self.ttft,
            tokens_per_s=None if error is not None else tokens_per_s(self.generated, self.decode_s),
            prompt_tokens=self.prompt_tokens,
            generated_tokens=self.generated,
            rounds=rounds,
            error=error.error if error is not None else None,
            error_code=error.error_code if error is not None else None,
            engine_crashed=error is not None and error.engine_crashed,
            kept_text=kept_text,
            prompt_tokens_evaluated=self.evaluated,
            constraint=self.constraint,
            elapsed_s=time.monotonic() - self.start,
            draft_tokens=self.draft_tokens,
            draft_accepted=self.draft_accepted,
        )


class RoundStop(threading.Event):
    """The ``cancel`` a source gets for one round: set by the turn's own ``cancel`` (``turn``) or by
    whoever runs the round (``by_round``: the loop, when the reply's list of calls ended, or the
    API server's turn), and generation stops there."""

    def __init__(self, turn: threading.Event | None):
        super().__init__()
        self._turn = turn

    @property
    def by_round(self) -> bool:
        return super().is_set()

    def is_set(self) -> bool:
        return super().is_set() or (self._turn is not None and self._turn.is_set())


@dataclass
class _CallList:
    """The calls of one reply so far: where the list ends (``max_calls``, or a repeat)."""

    max_calls: int | None
    noted: set[str] = field(default_factory=set)  # the turn's notices already said
    keys: set[tuple[str, str]] = field(default_factory=set)
    ended: bool = False
    repeated: str | None = None  # the name of the call whose repeat ended the list

    def admit(self, call: ToolCall) -> bool:
        """Whether ``call`` joins the reply (False: a repeat, or past the count; the list ends)."""
        if self.ended:
            return False
        key = call_key(call)
        if key in self.keys:
            self.ended, self.repeated = True, call.name
            return False
        self.keys.add(key)
        if self.max_calls is not None and len(self.keys) >= self.max_calls:
            self.ended = True  # this one is the last
        return True


def _collect(
    gen: Generator[Any, None, RoundEnd],
    reply: Reply,
    *,
    calls: bool,
    stop: RoundStop | None = None,
    call_list: _CallList | None = None,
) -> Generator[Any, None, RoundEnd]:
    """Pass ``gen``'s events through ``reply`` (what ``reply.take`` passes on, and with ``calls``
    each complete call too); return its :class:`RoundEnd`. Once ``call_list`` ends, ``stop`` is
    set (the source stops generating) and the reply's events after its last call are dropped."""
    call_list = call_list if call_list is not None else _CallList(None)
    try:
        while True:
            try:
                ev = next(gen)
            except StopIteration as end:
                return end.value
            if call_list.ended and not isinstance(ev, NoticeEvent):
                continue  # after the last call: the reply ended there
            if isinstance(ev, ToolCallDone):
                if not call_list.admit(ev.call):
                    if stop is not None:
                        stop.set()
                    if call_list.repeated is not None and "repeated_call" not in call_list.noted:
                        call_list.noted.add("repeated_call")
                        yield NoticeEvent(
                            code="repeated_call",
                            message=(
                                f"The model wrote the call {call_list.repeated} again with the same "
                                "arguments in one reply; the reply ends before the repeat (said once a turn)."
                            ),
                        )
                    continue
                if call_list.ended and stop is not None:
                    stop.set()  # the most calls a reply holds: generation stops after this one
            if reply.take(ev) or (calls and isinstance(ev, ToolCallDone)):
                yield ev
    finally:
        gen.close()


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


def end_round(
    messages: list[Message], reply: Reply, finish: str, *, rounds: int, max_rounds: int
) -> tuple[str, list[ChatEvent], bool]:
    """Append ``reply`` to ``messages`` as the assistant's message; return the turn's finish
    reason so far, the events to yield, and whether to run the reply's calls.

    Calls run only from a reply that ended normally (``finish == "stop"``) within the round limit.
    Otherwise nothing runs: the calls' text is kept in the reply (and shown) so nothing is lost or
    hidden, a notice says why, and at the round limit the finish becomes ``rounds``."""
    calls = reply.tool_calls
    if not calls or (finish == "stop" and rounds < max_rounds):
        messages.append(_message(reply, calls=True))
        return finish, [], bool(calls)
    names = ", ".join(c.name for c in calls)
    setting = None
    if finish == "stop":
        finish = "rounds"
        setting = MAX_ROUNDS_SETTING
        msg = (
            f"Stopped after {max_rounds} rounds of tool calls (the round limit, {MAX_ROUNDS_SETTING}); "
            f"the last call(s) ({names}) were not run and are kept as text."
        )
    else:
        msg = f"The reply ended ({finish}) before the model's turn was over; its call(s) ({names}) were not run."
    raw = "".join(c.raw for c in calls)
    events: list[ChatEvent] = [TextDelta(raw)] if raw else []
    events.append(
        NoticeEvent(
            code="round_limit" if finish == "rounds" else "calls_not_run", message=msg, setting=setting
        )
    )
    messages.append(_message(reply, calls=False, more=raw))
    return finish, events, False


def _message(reply: Reply, *, calls: bool, more: str = "") -> Message:
    """``reply`` as the assistant's message: with its calls to run, or (``calls=False``) without."""
    return Message(
        role="assistant",
        content=reply.content + more,
        reasoning=reply.reasoning,
        tool_calls=list(reply.tool_calls) if calls else [],
        incomplete_calls=list(reply.incomplete_calls),
    )


def _keep(messages: list[Message], reply: Reply) -> None:
    """A reply that failed part way: what was shown stays in the conversation (never its calls)."""
    if reply.content or reply.reasoning or reply.incomplete_calls:
        messages.append(_message(reply, calls=False))


def cut_after_last_user(messages: list[Message]) -> None:
    """Drop everything after the last user message (``regenerate()``); ValueError when there is none."""
    idx = max((i for i, m in enumerate(messages) if m.role == "user"), default=None)
    if idx is None:
        raise ValueError("there is no user message to reply to")
    del messages[idx + 1 :]


@dataclass
class Continued:
    """A cut reply that a turn goes on from (Continue): ``cut``, the message taken off the
    conversation; ``prefix``, the text the model goes on from (the cut's text, then a call it was
    writing when cut)."""

    cut: Message
    prefix: str
    _joined: bool = field(default=False, repr=False)

    def join(self, messages: list[Message], at: int) -> None:
        """Make the reply at ``at`` (the turn's first) one message with the cut reply: its text and
        reasoning after the cut's, a call the cut was writing now written whole (or cut again);
        nothing written there: the cut reply goes back as it was. Once: later calls do nothing."""
        if self._joined:
            return
        self._joined = True
        new, cut = (messages[at] if len(messages) > at else None), self.cut
        if new is None or new.role != "assistant":
            messages.insert(at, cut)
            return
        messages[at] = replace(
            new,
            content=cut.content + new.content,
            reasoning=(cut.reasoning or "") + (new.reasoning or ""),
            incomplete_calls=[c for c in cut.incomplete_calls if c.reason != "truncated"]
            + list(new.incomplete_calls),
        )


def take_cut_reply(messages: list[Message]) -> Continued:
    """The reply that ends ``messages``, taken off them to be continued (``continue_reply``);
    ValueError when the conversation does not end with a reply that has no calls to run."""
    if not messages or messages[-1].role != "assistant" or messages[-1].tool_calls:
        raise ValueError("the conversation does not end with a reply to continue")
    cut = messages.pop()
    return Continued(
        cut, cut.content + "".join(c.raw for c in cut.incomplete_calls if c.reason == "truncated")
    )


def dispatcher_for(registry: Any, dispatcher: Any = None) -> Any:
    """``dispatcher``, or one over ``registry`` when none is given (None: no tools, no dispatcher)."""
    if dispatcher is None and registry is not None:
        from app.tools.dispatcher import Dispatcher

        dispatcher = Dispatcher(registry)
    return dispatcher


def dispatch_call(
    dispatcher: Any, call: ToolCall, messages: list[Message], *, constrained: str | None = None
) -> Generator[ChatEvent, None, ToolResult]:
    """Run ``call``: its started and finished events, and its result appended as a tool message;
    returns the result."""
    yield ToolCallStartedEvent(call, constrained=constrained)
    result = dispatcher.dispatch(call)
    yield ToolCallFinishedEvent(call, result)
    messages.append(
        Message(role="tool", content=result.to_model_text(), tool_call_id=call.id, name=call.name)
    )
    return result


def _answer_again(
    call: ToolCall, earlier: ToolResult, messages: list[Message], *, constrained: str | None
) -> Iterator[ChatEvent]:
    """A call already answered in this turn: not run again; its earlier result, with a note."""
    note = REPEAT_NOTE.format(name=call.name)
    if earlier.error is not None:
        result = replace(earlier, call_id=call.id, error=f"{earlier.error}\n\n{note}", duration_s=0.0)
    else:
        result = replace(
            earlier, call_id=call.id, content=f"{earlier.content or ''}\n\n{note}", duration_s=0.0
        )
    yield ToolCallStartedEvent(call, constrained=constrained)
    yield ToolCallFinishedEvent(call, result)
    messages.append(
        Message(role="tool", content=result.to_model_text(), tool_call_id=call.id, name=call.name)
    )


def answered_before(messages: Iterable[Message], calls: Iterable[ToolCall]) -> list[ToolCall]:
    """The ``calls`` identical (:func:`call_key`) to a call of ``messages`` that has its result
    there: what a reply repeated of what the conversation already answered (the API server
    reports it; its clients run their own loops)."""
    msgs = list(messages)
    results = {m.tool_call_id for m in msgs if m.role == "tool" and m.tool_call_id}
    done = {call_key(c) for m in msgs for c in m.tool_calls if c.id in results}
    return [c for c in calls if call_key(c) in done]


def call_key(call: ToolCall) -> tuple[str, str]:
    """What makes two calls the same call: the name, and the arguments as JSON values (key order
    and the spelling of a number do not matter: ``1`` and ``1.0`` are one value)."""
    return call.name, json.dumps(_json_value(call.arguments), sort_keys=True, ensure_ascii=False)


def _json_value(v: Any) -> Any:
    # Strings are tagged "s" so that an integer too long for decimal text (Python refuses to write
    # one past 4300 digits) can be keyed by its hex digits, tagged "i", without meeting a string.
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, str):
        return "s" + v
    if isinstance(v, float) and v.is_integer():
        v = int(v)
    if isinstance(v, int):
        return v if v.bit_length() <= 64 else "i" + hex(v)
    if isinstance(v, float):
        return v
    if isinstance(v, Mapping):
        return {str(k): _json_value(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_json_value(x) for x in v]
    return str(v)


def tokens_per_s(tokens: int, seconds: float) -> float | None:
    """Generation speed, or None when it means nothing (under two tokens, no time measured)."""
    return tokens / seconds if seconds > 0 and tokens > 1 else None
