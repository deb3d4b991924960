"""Kimi K3 (XTML): the whole message in control tokens; calls in a tools frame of typed arguments."""

from tests.engine.formats.harness import Case, Fuzz

FAMILY = "kimi-k3"

OP, CL, S = "<|open|>", "<|close|>", "<|sep|>"
THINK_END = f"{CL}think{S}"
RESP, RESP_END = f"{OP}response{S}", f"{CL}response{S}"
TOOLS, TOOLS_END = f"{OP}tools{S}", f"{CL}tools{S}"
MSG_END = f"{CL}message{S}"
ARG_END = f"{CL}argument{S}"


def arg(key: str, typ: str, value: str) -> str:
    return f'{OP}argument key="{key}" type="{typ}"{S}{value}{ARG_END}'


def call(name: str, *args: str, index: int = 1, sep: str = "") -> str:
    return f'{OP}call tool="{name}" index="{index}"{S}' + sep + sep.join(args) + sep + f"{CL}call{S}"


def tools(*calls: str, sep: str = "") -> str:
    return TOOLS + sep + sep.join(calls) + sep + TOOLS_END


W = call("get_weather", arg("city", "string", "Paris"), arg("days", "number", "3"))
PW = ("get_weather", {"city": "Paris", "days": 3})
T = call("get_time", index=2)

# Thinking on: the prompt ends inside the think frame; the reply closes it, answers, calls, ends.
THINKING = [
    Case(
        "thinking-reply",
        "The user wants weather." + THINK_END + RESP + "Let me check." + RESP_END + tools(W) + MSG_END,
        in_reasoning=True,
        reasoning="The user wants weather.",
        content="Let me check.",
        calls=[PW],
        ids=["call00000"],
    ),
    Case(
        "thinking-empty-reasoning-and-text",
        THINK_END + RESP + RESP_END + tools(W) + MSG_END,
        in_reasoning=True,
        calls=[PW],
    ),
    Case(
        "thinking-answer-only",
        "hmm" + THINK_END + RESP + "It is sunny." + RESP_END + MSG_END,
        in_reasoning=True,
        reasoning="hmm",
        content="It is sunny.",
    ),
    # A reasoning frame the reply itself opens (a server that consumed less of the prompt).
    Case(
        "thinking-opened-by-reply",
        f"{OP}think{S}plan{THINK_END}{RESP}ok{RESP_END}",
        reasoning="plan",
        content="ok",
    ),
    # Cut off while reasoning: it stays reasoning.
    Case("thinking-cut", "The user wants", in_reasoning=True, truncated=True, reasoning="The user wants"),
    Case(
        "thinking-cut-before-response",
        "plan" + THINK_END + RESP + "Let me",
        in_reasoning=True,
        truncated=True,
        reasoning="plan",
        content="Let me",
    ),
]

# Thinking off: the prompt already opened the response frame.
NO_THINKING = [
    Case("text-then-call", "Checking." + RESP_END + tools(W) + MSG_END, content="Checking.", calls=[PW]),
    Case("call-only", RESP_END + tools(W) + MSG_END, calls=[PW]),
    Case("plain-answer", "Hello there." + RESP_END + MSG_END, content="Hello there."),
    Case("plain-answer-no-frames", "Hello there.", content="Hello there."),
    # The reply opens with the response frame itself: no reasoning, even with thinking prefilled.
    Case("response-frame-first", RESP + "Hi." + RESP_END + MSG_END, content="Hi."),
    Case(
        "response-frame-first-prefilled-think",
        RESP + "Hi." + RESP_END + tools(W),
        in_reasoning=True,
        content="Hi.",
        calls=[PW],
    ),
    Case("response-frame-first-cut", RESP + "Hi, let", in_reasoning=True, truncated=True, content="Hi, let"),
]

TOOL_FRAMES = [
    Case("parallel", RESP_END + tools(W, T) + MSG_END, calls=[PW, ("get_time", {})]),
    Case(
        "parallel-newline-layout",
        RESP_END + tools(W, T, sep="\n") + "\n" + MSG_END,
        content="\n",
        calls=[PW, ("get_time", {})],
    ),
    Case(
        "arguments-newline-layout",
        tools(call("get_weather", arg("city", "string", "Paris"), arg("days", "number", "3"), sep="\n")),
        calls=[PW],
    ),
    Case("empty-tools-frame", "Done." + RESP_END + TOOLS + TOOLS_END + MSG_END, content="Done."),
    Case("bare-call-frame", "ok " + W, content="ok ", calls=[PW]),
    Case("tools-frame-implied-close", RESP_END + TOOLS + W, calls=[PW]),
]

