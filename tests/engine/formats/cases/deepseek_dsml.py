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


# A parameter whose closing tag was left out (vLLM #54838, DeepSeek-V4-Flash): the prefix is a
# special token, so a value never holds a parameter's opening tag in it. The value ends where the
# next parameter's tag begins, or where the invoke's closing tag begins right before the section's
# closing tag or the reply's end (its last parameter); one newline before that tag is layout.
def nc(key: str, value: str, string: bool | None = True) -> str:
    """A parameter written without its closing tag (the template's newline after it kept)."""
    return p(key, value, string).replace(PE, "")


W_MID = inv("get_weather", nc("city", "Paris"), p("days", "3", False))
W_LAST = inv("get_weather", p("city", "Paris"), nc("days", "3", False))
W_BOTH = inv("get_weather", nc("city", "Paris"), nc("days", "3", False))
S_MID = inv("search", nc("query", "cats"), nc("tags", '["a", "b"]', False), p("limit", "5", False))
PS = ("search", {"query": "cats", "tags": ["a", "b"], "limit": 5})
PARAM_CLOSE_LEFT_OUT = [
    Case("param-close-left-out-middle", sec(W_MID, o=TC, c=TCE), content="\n\n", calls=[PW]),
    Case("param-close-left-out-last", sec(W_LAST, o=TC, c=TCE), content="\n\n", calls=[PW]),
    Case("param-close-left-out-every", sec(W_BOTH), content="\n\n", calls=[PW]),
    Case("param-close-left-out-json-values", sec(S_MID, o=TC, c=TCE), content="\n\n", calls=[PS]),
    Case(
        "param-close-left-out-compact",
        f'{TC}<{D}invoke name="get_weather"><{D}parameter name="city" string="true">Paris'
        f'<{D}parameter name="days" string="false">3{IE}{TCE}',
        calls=[PW],
    ),
    # one newline before the next tag is layout; the value's own newlines are kept
    Case(
        "param-close-left-out-value-newlines-kept",
        sec(inv("set_port", nc("blob", "two\nlines\n"), p("port", "80")), o=TC, c=TCE),
        content="\n\n",
        calls=[("set_port", {"blob": "two\nlines\n", "port": "80"})],
    ),
    Case(
        "param-close-left-out-empty-value",
        sec(inv("set_port", nc("blob", ""), p("port", "80")), o=TC, c=TCE),
        content="\n\n",
        calls=[("set_port", {"blob": "", "port": "80"})],
    ),
    Case(
        "param-close-left-out-parallel",
        sec(W_MID, S_MID, o=TC, c=TCE),
        content="\n\n",
        calls=[PW, PS],
    ),
    Case(
        "param-close-left-out-after-think",
        "<think>weather</think>Sure." + sec(W_BOTH, o=TC, c=TCE),
        reasoning="weather",
        content="Sure.\n\n",
        calls=[PW],
    ),
    Case("param-close-left-out-section-never-closed", f"{TC}\n" + W_LAST, content="\n", calls=[PW]),
    Case("param-close-left-out-bare", "Ok. " + W_MID.rstrip("\n"), content="Ok. ", calls=[PW]),
    Case("param-close-left-out-bare-last", W_LAST.rstrip("\n"), calls=[PW]),
    Case("param-close-left-out-bare-then-closing-tag", W_LAST + TCE, calls=[PW]),
    Case(
        "param-close-left-out-toolcalls",
        sec(W_MID, o=TK, c=TCE),
        content="\n\n",
        calls=[PW],
    ),
    Case("param-close-left-out-v41", sec41(W41.replace(f"Paris</{V}parameter>", "Paris")), calls=[PW]),
    Case(
        "param-close-left-out-v41-last",
        sec41(W41.replace(f"3</{V}parameter>", "3")),
        calls=[PW],
    ),
    Case(
        "param-close-left-out-before-prefixed-param-v41-loose",
        sec(inv("get_weather", lp("city", "Paris").replace(PE, ""), p("days", "3", False)), o=TC, c=TCE),
        content="\n\n",
        calls=[PW],
    ),
    Case(
        "param-close-left-out-cut",
        sec(W_MID, o=TC, c=TCE).split("3")[0],
        truncated=True,
        content="\n\n",
        incomplete=["get_weather"],
    ),
    # text: a value that would hold DSML tags, a last parameter's invoke closed before another
    # invoke, or before anything but the section's end, a plain-text parameter tag swallowed
    Case(
        "param-close-left-out-last-then-next-invoke-is-text",
        sec(W_LAST, T, o=TC, c=TCE),
        content=sec(W_LAST, T, o=TC, c=TCE),
    ),
    Case(
        "param-close-left-out-last-then-next-invoke-with-params-is-text",
        sec(W_LAST, W, o=TC, c=TCE),
        content=sec(W_LAST, W, o=TC, c=TCE),
    ),
    Case(
        "param-close-left-out-bare-last-then-text-is-text",
        W_LAST.rstrip("\n") + " Done.",
        content=W_LAST.rstrip("\n") + " Done.",
    ),
    Case(
        "param-close-left-out-value-holds-dsml-tag-is-text",
        sec(inv("set_port", nc("blob", f"a {IE} b"), p("port", "80")), o=TC, c=TCE),
        content=sec(inv("set_port", nc("blob", f"a {IE} b"), p("port", "80")), o=TC, c=TCE),
    ),
    Case(
        "param-close-left-out-before-loose-param-is-text",
        sec(inv("get_weather", lp("city", "Paris").replace(PE, ""), lp("days", "3")), o=TC, c=TCE),
        content=sec(inv("get_weather", lp("city", "Paris").replace(PE, ""), lp("days", "3")), o=TC, c=TCE),
    ),
    Case(
        "param-close-left-out-no-prefix-is-text",
        spelt(sec(W_MID, o=TC, c=TCE), ""),
        content=spelt(sec(W_MID, o=TC, c=TCE), ""),
        stable_prefix=False,
    ),
]
for tag, q in SPELLINGS.items():
    PARAM_CLOSE_LEFT_OUT += [
        Case(
            f"{tag}-param-close-left-out-middle",
            spelt(sec(W_MID, o=TC, c=TCE), q),
            content="\n\n",
            calls=[PW],
        ),
        Case(f"{tag}-param-close-left-out-last", spelt(sec(W_LAST), q), content="\n\n", calls=[PW]),
        Case(
            f"{tag}-param-close-left-out-bare",
            spelt("Ok. " + W_BOTH.rstrip("\n"), q),
            content="Ok. ",
            calls=[PW],
        ),
        Case(
            f"{tag}-param-close-left-out-v41",
            spelt(sec41(W41.replace(f"Paris</{V}parameter>", "Paris")), q),
            calls=[PW],
        ),
        # a value left open that holds another spelling's tag: text (one spelling per block)
        Case(
            f"{tag}-param-close-left-out-value-holds-published-tag-is-text",
            spelt(sec(inv("set_port", nc("blob", "x #"), p("port", "80")), o=TC, c=TCE), q).replace(
                "#", f"<{D}invoke"
            ),
            content=spelt(sec(inv("set_port", nc("blob", "x #"), p("port", "80")), o=TC, c=TCE), q).replace(
                "#", f"<{D}invoke"
            ),
        ),
    ]
