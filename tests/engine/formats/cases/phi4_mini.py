"""Phi-4-mini: FireFunction v2's wire, `` functools[{"name": N, "arguments": {...}}]``, read by the
same reader: every FireFunction case holds for it, and a few as Phi-4-mini writes them."""

from tests.engine.formats.cases import firefunction
from tests.engine.formats.harness import Case

FAMILY = "phi4-mini"

W = 'functools[{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}]'
WC = ("get_weather", {"city": "Paris", "days": 3})

CASES = [
    *firefunction.CASES,
    Case("after-a-sentence", "I'll look that up." + " " + W, content="I'll look that up.", calls=[WC]),
    Case(
        "float-as-the-prompt-asks",
        'functools[{"name": "search", "arguments": {"query": "q", "score": 7.0}}]',
        calls=[("search", {"query": "q", "score": 7.0})],
    ),
    Case(
        "phi-tool-tags-are-text",
        '<|tool|>[{"name": "get_time", "arguments": {}}]<|/tool|>',
        content='<|tool|>[{"name": "get_time", "arguments": {}}]<|/tool|>',
    ),
]

FUZZ = firefunction.FUZZ
