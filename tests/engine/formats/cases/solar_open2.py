"""Solar Open2 (Solar Pro 4): ``<|tool_call:start|>NAME\\n<|tool_arg:start|>K<|tool_arg:value|>V
<|tool_arg:end|>\\n...<|tool_call:end|>`` (arg pairs with a one-sided key tag),
``<|think:start|>...<|think:end|>`` reasoning."""

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "solar-open2"

START, END = "<|tool_call:start|>", "<|tool_call:end|>"
A_START, A_VALUE, A_END = "<|tool_arg:start|>", "<|tool_arg:value|>", "<|tool_arg:end|>"
T_START, T_END = "<|think:start|>", "<|think:end|>"


def call(name: str, *pairs: tuple[str, str], sep: str = "\n") -> str:
    """One call as the template writes it (``sep``: what follows each pair; the reader takes any
    whitespace there)."""
    inner = "".join(f"{A_START}{k}{A_VALUE}{v}{A_END}{sep}" for k, v in pairs)
    return f"{START}{name}\n{inner}{END}"


def pair(k: str, v: str) -> str:
    return f"{A_START}{k}{A_VALUE}{v}{A_END}"


WEATHER = call("get_weather", ("city", "Paris"), ("days", "3"))
SEARCH = call("search", ("query", "x"), ("limit", "10"))
W = ("get_weather", {"city": "Paris", "days": 3})
S = ("search", {"query": "x", "limit": 10})


def _text(case_id: str, text: str, **kw) -> Case:
    """Not a call: the text, byte for byte."""
    return Case(case_id, text, content=text, **kw)


