"""Llama 3: the whole reply is ``{"name": ..., "parameters": {...}}`` (optionally after <|python_tag|>)."""

from tests.engine.formats.harness import Case, Fuzz

FAMILY = "llama3"

W = '{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}'
LLAMA4 = ("llama4",)  # Llama 4 reads one bare object naming an offered tool the same way

CASES = [
    Case("bare", W, calls=[("get_weather", {"city": "Paris", "days": 3})], ids=["call00000"], also=LLAMA4),
    Case("python-tag", "<|python_tag|>" + W, calls=[("get_weather", {"city": "Paris", "days": 3})]),
    Case(
        "leading-and-trailing-ws",
        "\n " + W + "\n",
        content="\n \n",
        calls=[("get_weather", {"city": "Paris", "days": 3})],
        also=LLAMA4,
    ),
    Case(
        "type-function",
        '{"type": "function", "name": "search", "parameters": {"query": "q", "limit": "10"}}',
        calls=[("search", {"query": "q", "limit": 10})],
        also=LLAMA4,
    ),
    Case(
        "string-number-typed",
        '<|python_tag|>{"name": "search", "parameters": {"query": "q", "limit": "2"}}',
        calls=[("search", {"query": "q", "limit": 2})],
    ),
    Case(
        "marker-in-string",
        '{"name": "set_port", "parameters": {"blob": "} <|python_tag|> {"}}',
        calls=[("set_port", {"blob": "} <|python_tag|> {"})],
        also=LLAMA4,
    ),
    Case("json-for-user", '{"a": 1, "b": [1, 2]}', content='{"a": 1, "b": [1, 2]}'),
    Case(
        "unknown-name-bare",
        '{"name": "Alice", "parameters": {"age": 3}}',
        content='{"name": "Alice", "parameters": {"age": 3}}',
    ),
    Case("json-then-text", W + " is what I would call", content=W + " is what I would call"),
    Case("text-then-json", "Sure: " + W, content="Sure: " + W),
    Case(
        "nested-tool-list-shape",
        '{"type": "function", "function": {"name": "get_weather", "parameters": {"city": "Paris"}}}',
        content='{"type": "function", "function": {"name": "get_weather", "parameters": {"city": "Paris"}}}',
    ),
    Case(
        "other-type",
        '{"type": "tool", "name": "get_time", "parameters": {}}',
        content='{"type": "tool", "name": "get_time", "parameters": {}}',
    ),
    # Llama 3.x models write "arguments" too (it used to be text here): a call of an offered tool.
    Case(
        "arguments-key-no-args",
        '{"name": "get_time", "arguments": {}}',
        calls=[("get_time", {})],
        also=("hermes", "llama4"),
    ),
    Case(
        "builtin-python",
        '<|python_tag|>brave_search.call(query="x")',
        content='<|python_tag|>brave_search.call(query="x")',
    ),
    Case("truncated-call", W, truncated=True, incomplete=["get_weather"]),
    Case("plain", "The answer is 51.", content="The answer is 51."),
    Case("brace-later", "a {b}", content="a {b}"),
]


# Llama 3.x variants: "arguments" for "parameters", the python tag after text, a call in one delta
# (the harness feeds every case whole too).
PW = ("get_weather", {"city": "Paris", "days": 3})
WA = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'
HERMES = ("hermes", "llama4")  # Hermes reads Qwen2.5-Coder's bare or fenced object, written with
# "arguments" (and Llama 4 a bare one)
VARIANTS = [
    Case("arguments-key", WA, calls=[PW], also=HERMES),
    Case("arguments-key-python-tag", "<|python_tag|>" + WA, calls=[PW]),
    Case(
        "both-keys-is-text",
        '{"name": "get_time", "parameters": {}, "arguments": {}}',
        content='{"name": "get_time", "parameters": {}, "arguments": {}}',
    ),
    Case(
        "text-before-python-tag",
        "Let me check the weather.<|python_tag|>" + W,
        content="Let me check the weather.",
        calls=[PW],
    ),
    Case(
        "text-before-python-tag-arguments",
        "Sure!\n<|python_tag|>" + WA + "\n",
        content="Sure!\n\n",
        calls=[PW],
    ),
    Case(
        "text-before-python-tag-then-more-text",
        "Hm <|python_tag|>" + W + " and more",
        content="Hm <|python_tag|>" + W + " and more",
    ),
    Case("text-before-bare-json-is-text", "Result: " + W, content="Result: " + W),
    Case(
        "python-tag-cut",
        "Ok<|python_tag|>" + W[:25],
        truncated=True,
        content="Ok",
        incomplete=["get_weather"],
    ),
]
CASES += VARIANTS

