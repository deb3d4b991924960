"""Qwen XML: ``<tool_call><function=NAME><parameter=P>value</parameter></function></tool_call>``,
and Hermes' tagged single calls (Qwen3.5's and 3.6's strays into the wire of Qwen3)."""

import json

from tests.engine.formats.harness import TOOLS, Case, Fuzz, _fn, close_tag_in_argument_cases

FAMILY = "qwen-xml"


def call(name: str, **params: str) -> str:
    body = "".join(f"<parameter={k}>\n{v}\n</parameter>\n" for k, v in params.items())
    return f"<tool_call>\n<function={name}>\n{body}</function>\n</tool_call>"


W = call("get_weather", city="Paris", days="3", metric="True")

CASES = [
    Case(
        "single", W, calls=[("get_weather", {"city": "Paris", "days": 3, "metric": True})], ids=["call00000"]
    ),
    Case(
        "prefilled-think-closed",
        "\nLet me look.\n</think>\n\n" + W,
        in_reasoning=True,
        reasoning="\nLet me look.\n",
        content="\n\n",
        calls=[("get_weather", {"city": "Paris", "days": 3, "metric": True})],
    ),
    Case(
        "prefilled-think-never-closed",
        "I will call the tool.\n\n" + W,
        in_reasoning=True,
        reasoning="I will call the tool.\n\n",
        calls=[("get_weather", {"city": "Paris", "days": 3, "metric": True})],
    ),
    Case(
        "never-closed-truncated",
        "I will call the tool.\n\n" + W,
        in_reasoning=True,
        truncated=True,
        reasoning="I will call the tool.\n\n" + W,
    ),
    Case(
        "call-in-closed-reasoning",
        "maybe " + W + " no.</think>Answer",
        in_reasoning=True,
        reasoning="maybe " + W + " no.",
        content="Answer",
    ),
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
            filters='{"year": 2020}',
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
        "python-literals",
        call("search", query="x", filters="{'year': 2021}", score="null"),
        calls=[("search", {"query": "x", "filters": {"year": 2021}, "score": None})],
    ),
    Case(
        "untypable-kept",
        call("search", query="x", limit="many"),
        calls=[("search", {"query": "x", "limit": "many"})],
    ),
    Case(
        "multiline-value",
        call("set_port", blob="line1\n\nline3"),
        calls=[("set_port", {"blob": "line1\n\nline3"})],
    ),
    Case(
        "marker-in-value",
        call("set_port", blob="see </tool_call> and <tool_call>"),
        calls=[("set_port", {"blob": "see </tool_call> and <tool_call>"})],
    ),
    Case(
        "parallel",
        W + "\n" + call("get_time"),
        content="\n",
        calls=[("get_weather", {"city": "Paris", "days": 3, "metric": True}), ("get_time", {})],
        ids=["call00000", "call00001"],
    ),
    Case(
        "text-before",
        "Checking.\n" + W,
        content="Checking.\n",
        calls=[("get_weather", {"city": "Paris", "days": 3, "metric": True})],
    ),
    Case("missing-close-at-eos", "<tool_call>\n<function=get_time>\n</function>\n", calls=[("get_time", {})]),
    Case(
        "cut-pair",
        W + "\n<tool_call>\n<function=search>\n<parameter=query>\nab",
        truncated=True,
        content="\n",
        calls=[("get_weather", {"city": "Paris", "days": 3, "metric": True})],
        incomplete=["search"],
    ),
    Case(
        "flat-json-for-user", '{"name": "search", "query": "x"}', content='{"name": "search", "query": "x"}'
    ),
    Case(
        "no-function-close",
        "<tool_call>\n<function=get_time>\n</tool_call>x",
        content="<tool_call>\n<function=get_time>\n</tool_call>x",
    ),
    Case("orphan-close", "hmm</think>Hi", reasoning="hmm", content="Hi"),
]

# The closing reasoning tag inside an argument: part of the call in every reasoning state.
CASES += close_tag_in_argument_cases(
    ("<think>", "</think>"),
    call("set_port", blob="why <think> and </think> here"),
    ("set_port", {"blob": "why <think> and </think> here"}),
    "<tool_call>",
)


def fn(name: str, *params: str) -> str:
    return f"<function={name}>\n" + "".join(params) + "</function>"


def par(key: str, value: str, close: bool = True) -> str:
    return f"<parameter={key}>\n{value}\n" + ("</parameter>\n" if close else "")


PW = ("get_weather", {"city": "Paris", "days": 3})
FW = fn("get_weather", par("city", "Paris"), par("days", "3"))

# Qwen3-Coder writes function blocks without <tool_call>, closed by a stray </tool_call>.
BARE = [
    Case("bare-block", FW + "\n</tool_call>", calls=[PW]),
    Case(
        "bare-block-text-before",
        "Let me check.\n" + FW + "</tool_call>",
        content="Let me check.\n",
        calls=[PW],
    ),
    Case("bare-parallel-run", FW + "\n" + fn("get_time") + "\n</tool_call>", calls=[PW, ("get_time", {})]),
    Case(
        "bare-after-thinking",
        "plan</think>\n\n" + FW + "\n</tool_call>",
        in_reasoning=True,
        reasoning="plan",
        content="\n\n",
        calls=[PW],
    ),
    Case("bare-cut", FW[:30], truncated=True, incomplete=["get_weather"]),
]

