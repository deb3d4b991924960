"""Granite 3.x: ``<|tool_call|>[{"name": ..., "arguments": {...}}, ...]`` (no closing marker);
``<think>`` reasoning, ``<response>...</response>`` as structure."""

import re

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "granite"

W = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'
S = '{"name": "search", "arguments": {"query": "x", "limit": "10"}}'
ONE = "<|tool_call|>[" + W + "]"
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})

CASES = [
    # -- calls as the model writes them
    Case("single", ONE, calls=[PW], ids=["call00000"]),
    Case("space-after-token", "<|tool_call|> [" + W + "]", calls=[PW]),
    Case("parallel", "<|tool_call|>[" + W + ", " + S + "]", calls=[PW, PS], ids=["call00000", "call00001"]),
    Case("text-before", "Let me look.\n" + ONE, content="Let me look.\n", calls=[PW]),
    Case("text-after", ONE + "\nDone.", content="\nDone.", calls=[PW]),
    Case("two-lists", ONE + "\n<|tool_call|>[" + S + "]", content="\n", calls=[PW, PS]),
    Case(
        "arguments-as-json-string",
        '<|tool_call|>[{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}]',
        calls=[("get_weather", {"city": "Rome"})],
    ),
    Case("no-arguments", '<|tool_call|>[{"name": "get_time", "arguments": {}}]', calls=[("get_time", {})]),
    Case("arguments-left-out", '<|tool_call|>[{"name": "get_time"}]', calls=[("get_time", {})]),
    Case(
        "typed-by-schema",
        '<|tool_call|>[{"name": "search", "arguments": {"query": "q", "limit": "7", "score": "null"}}]',
        calls=[("search", {"query": "q", "limit": 7, "score": None})],
    ),
    Case(
        "string-props-keep-text",
        '<|tool_call|>[{"name": "set_port", "arguments": {"port": "8080", "zip": "02139"}}]',
        calls=[("set_port", {"port": "8080", "zip": "02139"})],
    ),
    Case(
        "markers-inside-json-string",
        '<|tool_call|>[{"name": "set_port", "arguments": {"blob": "] <|tool_call|>[ </response>"}}]',
        calls=[("set_port", {"blob": "] <|tool_call|>[ </response>"})],
    ),
    Case(
        "unicode",
        '<|tool_call|>[{"name": "get_weather", "arguments": {"city": "Zürich 東京"}}]',
        calls=[("get_weather", {"city": "Zürich 東京"})],
    ),
    Case("undeclared-tool", '<|tool_call|>[{"name": "launch", "arguments": {}}]', calls=[("launch", {})]),
    # -- reasoning and the response frame (Granite 3.3 with thinking)
    Case("think-then-call", "<think>weather</think>" + ONE, reasoning="weather", calls=[PW]),
    Case(
        "think-then-response",
        "<think>easy</think><response>It is 4.</response>",
        reasoning="easy",
        content="It is 4.",
    ),
    Case("response-then-call", "<response>" + ONE + "</response>", calls=[PW]),
    Case(
        "call-in-closed-reasoning",
        "<think>maybe " + ONE + " no</think>Hello",
        reasoning="maybe " + ONE + " no",
        content="Hello",
    ),
    # -- cut replies: complete calls kept, the cut one is incomplete
    Case(
        "cut-in-second-element",
        "<|tool_call|>[" + W + ', {"name": "search", "argu',
        truncated=True,
        calls=[PW],
        incomplete=["search"],
    ),
    Case("cut-in-first-element", '<|tool_call|>[{"name": "get_wea', truncated=True, incomplete=[None]),
    Case("cut-after-token", "<|tool_call|>", truncated=True, incomplete=[None]),
    # -- not this family's shapes: text
    Case(
        "unclosed-at-eos",
        '<|tool_call|>[{"name": "get_time", "arguments": {}}',
        content='<|tool_call|>[{"name": "get_time", "arguments": {}}',
        stable_prefix=False,
    ),
    Case("object-not-list", "<|tool_call|>" + W, content="<|tool_call|>" + W),
    Case("empty-list", "<|tool_call|>[]", content="<|tool_call|>[]"),
    Case("not-objects", "<|tool_call|>[1, 2]", content="<|tool_call|>[1, 2]"),
    Case(
        "extra-key",
        '<|tool_call|>[{"name": "get_time", "arguments": {}, "id": "x"}]',
        content='<|tool_call|>[{"name": "get_time", "arguments": {}, "id": "x"}]',
    ),
    Case(
        "parameters-key",
        '<|tool_call|>[{"name": "get_time", "parameters": {}}]',
        content='<|tool_call|>[{"name": "get_time", "parameters": {}}]',
    ),
    Case("word-after-token", "<|tool_call|> is the marker", content="<|tool_call|> is the marker"),
    Case(
        "hermes-shape", "<tool_call>\n" + W + "\n</tool_call>", content="<tool_call>\n" + W + "\n</tool_call>"
    ),
    Case("bare-list", "[" + W + "]", content="[" + W + "]"),
    Case(
        "partial-marker-text",
        "a <|tool_ and <|tool_call are text",
        content="a <|tool_ and <|tool_call are text",
    ),
]

CASES += close_tag_in_argument_cases(
    ("<think>", "</think>"),
    '<|tool_call|>[{"name": "set_port", "arguments": {"blob": "why <think> and </think> here"}}]',
    ("set_port", {"blob": "why <think> and </think> here"}),
    "<|tool_call|>",
)

FUZZ = Fuzz(
    structure=(
        re.escape("<|tool_call|>"),
        re.escape("<response>"),
        re.escape("</response>"),
        r"\[",
        r"\]",
        ",",
    ),
    wrap=("<|tool_call|>[", "]"),
)
