"""MiniMax XML: ``<minimax:tool_call><invoke name="N"><parameter name="K">V</parameter></invoke></minimax:tool_call>``."""

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "minimax"


def invoke(name: str, **params: str) -> str:
    body = "".join(f'<parameter name="{k}">{v}</parameter>\n' for k, v in params.items())
    return f'<invoke name="{name}">\n{body}</invoke>\n'


def block(*invokes: str) -> str:
    return "<minimax:tool_call>\n" + "".join(invokes) + "</minimax:tool_call>"


W = block(invoke("get_weather", city="Paris", days="3", metric="true"))
WC = ("get_weather", {"city": "Paris", "days": 3, "metric": True})

CASES = [
    Case("single", W, calls=[WC], ids=["call00000"]),
    # The generation prompt opens <think>: the reply reasons, closes it, then calls.
    Case(
        "prefilled-think-closed",
        "\nThe user wants weather.\n</think>\n\n" + W,
        in_reasoning=True,
        reasoning="\nThe user wants weather.\n",
        content="\n\n",
        calls=[WC],
    ),
    Case(
        "prefilled-think-never-closed",
        "I will call the tool.\n" + W,
        in_reasoning=True,
        reasoning="I will call the tool.\n",
        calls=[WC],
    ),
    Case("think-opened-by-reply", "<think>plan</think>\n" + W, reasoning="plan", content="\n", calls=[WC]),
    Case(
        "never-closed-truncated",
        "I will call.\n" + W,
        in_reasoning=True,
        truncated=True,
        reasoning="I will call.\n" + W,
    ),
    Case(
        "parallel-in-one-block",
        block(invoke("get_weather", city="Paris"), invoke("get_time")),
        calls=[("get_weather", {"city": "Paris"}), ("get_time", {})],
        ids=["call00000", "call00001"],
    ),
    Case("two-blocks", W + "\n" + block(invoke("get_time")), content="\n", calls=[WC, ("get_time", {})]),
    Case("text-before", "Checking now.\n" + W, content="Checking now.\n", calls=[WC]),
    Case(
        "string-props",
        block(invoke("set_port", port="8080", zip="02139", flag="true", blob='{"a": 1}')),
        calls=[("set_port", {"port": "8080", "zip": "02139", "flag": "true", "blob": '{"a": 1}'})],
    ),
    Case(
        "typed",
        block(
            invoke(
                "search",
                query="x",
                limit="10",
                filters='{"year": 2020}',
                tags='["a", "b"]',
                score="null",
                mode="5",
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
        "marker-in-value",
        block(invoke("set_port", blob='see </minimax:tool_call> and <invoke name="x">')),
        calls=[("set_port", {"blob": 'see </minimax:tool_call> and <invoke name="x">'})],
    ),
    Case(
        "unicode",
        block(invoke("get_weather", city="Zürich 東京")),
        calls=[("get_weather", {"city": "Zürich 東京"})],
    ),
    Case(
        "missing-close-at-eos",
        '<minimax:tool_call>\n<invoke name="get_time">\n</invoke>\n',
        calls=[("get_time", {})],
    ),
    Case(
        "missing-close-truncated",
        '<minimax:tool_call>\n<invoke name="get_time">\n</invoke>\n',
        truncated=True,
        incomplete=["get_time"],
    ),
    Case(
        "cut-second-block",
        W + '<minimax:tool_call>\n<invoke name="search">\n<parameter name="query">ab',
        truncated=True,
        calls=[WC],
        incomplete=["search"],
    ),
    # Rejected shapes: each stays text, byte for byte.
    Case(
        "qwen-shape-inside",
        "<minimax:tool_call>\n<function=get_time>\n</function>\n</minimax:tool_call>",
        content="<minimax:tool_call>\n<function=get_time>\n</function>\n</minimax:tool_call>",
    ),
    Case(
        "unquoted-name",
        "<minimax:tool_call>\n<invoke name=get_time>\n</invoke>\n</minimax:tool_call>",
        content="<minimax:tool_call>\n<invoke name=get_time>\n</invoke>\n</minimax:tool_call>",
    ),
    Case(
        "no-invoke-close",
        '<minimax:tool_call>\n<invoke name="get_time">\n</minimax:tool_call> ok',
        content='<minimax:tool_call>\n<invoke name="get_time">\n</minimax:tool_call> ok',
    ),
    Case(
        "duplicate-parameter",
        '<minimax:tool_call><invoke name="search"><parameter name="q">a</parameter>'
        '<parameter name="q">b</parameter></invoke></minimax:tool_call>',
        content='<minimax:tool_call><invoke name="search"><parameter name="q">a</parameter>'
        '<parameter name="q">b</parameter></invoke></minimax:tool_call>',
    ),
    Case(
        "text-between-invokes",
        '<minimax:tool_call><invoke name="get_time"></invoke> and <invoke name="get_time"></invoke>'
        "</minimax:tool_call>",
        content='<minimax:tool_call><invoke name="get_time"></invoke> and <invoke name="get_time"></invoke>'
        "</minimax:tool_call>",
    ),
    Case(
        "empty-block",
        "<minimax:tool_call>\n</minimax:tool_call>",
        content="<minimax:tool_call>\n</minimax:tool_call>",
    ),
    Case(
        "hermes-shape",
        '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>',
        content='<tool_call>{"name": "get_time", "arguments": {}}</tool_call>',
    ),
    Case("orphan-close", "hmm</think>Hi", reasoning="hmm", content="Hi"),
    Case("plain-text", "Hello! How can I help?", content="Hello! How can I help?"),
    # A value holding the parameter's closing tag (an agent writing a parser or a template, vLLM
    # #38803): a close not followed by the next parameter or the invoke's end is the value's text.
    Case(
        "value-holds-parameter-close",
        block(invoke("set_port", blob='end = "</parameter>"\nok', port="8080")),
        calls=[("set_port", {"blob": 'end = "</parameter>"\nok', "port": "8080"})],
    ),
    Case(
        "value-holds-parameter-close-last",
        block(invoke("set_port", blob="a</parameter> b </parameter>c")),
        calls=[("set_port", {"blob": "a</parameter> b </parameter>c"})],
    ),
    Case(
        "parameter-close-never-followed",
        '<minimax:tool_call>\n<invoke name="set_port">\n<parameter name="blob">a</parameter> b</invoke>\n'
        "</minimax:tool_call>",
        content='<minimax:tool_call>\n<invoke name="set_port">\n<parameter name="blob">a</parameter> b</invoke>\n'
        "</minimax:tool_call>",
    ),
]

CASES += close_tag_in_argument_cases(
    ("<think>", "</think>"),
    block(invoke("set_port", blob="why <think> and </think> here")),
    ("set_port", {"blob": "why <think> and </think> here"}),
    "<minimax:tool_call>",
)

FUZZ = Fuzz(
    markers=("</minimax:tool_call>", '<invoke name="', "</invoke>", '<parameter name="', "</parameter>"),
    forbidden=("</parameter>",),
)
