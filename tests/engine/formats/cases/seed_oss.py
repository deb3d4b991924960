"""Seed-OSS XML: ``<seed:tool_call><function=N><parameter=K>V</parameter></function></seed:tool_call>``."""

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "seed-oss"


def call(name: str, **params: str) -> str:
    body = "".join(f"<parameter={k}>{v}</parameter>\n" for k, v in params.items())
    return f"<seed:tool_call>\n<function={name}>\n{body}</function>\n</seed:tool_call>"


W = call("get_weather", city="Paris", days="3", metric="True")
WC = ("get_weather", {"city": "Paris", "days": 3, "metric": True})
TAGS = ("<seed:think>", "</seed:think>")

CASES = [
    Case("single", W, calls=[WC], ids=["call00000"]),
    Case(
        "think-then-call",
        "<seed:think>The user wants weather.</seed:think>\n" + W,
        reasoning="The user wants weather.",
        content="\n",
        calls=[WC],
    ),
    Case(
        "think-with-budget-notes",
        "<seed:think>a<seed:cot_budget_reflect>I have used 10 tokens.</seed:cot_budget_reflect>b</seed:think>ok",
        reasoning="a<seed:cot_budget_reflect>I have used 10 tokens.</seed:cot_budget_reflect>b",
        content="ok",
    ),
    Case(
        "prefilled-think-closed", "plan\n</seed:think>" + W, in_reasoning=True, reasoning="plan\n", calls=[WC]
    ),
    Case(
        "call-in-closed-reasoning",
        "<seed:think>maybe " + W + " no</seed:think>Hello",
        reasoning="maybe " + W + " no",
        content="Hello",
    ),
    Case(
        "parallel",
        W + "\n" + call("get_time"),
        content="\n",
        calls=[WC, ("get_time", {})],
        ids=["call00000", "call00001"],
    ),
    Case("text-around", "Checking.\n" + W + "\nDone.", content="Checking.\n\nDone.", calls=[WC]),
    Case(
        "string-props",
        call("set_port", port="8080", zip="02139", flag="true", blob='{"a": 1}'),
        calls=[("set_port", {"port": "8080", "zip": "02139", "flag": "true", "blob": '{"a": 1}'})],
    ),
    Case(
        "typed",
        call(
            "search",
            query="x",
            limit="10",
            filters="{'year': 2020}",
            tags='["a", "b"]',
            score="None",
            mode="5",
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
        call("search", query="x", limit="many"),
        calls=[("search", {"query": "x", "limit": "many"})],
    ),
    Case(
        "multiline-value",
        call("set_port", blob="that can span\nmultiple lines"),
        calls=[("set_port", {"blob": "that can span\nmultiple lines"})],
    ),
    Case(
        "marker-in-value",
        call("set_port", blob="see </seed:tool_call> and <seed:tool_call>"),
        calls=[("set_port", {"blob": "see </seed:tool_call> and <seed:tool_call>"})],
    ),
    Case(
        "missing-close-at-eos",
        "<seed:tool_call>\n<function=get_time>\n</function>\n",
        calls=[("get_time", {})],
    ),
    Case(
        "cut-pair",
        W + "\n<seed:tool_call>\n<function=search>\n<parameter=query>ab",
        truncated=True,
        content="\n",
        calls=[WC],
        incomplete=["search"],
    ),
    # Rejected shapes.
    Case(
        "qwen-wrapper",
        "<tool_call>\n<function=get_time>\n</function>\n</tool_call>",
        content="<tool_call>\n<function=get_time>\n</function>\n</tool_call>",
    ),
    Case(
        "json-inside",
        '<seed:tool_call>{"name": "get_time", "arguments": {}}</seed:tool_call>',
        content='<seed:tool_call>{"name": "get_time", "arguments": {}}</seed:tool_call>',
    ),
    Case(
        "no-function-close",
        "<seed:tool_call>\n<function=get_time>\n</seed:tool_call>x",
        content="<seed:tool_call>\n<function=get_time>\n</seed:tool_call>x",
    ),
    Case(
        "two-functions-in-one-block",
        "<seed:tool_call><function=get_time></function><function=get_time></function></seed:tool_call>",
        content="<seed:tool_call><function=get_time></function><function=get_time></function></seed:tool_call>",
    ),
    Case("orphan-close", "hmm</seed:think>Hi", reasoning="hmm", content="Hi"),
    Case("plain-text", "Hello! How can I help?", content="Hello! How can I help?"),
    # A value holding the parameter's closing tag: only a close followed by the next parameter or
    # the function's end closes it.
    Case(
        "value-holds-parameter-close",
        call("set_port", blob="x</parameter>y", port="8080"),
        calls=[("set_port", {"blob": "x</parameter>y", "port": "8080"})],
    ),
]

CASES += close_tag_in_argument_cases(
    TAGS,
    call("set_port", blob="why <seed:think> and </seed:think> here"),
    ("set_port", {"blob": "why <seed:think> and </seed:think> here"}),
    "<seed:tool_call>",
)

FUZZ = Fuzz(
    markers=("</seed:tool_call>", "<function=", "</function>", "<parameter=", "</parameter>"),
    forbidden=("</parameter>",),
)
