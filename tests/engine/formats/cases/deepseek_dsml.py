"""DeepSeek V3.2 / V4 / V4.1: the ``｜DSML｜`` XML (raw string values, JSON for the rest)."""

import re

from tests.engine.formats.harness import Case, Fuzz

FAMILY = "deepseek-dsml"

D = "｜DSML｜"
FC, FCE = f"<{D}function_calls>", f"</{D}function_calls>"
TC, TCE = f"<{D}tool_calls>", f"</{D}tool_calls>"
SC, SCE = f"<{D} calls>", f"</{D} calls>"
IE, PE = f"</{D}invoke>", f"</{D}parameter>"


def p(key: str, value: str, string: bool | None = True) -> str:
    flag = "" if string is None else f' string="{"true" if string else "false"}"'
    return f'<{D}parameter name="{key}"{flag}>{value}{PE}\n'


def inv(name: str, *params: str) -> str:
    return f'<{D}invoke name="{name}">\n' + "".join(params) + IE + "\n"


W = inv("get_weather", p("city", "Paris"), p("days", "3", False))
PW = ("get_weather", {"city": "Paris", "days": 3})


def sec(*invokes: str, o: str = FC, c: str = FCE) -> str:
    return "\n\n" + o + "\n" + "".join(invokes) + c


CASES = [
    Case("v32-single", sec(W), content="\n\n", calls=[PW], ids=["call00000"]),
    Case("v4-tool-calls", sec(W, o=TC, c=TCE), content="\n\n", calls=[PW]),
    Case("v41-calls", sec(W, o=SC, c=SCE), content="\n\n", calls=[PW]),
    Case(
        "text-before-and-after",
        "Let me look." + sec(W) + "\nDone.",
        content="Let me look.\n\n\nDone.",
        calls=[PW],
    ),
    Case(
        "parallel",
        sec(W, inv("search", p("query", "cats"), p("limit", "5", False), p("tags", '["a", "b"]', False))),
        content="\n\n",
        calls=[PW, ("search", {"query": "cats", "limit": 5, "tags": ["a", "b"]})],
        ids=["call00000", "call00001"],
    ),
    Case(
        "think-then-call",
        "<think>The user wants weather.</think>" + sec(W),
        reasoning="The user wants weather.",
        content="\n\n",
        calls=[PW],
    ),
    Case(
        "prefilled-think",
        "weather needed</think>" + sec(W),
        in_reasoning=True,
        reasoning="weather needed",
        content="\n\n",
        calls=[PW],
    ),
    Case(
        "self-closing-invoke",
        sec(f'<{D}invoke name="get_time"/>\n'),
        content="\n\n",
        calls=[("get_time", {})],
    ),
    Case("empty-invoke", sec(inv("get_time")), content="\n\n", calls=[("get_time", {})]),
    Case(
        "whitespace-significant",
        sec(inv("set_port", p("blob", "  two\n lines \n"))),
        content="\n\n",
        calls=[("set_port", {"blob": "  two\n lines \n"})],
    ),
    Case(
        "numbers-stay-strings",
        sec(inv("set_port", p("port", "8080"), p("zip", "02139", False), p("flag", "true", False))),
        content="\n\n",
        calls=[("set_port", {"port": "8080", "zip": "02139", "flag": "true"})],
    ),
    Case(
        "no-string-attribute-typed-by-schema",
        sec(inv("get_weather", p("city", "Rome", None), p("days", "2", None))),
        content="\n\n",
        calls=[("get_weather", {"city": "Rome", "days": 2})],
    ),
    Case(
        "nested-json",
        sec(inv("search", p("query", "q"), p("filters", '{"year": 2020}', False), p("score", "null", False))),
        content="\n\n",
        calls=[("search", {"query": "q", "filters": {"year": 2020}, "score": None})],
    ),
    Case(
        "unicode-and-escapes",
        sec(inv("set_port", p("blob", 'Zürich 東京 "q" \\n <b>'))),
        content="\n\n",
        calls=[("set_port", {"blob": 'Zürich 東京 "q" \\n <b>'})],
    ),
    Case(
        "marker-inside-string-argument",
        sec(inv("set_port", p("blob", f'a {FCE} {IE} <{D}invoke name="x">'))),
        content="\n\n",
        calls=[("set_port", {"blob": f'a {FCE} {IE} <{D}invoke name="x">'})],
    ),
    Case(
        "param-end-inside-json-string",
        sec(inv("search", p("query", "q"), p("tags", f'["{PE}"]', False))),
        content="\n\n",
        calls=[("search", {"query": "q", "tags": [PE]})],
    ),
    Case(
        "bad-json-kept-as-text",
        sec(inv("search", p("query", "q"), p("limit", "ten", False))),
        content="\n\n",
        calls=[("search", {"query": "q", "limit": "ten"})],
    ),
    # The closing tag never came, the reply ended right after a complete invoke (sglang #40236):
    # the section's end is implied. Anything after the invoke makes it text.
    Case("missing-section-end", "\n\n" + FC + "\n" + W, content="\n\n\n", calls=[PW]),
    Case(
        "missing-section-end-then-text",
        "\n\n" + FC + "\n" + W + "Done.",
        content="\n\n" + FC + "\n" + W + "Done.",
        stable_prefix=False,
    ),
    # Cut at max_tokens: the cut call is an incomplete call, never content.
    Case(
        "cut-mid-parameter",
        sec(W).split("Paris")[0],
        truncated=True,
        content="\n\n",
        incomplete=["get_weather"],
    ),
    # Cut at max_tokens in the second invoke of a pair: the first counts, the cut one is incomplete.
    Case(
        "cut-second-invoke",
        "\n\n" + FC + "\n" + W + f'<{D}invoke name="get_ti',
        truncated=True,
        content="\n\n\n",
        calls=[PW],
        incomplete=[None],
    ),
    Case(
        "cut-after-invoke",
        "\n\n" + FC + "\n" + W,
        truncated=True,
        content="\n\n\n",
        calls=[PW],
        stable_prefix=False,
    ),
    Case(
        "mismatched-section-end",
        "\n\n" + FC + "\n" + W + TCE,
        content="\n\n" + FC + "\n" + W + TCE,
        stable_prefix=False,
    ),
    Case("text-inside-invoke", sec(inv("get_time", "oops ")), content=sec(inv("get_time", "oops "))),
    Case(
        "duplicate-parameter",
        sec(inv("get_weather", p("city", "A"), p("city", "B"))),
        content=sec(inv("get_weather", p("city", "A"), p("city", "B"))),
    ),
    Case("bad-invoke-tag", sec(f'<{D}invoke nam="x">\n{IE}\n'), content=sec(f'<{D}invoke nam="x">\n{IE}\n')),
]