CASES = [
    # -- calls as the model writes them
    Case("single", WEATHER, calls=[W], ids=["call00000"]),
    Case("pairs-back-to-back", call("get_weather", ("city", "Paris"), ("days", "3"), sep=""), calls=[W]),
    Case(
        "whitespace-between-pairs",
        f"{START}get_weather\n  {pair('city', 'Paris')} \t\n\n{pair('days', '3')}  {END}",
        calls=[W],
    ),
    Case("text-before", "Let me check.\n" + WEATHER, content="Let me check.\n", calls=[W]),
    Case("text-around", "Checking. " + WEATHER + " Done.", content="Checking.  Done.", calls=[W]),
    Case(
        "parallel-newline",
        WEATHER + "\n" + SEARCH,
        content="\n",
        calls=[W, S],
        ids=["call00000", "call00001"],
    ),
    Case("parallel-back-to-back", WEATHER + SEARCH, calls=[W, S]),
    Case("no-arguments", f"{START}get_time\n{END}", calls=[("get_time", {})]),
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
    # the value opens right after <|tool_arg:value|>: whitespace on either side is the value's
    Case(
        "whitespace-in-value-kept",
        call("set_port", ("blob", "\n  two\n lines \n")),
        calls=[("set_port", {"blob": "\n  two\n lines \n"})],
    ),
    Case("empty-value", call("set_port", ("blob", "")), calls=[("set_port", {"blob": ""})]),
    Case(
        "unicode-and-escapes",
        call("get_weather", ("city", 'Zürich "q" \\n 東京 🌧')),
        calls=[("get_weather", {"city": 'Zürich "q" \\n 東京 🌧'})],
    ),
    # the call and reasoning tags in a value are its text (the call's end does not end the call)
    Case(
        "markers-inside-value",
        call("set_port", ("blob", f"a {END}{START} b {END}\n{T_START} <|im:end|> <|tool_call:begin|>")),
        calls=[("set_port", {"blob": f"a {END}{START} b {END}\n{T_START} <|im:end|> <|tool_call:begin|>"})],
    ),
    Case("unknown-tool-untyped", call("other_tool", ("n", "5")), calls=[("other_tool", {"n": "5"})]),
    Case(
        "name-with-dots-and-dashes",
        call("mcp.files-read", ("path", "/tmp")),
        calls=[("mcp.files-read", {"path": "/tmp"})],
    ),
    # -- reasoning (the generation prompt opens the block: a reply starts inside it)
    Case(
        "prompt-opened-reasoning-then-call",
        "The user wants the weather." + T_END + WEATHER + "\n",
        in_reasoning=True,
        reasoning="The user wants the weather.",
        content="\n",
        calls=[W],
    ),
    Case(
        "orphan-close-then-call",
        "The user wants the weather." + T_END + WEATHER,
        reasoning="The user wants the weather.",
        calls=[W],
    ),
    Case(
        "think-then-call",
        T_START + "plan" + T_END + WEATHER,
        reasoning="plan",
        calls=[W],
    ),
    Case("thinking-off-empty-block", T_END + "Hello there.", in_reasoning=True, content="Hello there."),
    Case(
        "call-in-closed-reasoning",
        T_START + "maybe " + WEATHER + " no" + T_END + "Hi",
        reasoning="maybe " + WEATHER + " no",
        content="Hi",
    ),
    Case(
        "orphan-close-answer",
        "thinking" + T_END + "The answer is 4.",
        reasoning="thinking",
        content="The answer is 4.",
    ),
    # -- cut by the token limit
    Case(
        "cut-second-call",
        WEATHER + "\n" + f"{START}search\n{A_START}query{A_VALUE}x",
        truncated=True,
        content="\n",
        calls=[W],
        incomplete=["search"],
    ),
    Case("cut-in-end-tag", WEATHER[:-5], truncated=True, incomplete=["get_weather"]),
    Case(
        "cut-in-value",
        f"{START}get_weather\n{A_START}city{A_VALUE}Par",
        truncated=True,
        incomplete=["get_weather"],
    ),
    Case(
        "cut-after-value-end",
        f"{START}get_weather\n{pair('city', 'Paris')}",
        truncated=True,
        incomplete=["get_weather"],
    ),
    # the name is known once its newline is written: before it, the name may itself be cut
    Case("cut-in-name", f"{START}get_wea", truncated=True, incomplete=[None]),
    Case("cut-after-name", f"{START}get_weather\n", truncated=True, incomplete=["get_weather"]),
    Case("cut-after-opener", START, truncated=True, incomplete=[None]),
    # -- not a call: text
    _text("missing-end", f"{START}get_time\n"),
    _text("missing-end-with-args", f"{START}get_weather\n{pair('city', 'Paris')}\n"),
    # vLLM ends a call at the next <|tool_call:start|>: Callisto does not (the region then runs to
    # the next call's end, and the two calls are text)
    _text("missing-end-before-next-call", f"{START}get_time\n" + WEATHER),
    _text(
        "missing-arg-end-before-call-end",
        f"{START}get_weather\n{A_START}city{A_VALUE}Paris\n{END}",
    ),
    _text(
        "duplicate-key",
        call("get_weather", ("city", "A"), ("city", "B")),
    ),
    # a value runs to its first <|tool_arg:end|> and holds no other argument tag: one there means a
    # tag was lost (vLLM would end the value at the next key); the call is text
    _text(
        "missing-arg-end-before-next-key",
        f"{START}get_weather\n{A_START}city{A_VALUE}Paris{A_START}days{A_VALUE}3{A_END}\n{END}",
    ),
    _text("arg-end-inside-value", call("set_port", ("blob", f"a{A_END} b"), ("port", "1"))),
    _text("key-tag-inside-value", call("set_port", ("blob", f"a {A_START} b"))),
    _text("value-tag-inside-value", call("set_port", ("blob", f"a {A_VALUE} b"))),
    # a value missing its end swallows the next call: both are text, no call is made up
    Case(
        "missing-arg-end-then-call",
        f"{START}get_weather\n{A_START}city{A_VALUE}Paris\n{END}\n" + WEATHER,
        content=f"{START}get_weather\n{A_START}city{A_VALUE}Paris\n{END}\n" + WEATHER,
    ),
    _text("no-newline-after-name", f"{START}get_weather{pair('city', 'Paris')}{END}"),
    _text("space-after-name", f"{START}get_weather \n{pair('city', 'Paris')}\n{END}"),
    _text("space-before-name", f"{START} get_weather\n{pair('city', 'Paris')}\n{END}"),
    _text("empty-name", f"{START}\n{pair('city', 'Paris')}\n{END}"),
    _text("two-words-name", f"{START}get weather\n{END}"),
    _text("key-with-spaces", f"{START}get_weather\n{pair(' city ', 'Paris')}\n{END}"),
    _text("empty-key", f"{START}get_weather\n{pair('', 'Paris')}\n{END}"),
    _text("key-without-value", f"{START}get_weather\n{A_START}city{A_END}\n{END} ok"),
    _text("value-without-key", f"{START}get_weather\n{A_VALUE}Paris{A_END}\n{END}"),
    _text(
        "stray-text-between-pairs", f"{START}get_weather\n{pair('city', 'P')} and {pair('days', '3')}\n{END}"
    ),
    _text("stray-text-before-end", f"{START}get_weather\n{pair('city', 'P')}\nthat's it{END}"),
    _text("wrong-nesting", f"{START}get_weather\n{A_VALUE}{A_START}city{A_END}Paris\n{END}"),
    _text("stray-end-tag", f"Done.{END} and {A_END}"),
    _text(
        "solar-open-wire",
        '<|tool_calls|><|tool_call:begin|>a1b2c3d4e5<|tool_call:name|>get_weather<|tool_call:args|>{"city": "Paris"}'
        "<|tool_call:end|><|calls|>",
    ),
    _text(
        "glm-tags",
        "<tool_call>get_weather\n<arg_key>city</arg_key>\n<arg_value>Paris</arg_value>\n</tool_call>",
    ),
    _text("json-inside", f'{START}{{"name": "get_weather", "arguments": {{"city": "Paris"}}}}\n{END}'),
    _text("uppercase-variant", "<|TOOL_CALL:START|>get_time\n<|TOOL_CALL:END|>"),
    _text("partial-marker-text", "a <|tool_call: and <|tool_ and <|tool_arg:value are text"),
    _text("plain-text", "Just an answer with <b>markup</b> and <|im:content|> words."),
    Case(
        "malformed-then-valid",
        f"{START}get_time {END}\n" + WEATHER,
        content=f"{START}get_time {END}\n",
        calls=[W],
    ),
]

