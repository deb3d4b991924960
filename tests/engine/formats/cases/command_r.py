"""Command R7B: ``<|START_ACTION|>[{"tool_call_id", "tool_name", "parameters"}]<|END_ACTION|>``."""

import re

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "command-r"

A, E = "<|START_ACTION|>", "<|END_ACTION|>"
R, RE = "<|START_RESPONSE|>", "<|END_RESPONSE|>"
T, TE = "<|START_THINKING|>", "<|END_THINKING|>"
W = (
    A
    + '[\n    {"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris", "days": 3}}\n]'
    + E
)
WC = ("get_weather", {"city": "Paris", "days": 3})

CASES = [
    Case("single", W, calls=[WC], ids=["call00000"]),
    Case(
        "plan-then-action",
        T + "I will look up the weather." + TE + W,
        reasoning="I will look up the weather.",
        calls=[WC],
    ),
    # Cohere2 templates end the prompt with <|START_THINKING|>.
    Case(
        "prefilled-thinking", "Look it up." + TE + W, in_reasoning=True, reasoning="Look it up.", calls=[WC]
    ),
    Case(
        "prefilled-thinking-never-closed",
        "Look it up. " + W,
        in_reasoning=True,
        reasoning="Look it up. ",
        calls=[WC],
    ),
    Case("empty-thinking-then-action", T + TE + W, calls=[WC]),
    Case(
        "response-markers-are-structure",
        T + "Easy." + TE + R + "It is 4." + RE,
        reasoning="Easy.",
        content="It is 4.",
    ),
    Case("response-without-thinking", R + "Hello!" + RE, content="Hello!"),
    Case(
        "parallel-in-one-list",
        A + '[{"tool_call_id": "0", "tool_name": "get_weather", "parameters": {"city": "Paris", "days": 3}}, '
        '{"tool_call_id": "1", "tool_name": "get_time", "parameters": {}}]' + E,
        calls=[WC, ("get_time", {})],
        ids=["call00000", "call00001"],
    ),
    Case(
        "typed-by-schema",
        A + '[{"tool_name": "search", "parameters": {"query": "q", "limit": "10", "tags": "[\\"a\\"]"}}]' + E,
        calls=[("search", {"query": "q", "limit": 10, "tags": ["a"]})],
    ),
    Case(
        "parameters-as-json-string",
        A + '[{"tool_name": "get_weather", "parameters": "{\\"city\\": \\"Rome\\"}"}]' + E,
        calls=[("get_weather", {"city": "Rome"})],
    ),
    Case(
        "string-props-keep-text",
        A + '[{"tool_name": "set_port", "parameters": {"port": "8080", "zip": "02139"}}]' + E,
        calls=[("set_port", {"port": "8080", "zip": "02139"})],
    ),
    Case(
        "marker-in-string",
        A + '[{"tool_name": "set_port", "parameters": {"blob": "x <|END_ACTION|> y"}}]' + E,
        calls=[("set_port", {"blob": "x <|END_ACTION|> y"})],
    ),
    Case(
        "missing-close-at-eos", A + '[{"tool_name": "get_time", "parameters": {}}]', calls=[("get_time", {})]
    ),
    Case(
        "cut-in-list",
        A + '[{"tool_name": "search", "parameters": {"query": "a',
        truncated=True,
        incomplete=["search"],
    ),
    Case(
        "cut-after-thinking",
        T + "plan" + TE + A + '[{"tool_na',
        truncated=True,
        reasoning="plan",
        incomplete=[None],
    ),
    # Rejected shapes: text.
    Case("empty-list", A + "[]" + E, content=A + "[]" + E),
    Case(
        "extra-key",
        A + '[{"tool_name": "get_time", "parameters": {}, "x": 1}]' + E,
        content=A + '[{"tool_name": "get_time", "parameters": {}, "x": 1}]' + E,
    ),
    Case(
        "name-key-shape",
        A + '[{"name": "get_time", "arguments": {}}]' + E,
        content=A + '[{"name": "get_time", "arguments": {}}]' + E,
    ),
    Case(
        "object-not-list",
        A + '{"tool_name": "get_time", "parameters": {}}' + E,
        content=A + '{"tool_name": "get_time", "parameters": {}}' + E,
    ),
    # A prefix cut inside the list keeps its complete element; the whole reply is text.
    Case(
        "text-after-list",
        A + '[{"tool_name": "get_time", "parameters": {}}] x' + E,
        content=A + '[{"tool_name": "get_time", "parameters": {}}] x' + E,
        stable_prefix=False,
    ),
    Case(
        "r-plus-shape",
        'Action: ```json\n[{"tool_name": "get_time", "parameters": {}}]\n```',
        content='Action: ```json\n[{"tool_name": "get_time", "parameters": {}}]\n```',
    ),
    Case("orphan-close", "hmm" + TE + "Hi", reasoning="hmm", content="Hi"),
    Case("plain-text", "Hello! How can I help?", content="Hello! How can I help?"),
]

