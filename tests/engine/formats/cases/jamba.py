"""Jamba: `` <tool_calls>[{"name": ..., "arguments": {...}}]</tool_calls>`` (Apriel's wire, no
reasoning)."""

import re

from tests.engine.formats.harness import Case, Fuzz

FAMILY = "jamba"

W = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'
S = '{"name": "search", "arguments": {"query": "x", "limit": "10"}}'
ONE = " <tool_calls>[\n    " + W + "\n]</tool_calls>"
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})

CASES = [
    Case("as-the-template-writes-it", ONE, content=" ", calls=[PW], ids=["call00000"]),
    Case("compact", "<tool_calls>[" + W + "]</tool_calls>", calls=[PW]),
    Case("parallel", "<tool_calls>[" + W + ",\n" + S + "]</tool_calls>", calls=[PW, PS]),
    Case("text-before", "Let me check." + ONE, content="Let me check. ", calls=[PW]),
    Case(
        "arguments-as-json-string",
        '<tool_calls>[{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}]</tool_calls>',
        calls=[("get_weather", {"city": "Rome"})],
    ),
    Case(
        "typed-by-schema",
        '<tool_calls>[{"name": "search", "arguments": {"query": "q", "limit": "7", "score": "null"}}]</tool_calls>',
        calls=[("search", {"query": "q", "limit": 7, "score": None})],
    ),
    Case(
        "markers-inside-json-string",
        '<tool_calls>[{"name": "set_port", "arguments": {"blob": "</tool_calls> <tool_calls>["}}]</tool_calls>',
        calls=[("set_port", {"blob": "</tool_calls> <tool_calls>["})],
    ),
    Case("close-implied-at-eos", "<tool_calls>[" + W + "]", calls=[PW]),
    # -- no reasoning: Apriel's and the usual think tags are text
    Case("think-is-text", "<think>x</think>Hi", content="<think>x</think>Hi"),
    Case(
        "apriel-final-marker-is-text",
        "[BEGIN FINAL RESPONSE]" + ONE,
        content="[BEGIN FINAL RESPONSE] ",
        calls=[PW],
    ),
    # -- cut
    Case(
        "cut-in-second",
        "<tool_calls>[" + W + ', {"name": "search", "arg',
        truncated=True,
        calls=[PW],
        incomplete=["search"],
    ),
    Case("cut-in-close-tag", "<tool_calls>[" + W + "]</tool_", truncated=True, calls=[PW]),
    Case("cut-in-first", '<tool_calls>[{"na', truncated=True, incomplete=[None]),
    # -- text
    Case(
        "object-not-list", "<tool_calls>" + W + "</tool_calls>", content="<tool_calls>" + W + "</tool_calls>"
    ),
    Case("empty-list", "<tool_calls>[]</tool_calls>", content="<tool_calls>[]</tool_calls>"),
    Case(
        "extra-key",
        '<tool_calls>[{"name": "get_time", "arguments": {}, "type": "function"}]</tool_calls>',
        content='<tool_calls>[{"name": "get_time", "arguments": {}, "type": "function"}]</tool_calls>',
    ),
    Case(
        "text-after-list",
        "<tool_calls>[" + W + "] more</tool_calls>",
        content="<tool_calls>[" + W + "] more</tool_calls>",
        stable_prefix=False,
    ),
    Case("hermes-tag", "<tool_call>" + W + "</tool_call>", content="<tool_call>" + W + "</tool_call>"),
]

_OPEN, _CLOSE = "<tool_calls>", "</tool_calls>"
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
