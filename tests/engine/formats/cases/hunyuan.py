"""Hunyuan (Hy3): ``<tool_calls:opensource><tool_call:opensource>NAME<tool_sep:opensource>`` and
``<arg_key:opensource>K</arg_key:opensource><arg_value:opensource>V</arg_value:opensource>`` pairs."""

import re

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "hunyuan"

T = ":opensource"
OP, CL = f"<tool_calls{T}>", f"</tool_calls{T}>"
EOS = f"<｜hy_eos{T}｜>"
THINK, UNTHINK = f"<think{T}>", f"</think{T}>"


def call(name, **args):
    body = "".join(
        f"<arg_key{T}>{k}</arg_key{T}>\n<arg_value{T}>{v}</arg_value{T}>\n" for k, v in args.items()
    )
    return f"<tool_call{T}>{name}<tool_sep{T}>\n{body}</tool_call{T}>\n"


W = call("get_weather", city="Paris", days="3")
S = call("search", query="x", limit="10")
ONE = OP + "\n" + W + CL
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})

CASES = [
    Case("single", ONE, calls=[PW], ids=["call00000"]),
    Case("with-eos", ONE + EOS, calls=[PW]),
    Case("parallel", OP + "\n" + W + S + CL, calls=[PW, PS]),
    Case("text-then-call", "Checking.\n" + ONE, content="Checking.\n", calls=[PW]),
    Case("compact", f"{OP}<tool_call{T}>get_time<tool_sep{T}></tool_call{T}>{CL}", calls=[("get_time", {})]),
    Case(
        "raw-values-typed",
        OP
        + call(
            "search", query="08080", limit="7", tags='["a", "b"]', filters='{"year": "2020"}', score="null"
        )
        + CL,
        calls=[
            (
                "search",
                {"query": "08080", "limit": 7, "tags": ["a", "b"], "filters": {"year": 2020}, "score": None},
            )
        ],
    ),
    Case(
        "string-props-keep-text",
        OP + call("set_port", port="8080", flag="true") + CL,
        calls=[("set_port", {"port": "8080", "flag": "true"})],
    ),
    Case(
        "value-whitespace-kept",
        OP + call("set_port", blob="  two\nlines ") + CL,
        calls=[("set_port", {"blob": "  two\nlines "})],
    ),
    Case(
        "markers-inside-value",
        OP + call("set_port", blob=f"{CL} <tool_call{T}>x") + CL,
        calls=[("set_port", {"blob": f"{CL} <tool_call{T}>x"})],
    ),
    # -- reasoning
    Case("think-block", THINK + "plan" + UNTHINK + ONE, reasoning="plan", calls=[PW]),
    Case("prefilled-think", "plan" + UNTHINK + ONE, in_reasoning=True, reasoning="plan", calls=[PW]),
    Case("empty-think-then-answer", THINK + UNTHINK + "Hello", content="Hello"),
    Case(
        "call-in-closed-reasoning",
        THINK + "maybe " + ONE + " no" + UNTHINK + "Hi",
        reasoning="maybe " + ONE + " no",
        content="Hi",
    ),
    # -- cut
    Case(
        "cut-in-second-call",
        OP + "\n" + W + f"<tool_call{T}>search<tool_sep{T}>\n<arg_key{T}>qu",
        truncated=True,
        content="\n",
        calls=[PW],
        incomplete=["search"],
    ),
    Case("cut-in-section-close", OP + "\n" + W + "</tool_ca", truncated=True, calls=[PW]),
    Case("cut-in-first-call", OP + f"\n<tool_call{T}>get_wea", truncated=True, incomplete=[None]),
    # -- not this family's shapes
    Case("call-without-section", W, content=W),
    Case("glm-tags", "<tool_call>get_time</tool_call>", content="<tool_call>get_time</tool_call>"),
    Case(
        "missing-sep",
        f"{OP}<tool_call{T}>get_time</tool_call{T}>{CL}",
        content=f"{OP}<tool_call{T}>get_time</tool_call{T}>{CL}",
    ),
    Case(
        "duplicate-key",
        OP
        + call("get_weather", city="a").replace(
            "</tool_call", f"<arg_key{T}>city</arg_key{T}><arg_value{T}>b</arg_value{T}></tool_call"
        )
        + CL,
        content=OP
        + call("get_weather", city="a").replace(
            "</tool_call", f"<arg_key{T}>city</arg_key{T}><arg_value{T}>b</arg_value{T}></tool_call"
        )
        + CL,
    ),
    Case("text-inside-section", OP + "hello" + W + CL, content=OP + "hello" + W + CL),
    Case("section-not-closed-at-eos", OP + "\n" + W, content=OP + "\n" + W, stable_prefix=False),
]

CASES += close_tag_in_argument_cases(
    (THINK, UNTHINK),
    OP + call("set_port", blob=f"why {THINK} and {UNTHINK} here") + CL,
    ("set_port", {"blob": f"why {THINK} and {UNTHINK} here"}),
    OP,
)

# Issue 27, deviation 4: without the tokenizer's ``:opensource`` suffix. Both spellings are read,
# one per section: a section mixing them is text.


