"""K2 Horizon (MBZUAI IFM): one ``<ifm|tool_calls>`` group of ``<ifm|tool_call>NAME`` calls with
``<ifm|arg_key>K</ifm|arg_key><ifm|arg_value>V</ifm|arg_value>`` pairs; ``<ifm|think>`` reasoning
(``<ifm|think_fast>`` / ``<ifm|think_faster>`` by effort)."""

import re

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "k2-horizon"

OP, CL = "<ifm|tool_calls>", "</ifm|tool_calls>"
C, CE = "<ifm|tool_call>", "</ifm|tool_call>"
K, KE = "<ifm|arg_key>", "</ifm|arg_key>"
V, VE = "<ifm|arg_value>", "</ifm|arg_value>"
TY, TYE = "<ifm|arg_type>", "</ifm|arg_type>"
THINK, UNTHINK = "<ifm|think>", "</ifm|think>"
FAST, UNFAST = "<ifm|think_fast>", "</ifm|think_fast>"
FASTER, UNFASTER = "<ifm|think_faster>", "</ifm|think_faster>"


def call(name, **args):
    body = "".join(f"{K}{k}{KE}\n{V}{v}{VE}\n" for k, v in args.items())
    return f"{C}{name}\n{body}{CE}\n"


def group(*calls):
    return OP + "\n" + "".join(calls) + CL


W = call("get_weather", city="Paris", days="3")
S = call("search", query="x", limit="10")
ONE = group(W)
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})
COMPACT = f"{OP}{C}get_weather{K}city{KE}{V}Paris{VE}{K}days{KE}{V}3{VE}{CE}{CL}"
TYPED = f"{OP}\n{C}get_weather\n{K}city{KE}\n{TY}string{TYE}\n{V}Paris{VE}\n{CE}\n{CL}"
JSON_BODY = f'{OP}\n{C}{{"name": "get_weather", "arguments": {{"city": "Paris"}}}}{CE}\n{CL}'