# DeepSeek V4.1: a space after the DSML bar in every tag and the short block name `` calls``.
V = "｜DSML｜ "


def p41(key: str, value: str, string: bool = True) -> str:
    return f'<{V}parameter name="{key}" string="{"true" if string else "false"}">{value}</{V}parameter>'


def inv41(name: str, *params: str, sep: str = "\n") -> str:
    return f'<{V}invoke name="{name}">' + sep + sep.join(params) + sep + f"</{V}invoke>"


def sec41(*invokes: str, sep: str = "\n") -> str:
    return f"<{V}calls>" + sep + sep.join(invokes) + sep + f"</{V}calls>"


W41 = inv41("get_weather", p41("city", "Paris"), p41("days", "3", False))
V41 = [
    Case("v41-single", sec41(W41), calls=[PW]),
    Case(
        "v41-compact",
        sec41(inv41("get_weather", p41("city", "Paris"), p41("days", "3", False), sep=""), sep=""),
        calls=[PW],
    ),
    Case(
        "v41-text-before",
        "Let me look that up.\n\n" + sec41(W41),
        content="Let me look that up.\n\n",
        calls=[PW],
    ),
    Case("v41-reasoning-before", "<think>weather</think>" + sec41(W41), reasoning="weather", calls=[PW]),
    Case(
        "v41-prefilled-reasoning",
        "weather</think>\n\n" + sec41(W41),
        in_reasoning=True,
        reasoning="weather",
        content="\n\n",
        calls=[PW],
    ),
    Case(
        "v41-parallel",
        sec41(W41, inv41("search", p41("query", "cats"), p41("limit", "5", False))),
        calls=[PW, ("search", {"query": "cats", "limit": 5})],
    ),
    Case("v41-empty-invoke", sec41(inv41("get_time")), calls=[("get_time", {})]),
    Case(
        "v41-json-values",
        sec41(
            inv41(
                "search",
                p41("query", "q"),
                p41("filters", '{"year": 2020}', False),
                p41("tags", '["a", "<b>"]', False),
                p41("score", "null", False),
            )
        ),
        calls=[("search", {"query": "q", "filters": {"year": 2020}, "tags": ["a", "<b>"], "score": None})],
    ),
    Case(
        "v41-angle-brackets-and-dsml-text",
        sec41(inv41("set_port", p41("blob", f'a < b > c <{V}invoke name="x">'))),
        calls=[("set_port", {"blob": f'a < b > c <{V}invoke name="x">'})],
    ),
    Case(
        "v41-whitespace-only-value",
        sec41(inv41("set_port", p41("blob", "  \n "))),
        calls=[("set_port", {"blob": "  \n "})],
    ),
    Case(
        "v41-unspaced-tags-in-block",
        sec41(inv("get_weather", p("city", "Paris"), p("days", "3", False))),
        calls=[PW],
    ),
    Case(
        "v41-cut-in-second-invoke",
        sec41(W41, inv41("get_time"))[:-25],
        truncated=True,
        content="\n",
        calls=[PW],
        incomplete=["get_time"],
    ),
    Case(
        "v41-mismatched-close",
        sec41(W41)[: -len(f"</{V}calls>")] + FCE,
        content=sec41(W41)[: -len(f"</{V}calls>")] + FCE,
        stable_prefix=False,
    ),
]
CASES += V41

