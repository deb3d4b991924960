"""DeepSeek V3 / R1: sectioned calls with a fenced JSON block (fullwidth ｜ and ▁ markers)."""

import re

from tests.engine.formats.harness import Case, Fuzz

FAMILY = "deepseek-v3"

B, E = "<｜tool▁calls▁begin｜>", "<｜tool▁calls▁end｜>"
CB, CE, SEP = "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"


def call(name: str, args: str, fence: bool = True) -> str:
    body = f"```json\n{args}\n```" if fence else args
    return f"{CB}function{SEP}{name}\n{body}{CE}"


W = call("get_weather", '{"city": "Paris", "days": 3}')
S = call("search", '{"query": "x", "limit": "10"}')
PW = ("get_weather", {"city": "Paris", "days": 3})

CASES = [
    Case("single", B + W + E, calls=[PW], ids=["call00000"]),
    Case(
        "text-around", "Let me check.\n" + B + W + E + "\nDone.", content="Let me check.\n\nDone.", calls=[PW]
    ),
    Case(
        "parallel",
        B + W + "\n" + S + E,
        calls=[PW, ("search", {"query": "x", "limit": 10})],
        ids=["call00000", "call00001"],
    ),
    Case(
        "r1-think-then-call",
        "<think>\nThe user wants the weather.\n</think>\n\n" + B + W + E,
        reasoning="\nThe user wants the weather.\n",
        content="\n\n",
        calls=[PW],
    ),
    Case(
        "prefilled-think",
        "Okay, call the tool.\n</think>\n\n" + B + W + E,
        in_reasoning=True,
        reasoning="Okay, call the tool.\n",
        content="\n\n",
        calls=[PW],
    ),
    Case(
        "call-in-closed-reasoning",
        "<think>maybe " + B + W + E + " no</think>Hi",
        reasoning="maybe " + B + W + E + " no",
        content="Hi",
    ),
    Case("unfenced", B + call("get_time", "{}", fence=False) + E, calls=[("get_time", {})]),
    Case("empty-arguments", B + call("get_time", "{}") + E, calls=[("get_time", {})]),
    Case(
        "unicode-and-escapes",
        B
        + call("set_port", '{"blob": "Zürich 東京 \\"q\\" \\\\ \\n tab\\t", "port": "8080", "zip": "02139"}')
        + E,
        calls=[("set_port", {"blob": 'Zürich 東京 "q" \\ \n tab\t', "port": "8080", "zip": "02139"})],
    ),
    Case(
        "nested-json",
        B
        + call("search", '{"query": "q", "filters": {"year": "2020"}, "tags": ["a", "b"], "score": null}')
        + E,
        calls=[("search", {"query": "q", "filters": {"year": 2020}, "tags": ["a", "b"], "score": None})],
    ),
    Case(
        "marker-inside-argument",
        B + call("set_port", '{"blob": "a ' + E + " " + CE + " " + CB + ' ```"}') + E,
        calls=[("set_port", {"blob": "a " + E + " " + CE + " " + CB + " ```"})],
    ),
    # Cut at max_tokens in the second call of a pair: the complete first call counts, the cut
    # remainder is text byte for byte (the section opener is structure).
    Case(
        "cut-mid-call",
        B + W + "\n" + CB + "function" + SEP + 'search\n```json\n{"que',
        truncated=True,
        content="\n",
        calls=[PW],
        incomplete=["search"],
    ),
    Case("cut-after-first-call", B + W, truncated=True, calls=[PW], stable_prefix=False),
    Case("cut-mid-first-call", B + W[:-12], truncated=True, incomplete=["get_weather"]),
    Case("cut-inside-marker", B + W + CB[:4], truncated=True, calls=[PW], incomplete=[None]),
    # An unclosed section in a reply that ended normally is text (its truncated prefixes, cut
    # right after the complete call, keep it: hence no stable prefix).
    Case("missing-section-end", B + W, content=B + W, stable_prefix=False),
    Case(
        "wrong-type",
        B + W.replace("function", "tool", 1) + E,
        content=B + W.replace("function", "tool", 1) + E,
    ),
    Case(
        "v31-shape-is-text",
        B + CB + "get_weather" + SEP + '{"city": "Paris"}' + CE + E,
        content=B + CB + "get_weather" + SEP + '{"city": "Paris"}' + CE + E,
    ),
    Case(
        "not-json",
        B + call("get_weather", "city=Paris") + E,
        content=B + call("get_weather", "city=Paris") + E,
    ),
    Case(
        "text-inside-section",
        B + W + " and then " + S + E,
        content=B + W + " and then " + S + E,
        stable_prefix=False,
    ),
    Case(
        "cut-after-malformed",
        B + W + " and th",
        truncated=True,
        incomplete=["get_weather"],
        stable_prefix=False,
    ),
    Case(
        "fence-not-closed",
        B + f"{CB}function{SEP}get_time\n```json\n{{}}{CE}" + E,
        content=B + f"{CB}function{SEP}get_time\n```json\n{{}}{CE}" + E,
    ),
    Case("partial-marker-text", "a <｜tool is not a marker", content="a <｜tool is not a marker"),
    Case(
        "trailing-comma",
        B + call("get_weather", '{"city": "Oslo",}') + E,
        calls=[("get_weather", {"city": "Oslo"})],
    ),
]

# The R1 distills' misspelt section tags (as llama.cpp reads them): read as the published tag when
# the rest of the section is spelled as published; anything else stays text. (DeepSeek V3.1's
# cases use the same, with its call.)
MISSPELT = (
    "<｜tool_calls_begin｜>",
    "<｜tool calls begin｜>",
    "<｜tool\\_calls\\_begin｜>",
    "<｜tool▁calls｜>",
)


def misspelt_begin_cases(call: str, end: str, parsed: tuple) -> list[Case]:
    """The cases of each misspelt opening tag before ``call`` (one call, read as ``parsed``) and
    the section's ``end``."""
    out = []
    for n, tag in enumerate(MISSPELT):
        out += [
            Case(
                f"misspelt-begin-{n}",
                "Let me check.\n" + tag + call + end,
                content="Let me check.\n",
                calls=[parsed],
            ),
            Case(f"misspelt-begin-{n}-cut", tag + call[:20], truncated=True, incomplete=[None]),
            Case(f"misspelt-begin-{n}-unclosed", tag + call, content=tag + call, stable_prefix=False),
            Case(
                f"misspelt-begin-{n}-in-text",
                f"The tag {tag} opens calls.",
                content=f"The tag {tag} opens calls.",
            ),
        ]
    inner = "<｜tool_calls_begin｜><｜tool_call_begin｜>get_weather<｜tool_sep｜>{}<｜tool_call_end｜><｜tool_calls_end｜>"
    return [*out, Case("misspelt-inner-markers-are-text", inner, content=inner)]


CASES += misspelt_begin_cases(W, E, PW)

# The section's markers are structure; one call's raw needs them back to stand alone.
FUZZ = Fuzz(
    markers=(B, E, "<｜tool▁call▁begin｜>", "<｜tool▁call▁end｜>", "<｜tool▁sep｜>"),
    structure=(re.escape(B), re.escape(E)),
    wrap=(B, E),
)
