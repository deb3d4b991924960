"""The registry, schema validation and the dispatcher: typed tools, clear errors, approval, limits."""

from __future__ import annotations

import asyncio
import threading

import pytest

from app.tools import (
    ApprovalPolicy,
    ApprovalRequest,
    Dispatcher,
    Tool,
    ToolCall,
    ToolError,
    ToolRegistry,
    tool_from_function,
)
from app.tools.cancel import CallControl, ToolCancelled, commit_side_effect, current_control


def weather(city: str, days: int = 1) -> str:
    """Forecast for a city.

    Args:
        city: The city name.
        days: How many days ahead.
    """
    return f"{city}: sunny for {days} days"


def save_note(text: str) -> str:
    """Save a note."""
    NOTES.append(text)
    return "saved"


NOTES: list[str] = []


@pytest.fixture
def registry() -> ToolRegistry:
    NOTES.clear()
    reg = ToolRegistry()
    reg.register(tool_from_function(weather))
    reg.register(tool_from_function(save_note, side_effects=True))
    return reg


def test_schema_comes_from_signature_and_docstring():
    tool = tool_from_function(weather)
    assert tool.name == "weather"
    assert tool.description == "Forecast for a city."
    assert tool.side_effects is False
    assert tool.parameters == {
        "type": "object",
        "properties": {
            "city": {"type": "string", "description": "The city name."},
            "days": {"type": "integer", "default": 1, "description": "How many days ahead."},
        },
        "required": ["city"],
    }


def test_registry_enables_and_lists_openai_tools(registry):
    assert [t["function"]["name"] for t in registry.openai_tools()] == ["weather", "save_note"]
    first = registry.openai_tools()[0]
    assert first["type"] == "function"
    assert set(first["function"]) == {"name", "description", "parameters"}
    registry.set_enabled("save_note", False)
    assert registry.enabled_names() == ["weather"]
    assert registry.names() == ["weather", "save_note"]
    registry.set_enabled("save_note", True)
    assert registry.is_enabled("save_note")
    with pytest.raises(ValueError, match="already registered"):
        registry.register(tool_from_function(weather))
    with pytest.raises(ValueError, match="invalid"):
        registry.register(Tool(name="bad name!", description="", parameters={"type": "object"}))
    with pytest.raises(KeyError):
        registry.set_enabled("missing", True)


def test_valid_call_runs_with_typed_values(registry):
    result = Dispatcher(registry).dispatch(ToolCall("c1", "weather", {"city": "Oslo", "days": 3}))
    assert result.ok and result.content == "Oslo: sunny for 3 days"
    assert result.call_id == "c1" and result.name == "weather" and result.approval == "auto"
    assert result.to_model_text() == "Oslo: sunny for 3 days"
    assert result.duration_s >= 0


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"city": "Oslo", "days": "ten"}, "Parameter 'days' must be an integer, got string \"ten\"."),
        ({"days": 2}, "Missing required parameter 'city': expected a string, got nothing."),
        ({"city": "Oslo", "foo": 1}, "Unknown parameter 'foo' (expected: city, days)."),
        ({"city": 5}, "Parameter 'city' must be a string, got integer 5."),
        ({"city": "Oslo", "days": 2.5}, "Parameter 'days' must be an integer, got number 2.5."),
        ({"city": "Oslo", "days": True}, "Parameter 'days' must be an integer, got boolean true."),
        ('{"city": ', "The arguments are not valid JSON"),
        ("[1, 2]", "The arguments must be a JSON object, got array [1, 2]."),
    ],
)
def test_bad_arguments_become_one_sentence_the_model_reads(registry, arguments, message):
    calls = []
    registry.register(
        Tool(
            name="probe",
            description="",
            parameters=registry.get("weather").parameters,
            handler=lambda **kw: calls.append(kw),
        )
    )
    for name in ("weather", "probe"):
        result = Dispatcher(registry).dispatch(ToolCall("c", name, arguments))
        assert result.content is None
        assert result.error.startswith(message), result.error
        assert result.to_model_text() == "Error: " + result.error
    assert calls == []  # never a run with bad input


def test_arguments_as_json_text_are_parsed(registry):
    result = Dispatcher(registry).dispatch(ToolCall("c", "weather", '{"city": "Rome"}'))
    assert result.content == "Rome: sunny for 1 days"


