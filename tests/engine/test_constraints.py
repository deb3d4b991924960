"""Tool choice and response format: parsing, clear errors, JSON replies, and the chat session
(a tiny random-weight model: whatever it writes, only the constraint shapes it)."""

from __future__ import annotations

import json
import time

import jsonschema
import pytest

from app.engine import ChatSession, generate, load_model
from app.engine.constraints import (
    ToolChoice,
    compile_constraint,
    parse_response_format,
    parse_tool_choice,
)
from app.engine.errors import ConstraintError
from app.engine.events import DoneEvent, ToolCallStartedEvent
from app.tools import Tool, ToolRegistry

HERMES_TEMPLATE = (
    "{%- if tools %}<|im_start|>system\nTools: {{ tools | tojson }}<|im_end|>\n{%- endif %}"
    "{%- for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{%- endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{%- endif %}"
)


def tool(name: str, props: dict, required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": name,
            "parameters": {"type": "object", "properties": props, "required": required},
        },
    }


WEATHER = tool(
    "get_weather",
    {"city": {"type": "string", "maxLength": 5}, "unit": {"enum": ["c", "f"]}},
    ["city", "unit"],
)


@pytest.fixture
def model(tiny_gguf):
    path = tiny_gguf(
        chat_template=HERMES_TEMPLATE,
        control_tokens=["<s>", "</s>", "<|im_start|>", "<|im_end|>"],
        user_tokens=["<tool_call>", "</tool_call>"],
        bos="<s>",
        eos="<|im_end|>",
        seed=3,
    )
    m = load_model(path, n_ctx=2048)
    yield m
    m.close()


# -- parsing ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        "sometimes",
        "",
        42,
        None,
        {"type": "function"},
        {"type": "tool", "name": "f"},
        {"type": "function", "function": {"name": ""}},
        ["required"],
    ],
)
def test_unknown_or_malformed_tool_choice_falls_back_to_auto(value):
    assert parse_tool_choice(value) == ToolChoice("auto")


def test_tool_choice_values():
    assert parse_tool_choice("none") == ToolChoice("none")
    assert parse_tool_choice("required") == ToolChoice("required")
    named = parse_tool_choice({"type": "function", "function": {"name": "get_weather"}})
    assert named == ToolChoice("function", "get_weather")
    assert named.to_value() == {"type": "function", "function": {"name": "get_weather"}}


def test_response_format_values():
    assert parse_response_format({"type": "json_object"}) == {"type": "object"}
    schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
    assert parse_response_format({"type": "json_schema", "json_schema": {"schema": schema}}) == schema
    for bad in (
        {"type": "text"},
        {"type": "json_schema"},
        "json",
        None,
        {"type": "json_schema", "json_schema": 3},
    ):
        assert parse_response_format(bad) is None


# -- errors -----------------------------------------------------------------------------------


def test_an_undeclared_named_tool_is_an_error_naming_it(model):
    with pytest.raises(
        ConstraintError, match=r"'book_flight', which is not a declared tool \(declared: get_weather\)"
    ):
        compile_constraint(
            model,
            family="hermes",
            tools=[WEATHER],
            tool_choice={"type": "function", "function": {"name": "book_flight"}},
        )


def test_required_without_tools_is_an_error(model):
    with pytest.raises(ConstraintError, match="'required' but no tools are declared"):
        compile_constraint(model, family="hermes", tools=[], tool_choice="required")


def test_a_forced_choice_without_a_tool_format_is_an_error(model):
    with pytest.raises(ConstraintError, match="needs a tool-call format"):
        compile_constraint(model, family=None, tools=[WEATHER], tool_choice="required")


def test_an_uncompilable_schema_names_the_tool_and_parameter(model):
    bad = tool(
        "lookup", {"id": {"type": "string"}, "code": {"type": "string", "pattern": "(?<=x)y"}}, ["code"]
    )
    with pytest.raises(ConstraintError, match=r"tool 'lookup' parameter 'code': its schema cannot be held"):
        compile_constraint(model, family="hermes", tools=[WEATHER, bad], tool_choice="required")


def test_an_unsupported_feature_on_a_raw_value_wire_is_named(model):
    bad = tool("lookup", {"code": {"type": "string", "not": {"const": "x"}}}, ["code"])
    with pytest.raises(
        ConstraintError, match=r"tool 'lookup' parameter 'code': the schema feature not is not supported"
    ):
        compile_constraint(model, family="qwen-xml", tools=[bad], tool_choice="required")


