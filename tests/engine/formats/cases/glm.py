"""GLM XML: ``<tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value></tool_call>``."""

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases, text_case

FAMILY = "glm"

# GLM-4.5/4.6 newline layout and GLM-4.7/5 compact layout of the same call.
NL = (
    "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n"
    "<arg_key>days</arg_key>\n<arg_value>3</arg_value>\n</tool_call>"
)
COMPACT = (
    "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>"
    "<arg_key>days</arg_key><arg_value>3</arg_value></tool_call>"
)
W = ("get_weather", {"city": "Paris", "days": 3})
SEARCH = (
    "<tool_call>search<arg_key>query</arg_key><arg_value>x</arg_value>"
    "<arg_key>limit</arg_key><arg_value>10</arg_value></tool_call>"
)

CASES = [
    Case("newline-layout", NL, calls=[W], ids=["call00000"]),
    Case("compact-layout", COMPACT, calls=[W]),
    Case("text-around", "Let me check.\n" + NL + "\nDone.", content="Let me check.\n\nDone.", calls=[W]),
    Case(
        "parallel-newline",
        NL + "\n" + NL.replace("Paris", "Oslo"),
        content="\n",
        calls=[W, ("get_weather", {"city": "Oslo", "days": 3})],
        ids=["call00000", "call00001"],
    ),
    Case("parallel-compact", COMPACT + SEARCH, calls=[W, ("search", {"query": "x", "limit": 10})]),
    Case(
        "glm45-think",
        "<think>The user wants weather.</think>\n" + NL,
        reasoning="The user wants weather.",
        content="\n",
        calls=[W],
    ),
    Case(
        "glm47-starts-in-reasoning",
        "The user wants weather.</think>" + COMPACT,
        reasoning="The user wants weather.",
        calls=[W],
    ),
    Case(
        "prefilled-think",
        "I should call it.</think>" + COMPACT,
        in_reasoning=True,
        reasoning="I should call it.",
        calls=[W],
    ),
    Case("empty-think-then-text", "<think></think>\nHello there.", content="\nHello there."),
    Case("empty-arguments", "<tool_call>get_time</tool_call>", calls=[("get_time", {})]),
    Case("empty-arguments-newline", "<tool_call>get_time\n</tool_call>", calls=[("get_time", {})]),
    Case(
        "numbers-stay-strings",
        "<tool_call>set_port<arg_key>port</arg_key><arg_value>8080</arg_value>"
        "<arg_key>zip</arg_key><arg_value>02139</arg_value>"
        "<arg_key>flag</arg_key><arg_value>true</arg_value></tool_call>",
        calls=[("set_port", {"port": "8080", "zip": "02139", "flag": "true"})],
    ),
    Case(
        "typed-by-schema",
        "<tool_call>search<arg_key>query</arg_key><arg_value>q</arg_value>"
        "<arg_key>limit</arg_key><arg_value>10</arg_value>"
        '<arg_key>filters</arg_key><arg_value>{"year": 2020}</arg_value>'
        '<arg_key>tags</arg_key><arg_value>["a", "b"]</arg_value>'
        "<arg_key>score</arg_key><arg_value>null</arg_value>"
        "<arg_key>mode</arg_key><arg_value>7</arg_value></tool_call>",
        calls=[
            (
                "search",
                {
                    "query": "q",
                    "limit": 10,
                    "filters": {"year": 2020},
                    "tags": ["a", "b"],
                    "score": None,
                    "mode": 7,
                },
            )
        ],
    ),
    Case(
        "whitespace-in-value-kept",
        "<tool_call>set_port<arg_key>blob</arg_key><arg_value>  two\n lines \n</arg_value></tool_call>",
        calls=[("set_port", {"blob": "  two\n lines \n"})],
    ),
    Case(
        "unicode-and-escapes",
        '<tool_call>get_weather<arg_key>city</arg_key><arg_value>Zürich "quoted" \\n 東京 🌧'
        "</arg_value></tool_call>",
        calls=[("get_weather", {"city": 'Zürich "quoted" \\n 東京 🌧'})],
    ),
    Case(
        "marker-inside-value",
        "<tool_call>set_port<arg_key>blob</arg_key><arg_value>a </tool_call> b <tool_call> <think>"
        "</arg_value></tool_call>",
        calls=[("set_port", {"blob": "a </tool_call> b <tool_call> <think>"})],
    ),
    Case(
        "nested-json-value",
        "<tool_call>search<arg_key>query</arg_key><arg_value>q</arg_value><arg_key>filters</arg_key>"
        '<arg_value>{"year": "2021", "x": {"y": [1, 2]}}</arg_value></tool_call>',
        calls=[("search", {"query": "q", "filters": {"year": 2021, "x": {"y": [1, 2]}}})],
    ),
    Case(
        "untyped-unknown-tool",
        "<tool_call>other_tool<arg_key>n</arg_key><arg_value>5</arg_value></tool_call>",
        calls=[("other_tool", {"n": "5"})],
    ),
    Case(
        "cut-second-of-pair",
        COMPACT + "<tool_call>search<arg_key>query</arg_key><arg_value>x",
        truncated=True,
        calls=[W],
        incomplete=["search"],
    ),
    Case("missing-close", "<tool_call>get_time", calls=[("get_time", {})]),  # see UNCLOSED below
    text_case(
        "hermes-json-is-text",
        '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call>',
    ),
    text_case("key-without-value", "<tool_call>get_weather<arg_key>city</arg_key></tool_call> ok"),
    text_case(
        "stray-text-in-call",
        "<tool_call>get_weather please<arg_key>city</arg_key><arg_value>P</arg_value></tool_call>",
    ),
    text_case(
        "duplicate-key",
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>A</arg_value><arg_key>city</arg_key>"
        "<arg_value>B</arg_value></tool_call>",
    ),
    Case(
        "malformed-then-valid",
        "<tool_call>{bad}</tool_call>" + COMPACT,
        content="<tool_call>{bad}</tool_call>",
        calls=[W],
    ),
    Case(
        "call-in-closed-reasoning",
        "<think>maybe " + COMPACT + " no</think>Hi",
        reasoning="maybe " + COMPACT + " no",
        content="Hi",
    ),
    text_case("plain-text", "Just an answer with <b>markup</b>."),
]

