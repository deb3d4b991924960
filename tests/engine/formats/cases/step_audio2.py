"""Step-Audio 2: ``<tool_call>function\\nNAME\\n{JSON arguments}</tool_call>``, back to back.

Hermes' tags around a typed body (the ``function`` line, the name line, the JSON object). No
published Jinja template: the tiny model's template is a stand-in (``STAND_IN``) written from
what StepFun's servers document."""

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases
from tests.engine.formats.harness import text_case as text

FAMILY = "step-audio2"

OPEN, CLOSE = "<tool_call>", "</tool_call>"


def call(name: str, args: str) -> str:
    """One call as the model writes it (``args``: the JSON text)."""
    return f"{OPEN}function\n{name}\n{args}{CLOSE}"


W = call("get_weather", '{"city": "Paris", "days": 3, "metric": true}')
WC = ("get_weather", {"city": "Paris", "days": 3, "metric": True})
T = call("get_time", "{}")
TC = ("get_time", {})

CASES = [
    # -- calls as the model writes them
    Case("single", W, calls=[WC], ids=["call00000"]),
    Case("back-to-back", W + T, calls=[WC, TC], ids=["call00000", "call00001"]),
    Case("newline-between", W + "\n" + T, content="\n", calls=[WC, TC]),
    Case(
        "three-calls",
        W + T + call("search", '{"query": "news"}'),
        calls=[WC, TC, ("search", {"query": "news"})],
    ),
    Case("no-arguments", T, calls=[TC]),
    Case("text-before", "好的，我查一下。" + W, content="好的，我查一下。", calls=[WC]),
    Case("text-around", "Checking.\n" + W + "\nDone.", content="Checking.\n\nDone.", calls=[WC]),
    Case(
        "whitespace-around-json",
        f'{OPEN}function\nget_weather\n  {{"city": "Oslo"}}\n{CLOSE}',
        calls=[("get_weather", {"city": "Oslo"})],
    ),
    Case(
        "pretty-json",
        call("search", '{\n  "query": "x",\n  "filters": {\n    "year": 2020\n  }\n}'),
        calls=[("search", {"query": "x", "filters": {"year": 2020}})],
    ),
    Case("trailing-comma-repaired", call("search", '{"query": "x",}'), calls=[("search", {"query": "x"})]),
    Case(
        "typed-by-schema",
        call("search", '{"query": "q", "limit": "7", "score": "null", "tags": ["a"]}'),
        calls=[("search", {"query": "q", "limit": 7, "score": None, "tags": ["a"]})],
    ),
    Case(
        "string-props-keep-text",
        call("set_port", '{"port": "8080", "zip": "02139", "flag": "true"}'),
        calls=[("set_port", {"port": "8080", "zip": "02139", "flag": "true"})],
    ),
    Case(
        "untypable-kept",
        call("search", '{"query": "q", "limit": "many"}'),
        calls=[("search", {"query": "q", "limit": "many"})],
    ),
    Case(
        "markers-in-json-string",
        call("set_port", '{"blob": "a </tool_call> b <tool_call>function\\nx\\n{} c"}'),
        calls=[("set_port", {"blob": "a </tool_call> b <tool_call>function\nx\n{} c"})],
    ),
    Case(
        "braces-in-json-string",
        call("set_port", '{"blob": "} { \\" ]"}'),
        calls=[("set_port", {"blob": '} { " ]'})],
    ),
    Case(
        "unicode",
        call("get_weather", '{"city": "上海 Zürich"}'),
        calls=[("get_weather", {"city": "上海 Zürich"})],
    ),
    Case("unknown-tool-read", call("other_tool", '{"n": 5}'), calls=[("other_tool", {"n": 5})]),
    Case("dotted-name", call("web.search", '{"q": "x"}'), calls=[("web.search", {"q": "x"})]),
    # A malformed region ends before the next opener: the call after it is read.
    Case(
        "malformed-then-call",
        OPEN + "oops " + T,
        content=OPEN + "oops ",
        calls=[TC],
    ),
    Case("doubled-opener", OPEN + T, content=OPEN, calls=[TC]),
    Case(
        "closed-bad-region-then-call",
        OPEN + "function\nget_time\n{oops}" + CLOSE + T,
        content=OPEN + "function\nget_time\n{oops}" + CLOSE,
        calls=[TC],
    ),
    # -- reasoning (Step-Audio 2 mini Think)
    Case(
        "think-then-call",
        "<think>need weather</think>\n" + W,
        reasoning="need weather",
        content="\n",
        calls=[WC],
    ),
    Case(
        "prefilled-think-closed",
        "The user wants the weather.\n</think>\n\n" + W,
        in_reasoning=True,
        reasoning="The user wants the weather.\n",
        content="\n\n",
        calls=[WC],
    ),
    Case(
        "call-in-closed-reasoning",
        "<think>maybe " + W + " or not</think>Hello",
        reasoning="maybe " + W + " or not",
        content="Hello",
    ),
    Case("orphan-close", "hmm</think>Hi", reasoning="hmm", content="Hi"),
    # -- cut by the token limit
    Case(
        "cut-in-json",
        OPEN + 'function\nsearch\n{"query": "ab',
        truncated=True,
        incomplete=["search"],
    ),
    Case("cut-in-name", OPEN + "function\nsea", truncated=True, incomplete=[None]),
    Case("cut-in-kind", OPEN + "func", truncated=True, incomplete=[None]),
    Case("cut-before-close", W[:-3], truncated=True, incomplete=["get_weather"]),
    Case("missing-close-truncated", W[: -len(CLOSE)], truncated=True, incomplete=["get_weather"]),
    Case(
        "cut-second-call",
        W + "\n" + OPEN + 'function\nsearch\n{"query": "ab',
        truncated=True,
        content="\n",
        calls=[WC],
        incomplete=["search"],
    ),
    # -- not this wire: the text, byte for byte
    text("missing-close-at-eos", W[: -len(CLOSE)]),
    text("unclosed-mid-reply", T[: -len(CLOSE)] + " and more words"),
    text("hermes-shape", OPEN + '\n{"name": "get_time", "arguments": {}}\n' + CLOSE),
    text("hermes-compact", OPEN + '{"name": "get_time", "arguments": {}}' + CLOSE),
    text("glm-shape", OPEN + "get_time\n<arg_key>a</arg_key>\n<arg_value>1</arg_value>\n" + CLOSE),
    text("glm-no-arguments", OPEN + "get_time" + CLOSE),
    text("qwen-xml-shape", OPEN + "\n<function=get_time>\n</function>\n" + CLOSE),
    text("newline-before-kind", OPEN + "\nfunction\nget_time\n{}" + CLOSE),
    text("space-before-kind", OPEN + " function\nget_time\n{}" + CLOSE),
    text("other-kind", OPEN + "tool\nget_time\n{}" + CLOSE),
    text("capitalised-kind", OPEN + "Function\nget_time\n{}" + CLOSE),
    text("kind-and-name-on-one-line", OPEN + "function get_time\n{}" + CLOSE),
    text("space-after-name", OPEN + "function\nget_time \n{}" + CLOSE),
    text("empty-name", OPEN + "function\n\n{}" + CLOSE),
    text("name-not-a-name", OPEN + "function\n123\n{}" + CLOSE),
    text("no-arguments-line", OPEN + "function\nget_time\n" + CLOSE),
    text("no-newline-after-name", OPEN + "function\nget_time{}" + CLOSE),
    text("arguments-list", OPEN + "function\nget_time\n[]" + CLOSE),
    text("arguments-json-string", OPEN + 'function\nget_weather\n"{\\"city\\": \\"Rome\\"}"' + CLOSE),
    text("arguments-not-json", OPEN + "function\nget_weather\n{city: Rome}" + CLOSE),
    text("text-after-json", OPEN + "function\nget_time\n{} ok" + CLOSE),
    text("two-objects", OPEN + 'function\nget_time\n{} {"a": 1}' + CLOSE),
    text("fenced-json", OPEN + "function\nget_time\n```json\n{}\n```" + CLOSE),
    text("wrong-nesting", OPEN + 'function\nget_time\n{"a": 1' + CLOSE + "}"),
    text("deepseek-sep", OPEN + "function<｜tool▁sep｜>get_time\n{}" + CLOSE),
    text("empty-region", OPEN + CLOSE),
    text("close-without-open", "function\nget_time\n{}" + CLOSE),
    text("partial-marker-text", "a <tool_ and <tool_call are text"),
    text("plain-text", "Hello! How can I help?"),
]

