"""Apertus: ``<|tools_prefix|>[{"NAME": {...}}, ...]<|tools_suffix|>``; ``<|inner_prefix|>`` reasoning."""

import re

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "apertus"

OP, CL = "<|tools_prefix|>", "<|tools_suffix|>"
W = '{"get_weather": {"city": "Paris", "days": 3}}'
S = '{"search": {"query": "x", "limit": "10"}}'
ONE = OP + "[" + W + "]" + CL
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})

CASES = [
    Case("single", ONE, calls=[PW], ids=["call00000"]),
    Case("parallel", OP + "[" + W + ", " + S + "]" + CL, calls=[PW, PS]),
    Case("text-then-call", "Sure.\n" + ONE, content="Sure.\n", calls=[PW]),
    Case(
        "arguments-as-json-string",
        OP + '[{"get_weather": "{\\"city\\": \\"Rome\\"}"}]' + CL,
        calls=[("get_weather", {"city": "Rome"})],
    ),
    Case("no-arguments", OP + '[{"get_time": {}}]' + CL, calls=[("get_time", {})]),
    Case(
        "typed-by-schema",
        OP + '[{"search": {"query": "q", "tags": "[\\"a\\"]", "score": "1.5"}}]' + CL,
        calls=[("search", {"query": "q", "tags": ["a"], "score": 1.5})],
    ),
    Case(
        "string-props-keep-text",
        OP + '[{"set_port": {"port": "8080", "flag": "false"}}]' + CL,
        calls=[("set_port", {"port": "8080", "flag": "false"})],
    ),
    Case(
        "markers-inside-json-string",
        OP + '[{"set_port": {"blob": "<|tools_suffix|> ]"}}]' + CL,
        calls=[("set_port", {"blob": "<|tools_suffix|> ]"})],
    ),
    Case(
        "dotted-name",
        OP + '[{"fs.read_file": {"path": "/tmp/a"}}]' + CL,
        calls=[("fs.read_file", {"path": "/tmp/a"})],
    ),
    # -- reasoning
    Case("inner-block", "<|inner_prefix|>plan<|inner_suffix|>" + ONE, reasoning="plan", calls=[PW]),
    Case(
        "call-in-closed-reasoning",
        "<|inner_prefix|>maybe " + ONE + "<|inner_suffix|>No.",
        reasoning="maybe " + ONE,
        content="No.",
    ),
    Case("orphan-close", "steps<|inner_suffix|>Answer", reasoning="steps", content="Answer"),
    # -- cut
    Case(
        "cut-in-second",
        OP + "[" + W + ', {"search": {"que',
        truncated=True,
        calls=[PW],
        incomplete=["search"],
    ),
    Case("cut-in-close-tag", OP + "[" + W + "]<|tools_su", truncated=True, calls=[PW]),
    Case("implied-close-at-eos", OP + "[" + W + "]", calls=[PW]),
    # -- not this family's shapes
    Case(
        "name-arguments-shape",
        OP + '[{"name": "get_time", "arguments": {}}]' + CL,
        content=OP + '[{"name": "get_time", "arguments": {}}]' + CL,
    ),
    Case(
        "two-keys",
        OP + '[{"get_time": {}, "search": {}}]' + CL,
        content=OP + '[{"get_time": {}, "search": {}}]' + CL,
    ),
    Case("arguments-not-object", OP + '[{"get_time": [1]}]' + CL, content=OP + '[{"get_time": [1]}]' + CL),
    Case("name-with-space", OP + '[{"get time": {}}]' + CL, content=OP + '[{"get time": {}}]' + CL),
    Case("object-not-list", OP + W + CL, content=OP + W + CL),
    Case("unclosed-at-eos", OP + '[{"get_time": {', content=OP + '[{"get_time": {'),
]

CASES += close_tag_in_argument_cases(
    ("<|inner_prefix|>", "<|inner_suffix|>"),
    OP + '[{"set_port": {"blob": "why <|inner_prefix|> and <|inner_suffix|> here"}}]' + CL,
    ("set_port", {"blob": "why <|inner_prefix|> and <|inner_suffix|> here"}),
    OP,
)

_OPEN, _CLOSE = "<|tools_prefix|>", "<|tools_suffix|>"
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