# The closing reasoning tag inside an argument: part of the call in every reasoning state.
CASES += close_tag_in_argument_cases(
    ("<think>", "</think>"),
    "<tool_call>set_port<arg_key>blob</arg_key><arg_value>why <think> and </think> here</arg_value></tool_call>",
    ("set_port", {"blob": "why <think> and </think> here"}),
    "<tool_call>",
)

# The last <arg_value>'s </arg_value> is missing before </tool_call>.
MISSING_VALUE_CLOSE = [
    Case(
        "missing-last-value-close",
        "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris"
        "<arg_key>days</arg_key><arg_value>3</tool_call>".replace(
            "Paris<arg_key>", "Paris</arg_value><arg_key>"
        ),
        calls=[W],
    ),
    Case("missing-last-value-close-newline-layout", NL.replace("3</arg_value>\n", "3\n"), calls=[W]),
    Case(
        "missing-last-value-close-then-call",
        "<tool_call>get_time<arg_key>x</arg_key><arg_value>1</tool_call>" + COMPACT,
        calls=[("get_time", {"x": "1"}), W],
    ),
    Case(
        "literal-value-close-inside-value",
        "<tool_call>set_port<arg_key>blob</arg_key><arg_value>a</arg_value> b</arg_value></tool_call>",
        calls=[("set_port", {"blob": "a</arg_value> b"})],
    ),
]
CASES += MISSING_VALUE_CLOSE

