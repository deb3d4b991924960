"""Nemotron Nano v2: ``<TOOLCALL>[{"name": ..., "arguments": {...}}, ...]</TOOLCALL>``, ``<think>``."""

import re
from dataclasses import replace

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "nemotron-v2"

W = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'
S = '{"name": "search", "arguments": {"query": "x", "limit": "10"}}'
ONE = "<TOOLCALL>[" + W + "]</TOOLCALL>"
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})

CASES = [
    # -- calls as the model writes them
    Case("single", ONE, calls=[PW], ids=["call00000"]),
    Case("text-around", "Let me look.\n" + ONE + "\nDone.", content="Let me look.\n\nDone.", calls=[PW]),
    Case(
        "parallel-in-one-list",
        "<TOOLCALL>[" + W + ", " + S + "]</TOOLCALL>",
        calls=[PW, PS],
        ids=["call00000", "call00001"],
    ),
    Case("two-lists", ONE + "\n<TOOLCALL>[" + S + "]</TOOLCALL>", content="\n", calls=[PW, PS]),
    Case("spaced-list", "<TOOLCALL>\n[\n  " + W + "\n]\n</TOOLCALL>", calls=[PW]),
    Case(
        "arguments-as-json-string",
        '<TOOLCALL>[{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}]</TOOLCALL>',
        calls=[("get_weather", {"city": "Rome"})],
    ),
    Case(
        "no-arguments",
        '<TOOLCALL>[{"name": "get_time", "arguments": {}}]</TOOLCALL>',
        calls=[("get_time", {})],
    ),
    Case(
        "typed-by-schema",
        '<TOOLCALL>[{"name": "search", "arguments": {"query": "q", "limit": "7", "tags": "[\\"a\\"]", '
        '"score": "null"}}]</TOOLCALL>',
        calls=[("search", {"query": "q", "limit": 7, "tags": ["a"], "score": None})],
    ),
    Case(
        "string-props-keep-text",
        '<TOOLCALL>[{"name": "set_port", "arguments": {"port": "8080", "zip": "02139"}}]</TOOLCALL>',
        calls=[("set_port", {"port": "8080", "zip": "02139"})],
    ),
    Case(
        "markers-inside-json-string",
        '<TOOLCALL>[{"name": "set_port", "arguments": {"blob": "a </TOOLCALL> b <TOOLCALL>[ ]"}}]</TOOLCALL>',
        calls=[("set_port", {"blob": "a </TOOLCALL> b <TOOLCALL>[ ]"})],
    ),
    Case(
        "unicode",
        '<TOOLCALL>[{"name": "get_weather", "arguments": {"city": "Zürich 東京"}}]</TOOLCALL>',
        calls=[("get_weather", {"city": "Zürich 東京"})],
    ),
    Case("close-implied-at-eos", "<TOOLCALL>[" + W + "]\n", calls=[PW]),
    # -- reasoning (the generation prompt opens <think>)
    Case(
        "prefilled-think",
        "The user wants weather.\n</think>\n" + ONE,
        in_reasoning=True,
        reasoning="The user wants weather.\n",
        content="\n",
        calls=[PW],
    ),
    Case("think-block", "<think>plan</think>" + ONE, reasoning="plan", calls=[PW]),
    Case(
        "call-in-closed-reasoning",
        "<think>maybe " + ONE + " or not</think>Hello",
        reasoning="maybe " + ONE + " or not",
        content="Hello",
    ),
    Case(
        "prefilled-unclosed-then-call",
        "I need the tool.\n" + ONE,
        in_reasoning=True,
        reasoning="I need the tool.\n",
        calls=[PW],
    ),
    # -- cut replies: complete calls kept, the cut one is text
    Case(
        "cut-in-second-element",
        "<TOOLCALL>[" + W + ', {"name": "search", "argu',
        truncated=True,
        calls=[PW],
        incomplete=["search"],
    ),
    Case("cut-in-close-tag", "<TOOLCALL>[" + W + "]</TOOL", truncated=True, calls=[PW]),
    Case("cut-in-first-element", '<TOOLCALL>[{"name": "get_wea', truncated=True, incomplete=[None]),
    Case("missing-close-truncated", "<TOOLCALL>[" + W + "]", truncated=True, calls=[PW]),
    # -- not this family's shapes: text
    Case(
        "extra-key",
        '<TOOLCALL>[{"name": "get_time", "arguments": {}, "id": "x"}]</TOOLCALL>',
        content='<TOOLCALL>[{"name": "get_time", "arguments": {}, "id": "x"}]</TOOLCALL>',
    ),
    Case(
        "parameters-key",
        '<TOOLCALL>[{"name": "get_time", "parameters": {}}]</TOOLCALL>',
        content='<TOOLCALL>[{"name": "get_time", "parameters": {}}]</TOOLCALL>',
    ),
    Case(
        "missing-arguments",
        '<TOOLCALL>[{"name": "get_time"}]</TOOLCALL>',
        content='<TOOLCALL>[{"name": "get_time"}]</TOOLCALL>',
    ),
    Case("empty-list", "<TOOLCALL>[]</TOOLCALL>", content="<TOOLCALL>[]</TOOLCALL>"),
    Case(
        "text-after-list",
        "<TOOLCALL>[" + W + "] more</TOOLCALL>",
        content="<TOOLCALL>[" + W + "] more</TOOLCALL>",
        stable_prefix=False,
    ),
    Case(
        "one-bad-element",
        "<TOOLCALL>[" + W + ', {"x": 1}]</TOOLCALL>',
        content="<TOOLCALL>[" + W + ', {"x": 1}]</TOOLCALL>',
        stable_prefix=False,
    ),
    Case(
        "unclosed-at-eos",
        '<TOOLCALL>[{"name": "get_time", "argu',
        content='<TOOLCALL>[{"name": "get_time", "argu',
    ),
    Case("lowercase-tag", "<toolcall>[" + W + "]</toolcall>", content="<toolcall>[" + W + "]</toolcall>"),
    Case("partial-marker-text", "a <TOOL and <TOOLCAL are text", content="a <TOOL and <TOOLCAL are text"),
]