# Issue 27, deviation 1: Qwen3-Coder also drops the stray close. Bare blocks are read one by one
# while each is written as the template writes it and names a declared tool; the rest is text.
BLOB = ("set_port", {"blob": "a </parameter> b"})
BARE_UNCLOSED = [
    Case("i27-bare-unclosed", FW, calls=[PW]),
    Case("i27-bare-unclosed-text-around", "See " + FW + " here.", content="See  here.", calls=[PW]),
    Case("i27-bare-unclosed-run", FW + "\n" + FW + "\n", content="\n", calls=[PW, PW]),
    Case(
        "i27-bare-unclosed-literal-close-in-value",
        fn("set_port", par("blob", "a </parameter> b")),
        calls=[BLOB],
    ),
    Case(
        "i27-bare-unclosed-prefilled-reasoning",
        "I need the weather.\n\n" + FW,
        in_reasoning=True,
        reasoning="I need the weather.\n\n",
        calls=[PW],
    ),
    Case(
        "i27-bare-unclosed-after-reasoning",
        "plan</think>\n\n" + FW,
        in_reasoning=True,
        reasoning="plan",
        content="\n\n",
        calls=[PW],
    ),
    Case(
        "i27-bare-unclosed-cut",
        "Sure. " + FW[:-3],
        truncated=True,
        content="Sure. ",
        incomplete=["get_weather"],
    ),
    Case(
        "i27-bare-unclosed-then-cut",
        FW + "\n" + fn("get_time")[:12],
        truncated=True,
        content="\n",
        calls=[PW],
        incomplete=[None],
    ),
    # Anything else stays text, byte for byte.
    Case(
        "i27-bare-unclosed-undeclared",
        "See " + fn("lookup", par("q", "x")),
        content="See " + fn("lookup", par("q", "x")),
    ),
    Case("i27-bare-unclosed-no-tools", FW, content=FW, tools=[]),
    Case(
        "i27-bare-unclosed-missing-parameter-close",
        fn("get_weather", par("city", "Paris", close=False), par("days", "3")),
        content=fn("get_weather", par("city", "Paris", close=False), par("days", "3")),
    ),
    # Blocks are read while each is a call; from the first that is not, the run is text.
    Case(
        "i27-bare-unclosed-run-then-undeclared",
        FW + "\n" + fn("lookup"),
        content="\n" + fn("lookup"),
        calls=[PW],
    ),
    Case(
        "i27-bare-unclosed-run-undeclared-first", fn("lookup") + "\n" + FW, content=fn("lookup") + "\n" + FW
    ),
    Case(
        "i27-bare-unclosed-json-body",
        '<function=get_weather>{"city": "Paris"}</function>',
        content='<function=get_weather>{"city": "Paris"}</function>',
    ),
    Case(
        "i27-bare-unclosed-text-inside",
        "<function=get_time>\nnow\n</function>",
        content="<function=get_time>\nnow\n</function>",
    ),
    Case("i27-bare-unclosed-never-closed", FW[:-11] + " ok", content=FW[:-11] + " ok"),
    # Not as the template writes it: no parameter, or a value without its newlines.
    Case("i27-bare-unclosed-no-parameter", fn("get_time") + " ok", content=fn("get_time") + " ok"),
    Case(
        "i27-bare-unclosed-value-without-newlines",
        "<function=get_weather><parameter=city>Paris</parameter></function>",
        content="<function=get_weather><parameter=city>Paris</parameter></function>",
    ),
    # Followed by another element's closing tag: the block stood inside that element.
    Case("i27-bare-unclosed-inside-element", "<call>" + FW + "</call>", content="<call>" + FW + "</call>"),
    # Inside a reasoning block the model closes: reasoning, like any call there.
    Case(
        "i27-bare-unclosed-in-closed-reasoning",
        "maybe " + FW + "</think>Answer",
        in_reasoning=True,
        reasoning="maybe " + FW,
        content="Answer",
    ),
    Case("i27-bare-unclosed-before-orphan-close", FW + "</think>Hi", reasoning=FW, content="Hi"),
]

# A parameter whose </parameter> is missing ends before the next declared parameter or </function>.
MISSING_PARAM_CLOSE = [
    Case(
        "missing-close-before-next-parameter",
        "<tool_call>\n"
        + fn("get_weather", par("city", "Paris", close=False), par("days", "3"))
        + "\n</tool_call>",
        calls=[PW],
    ),
    Case(
        "missing-close-before-function-close",
        "<tool_call>\n"
        + fn("get_weather", par("city", "Paris"), par("days", "3", close=False))
        + "\n</tool_call>",
        calls=[PW],
    ),
    Case(
        "missing-close-then-text",
        "<tool_call>\n" + fn("get_time", par("x", "1", close=False)) + "\n</tool_call> ok",
        content=" ok",
        calls=[("get_time", {"x": "1"})],
    ),
    Case(
        "missing-close-in-bare-block",
        fn("get_weather", par("city", "Paris", close=False), par("days", "3")) + "</tool_call>",
        calls=[PW],
    ),
]

