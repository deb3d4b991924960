"""PLaMo 3: ``<|plamo:begin_tool_requests:plamo|>`` then per call ``<|plamo:begin_tool_request:plamo|>
<|plamo:begin_tool_name:plamo|>NAME<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|>
<|plamo:constrain|>json<|plamo:msg|>{JSON}<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>``
then ``<|plamo:end_tool_requests:plamo|>``. No published template: the tiny model's template is a
stand-in (``STAND_IN``) written from what the servers and PLaMo 3's own template document."""

import re

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases
from tests.engine.formats.harness import text_case as text

FAMILY = "plamo3"

B, E = "<|plamo:begin_tool_requests:plamo|>", "<|plamo:end_tool_requests:plamo|>"
CB, CE = "<|plamo:begin_tool_request:plamo|>", "<|plamo:end_tool_request:plamo|>"
NB, NE = "<|plamo:begin_tool_name:plamo|>", "<|plamo:end_tool_name:plamo|>"
AB, AE = "<|plamo:begin_tool_arguments:plamo|>", "<|plamo:end_tool_arguments:plamo|>"
CJ, MSG = "<|plamo:constrain|>json", "<|plamo:msg|>"
TB, TE = "<|plamo:begin_think:plamo|>", "<|plamo:end_think:plamo|>"


def req(name: str, args: str, *, head: str = CJ + MSG) -> str:
    """One request as the model writes it (``head``: what stands between the arguments' tag and
    the JSON)."""
    return f"{CB}{NB}{name}{NE}{AB}{head}{args}{AE}{CE}"


def section(*requests: str) -> str:
    return B + "".join(requests) + E


W = req("get_weather", '{"city": "Paris", "days": 3}')
PW = ("get_weather", {"city": "Paris", "days": 3})
T = req("get_time", "{}")
PT = ("get_time", {})
# The section laid out on lines, whitespace around every tag, the name and the JSON.
SPACED = (
    f"{B}\n  {CB}\n    {NB} get_weather {NE}\n    {AB} {CJ} {MSG}"
    f' {{"city": "Paris", "days": 3}} {AE}\n  {CE}\n{E}'
)