# Issue 27, deviation 8: Command A / R7B ground their answers with citations,
# <co>SPAN</co: ID:[I,J],ID2:[K]>. Shown as the span and its sources, never as markup.
CITATIONS = [
    Case(
        "i27-citation", R + "It is <co>sunny</co: 0:[1]> in Paris." + RE, content="It is sunny[0:1] in Paris."
    ),
    Case("i27-citation-many-sources", R + "<co>warm</co: 0:[1,2],1:[0]>" + RE, content="warm[0:1,2][1:0]"),
    Case(
        "i27-citations-in-a-row",
        R + "<co>A</co: 0:[0]> and <co>B b</co: call_1:[3]>." + RE,
        content="A[0:0] and B b[call_1:3].",
    ),
    Case(
        "i27-citation-multiline-span",
        R + "<co>line one\nline two</co: 0:[0]>" + RE,
        content="line one\nline two[0:0]",
    ),
    Case(
        "i27-citation-after-plan",
        T + "Answer from the results." + TE + R + "<co>22 C</co: 0:[0]>" + RE,
        reasoning="Answer from the results.",
        content="22 C[0:0]",
    ),
    Case("i27-citation-without-response-frame", "It is <co>sunny</co: 0:[1]>.", content="It is sunny[0:1]."),
    Case(
        "i27-citation-then-action",
        R + "<co>Rain</co: 0:[0]> today." + RE + W,
        content="Rain[0:0] today.",
        calls=[WC],
    ),
    # A citation in the plan (a grounded reflection) stays as written there.
    Case(
        "i27-citation-in-plan",
        T + "It <co>rains</co: 0:[0]>." + TE + R + "Take an umbrella." + RE,
        reasoning="It <co>rains</co: 0:[0]>.",
        content="Take an umbrella.",
    ),
    # Cut by the token limit: the span as written.
    Case("i27-citation-cut-in-tag", R + "It is <co>sunny</co: 0:[", truncated=True, content="It is sunny"),
    Case("i27-citation-cut-in-span", R + "It is <co>sun", truncated=True, content="It is sun"),
    # Anything else stays text, byte for byte.
    Case("i27-citation-unclosed", R + "a <co>b" + RE, content="a <co>b"),
    Case("i27-citation-bare-close", R + "a <co>b</co> c" + RE, content="a <co>b</co> c"),
    Case("i27-citation-bad-sources", R + "a <co>b</co: 0:1> c" + RE, content="a <co>b</co: 0:1> c"),
    Case("i27-citation-spaced-sources", R + "<co>b</co: 0:[1, 2]>" + RE, content="<co>b</co: 0:[1, 2]>"),
    Case("i27-citation-empty-span", R + "<co></co: 0:[1]>" + RE, content="<co></co: 0:[1]>"),
    Case("i27-citation-nested-open", R + "<co>a <co>b</co: 0:[1]>" + RE, content="<co>a b[0:1]"),
    Case("i27-citation-unclosed-at-eos", "a <co>b", content="a <co>b"),
]
CASES += CITATIONS

CASES += close_tag_in_argument_cases(
    (T, TE),
    A + '[{"tool_name": "set_port", "parameters": {"blob": "why ' + T + " and " + TE + ' here"}}]' + E,
    ("set_port", {"blob": "why " + T + " and " + TE + " here"}),
    A,
)

# A closing marker cut by the token limit is structure too, and so is the opening of a citation
# the limit cut: its span is shown without it.
CUT_E = "(?:" + "|".join(re.escape(E[:k]) for k in range(1, len(E))) + r")\Z"
FUZZ = Fuzz(
    markers=(E, RE),
    structure=(
        re.escape(A),
        re.escape(E),
        CUT_E,
        re.escape(R),
        re.escape(RE),
        r"\[",
        r"\]",
        ",",
        re.escape("<co>"),
    ),
    wrap=(A + "[", "]" + E),
)
