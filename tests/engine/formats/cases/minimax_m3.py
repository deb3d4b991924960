"""MiniMax-M3: ``]<]minimax[>[<tool_call>`` ``]<]minimax[>[<invoke name="N">`` then each parameter an
element named after the argument, ``]<]minimax[>[<K>V]<]minimax[>[</K>`` (nested elements: an
object, ``<item>`` children: an array, by the schema), ``]<]minimax[>[</invoke>``
``]<]minimax[>[</tool_call>``; reasoning ``<mm:think>...</mm:think>``. No published template: the
tiny model's template is a stand-in (``STAND_IN``) written from what the servers document."""

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases
from tests.engine.formats.harness import text_case as text

FAMILY = "minimax-m3"
NS = "]<]minimax[>["
OPEN, CLOSE = NS + "<tool_call>", NS + "</tool_call>"


def el(key: str, inner: str) -> str:
    return f"{NS}<{key}>{inner}{NS}</{key}>"


def invoke(name: str, *params: str, sep: str = "\n") -> str:
    return f'{NS}<invoke name="{name}">{sep}' + "".join(p + sep for p in params) + f"{NS}</invoke>"


def block(*invokes: str) -> str:
    return OPEN + "\n" + "".join(i + "\n" for i in invokes) + CLOSE


DEEP = [
    {
        "type": "function",
        "function": {
            "name": "order",
            "description": "place an order",
            "parameters": {
                "type": "object",
                "properties": {
                    "user_id": {"type": "integer"},
                    "items": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {"sku": {"type": "string"}, "qty": {"type": "integer"}},
                            "required": ["sku"],
                        },
                    },
                    "ship": {
                        "type": "object",
                        "properties": {"city": {"type": "string"}, "zip": {"type": "string"}},
                    },
                    "codes": {"anyOf": [{"type": "array", "items": {"type": "integer"}}, {"type": "null"}]},
                    "labels": {"type": ["array", "null"], "items": {"type": "string"}},
                    "note": {"type": ["string", "null"]},
                    "meta": {"type": "object", "additionalProperties": {"type": "integer"}},
                },
                "required": ["user_id"],
            },
        },
    }
]

W = block(invoke("get_weather", el("city", "Paris"), el("days", "3"), el("metric", "true")))
WC = ("get_weather", {"city": "Paris", "days": 3, "metric": True})
T = block(invoke("get_time"))
TC = ("get_time", {})


