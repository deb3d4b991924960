"""FireFunction v2: `` functools[{"name": N, "arguments": {...}}]``."""

import re

from tests.engine.formats.harness import Case, Fuzz

FAMILY = "firefunction"

W = ' functools[{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}]'
WC = ("get_weather", {"city": "Paris", "days": 3})

CASES = [
    Case("single", W, calls=[WC], ids=["call00000"]),
    Case("without-space", W.lstrip(), calls=[WC]),
    Case("text-before", "Let me check." + W, content="Let me check.", calls=[WC]),
    Case(
        "parallel",
        ' functools[{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}, '
        '{"name": "get_time", "arguments": {}}]',
        calls=[WC, ("get_time", {})],
        ids=["call00000", "call00001"],
    ),
    Case(
        "arguments-as-json-string",
        ' functools[{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}]',
        calls=[("get_weather", {"city": "Rome"})],
    ),
    Case(
        "typed-by-schema",
        ' functools[{"name": "search", "arguments": {"query": "q", "limit": "10", "score": "null"}}]',
        calls=[("search", {"query": "q", "limit": 10, "score": None})],
    ),
    Case(
        "string-props-keep-text",
        ' functools[{"name": "set_port", "arguments": {"port": "8080", "zip": "02139"}}]',
        calls=[("set_port", {"port": "8080", "zip": "02139"})],
    ),
    Case(
        "bracket-in-string",
        ' functools[{"name": "set_port", "arguments": {"blob": "] functools["}}]',
        calls=[("set_port", {"blob": "] functools["})],
    ),
    Case("text-after", W + " done", content=" done", calls=[WC]),
    Case(
        "cut-in-list",
        ' functools[{"name": "search", "arguments": {"query": "a',
        truncated=True,
        incomplete=["search"],
    ),
    # Rejected shapes: text.
    # Not cut, yet the list never closed: text (a prefix cut inside it keeps the complete call).
    Case(
        "unclosed-at-eos",
        ' functools[{"name": "get_time", "arguments": {}}',
        content=' functools[{"name": "get_time", "arguments": {}}',
        stable_prefix=False,
    ),
    Case("cut-second", W[:-1] + ', {"name": "get_ti', truncated=True, calls=[WC], incomplete=[None]),
    Case("empty-list", " functools[]", content=" functools[]"),
    Case(
        "parameters-key",
        ' functools[{"name": "get_time", "parameters": {}}]',
        content=' functools[{"name": "get_time", "parameters": {}}]',
    ),
    Case("not-objects", " functools[1, 2]", content=" functools[1, 2]"),
    Case(
        "mistral-shape",
        '[TOOL_CALLS][{"name": "get_time", "arguments": {}}]',
        content='[TOOL_CALLS][{"name": "get_time", "arguments": {}}]',
    ),
    Case("plain-text", "Hello! How can I help?", content="Hello! How can I help?"),
]

FUZZ = Fuzz(
    structure=(re.escape(" functools["), re.escape("functools["), r"\]", ","), wrap=(" functools[", "]")
)
