"""ERNIE 4.5: ``<tool_call>\\n{"name": ..., "arguments": {...}}\\n</tool_call>`` (Hermes' wire),
``<think>`` reasoning, ``<response>...</response>`` as structure."""

import re

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "ernie45"

OPEN, CLOSE = "<tool_call>", "</tool_call>"
W = OPEN + '\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n' + CLOSE
S = OPEN + '\n{"name": "search", "arguments": {"query": "x", "limit": "10"}}\n' + CLOSE
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})

CASES = [
    Case("single", W, calls=[PW], ids=["call00000"]),
    Case("parallel", W + "\n" + S + "\n", content="\n\n", calls=[PW, PS], ids=["call00000", "call00001"]),
    Case(
        "prefilled-think-then-calls",
        "I need two tools.\n</think>\n\n" + W + "\n" + S + "\n",
        in_reasoning=True,
        reasoning="I need two tools.\n",
        content="\n\n\n\n",
        calls=[PW, PS],
    ),
    Case(
        "think-then-response",
        "<think>\neasy\n</think>\n\n<response>\nIt is 4.\n</response>",
        reasoning="\neasy\n",
        content="\n\n\nIt is 4.\n",
    ),
    Case("response-around-call", "<response>\n" + W + "\n</response>", content="\n\n", calls=[PW]),
    Case(
        "arguments-as-json-string",
        OPEN + '{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}' + CLOSE,
        calls=[("get_weather", {"city": "Rome"})],
    ),
    Case(
        "typed-by-schema",
        OPEN + '{"name": "search", "arguments": {"query": "q", "limit": "7", "score": "null"}}' + CLOSE,
        calls=[("search", {"query": "q", "limit": 7, "score": None})],
    ),
    Case(
        "markers-inside-json-string",
        OPEN + '{"name": "set_port", "arguments": {"blob": "</tool_call> </response>"}}' + CLOSE,
        calls=[("set_port", {"blob": "</tool_call> </response>"})],
    ),
    Case(
        "close-implied-at-eos", OPEN + '\n{"name": "get_time", "arguments": {}}\n', calls=[("get_time", {})]
    ),
    # -- cut
    Case(
        "cut-in-json", OPEN + '\n{"name": "search", "arguments": {"q', truncated=True, incomplete=["search"]
    ),
    Case("cut-after-first", W + "\n" + S[:25], truncated=True, content="\n", calls=[PW], incomplete=[None]),
    # -- text
    Case(
        "qwen-xml-shape",
        "<tool_call>\n<function=get_time>\n</function>\n</tool_call>",
        content="<tool_call>\n<function=get_time>\n</function>\n</tool_call>",
    ),
    Case(
        "parameters-key",
        OPEN + '{"name": "get_time", "parameters": {}}' + CLOSE,
        content=OPEN + '{"name": "get_time", "parameters": {}}' + CLOSE,
    ),
    Case(
        "unclosed-text-after",
        OPEN + '{"name": "get_time", "arguments": {}} more',
        content=OPEN + '{"name": "get_time", "arguments": {}} more',
        stable_prefix=False,
    ),
]

CASES += close_tag_in_argument_cases(
    ("<think>", "</think>"),
    OPEN + '\n{"name": "set_port", "arguments": {"blob": "why <think> and </think> here"}}\n' + CLOSE,
    ("set_port", {"blob": "why <think> and </think> here"}),
    OPEN,
)

FUZZ = Fuzz(markers=(CLOSE,), structure=(re.escape("<response>"), re.escape("</response>")))