def test_unknown_and_disabled_tools(registry):
    result = Dispatcher(registry).dispatch(ToolCall("c", "x", {}))
    assert result.error == "Unknown tool 'x'. Available tools: weather, save_note."
    registry.set_enabled("weather", False)
    result = Dispatcher(registry).dispatch(ToolCall("c", "weather", {"city": "Oslo"}))
    assert result.error == "Unknown tool 'weather'. Available tools: save_note."


def test_nested_schema_errors_name_the_path():
    reg = ToolRegistry()
    reg.register(
        Tool(
            name="plan",
            description="",
            parameters={
                "type": "object",
                "properties": {
                    "steps": {"type": "array", "items": {"type": "integer"}},
                    "unit": {"enum": ["c", "f"]},
                    "n": {"type": "integer", "minimum": 1},
                },
            },
            handler=lambda **kw: "ok",
        )
    )
    d = Dispatcher(reg)
    assert d.dispatch(ToolCall("c", "plan", {"steps": [1, "a"]})).error == (
        "Parameter 'steps[1]' must be an integer, got string \"a\"."
    )
    assert d.dispatch(ToolCall("c", "plan", {"unit": "k"})).error == (
        'Parameter \'unit\' must be one of "c", "f", got string "k".'
    )
    assert (
        d.dispatch(ToolCall("c", "plan", {"n": 0})).error
        == "Parameter 'n' must be at least 1, got integer 0."
    )
    assert d.dispatch(ToolCall("c", "plan", {"n": 3})).content == "ok"


def test_exceptions_inside_tools_become_error_results():
    reg = ToolRegistry()

    def boom() -> str:
        """Breaks."""
        raise RuntimeError("disk on fire")

    def polite() -> str:
        """Refuses."""
        raise ToolError("The thing is not available right now.")

    reg.register(tool_from_function(boom))
    reg.register(tool_from_function(polite))
    d = Dispatcher(reg)
    assert d.dispatch(ToolCall("c", "boom", {})).error == "Tool 'boom' failed (RuntimeError: disk on fire)."
    assert d.dispatch(ToolCall("c", "polite", {})).error == "The thing is not available right now."


def test_dispatch_never_raises_even_for_a_broken_registry_entry():
    reg = ToolRegistry()
    reg.register(Tool(name="nohandler", description="", parameters={"type": "object"}))
    result = Dispatcher(reg).dispatch(ToolCall("c", "nohandler", {}))
    assert result.error == "Tool 'nohandler' has no implementation."
    result = Dispatcher(reg).dispatch(ToolCall("c", None, {}))  # type: ignore[arg-type]
    assert result.error.startswith("Unknown tool 'None'")


def test_per_tool_timeout():
    release = threading.Event()
    reg = ToolRegistry()
    reg.register(
        Tool(
            name="slow",
            description="",
            parameters={"type": "object"},
            handler=lambda: release.wait(30),
            timeout_s=0.2,
        )
    )
    try:
        result = Dispatcher(reg, timeout_s=60).dispatch(ToolCall("c", "slow", {}))
    finally:
        release.set()
    assert result.error == "Tool 'slow' did not finish within 0.2 s and was abandoned."


def test_long_results_are_cut_with_a_note():
    reg = ToolRegistry()
    reg.register(Tool(name="big", description="", parameters={"type": "object"}, handler=lambda: "y" * 5000))
    reg.register(
        Tool(name="small", description="", parameters={"type": "object"}, handler=lambda: {"a": [1, 2]})
    )
    d = Dispatcher(reg, result_budget=1000)
    result = d.dispatch(ToolCall("c", "big", {}))
    assert result.truncated
    assert len(result.content) <= 1000
    assert result.content.startswith("y" * 900)
    assert result.content.endswith("characters.]")
    assert "of 5000 characters" in result.content
    small = d.dispatch(ToolCall("c", "small", {}))
    assert small.content == '{"a": [1, 2]}' and not small.truncated


# -- approval ------------------------------------------------------------------------------


class Answers:
    """An approval hook that answers from a script and records what it was shown."""

    def __init__(self, *answers):
        self.answers = list(answers)
        self.requests: list[ApprovalRequest] = []

    def __call__(self, request: ApprovalRequest):
        self.requests.append(request)
        return self.answers.pop(0)


