"""Kimi K2: ``<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{json}...``."""

import re

from tests.engine.formats.harness import Case, Fuzz

FAMILY = "kimi-k2"

B, E = "<|tool_calls_section_begin|>", "<|tool_calls_section_end|>"
CB, CE, AB = "<|tool_call_begin|>", "<|tool_call_end|>", "<|tool_call_argument_begin|>"


def call(name: str, idx: int, args: str) -> str:
    return f"{CB}functions.{name}:{idx}{AB}{args}{CE}"


W = call("get_weather", 0, '{"city": "Paris", "days": 3}')
PW = ("get_weather", {"city": "Paris", "days": 3})

CASES = [
    Case("single", B + W + E, calls=[PW], ids=["call00000"]),
    Case("text-around", "Sure.\n" + B + W + E + "\nok", content="Sure.\n\nok", calls=[PW]),
    Case(
        "parallel",
        B + W + call("search", 1, '{"query": "q", "limit": "3"}') + call("get_time", 2, "{}") + E,
        calls=[PW, ("search", {"query": "q", "limit": 3}), ("get_time", {})],
        ids=["call00000", "call00001", "call00002"],
    ),
    Case("thinking-then-call", "<think>weather!</think>" + B + W + E, reasoning="weather!", calls=[PW]),
    Case("k2-thinking-empty-think", "<think></think>" + B + W + E, calls=[PW]),
    Case("spaced-layout", B + "\n" + W + "\n" + E, calls=[PW]),
    Case("no-functions-prefix", B + f"{CB}get_time:0{AB}{{}}{CE}" + E, calls=[("get_time", {})]),
    Case(
        "numbers-stay-strings",
        B + call("set_port", 0, '{"port": "8080", "zip": "02139"}') + E,
        calls=[("set_port", {"port": "8080", "zip": "02139"})],
    ),
    Case(
        "unicode-escapes",
        B + call("set_port", 0, '{"blob": "\\u00fc \\"x\\" 東京\\n"}') + E,
        calls=[("set_port", {"blob": 'ü "x" 東京\n'})],
    ),
    Case(
        "marker-inside-argument",
        B + call("set_port", 0, '{"blob": "' + CE + E + B + '"}') + E,
        calls=[("set_port", {"blob": CE + E + B})],
    ),
    Case(
        "nested",
        B + call("search", 0, '{"query": "q", "filters": {"year": "1999"}, "tags": []}') + E,
        calls=[("search", {"query": "q", "filters": {"year": 1999}, "tags": []})],
    ),
    Case("section-end-implied-at-eos", B + W, calls=[PW]),
    # Cut at max_tokens right after a complete call, or inside the next one: the complete call
    # counts, the cut remainder is text byte for byte (the section opener is structure).
    Case("section-end-missing-when-cut", B + W, truncated=True, calls=[PW]),
    Case(
        "cut-mid-arguments",
        B + W + call("search", 1, '{"query": "q"}')[:-20],
        truncated=True,
        calls=[PW],
        incomplete=["search"],
    ),
    Case("cut-mid-first-call", B + W[:-20], truncated=True, incomplete=["get_weather"]),
    Case(
        "bad-id",
        B + f"{CB}functions.get time:0{AB}{{}}{CE}" + E,
        content=B + f"{CB}functions.get time:0{AB}{{}}{CE}" + E,
    ),
    Case(
        "missing-argument-begin",
        B + f"{CB}functions.get_time:0{{}}{CE}" + E,
        content=B + f"{CB}functions.get_time:0{{}}{CE}" + E,
    ),
    Case(
        "string-arguments", B + call("get_time", 0, '"{}"') + E, content=B + call("get_time", 0, '"{}"') + E
    ),
    Case("plain", "No tools needed: <|tool is text.", content="No tools needed: <|tool is text."),
]


# Noise between the section's markers (text that is none of them) is skipped; an empty section
# is no call and no markup.
NOISE_AND_EMPTY = [
    Case("empty-section", "Nothing to call." + B + E, content="Nothing to call."),
    Case("empty-section-spaced", "ok" + B + "\n" + E + "\nbye", content="ok\nbye"),
    Case("noise-before-first-call", B + "functions: " + W + E, calls=[PW]),
    Case("noise-between-calls", B + W + " , " + call("get_time", 1, "{}") + E, calls=[PW, ("get_time", {})]),
    Case("noise-before-section-end", B + W + " done " + E, content=" done ", calls=[PW]),
    Case("noise-only-section", B + " nothing " + E, content=" nothing "),
    Case("noise-cut", B + W + " and then", truncated=True, content=" ", calls=[PW], incomplete=[None]),
]
CASES += NOISE_AND_EMPTY

# The section's markers in the singular, as llama.cpp and vLLM read them; each spelling ends
# with its own end marker.
SB, SE = "<|tool_call_section_begin|>", "<|tool_call_section_end|>"
SINGULAR = [
    Case("singular-section", SB + W + SE, calls=[PW]),
    Case("singular-section-after-text", "Sure.\n" + SB + W + SE, content="Sure.\n", calls=[PW]),
    Case("singular-section-end-implied", SB + W, calls=[PW]),
    Case(
        "singular-then-plural",
        SB + W + SE + B + call("get_time", 1, "{}") + E,
        calls=[PW, ("get_time", {})],
    ),
    Case("singular-section-cut", SB + W[:-20], truncated=True, incomplete=["get_weather"]),
]
CASES += SINGULAR

# K2 Thinking calls tools from inside its thinking (its model card; llxprt-code #749): a complete
# section inside a <think> block the model then closes is a call, the text around it reasoning.
T2 = call("get_time", 1, "{}")
IN_THINKING = [
    Case(
        "call-inside-closed-thinking",
        "<think>Let me look. " + B + W + E + " Then answer.</think>It is sunny.",
        reasoning="Let me look.  Then answer.",
        content="It is sunny.",
        calls=[PW],
    ),
    Case(
        "two-sections-inside-thinking",
        "<think>First " + B + W + E + " then " + B + T2 + E + "</think>",
        reasoning="First  then ",
        calls=[PW, ("get_time", {})],
    ),
    Case(
        "call-inside-thinking-then-a-call-after",
        "<think>a " + B + W + E + "</think>" + B + T2 + E,
        reasoning="a ",
        calls=[PW, ("get_time", {})],
    ),
    Case(
        "call-inside-prefilled-thinking-closed",
        "plan " + B + W + E + " ok</think>Done.",
        in_reasoning=True,
        reasoning="plan  ok",
        content="Done.",
        calls=[PW],
    ),
    # still reasoning: a section that is no call, a cut reply's unclosed block
    Case(
        "malformed-section-inside-thinking-stays-reasoning",
        "<think>a " + B + "oops" + E + "</think>b",
        reasoning="a " + B + "oops" + E,
        content="b",
    ),
    Case(
        "call-inside-cut-thinking-stays-reasoning",
        "<think>a " + B + W + E + " more",
        truncated=True,
        reasoning="a " + B + W + E + " more",
    ),
]
CASES += IN_THINKING

# The section's markers are structure; one call's raw needs them back to stand alone.
FUZZ = Fuzz(
    markers=(B, E, "<|tool_call_begin|>", "<|tool_call_end|>", "<|tool_call_argument_begin|>"),
    structure=(re.escape(B), re.escape(E)),
    wrap=(B, E),
)