# A value holding </parameter> or </function> literally: what follows decides the real close.
LITERAL_CLOSE_IN_VALUE = [
    Case(
        "literal-parameter-close",
        call("set_port", blob="a </parameter> b", flag="x"),
        calls=[("set_port", {"blob": "a </parameter> b", "flag": "x"})],
    ),
    Case(
        "literal-parameter-close-then-undeclared-name",
        call("set_port", blob="x</parameter>\n<parameter=nope>y"),
        calls=[("set_port", {"blob": "x</parameter>\n<parameter=nope>y"})],
    ),
    Case(
        "literal-function-close",
        call("set_port", blob="def f(): </function> pass"),
        calls=[("set_port", {"blob": "def f(): </function> pass"})],
    ),
    Case(
        "literal-tool-call-close",
        call("set_port", blob="x </tool_call> y"),
        calls=[("set_port", {"blob": "x </tool_call> y"})],
    ),
    # A value holding </tool_call><tool_call>: the close ends the call only before the next call.
    Case(
        "i27-literal-close-and-open-in-value",
        call("set_port", blob="a</tool_call><tool_call>b"),
        calls=[("set_port", {"blob": "a</tool_call><tool_call>b"})],
    ),
    Case(
        "i27-literal-close-and-open-in-value-spaced",
        call("set_port", blob="a </tool_call>\n<tool_call> b") + "\n" + call("get_time"),
        content="\n",
        calls=[("set_port", {"blob": "a </tool_call>\n<tool_call> b"}), ("get_time", {})],
    ),
    Case(
        "i27-value-missing-close-then-next-call",
        "<tool_call>\n<function=set_port>\n<parameter=blob>\nx</tool_call>\n" + call("get_time"),
        content="<tool_call>\n<function=set_port>\n<parameter=blob>\nx</tool_call>\n",
        calls=[("get_time", {})],
    ),
]

CUT_OPENER = [
    Case(
        "cut-right-after-opener",
        "Let me check.\n<tool_call>",
        truncated=True,
        content="Let me check.\n",
        incomplete=[None],
    ),
    Case("cut-right-after-opener-newline", "<tool_call>\n", truncated=True, incomplete=[None]),
    Case("cut-in-function-name", "<tool_call>\n<function=get_wea", truncated=True, incomplete=[None]),
]


def _text(case_id: str, text: str, **kw) -> Case:
    """A reply that is no call: all of it is content, byte for byte."""
    return Case(case_id, text, content=text, **kw)


def hermes(name: str, args: str, close: bool = True) -> str:
    """Hermes' tagged single call, the wire of Qwen3 before Qwen3.5 (which strays into it)."""
    return f'<tool_call>\n{{"name": "{name}", "arguments": {args}}}\n' + ("</tool_call>" if close else "")