CASES = [
    Case("single", ONE, calls=[PW], ids=["call00000"]),
    Case("parallel", group(W, S), calls=[PW, PS]),
    Case("three-calls", group(W, S, call("get_time")), calls=[PW, PS, ("get_time", {})]),
    Case("compact", COMPACT, calls=[PW]),
    Case("text-before", "Checking.\n" + ONE, content="Checking.\n", calls=[PW]),
    Case("text-after", ONE + "\nDone.", content="\nDone.", calls=[PW]),
    Case("zero-args", f"{OP}{C}get_time{CE}{CL}", calls=[("get_time", {})]),
    Case("zero-args-newlines", f"{OP}\n{C}get_time\n{CE}\n{CL}", calls=[("get_time", {})]),
    Case("name-padded", f"{OP}{C} get_time \n{CE}{CL}", calls=[("get_time", {})]),
    Case(
        "raw-values-typed",
        group(
            call(
                "search",
                query="08080",
                limit="7",
                tags='["a", "b"]',
                filters='{"year": "2020"}',
                score="null",
            )
        ),
        calls=[
            (
                "search",
                {"query": "08080", "limit": 7, "tags": ["a", "b"], "filters": {"year": 2020}, "score": None},
            )
        ],
    ),
    Case(
        "string-props-keep-text",
        group(call("set_port", port="8080", flag="true")),
        calls=[("set_port", {"port": "8080", "flag": "true"})],
    ),
    Case(
        "value-whitespace-kept",
        group(call("set_port", blob="  two\nlines ")),
        calls=[("set_port", {"blob": "  two\nlines "})],
    ),
    Case(
        "markers-inside-value",
        group(call("set_port", blob=f"{CL} {C}x {CE} {OP} {K}")),
        calls=[("set_port", {"blob": f"{CL} {C}x {CE} {OP} {K}"})],
    ),
    Case("unknown-tool-read", group(call("other_tool", n="5")), calls=[("other_tool", {"n": "5"})]),
    Case("two-groups", ONE + "\n" + ONE, content="\n", calls=[PW, PW]),
    # -- reasoning
    Case("think-block", THINK + "plan" + UNTHINK + ONE, reasoning="plan", calls=[PW]),
    Case(
        "prefilled-think",
        "plan" + UNTHINK + "\n" + ONE,
        in_reasoning=True,
        reasoning="plan",
        content="\n",
        calls=[PW],
    ),
    Case("think-fast-block", FAST + "plan" + UNFAST + ONE, reasoning="plan", calls=[PW]),
    Case("think-faster-block", FASTER + "plan" + UNFASTER + "Hi", reasoning="plan", content="Hi"),
    # The 3.7B ends medium and low effort reasoning with </ifm|think>.
    Case("think-fast-closed-by-think", FAST + "plan" + UNTHINK + ONE, reasoning="plan", calls=[PW]),
    Case("prefilled-fast-closed", "plan" + UNFAST + "Hi", in_reasoning=True, reasoning="plan", content="Hi"),
    Case("empty-think-then-answer", THINK + UNTHINK + "Hello", content="Hello"),
    Case(
        "call-in-closed-reasoning",
        THINK + "maybe " + ONE + " no" + UNTHINK + "Hi",
        reasoning="maybe " + ONE + " no",
        content="Hi",
    ),
    Case("group-ends-unclosed-reasoning", "plan\n" + ONE, in_reasoning=True, reasoning="plan\n", calls=[PW]),
    # -- cut by the token limit
    Case(
        "cut-in-second-call",
        OP + "\n" + W + f"{C}search\n{K}qu",
        truncated=True,
        content="\n",
        calls=[PW],
        incomplete=["search"],
    ),
    Case("cut-in-group-close", OP + "\n" + W + "</ifm|tool_ca", truncated=True, calls=[PW]),
    Case("cut-after-last-call", OP + "\n" + W, truncated=True, calls=[PW]),
    Case("cut-in-first-call", OP + f"\n{C}get_wea", truncated=True, incomplete=[None]),
    Case(
        "cut-in-first-value",
        OP + f"\n{C}set_port\n{K}blob{KE}\n{V}ab",
        truncated=True,
        incomplete=["set_port"],
    ),
    # -- not this family's shapes: text, byte for byte
    Case("plain-text", "The weather in Paris is mild.", content="The weather in Paris is mild."),
    Case("call-without-group", W, content=W),
    Case("group-not-closed-at-eos", OP + "\n" + W, content=OP + "\n" + W, stable_prefix=False),
    Case("text-inside-group", OP + "hello" + W + CL, content=OP + "hello" + W + CL),
    Case("text-after-call-in-group", OP + W + "ok" + CL, content=OP + W + "ok" + CL, stable_prefix=False),
    Case("empty-group", OP + "\n" + CL, content=OP + "\n" + CL),
    Case(
        "missing-name", f"{OP}{C}{K}city{KE}{V}x{VE}{CE}{CL}", content=f"{OP}{C}{K}city{KE}{V}x{VE}{CE}{CL}"
    ),
    Case("name-with-space", f"{OP}{C}get weather{CE}{CL}", content=f"{OP}{C}get weather{CE}{CL}"),
    Case("call-not-closed", f"{OP}{C}get_time{CL}", content=f"{OP}{C}get_time{CL}"),
    Case(
        "wrong-nesting",
        f"{OP}{C}get_weather{K}city{V}Paris{KE}{VE}{CE}{CL}",
        content=f"{OP}{C}get_weather{K}city{V}Paris{KE}{VE}{CE}{CL}",
    ),
    Case(
        "value-not-closed",
        f"{OP}{C}set_port{K}blob{KE}{V}x{CE}{CL}",
        content=f"{OP}{C}set_port{K}blob{KE}{V}x{CE}{CL}",
    ),
    Case(
        "key-without-value",
        f"{OP}{C}set_port{K}blob{KE}{CE}{CL}",
        content=f"{OP}{C}set_port{K}blob{KE}{CE}{CL}",
    ),
    Case(
        "duplicate-key",
        group(call("get_weather", city="a").replace(CE, f"{K}city{KE}{V}b{VE}{CE}")),
        content=group(call("get_weather", city="a").replace(CE, f"{K}city{KE}{V}b{VE}{CE}")),
    ),
    Case("empty-key", group(call("set_port", **{" ": "x"})), content=group(call("set_port", **{" ": "x"}))),
    # The xml_typed and json bodies (chosen by a chat_template_kwargs switch) are not read.
    Case("typed-body-is-text", TYPED, content=TYPED),
    Case("json-body-is-text", JSON_BODY, content=JSON_BODY),
    Case("glm-tags", "<tool_call>get_time</tool_call>", content="<tool_call>get_time</tool_call>"),
    Case(
        "hy3-tags",
        "<tool_calls><tool_call>get_time</tool_call></tool_calls>",
        content="<tool_calls><tool_call>get_time</tool_call></tool_calls>",
    ),
]