def test_side_effect_tools_ask_with_arguments_shown(registry):
    hook = Answers("allow_once", "deny")
    d = Dispatcher(registry, approval=hook)
    first = d.dispatch(ToolCall("c1", "save_note", {"text": "buy milk"}))
    assert first.content == "saved" and first.approval == "allowed_once"
    request = hook.requests[0]
    assert request.tool_name == "save_note" and request.call_id == "c1"
    assert request.arguments == {"text": "buy milk"}
    assert '"text": "buy milk"' in request.arguments_text
    second = d.dispatch(ToolCall("c2", "save_note", {"text": "sell car"}))
    assert second.approval == "denied"
    assert second.to_model_text() == "Error: The user denied permission to run 'save_note'."
    assert NOTES == ["buy milk"]
    # side-effect-free tools never ask
    d.dispatch(ToolCall("c3", "weather", {"city": "Oslo"}))
    assert len(hook.requests) == 2


def test_always_allow_is_remembered_for_the_session(registry):
    hook = Answers("always")
    d = Dispatcher(registry, approval=hook)
    results = [d.dispatch(ToolCall(f"c{i}", "save_note", {"text": str(i)})) for i in range(3)]
    assert [r.approval for r in results] == ["always", "always", "always"]
    assert len(hook.requests) == 1
    assert NOTES == ["0", "1", "2"]
    d.policy.reset_session()
    hook.answers.append("deny")
    assert d.dispatch(ToolCall("c9", "save_note", {"text": "x"})).approval == "denied"


def test_policy_defaults_from_settings(registry):
    hook = Answers()
    policy = ApprovalPolicy({"save_note": "allow"})
    result = Dispatcher(registry, approval=hook, policy=policy).dispatch(
        ToolCall("c", "save_note", {"text": "a"})
    )
    assert result.approval == "always" and result.content == "saved"
    assert hook.requests == []
    policy.set_default("save_note", "ask")
    hook.answers.append("deny")
    assert (
        Dispatcher(registry, approval=hook, policy=policy)
        .dispatch(ToolCall("c", "save_note", {"text": "b"}))
        .approval
        == "denied"
    )
    with pytest.raises(ValueError, match="'ask' or 'allow'"):
        policy.set_default("save_note", "sometimes")  # type: ignore[arg-type]


def test_approval_timeout_counts_as_deny(registry):
    release = threading.Event()

    def never_answers(request):
        release.wait(30)
        return "allow_once"

    d = Dispatcher(registry, approval=never_answers, approval_timeout_s=0.2)
    try:
        result = d.dispatch(ToolCall("c", "save_note", {"text": "late"}))
    finally:
        release.set()
    assert result.approval == "timeout"
    assert result.error == "No one approved 'save_note' in time, so it did not run."
    assert NOTES == []


def test_awaitable_hook_and_bad_answers(registry):
    async def hook(request):
        await asyncio.sleep(0)
        return "allow_once"

    assert (
        Dispatcher(registry, approval=hook).dispatch(ToolCall("c", "save_note", {"text": "a"})).content
        == "saved"
    )

    def raises(request):
        raise RuntimeError("dialog crashed")

    assert (
        Dispatcher(registry, approval=raises).dispatch(ToolCall("c", "save_note", {"text": "b"})).approval
        == "denied"
    )
    assert (
        Dispatcher(registry, approval=lambda r: "yes please")
        .dispatch(ToolCall("c", "save_note", {"text": "c"}))
        .approval
        == "denied"
    )
    no_hook = Dispatcher(registry).dispatch(ToolCall("c", "save_note", {"text": "d"}))
    assert no_hook.approval == "denied" and "needs the user's approval" in no_hook.error
    assert NOTES == ["a"]


def test_invalid_arguments_are_refused_before_asking(registry):
    hook = Answers("allow_once")
    result = Dispatcher(registry, approval=hook).dispatch(ToolCall("c", "save_note", {"text": 3}))
    assert result.error == "Parameter 'text' must be a string, got integer 3."
    assert hook.requests == []