HJ = hermes("get_weather", '{"city": "Paris", "days": 3}')
HERMES_WIRE = ("hermes", "ernie45", "mirothinker")  # the families whose wire these calls are
HERMES_STRAYS = [
    Case(
        "hermes-json-call",
        hermes("get_time", "{}"),
        also=HERMES_WIRE,
        calls=[("get_time", {})],
        ids=["call00000"],
    ),
    Case("hermes-json-typed-call", HJ, also=HERMES_WIRE, calls=[PW]),
    Case(
        "hermes-json-after-reasoning",
        "<think>\nThe weather tool.\n</think>\n\n" + HJ,
        reasoning="\nThe weather tool.\n",
        content="\n\n",
        also=HERMES_WIRE,
        calls=[PW],
    ),
    Case(
        "hermes-json-in-prefilled-reasoning-closed",
        "\nweather\n</think>\n\n" + HJ,
        in_reasoning=True,
        reasoning="\nweather\n",
        content="\n\n",
        also=HERMES_WIRE,
        calls=[PW],
    ),
    Case(
        "hermes-json-then-xml",
        "Checking.\n" + HJ + "\n" + call("get_time"),
        content="Checking.\n\n",
        also=HERMES_WIRE,
        calls=[PW, ("get_time", {})],
        ids=["call00000", "call00001"],
    ),
    Case(
        "xml-then-hermes-json",
        call("get_time") + "\n" + HJ,
        content="\n",
        also=HERMES_WIRE,
        calls=[("get_time", {}), PW],
    ),
    Case(
        "hermes-json-arguments-as-a-string",
        hermes("get_weather", json.dumps('{"city": "Rome"}')),
        also=HERMES_WIRE,
        calls=[("get_weather", {"city": "Rome"})],
    ),
    Case(
        "hermes-json-close-implied-at-eos",
        hermes("get_time", "{}", close=False),
        also=HERMES_WIRE,
        calls=[("get_time", {})],
    ),
    Case(
        "hermes-json-close-tag-in-a-value",
        hermes("set_port", '{"blob": "a </tool_call> b"}'),
        also=HERMES_WIRE,
        calls=[("set_port", {"blob": "a </tool_call> b"})],
    ),
    Case(
        "hermes-json-doubled-braces",
        "<tool_call>\n{"
        + HJ.removeprefix("<tool_call>\n").removesuffix("\n</tool_call>")
        + "}\n</tool_call>",
        also=("hermes",),
        calls=[PW],
    ),
    Case(
        "hermes-json-cut",
        hermes("search", '{"query": "x", "lim', close=False),
        truncated=True,
        incomplete=["search"],
        also=HERMES_WIRE,
    ),
    # the JSON is Hermes' single call or nothing: a list, a fence, text after the object, an
    # object that names no tool, an unclosed call followed by text stay text
    _text("hermes-json-list-is-text", '<tool_call>\n[{"name": "get_time", "arguments": {}}]\n</tool_call>'),
    _text(
        "hermes-json-fenced-is-text",
        '<tool_call>\n```json\n{"name": "get_time", "arguments": {}}\n```\n</tool_call>',
    ),
    _text(
        "hermes-json-text-after-is-text",
        '<tool_call>\n{"name": "get_time", "arguments": {}} then\n</tool_call>',
    ),
    _text("hermes-json-no-name-is-text", '<tool_call>\n{"city": "Paris"}\n</tool_call>'),
    _text("hermes-json-unclosed-then-text", '<tool_call>\n{"name": "get_time", "arguments": {}}\nand more'),
    # the XML wire's tag fused into the JSON's first key (Qwen3.5 / 3.6, tetherto/qvac #2677):
    # read for a declared tool, the rest Hermes' call
    Case(
        "hermes-json-fused-function-key",
        '<tool_call>\n{"function=get_weather","arguments":{"city": "Paris", "days": 3}}\n</tool_call>',
        calls=[PW],
    ),
    Case(
        "hermes-json-fused-function-key-spaced",
        'Checking.\n<tool_call>\n{ "function=get_time" , "arguments": {}}\n</tool_call>\nDone.',
        content="Checking.\n\nDone.",
        calls=[("get_time", {})],
    ),
    _text(
        "hermes-json-fused-undeclared-is-text",
        '<tool_call>\n{"function=get_date","arguments":{}}\n</tool_call>',
    ),
    _text(
        "hermes-json-fused-no-arguments-is-text",
        '<tool_call>\n{"function=get_time"}\n</tool_call>',
    ),
    _text(
        "hermes-json-fused-with-value-is-text",
        '<tool_call>\n{"function=get_time": 1, "arguments": {}}\n</tool_call>',
    ),
]

# Qwen3.8 opens a call with <parameter=NAME> where <function=NAME> belongs, closing it with
# </function> (ds4 #1050): read where NAME is a declared tool and no value follows the tag.
PW3 = ("get_weather", {"city": "Paris", "days": 3, "metric": True})
P_HEAD = W.replace("<function=get_weather>", "<parameter=get_weather>")
PARAMETER_HEAD = [
    Case("parameter-head", P_HEAD, calls=[PW3]),
    Case(
        "parameter-head-after-text",
        "Let me look.\n" + P_HEAD + "\nDone.",
        content="Let me look.\n\nDone.",
        calls=[PW3],
    ),
    Case(
        "parameter-head-no-arguments",
        "<tool_call>\n<parameter=get_time>\n</function>\n</tool_call>",
        calls=[("get_time", {})],
    ),
    Case("parameter-head-then-call", P_HEAD + "\n" + W, content="\n", calls=[PW3, PW3]),
    Case("parameter-head-cut", P_HEAD[:-30], truncated=True, incomplete=[None]),
    # text: an undeclared tool, a value after the tag, outside a <tool_call>
    _text("parameter-head-outside-a-tool-call", "<parameter=get_time>\n</function>\n</tool_call>"),
    _text("parameter-head-undeclared-tool", W.replace("<function=get_weather>", "<parameter=get_date>")),
    _text(
        "parameter-head-with-a-value",
        "<tool_call>\n<parameter=get_time>\nnow\n<parameter=x>\n1\n</parameter>\n</function>\n</tool_call>",
    ),
]

