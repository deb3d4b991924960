"""Apriel 1.5 / 1.6: ``<tool_calls>[{"name": ..., "arguments": {...}}]</tool_calls>``; reasoning before
``[BEGIN FINAL RESPONSE]`` (1.6's prompt ends with ``Here are my reasoning steps:``)."""

import re

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "apriel"

W = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'
S = '{"name": "search", "arguments": {"query": "x", "limit": "10"}}'
ONE = "<tool_calls>[" + W + "]</tool_calls>"
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})
F = "[BEGIN FINAL RESPONSE]"

CASES = [
    # -- calls
    Case("single", ONE, calls=[PW], ids=["call00000"]),
    Case("parallel", "<tool_calls>[" + W + ", " + S + "]</tool_calls>", calls=[PW, PS]),
    Case(
        "model-id-kept",
        '<tool_calls>[{"name": "get_time", "arguments": {}, "id": "t1x"}]</tool_calls>',
        calls=[("get_time", {})],
        ids=["t1x"],
    ),
    Case(
        "arguments-as-json-string",
        '<tool_calls>[{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}]</tool_calls>',
        calls=[("get_weather", {"city": "Rome"})],
    ),
    Case(
        "typed-by-schema",
        '<tool_calls>[{"name": "search", "arguments": {"query": "q", "limit": "7", "filters": "{\\"year\\": 2020}"}}]'
        "</tool_calls>",
        calls=[("search", {"query": "q", "limit": 7, "filters": {"year": 2020}})],
    ),
    Case(
        "markers-inside-json-string",
        '<tool_calls>[{"name": "set_port", "arguments": {"blob": "</tool_calls> [BEGIN FINAL RESPONSE]"}}]'
        "</tool_calls>",
        calls=[("set_port", {"blob": "</tool_calls> [BEGIN FINAL RESPONSE]"})],
    ),
    Case("text-around", "Checking.\n" + ONE + "\n", content="Checking.\n\n", calls=[PW]),
    # -- reasoning: 1.6 starts inside it; 1.5 may write the phrase or reason without it
    Case(
        "prefilled-reasoning-then-final",
        "1. weather\n" + F + "\n" + ONE,
        in_reasoning=True,
        reasoning="1. weather\n",
        content="\n",
        calls=[PW],
    ),
    Case(
        "prefilled-reasoning-answer",
        "think\n" + F + "\nIt is 4.",
        in_reasoning=True,
        reasoning="think\n",
        content="\nIt is 4.",
    ),
    Case(
        "reasoning-phrase-written",
        "Here are my reasoning steps:\nadd\n" + F + "\n4",
        reasoning="\nadd\n",
        content="\n4",
    ),
    Case("reasoning-without-phrase", "plain steps\n" + F + "\n4", reasoning="plain steps\n", content="\n4"),
    Case(
        "prefilled-unclosed-then-call",
        "I need the weather.\n" + ONE,
        in_reasoning=True,
        reasoning="I need the weather.\n",
        calls=[PW],
    ),
    Case(
        "call-in-reasoning-closed-later",
        "maybe " + ONE + " no\n" + F + "\nHi",
        in_reasoning=True,
        reasoning="maybe " + ONE + " no\n",
        content="\nHi",
        stable_prefix=False,
    ),
    Case("no-reasoning-marker", "Just an answer.", content="Just an answer."),
    Case(
        "v15-final-response-closed",
        "steps\n" + F + "\nIt is 4.\n[END FINAL RESPONSE]",
        reasoning="steps\n",
        content="\nIt is 4.\n",
    ),
    Case("v15-call-then-end-marker", F + "\n" + ONE + "\n[END FINAL RESPONSE]", content="\n\n", calls=[PW]),
    # -- cut
    Case(
        "cut-in-second-element",
        "<tool_calls>[" + W + ', {"name": "search", "arg',
        truncated=True,
        calls=[PW],
        incomplete=["search"],
    ),
    Case("cut-in-close-tag", "<tool_calls>[" + W + "]</tool_", truncated=True, calls=[PW]),
    Case("cut-in-first", '<tool_calls>[{"na', truncated=True, incomplete=[None]),
    # -- not this family's shapes
    Case(
        "hermes-tag-is-text", "<tool_call>" + W + "</tool_call>", content="<tool_call>" + W + "</tool_call>"
    ),
    Case(
        "object-not-list", "<tool_calls>" + W + "</tool_calls>", content="<tool_calls>" + W + "</tool_calls>"
    ),
    Case(
        "extra-key",
        '<tool_calls>[{"name": "get_time", "arguments": {}, "type": "function"}]</tool_calls>',
        content='<tool_calls>[{"name": "get_time", "arguments": {}, "type": "function"}]</tool_calls>',
    ),
    Case(
        "bad-id",
        '<tool_calls>[{"name": "get_time", "arguments": {}, "id": 7}]</tool_calls>',
        content='<tool_calls>[{"name": "get_time", "arguments": {}, "id": 7}]</tool_calls>',
    ),
    Case(
        "name-not-string",
        '<tool_calls>[{"name": 1, "arguments": {}}]</tool_calls>',
        content='<tool_calls>[{"name": 1, "arguments": {}}]</tool_calls>',
    ),
    Case(
        "placeholder-from-prompt",
        '<tool_calls>[{"name": <function-name-1>, "arguments": <args-dict-1>}]</tool_calls>',
        content='<tool_calls>[{"name": <function-name-1>, "arguments": <args-dict-1>}]</tool_calls>',
    ),
]

CASES += close_tag_in_argument_cases(
    ("Here are my reasoning steps:", F),
    '<tool_calls>[{"name": "set_port", "arguments": {"blob": "then [BEGIN FINAL RESPONSE] here"}}]</tool_calls>',
    ("set_port", {"blob": "then [BEGIN FINAL RESPONSE] here"}),
    "<tool_calls>",
)

_OPEN, _CLOSE = "<tool_calls>", "</tool_calls>"
# The list's brackets, commas and tags are structure (each call's raw is its element); a reply
# cut inside the closing tag has only complete calls, the partial tag is structure too.
FUZZ = Fuzz(
    markers=(_CLOSE,),
    structure=(
        re.escape(_OPEN),
        re.escape("[END FINAL RESPONSE]"),
        r"\[",
        r"\]",
        ",",
        re.escape(_CLOSE),
        "(?:" + "|".join(re.escape(_CLOSE[:k]) for k in range(1, len(_CLOSE))) + r")\Z",
    ),
    wrap=(_OPEN + "[", "]" + _CLOSE),
)