def test_a_parameter_the_wire_cannot_write_is_an_error(model):
    dashed = tool("lookup", {"first-name": {"type": "string"}}, [])
    with pytest.raises(ConstraintError, match=r"parameter 'first-name': the pythonic wire cannot express"):
        compile_constraint(model, family="pythonic", tools=[dashed], tool_choice="required")
    # the JSON wires write any name
    compile_constraint(model, family="hermes", tools=[dashed], tool_choice="required")


def test_a_session_never_runs_unconstrained_when_the_constraint_fails(model):
    session = ChatSession(
        model,
        tool_format="hermes",
        registry=_registry(),
        tool_choice={"type": "function", "function": {"name": "nope"}},
    )
    before = model.total_eval
    events = list(session.send("hi"))
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason == "error"
    assert "'nope', which is not a declared tool" in done.error
    assert model.total_eval == before  # nothing was generated
    assert [m.role for m in session.messages] == ["user"]


# -- behaviour ---------------------------------------------------------------------------------


def _registry(ran: list | None = None) -> ToolRegistry:
    ran = ran if ran is not None else []

    def get_weather(city: str, unit: str) -> str:
        ran.append((city, unit))
        return "sunny"

    reg = ToolRegistry()
    reg.register(
        Tool(
            name="get_weather",
            description="weather",
            parameters=WEATHER["function"]["parameters"],
            handler=get_weather,
        )
    )
    return reg


def test_required_in_a_session_runs_a_held_call_then_answers_under_auto(model):
    ran: list = []
    session = ChatSession(
        model,
        tool_format="hermes",
        registry=_registry(ran),
        tool_choice="required",
        parallel_tool_calls=False,
        max_rounds=2,
        max_tokens=300,
        sampling={"temperature": 1.0, "seed": 5},
    )
    events = list(session.send("weather?"))
    started = [e for e in events if isinstance(e, ToolCallStartedEvent)]
    assert len(started) == 1 and started[0].call.name == "get_weather"
    assert started[0].constrained == "required, hermes"
    jsonschema.validate(started[0].call.arguments, WEATHER["function"]["parameters"])
    assert len(ran) == 1
    assert session.messages[1].tool_calls and session.messages[2].role == "tool"


def test_per_call_choice_overrides_the_session_default(model):
    session = ChatSession(
        model,
        tool_format="hermes",
        registry=_registry(),
        max_tokens=300,
        max_rounds=2,
        sampling={"temperature": 1.0, "seed": 1},
    )
    events = list(session.send("x", tool_choice="none"))
    assert session.last_constraint is None
    assert "get_weather" not in session.last_prompt.text  # none: the prompt holds no schema
    assert not [e for e in events if isinstance(e, ToolCallStartedEvent)]
    list(
        session.send(
            "y",
            tool_choice={"type": "function", "function": {"name": "get_weather"}},
            parallel_tool_calls=False,
        )
    )
    assert [c.name for m in session.messages[2:] for c in m.tool_calls][:1] == ["get_weather"]
    assert session.tool_choice == "auto"  # the session's default is unchanged