# The same tag in a bare block, no <tool_call> around it (Qwen3.6 27B behind an agent, q27 #24):
# read as the bare block it stands for where NAME is a declared tool and the next tag after
# whitespace is a parameter's; blocks in a row, the two heads mixed; the rest is text.
PF = FW.replace("<function=get_weather>", "<parameter=get_weather>")
SF = fn("search", par("query", "x y"))
PS = SF.replace("<function=search>", "<parameter=search>")
BARE_PARAMETER_HEAD = [
    Case("parameter-head-bare", PF, calls=[PW]),
    Case("parameter-head-bare-text-around", "See:\n" + PF + "\nDone.", content="See:\n\nDone.", calls=[PW]),
    Case("parameter-head-bare-run", PF + "\n" + PS, content="\n", calls=[PW, ("search", {"query": "x y"})]),
    Case("parameter-head-bare-then-function", PF + "\n" + SF, calls=[PW, ("search", {"query": "x y"})]),
    Case("parameter-head-bare-stray-close", PF + "\n</tool_call>", calls=[PW]),
    Case("parameter-head-bare-cut", PF[:40], truncated=True, incomplete=["get_weather"]),
    # text: a parameter's own tag, an undeclared tool, a value after the tag, a value not between
    # newlines, the tag in prose, and cut prose that only begins such a tag
    _text("parameter-head-bare-a-parameter", par("city", "Paris")),
    _text("parameter-head-bare-undeclared", PF.replace("get_weather>", "get_date>", 1)),
    _text("parameter-head-bare-value-after-tag", PF.replace("get_weather>\n", "get_weather>\nnow\n", 1)),
    _text(
        "parameter-head-bare-value-without-newlines",
        "<parameter=search>\n<parameter=query>x</parameter>\n</function>",
    ),
    _text("parameter-head-bare-in-prose", "Write <parameter=get_weather> then the rest."),
    _text("parameter-head-bare-cut-prose", "Write <parameter=get_wea", truncated=True),
]

# Qwen3.5 and 3.6 write their only call inside their thinking and close the block right after it
# (vllm-mlx #433, LM Studio #2045): the call counts, its text reasoning too, where it ends the
# block (whitespace aside), in <tool_call>, to a declared tool, no call after the block, not cut.
PWM = ("get_weather", {"city": "Paris", "days": 3, "metric": True})
SF1 = call("search", query="x y")
CALL_ENDS_THINKING = [
    Case(
        "call-ends-prefilled-thinking",
        "Read it.\n" + W + "\n</think>",
        in_reasoning=True,
        reasoning="Read it.\n" + W + "\n",
        calls=[PWM],
    ),
    Case(
        "call-ends-opened-thinking",
        "<think>\nRead it.\n" + W + "</think>\n\nChecking.",
        reasoning="\nRead it.\n" + W,
        content="\n\nChecking.",
        calls=[PWM],
    ),
    Case(
        "calls-end-thinking",
        "plan\n" + W + "\n" + SF1 + "\n</think>",
        in_reasoning=True,
        reasoning="plan\n" + W + "\n" + SF1 + "\n",
        calls=[PWM, ("search", {"query": "x y"})],
    ),
    # a draft: thinking after the call, a call after the block, an undeclared tool, a cut reply
    Case(
        "call-then-more-thinking",
        "plan\n" + W + "\nhmm\n" + SF1 + "</think>",
        in_reasoning=True,
        reasoning="plan\n" + W + "\nhmm\n" + SF1,
        calls=[("search", {"query": "x y"})],
    ),
    Case(
        "call-in-thinking-then-call",
        "plan\n" + W + "\n</think>\n\n" + SF1,
        in_reasoning=True,
        reasoning="plan\n" + W + "\n",
        content="\n\n",
        calls=[("search", {"query": "x y"})],
    ),
    Case(
        "call-in-thinking-undeclared",
        "plan\n" + call("get_date", day="1") + "\n</think>ok",
        in_reasoning=True,
        reasoning="plan\n" + call("get_date", day="1") + "\n",
        content="ok",
    ),
    Case(
        "call-in-thinking-cut-after",
        "plan\n" + W + "\n</think>\nThe wea",
        in_reasoning=True,
        truncated=True,
        reasoning="plan\n" + W + "\n",
        content="\nThe wea",
    ),
]

CASES += BARE + BARE_UNCLOSED + MISSING_PARAM_CLOSE + LITERAL_CLOSE_IN_VALUE + CUT_OPENER + HERMES_STRAYS
CASES += PARAMETER_HEAD + BARE_PARAMETER_HEAD + CALL_ENDS_THINKING

# Qwen3.5's Hermes calls with their JSON's outer brace left out or written twice (hermes-agent
# #5315, langchain-qwq #30): mended as Hermes' reader mends them.
HJ_OPEN = HJ.replace("}}\n</tool_call>", "}\n</tool_call>")
HJ_SURPLUS = HJ.replace("}}\n</tool_call>", "}}}\n</tool_call>")
CLOSERS = [
    Case("hermes-json-outer-brace-left-out", HJ_OPEN, also=("hermes",), calls=[PW]),
    Case("hermes-json-surplus-brace", HJ_SURPLUS, also=("hermes",), calls=[PW]),
    _text("hermes-json-outer-brace-left-out-then-text", HJ_OPEN + " ok", stable_prefix=False),
]
CASES += CLOSERS

