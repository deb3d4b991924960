"""Hermes JSON: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``."""

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "hermes"

W = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>'

CASES = [
    Case("single", W, calls=[("get_weather", {"city": "Paris", "days": 3})], ids=["call00000"]),
    Case(
        "text-around",
        "Let me check.\n" + W + "\nDone.",
        content="Let me check.\n\nDone.",
        calls=[("get_weather", {"city": "Paris", "days": 3})],
    ),
    Case(
        "parallel",
        W + '\n<tool_call>\n{"name": "search", "arguments": {"query": "x", "limit": "10"}}\n</tool_call>',
        content="\n",
        calls=[("get_weather", {"city": "Paris", "days": 3}), ("search", {"query": "x", "limit": 10})],
        ids=["call00000", "call00001"],
    ),
    Case(
        "qwen3-think",
        "<think>\nThe user wants weather.\n</think>\n\n" + W,
        reasoning="\nThe user wants weather.\n",
        content="\n\n",
        calls=[("get_weather", {"city": "Paris", "days": 3})],
    ),
    Case(
        "prefilled-think",
        "I should call the tool.\n</think>\n\n" + W,
        in_reasoning=True,
        reasoning="I should call the tool.\n",
        content="\n\n",
        calls=[("get_weather", {"city": "Paris", "days": 3})],
    ),
    Case(
        "orphan-close",
        "thinking without an opening tag</think>The answer is 4.",
        reasoning="thinking without an opening tag",
        content="The answer is 4.",
    ),
    Case(
        "call-in-closed-reasoning",
        "<think>maybe " + W + " no, answer directly</think>Hello",
        reasoning="maybe " + W + " no, answer directly",
        content="Hello",
    ),
    Case(
        "unclosed-prefilled-think-then-call",
        "I need the weather.\n" + W,
        in_reasoning=True,
        reasoning="I need the weather.\n",
        calls=[("get_weather", {"city": "Paris", "days": 3})],
    ),
    Case(
        "marker-inside-json-string",
        '<tool_call>{"name": "set_port", "arguments": {"blob": "a </tool_call> b <tool_call>"}}</tool_call>',
        calls=[("set_port", {"blob": "a </tool_call> b <tool_call>"})],
    ),
    Case(
        "string-props-keep-text",
        '<tool_call>{"name": "set_port", "arguments": {"port": "8080", "zip": "02139", "flag": "true", '
        '"blob": "{\\"a\\": 1}"}}</tool_call>',
        calls=[("set_port", {"port": "8080", "zip": "02139", "flag": "true", "blob": '{"a": 1}'})],
    ),
    Case(
        "typed-by-schema",
        '<tool_call>{"name": "search", "arguments": {"query": "q", "limit": "10", "filters": "{\\"year\\": \\"2020\\"}", '
        '"tags": "[\\"a\\"]", "score": "null", "mode": "7"}}</tool_call>',
        calls=[
            (
                "search",
                {
                    "query": "q",
                    "limit": 10,
                    "filters": {"year": 2020},
                    "tags": ["a"],
                    "score": None,
                    "mode": "7",
                },
            )
        ],
    ),
    Case(
        "untypable-kept",
        '<tool_call>{"name": "search", "arguments": {"query": "q", "limit": "ten"}}</tool_call>',
        calls=[("search", {"query": "q", "limit": "ten"})],
    ),
    Case(
        "fenced",
        '<tool_call>\n```json\n{"name": "get_time", "arguments": {}}\n```\n</tool_call>',
        calls=[("get_time", {})],
    ),
    Case(
        "trailing-comma",
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo",},}</tool_call>',
        calls=[("get_weather", {"city": "Oslo"})],
    ),
    Case(
        "arguments-as-json-string",
        '<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}</tool_call>',
        calls=[("get_weather", {"city": "Rome"})],
    ),
    Case(
        "missing-close-at-eos",
        '<tool_call>\n{"name": "get_time", "arguments": {}}\n',
        calls=[("get_time", {})],
    ),
    Case(
        "missing-close-truncated",
        '<tool_call>\n{"name": "get_time", "arguments": {}}\n',
        truncated=True,
        incomplete=["get_time"],
    ),
    Case(
        "cut-second-of-pair",
        W + '<tool_call>{"name": "search", "arguments": {"que',
        truncated=True,
        calls=[("get_weather", {"city": "Paris", "days": 3})],
        incomplete=["search"],
    ),
    Case(
        "qwen25-double-braces",
        '<tool_call>\n{{"name": "get_weather", "arguments": {"city": "Paris"}}}\n</tool_call>',
        content='<tool_call>\n{{"name": "get_weather", "arguments": {"city": "Paris"}}}\n</tool_call>',
    ),
    Case(
        "not-json",
        "<tool_call>\nget_weather(city='Paris')\n</tool_call> ok",
        content="<tool_call>\nget_weather(city='Paris')\n</tool_call> ok",
    ),
    Case(
        "extra-key",
        '<tool_call>{"name": "get_time", "arguments": {}, "x": 1}</tool_call>',
        content='<tool_call>{"name": "get_time", "arguments": {}, "x": 1}</tool_call>',
    ),
    Case(
        "text-after-json",
        '<tool_call>{"name": "get_time", "arguments": {}} trailing</tool_call>',
        content='<tool_call>{"name": "get_time", "arguments": {}} trailing</tool_call>',
    ),
    Case(
        "json-for-user",
        'Here is JSON: {"name": "get_weather", "arguments": {"city": "Paris"}}',
        content='Here is JSON: {"name": "get_weather", "arguments": {"city": "Paris"}}',
    ),
    Case("partial-marker-text", "a < b and <tool_ is not a tag", content="a < b and <tool_ is not a tag"),
    Case(
        "unclosed-call-at-eos",
        '<tool_call>{"name": "get_time", "argu',
        content='<tool_call>{"name": "get_time", "argu',
    ),
    Case(
        "unicode",
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Zürich 東京"}}</tool_call>',
        calls=[("get_weather", {"city": "Zürich 東京"})],
    ),
]

# The closing reasoning tag inside an argument: part of the call in every reasoning state.
CASES += close_tag_in_argument_cases(
    ("<think>", "</think>"),
    '<tool_call>{"name": "set_port", "arguments": {"blob": "why <think> and </think> here"}}</tool_call>',
    ("set_port", {"blob": "why <think> and </think> here"}),
    "<tool_call>",
)

FUZZ = Fuzz(markers=("<tool_call>", "</tool_call>"))