# The closing reasoning tag inside an argument: part of the call in every reasoning state.
CASES += close_tag_in_argument_cases(
    (T_START, T_END),
    call("set_port", ("blob", f"why {T_START} and {T_END} here")),
    ("set_port", {"blob": f"why {T_START} and {T_END} here"}),
    START,
)


def _fuzz_write(fmt, name, args, rnd):
    # The template's layout (a newline after each pair), or other whitespace, or none.
    sep = rnd.choice(("\n", "", " \n "))
    return call(name, *args.items(), sep=sep)


FUZZ = Fuzz(
    markers=(END, A_START, A_VALUE, A_END),
    forbidden=(A_START, A_VALUE, A_END),
    write=_fuzz_write,
)

# -- settings, tiny models (tests/engine/formats/test_added_families.py)

SETTING_WORDS = ("Solar Open2", "Solar Pro 4")

# No published Solar Open2 / Solar Pro 4 template was found (find_string "<|tool_call:start|>",
# "<|tool_arg:start|>", "<|im:start|>": vLLM's parser and its tests, and third-party servers that
# render the model's prompt in code). The stand-in renders what those servers document: the
# system text "## System Prompt" then "## Tools" with each tool's schema between <|tool:start|>
# and <|tool:end|> and the call format spelt out; turns <|im:start|>ROLE<|im:content|>...<|im:end|>;
# an assistant turn <|think:start|>REASONING<|think:end|>CONTENT then its calls (a newline
# between calls and after the last); tool results grouped in one tool turn, each between
# <|tool_response:start|> and <|tool_response:end|>; the generation prompt opens the reasoning
# (and closes it at once when thinking is off).
NL = "{{ '\\n' }}"  # a newline right after a block tag (the renderer trims the one written there)
STAND_IN = (
    "{% set systems = messages | selectattr('role', 'equalto', 'system') | list %}"
    "{% if systems or tools %}<|im:start|>system<|im:content|>"
    "{% if systems %}## System Prompt{% for m in systems %}" + NL + "\n{{ m.content }}{% endfor %}{% endif %}"
    "{% if tools %}{% if systems %}" + NL + "\n{% endif %}## Tools\n"
    "- You may invoke one or more tools to assist with the user's query.\n\n### Available Tools\n"
    "{% for t in tools %}<|tool:start|>{{ t | tojson }}<|tool:end|>" + NL + "{% endfor %}" + NL + ""
    "### Tool Call Instruction\n- Each tool call MUST use this format: <|tool_call:start|>{tool-name}\n"
    "<|tool_arg:start|>{key}<|tool_arg:value|>{value}<|tool_arg:end|>\n<|tool_call:end|>" + NL + "{% endif %}"
    "<|im:end|>" + NL + "{% endif %}"
    "{% for m in messages %}"
    "{% if m.role == 'user' %}<|im:start|>user<|im:content|>{{ m.content }}<|im:end|>" + NL + ""
    "{% elif m.role == 'tool' %}"
    "{% if loop.first or loop.previtem.role != 'tool' %}<|im:start|>tool<|im:content|>{% else %}"
    + NL
    + "{% endif %}"
    "<|tool_response:start|>{{ m.content }}<|tool_response:end|>"
    "{% if loop.last or loop.nextitem.role != 'tool' %}" + NL + "<|im:end|>" + NL + "{% endif %}"
    "{% elif m.role == 'assistant' %}<|im:start|>assistant<|im:content|><|think:start|>"
    "{{ m.reasoning_content or '' }}<|think:end|>{{ m.content or '' }}"
    "{% for c in m.tool_calls or [] %}{% if not loop.first %}" + NL + "{% endif %}"
    "<|tool_call:start|>{{ c.function.name }}" + NL + ""
    "{% for k, v in c.function.arguments.items() %}<|tool_arg:start|>{{ k }}<|tool_arg:value|>"
    "{{ v if v is string else (v | tojson) }}<|tool_arg:end|>"
    + NL
    + "{% endfor %}<|tool_call:end|>{% endfor %}"
    "{% if m.tool_calls %}" + NL + "{% endif %}<|im:end|>" + NL + ""
    "{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im:start|>assistant<|im:content|><|think:start|>"
    "{% if enable_thinking is defined and not enable_thinking %}<|think:end|>{% endif %}{% endif %}"
)

TINY_MODELS = [
    (
        "stand-in:solar-open2",
        ["<|im:start|>", "<|im:content|>", "<|im:end|>"],
        [
            "<|think:start|>",
            "<|think:end|>",
            "<|tool:start|>",
            "<|tool:end|>",
            "<|tool_call:start|>",
            "<|tool_call:end|>",
            "<|tool_arg:start|>",
            "<|tool_arg:value|>",
            "<|tool_arg:end|>",
            "<|tool_response:start|>",
            "<|tool_response:end|>",
        ],
        None,
        "<|im:end|>",
    )
]

# One call whose value holds the family's markers (test_added_families' cost cases): the call and
# reasoning tags a value may hold as text
COST_VALUE = f"a {END}{START} x {T_END} {T_START} <|im:end|> b"
