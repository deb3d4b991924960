"""iQuest Coder V2: ``<iquestcoder_tool_call>NAME<arg_key>K</arg_key><arg_value>V</arg_value>
...</iquestcoder_tool_call>`` (GLM's arg pairs under iQuest's call tags), ``<think>`` reasoning."""

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "iquest-coder-v2"

OPEN, CLOSE = "<iquestcoder_tool_call>", "</iquestcoder_tool_call>"


def call(name: str, *pairs: tuple[str, str], nl: str = "") -> str:
    """One call as the model writes it (``nl``: a newline between the elements, which the
    reader also takes)."""
    inner = "".join(f"{nl}<arg_key>{k}</arg_key>{nl}<arg_value>{v}</arg_value>" for k, v in pairs)
    return f"{OPEN}{name}{inner}{nl}{CLOSE}"


COMPACT = call("get_weather", ("city", "Paris"), ("days", "3"))
SPACED = call("get_weather", ("city", "Paris"), ("days", "3"), nl="\n")
SEARCH = call("search", ("query", "x"), ("limit", "10"))
W = ("get_weather", {"city": "Paris", "days": 3})
S = ("search", {"query": "x", "limit": 10})


def _text(case_id: str, text: str, **kw) -> Case:
    """Not a call: the text, byte for byte."""
    return Case(case_id, text, content=text, **kw)


