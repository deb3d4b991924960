"""Issue 31: a number a constraint holds has a bounded number of digits. A small model held to a
schema wrote ``"count": 1111111111...`` until the token limit (finish ``length``, the call never
complete). Every ``integer`` and ``number`` a held call, a ``json_schema`` reply or a
``json_object`` reply may write is bounded (``app.engine.grammar.lark``: at most 2**53 - 1 either
side where the schema leaves it open, 10 fraction digits where it sets no ``multipleOf``), while
what the schema declares keeps its meaning.

The constraint's own token mask is read after a prefix written token by token (a tiny byte-level
model: every digit is one token). The live part is ``test_constraints_live``, which runs with
n-gram drafting again: there, unbounded, Gemma 3's first named-tool prompt (after the required
ones) wrote zeros up to the limit."""

from __future__ import annotations

import re

import pytest

from app.engine import load_model
from app.engine.constraints import compile_constraint
from app.engine.constraints.remote import remote_grammar
from app.engine.formats import FORMATS
from app.engine.formats.guidance import call_example
from app.engine.grammar.lark import SAFE_INTEGER, bound_numbers

SIXTEEN = "1" * 16  # 1111111111111111 < 2**53 - 1 < 11111111111111111
TEN = "3" * 10  # a fraction's ten digits

COUNT = {
    "type": "function",
    "function": {
        "name": "count",
        "description": "count",
        "parameters": {
            "type": "object",
            "properties": {"n": {"type": "integer"}, "x": {"type": "number"}},
            "required": ["n", "x"],
        },
    },
}


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    from app.engine.models.tiny import write_tiny_gguf

    path = write_tiny_gguf(tmp_path_factory.mktemp("digits") / "tiny.gguf", seed=5)
    m = load_model(path, n_ctx=1024, n_threads=1, isolate=False)
    yield m
    m.close()


def _digits_allowed(constraint, model, text: str) -> set[str]:
    """The digits the constraint allows right after ``text``."""
    allowed = constraint.after(text).start().allowed()
    return {d for d in "0123456789" if allowed[model.tokenize_text(d)[0]]}


@pytest.mark.parametrize("family", sorted(FORMATS))
def test_a_held_call_refuses_a_17th_integer_digit_and_an_11th_fraction_digit(model, family):
    """Every family (JSON wires, values written as text, value notations): after 16 digits of an
    integer no digit may follow, after 15 one may; a fraction stops at 10 digits."""
    c = compile_constraint(
        model, family=family, tools=[COUNT], tool_choice={"type": "function", "function": {"name": "count"}}
    )
    text = call_example(family, "count", {"n": int(SIXTEEN), "x": float("0." + TEN)})
    if family.startswith("command-r"):  # its parser reads the pretty list; its grammar holds it compact
        text = re.sub(r'\[\n\s*\{("tool_call_id": "0", )?', "[{", text).replace("}\n]", "}]")
    at = text.index(SIXTEEN) + len(SIXTEEN)
    assert _digits_allowed(c, model, text[:at]) == set(), (family, text[:at])
    assert "1" in _digits_allowed(c, model, text[: at - 1]), family
    at = text.index("0." + TEN) + len("0." + TEN)
    assert _digits_allowed(c, model, text[:at]) == set(), (family, text[:at])
    assert _digits_allowed(c, model, text[: at - 1]) == set("0123456789"), family
    c.after(text)  # the whole call still fits


def test_a_json_schema_reply_and_a_json_object_reply_are_bounded_too(model):
    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "x": {"type": "number"}}}
    fmt = {"type": "json_schema", "json_schema": {"name": "s", "schema": schema}}
    c = compile_constraint(model, family=None, tools=None, response_format=fmt)
    assert _digits_allowed(c, model, '{"n": ' + SIXTEEN) == set()
    assert _digits_allowed(c, model, '{"n": -' + SIXTEEN) == set()
    assert _digits_allowed(c, model, '{"n": 1, "x": 0.' + TEN) == set()
    assert _digits_allowed(c, model, '{"n": 1, "x": -12.' + TEN[:-1]) == set("0123456789")
    # json_object already bounded its integers (+-10**15); its numbers' fractions were endless
    c = compile_constraint(model, family=None, tools=None, response_format={"type": "json_object"})
    assert _digits_allowed(c, model, '{"a": 0.' + TEN) == set()
    assert _digits_allowed(c, model, '{"a": [1, 2.' + TEN) == set()
    assert _digits_allowed(c, model, '{"a": 0.' + TEN[:-1]) == set("0123456789")