# Qwen3.6's closing tags after the function block: </function> again, a stray
# </function_invocation> (ollama #16383, QwenLM/Qwen3.8 #178). Dropped inside a <tool_call>.
WP = ("get_weather", {"city": "Paris", "days": 3, "metric": True})
STRAY_CLOSE = [
    Case("function-close-twice", W.replace("</function>", "</function>\n</function>"), calls=[WP]),
    Case("invocation-close", W.replace("</function>", "</function>\n</function_invocation>"), calls=[WP]),
    Case(
        "both-stray-closes-then-text",
        W.replace("</function>", "</function></function>\n</function_invocation>") + " Done.",
        content=" Done.",
        calls=[WP],
    ),
    # text: the function's own close replaced, a stray close before the function's
    _text("invocation-close-instead", W.replace("</function>", "</function_invocation>")),
    _text(
        "invocation-close-inside",
        W.replace("</parameter>\n</function>", "</parameter>\n</function_invocation></function>x"),
    ),
]
CASES += STRAY_CLOSE

# A parameter's </parameter> written twice or more (Qwen3.6, llama-swap #856): the repeats dropped
# where the next declared parameter or </function> follows them.
CLOSE2 = "</parameter>\n</parameter>\n"
REPEATED_CLOSE = [
    Case(
        "parameter-close-twice-before-function-close",
        call("search", query="/home/u/tests/test_ck.py").replace("</parameter>\n", CLOSE2),
        calls=[("search", {"query": "/home/u/tests/test_ck.py"})],
    ),
    Case(
        "parameter-close-twice-between-parameters",
        "<tool_call>\n"
        + fn("get_weather", par("city", "Paris").replace("</parameter>\n", CLOSE2), par("days", "3")),
        calls=[PW],
    ),
    Case(
        "parameter-close-three-times",
        W.replace("</parameter>\n</function>", "</parameter></parameter> </parameter>\n</function>"),
        calls=[PW3],
    ),
    Case(
        "parameter-close-run-in-a-value",
        call("set_port", blob="a\n</parameter>\n</parameter>\nb"),
        calls=[("set_port", {"blob": "a\n</parameter>\n</parameter>\nb"})],
    ),
    # the template's way only, in a run without <tool_call>: the repeats make it text
    _text(
        "parameter-close-twice-bare",
        fn("get_weather", par("city", "Paris").replace("</parameter>\n", CLOSE2)),
    ),
]
CASES += REPEATED_CLOSE

# Two calls in a row without the first one's </tool_call> (vLLM's Qwen3 reader takes them): the
# </function> outside every value ends the call where the next <tool_call> follows it.
OPEN_ONLY = call("get_weather", city="Paris", days="3").removesuffix("\n</tool_call>")
PR = ("get_weather", {"city": "Rome", "days": 3})
ROME = call("get_weather", city="Rome", days="3")
CLOSE_LEFT_OUT = [
    Case("call-close-left-out-before-next", OPEN_ONLY + "\n" + ROME, content="\n", calls=[PW, PR]),
    Case("call-close-left-out-no-space", OPEN_ONLY + ROME, calls=[PW, PR]),
    Case(
        "call-closes-left-out-both",
        OPEN_ONLY + "\n" + ROME.removesuffix("\n</tool_call>"),
        content="\n",
        calls=[PW, PR],
    ),
    # the last one's close is implied only at the end of the reply: followed by text it is text
    Case(
        "call-closes-left-out-both-then-text",
        OPEN_ONLY + "\n" + ROME.removesuffix("\n</tool_call>") + " Done.",
        content="\n" + ROME.removesuffix("\n</tool_call>") + " Done.",
        calls=[PW],
    ),
    Case(
        "call-close-left-out-then-cut",
        OPEN_ONLY + "\n" + ROME[:-30],
        content="\n",
        truncated=True,
        calls=[PW],
        incomplete=["get_weather"],
    ),
    Case(
        "call-close-left-out-inside-a-value",
        call("set_port", blob="a</function>\n<tool_call>b"),
        calls=[("set_port", {"blob": "a</function>\n<tool_call>b"})],
    ),
    # text between the two: the first is no call, nothing lost
    _text("call-close-left-out-text-between", OPEN_ONLY + " x " + ROME),
]
CASES += CLOSE_LEFT_OUT