CASES = [
    # -- calls as the model writes them
    Case("single", section(W), calls=[PW], ids=["call00000"]),
    Case(
        "parallel",
        section(W, req("search", '{"query": "q", "limit": 3}'), T),
        calls=[PW, ("search", {"query": "q", "limit": 3}), PT],
        ids=["call00000", "call00001", "call00002"],
    ),
    Case(
        "text-before", "Checking the weather.\n" + section(W), content="Checking the weather.\n", calls=[PW]
    ),
    Case("text-around", "Sure.\n" + section(W) + "\nDone.", content="Sure.\n\nDone.", calls=[PW]),
    Case("two-sections", section(W) + "\n" + section(T), content="\n", calls=[PW, PT]),
    Case("unknown-tool-read", section(req("other_tool", '{"n": 5}')), calls=[("other_tool", {"n": 5})]),
    Case(
        "numbers-stay-strings",
        section(req("set_port", '{"port": "8080", "zip": "02139"}')),
        calls=[("set_port", {"port": "8080", "zip": "02139"})],
    ),
    Case(
        "typed-by-schema",
        section(req("search", '{"query": "q", "limit": "10", "filters": {"year": "1999"}, "tags": []}')),
        calls=[("search", {"query": "q", "limit": 10, "filters": {"year": 1999}, "tags": []})],
    ),
    Case(
        "unicode-and-escapes",
        section(req("set_port", '{"blob": "Z\\u00fcrich \\"x\\" 東京\\n"}')),
        calls=[("set_port", {"blob": 'Zürich "x" 東京\n'})],
    ),
    Case(
        "markers-inside-argument",
        section(req("set_port", '{"blob": "' + AE + CE + E + B + CB + NB + MSG + '"}')),
        calls=[("set_port", {"blob": AE + CE + E + B + CB + NB + MSG})],
    ),
    Case(
        "multiline-json",
        section(req("search", '{\n  "query": "q",\n  "limit": 2\n}')),
        calls=[("search", {"query": "q", "limit": 2})],
    ),
    # -- deviations read: no constrain hint, whitespace between the tags
    Case(
        "no-constrain-hint", section(req("get_weather", '{"city": "Paris", "days": 3}', head=MSG)), calls=[PW]
    ),
    Case("spaced-layout", SPACED, calls=[PW]),
    Case("newline-between-requests", section(W + "\n", T), calls=[PW, PT]),
    # -- reasoning
    Case("think-then-call", TB + "weather!" + TE + section(W), reasoning="weather!", calls=[PW]),
    Case("empty-think", TB + TE + section(W), calls=[PW]),
    Case(
        "think-text-call",
        TB + "plan" + TE + "Checking.\n" + section(W),
        reasoning="plan",
        content="Checking.\n",
        calls=[PW],
    ),
    Case(
        "orphan-close", "the user wants weather" + TE + "Hi", reasoning="the user wants weather", content="Hi"
    ),
    Case(
        "prefilled-think-closed",
        "plan" + TE + section(W),
        in_reasoning=True,
        reasoning="plan",
        calls=[PW],
    ),
    Case(
        "call-in-closed-reasoning",
        TB + "maybe " + section(W) + " or not" + TE + "Hello",
        reasoning="maybe " + section(W) + " or not",
        content="Hello",
    ),
    Case("think-unclosed-cut", TB + "thinking about", truncated=True, reasoning="thinking about"),
    # -- cut by the token limit
    Case("section-end-missing-when-cut", section(W)[: -len(E)], truncated=True, calls=[PW]),
    Case(
        "cut-mid-arguments",
        B + W + req("search", '{"query": "q"}')[:-30],
        truncated=True,
        calls=[PW],
        incomplete=["search"],
    ),
    Case("cut-mid-first-call", B + W[:-20], truncated=True, incomplete=["get_weather"]),
    Case("cut-in-name", B + CB + NB + "get_wea", truncated=True, incomplete=[None]),
    Case("cut-after-opener", B, truncated=True, incomplete=[None]),
    Case("cut-in-end-arguments-tag", B + W[: W.index(AE) + 10], truncated=True, incomplete=["get_weather"]),
    # -- malformed: the text, byte for byte
    # A reply that ended normally without the section's end: text (a prefix of it cut by the
    # token limit keeps its complete requests, so its prefixes are not stable).
    text("unclosed-at-eos", section(W)[: -len(E)], stable_prefix=False),
    text("unclosed-mid-request-at-eos", B + W + T[:-20], stable_prefix=False),
    text("empty-section", "Nothing. " + B + E),
    text("missing-end-arguments", section(f"{CB}{NB}get_time{NE}{AB}{CJ}{MSG}{{}}{CE}")),
    text("missing-end-request", section(f"{CB}{NB}get_time{NE}{AB}{CJ}{MSG}{{}}{AE}")),
    text("missing-msg", section(req("get_time", "{}", head=CJ))),
    text("missing-arguments-tag", section(f"{CB}{NB}get_time{NE}{CJ}{MSG}{{}}{AE}{CE}")),
    text("missing-name-tags", section(f"{CB}get_time{AB}{CJ}{MSG}{{}}{AE}{CE}")),
    text("missing-request-tag", section(f"{NB}get_time{NE}{AB}{CJ}{MSG}{{}}{AE}{CE}")),
    text("other-constraint", section(req("get_time", "{}", head="<|plamo:constrain|>xml" + MSG))),
    text("msg-before-constrain", section(req("get_time", "{}", head=MSG + CJ))),
    text("tags-out-of-order", section(f"{CB}{NB}get_time{NE}{AB}{CJ}{MSG}{{}}{CE}{AE}")),
    text("wrong-nesting", section(f"{CB}{NB}get_time{AB}{NE}{CJ}{MSG}{{}}{AE}{CE}")),
    text("name-with-space", section(req("get time", "{}"))),
    text("empty-name", section(req("", "{}"))),
    text("string-arguments", section(req("get_time", '"{}"'))),
    text("list-arguments", section(req("get_time", "[]"))),
    text("no-arguments", section(req("get_time", ""))),
    text("text-after-json", section(req("get_time", "{} ok"))),
    text("fenced-json", section(req("get_time", "```json\n{}\n```"))),
    text("text-between-requests", section(W, " and ", T), stable_prefix=False),
    text("text-before-first-request", section("calls: ", W)),
    text("request-outside-section", W),
    text(
        "kimi-section",
        "<|tool_calls_section_begin|><|tool_call_begin|>functions.get_time:0"
        "<|tool_call_argument_begin|>{}<|tool_call_end|><|tool_calls_section_end|>",
    ),
    text("hermes-shape", '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>'),
    text("partial-marker-text", "a <|plamo:begin_tool and <|plamo: are text"),
    text("plain-text", "Hello! How can I help?"),
]

