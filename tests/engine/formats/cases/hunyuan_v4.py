"""Hunyuan V4 (Hy4-preview): Hy3's ``<tool_calls{S}><tool_call{S}>NAME<arg_key{S}>K</arg_key{S}>
<arg_value{S}>V</arg_value{S}></tool_call{S}></tool_calls{S}>`` without ``<tool_sep>``, ``S`` the
checkpoint's code (``:6124c78e``) or empty.

The unsuffixed spelling's calls are GLM's ``<tool_call>`` elements inside a section, so GLM reads
them too: its positive cases live in ``tests/engine/formats/test_hunyuan_v4.py`` (every check but
the cross-family one); here only its text cases."""

import re

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "hunyuan-v4"

T = ":6124c78e"


def tags(s):
    return {
        "op": f"<tool_calls{s}>",
        "cl": f"</tool_calls{s}>",
        "c": f"<tool_call{s}>",
        "ce": f"</tool_call{s}>",
        "k": f"<arg_key{s}>",
        "ke": f"</arg_key{s}>",
        "v": f"<arg_value{s}>",
        "ve": f"</arg_value{s}>",
    }


def call(name, s=T, **args):
    t = tags(s)
    body = "".join(f"{t['k']}{k}{t['ke']}{t['v']}{v}{t['ve']}\n" for k, v in args.items())
    return f"{t['c']}{name}\n{body}{t['ce']}\n"


def section(*calls, s=T):
    t = tags(s)
    return t["op"] + "\n" + "".join(calls) + t["cl"]


OP, CL = f"<tool_calls{T}>", f"</tool_calls{T}>"
C, CE = f"<tool_call{T}>", f"</tool_call{T}>"
K, KE = f"<arg_key{T}>", f"</arg_key{T}>"
V, VE = f"<arg_value{T}>", f"</arg_value{T}>"
THINK, UNTHINK = f"<think{T}>", f"</think{T}>"

W = call("get_weather", city="Paris", days="3")
S = call("search", query="x", limit="10")
ONE = section(W)
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})
COMPACT = f"{OP}{C}get_weather{K}city{KE}{V}Paris{VE}{K}days{KE}{V}3{VE}{CE}{CL}"
NEWLINE_LAYOUT = f"{OP}\n{C}get_weather\n{K}city{KE}\n{V}Paris{VE}\n{K}days{KE}\n{V}3{VE}\n{CE}\n{CL}"
HY3 = ":opensource"
HY3_CALL = section(f"<tool_call{HY3}>get_time</tool_call{HY3}>\n", s=HY3)
MIXED = f"{OP}\n<tool_call:ab12>get_time</tool_call:ab12>\n{CL}"
MIXED_PLAIN = f"<tool_calls>\n{C}get_time{CE}\n</tool_calls>"
MIXED_ARGS = f"{OP}{C}set_port<arg_key:ab12>blob</arg_key:ab12>{V}x{VE}{CE}{CL}"
WITH_SEP = f"{OP}{C}get_time<tool_sep{T}>\n{CE}{CL}"