# Step-3.5's tags as vLLM's step3p5 reader mends them: the function's tag without its "=", a
# declared parameter's tag with its prefix doubled or its ">" written as ":" or left out.
GREP_TOOLS = [
    *TOOLS,
    _fn("grep", {"pattern": {"type": "string"}, "-C": {"type": "integer"}, "-n": {"type": "boolean"}}),
]
GP = call("grep", pattern="foo", **{"-C": "3"})
PG = ("grep", {"pattern": "foo", "-C": 3})
STEP_TAGS = [
    Case("function-tag-without-equals", W.replace("<function=", "<function "), calls=[PW3]),
    Case("function-tag-name-glued", W.replace("<function=", "<function"), calls=[PW3]),
    Case("parameter-tag-colon", GP.replace("<parameter=-C>", "<parameter=-C:"), tools=GREP_TOOLS, calls=[PG]),
    Case(
        "parameter-tag-unclosed", GP.replace("<parameter=-C>", "<parameter=-C"), tools=GREP_TOOLS, calls=[PG]
    ),
    Case(
        "parameter-tag-first-unclosed",
        call("grep", **{"-C": "3"}, pattern="foo").replace("<parameter=-C>", "<parameter=-C:"),
        tools=GREP_TOOLS,
        calls=[("grep", {"-C": 3, "pattern": "foo"})],
    ),
    Case(
        "parameter-tag-prefix-doubled",
        call("grep", pattern="foo", **{"-n": "true"}).replace("<parameter=-n>", "<parameter=parameter=-n>"),
        tools=GREP_TOOLS,
        calls=[("grep", {"pattern": "foo", "-n": True})],
    ),
    # text: an undeclared tool, a tag with more than the name, a bare run's tags as written only
    _text("function-tag-without-equals-undeclared", W.replace("<function=get_weather", "<function launch")),
    _text(
        "function-tag-without-equals-two-words", W.replace("<function=get_weather", "<function get_weather x")
    ),
    _text(
        "parameter-tag-colon-in-bare-run",
        fn("grep", par("pattern", "foo"), par("-C", "3")).replace("<parameter=-C>", "<parameter=-C:"),
        tools=GREP_TOOLS,
    ),
]
CASES += STEP_TAGS


def element(name: str, args: str, close: str = "\n</tool_call>") -> str:
    """Qwen3.6's stray: the name in a ``<function>`` element, the arguments as a JSON object."""
    return f"<tool_call>\n<function>{name}</function>\n{args}{close}"


# Qwen3.6's <function>NAME</function> then JSON arguments (mlx-omni-server #126), to a declared
# tool, exactly one object after the element.
ELEMENT = [
    Case(
        "element-json",
        "Let me check.\n" + element("get_weather", '{"city": "Paris", "days": 3}'),
        content="Let me check.\n",
        calls=[PW],
        ids=["call00000"],
    ),
    Case(
        "element-json-no-arguments", element("get_time", "{}", close="</tool_call>"), calls=[("get_time", {})]
    ),
    Case(
        "element-json-multi-line-string",
        element("set_port", '{"blob": "line one\nline two"}'),
        calls=[("set_port", {"blob": "line one\nline two"})],
    ),
    Case(
        "element-json-then-xml",
        element("get_weather", '{"city": "Paris", "days": 3}') + "\n" + call("get_time"),
        content="\n",
        calls=[PW, ("get_time", {})],
    ),
    Case(
        "element-json-cut",
        element("search", '{"query": "x", "lim', close=""),
        truncated=True,
        incomplete=[None],
    ),
    # text: an undeclared tool, a list, text beside the object, a name padded, the close missing
    _text("element-json-undeclared", element("launch", '{"x": 1}')),
    _text("element-json-list", element("get_time", "[{}]")),
    _text("element-json-text-after", element("get_time", "{} and more")),
    _text("element-json-padded-name", element(" get_time", "{}")),
    _text("element-json-close-missing", element("get_time", "{}", close="")),
]
CASES += ELEMENT

FUZZ = Fuzz(
    markers=("<tool_call>", "</tool_call>", "<function=", "</function>", "<parameter=", "</parameter>"),
    forbidden=("</parameter>",),
)

# A parameter's close written amiss at the end of its value (Qwen3.6: sglang #27336, vLLM #55495):
# "</parameter" with up to a few characters after it and its ">" (or none), where the close is
# missing before the next declared parameter or </function>: the close, never the value's text.
AMISS_CLOSE = [
    Case(
        f"amiss-close-{tag_id}",
        "<tool_call>\n" + fn("get_weather", par("city", "Paris\n" + tag, close=False), par("days", "3")),
        calls=[PW],
    )
    for tag_id, tag in [
        ("digit", "</parameter1>"),
        ("slash", "</parameter/>"),
        ("cut-short", "</parameter"),
        ("fused-underscore", "</parameter_function>"),
        ("fused", "</parameterfunction>"),
    ]
]
FUSED = "<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter_function>\n</tool_call>"
AMISS_CLOSE += [
    Case(
        "amiss-close-typed-value-before-function-close",
        "<tool_call>\n" + fn("get_weather", par("city", "Paris"), par("days", "3</parameter/>", close=False)),
        calls=[PW],
    ),
    Case(
        "amiss-close-on-the-value-line",
        "<tool_call>\n" + fn("get_weather", par("city", "Paris</parameter1>", close=False)),
        calls=[("get_weather", {"city": "Paris"})],
    ),
    # the tag inside a value, more text after it, a real close after all: the value's text
    Case(
        "amiss-close-inside-a-value",
        call("set_port", blob="a </parameter1> b"),
        calls=[("set_port", {"blob": "a </parameter1> b"})],
    ),
    Case(
        "amiss-close-then-text-in-the-value",
        "<tool_call>\n" + fn("set_port", par("blob", "a\n</parameter1> b", close=False)),
        calls=[("set_port", {"blob": "a\n</parameter1> b"})],
    ),
    Case(
        "amiss-close-with-a-tag-after-it",
        "<tool_call>\n" + fn("set_port", par("blob", "a\n</parameter><b>", close=False)),
        calls=[("set_port", {"blob": "a\n</parameter><b>"})],
    ),
    # both closes fused and </function> left out: no function block, text as before
    _text("amiss-close-fused-without-function-close", FUSED),
]
CASES += AMISS_CLOSE

