"""Functionary v3.2: ``>>>all\\ntext`` and ``>>>NAME\\n{json}`` segments (the prompt ends with ``>>>``)."""

from tests.engine.formats.harness import Case, Fuzz

FAMILY = "functionary-v3.2"

W = 'get_weather\n{"city": "Paris", "days": 3, "metric": true}'
WC = ("get_weather", {"city": "Paris", "days": 3, "metric": True})

CASES = [
    Case("single-after-prefilled-separator", W, calls=[WC], ids=["call00000"]),
    Case("single-with-own-separator", ">>>" + W, calls=[WC]),
    Case("text-segment", "all\nHello! How can I help?", content="Hello! How can I help?"),
    Case("text-then-call", "all\nLet me check.>>>" + W, content="Let me check.", calls=[WC]),
    Case("parallel", W + ">>>get_time\n{}", calls=[WC, ("get_time", {})], ids=["call00000", "call00001"]),
    Case("call-then-text", W + ">>>all\nDone.", content="Done.", calls=[WC]),
    Case(
        "typed-by-schema",
        'search\n{"query": "q", "limit": "10", "tags": "[\\"a\\"]"}',
        calls=[("search", {"query": "q", "limit": 10, "tags": ["a"]})],
    ),
    Case(
        "string-props-keep-text",
        'set_port\n{"port": "8080", "zip": "02139"}',
        calls=[("set_port", {"port": "8080", "zip": "02139"})],
    ),
    Case(
        "separator-in-string",
        'set_port\n{"blob": "a >>>all\\n b"}',
        calls=[("set_port", {"blob": "a >>>all\n b"})],
    ),
    Case("unicode", 'get_weather\n{"city": "Zürich 東京"}', calls=[("get_weather", {"city": "Zürich 東京"})]),
    Case("cut-second", W + '>>>search\n{"query": "a', truncated=True, calls=[WC], incomplete=["search"]),
    Case("cut-first", 'get_weather\n{"city": "Pa', truncated=True, incomplete=["get_weather"]),
    Case("cut-before-recipient-line-ends", "Hello", truncated=True, content="Hello"),
    Case("cut-text-segment", "all\nHello, I", truncated=True, content="Hello, I"),
    Case("unclosed-at-eos", 'get_weather\n{"city": "Pa', content='get_weather\n{"city": "Pa'),
    # Rejected shapes: text.
    Case("plain-reply-without-recipient", "Hello! How can I help?", content="Hello! How can I help?"),
    Case("word-line-then-prose", "Sure\nHere it is.", content="Sure\nHere it is."),
    Case("repl-prompt-in-text", "all\nIn Python: >>> print(1)\n1", content="In Python: >>> print(1)\n1"),
    Case("name-then-list", "get_time\n[1, 2]", content="get_time\n[1, 2]"),
    Case("all-with-json", 'all\n{"a": 1}', content='{"a": 1}'),
    Case("v31-shape", "<function=get_time>{}</function>", content="<function=get_time>{}</function>"),
    Case(
        "llama-json",
        '{"name": "get_time", "parameters": {}}',
        content='{"name": "get_time", "parameters": {}}',
    ),
]

FUZZ = Fuzz(markers=(">>>all\n",), structure=(">>>all\n", ">>>"))
