"""Granite 20B function calling: ``<function_call> {"name": ..., "arguments": {...}}``, one object
per marker, no closing marker."""

import re

from tests.engine.formats.harness import Case, Fuzz

FAMILY = "granite-20b-fc"

OPEN = "<function_call>"
W = OPEN + ' {"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'
S = OPEN + ' {"name": "search", "arguments": {"query": "x", "limit": "10"}}'
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})

CASES = [
    Case("single", W, calls=[PW], ids=["call00000"]),
    Case("no-space", OPEN + '{"name": "get_time", "arguments": {}}', calls=[("get_time", {})]),
    Case("newline-after-marker", OPEN + '\n{"name": "get_time", "arguments": {}}', calls=[("get_time", {})]),
    Case("parallel", W + " " + S, content=" ", calls=[PW, PS], ids=["call00000", "call00001"]),
    Case("parallel-adjacent", W + S, calls=[PW, PS]),
    Case("text-before", "Let me check. " + W, content="Let me check. ", calls=[PW]),
    Case("text-after", W + " Done.", content=" Done.", calls=[PW]),
    Case(
        "arguments-as-json-string",
        OPEN + ' {"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}',
        calls=[("get_weather", {"city": "Rome"})],
    ),
    Case(
        "typed-by-schema",
        OPEN + ' {"name": "search", "arguments": {"query": "q", "limit": "7", "score": "null"}}',
        calls=[("search", {"query": "q", "limit": 7, "score": None})],
    ),
    Case(
        "string-props-keep-text",
        OPEN + ' {"name": "set_port", "arguments": {"port": "8080", "zip": "02139"}}',
        calls=[("set_port", {"port": "8080", "zip": "02139"})],
    ),
    Case(
        "marker-inside-json-string",
        OPEN + ' {"name": "set_port", "arguments": {"blob": "} <function_call> {"}}',
        calls=[("set_port", {"blob": "} <function_call> {"})],
    ),
    Case(
        "no-function-pseudo-tool",
        OPEN + ' {"name": "no_function", "arguments": {}}',
        calls=[("no_function", {})],
    ),
    # -- cut
    Case(
        "cut-in-object", OPEN + ' {"name": "search", "arguments": {"q', truncated=True, incomplete=["search"]
    ),
    Case("cut-after-marker", OPEN, truncated=True, incomplete=[None]),
    Case("cut-in-second", W + " " + S[:30], truncated=True, content=" ", calls=[PW], incomplete=[None]),
    # -- text
    Case("word-after-marker", OPEN + " is the marker", content=OPEN + " is the marker"),
    Case("list-after-marker", OPEN + ' [{"name": "get_time"}]', content=OPEN + ' [{"name": "get_time"}]'),
    Case(
        "unclosed-at-eos",
        OPEN + ' {"name": "get_time", "arguments": {}',
        content=OPEN + ' {"name": "get_time", "arguments": {}',
        stable_prefix=False,
    ),
    Case(
        "extra-key",
        OPEN + ' {"name": "get_time", "arguments": {}, "id": 1}',
        content=OPEN + ' {"name": "get_time", "arguments": {}, "id": 1}',
    ),
    Case(
        "parameters-key",
        OPEN + ' {"name": "get_time", "parameters": {}}',
        content=OPEN + ' {"name": "get_time", "parameters": {}}',
    ),
    Case(
        "gigachat-shape",
        '<|function_call|>{"name": "get_time", "arguments": {}}',
        content='<|function_call|>{"name": "get_time", "arguments": {}}',
    ),
]

FUZZ = Fuzz(structure=(re.escape(OPEN),), wrap=("", ""))