CASES += close_tag_in_argument_cases(
    ("<think>", "</think>"),
    '<TOOLCALL>[{"name": "set_port", "arguments": {"blob": "why <think> and </think> here"}}]</TOOLCALL>',
    ("set_port", {"blob": "why <think> and </think> here"}),
    "<TOOLCALL>",
)

# -- vLLM nemotron_json's deviation: one call object without the list, read as a one-element list
OBJ = "<TOOLCALL>" + W + "</TOOLCALL>"


def _text(case_id: str, text: str, **kw) -> Case:
    """A region that is not the deviation: the text, byte for byte."""
    return Case(case_id, text, content=text, **kw)


BARE_OBJECT = [
    Case("object-single", OBJ, calls=[PW], ids=["call00000"]),
    Case("object-spaced", "<TOOLCALL>\n" + W + "\n</TOOLCALL>", calls=[PW]),
    Case("object-text-around", "Looking.\n" + OBJ + "\nDone.", content="Looking.\n\nDone.", calls=[PW]),
    Case("object-then-list", OBJ + "\n<TOOLCALL>[" + S + "]</TOOLCALL>", content="\n", calls=[PW, PS]),
    Case("list-then-object", ONE + "<TOOLCALL>" + S + "</TOOLCALL>", calls=[PW, PS]),
    Case(
        "two-objects",
        OBJ + OBJ.replace("Paris", "Oslo"),
        calls=[PW, ("get_weather", {"city": "Oslo", "days": 3})],
    ),
    Case(
        "object-prefilled-think",
        "Weather first.\n</think>\n" + OBJ,
        in_reasoning=True,
        reasoning="Weather first.\n",
        content="\n",
        calls=[PW],
    ),
    Case(
        "object-prefilled-unclosed",
        "Weather first.\n" + OBJ,
        in_reasoning=True,
        reasoning="Weather first.\n",
        calls=[PW],
    ),
    Case(
        "object-in-closed-reasoning",
        "<think>maybe " + OBJ + "</think>Hi",
        reasoning="maybe " + OBJ,
        content="Hi",
    ),
    Case(
        "object-markers-inside-string",
        '<TOOLCALL>{"name": "set_port", "arguments": {"blob": "} </TOOLCALL> <TOOLCALL>{"}}</TOOLCALL>',
        calls=[("set_port", {"blob": "} </TOOLCALL> <TOOLCALL>{"})],
    ),
    Case(
        "object-arguments-as-json-string",
        '<TOOLCALL>{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}</TOOLCALL>',
        calls=[("get_weather", {"city": "Rome"})],
    ),
    Case(
        "object-typed-by-schema",
        '<TOOLCALL>{"name": "search", "arguments": {"query": "q", "limit": "7", "score": "null"}}</TOOLCALL>',
        calls=[("search", {"query": "q", "limit": 7, "score": None})],
    ),
    Case("object-close-implied-at-eos", "<TOOLCALL>" + W + "\n", calls=[PW]),
    # cut by the token limit
    Case(
        "object-cut-inside",
        '<TOOLCALL>{"name": "search", "arguments": {"que',
        truncated=True,
        incomplete=["search"],
    ),
    Case("object-cut-in-close-tag", "<TOOLCALL>" + W + "</TOOL", truncated=True, calls=[PW]),
    Case("object-cut-before-close", "<TOOLCALL>" + W, truncated=True, calls=[PW]),
    Case(
        "object-cut-second",
        OBJ + '<TOOLCALL>{"name": "search", "argu',
        truncated=True,
        calls=[PW],
        incomplete=["search"],
    ),
    # not the deviation: text
    _text("object-extra-key", '<TOOLCALL>{"name": "get_time", "arguments": {}, "id": "x"}</TOOLCALL>'),
    _text("object-missing-arguments", '<TOOLCALL>{"name": "get_time"}</TOOLCALL>'),
    _text("object-parameters-key", '<TOOLCALL>{"name": "get_time", "parameters": {}}</TOOLCALL>'),
    _text("object-arguments-not-object", '<TOOLCALL>{"name": "get_time", "arguments": 3}</TOOLCALL>'),
    _text("object-empty", "<TOOLCALL>{}</TOOLCALL>"),
    _text("object-two-in-one-tag", "<TOOLCALL>" + W + ", " + S + "</TOOLCALL>", stable_prefix=False),
    _text("object-two-adjacent", "<TOOLCALL>" + W + S + "</TOOLCALL>", stable_prefix=False),
    _text("object-text-after", "<TOOLCALL>" + W + " more</TOOLCALL>", stable_prefix=False),
    _text("object-text-before", "<TOOLCALL>call " + W + "</TOOLCALL>"),
    _text("object-unclosed-at-eos", '<TOOLCALL>{"name": "get_time", "argu'),
    _text("object-wrong-nesting", '<TOOLCALL>{"name": "get_time", "arguments": {</TOOLCALL>}}'),
    _text("object-not-json", "<TOOLCALL>{name: get_time}</TOOLCALL>"),
]
CASES += BARE_OBJECT

CASES += [
    replace(c, id="object-" + c.id)
    for c in close_tag_in_argument_cases(
        ("<think>", "</think>"),
        '<TOOLCALL>{"name": "set_port", "arguments": {"blob": "why <think> and </think> here"}}</TOOLCALL>',
        ("set_port", {"blob": "why <think> and </think> here"}),
        "<TOOLCALL>",
    )
]

_OPEN, _CLOSE = "<TOOLCALL>", "</TOOLCALL>"
# The list's brackets, commas and tags are structure (each call's raw is its element); a reply
# cut inside the closing tag has only complete calls, the partial tag is structure too.
FUZZ = Fuzz(
    markers=(_CLOSE,),
    structure=(
        re.escape(_OPEN),
        r"\[",
        r"\]",
        ",",
        re.escape(_CLOSE),
        "(?:" + "|".join(re.escape(_CLOSE[:k]) for k in range(1, len(_CLOSE))) + r")\Z",
    ),
    wrap=(_OPEN + "[", "]" + _CLOSE),
)