TYPES = [
    Case(
        "typed-values",
        tools(
            call(
                "search",
                arg("query", "string", "q"),
                arg("filters", "object", '{"year": 2020}'),
                arg("tags", "array", '["a"]'),
                arg("score", "null", "null"),
                arg("mode", "number", "7"),
                arg("limit", "integer", "2"),
            )
        ),
        calls=[
            (
                "search",
                {
                    "query": "q",
                    "filters": {"year": 2020},
                    "tags": ["a"],
                    "score": None,
                    "mode": 7,
                    "limit": 2,
                },
            )
        ],
    ),
    Case(
        "booleans",
        tools(call("get_weather", arg("city", "string", "X"), arg("metric", "boolean", "true"))),
        calls=[("get_weather", {"city": "X", "metric": True})],
    ),
    Case(
        "string-type-keeps-digits",
        tools(call("set_port", arg("port", "string", "8080"), arg("zip", "string", "02139"))),
        calls=[("set_port", {"port": "8080", "zip": "02139"})],
    ),
    Case(
        "string-value-raw-whitespace-unicode",
        tools(call("set_port", arg("blob", "string", ' Zürich\n東京 "q" \\n '))),
        calls=[("set_port", {"blob": ' Zürich\n東京 "q" \\n '})],
    ),
    Case(
        "bad-json-kept-as-text",
        tools(call("search", arg("query", "string", "q"), arg("limit", "number", "ten"))),
        calls=[("search", {"query": "q", "limit": "ten"})],
    ),
    Case(
        "unknown-type-is-text",
        tools(call("get_time", arg("x", "date", "today"))),
        content=tools(call("get_time", arg("x", "date", "today"))),
    ),
]

ESCAPES = [
    # Attribute values escape &, < and " as XML does.
    Case(
        "escaped-attributes",
        tools(
            f'{OP}call tool="search" index="1"{S}'
            f'{OP}argument key="q&amp;a" type="string"{S}x{ARG_END}{CL}call{S}'
        ),
        calls=[("search", {"q&a": "x"})],
    ),
    Case(
        "escaped-quote-and-lt",
        tools(
            f'{OP}call tool="set_port"{S}{OP}argument key="&quot;k&lt;" type="string"{S}v{ARG_END}{CL}call{S}'
        ),
        calls=[("set_port", {'"k<': "v"})],
    ),
    # A string value may hold the argument's closing text: the real close is followed by the next
    # argument or the call's close.
    Case(
        "close-text-inside-string",
        tools(call("set_port", arg("blob", "string", f"a {ARG_END} b"), arg("flag", "string", "x"))),
        calls=[("set_port", {"blob": f"a {ARG_END} b", "flag": "x"})],
    ),
    Case(
        "close-text-ends-last-string",
        tools(call("set_port", arg("blob", "string", f"tail {ARG_END}"))),
        calls=[("set_port", {"blob": f"tail {ARG_END}"})],
    ),
    Case(
        "control-tokens-inside-string",
        tools(call("set_port", arg("blob", "string", f"{TOOLS_END}{RESP}{OP}call"))),
        calls=[("set_port", {"blob": f"{TOOLS_END}{RESP}{OP}call"})],
    ),
]

# Issue 27, deviation 5: attribute values unescaped as XML does (named entities, character
# references), and a raw < or > the model writes in a tool or argument name read as written.


def named(tool: str, key: str) -> str:
    return tools(
        f'{OP}call tool="{tool}" index="1"{S}{OP}argument key="{key}" type="string"{S}v{ARG_END}{CL}call{S}'
    )


