"""Tool guidance: every registered family's example call parses back to exactly that call, so
the guidance put into a system prompt can never teach a syntax the parser does not read."""

from __future__ import annotations

import json

import pytest

from app.engine.formats import FORMATS
from app.engine.formats.guidance import call_example, example_arguments, tool_guidance


def tool(name: str, props: dict, required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"{name} tool",
            "parameters": {"type": "object", "properties": props, "required": required},
        },
    }


WEATHER = tool("get_weather", {"city": {"type": "string"}, "days": {"type": "integer"}}, ["city"])
SEARCH = tool(
    "search",
    {
        "query": {"type": "string"},
        "limit": {"type": "integer"},
        "exact": {"type": "boolean"},
        "score": {"type": "number"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "filters": {"type": "object"},
    },
    ["query"],
)
NOARGS = tool("get_time", {}, [])
TOOLS = [WEATHER, SEARCH, NOARGS]


def parsed(family: str, text: str) -> list[tuple[str, dict]]:
    reply = FORMATS[family].parse(text, TOOLS)
    assert reply.content == "" and reply.reasoning == "", (family, text, reply)
    return [(c.name, dict(c.arguments)) for c in reply.tool_calls]


def test_every_registered_family_has_an_example():
    assert len(FORMATS) >= 13
    for family, fmt in FORMATS.items():
        assert call_example(family, "get_time", {}) == fmt.example_call("get_time", {})


@pytest.mark.parametrize("family", sorted(FORMATS))
def test_example_round_trips(family):
    text = call_example(family, "get_weather", {"city": "Oslo", "days": 3})
    assert parsed(family, text) == [("get_weather", {"city": "Oslo", "days": 3})]


@pytest.mark.parametrize("family", sorted(FORMATS))
def test_example_round_trips_every_json_type(family):
    args = {
        "query": 'a "quoted" text, with commas: x=1',
        "limit": 5,
        "exact": True,
        "score": -2.5,
        "tags": ["x", "y z"],
        "filters": {"year": 2020, "open": False},
    }
    assert parsed(family, call_example(family, "search", args)) == [("search", args)]
    assert parsed(family, call_example(family, "get_time", {})) == [("get_time", {})]


@pytest.mark.parametrize("family", sorted(FORMATS))
def test_guidance_shows_the_tools_and_a_parsable_example(family):
    text = tool_guidance(family, TOOLS)
    assert json.dumps(TOOLS, ensure_ascii=False) in text
    example = call_example(family, "get_weather", example_arguments(WEATHER))
    assert example in text
    assert parsed(family, example) == [("get_weather", {"city": "<city>"})]


def test_example_arguments_follow_the_schema():
    assert example_arguments(WEATHER) == {"city": "<city>"}
    assert example_arguments(NOARGS) == {}
    enum = tool("mode", {"m": {"enum": ["fast", "slow"]}, "n": {"type": ["null", "integer"]}}, ["m", "n"])
    assert example_arguments(enum) == {"m": "<m: fast or slow>", "n": "<n: integer>"}
    optional = tool("g", {"tz": {"anyOf": [{"type": "null"}, {"type": "integer"}], "default": None}}, [])
    assert example_arguments(optional) == {"tz": "<tz: integer>"}
    # nothing required: the first parameter shows the shape
    assert example_arguments(tool("f", {"a": {"type": "boolean"}, "b": {}}, [])) == {
        "a": "<a: true or false>"
    }


def test_i32_example_values_cannot_pass_for_real_arguments():
    """Issue 32 item 5: small models copy the example call's values (``"text"``, ``1``) as their
    arguments; every placeholder is in angle brackets, named after its parameter."""
    props = SEARCH["function"]["parameters"]["properties"]  # every JSON type
    args = example_arguments(tool("search", props, list(props)))
    assert set(args) == set(props)
    for name, value in args.items():
        assert isinstance(value, str) and value.startswith(f"<{name}") and value.endswith(">")
    for family in sorted(FORMATS):
        assert parsed(family, call_example(family, "search", args)) == [("search", args)]


def test_unknown_family_and_no_tools_are_clear_errors():
    with pytest.raises(ValueError, match="no call example for the tool-call format 'klingon'"):
        call_example("klingon", "f", {})
    with pytest.raises(ValueError, match="at least one tool"):
        tool_guidance("hermes", [])