CASES = [
    Case("single", ONE, calls=[PW], ids=["call00000"]),
    Case("parallel", section(W, S), calls=[PW, PS]),
    Case("compact", COMPACT, calls=[PW]),
    Case("newline-between-key-and-value", NEWLINE_LAYOUT, calls=[PW]),
    Case("text-before", "Checking.\n" + ONE, content="Checking.\n", calls=[PW]),
    Case("text-after", ONE + "\nDone.", content="\nDone.", calls=[PW]),
    Case("zero-args", f"{OP}{C}get_time{CE}{CL}", calls=[("get_time", {})]),
    Case("name-padded", f"{OP}\n{C} get_time \n{CE}\n{CL}", calls=[("get_time", {})]),
    Case(
        "raw-values-typed",
        section(
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
        section(call("set_port", port="8080", flag="true")),
        calls=[("set_port", {"port": "8080", "flag": "true"})],
    ),
    Case(
        "value-whitespace-kept",
        section(call("set_port", blob="  two\nlines ")),
        calls=[("set_port", {"blob": "  two\nlines "})],
    ),
    Case(
        "markers-inside-value",
        section(call("set_port", blob=f"{CL} {C}x {CE} <tool_calls:ab12> {K}")),
        calls=[("set_port", {"blob": f"{CL} {C}x {CE} <tool_calls:ab12> {K}"})],
    ),
    Case("unknown-tool-read", section(call("other_tool", n="5")), calls=[("other_tool", {"n": "5"})]),
    # -- another checkpoint's code: one code per section, any code per reply
    Case("other-code", section(call("get_time", s=":ab12"), s=":ab12"), calls=[("get_time", {})]),
    Case(
        "long-code",
        section(call("get_time", s=":" + "f" * 64), s=":" + "f" * 64),
        calls=[("get_time", {})],
    ),
    Case(
        "two-codes-two-sections",
        ONE + "\n" + section(call("get_time", s=":0"), s=":0"),
        content="\n",
        calls=[PW, ("get_time", {})],
    ),
    # -- reasoning
    Case("think-block", THINK + "plan" + UNTHINK + ONE, reasoning="plan", calls=[PW]),
    Case("prefilled-think", "plan" + UNTHINK + ONE, in_reasoning=True, reasoning="plan", calls=[PW]),
    Case("plain-think-block", "<think>plan</think>" + ONE, reasoning="plan", calls=[PW]),
    Case("empty-think-then-answer", THINK + UNTHINK + "Hello", content="Hello"),
    Case(
        "call-in-closed-reasoning",
        THINK + "maybe " + ONE + " no" + UNTHINK + "Hi",
        reasoning="maybe " + ONE + " no",
        content="Hi",
    ),
    Case(
        "section-ends-unclosed-reasoning", "plan\n" + ONE, in_reasoning=True, reasoning="plan\n", calls=[PW]
    ),
    # -- reasoning in another checkpoint's spelling: one spelling per reply
    Case("other-code-think-block", "<think:ab12>plan</think:ab12>Hi", reasoning="plan", content="Hi"),
    Case(
        "other-code-think-then-section",
        "<think:ab12>plan</think:ab12>" + section(call("get_time", s=":ab12"), s=":ab12"),
        reasoning="plan",
        calls=[("get_time", {})],
    ),
    Case(
        "long-code-think-block",
        f"<think:{'0' * 64}>plan</think:{'0' * 64}>Hi",
        reasoning="plan",
        content="Hi",
    ),
    Case("other-code-prefilled", "plan</think:ab12>Hi", in_reasoning=True, reasoning="plan", content="Hi"),
    Case("other-code-empty-block-no-orphan", "</think:ab12>Hi", content="Hi", orphan_close=False),
    Case(
        "other-code-think-then-written-call",
        "<think:ab12>plan</think:ab12>" + ONE,
        reasoning="plan",
        calls=[PW],
    ),
    # The reply's opening tag fixes its spelling: a closing tag in another one is reasoning text.
    Case("mixed-think-codes", "<think:ab12>plan</think:cd34>Hi", reasoning="plan</think:cd34>Hi"),
    Case(
        "mixed-think-code-and-plain",
        f"{THINK}plan</think>Hi{UNTHINK}ok",
        reasoning="plan</think>Hi",
        content="ok",
    ),
    Case(
        "mixed-think-plain-and-code",
        f"<think>plan{UNTHINK}Hi</think>ok",
        reasoning=f"plan{UNTHINK}Hi",
        content="ok",
    ),
    # Without an opening tag, the first closing tag fixes it.
    Case(
        "prefilled-first-close-fixes-code",
        "plan</think:ab12>mid</think:cd34>end",
        in_reasoning=True,
        reasoning="plan",
        content="mid</think:cd34>end",
    ),
    Case(
        "prefilled-close-in-argument-fixes-code",
        "plan " + section(call("set_port", blob="a </think> b")) + " no." + UNTHINK + "Answer",
        in_reasoning=True,
        reasoning="plan ",
        content=" no." + UNTHINK + "Answer",
        calls=[("set_port", {"blob": "a </think> b"})],
    ),
    # Not a think tag: text (and reasoning stays open where it was).
    Case(
        "uppercase-think-code", "<think:AB12>plan</think:AB12>Hi", content="<think:AB12>plan</think:AB12>Hi"
    ),
    Case("empty-think-code", "<think:>plan</think:>Hi", content="<think:>plan</think:>Hi"),
    Case(
        "think-code-too-long",
        f"<think:{'f' * 65}>plan</think:{'f' * 65}>Hi",
        content=f"<think:{'f' * 65}>plan</think:{'f' * 65}>Hi",
    ),
    Case(
        "prefilled-broken-close",
        "plan</think:ab1x>more</think:ab1",
        in_reasoning=True,
        reasoning="plan</think:ab1x>more</think:ab1",
    ),
    # -- cut by the token limit
    Case(
        "cut-in-second-call",
        OP + "\n" + W + f"{C}search\n{K}qu",
        truncated=True,
        content="\n",
        calls=[PW],
        incomplete=["search"],
    ),
    Case("cut-in-section-close", OP + "\n" + W + "</tool_ca", truncated=True, calls=[PW]),
    Case("cut-after-last-call", OP + "\n" + W, truncated=True, calls=[PW]),
    Case("cut-in-first-call", OP + f"\n{C}get_wea", truncated=True, incomplete=[None]),
    Case("cut-in-code", "Sure. <tool_calls:6124", truncated=True, content="Sure. ", incomplete=[None]),
    # -- not this family's shapes: text, byte for byte
    Case("plain-text", "Use a <tool_calls: x> tag.", content="Use a <tool_calls: x> tag."),
    Case("call-without-section", W, content=W),
    Case("section-not-closed-at-eos", OP + "\n" + W, content=OP + "\n" + W, stable_prefix=False),
    Case("hy3-code-is-text", HY3_CALL, content=HY3_CALL),
    Case("hy3-with-sep-is-text", WITH_SEP, content=WITH_SEP),
    Case("uppercase-code", "<tool_calls:AB12>\n", content="<tool_calls:AB12>\n"),
    Case("empty-code", "<tool_calls:>\n", content="<tool_calls:>\n"),
    Case("code-too-long", "<tool_calls:" + "f" * 65 + ">", content="<tool_calls:" + "f" * 65 + ">"),
    Case("code-not-closed-at-eos", "<tool_calls:6124c78e", content="<tool_calls:6124c78e"),
    Case("mixed-codes", MIXED, content=MIXED),
    Case("mixed-code-and-plain", MIXED_PLAIN, content=MIXED_PLAIN),
    Case("mixed-codes-in-args", MIXED_ARGS, content=MIXED_ARGS),
    Case("text-inside-section", OP + "hello" + W + CL, content=OP + "hello" + W + CL),
    Case("text-after-call-in-section", OP + W + "ok" + CL, content=OP + W + "ok" + CL, stable_prefix=False),
    Case("empty-section", OP + "\n" + CL, content=OP + "\n" + CL),
    Case(
        "missing-name", f"{OP}{C}{K}city{KE}{V}x{VE}{CE}{CL}", content=f"{OP}{C}{K}city{KE}{V}x{VE}{CE}{CL}"
    ),
    Case("call-not-closed", f"{OP}{C}get_time{CL}", content=f"{OP}{C}get_time{CL}"),
    Case(
        "wrong-nesting",
        f"{OP}{C}get_weather{K}city{V}Paris{KE}{VE}{CE}{CL}",
        content=f"{OP}{C}get_weather{K}city{V}Paris{KE}{VE}{CE}{CL}",
    ),
    Case(
        "duplicate-key",
        section(call("get_weather", city="a").replace(CE, f"{K}city{KE}{V}b{VE}{CE}")),
        content=section(call("get_weather", city="a").replace(CE, f"{K}city{KE}{V}b{VE}{CE}")),
    ),
    Case(
        "json-list-is-text",
        OP + '[{"name": "get_time"}]' + CL,
        content=OP + '[{"name": "get_time"}]' + CL,
    ),
    Case(
        "plain-json-list-is-text",
        '<tool_calls>[{"name": "get_time"}]</tool_calls>',
        content='<tool_calls>[{"name": "get_time"}]</tool_calls>',
    ),
]

CASES += close_tag_in_argument_cases(
    (THINK, UNTHINK),
    section(call("set_port", blob=f"why {THINK} and {UNTHINK} here")),
    ("set_port", {"blob": f"why {THINK} and {UNTHINK} here"}),
    OP,
)

CODES = ("", T, ":ab12", ":" + "f" * 64)


def _fuzz_reply(fmt, calls, texts, reasoning, rnd):
    """The reasoning block in a random checkpoint's spelling, then the texts with the calls
    (Hy4-preview's spelling) between them."""
    s = rnd.choice(CODES)
    parts = [] if reasoning is None else [f"<think{s}>{reasoning}</think{s}>"]
    for i, t in enumerate(texts):
        parts.append(t)
        if i < len(calls):
            parts.append(fmt.example_call(*calls[i]))
    return "".join(parts), "".join(texts), reasoning or ""


# The section's tags are structure (each call's raw is its own <tool_call{S}> element); a value
# cannot hold its own closing tag. Think tags in any spelling are structure.
FUZZ = Fuzz(
    markers=(CL, C, CE, K, KE, V, VE, "<tool_calls>", "</tool_calls>", "<tool_call:ab12>", f"<tool_sep{T}>"),
    structure=(
        re.escape(OP),
        re.escape(CL),
        "(?:" + "|".join(re.escape(CL[:k]) for k in range(1, len(CL))) + r")\Z",
        r"</?think(?::[0-9a-f]{1,64})?>",
    ),
    wrap=(OP, CL),
    forbidden=(VE,),
    reply=_fuzz_reply,
)

SETTING_WORDS = ("Hunyuan V4", "HY V4", "Hy4-preview")

# No published template was found in reach (third-party code describes Hy4-preview's: Hy3's
# template with {% set HYTK = ':6124c78e' %} and no <tool_sep>). The stand-in renders what that
# and vLLM's parser document: Hunyuan's role tokens, the generation prompt opening <think{S}>,
# past calls as the section above.
STAND_IN = (
    "{%- set S = ':6124c78e' %}<｜hy_begin▁of▁sentence｜>"
    "{%- for m in messages if m.role == 'system' %}{{ m.content }}\n{% endfor %}"
    "{%- if tools %}# Tools\nYou may call these tools:\n{% for t in tools %}{{ t | tojson }}\n{% endfor %}"
    "To call tools, write:\n<tool_calls{{ S }}>\n<tool_call{{ S }}>NAME\n<arg_key{{ S }}>KEY</arg_key{{ S }}>"
    "<arg_value{{ S }}>VALUE</arg_value{{ S }}>\n</tool_call{{ S }}>\n</tool_calls{{ S }}>\n{% endif %}"
    "{%- for m in messages %}{% if m.role == 'user' %}<｜hy_User｜>{{ m.content }}"
    "{%- elif m.role == 'tool' %}<｜hy_User｜><tool_response>{{ m.content }}</tool_response>"
    "{%- elif m.role == 'assistant' %}<｜hy_Assistant｜><think{{ S }}>{{ m.reasoning_content or '' }}"
    "</think{{ S }}>{{ m.content or '' }}{% if m.tool_calls %}<tool_calls{{ S }}>\n{% for c in m.tool_calls %}"
    "<tool_call{{ S }}>{{ c.function.name }}\n{% for k, v in c.function.arguments.items() %}"
    "<arg_key{{ S }}>{{ k }}</arg_key{{ S }}><arg_value{{ S }}>{{ v if v is string else (v | tojson) }}"
    "</arg_value{{ S }}>\n{% endfor %}</tool_call{{ S }}>\n{% endfor %}</tool_calls{{ S }}>{% endif %}"
    "<｜hy_eos｜>{% endif %}{% endfor %}"
    "{%- if add_generation_prompt %}<｜hy_Assistant｜><think{{ S }}>{% endif %}"
)

TINY_MODELS = [
    (
        "stand-in:hunyuan-v4",
        ["<｜hy_begin▁of▁sentence｜>", "<｜hy_User｜>", "<｜hy_Assistant｜>", "<｜hy_eos｜>"],
        [OP, CL, C, CE, K, KE, V, VE, THINK, UNTHINK],
        "<｜hy_begin▁of▁sentence｜>",
        "<｜hy_eos｜>",
    )
]

# One call whose value holds the family's markers (for the linear-cost test, if it reads these).
COST_VALUE = f"a {CL} {CE} <tool_calls:ab12> {UNTHINK} b"

# A value whose closing tag was left out or written amiss swallows the next pair (a wrong value,
# an argument lost): the call is text.
SWALLOWED = [ONE.replace(VE, tag, 1) for tag in ("", VE[:-1] + "1>")]
CASES += [
    Case(f"value-close-{what}-swallows-the-next-pair-is-text", text, content=text)
    for what, text in zip(("left-out", "amiss"), SWALLOWED, strict=True)
]
