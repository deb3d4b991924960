"""One view of a tool call for the side panel and the inline card: one status rule, built from the
turn's events and from a stored call alike."""

from __future__ import annotations

from app.calls import ToolCall, ToolResult
from app.engine.events import ToolCallFinishedEvent, ToolCallStartedEvent
from app.storage.history import StoredToolCall
from app.ui.call_view import CallView, call_summary, format_duration

CALL = ToolCall("call00000", "write_file", {"path": "a.txt", "content": "hi"}, raw="<tool_call>...")


def test_status_running_ok_error_denied():
    view = CallView(CALL)
    assert view.status == "running" and not view.failed
    assert view.finished(ToolResult(CALL.id, CALL.name, content="ok")).status == "ok"
    failed = view.finished(ToolResult(CALL.id, CALL.name, error="disk full", approval="allowed_once"))
    assert failed.status == "error" and failed.failed
    for approval in ("denied", "timeout"):
        denied = view.finished(ToolResult(CALL.id, CALL.name, error="no", approval=approval))
        assert denied.status == "denied" and denied.failed


def test_built_from_the_events_keeps_how_the_call_was_decoded():
    started = CallView.from_event(ToolCallStartedEvent(CALL, constrained="tool write_file, hermes"))
    assert (started.call, started.outcome, started.constrained) == (CALL, None, "tool write_file, hermes")
    result = ToolResult(CALL.id, CALL.name, content="wrote 2 characters", duration_s=0.01)
    done = started.finished(result).read_by("api:openai")
    assert (done.outcome, done.constrained, done.parser, done.status) == (
        result,
        "tool write_file, hermes",
        "api:openai",
        "ok",
    )
    alone = CallView.from_event(ToolCallFinishedEvent(CALL, result))  # no started event seen
    assert (alone.call, alone.outcome, alone.constrained) == (CALL, result, None)


def test_built_from_a_stored_call():
    stored = StoredToolCall(
        id=1,
        message_id=2,
        call_id=CALL.id,
        name=CALL.name,
        arguments=dict(CALL.arguments),
        raw=CALL.raw,
        error="The user denied permission to run 'write_file'.",
        duration_s=None,
        approval="denied",
    )
    view = CallView.from_stored(stored)
    assert view.call == CALL and view.status == "denied" and view.outcome.duration_s == 0.0
    never_ran = CallView.from_stored(StoredToolCall(3, 2, "call00001", "calculator", {"expression": "1"}))
    assert never_ran.outcome is None and never_ran.status == "running"


def test_the_call_in_one_line_and_its_duration():
    assert call_summary(ToolCall("c", "calculator", {"expression": "6*7"})) == 'calculator(expression="6*7")'
    assert call_summary(ToolCall("c", "f", {"n": 3, "s": "x" * 80}), 20).endswith("…)")
    assert [format_duration(s) for s in (None, 0.0003, 0.25, 12.0)] == ["", "0.3 ms", "250 ms", "12.0 s"]
