"""Hunyuan-A13B: ``<tool_calls>[{"name": ..., "arguments": {...}}]</tool_calls>`` (Apriel's wire),
``<think>`` reasoning, ``<answer>...</answer>`` as structure."""

import re

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "hunyuan-a13b"

W = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'
S = '{"name": "search", "arguments": {"query": "x", "limit": "10"}}'
ONE = "<tool_calls>[" + W + "]</tool_calls>"
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})

CASES = [
    Case("single", ONE, calls=[PW], ids=["call00000"]),
    Case("parallel", "<tool_calls>[" + W + ", " + S + "]</tool_calls>", calls=[PW, PS]),
    Case(
        "think-then-call",
        "<think>\nweather\n</think>\n" + ONE,
        reasoning="\nweather\n",
        content="\n",
        calls=[PW],
    ),
    Case(
        "think-then-answer",
        "<think>\neasy\n</think>\n<answer>\nIt is 4.\n</answer>",
        reasoning="\neasy\n",
        content="\n\nIt is 4.\n",
    ),
    Case(
        "no-think-prefill",
        "<think>\n\n</think>\n<answer>\n" + ONE + "\n</answer>",
        reasoning="\n\n",
        content="\n\n\n",
        calls=[PW],
    ),
    Case("assistant-prefix-kept", "助手：今天巴黎晴。", content="助手：今天巴黎晴。"),
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
        '<tool_calls>[{"name": "set_port", "arguments": {"blob": "</tool_calls> </answer> </think>"}}]</tool_calls>',
        calls=[("set_port", {"blob": "</tool_calls> </answer> </think>"})],
    ),
    Case(
        "unicode",
        '<tool_calls>[{"name": "get_weather", "arguments": {"city": "北京"}}]</tool_calls>',
        calls=[("get_weather", {"city": "北京"})],
    ),
    Case("close-implied-at-eos", "<tool_calls>[" + W + "]", calls=[PW]),
    Case("cut-in-close-tag", "<tool_calls>[" + W + "]</tool_", calls=[PW]),
    # what follows the list is no closing tag (a "<" and then a space): the region is text, kept
    # (cut before its end, the list's complete element is a call: stable_prefix off)
    Case(
        "list-then-stray-text",
        "<tool_calls>[" + W + "]< ",
        content="<tool_calls>[" + W + "]< ",
        stable_prefix=False,
    ),
    # -- cut
    Case(
        "cut-in-second",
        "<tool_calls>[" + W + ', {"name": "search", "arg',
        truncated=True,
        calls=[PW],
        incomplete=["search"],
    ),
    Case("cut-in-first", '<tool_calls>[{"na', truncated=True, incomplete=[None]),
    # -- text
    Case(
        "object-not-list", "<tool_calls>" + W + "</tool_calls>", content="<tool_calls>" + W + "</tool_calls>"
    ),
    Case("empty-list", "<tool_calls>[]</tool_calls>", content="<tool_calls>[]</tool_calls>"),
    Case(
        "extra-key",
        '<tool_calls>[{"name": "get_time", "arguments": {}, "id": "x"}]</tool_calls>',
        content='<tool_calls>[{"name": "get_time", "arguments": {}, "id": "x"}]</tool_calls>',
    ),
    Case(
        "hy3-shape",
        "<tool_calls:opensource><tool_call:opensource>get_time<tool_sep:opensource></tool_call:opensource>",
        content="<tool_calls:opensource><tool_call:opensource>get_time<tool_sep:opensource></tool_call:opensource>",
    ),
]

CASES += close_tag_in_argument_cases(
    ("<think>", "</think>"),
    '<tool_calls>[{"name": "set_port", "arguments": {"blob": "why <think> and </think> here"}}]</tool_calls>',
    ("set_port", {"blob": "why <think> and </think> here"}),
    "<tool_calls>",
)

_OPEN, _CLOSE = "<tool_calls>", "</tool_calls>"
FUZZ = Fuzz(
    markers=(_CLOSE,),
    structure=(
        re.escape(_OPEN),
        re.escape("<answer>"),
        re.escape("</answer>"),
        r"\[",
        r"\]",
        ",",
        re.escape(_CLOSE),
        "(?:" + "|".join(re.escape(_CLOSE[:k]) for k in range(1, len(_CLOSE))) + r")\Z",
    ),
    wrap=(_OPEN + "[", "]" + _CLOSE),
)
