"""JSON typing has one rule, in app.json_schema, for the formats, the dispatcher and the check."""

from __future__ import annotations

import pytest

from app import json_schema
from app.json_schema import PaddedInt, json_type, schema_problem, type_arguments, type_value
from app.tools.validation import describe_value, validate_arguments


@pytest.mark.parametrize(
    ("value", "name"),
    [
        (None, "null"),
        (True, "boolean"),
        (3, "integer"),
        (2.5, "number"),
        ("x", "string"),
        ([1], "array"),
        ((1, 2), "array"),
        ({"a": 1}, "object"),
        ({1, 2}, "set"),
    ],
)
def test_json_type_names_every_value_by_one_rule(value, name):
    assert json_type(value) == name


def test_the_dispatcher_and_the_check_use_that_rule():
    assert describe_value((1, 2)) == "array [1, 2]"
    assert describe_value(None) == "null"
    assert schema_problem({"n": (1,)}, {"type": "object", "properties": {"n": {"type": "string"}}}) == (
        "n: expected string, got array"
    )
    # A value JSON has no type for fits no schema type, and is named by its Python type.
    assert schema_problem(b"x", {"type": "string"}) == "arguments: expected string, got bytes"


def test_typing_by_schema_ignores_values_json_has_no_type_for():
    # The formats type arguments by the same rule: a tuple is no list to recurse into, a set is
    # kept as it is (for the dispatcher to reject).
    assert type_value((1, "2"), {"type": "array", "items": {"type": "integer"}}) == (1, "2")
    assert type_value({1}, {"type": "integer"}) == {1}


@pytest.mark.parametrize(
    ("schema", "want"),
    [
        ({"type": "integer"}, 7),
        ({"type": "number"}, 7),
        ({"type": ["integer", "null"]}, 7),
        ({"type": "string"}, "007"),
        ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, "007"),
        ({}, "007"),
    ],
)
def test_an_integer_written_with_leading_zeros_is_typed_by_the_schema(schema, want):
    got = type_value(PaddedInt("007"), schema)
    assert got == want and type(got) is type(want)  # a plain str or int, never the marker type


def test_an_undeclared_argument_written_with_leading_zeros_is_its_text():
    got = type_arguments({"zip": PaddedInt("02139")}, {"properties": {}})["zip"]
    assert got == "02139" and type(got) is str


def test_no_module_keeps_its_own_copy():
    import app.check.scorer as scorer
    import app.tools.validation as validation

    assert validation.json_type is json_schema.json_type
    assert not hasattr(scorer, "_json_type") and not hasattr(validation, "_json_type")
    assert scorer.schema_problem is json_schema.schema_problem


def test_validation_sentence_names_the_type():
    schema = {"type": "object", "properties": {"days": {"type": "integer"}}}
    expected = "Parameter 'days' must be an integer, got string \"ten\"."
    assert validate_arguments(schema, {"days": "ten"}) == expected