CASES += close_tag_in_argument_cases(
    (THINK, UNTHINK),
    group(call("set_port", blob=f"why {THINK} and {UNTHINK} here")),
    ("set_port", {"blob": f"why {THINK} and {UNTHINK} here"}),
    OP,
)

# The group's tags are structure (each call's raw is its own <ifm|tool_call> element); a value
# cannot hold its own closing tag.
FUZZ = Fuzz(
    markers=(CL, C, CE, K, KE, V, VE, TY, TYE),
    structure=(
        re.escape(OP),
        re.escape(CL),
        "(?:" + "|".join(re.escape(CL[:k]) for k in range(1, len(CL))) + r")\Z",
    ),
    wrap=(OP, CL),
    forbidden=(VE,),
)

SETTING_WORDS = ("K2 Horizon", "IFM")

# No published template was found in reach (IFM's chat_template.jinja is described by third-party
# code only). The stand-in follows what llama.cpp's parser and third-party renderings document:
# ChatML-like <|ifm|im_start|> turns, the generation prompt opening <ifm|think>, past calls as
# the group above with a newline after the name and after each element.
STAND_IN = (
    "{%- set sys = messages | selectattr('role', 'equalto', 'system') | list %}"
    "{%- if sys or tools %}<|ifm|im_start|>system\n{% for m in sys %}{{ m.content }}\n{% endfor %}"
    "{%- if tools %}# Tools\nYou may call these tools:\n{% for t in tools %}{{ t | tojson }}\n{% endfor %}"
    "To call tools, write:\n<ifm|tool_calls>\n<ifm|tool_call>NAME\n<ifm|arg_key>KEY</ifm|arg_key>\n"
    "<ifm|arg_value>VALUE</ifm|arg_value>\n</ifm|tool_call>\n</ifm|tool_calls>\n{% endif %}"
    "<|ifm|im_end|>\n{% endif %}"
    "{%- for m in messages %}{% if m.role in ('user', 'tool') %}<|ifm|im_start|>{{ m.role }}\n"
    "{{ m.content }}<|ifm|im_end|>\n"
    "{%- elif m.role == 'assistant' %}<|ifm|im_start|>assistant\n<ifm|think>{{ m.reasoning_content or '' }}"
    "</ifm|think>{{ m.content or '' }}{% if m.tool_calls %}<ifm|tool_calls>\n{% for c in m.tool_calls %}"
    "<ifm|tool_call>{{ c.function.name }}\n{% for k, v in c.function.arguments.items() %}"
    "<ifm|arg_key>{{ k }}</ifm|arg_key>\n<ifm|arg_value>{{ v if v is string else (v | tojson) }}"
    "</ifm|arg_value>\n{% endfor %}</ifm|tool_call>\n{% endfor %}</ifm|tool_calls>{% endif %}"
    "<|ifm|im_end|>\n{% endif %}{% endfor %}"
    "{%- if add_generation_prompt %}<|ifm|im_start|>assistant\n<ifm|think>{% endif %}"
)

TINY_MODELS = [
    (
        "stand-in:k2-horizon",
        ["<|ifm|im_start|>", "<|ifm|im_end|>"],
        [OP, CL, C, CE, K, KE, V, VE, THINK, UNTHINK],
        None,
        "<|ifm|im_end|>",
    )
]

# One call whose value holds the family's markers (for the linear-cost test, if it reads these).
COST_VALUE = f"a {CL} {CE} {UNTHINK} b"

# A value whose closing tag was left out or written amiss swallows the next pair (a wrong value,
# an argument lost): the call is text.
SWALLOWED = [ONE.replace(VE, tag, 1) for tag in ("", VE[:-1] + "1>")]
CASES += [
    Case(f"value-close-{what}-swallows-the-next-pair-is-text", text, content=text)
    for what, text in zip(("left-out", "amiss"), SWALLOWED, strict=True)
]
