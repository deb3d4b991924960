"""dots invoke XML: ``<dots_function_call><invoke name="N"><parameter name="K">V</parameter></invoke>
</dots_function_call>``.

No published template was found in reach, so the tiny model's template is a stand-in
(``STAND_IN``) written from what vLLM's dots parser documents."""

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases
from tests.engine.formats.harness import text_case as text

FAMILY = "dots"
OPEN, CLOSE = "<dots_function_call>", "</dots_function_call>"


def invoke(name: str, **params: str) -> str:
    body = "".join(f'<parameter name="{k}">{v}</parameter>\n' for k, v in params.items())
    return f'<invoke name="{name}">\n{body}</invoke>\n'


def block(*invokes: str) -> str:
    return OPEN + "\n" + "".join(invokes) + CLOSE


W = block(invoke("get_weather", city="Lyon", days="2", metric="false"))
WC = ("get_weather", {"city": "Lyon", "days": 2, "metric": False})
T = block(invoke("get_time"))


CASES = [
    Case("single", W, calls=[WC], ids=["call00000"]),
    Case(
        "compact-no-newlines",
        f'{OPEN}<invoke name="get_weather"><parameter name="city">Oslo</parameter></invoke>{CLOSE}',
        calls=[("get_weather", {"city": "Oslo"})],
    ),
    Case(
        "reasoning-then-call",
        "<think>need the weather</think>\n" + W,
        reasoning="need the weather",
        content="\n",
        calls=[WC],
    ),
    Case(
        "prefilled-think-closed",
        "weather for Lyon\n</think>\n" + W,
        in_reasoning=True,
        reasoning="weather for Lyon\n",
        content="\n",
        calls=[WC],
    ),
    Case(
        "parallel-in-one-block",
        block(invoke("get_weather", city="Rome"), invoke("get_time"), invoke("search", query="news")),
        calls=[("get_weather", {"city": "Rome"}), ("get_time", {}), ("search", {"query": "news"})],
        ids=["call00000", "call00001", "call00002"],
    ),
    Case("two-blocks", W + "\n\n" + T, content="\n\n", calls=[WC, ("get_time", {})]),
    Case("text-before", "Let me look that up.\n" + W, content="Let me look that up.\n", calls=[WC]),
    Case("text-after", T + "\nDone.", content="\nDone.", calls=[("get_time", {})]),
    Case(
        "string-props-stay-strings",
        block(invoke("set_port", port="443", zip="00501", flag="false", blob="[1, 2]")),
        calls=[("set_port", {"port": "443", "zip": "00501", "flag": "false", "blob": "[1, 2]"})],
    ),
    Case(
        "typed-values",
        block(
            invoke("search", query="dots", limit="7", filters='{"lang": "en"}', tags='["x"]', score="null")
        ),
        calls=[
            (
                "search",
                {"query": "dots", "limit": 7, "filters": {"lang": "en"}, "tags": ["x"], "score": None},
            )
        ],
    ),
    Case(
        "untypable-kept",
        block(invoke("search", query="q", limit="a few")),
        calls=[("search", {"query": "q", "limit": "a few"})],
    ),
    Case(
        "multiline-value",
        block(invoke("set_port", blob="first\n\n  third")),
        calls=[("set_port", {"blob": "first\n\n  third"})],
    ),
    Case(
        "markers-in-value",
        block(invoke("set_port", blob=f'a {CLOSE} b {OPEN} <invoke name="z"> c')),
        calls=[("set_port", {"blob": f'a {CLOSE} b {OPEN} <invoke name="z"> c'})],
    ),
    Case(
        "unicode",
        block(invoke("get_weather", city="Kraków 서울")),
        calls=[("get_weather", {"city": "Kraków 서울"})],
    ),
    Case("missing-close-at-eos", f'{OPEN}\n<invoke name="get_time">\n</invoke>\n', calls=[("get_time", {})]),
    Case(
        "missing-close-truncated",
        f'{OPEN}\n<invoke name="get_time">\n</invoke>\n',
        truncated=True,
        incomplete=["get_time"],
    ),
    Case(
        "truncated-in-value",
        W + f'\n{OPEN}\n<invoke name="search">\n<parameter name="query">half',
        truncated=True,
        content="\n",
        calls=[WC],
        incomplete=["search"],
    ),
    # Shapes that are not this wire: each stays text, byte for byte.
    text("unclosed-invoke", f'{OPEN}\n<invoke name="get_time">\n{CLOSE} after'),
    text("unclosed-block-mid-reply", f'{OPEN}\n<invoke name="get_time">\n</invoke>\nmore words'),
    text("single-quoted-name", f"{OPEN}\n<invoke name='get_time'>\n</invoke>\n{CLOSE}"),
    text("bare-name", f"{OPEN}\n<invoke name=get_time>\n</invoke>\n{CLOSE}"),
    text(
        "single-quoted-key",
        f"{OPEN}\n<invoke name=\"search\">\n<parameter name='query'>x</parameter>\n</invoke>\n{CLOSE}",
    ),
    text("json-fallback-body-not-read", f'{OPEN}\n{{"name": "get_time", "arguments": {{}}}}\n{CLOSE}'),
    text("qwen-xml-body", f"{OPEN}\n<function=get_time>\n</function>\n{CLOSE}"),
    text("empty-block", f"{OPEN}\n{CLOSE}"),
    text(
        "text-between-invokes",
        f'{OPEN}<invoke name="get_time"></invoke> then <invoke name="get_time"></invoke>{CLOSE}',
    ),
    text(
        "duplicate-key",
        f'{OPEN}<invoke name="search"><parameter name="q">1</parameter>'
        f'<parameter name="q">2</parameter></invoke>{CLOSE}',
    ),
    text(
        "parameter-outside-invoke",
        f'{OPEN}<parameter name="q">1</parameter><invoke name="get_time"></invoke>{CLOSE}',
    ),
    text(
        "wrong-nesting",
        f'{OPEN}<invoke name="search"><parameter name="q">1</invoke></parameter>{CLOSE}',
    ),
    text("minimax-wrapper", '<minimax:tool_call>\n<invoke name="get_time">\n</invoke>\n</minimax:tool_call>'),
    text("rwkv-wrapper", '<tool_call>\n<invoke name="get_time">\n</invoke>\n</tool_call>'),
    Case("orphan-think-close", "plan</think>Hello", reasoning="plan", content="Hello"),
    text("plain-text", "dots here. What can I do for you?"),
    Case(
        "value-holds-parameter-close",
        block(invoke("set_port", blob="<p>a</parameter></p>")),
        calls=[("set_port", {"blob": "<p>a</parameter></p>"})],
    ),
]