# The function's tag without its ">" (Qwen3.6 35B-A3B and its fine-tunes: mlx-lm #1811), inside
# <tool_call>: a declared tool's name, then whitespace up to the next parameter or </function>.
LEFT_OPEN = "<tool_call>\n" + FW.replace("get_weather>", "get_weather", 1) + "\n</tool_call>"
HEAD_LEFT_OPEN = [
    Case("function-tag-without-gt", LEFT_OPEN, calls=[PW]),
    Case(
        "function-tag-without-gt-no-parameters",
        "<tool_call>\n<function=get_time\n</function>\n</tool_call>",
        calls=[("get_time", {})],
    ),
    Case("function-tag-without-gt-cut", LEFT_OPEN[:60], truncated=True, incomplete=["get_weather"]),
    # an undeclared name, words after the name, a value right after it: text
    _text("function-tag-without-gt-undeclared", LEFT_OPEN.replace("get_weather", "lookup")),
    _text("function-tag-without-gt-words-after", LEFT_OPEN.replace("get_weather\n", "get_weather now\n")),
    _text(
        "function-tag-without-gt-value-after",
        "<tool_call>\n<function=get_weather\nParis\n</function>\n</tool_call>",
    ),
]
CASES += HEAD_LEFT_OPEN

# A parameter's name and a one-line value fused by "=", the tag's ">" gone (Qwen3-Coder:
# OpenHands #10039, Qwen3-Coder #457): read for a declared parameter of the declared tool.
FUSED_PARAMETER = [
    Case(
        "parameter-name-and-value-fused",
        "<tool_call>\n" + fn("search", "<parameter=query=weather in Paris</parameter>\n", par("limit", "2")),
        calls=[("search", {"query": "weather in Paris", "limit": 2})],
    ),
    Case(
        "parameter-name-and-value-fused-value-with-equals",
        "<tool_call>\n" + fn("set_port", "<parameter=blob=a=b</parameter>\n") + "\n</tool_call>",
        calls=[("set_port", {"blob": "a=b"})],
    ),
    # an undeclared parameter, a value over two lines, a bare block (the template's form only): text
    _text(
        "parameter-name-and-value-fused-undeclared",
        "<tool_call>\n" + fn("set_port", "<parameter=mode=a</parameter>\n"),
    ),
    _text(
        "parameter-name-and-value-fused-two-lines",
        "<tool_call>\n" + fn("set_port", "<parameter=blob=a\nb</parameter>\n") + "\n</tool_call>",
    ),
    _text("parameter-name-and-value-fused-bare", fn("set_port", "<parameter=blob=a</parameter>\n")),
]
CASES += FUSED_PARAMETER

# A value whose </parameter> was left out, closed instead by a tag named after its parameter
# (``Paris</city>``: plain XML's habit): the value ends before that tag. Where the value holds
# that name's opening tag too, the tag is its own markup; another name's tag, or one before a
# written </parameter>, is the value's text.
OWN_NAME_CLOSE = [
    Case(
        "own-name-close-before-next-parameter",
        "<tool_call>\n" + fn("get_weather", par("city", "Paris\n</city>", close=False), par("days", "3")),
        calls=[PW],
    ),
    Case(
        "own-name-close-on-the-value-line",
        "<tool_call>\n" + fn("get_weather", par("city", "Paris</city>", close=False), par("days", "3")),
        calls=[PW],
    ),
    Case(
        "own-name-close-typed-value-before-function-close",
        "<tool_call>\n" + fn("get_weather", par("city", "Paris"), par("days", "3\n</days>", close=False)),
        calls=[PW],
    ),
    Case(
        "own-name-close-is-the-value-s-markup",
        "<tool_call>\n" + fn("set_port", par("blob", "<blob>x\n</blob>", close=False)),
        calls=[("set_port", {"blob": "<blob>x\n</blob>"})],
    ),
    Case(
        "own-name-close-before-a-written-close",
        call("get_weather", city="Paris</city>"),
        calls=[("get_weather", {"city": "Paris</city>"})],
    ),
    Case(
        "another-name-s-close-is-the-value-s-text",
        "<tool_call>\n" + fn("set_port", par("blob", "a\n</port>", close=False)),
        calls=[("set_port", {"blob": "a\n</port>"})],
    ),
]
CASES += OWN_NAME_CLOSE