CASES = [
    Case("single", W, calls=[WC], ids=["call00000"]),
    # What the model writes (seen in logs): no newline inside the invoke, nested elements inline.
    Case(
        "compact",
        OPEN + "\n" + invoke("get_weather", el("city", "Paris"), el("days", "3"), sep="") + "\n" + CLOSE,
        calls=[("get_weather", {"city": "Paris", "days": 3})],
    ),
    Case("no-newlines-at-all", OPEN + invoke("get_time", sep="") + CLOSE, calls=[TC]),
    # Reasoning: the generation prompt may open <mm:think>; a reply may open it itself; a reply
    # that does not reason may start with a bare </mm:think>.
    Case(
        "prefilled-think-closed",
        "The user wants weather.\n</mm:think>\n" + W,
        in_reasoning=True,
        reasoning="The user wants weather.\n",
        content="\n",
        calls=[WC],
    ),
    Case(
        "prefilled-think-never-closed",
        "I will call the tool.\n" + W,
        in_reasoning=True,
        reasoning="I will call the tool.\n",
        calls=[WC],
    ),
    Case(
        "think-opened-by-reply", "<mm:think>plan</mm:think>\n" + W, reasoning="plan", content="\n", calls=[WC]
    ),
    Case("bare-closer-first", "</mm:think>" + W, calls=[WC]),
    Case("bare-closer-first-no-orphan", "</mm:think>" + W, calls=[WC], orphan_close=False),
    Case("bare-closer-then-text", "</mm:think>Hello.", content="Hello.", orphan_close=False),
    Case(
        "never-closed-truncated",
        "I will call.\n" + W,
        in_reasoning=True,
        truncated=True,
        reasoning="I will call.\n" + W,
    ),
    Case("orphan-close", "hmm</mm:think>Hi", reasoning="hmm", content="Hi"),
    # The closing tag repeated right after itself (before an answer or a call; in multi-turn
    # chats, as the template writes a bare </mm:think> before each past answer): the repeats are
    # framing, dropped. Anything between two closing tags keeps the second one text.
    Case("repeated-closer-first", "</mm:think></mm:think>" + W, calls=[WC]),
    Case("repeated-closer-first-no-orphan", "</mm:think></mm:think>" + W, calls=[WC], orphan_close=False),
    Case(
        "repeated-closer-then-text",
        "</mm:think></mm:think></mm:think>Hello.",
        content="Hello.",
        orphan_close=False,
    ),
    Case(
        "repeated-closer-after-reasoning",
        "plan</mm:think></mm:think>\nHi",
        in_reasoning=True,
        reasoning="plan",
        content="\nHi",
    ),
    Case(
        "repeated-closer-opened-block",
        "<mm:think>plan</mm:think></mm:think>Hi",
        reasoning="plan",
        content="Hi",
    ),
    Case("repeated-closer-orphan", "plan</mm:think></mm:think>Hi", reasoning="plan", content="Hi"),
    # after a space too: a closing tag after the block closed is markup (dropped), never content
    Case("closer-after-space-dropped", "</mm:think> </mm:think>Hi", content=" Hi", orphan_close=False),
    Case("plain-think-tag-is-text", "<think>x</think>Hi", content="<think>x</think>Hi", orphan_close=False),
    # Several calls.
    Case(
        "parallel-in-one-block",
        block(invoke("get_weather", el("city", "Paris")), invoke("get_time")),
        calls=[("get_weather", {"city": "Paris"}), TC],
        ids=["call00000", "call00001"],
    ),
    Case("two-blocks", W + "\n" + T, content="\n", calls=[WC, TC]),
    Case("text-before", "Checking now.\n" + W, content="Checking now.\n", calls=[WC]),
    Case("text-after", W + "\nDone.", content="\nDone.", calls=[WC]),
    # Values: typed by the schema, strings exactly as written.
    Case(
        "string-props",
        block(
            invoke(
                "set_port", el("port", "8080"), el("zip", " 02139 "), el("flag", "true"), el("blob", "null")
            )
        ),
        calls=[("set_port", {"port": "8080", "zip": " 02139 ", "flag": "true", "blob": "null"})],
    ),
    Case(
        "typed-nested",
        block(
            invoke(
                "search",
                el("query", "x"),
                el("limit", " 10 "),
                el("filters", el("year", "2020")),
                el("tags", el("item", "a") + el("item", "b")),
                el("score", "null"),
                el("mode", "5"),
            )
        ),
        calls=[
            (
                "search",
                {
                    "query": "x",
                    "limit": 10,
                    "filters": {"year": 2020},
                    "tags": ["a", "b"],
                    "score": None,
                    "mode": 5,
                },
            )
        ],
    ),
    Case(
        "nested-layout-whitespace",
        block(
            invoke(
                "search",
                el("query", "x"),
                el("filters", "\n  " + el("year", "1999") + "\n"),
                el("tags", "\n" + el("item", " a ") + "\n" + el("item", "b") + "\n"),
            )
        ),
        calls=[("search", {"query": "x", "filters": {"year": 1999}, "tags": [" a ", "b"]})],
    ),
    Case(
        "empty-containers",
        block(invoke("search", el("query", ""), el("filters", ""), el("tags", "\n"))),
        calls=[("search", {"query": "", "filters": {}, "tags": []})],
    ),
    Case(
        "object-as-json-text",
        block(invoke("search", el("query", "x"), el("filters", '{"year": 2021}'), el("tags", '["a"]'))),
        calls=[("search", {"query": "x", "filters": {"year": 2021}, "tags": ["a"]})],
    ),
    Case(
        "repeated-name-is-a-list",
        block(invoke("search", el("query", "x"), el("tags", "a"), el("tags", "b"), el("tags", "c"))),
        calls=[("search", {"query": "x", "tags": ["a", "b", "c"]})],
    ),
    Case(
        "untypable-kept",
        block(invoke("search", el("query", "x"), el("limit", "many"))),
        calls=[("search", {"query": "x", "limit": "many"})],
    ),
    Case(
        "undeclared-tool-values-stay-text",
        block(
            invoke("fz_any", el("n", "3"), el("opts", el("a", "1") + el("b", "")), el("xs", el("item", "1")))
        ),
        calls=[("fz_any", {"n": "3", "opts": {"a": "1", "b": ""}, "xs": ["1"]})],
    ),
    Case(
        "markup-in-string",
        block(invoke("set_port", el("blob", '<b>x</b> </tool_call> <invoke name="y"> </mm:x>'))),
        calls=[("set_port", {"blob": '<b>x</b> </tool_call> <invoke name="y"> </mm:x>'})],
    ),
    Case(
        "elements-in-a-string-are-its-text",
        block(invoke("set_port", el("blob", el("a", "1") + " " + el("b", "2")))),
        calls=[("set_port", {"blob": el("a", "1") + " " + el("b", "2")})],
    ),
    Case(
        "multiline-value",
        block(invoke("set_port", el("blob", "line1\n\nline3\n"))),
        calls=[("set_port", {"blob": "line1\n\nline3\n"})],
    ),
    Case(
        "unicode",
        block(invoke("get_weather", el("city", "Zürich 東京"))),
        calls=[("get_weather", {"city": "Zürich 東京"})],
    ),
    # Deeper shapes (a tool of their own): arrays of objects, nullable arrays, free maps.
    Case(
        "array-of-objects",
        block(
            invoke(
                "order",
                el("user_id", "42"),
                el(
                    "items",
                    "\n"
                    + el("item", el("sku", "b-1") + el("qty", "2"))
                    + "\n"
                    + el("item", el("sku", "007"))
                    + "\n",
                ),
                el("ship", el("city", "Oslo") + el("zip", "0150")),
            )
        ),
        tools=DEEP,
        calls=[
            (
                "order",
                {
                    "user_id": 42,
                    "items": [{"sku": "b-1", "qty": 2}, {"sku": "007"}],
                    "ship": {"city": "Oslo", "zip": "0150"},
                },
            )
        ],
    ),
    Case(
        "nullable-array",
        block(
            invoke(
                "order",
                el("user_id", "1"),
                el("codes", el("item", "7") + el("item", "8")),
                el("note", "null"),
            )
        ),
        tools=DEEP,
        calls=[("order", {"user_id": 1, "codes": [7, 8], "note": None})],
    ),
    Case(
        "nullable-array-empty-and-null",
        block(invoke("order", el("user_id", "1"), el("codes", ""), el("labels", "null"))),
        tools=DEEP,
        calls=[("order", {"user_id": 1, "codes": [], "labels": None})],
    ),
    Case(
        "free-map",
        block(invoke("order", el("user_id", "1"), el("meta", el("a", "1") + el("b", "x")))),
        tools=DEEP,
        calls=[("order", {"user_id": 1, "meta": {"a": 1, "b": "x"}})],
    ),
    Case(
        "repeated-scalar-is-a-list",
        block(invoke("order", el("user_id", "1"), el("user_id", "2"))),
        tools=DEEP,
        calls=[("order", {"user_id": [1, 2]})],
    ),
    text(
        "array-of-objects-child-not-item",
        block(invoke("order", el("user_id", "1"), el("items", el("sku", "b-1")))),
        tools=DEEP,
    ),
    # A parameter without its opening tag (deployed MiniMax-M3 checkpoints write an invoke's first
    # parameter so): the namespace token, the value, then the closing tag, which names it.
    Case(
        "headless-first-parameter",
        OPEN + "\n" + invoke("get_weather", f"{NS}Paris{NS}</city>", el("days", "3"), sep="") + CLOSE,
        calls=[("get_weather", {"city": "Paris", "days": 3})],
    ),
    Case(
        "headless-parameter-lines",
        block(invoke("get_weather", el("city", "Paris"), f"{NS}3{NS}</days>")),
        calls=[("get_weather", {"city": "Paris", "days": 3})],
    ),
    Case(
        "headless-in-nested-element",
        block(invoke("search", el("query", "x"), el("filters", f"{NS}2020{NS}</year>"))),
        calls=[("search", {"query": "x", "filters": {"year": 2020}})],
    ),
    Case(
        "headless-multiline-value",
        block(invoke("set_port", f"{NS}line1\n<b>x</b>\n{NS}</blob>")),
        calls=[("set_port", {"blob": "line1\n<b>x</b>\n"})],
    ),
    text("headless-not-closed", block(invoke("get_weather", f"{NS}Paris{NS}<days>3{NS}</days>"))),
    text("headless-closed-by-invoke", block(invoke("get_weather", f"{NS}Paris"))),
    text("headless-cut-by-close", OPEN + "\n" + f'{NS}<invoke name="get_weather">{NS}Paris' + CLOSE),
    # The invoke's tag without its "<" (MiniMax-M3 drops it now and then).
    Case(
        "invoke-without-lt",
        OPEN + f'\n{NS}invoke name="get_weather">\n' + el("city", "Paris") + f"\n{NS}</invoke>\n" + CLOSE,
        calls=[("get_weather", {"city": "Paris"})],
    ),
    Case(
        "invoke-without-lt-parallel",
        OPEN + "\n" + invoke("get_time") + f'\n{NS}invoke name="get_time">\n{NS}</invoke>\n' + CLOSE,
        calls=[TC, TC],
    ),
    text("invoke-without-lt-or-namespace", OPEN + '\ninvoke name="get_time">\n' + f"{NS}</invoke>\n" + CLOSE),
    # Missing close and the token limit.
    Case("missing-close-at-eos", OPEN + "\n" + invoke("get_time") + "\n", calls=[TC]),
    Case(
        "missing-close-truncated",
        OPEN + "\n" + invoke("get_time") + "\n",
        truncated=True,
        incomplete=["get_time"],
    ),
    Case(
        "cut-in-value",
        OPEN + "\n" + f'{NS}<invoke name="search">\n' + NS + "<query>ab",
        truncated=True,
        incomplete=["search"],
    ),
    Case(
        "cut-second-block",
        W + OPEN + "\n" + f'{NS}<invoke name="search">\n{NS}<query>ab',
        truncated=True,
        calls=[WC],
        incomplete=["search"],
    ),
    Case(
        "cut-at-opener", "Let me check. " + OPEN, truncated=True, content="Let me check. ", incomplete=[None]
    ),
    # Rejected shapes: each stays text, byte for byte.
    text("unclosed-at-eos", OPEN + "\n" + f'{NS}<invoke name="search">\n' + el("query", "a") + "\nok"),
    text("empty-block", OPEN + "\n" + CLOSE),
    text("text-between-invokes", block(invoke("get_time") + " and " + invoke("get_time"))),
    text("text-beside-children", block(invoke("search", el("filters", "y " + el("year", "1"))))),
    text("wrong-close-name", block(invoke("get_weather", f"{NS}<city>Paris{NS}</town>"))),
    text("unclosed-element", block(invoke("get_weather", f"{NS}<city>Paris"))),
    text("array-child-not-item", block(invoke("search", el("tags", el("tag", "a"))))),
    text("elements-in-an-integer", block(invoke("search", el("limit", el("item", "1"))))),
    text("element-without-namespace", block(invoke("get_weather", "<city>Paris</city>"))),
    text("unquoted-name", OPEN + f"\n{NS}<invoke name=get_time>\n{NS}</invoke>\n" + CLOSE),
    text("single-quoted-name", OPEN + f"\n{NS}<invoke name='get_time'>\n{NS}</invoke>\n" + CLOSE),
    text("invoke-without-namespace", OPEN + '\n<invoke name="get_time">\n</invoke>\n' + CLOSE),
    text("m2-parameter-shape", block(invoke("get_weather", '<parameter name="city">Paris</parameter>'))),
    text("m2-wire", '<minimax:tool_call>\n<invoke name="get_time">\n</invoke>\n</minimax:tool_call>'),
    text("hermes-shape", '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>'),
    text("namespace-alone", f"The token {NS} and {NS}<b>bold{NS}</b> here."),
    text("plain-text", "Hello! How can I help?"),
]

