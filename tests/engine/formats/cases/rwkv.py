"""RWKV: ``**Tool Call:**`` then a fenced ``{"name": ..., "arguments": {...}}``."""

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases, text_case

FAMILY = "rwkv"

OPEN = "**Tool Call:**"
FENCE = "```"


def block(obj: str, lang: str = "json") -> str:
    return f"{OPEN}\n{FENCE}{lang}\n{obj}\n{FENCE}"


WEATHER = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'
SEARCH = '{"name": "search", "arguments": {"query": "x", "limit": "10"}}'
W, S = block(WEATHER), block(SEARCH)
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})

CASES = [
    Case("single", W, calls=[PW], ids=["call00000"]),
    Case(
        "text-around", "Let me check.\n\n" + W + "\n\nDone.", content="Let me check.\n\n\n\nDone.", calls=[PW]
    ),
    Case("parallel", W + "\n\n" + S, content="\n\n", calls=[PW, PS], ids=["call00000", "call00001"]),
    Case("back-to-back", W + S, calls=[PW, PS]),
    Case(
        "fence-without-language",
        block('{"name": "get_time", "arguments": {}}', lang=""),
        calls=[("get_time", {})],
    ),
    Case("fence-on-the-marker-line", OPEN + " ```json " + WEATHER + " ```", calls=[PW]),
    Case("object-without-fence", OPEN + " " + WEATHER + "\nDone.", content="\nDone.", calls=[PW]),
    Case("arguments-left-out", block('{"name": "get_time"}'), calls=[("get_time", {})]),
    Case(
        "arguments-as-json-string",
        block('{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}'),
        calls=[("get_weather", {"city": "Rome"})],
    ),
    Case(
        "typed-by-schema",
        block('{"name": "search", "arguments": {"query": "q", "limit": "7", "score": "null"}}'),
        calls=[("search", {"query": "q", "limit": 7, "score": None})],
    ),
    Case(
        "string-props-keep-text",
        block('{"name": "set_port", "arguments": {"port": "8080", "zip": "02139"}}'),
        calls=[("set_port", {"port": "8080", "zip": "02139"})],
    ),
    Case(
        "markers-inside-json-string",
        block('{"name": "set_port", "arguments": {"blob": "```\\n**Tool Call:** }"}}'),
        calls=[("set_port", {"blob": "```\n**Tool Call:** }"})],
    ),
    Case(
        "closing-fence-implied-at-eos",
        f"{OPEN}\n{FENCE}json\n" + '{"name": "get_time", "arguments": {}}\n',
        calls=[("get_time", {})],
    ),
    Case(
        "think-then-call",
        "<think>\nweather\n</think>\n\n" + W,
        reasoning="\nweather\n",
        content="\n\n",
        calls=[PW],
    ),
    Case(
        "prefilled-think",
        "I should call it.\n</think>\n" + W,
        in_reasoning=True,
        reasoning="I should call it.\n",
        content="\n",
        calls=[PW],
    ),
    # -- cut
    Case(
        "cut-in-json",
        f"{OPEN}\n{FENCE}json\n" + '{"name": "search", "arguments": {"q',
        truncated=True,
        incomplete=["search"],
    ),
    Case("cut-before-closing-fence", W[:-2], truncated=True, incomplete=["get_weather"]),
    Case(
        "cut-after-first", W + "\n\n" + S[:30], truncated=True, content="\n\n", calls=[PW], incomplete=[None]
    ),
    # -- text
    text_case("marker-in-prose", "Start the answer with **Tool Call:** when you call a tool."),
    text_case("marker-then-other-fence", OPEN + "\n```python\nget_weather(city='Paris')\n```"),
    text_case(
        "fence-left-open-then-text", OPEN + "\n```json\n" + WEATHER + "\nthen more text", stable_prefix=False
    ),
    text_case("parameters-key", block('{"name": "get_time", "parameters": {}}')),
    text_case("extra-key", block('{"name": "get_time", "arguments": {}, "id": "1"}')),
    text_case("list-of-calls", block("[" + WEATHER + "]")),
    text_case("fenced-call-without-marker", f"{FENCE}json\n{WEATHER}\n{FENCE}"),
    text_case("hermes-tag", '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>'),
]

CASES += close_tag_in_argument_cases(
    ("<think>", "</think>"),
    block('{"name": "set_port", "arguments": {"blob": "why <think> and </think> here"}}'),
    ("set_port", {"blob": "why <think> and </think> here"}),
    OPEN,
)

FUZZ = Fuzz(markers=(FENCE,))