# Llama 3.2's deviation: the call in a markdown fence, the whole reply (read strictly: json or no
# language word, one object naming an offered tool, nothing but whitespace after the fence).
FENCED = [
    Case("fenced-json", "```json\n" + W + "\n```", calls=[PW]),
    Case("fenced-bare-arguments", "```\n" + WA + "\n```\n", content="\n", calls=[PW], also=HERMES),
    Case("fenced-upper-inline", "\n```JSON " + W + "```", content="\n", calls=[PW]),
    Case("fenced-then-text", "```json\n" + W + "\n```\nDone.", content="```json\n" + W + "\n```\nDone."),
    Case("fenced-text-first", "Call:\n```json\n" + W + "\n```", content="Call:\n```json\n" + W + "\n```"),
    Case("fenced-other-language", "```python\n" + W + "\n```", content="```python\n" + W + "\n```"),
    Case(
        "fenced-unknown-tool",
        '```json\n{"name": "Alice", "parameters": {"age": 3}}\n```',
        content='```json\n{"name": "Alice", "parameters": {"age": 3}}\n```',
    ),
    Case("fenced-list", "```json\n[" + W + "]\n```", content="```json\n[" + W + "]\n```"),
    Case("fenced-two-objects", "```json\n" + W + W + "\n```", content="```json\n" + W + W + "\n```"),
    Case("fenced-code", "```py\nprint(1)\n```", content="```py\nprint(1)\n```"),
    Case("fenced-unclosed", "```json\n" + W + "\n", content="```json\n" + W + "\n"),
    Case("fenced-cut", "```json\n" + W[:30], truncated=True, incomplete=["get_weather"]),
    Case("fenced-cut-code", "```py\nprint(", truncated=True, content="```py\nprint("),
]
CASES += FENCED

# Several calls in one turn separated by ";" (``{...}; {...}``), as vLLM's and llama.cpp's Llama 3
# readers take them: each names an offered tool (after the python tag, any), the whole reply.
T = '{"name": "get_time", "parameters": {}}'
WC, TC = ("get_weather", {"city": "Paris", "days": 3}), ("get_time", {})
SEMICOLONS = [
    Case("semicolon-separated", W + "; " + T, calls=[WC, TC], ids=["call00000", "call00001"]),
    Case("semicolon-no-space", W + ";" + T + "\n", content="\n", calls=[WC, TC]),
    Case("semicolon-newlines", W + "\n;\n" + T, calls=[WC, TC]),
    Case("semicolon-python-tag", "<|python_tag|>" + W + "; " + T, calls=[WC, TC]),
    Case(
        "semicolon-after-text",
        "Checking both. <|python_tag|>" + W + "; " + T,
        content="Checking both. ",
        calls=[WC, TC],
    ),
    # an undeclared tool, text after the separator, a separator with nothing after it: text (a
    # prefix cut after the separator keeps its call: no stable prefix)
    Case(
        "semicolon-undeclared-tool-is-text",
        W + '; {"name": "Alice", "parameters": {}}',
        content=W + '; {"name": "Alice", "parameters": {}}',
        stable_prefix=False,
    ),
    Case(
        "semicolon-then-text-is-text",
        W + "; and that is all",
        content=W + "; and that is all",
        stable_prefix=False,
    ),
    Case("semicolon-alone-is-text", W + ";", content=W + ";", stable_prefix=False),
    Case(
        "semicolon-cut-in-second-call", W + "; " + T[:30], truncated=True, calls=[WC], incomplete=["get_time"]
    ),
    Case("semicolon-cut-after-separator", W + "; ", truncated=True, calls=[WC], content="; "),
    Case("semicolon-cut-in-its-name", W + "; " + T[:14], truncated=True, calls=[WC], content="; " + T[:14]),
]
CASES += SEMICOLONS

# Llama 3.3 answers the template's "Environment: ipython" in Python after the python tag: a call
# (or a list of them) of declared tools, keyword literals only, the rest of the reply; the
# template's built-in shape NAME.call(...) names NAME. Functionary v3.1 reads any code after the
# tag as its code interpreter's call, so it reads these too (as a call of "python").
PY = "<|python_tag|>"
FV31 = ("functionary-v3.1",)
PYTHON = [
    Case("python-call", PY + 'get_weather(city="Paris", days=3)', calls=[WC], also=FV31),
    Case(
        "python-call-after-text",
        "Let me check. " + PY + "get_time()\n",
        content="Let me check. ",
        calls=[TC],
        also=FV31,
    ),
    Case("python-builtin-shape", PY + 'get_weather.call(city="Paris", days=3)', calls=[WC], also=FV31),
    Case(
        "python-call-list",
        PY + '[get_weather(city="Paris", days=3), get_time()]',
        calls=[WC, TC],
        ids=["call00000", "call00001"],
        also=FV31,
    ),
    Case(
        "python-json-words",
        PY + 'search(query="q", limit=2, exact=true)',
        calls=[("search", {"query": "q", "limit": 2, "exact": True})],
        also=FV31,
    ),
    # code that is no call of a declared tool, a call with text after it, a name or a positional
    # argument for a value: text, as before (nothing after the tag is run)
    *(
        Case(f"python-{what}-is-text", PY + code, content=PY + code, also=FV31)
        for what, code in [
            ("undeclared", 'lookup(city="Paris")'),
            ("code", "import math\nprint(math.pi)"),
            ("name-value", "get_weather(city=paris)"),
            ("positional", 'get_weather("Paris")'),
            ("then-text", "get_time() is what I would call"),
        ]
    ),
    Case(
        "python-call-cut", PY + 'get_weather(city="Par', truncated=True, incomplete=["get_weather"], also=FV31
    ),
]
CASES += PYTHON

# A call is the whole reply; an unknown tool's bare JSON is text, so the fuzz writes the python tag.
FUZZ = Fuzz(
    markers=("<|python_tag|>",),
    max_calls=1,
    reply=lambda fmt, calls, texts, reasoning, rnd: (
        ("<|python_tag|>" + fmt.example_call(*calls[0]), "", "") if calls else (texts[0], texts[0], "")
    ),
)
