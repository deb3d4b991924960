"""The one chat loop (app.engine.loop): one id rule, one regenerate cut, one dispatch of a call,
one end of a round, and the rounds themselves over any reply source."""

from __future__ import annotations

import pytest

from app.calls import IncompleteCall, ToolCall
from app.engine.events import ToolCallFinishedEvent, ToolCallStartedEvent
from app.engine.formats.events import ToolCallIncomplete
from app.engine.loop import CallIds, Reply, cut_after_last_user, dispatch_call, end_round, tokens_per_s
from app.engine.messages import Message
from app.tools import Dispatcher, ToolRegistry


def test_a_models_id_is_kept_once_and_anything_else_gets_a_fresh_one():
    ids = CallIds(["call00000"])
    assert ids.issue("abcDEF123") == "abcDEF123"
    assert ids.issue("abcDEF123") == "call00001"  # used already; call00000 too
    assert ids.issue("too-long-for-mistral") == "call00002"
    assert ids.issue(None) == "call00003"
    assert ids.used >= {"call00000", "abcDEF123", "call00001", "call00002", "call00003"}


def test_ids_restored_from_history_are_never_issued_again():
    past = [
        Message(role="user", content="hi"),
        Message(
            role="assistant", tool_calls=[ToolCall("call00000", "f", {}), ToolCall("call00001", "f", {})]
        ),
    ]
    ids = CallIds.of(past)
    assert ids.issue("call00001") == "call00002"


def test_fresh_ids_may_come_from_elsewhere():
    made = iter(["aaaaaaaaa", "aaaaaaaaa", "bbbbbbbbb"])
    ids = CallIds(["aaaaaaaaa"], fresh=lambda _n: next(made))
    assert ids.issue(None) == "bbbbbbbbb"


def test_an_endpoints_own_id_is_kept_when_new_and_not_absurd():
    ids = CallIds()
    assert ids.keep("toolu_01A09q90qw90lq917835lq9") == "toolu_01A09q90qw90lq917835lq9"
    assert ids.keep("toolu_01A09q90qw90lq917835lq9") == "call00000"
    assert ids.keep("") == "call00001"
    assert ids.keep("x" * 129) == "call00002"
    assert ids.keep(None) == "call00003"


def test_regenerate_drops_what_follows_the_last_user_message():
    msgs = [
        Message(role="user", content="a"),
        Message(role="assistant", content="b"),
        Message(role="user", content="c"),
        Message(role="assistant", content="d"),
    ]
    cut_after_last_user(msgs)
    assert [m.content for m in msgs] == ["a", "b", "c"]
    with pytest.raises(ValueError, match="no user message"):
        cut_after_last_user([Message(role="system", content="s")])


def test_dispatch_yields_both_events_and_appends_the_result():
    registry = ToolRegistry()

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    registry.register_function(add)
    messages: list[Message] = []
    call = ToolCall("call00000", "add", {"a": 2, "b": 3})
    events = list(dispatch_call(Dispatcher(registry), call, messages, constrained="required"))
    assert isinstance(events[0], ToolCallStartedEvent) and events[0].constrained == "required"
    assert isinstance(events[1], ToolCallFinishedEvent) and events[1].call is call
    assert [(m.role, m.content, m.tool_call_id, m.name) for m in messages] == [
        ("tool", "5", "call00000", "add")
    ]


def test_tokens_per_s_needs_two_tokens_and_some_time():
    assert tokens_per_s(10, 2.0) == 5.0
    assert tokens_per_s(1, 2.0) is None
    assert tokens_per_s(10, 0.0) is None


def _reply(*events):
    from app.engine.formats.events import ReasoningDelta, TextDelta

    reply = Reply()
    shown = [e for e in events if reply.take(e)]
    assert all(isinstance(e, TextDelta | ReasoningDelta | ToolCallIncomplete) for e in shown)
    return reply, shown


