"""openPangu: ``<|tool_call_start|>[{"name": ..., "arguments": {...}}, ...]<|tool_call_end|>``
(Nemotron v2's / Jamba's JSON list between LFM2's tokens), ``parameters`` read for
``arguments``, ``<think>`` reasoning. No published template: the tiny model's template is a
stand-in (``STAND_IN``) written from what the servers document."""

import re

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases
from tests.engine.formats.harness import text_case as text

FAMILY = "openpangu"

OPEN, CLOSE = "<|tool_call_start|>", "<|tool_call_end|>"
W = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'
S = '{"name": "search", "arguments": {"query": "x", "limit": "10"}}'
ONE = OPEN + "[" + W + "]" + CLOSE
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})


CASES = [
    # -- calls as the model writes them
    Case("single", ONE, calls=[PW], ids=["call00000"]),
    Case("text-around", "Let me look.\n" + ONE + "\nDone.", content="Let me look.\n\nDone.", calls=[PW]),
    Case(
        "parallel-in-one-list",
        OPEN + "[" + W + ",\n " + S + "]" + CLOSE,
        calls=[PW, PS],
        ids=["call00000", "call00001"],
    ),
    Case("two-lists", ONE + "\n" + OPEN + "[" + S + "]" + CLOSE, content="\n", calls=[PW, PS]),
    Case("spaced-list", OPEN + "\n[\n  " + W + "\n]\n" + CLOSE, calls=[PW]),
    Case(
        "parameters-key",
        OPEN + '[{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}]' + CLOSE,
        calls=[PW],
    ),
    Case(
        "mixed-keys-in-one-list",
        OPEN + '[{"name": "get_time", "parameters": {}}, ' + S + "]" + CLOSE,
        calls=[("get_time", {}), PS],
    ),
    Case(
        "arguments-as-json-string",
        OPEN + '[{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}]' + CLOSE,
        calls=[("get_weather", {"city": "Rome"})],
    ),
    Case("no-arguments", OPEN + '[{"name": "get_time", "arguments": {}}]' + CLOSE, calls=[("get_time", {})]),
    Case(
        "unknown-tool-read",
        OPEN + '[{"name": "other_tool", "arguments": {"n": 5}}]' + CLOSE,
        calls=[("other_tool", {"n": 5})],
    ),
    Case(
        "typed-by-schema",
        OPEN + '[{"name": "search", "arguments": {"query": "q", "limit": "7", "score": "null"}}]' + CLOSE,
        calls=[("search", {"query": "q", "limit": 7, "score": None})],
    ),
    Case(
        "string-props-keep-text",
        OPEN + '[{"name": "set_port", "arguments": {"port": "8080", "zip": "02139"}}]' + CLOSE,
        calls=[("set_port", {"port": "8080", "zip": "02139"})],
    ),
    Case(
        "markers-inside-json-string",
        OPEN
        + '[{"name": "set_port", "arguments": {"blob": "a <|tool_call_end|> b <|tool_call_start|>[ ]"}}]'
        + CLOSE,
        calls=[("set_port", {"blob": "a <|tool_call_end|> b <|tool_call_start|>[ ]"})],
    ),
    Case(
        "unicode",
        OPEN + '[{"name": "get_weather", "arguments": {"city": "Zürich 東京"}}]' + CLOSE,
        calls=[("get_weather", {"city": "Zürich 東京"})],
    ),
    Case("close-implied-at-eos", OPEN + "[" + W + "]\n", calls=[PW]),
    # -- reasoning (openPangu 2.0 thinks in <think> first)
    Case("think-block", "<think>plan</think>" + ONE, reasoning="plan", calls=[PW]),
    Case(
        "prefilled-think",
        "The user wants weather.\n</think>\n" + ONE,
        in_reasoning=True,
        reasoning="The user wants weather.\n",
        content="\n",
        calls=[PW],
    ),
    Case(
        "call-in-closed-reasoning",
        "<think>maybe " + ONE + " or not</think>Hello",
        reasoning="maybe " + ONE + " or not",
        content="Hello",
    ),
    # -- cut by the token limit: complete calls kept, the cut one incomplete
    Case(
        "cut-in-second-element",
        OPEN + "[" + W + ', {"name": "search", "argu',
        truncated=True,
        calls=[PW],
        incomplete=["search"],
    ),
    Case("cut-in-close-token", OPEN + "[" + W + "]<|tool_call", truncated=True, calls=[PW]),
    Case("cut-in-first-element", OPEN + '[{"name": "get_wea', truncated=True, incomplete=[None]),
    Case("missing-close-truncated", OPEN + "[" + W + "]", truncated=True, calls=[PW]),
    # -- not this family's shapes: the text, byte for byte
    text("both-keys", OPEN + '[{"name": "get_time", "arguments": {}, "parameters": {}}]' + CLOSE),
    text("extra-key", OPEN + '[{"name": "get_time", "arguments": {}, "id": "x"}]' + CLOSE),
    text("missing-arguments", OPEN + '[{"name": "get_time"}]' + CLOSE),
    text("object-not-list", OPEN + W + CLOSE),
    text("empty-list", OPEN + "[]" + CLOSE),
    text("lfm2-python-list", OPEN + '[get_weather(city="Paris")]' + CLOSE),
    text("text-after-list", OPEN + "[" + W + "] more" + CLOSE, stable_prefix=False),
    text("one-bad-element", OPEN + "[" + W + ', {"x": 1}]' + CLOSE, stable_prefix=False),
    text("unclosed-at-eos", OPEN + '[{"name": "get_time", "argu'),
    text("wrong-nesting", OPEN + '[{"name": "get_time", "arguments": {]}' + CLOSE),
    text("unused-token-spelling", "[unused11][" + W + "][unused12]"),
    text("hermes-tag", "<tool_call>" + W + "</tool_call>"),
    text("partial-marker-text", "a <|tool_call and <|tool_ are text"),
    text("plain-text", "Hello! How can I help?"),
]

