"""xLAM: the reply is one bare JSON list ``[{"name": ..., "arguments": {...}}, ...]``, or that list
in a markdown fence."""

from tests.engine.formats.harness import Case, Fuzz

FAMILY = "xlam"

W = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'
S = '{"name": "search", "arguments": {"query": "x", "limit": "10"}}'
ONE = "[" + W + "]"
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})

CASES = [
    Case("single", ONE, calls=[PW], ids=["call00000"]),
    Case("leading-space", "\n " + ONE, content="\n ", calls=[PW]),
    Case("parallel", "[" + W + ", " + S + "]", calls=[PW, PS], ids=["call00000", "call00001"]),
    Case("spaced-list", "[\n  " + W + ",\n  " + S + "\n]", calls=[PW, PS]),
    Case("fenced", "```json\n" + ONE + "\n```", calls=[PW]),
    Case("fenced-no-language", "```\n" + ONE + "\n```", calls=[PW]),
    Case("fence-close-implied-at-eos", "```json\n" + ONE + "\n", calls=[PW]),
    Case("text-after", ONE + "\nDone.", content="\nDone.", calls=[PW]),
    Case(
        "arguments-as-json-string",
        '[{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}]',
        calls=[("get_weather", {"city": "Rome"})],
    ),
    Case("no-arguments", '[{"name": "get_time", "arguments": {}}]', calls=[("get_time", {})]),
    Case(
        "typed-by-schema",
        '[{"name": "search", "arguments": {"query": "q", "limit": "7", "tags": "[\\"a\\"]"}}]',
        calls=[("search", {"query": "q", "limit": 7, "tags": ["a"]})],
    ),
    Case(
        "string-props-keep-text",
        '[{"name": "set_port", "arguments": {"port": "8080", "zip": "02139"}}]',
        calls=[("set_port", {"port": "8080", "zip": "02139"})],
    ),
    Case(
        "brackets-inside-json-string",
        '[{"name": "set_port", "arguments": {"blob": "] ``` [{"}}]',
        calls=[("set_port", {"blob": "] ``` [{"})],
    ),
    # -- cut replies
    Case(
        "cut-in-second",
        "[" + W + ', {"name": "search", "arg',
        truncated=True,
        calls=[PW],
        incomplete=["search"],
    ),
    Case("cut-in-first", '[{"name": "get_wea', truncated=True, incomplete=[None]),
    Case("cut-in-fence", "```json\n[" + W + ', {"na', truncated=True, calls=[PW], incomplete=[None]),
    Case("cut-after-bracket", "[", truncated=True, content="["),
    # -- text: not at the start, not a list of calls
    Case("text-before", "Sure. " + ONE, content="Sure. " + ONE),
    Case("numbered-note", "[1] is the answer.", content="[1] is the answer."),
    Case("empty-list", "[]", content="[]"),
    Case("list-of-numbers", "[1, 2, 3]", content="[1, 2, 3]"),
    Case("unclosed-at-eos", "[" + W, content="[" + W, stable_prefix=False),
    Case(
        "extra-key",
        '[{"name": "get_time", "arguments": {}, "id": "x"}]',
        content='[{"name": "get_time", "arguments": {}, "id": "x"}]',
    ),
    Case(
        "parameters-key",
        '[{"name": "get_time", "parameters": {}}]',
        content='[{"name": "get_time", "parameters": {}}]',
    ),
    Case("python-fence", "```python\nprint(1)\n```", content="```python\nprint(1)\n```"),
    Case("yaml-fence-list", "```yaml\n" + ONE + "\n```", content="```yaml\n" + ONE + "\n```"),
    Case("object-not-list", W, content=W),
    Case("mistral-shape", "[TOOL_CALLS]" + ONE, content="[TOOL_CALLS]" + ONE),
    Case("pythonic-shape", "[get_weather(city='Paris')]", content="[get_weather(city='Paris')]"),
    Case(
        "text-after-fence-content",
        "```json\n" + ONE + "\nmore",
        content="```json\n" + ONE + "\nmore",
        stable_prefix=False,
    ),
]

FUZZ = Fuzz(
    structure=(r"\[", r"\]", ",", "```(?:json)?"),
    wrap=("[", "]"),
    max_calls=3,
)