CASES += close_tag_in_argument_cases(
    (TB, TE),
    section(req("set_port", '{"blob": "why ' + TB + " and " + TE + ' here"}')),
    ("set_port", {"blob": "why " + TB + " and " + TE + " here"}),
    B,
)

# The section's tags are structure; one call's raw needs them back to stand alone.
FUZZ = Fuzz(
    markers=(E, CB, CE, NB, NE, AB, AE, CJ, MSG),
    structure=(re.escape(B), re.escape(E)),
    wrap=(B, E),
)

# -- settings, tiny models (tests/engine/formats/test_added_families.py)

SETTING_WORDS = ("PLaMo 3", "Preferred Networks")

# No published tool template was found (PLaMo 3's base models ship a chat template without tools;
# PFN's tool-calling PLaMo is served by its API). The stand-in keeps what is documented: PLaMo 3's
# turns ``ROLE<|plamo:msg|>CONTENT<|plamo:tag|>`` after ``<|plamo:tag|>`` (its own template), the
# end-of-turn token ``<|plamo:tag|>`` (vLLM's parsers), the tools and the call's spelling in the
# system text, a past call written in the request section after the assistant's content, a tool
# result as a tool turn.
STAND_IN = (
    "{{- bos_token }}<|plamo:tag|>"
    "{%- set sys = messages | selectattr('role', 'equalto', 'system') | map(attribute='content') | list %}"
    "{%- if sys or tools %}system<|plamo:msg|>{{ sys | join('\n') }}"
    "{%- if tools %}\n# Tools\nYou may call these tools:\n{% for t in tools %}{{ t | tojson }}\n{% endfor %}"
    "Call them in this format: <|plamo:begin_tool_requests:plamo|><|plamo:begin_tool_request:plamo|>"
    "<|plamo:begin_tool_name:plamo|>NAME<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|>"
    "<|plamo:constrain|>json<|plamo:msg|>{ARGUMENTS}<|plamo:end_tool_arguments:plamo|>"
    "<|plamo:end_tool_request:plamo|><|plamo:end_tool_requests:plamo|>{% endif %}<|plamo:tag|>{% endif %}"
    "{%- for m in messages %}{% if m.role in ('user', 'tool') %}{{ m.role }}<|plamo:msg|>{{ m.content }}"
    "<|plamo:tag|>"
    "{%- elif m.role == 'assistant' %}assistant<|plamo:msg|>{{ m.content or '' }}"
    "{%- if m.tool_calls %}<|plamo:begin_tool_requests:plamo|>{% for c in m.tool_calls %}"
    "<|plamo:begin_tool_request:plamo|><|plamo:begin_tool_name:plamo|>{{ c.function.name }}"
    "<|plamo:end_tool_name:plamo|><|plamo:begin_tool_arguments:plamo|><|plamo:constrain|>json<|plamo:msg|>"
    "{{ c.function.arguments if c.function.arguments is string else (c.function.arguments | tojson) }}"
    "<|plamo:end_tool_arguments:plamo|><|plamo:end_tool_request:plamo|>{% endfor %}"
    "<|plamo:end_tool_requests:plamo|>{% endif %}<|plamo:tag|>"
    "{%- endif %}{% endfor %}{% if add_generation_prompt %}assistant<|plamo:msg|>{% endif %}"
)

# PLaMo 3's tokenizer: the tags are "<|plamo:begin_" / "<|plamo:end_" + words + ":plamo|>";
# "<|plamo:constrain|>" and "<|plamo:msg|>" are tokens of their own; "<|plamo:tag|>" ends a turn.
TINY_MODELS = [
    (
        "stand-in:plamo3",
        ["<|plamo:bos|>", "<|plamo:tag|>"],
        ["<|plamo:begin_", "<|plamo:end_", ":plamo|>", "<|plamo:constrain|>", "<|plamo:msg|>"],
        "<|plamo:bos|>",
        "<|plamo:tag|>",
    )
]

# One call whose value holds the family's markers (test_added_families' cost cases).
COST_VALUE = "a " + AE + " " + CE + " " + E + " " + TE + " b"