def test_a_reply_keeps_text_reasoning_and_both_kinds_of_call():
    from app.engine.formats.events import ReasoningDelta, TextDelta, ToolCallDone

    call = ToolCall("call00000", "add", {"a": 1}, raw="<call>")
    cut = IncompleteCall(raw="<call>{", name="add", reason="truncated")
    reply, shown = _reply(
        ReasoningDelta("hm"),
        TextDelta(""),
        TextDelta("Sure."),
        ToolCallDone(0, call),
        ToolCallIncomplete(cut),
    )
    assert reply.reasoning == "hm" and reply.content == "Sure."
    assert reply.tool_calls == [call] and reply.incomplete_calls == [cut]
    assert len(shown) == 3  # the empty text is dropped; the complete call waits for its dispatch


def test_a_normal_reply_with_calls_runs_them():
    from app.engine.formats.events import TextDelta, ToolCallDone

    call = ToolCall("call00000", "add", {"a": 1}, raw="<call>")
    reply, _ = _reply(TextDelta("Sure."), ToolCallDone(0, call))
    messages: list[Message] = []
    assert end_round(messages, reply, "stop", rounds=1, max_rounds=4) == ("stop", [], True)
    assert messages[0].content == "Sure." and messages[0].tool_calls == [call]
    reply, _ = _reply(TextDelta("Hi."))
    assert end_round(messages, reply, "stop", rounds=1, max_rounds=4) == ("stop", [], False)


@pytest.mark.parametrize(
    "finish,rounds,want,code",
    [("length", 1, "length", "calls_not_run"), ("stop", 4, "rounds", "round_limit")],
)
def test_calls_of_a_cut_reply_or_past_the_round_limit_never_run_and_stay_as_text(finish, rounds, want, code):
    from app.engine.events import NoticeEvent
    from app.engine.formats.events import TextDelta, ToolCallDone

    call = ToolCall("call00000", "add", {"a": 1}, raw="<call>")
    reply, _ = _reply(TextDelta("Sure. "), ToolCallDone(0, call))
    messages: list[Message] = []
    got, events, run = end_round(messages, reply, finish, rounds=rounds, max_rounds=4)
    assert (got, run) == (want, False)
    assert events[0] == TextDelta("<call>") and isinstance(events[1], NoticeEvent) and events[1].code == code
    assert "add" in events[1].message
    assert messages[0].content == "Sure. <call>" and messages[0].tool_calls == []


class _Script:
    """A reply source that replays scripted replies (lists of parser events and a RoundEnd)."""

    def __init__(self, *replies):
        self.replies = list(replies)
        self.rounds: list[int] = []

    def generate_reply(self, round, cancel):
        self.rounds.append(round)
        events, end = self.replies.pop(0)
        yield from events
        return end

    def finish_turn(self, done):
        from dataclasses import replace

        return replace(done, tool_format="scripted")


def _add_dispatcher():
    registry = ToolRegistry()

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    registry.register_function(add)
    return Dispatcher(registry)


def test_the_rounds_run_calls_until_a_reply_has_none():
    from app.engine.events import DoneEvent
    from app.engine.formats.events import TextDelta, ToolCallDone
    from app.engine.loop import RoundEnd, run_rounds

    call = ToolCall("call00000", "add", {"a": 2, "b": 3}, raw="<call>")
    source = _Script(
        ([TextDelta("Let me add."), ToolCallDone(0, call)], RoundEnd(generated_tokens=5, first_token_at=0.0)),
        ([TextDelta("It is 5.")], RoundEnd(generated_tokens=4, prompt_tokens=40, prompt_tokens_evaluated=7)),
    )
    messages = [Message(role="user", content="2+3?")]
    events = list(run_rounds(source, messages, dispatcher=_add_dispatcher(), max_rounds=4))
    kinds = [type(e).__name__ for e in events]
    assert kinds == ["TextDelta", "ToolCallStartedEvent", "ToolCallFinishedEvent", "TextDelta", "DoneEvent"]
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "stop" and done.rounds == 2
    assert (done.generated_tokens, done.prompt_tokens, done.prompt_tokens_evaluated) == (9, 40, 7)
    assert done.tool_format == "scripted" and done.elapsed_s is not None
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert source.rounds == [1, 2]