CASES += close_tag_in_argument_cases(
    ("<mm:think>", "</mm:think>"),
    block(invoke("set_port", el("blob", "why <mm:think> and </mm:think> here"))),
    ("set_port", {"blob": "why <mm:think> and </mm:think> here"}),
    OPEN,
)

FUZZ = Fuzz(
    markers=(CLOSE, f'{NS}<invoke name="', f"{NS}</invoke>", NS),
    forbidden=(NS,),
)

SETTING_WORDS = ("MiniMax-M3",)

# Written from the servers' descriptions (llama.cpp's common/parsers/minimax-m3.cpp and vLLM's
# minimax_m3 parsers; no published template was found): turns ``]~b]ROLE\n...[e~[\n`` after
# ``]~!b[``, tools and instructions in the system turn, tool results in ``<response>``, earlier
# assistant turns behind a bare ``</mm:think>``, arguments written by a recursive ``to_xml`` (a
# mapping: member elements; a list: ``<item>`` elements; a string as it is; anything else as JSON).
STAND_IN = (
    "{%- set ns = ']<]minimax[>[' -%}"
    "{%- macro to_xml(v) -%}"
    "{%- if v is mapping -%}{%- for k, x in v.items() -%}{{ ns }}<{{ k }}>{{ to_xml(x) }}{{ ns }}</{{ k }}>"
    "{%- endfor -%}"
    "{%- elif v is string -%}{{ v }}"
    "{%- elif v is iterable -%}{%- for x in v -%}{{ ns }}<item>{{ to_xml(x) }}{{ ns }}</item>{%- endfor -%}"
    "{%- else -%}{{ v | tojson }}{%- endif -%}"
    "{%- endmacro -%}"
    "]~!b[]~b]system\n{% for m in messages if m.role == 'system' %}{{ m.content }}\n{% endfor %}"
    "{% if tools %}# Tools\nYou may call one or more tools. Their schemas are within <tools></tools>:\n"
    "<tools>\n{% for t in tools %}{{ t | tojson }}\n{% endfor %}</tools>\n"
    "To call tools, write each parameter as an element named after it (a list as <item> elements):\n"
    '{{ ns }}<tool_call>\n{{ ns }}<invoke name="NAME">\n{{ ns }}<KEY>VALUE{{ ns }}</KEY>\n...\n'
    "{{ ns }}</invoke>\n{{ ns }}</tool_call>\n{% endif %}[e~[\n"
    "{% for m in messages %}"
    "{% if m.role == 'user' %}]~b]user\n{{ m.content }}[e~[\n"
    "{% elif m.role == 'tool' %}]~b]tool\n<response>{{ m.content }}</response>[e~[\n"
    "{% elif m.role == 'assistant' %}]~b]ai\n</mm:think>{{ m.content or '' }}"
    "{% if m.tool_calls %}{{ ns }}<tool_call>\n{% for c in m.tool_calls %}"
    '{{ ns }}<invoke name="{{ c.function.name }}">\n'
    "{% for k, v in c.function.arguments.items() %}{{ ns }}<{{ k }}>{{ to_xml(v) }}{{ ns }}</{{ k }}>\n"
    "{% endfor %}{{ ns }}</invoke>\n{% endfor %}{{ ns }}</tool_call>{% endif %}[e~[\n"
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}]~b]ai\n{% endif %}"
)

TINY_MODELS = [
    (
        "stand-in:minimax-m3",
        ["]~!b[", "]~b]", "[e~["],
        [NS, "<tool_call>", "</tool_call>", "<mm:think>", "</mm:think>"],
        "]~!b[",
        "[e~[",
    )
]

# One call whose value holds the family's markers (test_added_families' cost cases)
COST_VALUE = 'a </tool_call> <invoke name="x"> ]<]minimax[> </mm:think> b'