# GLM-4.7 leaves out the first <arg_key>: the name runs into the first key (vLLM #47190). Read
# only where the text splits one way into a declared tool and one of its declared parameters.
FUSED = COMPACT.replace("get_weather<arg_key>city", "get_weathercity")
FUSED_NAME_KEY = [
    Case("fused-name-and-first-key", FUSED, calls=[W]),
    Case("fused-with-a-space", COMPACT.replace("get_weather<arg_key>city", "get_weather city"), calls=[W]),
    Case("fused-newline-layout", NL.replace("get_weather\n<arg_key>city", "get_weather\ncity"), calls=[W]),
    Case("fused-after-text", "Checking.\n" + FUSED, content="Checking.\n", calls=[W]),
    Case(
        "fused-then-a-whole-call",
        FUSED + "\n" + SEARCH,
        content="\n",
        calls=[W, ("search", {"query": "x", "limit": 10})],
    ),
    Case(
        "fused-in-closed-reasoning-is-reasoning",
        "<think>" + FUSED + "</think>Done.",
        reasoning=FUSED,
        content="Done.",
    ),
    # an undeclared key, an undeclared tool, a split that is not there: text
    text_case("fused-undeclared-key", FUSED.replace("get_weathercity", "get_weatherzip")),
    text_case("fused-undeclared-tool", FUSED.replace("get_weathercity", "get_citycity")),
    text_case("fused-no-key-left", FUSED.replace("get_weathercity", "get_weather")),
]
CASES += FUSED_NAME_KEY

# GLM-5.2 writes a stray </arg_value> right after a declared tool's name, mostly in calls without
# arguments (fw-ai-external/python-sdk #119): dropped, the call read as written around it.
STRAY_VALUE_CLOSE = [
    Case(
        "stray-value-close-no-arguments",
        "<tool_call>get_time</arg_value></tool_call>",
        calls=[("get_time", {})],
    ),
    Case(
        "stray-value-close-then-arguments",
        COMPACT.replace("get_weather<", "get_weather</arg_value><"),
        calls=[W],
    ),
    Case(
        "stray-value-close-after-text",
        "Let me look.<tool_call>get_time</arg_value></tool_call>",
        content="Let me look.",
        calls=[("get_time", {})],
    ),
    # an undeclared tool, or anything between the name and the tag: text
    text_case("stray-value-close-undeclared-tool", "<tool_call>get_date</arg_value></tool_call>"),
    text_case("stray-value-close-after-newline", "<tool_call>get_time\n</arg_value></tool_call>"),
]
CASES += STRAY_VALUE_CLOSE

# GLM-4.7 leaves out a value's opening tag now and then, more often under concurrent load (vLLM
# #49249: raw sampled tokens); a key's closing tag comes twice (vLLM #54971). The value then starts
# right after the key's closing tag (one newline there is layout) and must be closed.
Q = "<tool_call>search<arg_key>query</arg_key>"
MISSING_VALUE_OPEN = [
    Case(
        "value-open-left-out",
        Q + "how many days left</arg_value></tool_call>",
        calls=[("search", {"query": "how many days left"})],
    ),
    Case("value-open-left-out-then-pair", COMPACT.replace("<arg_value>Paris", "Paris"), calls=[W]),
    Case("value-open-left-out-last", COMPACT.replace("<arg_value>3", "3"), calls=[W]),
    Case("value-open-left-out-newline-layout", NL.replace("\n<arg_value>Paris", "\nParis"), calls=[W]),
    Case("value-open-left-out-twice", COMPACT.replace("<arg_value>", ""), calls=[W]),
    Case(
        "value-open-left-out-spaces-kept",
        Q + "  x </arg_value></tool_call>",
        calls=[("search", {"query": "  x "})],
    ),
    Case("value-open-left-out-empty", Q + "</arg_value></tool_call>", calls=[("search", {"query": ""})]),
    Case(
        "value-open-left-out-close-tag-inside",
        Q + "a</arg_value> b</arg_value><arg_key>limit</arg_key>2</arg_value></tool_call>",
        calls=[("search", {"query": "a</arg_value> b", "limit": 2})],
    ),
    Case(
        "value-open-left-out-after-think",
        "<think>look it up</think>" + Q + "cats</arg_value></tool_call>",
        reasoning="look it up",
        calls=[("search", {"query": "cats"})],
    ),
    Case(
        "key-close-twice",
        Q + "</arg_key><arg_value>x</arg_value></tool_call>",
        calls=[("search", {"query": "x"})],
    ),
    Case("key-close-twice-newline", NL.replace("city</arg_key>", "city</arg_key>\n</arg_key>"), calls=[W]),
    Case(
        "key-close-twice-value-open-left-out",
        Q + "</arg_key>x</arg_value></tool_call>",
        calls=[("search", {"query": "x"})],
    ),
    Case("value-open-left-out-cut", Q + "how many", truncated=True, incomplete=["search"]),
    # text: a value never closed, one holding another pair tag, a key closed three ways
    text_case("value-open-left-out-never-closed", Q + "x</tool_call> ok"),
    text_case("value-open-left-out-holding-value-open", Q + "a<arg_value>b</arg_value></tool_call>"),
    text_case("value-open-left-out-holding-key-close", Q + "a</arg_key>b</arg_value></tool_call>"),
]
CASES += MISSING_VALUE_OPEN