CASES = [
    # -- calls as the model writes them
    Case("single-compact", COMPACT, calls=[W], ids=["call00000"]),
    Case("single-newlines", SPACED, calls=[W]),
    Case(
        "spaces-between-elements",
        f"{OPEN} get_weather <arg_key>city</arg_key> <arg_value>Paris</arg_value> {CLOSE}",
        calls=[("get_weather", {"city": "Paris"})],
    ),
    Case("text-around", "Let me check.\n" + COMPACT + "\nDone.", content="Let me check.\n\nDone.", calls=[W]),
    Case("parallel", COMPACT + SEARCH, calls=[W, S], ids=["call00000", "call00001"]),
    Case("parallel-newline-between", COMPACT + "\n" + SEARCH, content="\n", calls=[W, S]),
    Case("no-arguments", f"{OPEN}get_time{CLOSE}", calls=[("get_time", {})]),
    Case("no-arguments-newline", f"{OPEN}get_time\n{CLOSE}", calls=[("get_time", {})]),
    Case(
        "numbers-stay-strings",
        call("set_port", ("port", "8080"), ("zip", "02139"), ("flag", "true")),
        calls=[("set_port", {"port": "8080", "zip": "02139", "flag": "true"})],
    ),
    Case(
        "typed-by-schema",
        call(
            "search",
            ("query", "q"),
            ("limit", "10"),
            ("filters", '{"year": 2020}'),
            ("tags", '["a", "b"]'),
            ("score", "null"),
            ("mode", "7"),
        ),
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
        call("set_port", ("blob", "  two\n lines \n")),
        calls=[("set_port", {"blob": "  two\n lines \n"})],
    ),
    Case(
        "unicode-and-escapes",
        call("get_weather", ("city", 'Zürich "quoted" \\n 東京 🌧')),
        calls=[("get_weather", {"city": 'Zürich "quoted" \\n 東京 🌧'})],
    ),
    Case(
        "markers-inside-value",
        call("set_port", ("blob", f"a {CLOSE} b {OPEN} <think> <tool_call> </tool_call>")),
        calls=[("set_port", {"blob": f"a {CLOSE} b {OPEN} <think> <tool_call> </tool_call>"})],
    ),
    Case(
        "value-close-inside-value",
        f"{OPEN}set_port<arg_key>blob</arg_key><arg_value>a</arg_value> b</arg_value>{CLOSE}",
        calls=[("set_port", {"blob": "a</arg_value> b"})],
    ),
    Case(
        "missing-last-value-close",
        f"{OPEN}get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>"
        f"<arg_key>days</arg_key><arg_value>3{CLOSE}",
        calls=[W],
    ),
    Case(
        "missing-last-value-close-then-call",
        f"{OPEN}get_time<arg_key>x</arg_key><arg_value>1{CLOSE}" + COMPACT,
        calls=[("get_time", {"x": "1"}), W],
    ),
    Case(
        "unknown-tool-untyped",
        call("other_tool", ("n", "5")),
        calls=[("other_tool", {"n": "5"})],
    ),
    # -- reasoning (thinking is on by default; the reply may start inside the block)
    Case(
        "think-then-call",
        "<think>The user wants weather.</think>\n" + COMPACT,
        reasoning="The user wants weather.",
        content="\n",
        calls=[W],
    ),
    Case(
        "starts-in-reasoning",
        "The user wants weather.</think>" + COMPACT,
        reasoning="The user wants weather.",
        calls=[W],
    ),
    Case(
        "prefilled-think",
        "I should call it.</think>\n" + COMPACT,
        in_reasoning=True,
        reasoning="I should call it.",
        content="\n",
        calls=[W],
    ),
    Case(
        "adaptive-thinking-call-ends-block",
        "<think>I need the weather.\n" + COMPACT,
        reasoning="I need the weather.\n",
        calls=[W],
    ),
    Case(
        "call-in-closed-reasoning",
        "<think>maybe " + COMPACT + " no</think>Hi",
        reasoning="maybe " + COMPACT + " no",
        content="Hi",
    ),
    Case("empty-think-then-text", "<think></think>\nHello there.", content="\nHello there."),
    Case(
        "orphan-close-answer",
        "thinking</think>The answer is 4.",
        reasoning="thinking",
        content="The answer is 4.",
    ),
    # -- cut by the token limit
    Case(
        "cut-second-of-pair",
        COMPACT + f"{OPEN}search<arg_key>query</arg_key><arg_value>x",
        truncated=True,
        calls=[W],
        incomplete=["search"],
    ),
    Case("cut-in-close-tag", COMPACT[:-5], truncated=True, incomplete=["get_weather"]),
    # the name may itself be cut: it is known once a tag or a newline follows it
    Case("cut-after-name", f"{OPEN}get_weather", truncated=True, incomplete=[None]),
    Case(
        "cut-after-name-and-key", f"{OPEN}get_weather<arg_key>ci", truncated=True, incomplete=["get_weather"]
    ),
    Case("cut-after-opener", OPEN, truncated=True, incomplete=[None]),
    # -- not a call: text
    _text("missing-close", f"{OPEN}get_time"),
    _text("missing-close-with-args", f"{OPEN}get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value>"),
    _text(
        "glm-tags", "<tool_call>get_weather<arg_key>city</arg_key><arg_value>Paris</arg_value></tool_call>"
    ),
    _text("hermes-json-inside", f'{OPEN}{{"name": "get_weather", "arguments": {{"city": "Paris"}}}}{CLOSE}'),
    _text("no-name", f"{OPEN}<arg_key>city</arg_key><arg_value>Paris</arg_value>{CLOSE}"),
    _text("key-without-value", f"{OPEN}get_weather<arg_key>city</arg_key>{CLOSE} ok"),
    _text("value-without-key", f"{OPEN}get_weather<arg_value>Paris</arg_value>{CLOSE}"),
    _text(
        "stray-text-in-call",
        f"{OPEN}get_weather please<arg_key>city</arg_key><arg_value>P</arg_value>{CLOSE}",
    ),
    _text(
        "stray-text-between-key-and-value",
        f"{OPEN}get_weather<arg_key>city</arg_key>and<arg_value>P</arg_value>{CLOSE}",
    ),
    _text(
        "duplicate-key",
        f"{OPEN}get_weather<arg_key>city</arg_key><arg_value>A</arg_value>"
        f"<arg_key>city</arg_key><arg_value>B</arg_value>{CLOSE}",
    ),
    _text("wrong-nesting", f"{OPEN}get_weather<arg_value><arg_key>city</arg_key>Paris</arg_value>{CLOSE}"),
    _text("lowercase-variant", "<IQUESTCODER_TOOL_CALL>get_time</IQUESTCODER_TOOL_CALL>"),
    _text("partial-marker-text", "a <iquestcoder_tool and <iquestcoder_ are text"),
    _text("plain-text", "Just an answer with <b>markup</b> and <arg_key>x</arg_key>."),
    Case(
        "malformed-then-valid",
        f"{OPEN}{{bad}}{CLOSE}" + COMPACT,
        content=f"{OPEN}{{bad}}{CLOSE}",
        calls=[W],
    ),
]

