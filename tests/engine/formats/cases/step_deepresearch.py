"""Step DeepResearch: ``<steptml:toolcall><steptml:invoke name="N"><steptml:parameter name="K">V
</steptml:parameter></steptml:invoke></steptml:toolcall>`` (MiniMax's invoke wire, Step-3's
``steptml:`` tags). No published template: the tiny model's template is a stand-in (``STAND_IN``)
written from what the servers document."""

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases
from tests.engine.formats.harness import text_case as text

FAMILY = "step-deepresearch"

OPEN, CLOSE = "<steptml:toolcall>", "</steptml:toolcall>"


def invoke(name: str, **params: str) -> str:
    body = "".join(f'<steptml:parameter name="{k}">{v}</steptml:parameter>\n' for k, v in params.items())
    return f'<steptml:invoke name="{name}">\n{body}</steptml:invoke>\n'


def block(*invokes: str) -> str:
    return OPEN + "\n" + "".join(invokes) + CLOSE


W = block(invoke("get_weather", city="Paris", days="3", metric="true"))
WC = ("get_weather", {"city": "Paris", "days": 3, "metric": True})

CASES = [
    # -- calls as the model writes them
    Case("single", W, calls=[WC], ids=["call00000"]),
    Case(
        "parallel-in-one-block",
        block(invoke("get_weather", city="Paris"), invoke("get_time")),
        calls=[("get_weather", {"city": "Paris"}), ("get_time", {})],
        ids=["call00000", "call00001"],
    ),
    Case("two-blocks", W + "\n" + block(invoke("get_time")), content="\n", calls=[WC, ("get_time", {})]),
    Case(
        "compact",
        OPEN + '<steptml:invoke name="get_weather"><steptml:parameter name="city">Paris</steptml:parameter>'
        "</steptml:invoke>" + CLOSE,
        calls=[("get_weather", {"city": "Paris"})],
    ),
    Case("text-before", "Checking now.\n" + W, content="Checking now.\n", calls=[WC]),
    Case("text-around", "Checking.\n" + W + "\nDone.", content="Checking.\n\nDone.", calls=[WC]),
    Case("unknown-tool-read", block(invoke("other_tool", n="5")), calls=[("other_tool", {"n": "5"})]),
    Case(
        "string-props-keep-text",
        block(invoke("set_port", port="8080", zip="02139", flag="true")),
        calls=[("set_port", {"port": "8080", "zip": "02139", "flag": "true"})],
    ),
    Case(
        "typed-by-schema",
        block(
            invoke("search", query="x", limit="10", filters='{"year": 2020}', tags='["a", "b"]', score="null")
        ),
        calls=[
            (
                "search",
                {"query": "x", "limit": 10, "filters": {"year": 2020}, "tags": ["a", "b"], "score": None},
            )
        ],
    ),
    Case(
        "untypable-kept",
        block(invoke("search", query="x", limit="many")),
        calls=[("search", {"query": "x", "limit": "many"})],
    ),
    Case(
        "multiline-value",
        block(invoke("set_port", blob="line1\n\nline3")),
        calls=[("set_port", {"blob": "line1\n\nline3"})],
    ),
    Case(
        "markers-in-value",
        block(invoke("set_port", blob='see </steptml:toolcall> and <steptml:invoke name="x">')),
        calls=[("set_port", {"blob": 'see </steptml:toolcall> and <steptml:invoke name="x">'})],
    ),
    Case(
        "unicode",
        block(invoke("get_weather", city="Zürich 東京")),
        calls=[("get_weather", {"city": "Zürich 東京"})],
    ),
    Case("missing-close-at-eos", OPEN + "\n" + invoke("get_time"), calls=[("get_time", {})]),
    # -- reasoning
    Case("think-then-call", "<think>plan</think>\n" + W, reasoning="plan", content="\n", calls=[WC]),
    Case(
        "prefilled-think-closed",
        "The user wants weather.\n</think>\n\n" + W,
        in_reasoning=True,
        reasoning="The user wants weather.\n",
        content="\n\n",
        calls=[WC],
    ),
    Case(
        "call-in-closed-reasoning",
        "<think>maybe " + W + " or not</think>Hello",
        reasoning="maybe " + W + " or not",
        content="Hello",
    ),
    # -- cut by the token limit
    Case(
        "missing-close-truncated",
        OPEN + "\n" + invoke("get_time"),
        truncated=True,
        incomplete=["get_time"],
    ),
    Case(
        "cut-in-value",
        OPEN + '\n<steptml:invoke name="search">\n<steptml:parameter name="query">ab',
        truncated=True,
        incomplete=["search"],
    ),
    Case(
        "cut-second-block",
        W + OPEN + '\n<steptml:invoke name="search">\n<steptml:parameter name="query">ab',
        truncated=True,
        calls=[WC],
        incomplete=["search"],
    ),
    # -- malformed: the text, byte for byte
    text("unclosed-invoke-at-eos", OPEN + '\n<steptml:invoke name="get_time">\n'),
    text("no-invoke-close", OPEN + '\n<steptml:invoke name="get_time">\n' + CLOSE + " ok"),
    text("unquoted-name", OPEN + "\n<steptml:invoke name=get_time>\n</steptml:invoke>\n" + CLOSE),
    text("minimax-tags-inside", OPEN + '\n<invoke name="get_time">\n</invoke>\n' + CLOSE),
    text(
        "minimax-wrapper",
        '<minimax:tool_call>\n<steptml:invoke name="get_time">\n</steptml:invoke>\n</minimax:tool_call>',
    ),
    text(
        "duplicate-parameter",
        OPEN + '<steptml:invoke name="search"><steptml:parameter name="q">a</steptml:parameter>'
        '<steptml:parameter name="q">b</steptml:parameter></steptml:invoke>' + CLOSE,
    ),
    text(
        "text-between-invokes",
        OPEN + '<steptml:invoke name="get_time"></steptml:invoke> and '
        '<steptml:invoke name="get_time"></steptml:invoke>' + CLOSE,
    ),
    text(
        "wrong-nesting",
        OPEN + '<steptml:invoke name="search"><steptml:parameter name="q">a</steptml:invoke>'
        "</steptml:parameter>" + CLOSE,
    ),
    text("empty-block", OPEN + "\n" + CLOSE),
    text(
        "step3-section",
        '<｜tool_calls_begin｜>\n<｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="get_time">'
        "</steptml:invoke><｜tool_call_end｜>\n<｜tool_calls_end｜>",
    ),
    text("hermes-shape", '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>'),
    text("partial-marker-text", "a <steptml:tool and <steptml are text"),
    Case("orphan-close", "hmm</think>Hi", reasoning="hmm", content="Hi"),
    text("plain-text", "Hello! How can I help?"),
    Case(
        "value-holds-parameter-close",
        block(invoke("set_port", blob="a</steptml:parameter>b")),
        calls=[("set_port", {"blob": "a</steptml:parameter>b"})],
    ),
]