# Issue 27, deviation 2: DeepSeek V4 drops the section at long context and writes the invoke
# blocks bare. Each well-formed block is a call; a run with a malformed block is text.
B = W.rstrip("\n")
BARE = [
    Case("i27-bare-invoke", B, calls=[PW]),
    Case(
        "i27-bare-invoke-text-around",
        "Let me look. " + B + " Done.",
        content="Let me look.  Done.",
        calls=[PW],
    ),
    Case(
        "i27-bare-invoke-run",
        B + "\n" + inv("search", p("query", "cats"), p("limit", "5", False)),
        content="\n",
        calls=[PW, ("search", {"query": "cats", "limit": 5})],
    ),
    Case("i27-bare-self-closing", f'<{D}invoke name="get_time"/>', calls=[("get_time", {})]),
    Case(
        "i27-bare-json-and-marker-values",
        inv("search", p("query", f"a {IE} b"), p("tags", f'["{PE}"]', False)),
        content="\n",
        calls=[("search", {"query": f"a {IE} b", "tags": [PE]})],
    ),
    Case("i27-bare-after-think", "<think>weather</think>" + B, reasoning="weather", calls=[PW]),
    Case(
        "i27-bare-prefilled-never-closed",
        "weather\n" + B,
        in_reasoning=True,
        reasoning="weather\n",
        calls=[PW],
    ),
    Case(
        "i27-bare-in-closed-reasoning",
        "<think>maybe " + B + " no</think>Hi",
        reasoning="maybe " + B + " no",
        content="Hi",
    ),
    Case(
        "i27-bare-cut-mid-parameter",
        "Sure. " + B.split("Paris")[0],
        truncated=True,
        content="Sure. ",
        incomplete=["get_weather"],
    ),
    Case(
        "i27-bare-cut-second-invoke",
        B + "\n" + f'<{D}invoke name="get_ti',
        truncated=True,
        content="\n",
        calls=[PW],
        incomplete=[None],
    ),
    # Anything else stays text, byte for byte.
    Case(
        "i27-bare-text-inside-invoke",
        inv("get_time", "oops ") + "ok",
        content=inv("get_time", "oops ") + "ok",
    ),
    Case(
        "i27-bare-duplicate-parameter",
        inv("get_weather", p("city", "A"), p("city", "B")),
        content=inv("get_weather", p("city", "A"), p("city", "B")),
    ),
    Case("i27-bare-unclosed-at-eos", B[: -len(IE)], content=B[: -len(IE)]),
    Case("i27-bare-bad-invoke-tag", f'<{D}invoke nam="x">{IE} ok', content=f'<{D}invoke nam="x">{IE} ok'),
    Case("i27-bare-v41-spacing-is-text", W41, content=W41),
]
CASES += BARE

# The section's frame around the blocks, as V3.2 / V4 write it: the closing tag after a bare run
# (its opening tag dropped), an opening tag missing its ">" (sglang #40236, opencode #24566).
FRAME = [
    Case("bare-run-then-closing-tag", B + "\n" + TCE, calls=[PW]),
    Case("bare-run-then-closing-tag-after-text", "Sure.\n" + B + "\n" + FCE, content="Sure.\n", calls=[PW]),
    Case("bare-run-closing-tag-then-text", B + TCE + "\nDone.", content="\nDone.", calls=[PW]),
    Case("opening-tag-missing-its-close", f"<{D}tool_calls\n" + W + TCE, calls=[PW]),
    Case(
        "opening-tag-missing-its-close-fc", f"\n\n<{D}function_calls\n" + W + FCE, content="\n\n", calls=[PW]
    ),
    Case("opening-tag-missing-its-close-and-end", f"<{D}tool_calls\n" + W, content="\n", calls=[PW]),
    # still text: another character after the tag's name, a closing tag of another family
    Case(
        "opening-tag-name-run-on-is-text",
        f"<{D}tool_callsX\n" + W + TCE,
        content=f"<{D}tool_callsX\n",
        calls=[PW],
    ),
]
CASES += FRAME


