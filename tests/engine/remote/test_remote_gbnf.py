"""Tool choice held on a remote engine: every family's constraint grammar, translated to GBNF, is
accepted by llama.cpp, and a tiny random-weight model (only the grammar decides what it writes)
sampling with it gives exactly one call to the right tool that the family's own parser reads and
the tool's schema accepts. String values here are enums: on a byte-level vocabulary llama.cpp's
grammar lets an invalid UTF-8 sequence through inside free text, which would make a length check
fail for a reason that is not the grammar's."""

from __future__ import annotations

import jsonschema
import pytest

from app.engine import generate, load_model
from app.engine.constraints.remote import remote_grammar
from app.engine.errors import GbnfError
from app.engine.formats import FORMATS
from app.engine.generation import validate_grammar
from app.engine.grammar.gbnf import lark_to_gbnf
from tests.engine.test_constraints_families import markers

SAMPLES = 3
SAMPLING = {"temperature": 1.0, "top_k": 0, "top_p": 1.0, "min_p": 0.0}


def tool(name: str, props: dict, required: list[str]) -> dict:
    params = {"type": "object", "properties": props, "required": required}
    return {"type": "function", "function": {"name": name, "description": name, "parameters": params}}


TOOLS = [
    tool(
        "get_weather",
        {
            "city": {"type": "string", "enum": ["oslo", "rome"]},
            "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            "days": {"type": "integer"},
        },
        ["city"],
    ),
    tool(
        "set_alarm",
        {"hour": {"type": "integer"}, "loud": {"type": "boolean"}, "label": {"enum": ["work", "gym"]}},
        ["hour", "loud"],
    ),
    tool(
        "plan",
        {
            "stops": {"type": "array", "items": {"type": "integer"}, "maxItems": 2},
            "where": {
                "type": "object",
                "properties": {"lat": {"type": "number"}, "tag": {"enum": ["a", "b"]}},
                "required": ["lat"],
            },
        },
        ["where"],
    ),
    tool("get_time", {}, []),
]
SCHEMAS = {t["function"]["name"]: t["function"]["parameters"] for t in TOOLS}
NAMED = {"type": "function", "function": {"name": "set_alarm"}}


@pytest.fixture
def family_model(tiny_gguf):
    """A tiny model whose vocabulary has the family's markers as tokens (a marker llama.cpp would
    take for an end-of-generation token stays text, as in the local constraint tests)."""
    opened = []

    def make(family: str):
        user = markers(family)
        for _ in range(2):
            path = tiny_gguf(control_tokens=["<s>", "</s>"], user_tokens=user, bos="<s>", eos="</s>", seed=7)
            model = load_model(path, n_ctx=1024, isolate=False)
            eog = {model.token_bytes(t).decode() for t in model.eog_ids} - {"</s>"}
            if not eog & set(user):
                break
            model.close()
            user = [m for m in user if m not in eog]
        opened.append(model)
        return model

    yield make
    for m in opened:
        m.close()


@pytest.mark.parametrize("family", sorted(FORMATS))
def test_each_family_gbnf_holds_required_and_named_calls(family, family_model):
    model = family_model(family)
    prompt = [model.metadata.bos_token_id or 0] + list(model.llm.tokenize(b"Hi!", add_bos=False))
    for choice, forced in (("required", None), (NAMED, "set_alarm")):
        gbnf = remote_grammar(
            family=family, tools=TOOLS, tool_choice=choice, parallel_tool_calls=False, special_tokens=["</s>"]
        )
        assert gbnf is not None and gbnf.startswith("root ::= ")
        validate_grammar(model, gbnf)
        for seed in range(SAMPLES):
            res = generate(
                model, prompt, max_tokens=400, grammar=gbnf, sampling={**SAMPLING, "seed": seed}, stop=()
            ).run()
            assert res.finish_reason == "stop", (family, res.text)
            reply = FORMATS[family].parse(res.text, TOOLS)
            assert len(reply.tool_calls) == 1 and not reply.content.strip(), (family, res.text, reply)
            call = reply.tool_calls[0]
            assert forced is None or call.name == forced, (family, res.text)
            jsonschema.validate(dict(call.arguments), SCHEMAS[call.name])