def test_without_a_dispatcher_the_calls_pass_on_and_the_reply_ends_the_turn():
    from app.engine.formats.events import TextDelta, ToolCallDone
    from app.engine.loop import RoundEnd, run_rounds

    call = ToolCall("call00000", "add", {"a": 2, "b": 3}, raw="<call>")
    source = _Script(([TextDelta("Sure."), ToolCallDone(0, call)], RoundEnd()))
    messages: list[Message] = []
    events = list(run_rounds(source, messages, dispatcher=None, max_rounds=1))
    assert events[1] == ToolCallDone(0, call) and events[-1].finish_reason == "stop"
    assert messages[0].tool_calls == [call]  # no round limit, no notice: the caller runs it


def test_a_failed_round_ends_the_turn_and_keeps_what_was_shown_when_asked():
    from app.engine.formats.events import TextDelta
    from app.engine.loop import RoundEnd, run_rounds

    for keep in (True, False):
        end = RoundEnd(finish="error", error="cut", error_code="cut", keep=keep, generated_tokens=3)
        messages: list[Message] = []
        events = list(
            run_rounds(_Script(([TextDelta("Half a")], end)), messages, dispatcher=None, max_rounds=2)
        )
        done = events[-1]
        assert (done.finish_reason, done.error, done.error_code, done.generated_tokens) == (
            "error",
            "cut",
            "cut",
            3,
        )
        assert done.kept_text == ("Half a" if keep else None)
        assert [m.content for m in messages] == (["Half a"] if keep else [])


def test_the_json_lines_of_the_events_are_flat():
    import json

    from app.calls import ToolResult
    from app.engine.events import ContextFull, DoneEvent, event_to_dict

    call = ToolCall("call00000", "add", {"a": 1}, raw="<call>")
    started = event_to_dict(ToolCallStartedEvent(call, constrained="required, hermes"))
    assert started == {
        "type": "tool_call_started",
        "call_id": "call00000",
        "name": "add",
        "arguments": {"a": 1},
        "raw": "<call>",
        "constrained": "required, hermes",
    }
    failed = ToolResult("call00000", "add", error="no", duration_s=0.5, approval="denied")
    finished = event_to_dict(ToolCallFinishedEvent(call, failed))
    assert list(finished) == [
        "type",
        "call_id",
        "name",
        "arguments",
        "raw",
        "result",
        "error",
        "duration_s",
        "approval",
    ]
    assert (finished["result"], finished["error"], finished["approval"]) == (None, "no", "denied")
    done = event_to_dict(
        DoneEvent(
            "error", context_full=ContextFull(n_ctx=4096, tool_tokens=300), call_parsers={"c1": "api:openai"}
        )
    )
    assert done["type"] == "done" and "extra" not in done
    assert done["context_full"] == {"n_ctx": 4096, "tool_tokens": 300}
    assert done["call_parsers"] == {"c1": "api:openai"} and done["constraint"] is None
    json.dumps(done)  # one JSON line


# -- issue 32: call lists end, and a turn does not run the same call twice --------------------


def test_i32_a_call_is_the_same_call_by_name_and_json_values():
    from app.engine.loop import call_key

    a = ToolCall("call00000", "add", {"a": 2, "b": {"x": [1, 2.5]}})
    assert call_key(a) == call_key(ToolCall("call00001", "add", {"b": {"x": [1.0, 2.5]}, "a": 2.0}))
    assert call_key(a) != call_key(ToolCall("call00001", "add", {"a": 3, "b": {"x": [1, 2.5]}}))
    assert call_key(a) != call_key(ToolCall("call00001", "sub", {"a": 2, "b": {"x": [1, 2.5]}}))
    assert call_key(ToolCall("c", "f", {"v": True})) != call_key(ToolCall("c", "f", {"v": 1}))
    assert call_key(ToolCall("c", "f", {"v": None})) != call_key(ToolCall("c", "f", {}))


class _Stoppable:
    """A source that writes its events one by one and stops (``cancelled``) once its ``cancel``
    is set, as a real generation does; it records how many events it wrote."""

    def __init__(self, events):
        self.events = list(events)
        self.written = 0
        self.cancel = None

    def generate_reply(self, round, cancel):
        from app.engine.loop import RoundEnd

        self.cancel = cancel
        for ev in self.events:
            if cancel is not None and cancel.is_set():
                return RoundEnd(finish="cancelled", generated_tokens=self.written)
            self.written += 1
            yield ev
        return RoundEnd(generated_tokens=self.written)

    def finish_turn(self, done):
        return done