# The tag prefix as deployed V3.2 / V4 also spell it: the bars doubled, ASCII, U+2016 (GenericAgent
# #804, local-inference-lab/vllm #417, cline #13348); one spelling throughout a section or block.
def spelt(text: str, q: str) -> str:
    return text.replace(D, q)


T = inv("get_time")
SPELLINGS = {"doubled": "｜｜DSML｜｜", "ascii": "|DSML|", "u2016": "‖DSML‖"}
STRAY_SPELLINGS = []
for tag, q in SPELLINGS.items():
    STRAY_SPELLINGS += [
        Case(f"{tag}-section", spelt(sec(W, o=TC, c=TCE), q), content="\n\n", calls=[PW]),
        Case(
            f"{tag}-section-fc-parallel",
            spelt(sec(W, T), q),
            content="\n\n",
            calls=[PW, ("get_time", {})],
        ),
        Case(
            f"{tag}-after-think",
            spelt("<think>weather</think>Sure." + sec(W, o=TC, c=TCE), q),
            reasoning="weather",
            content="Sure.\n\n",
            calls=[PW],
        ),
        Case(f"{tag}-v41-calls", spelt(sec41(W41), q), calls=[PW]),
        Case(f"{tag}-bare", spelt("Ok. " + B, q), content="Ok. ", calls=[PW]),
        Case(f"{tag}-bare-self-closing", spelt(f'<{D}invoke name="get_time"/>', q), calls=[("get_time", {})]),
        Case(
            f"{tag}-bare-run-then-closing-tag",
            spelt(B + "\n" + T + TCE, q),
            calls=[PW, ("get_time", {})],
        ),
        Case(f"{tag}-tag-missing-its-close", spelt(f"<{D}tool_calls\n" + W + TCE, q), calls=[PW]),
        Case(f"{tag}-section-never-closed", spelt(f"{TC}\n" + W, q), content="\n", calls=[PW]),
        Case(
            f"{tag}-cut-mid-parameter",
            spelt("Sure. " + B.split("Paris")[0], q),
            truncated=True,
            content="Sure. ",
            incomplete=["get_weather"],
        ),
        Case(
            f"{tag}-cut-second-invoke",
            spelt(sec(W, o=TC, c=TCE), q)[: -len(spelt(TCE, q))] + spelt(f'<{D}invoke name="get_ti', q),
            truncated=True,
            content="\n\n\n",
            calls=[PW],
            incomplete=[None],
        ),
        # Text: a section in one spelling with tags of another, a block closed in another, prose.
        Case(
            f"{tag}-section-with-published-tags",
            spelt(TC, q) + "\n" + W + spelt(TCE, q),
            content=spelt(TC, q) + "\n" + W + spelt(TCE, q),
            stable_prefix=False,
        ),
        Case(
            f"{tag}-published-section-with-its-tags",
            TC + "\n" + spelt(W, q) + TCE,
            content=TC + "\n" + spelt(W, q) + TCE,
            stable_prefix=False,
        ),
        Case(
            f"{tag}-block-closed-as-published",
            spelt(B[: -len(IE)], q) + IE + " ok",
            content=spelt(B[: -len(IE)], q) + IE + " ok",
        ),
        Case(
            f"{tag}-in-prose",
            spelt(f"Write <{D}tool_calls> to call.", q),
            content=spelt(f"Write <{D}tool_calls> to call.", q),
        ),
    ]
CASES += STRAY_SPELLINGS

# V4's section tag with ``tool_calls`` written ``toolcalls``, closed as published (vLLM #51914) or
# as opened; V4.1's parameter tag without the prefix, closed with it (sglang #39435).
TK, TKE = f"<{D}toolcalls>", f"</{D}toolcalls>"


def lp(key: str, value: str, flag: str = "") -> str:
    return f'<parameter name="{key}"{flag}>{value}{PE}\n'