# GLM 5.x writes <tool_call> where a declared tool's first <arg_key> belongs (sigit #95; a GLM 5.3
# deployment, ormandj/sglang-glm53-flash-sm120 #5): that key's opening tag, the first only.
UNDECLARED_KEY_AS_CALL = "<tool_call>get_date<tool_call>day</arg_key><arg_value>1</arg_value></tool_call>"
LATER_KEY_AS_CALL = COMPACT.replace("<arg_key>", "<tool_call>")
NEWLINE_KEY_AS_CALL = NL.replace("get_weather\n<arg_key>", "get_weather\n<tool_call>")
KEY_AS_CALL = [
    Case(
        "call-tag-for-first-key", COMPACT.replace("get_weather<arg_key>", "get_weather<tool_call>"), calls=[W]
    ),
    Case(
        "call-tag-for-first-key-after-text",
        "Checking." + SEARCH.replace("search<arg_key>", "search<tool_call>"),
        content="Checking.",
        calls=[("search", {"query": "x", "limit": 10})],
    ),
    Case(
        "call-tag-for-first-key-value-open-left-out",
        "<tool_call>search<tool_call>query</arg_key>cats</arg_value></tool_call>",
        calls=[("search", {"query": "cats"})],
    ),
    # text: an undeclared tool, the tag for a later key too, a newline before it
    text_case("call-tag-undeclared-tool", UNDECLARED_KEY_AS_CALL),
    text_case("call-tag-for-a-later-key", LATER_KEY_AS_CALL),
    text_case("call-tag-after-a-newline", NEWLINE_KEY_AS_CALL),
]
CASES += KEY_AS_CALL

# The last call's </tool_call> left out, or only its start written, the reply then ending
# normally (ollama #17250, colibri #505): read where the call is complete, to a declared tool
# with every required argument.
OPEN_CALL = COMPACT.removesuffix("</tool_call>")
UNCLOSED = [
    Case("closing-tag-left-out", OPEN_CALL, calls=[W]),
    Case("closing-tag-left-out-newline-layout", NL.removesuffix("</tool_call>"), calls=[W]),
    Case("closing-tag-started", OPEN_CALL + "</tool_cal", calls=[W]),
    Case("closing-tag-started-short", OPEN_CALL + "\n</", calls=[W]),
    Case(
        "closing-tag-left-out-no-arguments",
        "Checking.<tool_call>get_time",
        content="Checking.",
        calls=[("get_time", {})],
    ),
    Case("closing-tag-left-out-after-a-call", COMPACT + "\n" + OPEN_CALL, content="\n", calls=[W, W]),
    # text, or a cut call: cut by the token limit, a value left open, a required argument missing,
    # an undeclared tool, words after the call
    Case("closing-tag-left-out-cut", OPEN_CALL, truncated=True, incomplete=["get_weather"]),
    text_case(
        "closing-tag-left-out-value-open", "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris"
    ),
    text_case(
        "closing-tag-left-out-required-missing",
        "<tool_call>get_weather<arg_key>days</arg_key><arg_value>3</arg_value>",
    ),
    text_case(
        "closing-tag-left-out-undeclared",
        "<tool_call>get_forecast<arg_key>city</arg_key><arg_value>Paris</arg_value>",
    ),
    text_case("closing-tag-left-out-then-words", OPEN_CALL + " Done."),
]
CASES += UNCLOSED