def test_auto_and_none_hold_nothing_and_response_format_holds_json(family_model):
    assert remote_grammar(family="hermes", tools=TOOLS, tool_choice="auto") is None
    assert remote_grammar(family="hermes", tools=TOOLS, tool_choice="none") is None
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    rf = {"type": "json_schema", "json_schema": {"name": "r", "schema": schema}}
    gbnf = remote_grammar(family=None, tools=None, response_format=rf)
    model = family_model("hermes")
    validate_grammar(model, gbnf)
    import json

    for seed in range(SAMPLES):
        res = generate(model, [1, 2], max_tokens=50, grammar=gbnf, sampling={**SAMPLING, "seed": seed}).run()
        jsonschema.validate(json.loads(res.text), schema)


def test_a_lazy_marker_ends_the_text_and_a_bounded_one_counts(family_model):
    lark = 'start: "<a>" t_1 "!"\nt_1[lazy]: /(?s:.{0,5})/ "</a>"\n'
    gbnf = lark_to_gbnf(lark)
    model = family_model("hermes")
    validate_grammar(model, gbnf)
    for seed in range(SAMPLES):
        res = generate(model, [1, 2], max_tokens=60, grammar=gbnf, sampling={**SAMPLING, "seed": seed}).run()
        assert res.text.startswith("<a>") and res.text.endswith("</a>!") and res.text.count("</a>") == 1
    unbounded = lark_to_gbnf('start: t_1\nt_1[lazy]: /(?s:.*)/ "abab"\n')
    validate_grammar(model, unbounded)
    # the text before the marker may not end so that the marker appears earlier: "ab" + "abab"
    assert '"a" nc-1-1' in unbounded


@pytest.mark.parametrize(
    ("lark", "names"),
    [
        ("start: <[^5,6]>*\n", "negated token set"),
        ("start: /(?s:.*)/ & ~/x/\n", "operator"),
        ("start: /(?=a)b/\n", "group extension"),
        ('start: "a"i\n', "string flags"),
        ("start: other\n", "undefined rule"),
        ('start: x\nx[lazy]: "a" "b"\n', "lazy rule"),
    ],
)
def test_constructs_without_a_translation_are_named(lark, names):
    with pytest.raises(GbnfError, match=names):
        lark_to_gbnf(lark)


def test_eog_closing_markers_are_left_out_and_literals_escape():
    gbnf = remote_grammar(family="harmony", tools=TOOLS, tool_choice=NAMED, parallel_tool_calls=False)
    assert "<|call|>" not in gbnf and "<|constrain|>" in gbnf
    assert lark_to_gbnf('start: "q\\"\\\\\\n"\n').splitlines()[1] == 'l-start ::= "q\\"\\\\\\n"'


def test_a_bounded_string_holds_no_control_character(family_model):
    """A string with a length bound is written character by character; each is a JSON string
    character (llama-cpp-python's converter let control characters in: JSON readers refuse them)."""
    import json

    schema = {
        "type": "object",
        "properties": {"s": {"type": "string", "minLength": 6, "maxLength": 12}},
        "required": ["s"],
    }
    gbnf = remote_grammar(
        family=None, tools=None, response_format={"type": "json_schema", "json_schema": {"schema": schema}}
    )
    assert gbnf is not None
    model = family_model("hermes")
    for seed in range(SAMPLES * 2):
        res = generate(model, [1, 2], max_tokens=80, grammar=gbnf, sampling={**SAMPLING, "seed": seed}).run()
        # No raw control character in what was written (json.loads refuses one too); an escape
        # such as \t is a JSON string character, and its value may be a control character.
        assert not any(ord(c) < 0x20 for c in res.text), res.text
        assert isinstance(json.loads(res.text)["s"], str)
