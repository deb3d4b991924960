"""LongCat: ``<longcat_tool_call>\\n{"name": ..., "arguments": {...}}\\n</longcat_tool_call>``."""

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "longcat"

OPEN, CLOSE = "<longcat_tool_call>", "</longcat_tool_call>"
W = OPEN + '\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n' + CLOSE
S = OPEN + '\n{"name": "search", "arguments": {"query": "x", "limit": "10"}}\n' + CLOSE
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})

CASES = [
    Case("single", W, calls=[PW], ids=["call00000"]),
    Case("text-around", "Let me check.\n" + W + "\nDone.", content="Let me check.\n\nDone.", calls=[PW]),
    Case("parallel", W + "\n" + S, content="\n", calls=[PW, PS], ids=["call00000", "call00001"]),
    Case("compact", OPEN + '{"name": "get_time", "arguments": {}}' + CLOSE, calls=[("get_time", {})]),
    Case(
        "fenced-json",
        OPEN + '\n```json\n{"name": "get_time", "arguments": {}}\n```\n' + CLOSE,
        calls=[("get_time", {})],
    ),
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
        "string-props-keep-text",
        OPEN + '{"name": "set_port", "arguments": {"port": "8080", "zip": "02139"}}' + CLOSE,
        calls=[("set_port", {"port": "8080", "zip": "02139"})],
    ),
    Case(
        "markers-inside-json-string",
        OPEN
        + '{"name": "set_port", "arguments": {"blob": "</longcat_tool_call> <longcat_tool_call>"}}'
        + CLOSE,
        calls=[("set_port", {"blob": "</longcat_tool_call> <longcat_tool_call>"})],
    ),
    Case(
        "close-implied-at-eos", OPEN + '\n{"name": "get_time", "arguments": {}}\n', calls=[("get_time", {})]
    ),
    Case(
        "think-then-call",
        "<think>\nweather\n</think>\n" + W,
        reasoning="\nweather\n",
        content="\n",
        calls=[PW],
    ),
    Case(
        "prefilled-think",
        "I should call it.\n</think>\n" + W,
        in_reasoning=True,
        reasoning="I should call it.\n",
        content="\n",
        calls=[PW],
    ),
    # -- cut
    Case(
        "cut-in-json", OPEN + '\n{"name": "search", "arguments": {"q', truncated=True, incomplete=["search"]
    ),
    Case("cut-after-first", W + "\n" + S[:25], truncated=True, content="\n", calls=[PW], incomplete=[None]),
    # -- text
    Case(
        "hermes-tag-is-text",
        '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>',
        content='<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>',
    ),
    Case(
        "tag-pair-shape-is-text",
        OPEN + "get_time\n<longcat_arg_key>x</longcat_arg_key>\n" + CLOSE,
        content=OPEN + "get_time\n<longcat_arg_key>x</longcat_arg_key>\n" + CLOSE,
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

FUZZ = Fuzz(markers=(CLOSE,))
