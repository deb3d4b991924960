"""MiniMax-M1: ``<tool_calls>\\n{"name": ..., "arguments": {...}}\\n...</tool_calls>``, one JSON object
per line, ``<think>`` reasoning."""

import re

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "minimax-m1"

OPEN, CLOSE = "<tool_calls>", "</tool_calls>"
W = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'
S = '{"name": "search", "arguments": {"query": "x", "limit": "10"}}'
ONE = OPEN + "\n" + W + "\n" + CLOSE
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})

CASES = [
    Case("single", ONE, calls=[PW], ids=["call00000"]),
    Case(
        "parallel", OPEN + "\n" + W + "\n" + S + "\n" + CLOSE, calls=[PW, PS], ids=["call00000", "call00001"]
    ),
    Case("compact", OPEN + W + S + CLOSE, calls=[PW, PS]),
    Case(
        "think-then-call",
        "<think>\nweather\n</think>\n" + ONE,
        reasoning="\nweather\n",
        content="\n",
        calls=[PW],
    ),
    Case(
        "prefilled-think",
        "I need the tool.\n</think>\n\n" + ONE,
        in_reasoning=True,
        reasoning="I need the tool.\n",
        content="\n\n",
        calls=[PW],
    ),
    Case("text-before", "Let me look.\n" + ONE, content="Let me look.\n", calls=[PW]),
    Case(
        "arguments-as-json-string",
        OPEN + '\n{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}\n' + CLOSE,
        calls=[("get_weather", {"city": "Rome"})],
    ),
    Case(
        "typed-by-schema",
        OPEN + '\n{"name": "search", "arguments": {"query": "q", "limit": "7", "score": "null"}}\n' + CLOSE,
        calls=[("search", {"query": "q", "limit": 7, "score": None})],
    ),
    Case(
        "markers-inside-json-string",
        OPEN + '\n{"name": "set_port", "arguments": {"blob": "</tool_calls> <tool_calls> {"}}\n' + CLOSE,
        calls=[("set_port", {"blob": "</tool_calls> <tool_calls> {"})],
    ),
    Case("close-implied-at-eos", OPEN + "\n" + W + "\n", calls=[PW]),
    # -- cut
    Case(
        "cut-in-second",
        OPEN + "\n" + W + '\n{"name": "search", "arg',
        truncated=True,
        content="\n",
        calls=[PW],
        incomplete=["search"],
    ),
    Case("cut-in-first", OPEN + '\n{"na', truncated=True, incomplete=[None]),
    Case("cut-in-close-tag", OPEN + "\n" + W + "\n</tool_", truncated=True, calls=[PW]),
    # -- text
    Case("list-is-text", OPEN + "[" + W + "]" + CLOSE, content=OPEN + "[" + W + "]" + CLOSE),
    Case("empty-block", OPEN + "\n" + CLOSE, content=OPEN + "\n" + CLOSE),
    Case(
        "one-bad-object",
        OPEN + "\n" + W + '\n{"x": 1}\n' + CLOSE,
        content=OPEN + "\n" + W + '\n{"x": 1}\n' + CLOSE,
        stable_prefix=False,
    ),
    Case("text-inside", OPEN + "\ncall " + W + "\n" + CLOSE, content=OPEN + "\ncall " + W + "\n" + CLOSE),
    Case(
        "unclosed-text-after",
        OPEN + "\n" + W + "\nthen more",
        content=OPEN + "\n" + W + "\nthen more",
        stable_prefix=False,
    ),
    Case(
        "m2-shape",
        '<minimax:tool_call>\n<invoke name="get_time">\n</invoke>\n</minimax:tool_call>',
        content='<minimax:tool_call>\n<invoke name="get_time">\n</invoke>\n</minimax:tool_call>',
    ),
]

CASES += close_tag_in_argument_cases(
    ("<think>", "</think>"),
    OPEN + '\n{"name": "set_port", "arguments": {"blob": "why <think> and </think> here"}}\n' + CLOSE,
    ("set_port", {"blob": "why <think> and </think> here"}),
    OPEN,
)

FUZZ = Fuzz(
    markers=(CLOSE,),
    structure=(
        re.escape(OPEN),
        re.escape(CLOSE),
        "(?:" + "|".join(re.escape(CLOSE[:k]) for k in range(1, len(CLOSE))) + r")\Z",
    ),
    wrap=(OPEN + "\n", "\n" + CLOSE),
)