CASES += PARAM_CLOSE_LEFT_OUT

# DeepSeek V4's degenerate DSML fragments (vLLM #56184; GenericAgent #804): an empty block (no
# invoke inside) and closing tags with no block open, in the answer and in reasoning, are markup:
# dropped, the text around them kept. Only the DSML spellings; the prefix decoded away is text.
STRAY_TAIL = f"{PE}\n{IE}\n{TCE}"
DEGENERATE = [
    Case("empty-block", f"Sure.{TC}{TCE} Done.", content="Sure. Done."),
    Case("empty-block-newline", f"Sure.\n{TC}\n{TCE}\nDone.", content="Sure.\n\nDone."),
    Case("empty-block-fc", f"{FC}\n\n{FCE}Hi", content="Hi"),
    Case("empty-block-v41", f"<{V}calls>\n</{V}calls>Hi", content="Hi"),
    Case("empty-block-toolcalls", f"{TK}{TCE}Hi", content="Hi"),
    Case("empty-block-then-call", f"{TC}{TCE}\n" + sec(W, o=TC, c=TCE), content="\n\n\n", calls=[PW]),
    Case(
        "empty-block-after-think",
        f"<think>none needed</think>{TC}\n{TCE}The answer is 4.",
        reasoning="none needed",
        content="The answer is 4.",
    ),
    Case("stray-closers-after-answer", "The file is fine." + STRAY_TAIL, content="The file is fine.\n\n"),
    Case("stray-parameter-close", f"Done.{PE}", content="Done."),
    Case("stray-invoke-close", f"Done.{IE} Bye.", content="Done. Bye."),
    Case("stray-section-close", f"{TCE}Done.{FCE}", content="Done."),
    Case("stray-toolcalls-close", f"Done.</{D}toolcalls>", content="Done."),
    Case("stray-section-close-after-call", sec(W, o=TC, c=TCE) + TCE, content="\n\n", calls=[PW]),
    Case(
        "stray-closers-after-call-and-text",
        sec(W, o=TC, c=TCE) + "\nOk." + STRAY_TAIL,
        content="\n\n\nOk.\n\n",
        calls=[PW],
    ),
    Case(
        "stray-closers-in-reasoning",
        "<think>Checked." + STRAY_TAIL + "</think>Fine.",
        reasoning="Checked.\n\n",
        content="Fine.",
    ),
    Case(
        "stray-closers-in-prefilled-reasoning",
        "Checked." + STRAY_TAIL + "\nAll good.</think>Fine.",
        in_reasoning=True,
        reasoning="Checked.\n\n\nAll good.",
        content="Fine.",
    ),
    Case(
        "stray-closers-in-reasoning-never-closed",
        "Checked." + STRAY_TAIL + " still thinking",
        in_reasoning=True,
        reasoning="Checked.\n\n still thinking",
    ),
    Case(
        "stray-closers-in-reasoning-never-closed-cut",
        "Checked." + STRAY_TAIL + " still",
        in_reasoning=True,
        truncated=True,
        reasoning="Checked.\n\n still",
    ),
    Case(
        "stray-closers-before-orphan-close",
        "Plan." + STRAY_TAIL + "</think>Answer.",
        reasoning="Plan.\n\n",
        content="Answer.",
    ),
    Case(
        "stray-closers-in-reasoning-then-call",
        "<think>Plan." + STRAY_TAIL + "</think>" + sec(W, o=TC, c=TCE),
        reasoning="Plan.\n\n",
        content="\n\n",
        calls=[PW],
    ),
    Case(
        "stray-closers-in-reasoning-before-call",
        "Plan." + STRAY_TAIL + "\n" + B,
        in_reasoning=True,
        reasoning="Plan.\n\n\n",
        calls=[PW],
    ),
    Case(
        "empty-block-in-reasoning",
        f"<think>Plan.{TC}{TCE} More.</think>Fine.",
        reasoning=f"Plan.{TC}{TCE} More.",
        content="Fine.",
    ),
    # text: a closing tag without the prefix, a block with text inside, one left open, a broken
    # bare block's own closing tags
    Case(
        "stray-close-no-prefix-is-text",
        "Done.</parameter></invoke></tool_calls>",
        content="Done.</parameter></invoke></tool_calls>",
    ),
    Case(
        "stray-close-v41-spaced-is-text",
        f"Done.</{V}parameter></{V}invoke></{V}calls>",
        content=f"Done.</{V}parameter></{V}invoke></{V}calls>",
    ),
    # a loose parameter tag in the text: the closing tags after it on its line, up to the first
    # parameter closing tag, are its text (that tag is open), the later ones stray
    Case(
        "closers-on-loose-tag-line-are-text",
        f'Write <parameter name="city">Paris{IE}{PE} then.{IE}\nNext.{PE}',
        content=f'Write <parameter name="city">Paris{IE}{PE} then.\nNext.',
    ),
    Case(
        "closer-after-loose-tag-line-is-stray",
        f'Write <parameter name="city">Paris</parameter>\nthen.{PE}',
        content='Write <parameter name="city">Paris</parameter>\nthen.',
    ),
    Case(
        "closers-on-loose-tag-line-in-reasoning",
        f'<think>Use <parameter name="city">Paris{IE}{PE}.{TCE}\nSo{PE}</think>Ok.',
        reasoning=f'Use <parameter name="city">Paris{IE}{PE}.\nSo',
        content="Ok.",
    ),
    Case(
        "closers-on-loose-tag-line-in-prefilled-reasoning",
        f'Use <parameter name="city">Paris{PE}.{TCE}\nSo{PE}',
        in_reasoning=True,
        reasoning=f'Use <parameter name="city">Paris{PE}.\nSo',
    ),
    Case(
        "loose-tag-line-then-call",
        'See <parameter name="x">\n' + sec(W, o=TC, c=TCE),
        content='See <parameter name="x">\n\n\n',
        calls=[PW],
    ),
    Case(
        "loose-tag-line-before-call-on-its-line",
        'See <parameter name="x"> ' + TC + "\n" + W + TCE,
        content='See <parameter name="x"> ',
        calls=[PW],
    ),
    Case(
        "empty-block-no-prefix-is-text",
        "<tool_calls></tool_calls> ok",
        content="<tool_calls></tool_calls> ok",
    ),
    Case("block-of-text-is-text", f"{TC}hello{TCE}", content=f"{TC}hello{TCE}"),
    Case("empty-block-left-open-is-text", f"Sure.{TC}", content=f"Sure.{TC}"),
    Case(
        "broken-bare-block-keeps-its-closers",
        f'<{D}invoke name="get_time">\noops{PE}\n{IE}\n{TCE} ok',
        content=f'<{D}invoke name="get_time">\noops{PE}\n{IE}\n{TCE} ok',
    ),
    Case(
        "broken-bare-block-then-call",
        f'<{D}invoke name="get_time">\noops{IE}\n' + sec(W, o=TC, c=TCE),
        content=f'<{D}invoke name="get_time">\noops{IE}\n\n\n',
        calls=[PW],
    ),
]
for tag, q in SPELLINGS.items():
    DEGENERATE += [
        Case(f"{tag}-empty-block", spelt(f"Sure.{TC}{TCE} Done.", q), content="Sure. Done."),
        Case(
            f"{tag}-stray-closers",
            spelt("The file is fine." + STRAY_TAIL, q),
            content="The file is fine.\n\n",
        ),
        Case(
            f"{tag}-stray-closers-in-reasoning",
            spelt("<think>Checked." + STRAY_TAIL + "</think>Fine.", q),
            reasoning="Checked.\n\n",
            content="Fine.",
        ),
    ]