CASES += close_tag_in_argument_cases(
    ("<think>", "</think>"),
    call("set_port", '{"blob": "why <think> and </think> here"}'),
    ("set_port", {"blob": "why <think> and </think> here"}),
    OPEN,
)

FUZZ = Fuzz(markers=(CLOSE, OPEN + "function\n"))

# -- settings, tiny models (tests/engine/formats/test_added_families.py)

SETTING_WORDS = ("Step-Audio 2", "Step-Audio-2-mini", "StepFun")

# No published Jinja template was found: StepFun's servers build the prompt in code. The stand-in
# keeps what they document: <|BOT|>ROLE\n ... <|EOT|> turns (the user's role is "human"), the
# tools as a JSON list in a tool_json_schemas turn after the system turn, a past call written
# after the assistant's content as <tool_call>function\nNAME\nJSON</tool_call>, a tool result as a
# function_output turn that names the tool it answers.
STAND_IN = (
    "{%- set sys = messages[0].content if messages and messages[0].role == 'system' else none %}"
    "{%- if tools %}<|BOT|>system\n{{ sys or '' }}<|EOT|><|BOT|>tool_json_schemas\n{{ tools | tojson }}<|EOT|>"
    "{%- elif sys is not none %}<|BOT|>system\n{{ sys }}<|EOT|>{% endif %}"
    "{%- set ns = namespace(fname='tool') %}"
    "{%- for m in messages %}{% if m.role == 'user' %}<|BOT|>human\n{{ m.content }}<|EOT|>"
    "{%- elif m.role == 'system' %}{% if not loop.first %}<|BOT|>system\n{{ m.content }}<|EOT|>{% endif %}"
    "{%- elif m.role == 'assistant' %}<|BOT|>assistant\n{{ m.content or '' }}"
    "{%- for c in m.tool_calls or [] %}{% set a = c.function.arguments %}"
    "<tool_call>function\n{{ c.function.name }}\n{{ a if a is string else (a | tojson) }}</tool_call>"
    "{%- endfor %}<|EOT|>"
    "{%- elif m.role == 'tool' %}{% set ns.fname = 'tool' %}{% for p in messages if p.role == 'assistant' %}"
    "{%- for c in p.tool_calls or [] %}{% if c.id == m.tool_call_id %}{% set ns.fname = c.function.name %}"
    "{%- endif %}{% endfor %}{% endfor %}<|BOT|>function_output\n{{ ns.fname }}\n"
    "{{ m.content }}<|EOT|>{% endif %}{% endfor %}"
    "{%- if add_generation_prompt %}<|BOT|>assistant\n{% endif %}"
)

TINY_MODELS = [
    (
        "stand-in:step-audio2",
        ["<|BOT|>", "<|EOT|>"],
        [OPEN, CLOSE, "<think>", "</think>"],
        None,
        "<|EOT|>",
    )
]

# One call whose value holds the family's markers (test_added_families' cost cases)
COST_VALUE = f"a {CLOSE} {OPEN}function\nx\n{{}} </think> b"