LW = inv("get_weather", lp("city", "Paris"), lp("days", "3"))
MORE_STRAYS = [
    Case("toolcalls-closed-as-published", sec(W, o=TK, c=TCE), content="\n\n", calls=[PW]),
    Case("toolcalls-closed-as-opened", sec(W, o=TK, c=TKE), content="\n\n", calls=[PW]),
    Case(
        "toolcalls-after-think",
        "<think>x</think>" + sec(W, T, o=TK, c=TCE),
        reasoning="x",
        content="\n\n",
        calls=[PW, ("get_time", {})],
    ),
    Case("toolcalls-doubled-bars", spelt(sec(W, o=TK, c=TCE), "｜｜DSML｜｜"), content="\n\n", calls=[PW]),
    Case(
        "toolcalls-cut",
        sec(W, T, o=TK, c=TCE)[:-40],
        truncated=True,
        content="\n\n\n",
        calls=[PW],
        incomplete=[None],
    ),
    Case(
        "toolcalls-closed-as-another-section-is-text", TK + W + FCE, content=TK + W + FCE, stable_prefix=False
    ),
    Case("param-without-prefix", sec(LW, o=TC, c=TCE), content="\n\n", calls=[PW]),
    Case(
        "param-without-prefix-with-flag",
        sec(inv("get_weather", lp("city", "Paris", ' string="true"'), lp("days", "3", ' string="false"'))),
        content="\n\n",
        calls=[PW],
    ),
    Case(
        "param-without-prefix-mixed",
        sec(inv("get_weather", p("city", "Paris"), lp("days", "3"))),
        content="\n\n",
        calls=[PW],
    ),
    Case("param-without-prefix-bare", "Ok. " + LW.rstrip("\n"), content="Ok. ", calls=[PW]),
    Case("param-without-prefix-toolcalls", sec(LW, o=TK, c=TCE), content="\n\n", calls=[PW]),
    Case(
        "param-without-prefix-v41",
        f"<{V}calls>\n"
        + f'<{V}invoke name="get_time">\n<parameter name="tz">UTC</{V}parameter>\n</{V}invoke>\n'
        + f"</{V}calls>",
        calls=[("get_time", {"tz": "UTC"})],
    ),
    # text: closed without the prefix too, or outside an invoke
    Case(
        "param-without-prefix-closed-without-it",
        sec(inv("get_time", '<parameter name="tz">UTC</parameter>\n')),
        content=sec(inv("get_time", '<parameter name="tz">UTC</parameter>\n')),
    ),
    Case("param-without-prefix-alone", lp("city", "Paris"), content=lp("city", "Paris")),
]
CASES += MORE_STRAYS

# The prefix is a special token: a server that decodes without special tokens hands the calls on
# without it (DeepSeek's API so: opencode #34676; sglang #15155). Read where every parameter keeps
# its string flag and every call names an offered tool.
NO_PREFIX = [
    Case("no-prefix-bare", spelt("Reading.\n" + B, ""), content="Reading.\n", calls=[PW]),
    Case("no-prefix-section", spelt(sec(W, W, o=TC, c=TCE), ""), content="\n\n", calls=[PW, PW]),
    Case(
        "no-prefix-invoke-without-parameters-is-text",
        spelt(sec(W, T, o=TC, c=TCE), ""),
        content=spelt(sec(W, T, o=TC, c=TCE), ""),
        stable_prefix=False,
    ),
    Case("no-prefix-function-calls", spelt(sec(W), ""), content="\n\n", calls=[PW]),
    Case("no-prefix-self-closing", '<invoke name="get_time"/>', calls=[("get_time", {})]),
    Case(
        "no-prefix-cut",
        spelt("Sure. " + B.split("Paris")[0], ""),
        truncated=True,
        content="Sure. ",
        incomplete=["get_weather"],
    ),
    # text: a parameter without its flag (Claude-style XML), an undeclared tool, prose
    Case(
        "no-prefix-without-flags",
        spelt(sec(inv("get_weather", p("city", "Paris", None))), ""),
        content=spelt(sec(inv("get_weather", p("city", "Paris", None))), ""),
    ),
    Case("no-prefix-undeclared-tool", '<invoke name="get_date"/>', content='<invoke name="get_date"/>'),
    Case(
        "no-prefix-prose", 'Use <invoke name="get_time"> here.', content='Use <invoke name="get_time"> here.'
    ),
]
CASES += NO_PREFIX

# The section tags are structure; string values end at the parameter's closing tag.
FUZZ = Fuzz(
    markers=(
        FC,
        FCE,
        TC,
        TCE,
        SC,
        SCE,
        IE,
        f"<{D}parameter",
        PE,
        f"<{D} invoke",
        f"</{D} invoke>",
        f"<{D} parameter",
        f"</{D} parameter>",
    ),
    structure=("</?" + re.escape(D) + r"(?:function_calls|tool_calls| calls)>",),
    forbidden=(PE, f"</{D} parameter>"),
    wrap=(FC, FCE),
)