CASES += DEGENERATE

# The section tags are structure, and so are a closing tag with no block open and an empty section
# in any DSML spelling; string values end at the parameter's closing tag, or without it where the
# next parameter's tag begins (or the invoke's closing tag, before the section's), and may not hold
# a whole loose parameter tag left open (the next parameter swallowed).
_ANY = "(?:" + "|".join(re.escape(q) for q in (D, *SPELLINGS.values())) + ")"
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
    structure=(
        "</?" + _ANY + r"(?:function_calls|tool_calls|toolcalls| calls)>",
        "<" + _ANY + r"(?:function_calls|tool_calls)\n",
        "</" + _ANY + "(?:parameter|invoke)>",
    ),
    forbidden=(
        PE,
        f"</{D} parameter>",
        f"<{D}parameter",
        f"<{D} parameter",
        IE,
        f"</{D} invoke>",
        "<parameter",
    ),
    wrap=(FC, FCE),
)

# A value whose closing tag was left out, closed instead by a tag named after its parameter
# (``Paris</city>``: plain XML's habit): the value ends before that tag; another name's tag, or
# the value's own markup, is its text, and so is the tag before a written closing tag.
OWN_NAME_CLOSE = [
    Case(
        "own-name-close-middle",
        sec(inv("get_weather", nc("city", "Paris</city>"), p("days", "3", False)), o=TC, c=TCE),
        content="\n\n",
        calls=[PW],
    ),
    Case(
        "own-name-close-last-typed",
        sec(inv("get_weather", p("city", "Paris"), nc("days", "3\n</days>", False)), o=TC, c=TCE),
        content="\n\n",
        calls=[PW],
    ),
    Case(
        "own-name-close-the-value-s-markup",
        sec(inv("set_port", nc("blob", "<blob>x</blob>")), o=TC, c=TCE),
        content="\n\n",
        calls=[("set_port", {"blob": "<blob>x</blob>"})],
    ),
    Case(
        "own-name-close-before-a-written-close",
        sec(inv("get_weather", p("city", "Paris</city>"), p("days", "3", False)), o=TC, c=TCE),
        content="\n\n",
        calls=[("get_weather", {"city": "Paris</city>", "days": 3})],
    ),
    Case(
        "another-name-s-close-the-value-s-text",
        sec(inv("set_port", nc("blob", "a</port>")), o=TC, c=TCE),
        content="\n\n",
        calls=[("set_port", {"blob": "a</port>"})],
    ),
]
CASES += OWN_NAME_CLOSE