def _turn(source, **kwargs):
    from app.engine.loop import run_rounds

    messages: list[Message] = []
    events = list(run_rounds(source, messages, dispatcher=None, max_rounds=1, **kwargs))
    return events, messages


def test_i32_a_repeat_of_a_call_ends_the_reply_there_and_is_never_passed_on():
    import threading

    from app.engine.events import NoticeEvent
    from app.engine.formats.events import TextDelta, ToolCallDone

    first = ToolCall("call00000", "add", {"a": 2, "b": 3}, raw="<c1>")
    other = ToolCall("call00001", "add", {"a": 1, "b": 1}, raw="<c2>")
    again = ToolCall("call00002", "add", {"b": 3.0, "a": 2}, raw="<c3>")
    source = _Stoppable(
        [
            TextDelta("Sure."),
            ToolCallDone(0, first),
            ToolCallDone(1, other),
            ToolCallDone(2, again),
            TextDelta("never shown"),
            ToolCallDone(3, ToolCall("call00003", "add", {"a": 9, "b": 9})),
        ]
    )
    turn_cancel = threading.Event()
    events, messages = _turn(source, cancel=turn_cancel, max_calls=8)
    passed = [e.call for e in events if isinstance(e, ToolCallDone)]
    assert passed == [first, other]  # the distinct calls, never the repeat
    notices = [e for e in events if isinstance(e, NoticeEvent)]
    assert [n.code for n in notices] == ["repeated_call"] and "add" in notices[0].message
    assert "never shown" not in "".join(e.text for e in events if isinstance(e, TextDelta))
    assert source.written == 4  # generation stopped at the repeat
    assert source.cancel.is_set() and not turn_cancel.is_set()  # the round's stop, not the turn's
    done = events[-1]
    assert done.finish_reason == "stop"  # the loop ended the list: the reply is complete
    assert messages[0].tool_calls == [first, other] and messages[0].content == "Sure."


def test_i32_a_reply_holds_at_most_max_calls_calls():
    from app.engine.formats.events import ToolCallDone

    calls = [ToolCall(f"call0000{i}", "add", {"a": i, "b": 0}) for i in range(5)]
    for most, want in ((2, 2), (1, 1), (None, 5)):
        source = _Stoppable([ToolCallDone(i, c) for i, c in enumerate(calls)])
        events, messages = _turn(source, max_calls=most)
        assert [e.call for e in events if isinstance(e, ToolCallDone)] == calls[:want]
        assert source.written == want  # stopped right after the last call it may hold
        assert events[-1].finish_reason == "stop" and messages[0].tool_calls == calls[:want]


def test_i32_a_cancelled_turn_stays_cancelled_when_the_list_also_ended():
    import threading

    from app.engine.formats.events import ToolCallDone

    turn_cancel = threading.Event()
    turn_cancel.set()
    source = _Stoppable([ToolCallDone(0, ToolCall("call00000", "add", {"a": 1, "b": 1}))])
    events, _ = _turn(source, cancel=turn_cancel, max_calls=1)
    assert events[-1].finish_reason == "cancelled"


def test_i32_a_call_already_answered_in_the_turn_is_not_run_again():
    from app.engine.events import NoticeEvent
    from app.engine.formats.events import TextDelta, ToolCallDone
    from app.engine.loop import REPEAT_NOTE, RoundEnd, run_rounds

    ran: list = []
    registry = ToolRegistry()

    def add(a: int, b: int) -> int:
        """Add two numbers."""
        ran.append((a, b))
        return a + b

    registry.register_function(add)
    first = ToolCall("call00000", "add", {"a": 2, "b": 3}, raw="<c1>")
    again = ToolCall("call00001", "add", {"b": 3, "a": 2}, raw="<c2>")
    new = ToolCall("call00002", "add", {"a": 4, "b": 4}, raw="<c3>")
    source = _Script(
        ([ToolCallDone(0, first)], RoundEnd()),
        ([ToolCallDone(0, again), ToolCallDone(1, new)], RoundEnd()),
        ([TextDelta("It is 5.")], RoundEnd()),
    )
    messages = [Message(role="user", content="2+3?")]
    events = list(run_rounds(source, messages, dispatcher=Dispatcher(registry), max_rounds=8))
    assert ran == [(2, 3), (4, 4)]  # the repeat did not run
    finished = [e for e in events if isinstance(e, ToolCallFinishedEvent)]
    assert [e.call.id for e in finished] == ["call00000", "call00001", "call00002"]
    repeat = finished[1].outcome
    assert repeat.call_id == "call00001" and repeat.ok and repeat.content.startswith("5")
    tools = [m for m in messages if m.role == "tool"]
    assert [m.tool_call_id for m in tools] == ["call00000", "call00001", "call00002"]
    assert tools[1].content == "5\n\n" + REPEAT_NOTE.format(name="add")
    assert not [e for e in events if isinstance(e, NoticeEvent)]
    assert events[-1].finish_reason == "stop" and events[-1].rounds == 3