def test_what_the_schema_declares_keeps_its_meaning(model):
    """A declared bound beyond the default is kept (a 19-digit maximum allows 19 digits; the
    other side still gets the default); a declared multipleOf sets the fraction; enum values are
    left as listed."""
    params = {
        "type": "object",
        "properties": {
            "big": {"type": "integer", "maximum": 10**18},
            "low": {"type": "integer", "minimum": -(10**18), "maximum": 5},
            "half": {"type": "number", "multipleOf": 0.5},
            "small": {"type": "number", "minimum": 0, "maximum": 1},
        },
        "required": ["big", "low", "half", "small"],
    }
    fmt = {"type": "json_schema", "json_schema": {"name": "s", "schema": params}}
    c = compile_constraint(model, family=None, tools=None, response_format=fmt)
    e17 = "1" + "0" * 17
    assert "0" in _digits_allowed(c, model, '{"big": ' + e17)  # 10**18: declared
    assert _digits_allowed(c, model, '{"big": ' + e17 + "0") == set()  # 10**19: not
    assert _digits_allowed(c, model, '{"big": -' + SIXTEEN) == set()  # the open side: the default
    assert "0" in _digits_allowed(c, model, '{"big": 1, "low": -' + e17)
    whole = '{"big": ' + str(10**18) + ', "low": -' + str(10**18) + ', "half": 2.5, "small": 0.' + TEN + "}"
    c.after(whole)
    assert _digits_allowed(c, model, '{"big": 1, "low": 1, "half": 2.5') == set()  # after .5: none
    assert bound_numbers({"type": "integer", "enum": [10**20]}) == {"type": "integer", "enum": [10**20]}


def test_the_rewrite_adds_only_what_is_missing():
    assert bound_numbers({"type": "integer"}) == {
        "type": "integer",
        "minimum": -SAFE_INTEGER,
        "maximum": SAFE_INTEGER,
    }
    # a declared maximum however high stays as declared (the minimum is the default)
    assert bound_numbers({"type": "integer", "maximum": 10**20}) == {
        "type": "integer",
        "maximum": 10**20,
        "minimum": -SAFE_INTEGER,
    }
    # a declared maximum below the default minimum: the minimum reaches as many digits as it has
    low = bound_numbers({"type": "integer", "exclusiveMaximum": -(10**17)})
    assert low["minimum"] == -(10**18 - 1) and low["exclusiveMaximum"] == -(10**17)
    n = bound_numbers({"type": ["number", "null"], "minimum": 0.5})
    assert n == {"type": ["number", "null"], "minimum": 0.5, "maximum": SAFE_INTEGER, "multipleOf": 1e-10}
    assert bound_numbers({"type": "number", "multipleOf": 0.25})["multipleOf"] == 0.25
    # nested: properties, items, anyOf, additionalProperties, $defs; allOf is left alone
    doc = bound_numbers(
        {
            "type": "object",
            "properties": {
                "a": {"type": "array", "items": {"anyOf": [{"type": "integer"}, {"type": "string"}]}}
            },
            "additionalProperties": {"type": "integer"},
            "$defs": {"d": {"type": "integer"}},
            "allOf": [{"properties": {"z": {"type": "integer"}}}],
        }
    )
    assert doc["properties"]["a"]["items"]["anyOf"][0]["maximum"] == SAFE_INTEGER
    assert doc["additionalProperties"]["maximum"] == SAFE_INTEGER
    assert doc["$defs"]["d"]["maximum"] == SAFE_INTEGER
    assert doc["allOf"] == [{"properties": {"z": {"type": "integer"}}}]


def test_values_written_as_text_allow_a_declared_bound_beyond_the_default(model):
    """A raw-value wire (qwen-xml) writes the integer as text: its regex reaches the digits of a
    declared bound (10**20, which llguidance's own JSON ranges cannot hold), and stops there."""
    tool = {
        "type": "function",
        "function": {
            "name": "count",
            "parameters": {
                "type": "object",
                "properties": {"n": {"type": "integer", "maximum": 10**20}},
                "required": ["n"],
            },
        },
    }
    c = compile_constraint(model, family="qwen-xml", tools=[tool], tool_choice="required")
    text = call_example("qwen-xml", "count", {"n": 10**20})
    c.after(text)
    at = text.index(str(10**20)) + 21
    assert _digits_allowed(c, model, text[:at]) == set()
    assert _digits_allowed(c, model, text[:at].replace(str(10**20), "-" + SIXTEEN)) == set()


def test_a_remote_engine_gets_the_same_bounds():
    """The GBNF for a remote engine writes the integer as the local grammar does: its rule names
    2**53 - 1 (llama.cpp's own converter allows any 16 digits, whatever the schema declares)."""
    gbnf = remote_grammar(family="hermes", tools=[COUNT], tool_choice="required")
    assert gbnf is not None
    spelled = " ".join(f'"{d}"' for d in str(SAFE_INTEGER))
    assert spelled in gbnf
    assert "([0-9]){1,10}" in gbnf  # the fraction