def test_missing_parameter_names_the_expected_type_and_says_got_nothing():
    reg = ToolRegistry()
    reg.register(
        Tool(
            name="plan",
            description="",
            parameters={
                "type": "object",
                "properties": {
                    "unit": {"enum": ["c", "f"]},
                    "where": {
                        "type": "object",
                        "properties": {"lat": {"type": "number"}},
                        "required": ["lat"],
                    },
                    "anything": {},
                },
                "required": ["unit", "anything"],
            },
            handler=lambda **kw: "ok",
        )
    )
    d = Dispatcher(reg)
    assert d.dispatch(ToolCall("c", "plan", {"anything": 1})).error == (
        'Missing required parameter \'unit\': expected one of "c", "f", got nothing.'
    )
    assert d.dispatch(ToolCall("c", "plan", {"unit": "c"})).error == (
        "Missing required parameter 'anything': expected a value, got nothing."
    )
    assert d.dispatch(ToolCall("c", "plan", {"unit": "c", "anything": 1, "where": {}})).error == (
        "Missing required parameter 'lat' in 'where': expected a number, got nothing."
    )


# -- timeouts: what the model is told matches what can still happen --------------------------


def _tool(name, handler, *, cancellable, side_effects=True):
    return Tool(
        name=name,
        description="",
        parameters={"type": "object"},
        handler=handler,
        side_effects=side_effects,
        cancellable=cancellable,
        timeout_s=0.2,
    )


def _allow(request):
    return "allow_once"


def test_a_cancellable_tool_stopped_before_its_commit_point_never_makes_its_change():
    gate, done = threading.Event(), threading.Event()
    outcome = {}

    def slow_write():
        try:
            gate.wait(30)  # still preparing when its time runs out
            commit_side_effect()
            NOTES.append("written")
            return "written"
        except BaseException as exc:
            outcome["error"] = exc
            raise
        finally:
            done.set()

    reg = ToolRegistry([_tool("slow_write", slow_write, cancellable=True)])
    try:
        result = Dispatcher(reg, approval=_allow, cancel_grace_s=0.05).dispatch(
            ToolCall("c", "slow_write", {})
        )
    finally:
        gate.set()
    assert (
        result.error
        == "Tool 'slow_write' did not finish within 0.2 s and was stopped before it changed anything."
    )
    assert done.wait(30)
    assert isinstance(outcome["error"], ToolCancelled)
    assert NOTES == []  # the late thread could not commit


def test_a_tool_past_its_commit_point_is_waited_for_and_its_real_outcome_reported():
    def committed_then_slow():
        commit_side_effect()
        control = current_control()
        while not control.expired:  # still applying the change when the time runs out
            threading.Event().wait(0.01)
        NOTES.append("written")
        return "written late"

    reg = ToolRegistry([_tool("late", committed_then_slow, cancellable=True)])
    result = Dispatcher(reg, approval=_allow).dispatch(ToolCall("c", "late", {}))
    assert result.ok and result.content == "written late"
    assert NOTES == ["written"]


def test_a_committed_change_that_does_not_finish_is_reported_as_possibly_completing():
    gate = threading.Event()

    def stuck_after_commit():
        commit_side_effect()
        gate.wait(30)
        return "done"

    reg = ToolRegistry([_tool("stuck", stuck_after_commit, cancellable=True)])
    try:
        result = Dispatcher(reg, approval=_allow, commit_grace_s=0.05).dispatch(ToolCall("c", "stuck", {}))
    finally:
        gate.set()
    assert result.error == (
        "Tool 'stuck' did not finish within 0.2 s; it had already started applying its change, "
        "which may still complete."
    )


def test_an_uncooperative_side_effect_tool_that_times_out_is_said_to_maybe_still_act():
    gate = threading.Event()

    def opaque():
        gate.wait(30)
        NOTES.append("late effect")
        return "done"

    reg = ToolRegistry([_tool("opaque", opaque, cancellable=False)])
    try:
        result = Dispatcher(reg, approval=_allow).dispatch(ToolCall("c", "opaque", {}))
    finally:
        gate.set()
    assert result.error == (
        "Tool 'opaque' did not finish within 0.2 s and was abandoned, but it may still be running: "
        "its effect may still happen."
    )


def test_cancel_and_commit_exclude_each_other():
    first = CallControl()
    assert first.cancel() is True and first.cancelled
    with pytest.raises(ToolCancelled):
        first.commit()
    second = CallControl()
    second.commit()
    assert second.cancel() is False and not second.cancelled and second.expired
    # outside a dispatcher the helpers do nothing
    commit_side_effect()
    assert current_control() is None
