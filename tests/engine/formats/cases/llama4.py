"""Llama 4: ``{"name": ..., "parameters": {...}}`` objects, the whole reply; bare, inside
``<|python_start|>...<|python_end|>``, or after the markers left empty (as its template renders a
past call)."""

from tests.engine.formats.harness import Case, Fuzz

FAMILY = "llama4"

START, END = "<|python_start|>", "<|python_end|>"
W = '{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}'
WA = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'
T = '{"name": "get_time", "parameters": {}}'
PW, TC = ("get_weather", {"city": "Paris", "days": 3}), ("get_time", {})
LLAMA3 = ("llama3",)  # Llama 3 reads one bare object naming an offered tool the same way
HERMES_LLAMA3 = ("hermes", "llama3")  # ... and Hermes a bare object written with "arguments"

# the bare objects: each names an offered tool, the whole reply
BARE = [
    Case("bare", W, calls=[PW], ids=["call00000"], also=LLAMA3),
    Case("bare-ws-around", "\n" + W + "\n", content="\n\n", calls=[PW], also=LLAMA3),
    Case("bare-arguments-key", WA, calls=[PW], also=HERMES_LLAMA3),
    Case(
        "bare-type-function",
        '{"type": "function", "name": "search", "parameters": {"query": "q", "limit": "10"}}',
        calls=[("search", {"query": "q", "limit": 10})],
        also=LLAMA3,
    ),
    Case("bare-two-back-to-back", W + T, calls=[PW, TC], ids=["call00000", "call00001"]),
    Case("bare-two-on-lines", W + "\n" + T + "\n", content="\n", calls=[PW, TC]),
    Case(
        "bare-unknown-tool-is-text",
        '{"name": "Alice", "parameters": {"age": 3}}',
        content='{"name": "Alice", "parameters": {"age": 3}}',
    ),
    Case(
        "bare-second-unknown-is-text",
        W + '{"name": "Alice", "parameters": {}}',
        content=W + '{"name": "Alice", "parameters": {}}',
        stable_prefix=False,
    ),
    Case("bare-then-text-is-text", W + " is the call", content=W + " is the call", stable_prefix=False),
    Case("text-then-bare-is-text", "Sure: " + W, content="Sure: " + W),
    Case("json-for-user", '{"a": 1, "b": [1, 2]}', content='{"a": 1, "b": [1, 2]}'),
    Case(
        "both-keys-is-text",
        '{"name": "get_time", "parameters": {}, "arguments": {}}',
        content='{"name": "get_time", "parameters": {}, "arguments": {}}',
    ),
    Case(
        "tool-list-shape-is-text",
        '{"type": "function", "function": {"name": "get_weather", "parameters": {"city": "Paris"}}}',
        content='{"type": "function", "function": {"name": "get_weather", "parameters": {"city": "Paris"}}}',
    ),
    Case(
        "marker-in-string",
        '{"name": "set_port", "parameters": {"blob": "} <|python_start|> {"}}',
        calls=[("set_port", {"blob": "} <|python_start|> {"})],
        also=LLAMA3,
    ),
    Case("bare-cut", W[:30], truncated=True, incomplete=["get_weather"], also=LLAMA3),
    Case("plain", "The answer is 51.", content="The answer is 51."),
    Case("brace-later", "a {b}", content="a {b}"),
]

# inside the markers, or after them left empty: any tool (a special token opens the call)
MARKED = [
    Case("marked", START + W + END, calls=[PW]),
    Case("marked-unclosed", START + W, calls=[PW]),
    Case("marked-ws", START + "\n" + W + "\n" + END + "\n", content="\n", calls=[PW]),
    Case("marked-two", START + W + T + END, calls=[PW, TC]),
    Case("marked-arguments-key", START + WA + END, calls=[PW]),
    Case(
        "marked-any-tool",
        START + '{"name": "brave_search", "parameters": {"query": "x"}}' + END,
        calls=[("brave_search", {"query": "x"})],
    ),
    Case("marked-sections-in-a-row", START + W + END + START + T + END, calls=[PW, TC]),
    Case("marked-sections-on-lines", START + W + END + "\n" + START + T + "\n", content="\n", calls=[PW, TC]),
    Case(
        "marked-section-empty-is-text", START + W + END + START + END, content=START + W + END + START + END
    ),
    Case(
        "marked-sections-text-between-is-text",
        START + W + END + " and " + START + T + END,
        content=START + W + END + " and " + START + T + END,
    ),
    Case("empty-markers-then-call", START + END + W, calls=[PW]),
    Case("empty-markers-then-two", START + END + W + T, calls=[PW, TC]),
    Case("empty-markers-ws", START + END + "\n" + W + "\n", content="\n", calls=[PW]),
    Case("text-before-marked", "Let me check.\n" + START + W + END, content="Let me check.\n", calls=[PW]),
    Case(
        "text-inside-markers-is-text",
        START + "Let me check." + END + W,
        content=START + "Let me check." + END + W,
    ),
    Case("marked-then-text-is-text", START + W + END + " Done.", content=START + W + END + " Done."),
    Case("marked-code-is-text", START + "print(1)" + END, content=START + "print(1)" + END),
    Case("marked-empty-is-text", START + END, content=START + END),
    Case("marked-cut", "Ok " + START + W[:25], truncated=True, content="Ok ", incomplete=["get_weather"]),
]

CASES = BARE + MARKED

# A call is the whole reply; the example call is between the markers (any tool).
FUZZ = Fuzz(
    markers=(START, END),
    max_calls=1,
    reply=lambda fmt, calls, texts, reasoning, rnd: (
        (fmt.example_call(*calls[0]), "", "") if calls else (texts[0], texts[0], "")
    ),
)

# a value holding the markers (the cost tests: one huge call, a megabyte of calls)
COST_VALUE = "a } <|python_end|> <|python_start|> { b"

# the settings label names the models; a tiny GGUF with Meta's template is detected and checked
SETTING_WORDS = ("Llama 4", "Scout", "Maverick")
TINY_MODELS = [
    (
        "meta-llama-Llama-4-transformers.jinja",
        ["<|begin_of_text|>", "<|header_start|>", "<|header_end|>", "<|eot|>", "<|eom|>"],
        ["<|python_start|>", "<|python_end|>"],
        "<|begin_of_text|>",
        "<|eot|>",
    )
]
