"""Kimi K2: ``<|tool_calls_section_begin|><|tool_call_begin|>functions.NAME:IDX<|tool_call_argument_begin|>{json}...``."""

import re

from tests.engine.formats.harness import TOOLS, Case, Fuzz

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

# Calls whose wrappers were left out, every marker a special token (mlx-swift-lm's and mlxcel's
# Kimi readers take a section without per-call markers; vLLM #32216 and unsloth #5624 calls
# without the section): a section of "functions.NAME:IDX<|tool_call_argument_begin|>{json}"
# calls, and calls without the section, its end optional at the end of the reply.
BARE_W = W.removeprefix(CB).removesuffix(CE)
BARE_T = call("get_time", 1, "{}").removeprefix(CB).removesuffix(CE)
UNWRAPPED = [
    Case("section-without-call-markers", B + BARE_W + E, calls=[PW]),
    Case("section-without-call-markers-two", B + BARE_W + "\n" + BARE_T + E, calls=[PW, ("get_time", {})]),
    Case("calls-without-section", "Let me check." + W + E, content="Let me check.", calls=[PW]),
    Case("calls-without-section-end", W + call("get_time", 1, "{}"), calls=[PW, ("get_time", {})]),
    Case("call-without-section-cut", W[:-20], truncated=True, incomplete=["get_weather"]),
    # text after the calls, a body that is no call, a call's JSON cut: text, nothing run
    Case("calls-without-section-then-text", W + " and more", content=W + " and more", stable_prefix=False),
    Case(
        "section-of-text-without-call-markers",
        B + "functions.get_weather:0 soon" + E,
        content="functions.get_weather:0 soon",
    ),
    Case(
        "section-without-call-markers-json-cut",
        B + BARE_W[:-3] + E,
        content=BARE_W[:-3],
    ),
]
CASES += UNWRAPPED

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


SET_FLAG = {"type": "object", "properties": {"flag": {"type": "string"}}}


def by_id(call_id: str, args: str = '{"city": "Paris", "days": 3}') -> str:
    return f"{B}{CB}{call_id}{AB}{args}{CE}{E}"


# Kimi copies the call ids of the conversation, as a client rewrote them (exo #2281, sglang
# #21377) or as a client wrote its own (sglang #25362, #37775): the tool is read from the id,
# or, where the id names none, is the one offered tool the arguments fit.
COPIED_IDS = [
    Case("id-underscored", by_id("functions_get_weather_1"), calls=[PW]),
    Case("id-joined", by_id("functionsget_weather5"), calls=[PW]),
    Case("id-dot-underscore-index", by_id("functions.get_weather_12"), calls=[PW]),
    Case("id-name-underscore-index", by_id("get_weather_2"), calls=[PW]),
    Case("id-client-counter", by_id("call00003"), calls=[PW]),
    Case("id-openai", by_id("call_9f2Kx81"), calls=[PW]),
    Case("id-anthropic", by_id("toolu_01A09q90qw90lq917835lq9"), calls=[PW]),
    Case("id-uuid", by_id("3f2b8c1e-7d4a-4b6e-9c0d-1a2b3c4d5e6f"), calls=[PW]),
    Case("id-bare-counter", by_id("7"), calls=[PW]),
    Case(
        "id-client-search",
        by_id("call_4", '{"query": "q", "limit": 3}'),
        calls=[("search", {"query": "q", "limit": 3})],
    ),
    Case(
        "two-calls-copied-ids",
        B + f'{CB}functions_get_weather_3{AB}{{"city": "Oslo"}}{CE}{CB}call00004{AB}{{"query": "q"}}{CE}' + E,
        calls=[("get_weather", {"city": "Oslo"}), ("search", {"query": "q"})],
    ),
    # the id is kept where it names no offered tool, or where the arguments fit none or several
    Case(
        "id-undeclared-name", by_id("functions_get_forecast_1"), calls=[("functions_get_forecast_1", PW[1])]
    ),
    Case(
        "id-args-fit-none", by_id("call00003", '{"town": "Paris"}'), calls=[("call00003", {"town": "Paris"})]
    ),
    Case(
        "id-args-fit-several",
        by_id("call00003", '{"flag": "x"}'),
        calls=[("call00003", {"flag": "x"})],
        tools=[*TOOLS, {"type": "function", "function": {"name": "set_flag", "parameters": SET_FLAG}}],
    ),
    Case("id-required-missing", by_id("call00003", '{"days": 2}'), calls=[("call00003", {"days": 2})]),
    Case("id-wrong-type", by_id("call00003", '{"city": 5}'), calls=[("call00003", {"city": 5})]),
    Case("name-not-an-id", by_id("callback"), calls=[("callback", PW[1])]),
    Case("id-without-tools", by_id("call00003"), calls=[("call00003", PW[1])], tools=[]),
    # cut by the token limit: named by the id where it holds a name, never by arguments not all there
    Case(
        "id-underscored-cut",
        f'{B}{CB}functions_get_weather_1{AB}{{"city": "Pa',
        truncated=True,
        incomplete=["get_weather"],
    ),
    Case("id-joined-cut", f"{B}{CB}functionsget_weather5{AB}{{", truncated=True, incomplete=["get_weather"]),
    Case(
        "id-cut-after-a-call",
        f'{B}{CB}call00002{AB}{{"query": "q"}}{CE}{CB}functions_get_weather_3{AB}{{"city"',
        truncated=True,
        calls=[("search", {"query": "q"})],
        incomplete=["get_weather"],
    ),
    Case("id-client-cut", f'{B}{CB}call00003{AB}{{"city": "Pa', truncated=True, incomplete=[None]),
    Case("id-undeclared-cut", f"{B}{CB}functions_get_forecast_1{AB}{{", truncated=True, incomplete=[None]),
]
CASES += COPIED_IDS

# The section's markers are structure; one call's raw needs them back to stand alone.
FUZZ = Fuzz(
    markers=(B, E, "<|tool_call_begin|>", "<|tool_call_end|>", "<|tool_call_argument_begin|>"),
    structure=(re.escape(B), re.escape(E)),
    wrap=(B, E),
)