def test_json_response_format_holds_a_plain_reply(model):
    schema = {
        "type": "object",
        "properties": {"ok": {"type": "boolean"}, "n": {"enum": [1, 2, 3]}},
        "required": ["ok", "n"],
        "additionalProperties": False,
    }
    rf = {"type": "json_schema", "json_schema": {"name": "r", "schema": schema}}
    c = compile_constraint(model, family=None, tools=None, tool_choice="auto", response_format=rf)
    prompt = model.tokenize("<s>hi")
    for seed in range(10):
        res = generate(
            model,
            prompt,
            max_tokens=60,
            constraint=c,
            stop=(),
            sampling={"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0, "seed": seed},
        ).run()
        assert res.finish_reason == "stop"
        jsonschema.validate(json.loads(res.text), schema)


def test_tool_choice_wins_over_response_format(model):
    rf = {"type": "json_object"}
    forced = compile_constraint(
        model, family="hermes", tools=[WEATHER], tool_choice="required", response_format=rf
    )
    assert forced.after("<tool_call>")
    with pytest.raises(ConstraintError):
        forced.after("{")
    # none: tools are off, the reply is the JSON
    plain = compile_constraint(
        model, family="hermes", tools=[WEATHER], tool_choice="none", response_format=rf
    )
    plain.after('{"a": 1')
    with pytest.raises(ConstraintError):
        plain.after("<tool_call>")


def test_auto_keeps_text_free_and_holds_the_call(model):
    c = compile_constraint(model, family="hermes", tools=[WEATHER], tool_choice="auto")
    c.after("Any text { at all } first. ")
    held = c.after('Sure. <tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"')
    with pytest.raises(ConstraintError):  # the held call names a declared tool
        c.after('Sure. <tool_call>\n{"name": "get_time"')
    with pytest.raises(ConstraintError):  # and its schema's values
        held.after(', "unit": "kelvin"')
    held.after(', "unit": "c"}}\n</tool_call>')


def test_reasoning_comes_before_a_forced_call_and_is_not_held(model, tiny_gguf):
    c = compile_constraint(model, family="hermes", tools=[WEATHER], tool_choice="required", reasoning=True)
    c.after("<think>I could call {anything} here: tool_call is only words.</think>\n<tool_call>")
    # closed by a special token, the block holds any token, even a call opener's
    path = tiny_gguf(
        control_tokens=["<s>", "</s>"],
        user_tokens=["<tool_call>", "</tool_call>", "<think>", "</think>"],
        bos="<s>",
        eos="</s>",
    )
    special = load_model(path, n_ctx=512)
    c2 = compile_constraint(special, family="hermes", tools=[WEATHER], tool_choice="required", reasoning=True)
    c2.after("<think>maybe <tool_call> or not</think>\n<tool_call>")
    special.close()
    prefilled = compile_constraint(
        model, family="hermes", tools=[WEATHER], tool_choice="required", in_reasoning=True
    )
    prefilled.after("thinking freely</think><tool_call>")
    with pytest.raises(ConstraintError):  # without a reasoning block the call comes first
        compile_constraint(model, family="hermes", tools=[WEATHER], tool_choice="required").after("<think>")


def test_compiled_constraints_are_cached(model):
    tools = [tool(f"tool_{i}", {"a": {"type": "string"}, "b": {"type": "integer"}}, ["a"]) for i in range(32)]
    t0 = time.process_time()  # CPU time: a busy machine does not count
    first = compile_constraint(model, family="hermes", tools=tools, tool_choice="required")
    again = compile_constraint(model, family="hermes", tools=tools, tool_choice="required")
    assert again.grammar == first.grammar and again.describe == first.describe
    # the cache itself lives beside the vocabulary: the same model loaded in this process
    inline = load_model(model.path, n_ctx=2048, isolate=False)
    try:
        one = compile_constraint(inline, family="hermes", tools=tools, tool_choice="required")
        two = compile_constraint(inline, family="hermes", tools=tools, tool_choice="required")
        assert two._matcher is one._matcher and one.grammar == first.grammar
    finally:
        inline.close()
    assert time.process_time() - t0 < 30  # sanity only; the speed is bench figure 7's


def test_n4_a_constraint_over_too_many_tools_or_too_big_schemas_is_refused_at_once(model):
    """N4 beyond the server: the window, the CLI and the check build constraints too; thousands of
    tools are a quick error naming the limit, not a minute of the engine's time."""
    from app.engine.constraints import MAX_CONSTRAINT_SCHEMA_BYTES, MAX_CONSTRAINT_TOOLS

    many = [tool(f"t{i}", {"x": {"type": "string"}}, ["x"]) for i in range(MAX_CONSTRAINT_TOOLS + 1)]
    with pytest.raises(ConstraintError, match=rf"at most {MAX_CONSTRAINT_TOOLS}\)"):
        compile_constraint(model, family="hermes", tools=many, tool_choice="required")
    big = tool("big", {"x": {"type": "string", "description": "d" * MAX_CONSTRAINT_SCHEMA_BYTES}}, ["x"])
    with pytest.raises(ConstraintError, match="more than a constraint is built from"):
        compile_constraint(model, family="hermes", tools=[big], tool_choice="required")
    # at the bound it is built
    assert compile_constraint(
        model, family="hermes", tools=many[:MAX_CONSTRAINT_TOOLS], tool_choice="required"
    )