CASES += close_tag_in_argument_cases(
    ("<think>", "</think>"),
    block(invoke("set_port", blob="why <think> and </think> here")),
    ("set_port", {"blob": "why <think> and </think> here"}),
    OPEN,
)

FUZZ = Fuzz(
    markers=(
        CLOSE,
        '<steptml:invoke name="',
        "</steptml:invoke>",
        '<steptml:parameter name="',
        "</steptml:parameter>",
    ),
    forbidden=("</steptml:parameter>",),
)

# -- settings, tiny models (tests/engine/formats/test_added_families.py)

SETTING_WORDS = ("Step DeepResearch", "Step-DeepResearch", "StepFun")

# No published template was found. The stand-in keeps what StepFun's servers document: Qwen-style
# turns (<|im_start|> / <|im_end|>), the tools and the call spelling in the system text, a past call
# written in the <steptml:toolcall> block after the assistant's content, a tool result as a tool turn,
# <think> reasoning.
STAND_IN = (
    "<|im_start|>system\n{% for m in messages if m.role == 'system' %}{{ m.content }}\n{% endfor %}"
    "{%- if tools %}# Tools\nYou may call one or more tools. Their schemas:\n{% for t in tools %}"
    "{{ t | tojson }}\n{% endfor %}Call them in this format:\n<steptml:toolcall>\n"
    '<steptml:invoke name="NAME">\n<steptml:parameter name="KEY">VALUE</steptml:parameter>\n'
    "</steptml:invoke>\n</steptml:toolcall>\n{% endif %}<|im_end|>\n"
    "{%- for m in messages %}{% if m.role == 'user' %}<|im_start|>user\n{{ m.content }}<|im_end|>\n"
    "{%- elif m.role == 'tool' %}<|im_start|>tool\n{{ m.content }}<|im_end|>\n"
    "{%- elif m.role == 'assistant' %}<|im_start|>assistant\n{{ m.content or '' }}"
    "{%- if m.tool_calls %}<steptml:toolcall>\n{% for c in m.tool_calls %}"
    '<steptml:invoke name="{{ c.function.name }}">\n'
    "{% for k, v in c.function.arguments.items() %}"
    '<steptml:parameter name="{{ k }}">{{ v if v is string else (v | tojson) }}</steptml:parameter>\n'
    "{% endfor %}</steptml:invoke>\n{% endfor %}</steptml:toolcall>{% endif %}<|im_end|>\n"
    "{%- endif %}{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

TINY_MODELS = [
    (
        "stand-in:step-deepresearch",
        ["<|im_start|>", "<|im_end|>"],
        ["<steptml:toolcall>", "</steptml:toolcall>", "<think>", "</think>"],
        None,
        "<|im_end|>",
    )
]

# One call whose value holds the family's markers (test_added_families' cost cases).
COST_VALUE = 'a </steptml:toolcall> </steptml:invoke> <steptml:invoke name="x"> </think> b'