CASES += close_tag_in_argument_cases(
    ("<think>", "</think>"),
    OPEN + '[{"name": "set_port", "arguments": {"blob": "why <think> and </think> here"}}]' + CLOSE,
    ("set_port", {"blob": "why <think> and </think> here"}),
    OPEN,
)

FUZZ = Fuzz(
    markers=(CLOSE,),
    structure=(
        re.escape(OPEN),
        r"\[",
        r"\]",
        ",",
        re.escape(CLOSE),
        "(?:" + "|".join(re.escape(CLOSE[:k]) for k in range(1, len(CLOSE))) + r")\Z",
    ),
    wrap=(OPEN + "[", "]" + CLOSE),
)

# -- settings, tiny models (tests/engine/formats/test_added_families.py)

SETTING_WORDS = ("openPangu", "Huawei", "Pangu")

# No published template was found. The stand-in keeps what openPangu's servers document: its turn
# tokens ([unused9] opens a turn, [unused10] ends one), the tools and the call spelling in the system
# text, a past call as the JSON list between the two call tokens after the assistant's content, a
# tool result as a tool turn.
STAND_IN = (
    "[unused9]系统：{% for m in messages if m.role == 'system' %}{{ m.content }}\n{% endfor %}"
    "{%- if tools %}# Tools\nYou may call one or more tools. Their schemas:\n{% for t in tools %}"
    "{{ t | tojson }}\n{% endfor %}Call them as a JSON list between the call tokens: "
    '<|tool_call_start|>[{"name": NAME, "arguments": {...}}]<|tool_call_end|>\n{% endif %}[unused10]'
    "{%- for m in messages %}{% if m.role == 'user' %}[unused9]用户：{{ m.content }}[unused10]"
    "{%- elif m.role == 'tool' %}[unused9]工具：{{ m.content }}[unused10]"
    "{%- elif m.role == 'assistant' %}[unused9]助手：{{ m.content or '' }}"
    "{%- if m.tool_calls %}<|tool_call_start|>[{% for c in m.tool_calls %}"
    '{% if not loop.first %}, {% endif %}{"name": "{{ c.function.name }}", "arguments": '
    "{{ c.function.arguments if c.function.arguments is string else (c.function.arguments | tojson) }}}"
    "{% endfor %}]<|tool_call_end|>{% endif %}[unused10]"
    "{%- endif %}{% endfor %}{% if add_generation_prompt %}[unused9]助手：{% endif %}"
)

TINY_MODELS = [
    (
        "stand-in:openpangu",
        ["[unused9]", "[unused10]"],
        ["<|tool_call_start|>", "<|tool_call_end|>", "<think>", "</think>"],
        None,
        "[unused10]",
    )
]

# One call whose value holds the family's markers (test_added_families' cost cases).
COST_VALUE = "a <|tool_call_end|> ] <|tool_call_start|>[ </think> b"