# The value's opening tag written without its "<" (``arg_value>``: quantized models, aosama/
# astronomical #293): read as that tag, after the key's closing tag (one newline there is layout);
# the value must be closed and may hold no other pair tag, as a value without its opening tag.
VALUE_OPEN_WITHOUT_LT = [
    Case(
        "value-open-without-lt",
        Q + "\narg_value>romeo.md</arg_value></tool_call>",
        calls=[("search", {"query": "romeo.md"})],
    ),
    Case("value-open-without-lt-compact", COMPACT.replace("<arg_value>Paris", "arg_value>Paris"), calls=[W]),
    Case("value-open-without-lt-newline-layout", NL.replace("\n<arg_value>3", "\narg_value>3"), calls=[W]),
    Case("value-open-without-lt-every", NL.replace("<arg_value>", "arg_value>"), calls=[W]),
    Case(
        "value-open-without-lt-spaces-kept",
        Q + "arg_value> x </arg_value></tool_call>",
        calls=[("search", {"query": " x "})],
    ),
    # text: never closed, holding another pair tag
    text_case("value-open-without-lt-never-closed", Q + "\narg_value>x</tool_call> ok"),
    text_case(
        "value-open-without-lt-holding-value-open", Q + "arg_value>a<arg_value>b</arg_value></tool_call>"
    ),
]
CASES += VALUE_OPEN_WITHOUT_LT

# A value whose </arg_value> was left out before the next pair: the next pair would be read as
# this value's text and lost, so the call is text (a value ending in a pair's opening tags with no
# </arg_value> after them is the next pair swallowed, never a value as written).
VALUE_CLOSE_LEFT_OUT = [
    text_case("value-close-left-out-before-next-pair", NL.replace("Paris</arg_value>", "Paris")),
    text_case("value-close-left-out-before-next-pair-compact", COMPACT.replace("Paris</arg_value>", "Paris")),
    text_case(
        "value-close-left-out-before-next-pair-and-call-close",
        NL.replace("Paris</arg_value>", "Paris").replace("3</arg_value>", "3"),
    ),
    # a value that holds a whole pair as text (its own </arg_value> inside) is read as written
    Case(
        "value-holds-a-whole-pair",
        "<tool_call>set_port<arg_key>blob</arg_key><arg_value>x <arg_key>k</arg_key><arg_value>v</arg_value>"
        " y</arg_value></tool_call>",
        calls=[("set_port", {"blob": "x <arg_key>k</arg_key><arg_value>v</arg_value> y"})],
    ),
]
CASES += VALUE_CLOSE_LEFT_OUT


def _fuzz_write(fmt, name, args, rnd):
    nl = "\n" if rnd.random() < 0.5 else ""  # GLM-4.5's newline layout or GLM-4.7's compact one
    inner = "".join(f"{nl}<arg_key>{k}</arg_key>{nl}<arg_value>{v}</arg_value>" for k, v in args.items())
    return f"<tool_call>{name}{inner}{nl}</tool_call>"


FUZZ = Fuzz(
    markers=("</tool_call>", "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"),
    forbidden=("</arg_value>",),
    write=_fuzz_write,
)

# The last value's </arg_value> left out and the value closed by a tag named after its key
# (``Paris</days>``: plain XML's habit): the value ends before that tag; another name's tag, or
# the value's own markup, is its text.
OWN_NAME_CLOSE = [
    Case("own-name-close-last-value", COMPACT.replace("3</arg_value>", "3</days>"), calls=[W]),
    Case("own-name-close-newline-layout", NL.replace("3</arg_value>\n", "3\n</days>\n"), calls=[W]),
    Case(
        "own-name-close-the-value-s-markup",
        "<tool_call>set_port<arg_key>blob</arg_key><arg_value><blob>x</blob></tool_call>",
        calls=[("set_port", {"blob": "<blob>x</blob>"})],
    ),
    Case(
        "another-name-s-close-the-value-s-text",
        "<tool_call>set_port<arg_key>blob</arg_key><arg_value>a</port></tool_call>",
        calls=[("set_port", {"blob": "a</port>"})],
    ),
]
CASES += OWN_NAME_CLOSE