CASES += close_tag_in_argument_cases(
    ("<think>", "</think>"),
    block(invoke("set_port", blob="a <think> b </think> c")),
    ("set_port", {"blob": "a <think> b </think> c"}),
    OPEN,
)

FUZZ = Fuzz(
    markers=(CLOSE, '<invoke name="', "</invoke>", '<parameter name="', "</parameter>"),
    forbidden=("</parameter>",),
)

SETTING_WORDS = ("dots", "dots3-note")

# No published template was found in reach (the servers' recipes name dots-studio/dots3-note-prev
# and pair the dots tool parser with a Qwen3-style reasoning parser). The stand-in uses ChatML
# turns, tools in the system turn, calls in the wire vLLM's dots parser documents, tool results
# in <tool_response>, and a generation prompt that leaves <think> to the model.
STAND_IN = (
    "{%- if tools or messages[0].role == 'system' %}<|im_start|>system\n"
    "{%- if messages[0].role == 'system' %}{{ messages[0].content }}\n{% endif %}"
    "{%- if tools %}You may call these tools:\n{% for t in tools %}{{ t | tojson }}\n{% endfor %}"
    'To call tools, write:\n<dots_function_call>\n<invoke name="NAME">\n'
    '<parameter name="KEY">VALUE</parameter>\n</invoke>\n</dots_function_call>\n{% endif %}'
    "<|im_end|>\n{% endif %}"
    "{%- for m in messages %}{% if m.role == 'user' %}<|im_start|>user\n{{ m.content }}<|im_end|>\n"
    "{%- elif m.role == 'tool' %}<|im_start|>user\n<tool_response>{{ m.content }}</tool_response><|im_end|>\n"
    "{%- elif m.role == 'assistant' %}<|im_start|>assistant\n{{ m.content or '' }}"
    "{%- if m.tool_calls %}<dots_function_call>\n{% for c in m.tool_calls %}"
    '<invoke name="{{ c.function.name }}">\n'
    '{% for k, v in c.function.arguments.items() %}<parameter name="{{ k }}">'
    "{{ v if v is string else (v | tojson) }}</parameter>\n{% endfor %}</invoke>\n"
    "{% endfor %}</dots_function_call>{% endif %}<|im_end|>\n{% endif %}{% endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

TINY_MODELS = [
    (
        "stand-in:dots",
        ["<|im_start|>", "<|im_end|>"],
        [OPEN, CLOSE, "<think>", "</think>"],
        None,
        "<|im_end|>",
    )
]

# One call whose value holds the family's markers (test_added_families' cost cases)
COST_VALUE = f'a {CLOSE} {OPEN} <invoke name="x"> </parameter x </invoke> </think> b'
