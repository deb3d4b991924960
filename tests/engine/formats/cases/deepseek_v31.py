"""DeepSeek V3.1: ``<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{json}<｜tool▁call▁end｜>`` in a section."""

import re

from tests.engine.formats.cases.deepseek_v3 import misspelt_begin_cases
from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "deepseek-v3.1"

B, E = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
CB, CE, SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"


def call(name: str, args: str) -> str:
    return f"{CB}{name}{SEP}{args}{CE}"


W = call("get_weather", '{"city": "Paris", "days": 3}')
PW = ("get_weather", {"city": "Paris", "days": 3})
V3 = f'{CB}function{SEP}get_weather\n```json\n{{"city": "Paris"}}\n```{CE}'

CASES = [
    Case("single", B + W + E, calls=[PW], ids=["call00000"]),
    Case("v31-template-shape", "<think></think>" + B + W + E, calls=[PW]),
    Case("text-around", "Checking.\n" + B + W + E + " Done.", content="Checking.\n Done.", calls=[PW]),
    Case(
        "parallel",
        B + W + call("get_time", "{}") + call("search", '{"query": "q", "limit": "5"}') + E,
        calls=[PW, ("get_time", {}), ("search", {"query": "q", "limit": 5})],
        ids=["call00000", "call00001", "call00002"],
    ),
    Case(
        "thinking-then-call",
        "<think>Need weather.</think>" + B + W + E,
        reasoning="Need weather.",
        calls=[PW],
    ),
    Case(
        "prefilled-think",
        "Need weather.</think>" + B + W + E,
        in_reasoning=True,
        reasoning="Need weather.",
        calls=[PW],
    ),
    Case(
        "numbers-stay-strings",
        B + call("set_port", '{"port": "8080", "zip": "02139", "flag": "true"}') + E,
        calls=[("set_port", {"port": "8080", "zip": "02139", "flag": "true"})],
    ),
    Case(
        "typed-by-schema",
        B + call("search", '{"query": "q", "limit": "10", "mode": "7", "score": "1.5"}') + E,
        calls=[("search", {"query": "q", "limit": 10, "mode": "7", "score": 1.5})],
    ),
    Case(
        "unicode",
        B + call("get_weather", '{"city": "Zürich 東京 🌧"}') + E,
        calls=[("get_weather", {"city": "Zürich 東京 🌧"})],
    ),
    Case(
        "marker-inside-argument",
        B + call("set_port", '{"blob": "x' + CE + E + SEP + '"}') + E,
        calls=[("set_port", {"blob": "x" + CE + E + SEP})],
    ),
    Case(
        "nested",
        B + call("search", '{"query": "q", "filters": {"year": 2021}, "tags": ["x"]}') + E,
        calls=[("search", {"query": "q", "filters": {"year": 2021}, "tags": ["x"]})],
    ),
    Case("v3-shape-is-text", B + V3 + E, content=B + V3 + E),
    # Unclosed at a normal end: text; its prefixes cut after the call keep it (no stable prefix).
    Case("missing-section-end", B + W, content=B + W, stable_prefix=False),
    # Cut at max_tokens in the second call: the first counts, the cut remainder is text.
    Case("cut", B + W + CB + "search" + SEP + '{"q', truncated=True, calls=[PW], incomplete=["search"]),
    Case("cut-only-call", B + CB + "search" + SEP + '{"q', truncated=True, incomplete=["search"]),
    Case("name-with-space", B + call("get weather", "{}") + E, content=B + call("get weather", "{}") + E),
    Case("array-arguments", B + call("get_time", "[1]") + E, content=B + call("get_time", "[1]") + E),
    Case("garbage-after-json", B + call("get_time", "{} x") + E, content=B + call("get_time", "{} x") + E),
    Case("plain", "Just text, 5 < 6.", content="Just text, 5 < 6."),
]

# The closing reasoning tag inside an argument: part of the call in every reasoning state.
CASES += close_tag_in_argument_cases(
    ("<think>", "</think>"),
    B + call("set_port", '{"blob": "why <think> and </think> here"}') + E,
    ("set_port", {"blob": "why <think> and </think> here"}),
    B,
)

# The R1 distills' misspelt section tags, as DeepSeek V3's cases read them
CASES += misspelt_begin_cases(W, E, PW)

# The section's markers are structure; one call's raw needs them back to stand alone.
FUZZ = Fuzz(
    markers=(B, E, "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"),
    structure=(re.escape(B), re.escape(E)),
    wrap=(B, E),
)