# The closing reasoning tag inside an argument: part of the call in every reasoning state.
CASES += close_tag_in_argument_cases(
    ("<think>", "</think>"),
    call("set_port", ("blob", "why <think> and </think> here")),
    ("set_port", {"blob": "why <think> and </think> here"}),
    OPEN,
)


def _fuzz_write(fmt, name, args, rnd):
    # The compact layout the model writes, or one with newlines between the elements.
    nl = "\n" if rnd.random() < 0.5 else ""
    return call(name, *args.items(), nl=nl)


FUZZ = Fuzz(
    markers=(CLOSE, "<arg_key>", "</arg_key>", "<arg_value>", "</arg_value>"),
    forbidden=("</arg_value>",),
    write=_fuzz_write,
)

# -- settings, tiny models (tests/engine/formats/test_added_families.py)

SETTING_WORDS = ("iQuest Coder V2", "IQuest-Coder-V2")

# No published iQuest Coder V2 template was found (find_string "<iquestcoder_tool_call>",
# "<|iquestcoder_": vLLM's parsers and tests only). The stand-in renders what vLLM's
# iquest_coder_v2 tool and reasoning parsers document: the assistant turn opened by
# <|iquestcoder_assistant|>, reasoning in <think>...</think>, calls in the compact arg-pair
# layout of the parser's tests. The other turn markers (<|iquestcoder_system|>,
# <|iquestcoder_user|>, <|iquestcoder_tool|>, <|iquestcoder_end|>) are stand-ins named after the
# documented one, not the model's.
STAND_IN = (
    "{%- if tools or messages[0].role == 'system' %}<|iquestcoder_system|>"
    "{%- for m in messages if m.role == 'system' %}{{ m.content }}\n{% endfor %}"
    "{%- if tools %}# Tools\nYou may call one or more tools. Their schemas:\n"
    "{% for t in tools %}{{ t | tojson }}\n{% endfor %}"
    "Call a tool as <iquestcoder_tool_call>NAME<arg_key>KEY</arg_key><arg_value>VALUE</arg_value>"
    "...</iquestcoder_tool_call>\n{% endif %}<|iquestcoder_end|>{% endif %}"
    "{%- for m in messages %}{% if m.role == 'user' %}<|iquestcoder_user|>{{ m.content }}<|iquestcoder_end|>"
    "{%- elif m.role == 'tool' %}<|iquestcoder_tool|>{{ m.content }}<|iquestcoder_end|>"
    "{%- elif m.role == 'assistant' %}<|iquestcoder_assistant|>"
    "{%- if m.reasoning_content %}<think>{{ m.reasoning_content }}</think>{% endif %}{{ m.content or '' }}"
    "{%- for c in m.tool_calls or [] %}<iquestcoder_tool_call>{{ c.function.name }}"
    "{%- for k, v in c.function.arguments.items() %}<arg_key>{{ k }}</arg_key>"
    "<arg_value>{{ v if v is string else (v | tojson) }}</arg_value>{% endfor %}"
    "</iquestcoder_tool_call>{% endfor %}<|iquestcoder_end|>{% endif %}{% endfor %}"
    "{%- if add_generation_prompt %}<|iquestcoder_assistant|>{% endif %}"
)

TINY_MODELS = [
    (
        "stand-in:iquest-coder-v2",
        [
            "<|iquestcoder_system|>",
            "<|iquestcoder_user|>",
            "<|iquestcoder_tool|>",
            "<|iquestcoder_assistant|>",
            "<|iquestcoder_end|>",
        ],
        [
            "<iquestcoder_tool_call>",
            "</iquestcoder_tool_call>",
            "<arg_key>",
            "</arg_key>",
            "<arg_value>",
            "</arg_value>",
            "<think>",
            "</think>",
        ],
        None,
        "<|iquestcoder_end|>",
    )
]

# One call whose value holds the family's markers (test_added_families' cost cases); the closing
# tag right before an opening one would end the call inside the value, as GLM's rule says
COST_VALUE = "a </iquestcoder_tool_call> x <iquestcoder_tool_call> </think> b"