ATTRIBUTES = [
    Case("i27-attr-amp-in-tool", named("q&amp;a", "k"), calls=[("q&a", {"k": "v"})]),
    Case("i27-attr-lt-entity-in-tool", named("get&lt;time", "k"), calls=[("get<time", {"k": "v"})]),
    Case("i27-attr-raw-lt-in-tool", named("get<time", "k"), calls=[("get<time", {"k": "v"})]),
    Case("i27-attr-raw-lt-in-key", named("set_port", "a<b"), calls=[("set_port", {"a<b": "v"})]),
    Case("i27-attr-raw-gt-in-key", named("set_port", "a>b<c"), calls=[("set_port", {"a>b<c": "v"})]),
    Case(
        "i27-attr-all-named-entities",
        named("set_port", "&amp;&lt;&gt;&quot;&apos;"),
        calls=[("set_port", {"&<>\"'": "v"})],
    ),
    Case(
        "i27-attr-char-references",
        named("set_port", "&#60;&#x3E;&#X41;&#x41;"),
        calls=[("set_port", {"<>&#X41;A": "v"})],
    ),
    Case("i27-attr-entity-not-reread", named("set_port", "&amp;lt;"), calls=[("set_port", {"&lt;": "v"})]),
    Case(
        "i27-attr-unknown-entity-as-written",
        named("set_port", "a&b &bogus; &#0; &#xD800;"),
        calls=[("set_port", {"a&b &bogus; &#0; &#xD800;": "v"})],
    ),
    Case(
        "i27-attr-bare-call-frame",
        "ok " + named("get_time", "x<y")[len(TOOLS) : -len(TOOLS_END)],
        content="ok ",
        calls=[("get_time", {"x<y": "v"})],
    ),
    Case("i27-attr-cut-in-name", named("get<time", "k")[:40], truncated=True, incomplete=[None]),
    # Anything else stays text.
    Case("i27-attr-raw-quote", named("set_port", 'a"b'), content=named("set_port", 'a"b')),
    Case("i27-attr-empty-tool", named("", "k"), content=named("", "k")),
    Case("i27-attr-space-in-tool", named("get time", "k"), content=named("get time", "k")),
    Case("i27-attr-escaped-space-in-tool", named("get&#32;time", "k"), content=named("get&#32;time", "k")),
]

CUT = [
    # Generation stopped inside a call: complete calls before it count, the cut one is incomplete.
    Case(
        "cut-in-second-call",
        RESP_END + TOOLS + W + call("get_time")[:20],
        truncated=True,
        calls=[PW],
        incomplete=[None],
    ),
    Case("cut-in-argument", RESP_END + TOOLS + W[:60], truncated=True, incomplete=["get_weather"]),
    Case(
        "cut-right-after-tools-frame",
        "Sure." + RESP_END + TOOLS,
        truncated=True,
        content="Sure.",
        incomplete=[None],
    ),
    Case("cut-before-tools-close", RESP_END + TOOLS + W, truncated=True, calls=[PW], stable_prefix=False),
]

MALFORMED = [
    Case(
        "duplicate-key",
        tools(call("get_weather", arg("city", "string", "A"), arg("city", "string", "B"))),
        content=tools(call("get_weather", arg("city", "string", "A"), arg("city", "string", "B"))),
    ),
    Case("text-inside-call", tools(call("get_time", "oops")), content=tools(call("get_time", "oops"))),
    Case("call-without-tool", tools(f"{OP}call{S}{CL}call{S}"), content=tools(f"{OP}call{S}{CL}call{S}")),
]

CASES = THINKING + NO_THINKING + TOOL_FRAMES + TYPES + ESCAPES + ATTRIBUTES + CUT + MALFORMED

_STRUCT = (
    RESP,
    RESP_END,
    TOOLS,
    TOOLS_END,
    MSG_END,
    "<|end_of_msg|>",
    THINK_END,
    f'{OP}message role="assistant"{S}',
)
FUZZ = Fuzz(
    markers=(*_STRUCT, f"{OP}call", f"{CL}call{S}", f"{OP}argument", ARG_END, OP, CL, S),
    structure=tuple(m.replace("|", r"\|") for m in _STRUCT),
    forbidden=(ARG_END,),
)

# The published template (llama.cpp's models/templates/Kimi-K3.jinja): a tiny model of the family
# is detected from it and driven through the check.
TINY_MODELS = [("Kimi-K3.jinja", ["<|end_of_msg|>"], [OP, CL, S], None, "<|end_of_msg|>")]