def pcall(name, **args):
    body = "".join(f"<arg_key>{k}</arg_key>\n<arg_value>{v}</arg_value>\n" for k, v in args.items())
    return f"<tool_call>{name}<tool_sep>\n{body}</tool_call>\n"


POP, PCL, PEOS = "<tool_calls>", "</tool_calls>", "<｜hy_eos｜>"
PW_TEXT, PS_TEXT = pcall("get_weather", city="Paris", days="3"), pcall("search", query="x", limit="10")
PONE = POP + "\n" + PW_TEXT + PCL
PLAIN = [
    Case("i27-plain-single", PONE, calls=[PW]),
    Case("i27-plain-with-eos", PONE + PEOS, calls=[PW]),
    Case("i27-plain-parallel", POP + "\n" + PW_TEXT + PS_TEXT + PCL, calls=[PW, PS]),
    Case("i27-plain-text-around", "Checking.\n" + PONE + " ok", content="Checking.\n ok", calls=[PW]),
    Case(
        "i27-plain-markers-inside-value",
        POP + pcall("set_port", blob=f"{PCL} <tool_call>x {CL}") + PCL,
        calls=[("set_port", {"blob": f"{PCL} <tool_call>x {CL}"})],
    ),
    Case("i27-plain-think-block", "<think>plan</think>" + PONE, reasoning="plan", calls=[PW]),
    Case("i27-plain-prefilled-think", "plan</think>" + PONE, in_reasoning=True, reasoning="plan", calls=[PW]),
    Case(
        "i27-plain-call-in-closed-reasoning",
        "<think>maybe " + PONE + " no</think>Hi",
        reasoning="maybe " + PONE + " no",
        content="Hi",
    ),
    Case("i27-both-spellings-in-turn", ONE + "\n" + PONE, content="\n", calls=[PW, PW]),
    Case(
        "i27-plain-cut-in-second-call",
        POP + "\n" + PW_TEXT + "<tool_call>search<tool_sep>\n<arg_key>qu",
        truncated=True,
        content="\n",
        calls=[PW],
        incomplete=["search"],
    ),
    Case("i27-plain-cut-in-section-close", POP + "\n" + PW_TEXT + "</tool_ca", truncated=True, calls=[PW]),
    # Anything else stays text.
    Case("i27-mixed-spellings", POP + "\n" + W + PCL, content=POP + "\n" + W + PCL),
    Case("i27-mixed-spellings-other-way", OP + "\n" + PW_TEXT + CL, content=OP + "\n" + PW_TEXT + CL),
    Case("i27-plain-call-without-section", PW_TEXT, content=PW_TEXT),
    Case(
        "i27-plain-json-list-is-text",
        POP + '[{"name": "get_time"}]' + PCL,
        content=POP + '[{"name": "get_time"}]' + PCL,
    ),
    Case(
        "i27-plain-not-closed-at-eos", POP + "\n" + PW_TEXT, content=POP + "\n" + PW_TEXT, stable_prefix=False
    ),
]
CASES += PLAIN
_FIELDS = (
    "content",
    "reasoning",
    "calls",
    "in_reasoning",
    "truncated",
    "orphan_close",
    "stable_prefix",
    "incomplete",
)
# The plain section in every reasoning state (the suffixed think tags: a test helper tells orphan
# closes by the family's own tags).
CASES += [
    Case(f"i27-plain-{c.id}", c.text, **{k: getattr(c, k) for k in _FIELDS})
    for c in close_tag_in_argument_cases(
        (THINK, UNTHINK),
        POP + pcall("set_port", blob=f"why {THINK} and {UNTHINK} here") + PCL,
        ("set_port", {"blob": f"why {THINK} and {UNTHINK} here"}),
        POP,
    )
]

# The section's tags and the end token after it are structure (each call's raw is its own
# <tool_call:opensource> element); a value cannot hold its own closing tag.
FUZZ = Fuzz(
    markers=(
        CL,
        PCL,
        "<tool_call>",
        "</tool_call>",
        "<tool_sep>",
        "<arg_value>",
        "</arg_value>",
        PEOS,
        f"<tool_call{T}>",
        f"</tool_call{T}>",
        f"<tool_sep{T}>",
        f"<arg_key{T}>",
        f"</arg_key{T}>",
        f"<arg_value{T}>",
        f"</arg_value{T}>",
        EOS,
    ),
    structure=(
        re.escape(OP),
        re.escape(CL),
        re.escape(EOS),
        "(?:" + "|".join(re.escape(CL[:k]) for k in range(1, len(CL))) + r")\Z",
        re.escape(POP),
        re.escape(PCL),
        re.escape(PEOS),
        "(?:" + "|".join(re.escape(PCL[:k]) for k in range(1, len(PCL))) + r")\Z",
    ),
    wrap=(OP, CL),
    forbidden=(f"</arg_value{T}>",),
)

# A value whose closing tag was left out or written amiss swallows the next pair (a wrong value,
# an argument lost): the call is text.
SWALLOWED = [ONE.replace(f"</arg_value{T}>", tag, 1) for tag in ("", f"</arg_value{T}>"[:-1] + "1>")]
CASES += [
    Case(f"value-close-{what}-swallows-the-next-pair-is-text", text, content=text)
    for what, text in zip(("left-out", "amiss"), SWALLOWED, strict=True)
]
