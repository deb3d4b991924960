"""InternLM: ``<|action_start|><|plugin|>\\n{"name": ..., "parameters": {...}}<|action_end|>``."""

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "internlm"

OPEN, CLOSE = "<|action_start|><|plugin|>", "<|action_end|>"
W = OPEN + '\n{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}' + CLOSE
S = OPEN + '\n{"name": "search", "parameters": {"query": "x", "limit": "10"}}' + CLOSE
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})

CASES = [
    Case("single", W, calls=[PW], ids=["call00000"]),
    Case("text-before", "I will check the weather.\n" + W, content="I will check the weather.\n", calls=[PW]),
    Case("parallel", W + "\n" + S, content="\n", calls=[PW, PS], ids=["call00000", "call00001"]),
    Case(
        "arguments-key",
        OPEN + '\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}' + CLOSE,
        calls=[PW],
    ),
    Case(
        "parameters-as-json-string",
        OPEN + '\n{"name": "get_weather", "parameters": "{\\"city\\": \\"Rome\\"}"}' + CLOSE,
        calls=[("get_weather", {"city": "Rome"})],
    ),
    Case("no-parameters", OPEN + '\n{"name": "get_time"}' + CLOSE, calls=[("get_time", {})]),
    Case(
        "typed-by-schema",
        OPEN + '{"name": "search", "parameters": {"query": "q", "limit": "7", "score": "null"}}' + CLOSE,
        calls=[("search", {"query": "q", "limit": 7, "score": None})],
    ),
    Case(
        "string-props-keep-text",
        OPEN + '\n{"name": "set_port", "parameters": {"port": "8080", "zip": "02139"}}' + CLOSE,
        calls=[("set_port", {"port": "8080", "zip": "02139"})],
    ),
    Case(
        "markers-inside-json-string",
        OPEN
        + '\n{"name": "set_port", "parameters": {"blob": "<|action_end|> <|action_start|><|plugin|>"}}'
        + CLOSE,
        calls=[("set_port", {"blob": "<|action_end|> <|action_start|><|plugin|>"})],
    ),
    Case("close-implied-at-eos", OPEN + '\n{"name": "get_time", "parameters": {}}', calls=[("get_time", {})]),
    Case("think-then-call", "<think>weather</think>" + W, reasoning="weather", calls=[PW]),
    Case(
        "call-in-closed-reasoning",
        "<think>maybe " + W + " no</think>Hello",
        reasoning="maybe " + W + " no",
        content="Hello",
    ),
    # -- cut
    Case(
        "cut-in-json",
        OPEN + '\n{"name": "search", "parameters": {"query": "a',
        truncated=True,
        incomplete=["search"],
    ),
    Case("cut-in-close", W[:-3], truncated=True, incomplete=["get_weather"]),
    Case("cut-after-first", W + "\n" + S[:30], truncated=True, content="\n", calls=[PW], incomplete=[None]),
    # -- text
    Case(
        "interpreter-is-text",
        "<|action_start|><|interpreter|>\nprint(1)<|action_end|>",
        content="<|action_start|><|interpreter|>\nprint(1)<|action_end|>",
    ),
    Case(
        "both-keys",
        OPEN + '\n{"name": "get_time", "parameters": {}, "arguments": {}}' + CLOSE,
        content=OPEN + '\n{"name": "get_time", "parameters": {}, "arguments": {}}' + CLOSE,
    ),
    Case(
        "extra-key",
        OPEN + '\n{"name": "get_time", "parameters": {}, "id": 1}' + CLOSE,
        content=OPEN + '\n{"name": "get_time", "parameters": {}, "id": 1}' + CLOSE,
    ),
    Case("not-json", OPEN + "\nget_time()" + CLOSE, content=OPEN + "\nget_time()" + CLOSE),
    Case(
        "unclosed-text-after",
        OPEN + '\n{"name": "get_time", "parameters": {}} and more',
        content=OPEN + '\n{"name": "get_time", "parameters": {}} and more',
        stable_prefix=False,
    ),
    Case(
        "hermes-shape",
        '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>',
        content='<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>',
    ),
]

CASES += close_tag_in_argument_cases(
    ("<think>", "</think>"),
    OPEN + '\n{"name": "set_port", "parameters": {"blob": "why <think> and </think> here"}}' + CLOSE,
    ("set_port", {"blob": "why <think> and </think> here"}),
    OPEN,
)

FUZZ = Fuzz(markers=(CLOSE,))