def test_i32_an_earlier_error_is_given_again_and_a_turn_that_keeps_calling_ends_at_the_limit():
    from app.engine.events import NoticeEvent
    from app.engine.formats.events import TextDelta, ToolCallDone
    from app.engine.loop import RoundEnd, run_rounds

    registry = ToolRegistry()
    ran: list = []

    def fail(x: int) -> int:
        """Always fails."""
        ran.append(x)
        raise RuntimeError("no such thing")

    registry.register_function(fail)
    same = [ToolCall(f"call0000{i}", "fail", {"x": 1}, raw=f"<f{i}>") for i in range(4)]
    source = _Script(
        *[([TextDelta(f"try {i}. "), ToolCallDone(0, c)], RoundEnd()) for i, c in enumerate(same)]
    )
    messages = [Message(role="user", content="go")]
    events = list(run_rounds(source, messages, dispatcher=Dispatcher(registry), max_rounds=3))
    assert ran == [1]
    tools = [m for m in messages if m.role == "tool"]
    assert (
        len(tools) == 2
        and tools[1].content.startswith(tools[0].content)
        and "Not run again" in tools[1].content
    )
    notices = [e for e in events if isinstance(e, NoticeEvent)]
    assert [n.code for n in notices] == ["round_limit"] and notices[0].setting == "chat.max_tool_rounds"
    done = events[-1]
    assert (done.finish_reason, done.rounds) == ("rounds", 3)
    # nothing lost: the last reply's text and its call's text stay in the conversation
    assert messages[-1].role == "assistant" and messages[-1].content == "try 2. <f2>"


def test_i32_a_reply_that_repeats_an_answered_call_of_the_conversation_is_told():
    from app.engine.loop import answered_before

    done = ToolCall("call00000", "add", {"a": 2, "b": 3})
    pending = ToolCall("call00001", "add", {"a": 7, "b": 7})
    history = [
        Message(role="user", content="2+3?"),
        Message(role="assistant", tool_calls=[done, pending]),
        Message(role="tool", content="5", tool_call_id="call00000", name="add"),
    ]
    again = ToolCall("call00002", "add", {"b": 3, "a": 2.0})
    other = ToolCall("call00003", "add", {"a": 7, "b": 7})  # called, but never answered
    assert answered_before(history, [again, other]) == [again]
    assert answered_before([], [again]) == []


def test_i32_a_call_key_holds_integers_past_the_decimal_digit_limit():
    """H7 again: a tool argument of thousands of digits must not make the loop's repeat check raise
    (Python refuses to write an integer past 4300 digits as decimal text)."""
    from app.engine.loop import call_key

    big = 7**6000  # about 5,070 decimal digits
    assert call_key(ToolCall("c", "f", {"n": big})) == call_key(ToolCall("d", "f", {"n": big}))
    assert call_key(ToolCall("c", "f", {"n": big})) != call_key(ToolCall("c", "f", {"n": big + 1}))
    assert call_key(ToolCall("c", "f", {"n": 2**70})) != call_key(ToolCall("c", "f", {"n": "i" + hex(2**70)}))
    assert call_key(ToolCall("c", "f", {"n": 3})) == call_key(ToolCall("c", "f", {"n": 3.0}))
