"""GigaChat 3.5: DeepSeek's DSML XML under the ``｜GCML｜`` prefix, in a ``tool_calls`` section,
with ``<think>`` reasoning and the ``</s>`` it may write after the section."""

import re

from tests.engine.formats.harness import Case, Fuzz

FAMILY = "gigachat-gcml"

G = "｜GCML｜"
TC, TCE = f"<{G}tool_calls>", f"</{G}tool_calls>"
IE, PE = f"</{G}invoke>", f"</{G}parameter>"
EOS = "</s>"


def p(key: str, value: str, string: bool | None = True) -> str:
    flag = "" if string is None else f' string="{"true" if string else "false"}"'
    return f'<{G}parameter name="{key}"{flag}>{value}{PE}'


def inv(name: str, *params: str, nl: str = "\n") -> str:
    """An invoke as the template lays it out: parameters one a line (``nl=""``: compact)."""
    return f'<{G}invoke name="{name}">{nl}' + nl.join(params) + (nl if params else "") + IE


def sec(*invokes: str, nl: str = "\n") -> str:
    return TC + nl + nl.join(invokes) + nl + TCE


W = inv("get_weather", p("city", "Paris"), p("days", "3", False))
PW = ("get_weather", {"city": "Paris", "days": 3})
S = inv("search", p("query", "cats"), p("limit", "5", False), p("tags", '["a", "b"]', False))
PS = ("search", {"query": "cats", "limit": 5, "tags": ["a", "b"]})

CASES = [
    Case("single", sec(W), calls=[PW], ids=["call00000"]),
    # The template's assistant turn: <think>...</think>, a blank line, text, a blank line, the calls.
    Case(
        "template-layout",
        "<think>The user wants the weather.</think>\n\nLet me check.\n\n" + sec(W),
        reasoning="The user wants the weather.",
        content="\n\nLet me check.\n\n",
        calls=[PW],
    ),
    Case(
        "prefilled-think",
        "weather needed</think>\n\n" + sec(W),
        in_reasoning=True,
        reasoning="weather needed",
        content="\n\n",
        calls=[PW],
    ),
    Case("text-before-and-after", "Sure." + sec(W) + " Done.", content="Sure. Done.", calls=[PW]),
    Case("parallel", sec(W, S), calls=[PW, PS], ids=["call00000", "call00001"]),
    Case("two-sections", sec(W) + "\n" + sec(S), content="\n", calls=[PW, PS]),
    Case(
        "compact",
        sec(inv("get_weather", p("city", "Paris"), p("days", "3", False), nl=""), nl=""),
        calls=[PW],
    ),
    Case("no-parameters", sec(inv("get_time")), calls=[("get_time", {})]),
    Case(
        "whitespace-significant",
        sec(inv("set_port", p("blob", "  two\n lines \n"))),
        calls=[("set_port", {"blob": "  two\n lines \n"})],
    ),
    Case(
        "numbers-stay-strings",
        sec(inv("set_port", p("port", "8080"), p("zip", "02139", False), p("flag", "true", False))),
        calls=[("set_port", {"port": "8080", "zip": "02139", "flag": "true"})],
    ),
    # vLLM's GigaChat 3.5 parser reads a parameter without the attribute as a string.
    Case(
        "no-string-attribute-typed-by-schema",
        sec(inv("get_weather", p("city", "Rome", None), p("days", "2", None))),
        calls=[("get_weather", {"city": "Rome", "days": 2})],
    ),
    Case(
        "json-values",
        sec(
            inv(
                "search",
                p("query", "q"),
                p("filters", '{"year": 2020}', False),
                p("score", "null", False),
                p("mode", "7", False),
            )
        ),
        calls=[("search", {"query": "q", "filters": {"year": 2020}, "score": None, "mode": 7})],
    ),
    Case(
        "unicode-and-escapes",
        sec(inv("set_port", p("blob", 'Москва 東京 "q" \\n <b>'))),
        calls=[("set_port", {"blob": 'Москва 東京 "q" \\n <b>'})],
    ),
    Case(
        "marker-inside-string-argument",
        sec(inv("set_port", p("blob", f'a {TCE} {IE} <{G}invoke name="x"> {EOS}'))),
        calls=[("set_port", {"blob": f'a {TCE} {IE} <{G}invoke name="x"> {EOS}'})],
    ),
    Case(
        "param-end-inside-json-string",
        sec(inv("search", p("query", "q"), p("tags", f'["{PE}", "{TCE}"]', False))),
        calls=[("search", {"query": "q", "tags": [PE, TCE]})],
    ),
    Case(
        "bad-json-kept-as-text",
        sec(inv("search", p("query", "q"), p("limit", "ten", False))),
        calls=[("search", {"query": "q", "limit": "ten"})],
    ),
    # The wire names any tool; a call to one not declared is still a call (the dispatcher answers).
    Case("undeclared-tool", sec(inv("launch", p("when", "now"))), calls=[("launch", {"when": "now"})]),
    Case(
        "call-text-in-closed-reasoning",
        "<think>maybe " + sec(W) + " no</think>Hi",
        reasoning="maybe " + sec(W) + " no",
        content="Hi",
    ),
    Case("plain-text", "Привет! Чем помочь?", content="Привет! Чем помочь?"),
    # The end-of-sequence token written as text after the section is consumed with the calls.
    Case("eos-after-section", "Ok.\n\n" + sec(W) + EOS, content="Ok.\n\n", calls=[PW]),
    Case("eos-after-whitespace", sec(W) + "\n " + EOS, calls=[PW]),
    Case("eos-after-parallel", sec(W, S) + "\n" + EOS, calls=[PW, PS]),
    Case("eos-twice", sec(W) + EOS + EOS, content=EOS, calls=[PW]),
    Case("eos-after-text-after-call", sec(W) + " ok" + EOS, content=" ok" + EOS, calls=[PW]),
    Case("eos-in-plain-text", "Done." + EOS, content="Done." + EOS),
    Case("eos-before-section", EOS + sec(W), content=EOS, calls=[PW]),
    Case(
        "eos-after-bad-section",
        sec(inv("get_weather", p("city", "A"), p("city", "B"))) + EOS,
        content=sec(inv("get_weather", p("city", "A"), p("city", "B"))) + EOS,
    ),
    # Cut at max_tokens: the cut call is an incomplete call, never content; calls before it count.
    Case(
        "cut-mid-parameter",
        "Sure. " + sec(W).split("Paris")[0],
        truncated=True,
        content="Sure. ",
        incomplete=["get_weather"],
    ),
    Case(
        "cut-second-invoke",
        TC + "\n" + W + "\n" + f'<{G}invoke name="get_ti',
        truncated=True,
        content="\n",
        calls=[PW],
        incomplete=[None],
    ),
    Case("cut-after-invoke", TC + "\n" + W, truncated=True, calls=[PW], stable_prefix=False),
    Case(
        "cut-in-value-holding-close-and-eos",
        TC + "\n" + inv("set_port", p("blob", "a " + TCE + EOS)).split(PE)[0],
        truncated=True,
        incomplete=["set_port"],
    ),
    # Unclosed at a normal end: text (its prefixes cut after the complete invoke keep it).
    Case("missing-section-end", "\n\n" + TC + "\n" + W, content="\n\n" + TC + "\n" + W, stable_prefix=False),
    Case(
        "unclosed-parameter",
        sec(W)[: -len(TCE)] + p("x", "y")[:-3],
        content=sec(W)[: -len(TCE)] + p("x", "y")[:-3],
        stable_prefix=False,
    ),
    # Wrong nesting and malformed tags: the whole section is text, byte for byte.
    Case(
        "parameter-outside-invoke",
        TC + "\n" + p("city", "Paris") + "\n" + TCE,
        content=TC + "\n" + p("city", "Paris") + "\n" + TCE,
    ),
    Case(
        "invoke-unclosed-in-section",
        TC + "\n" + f'<{G}invoke name="get_time">\n' + TCE,
        content=TC + "\n" + f'<{G}invoke name="get_time">\n' + TCE,
    ),
    Case("text-inside-invoke", sec(inv("get_time", "oops")), content=sec(inv("get_time", "oops"))),
    Case("text-between-invokes", sec(W, "and", S), content=sec(W, "and", S), stable_prefix=False),
    Case(
        "duplicate-parameter",
        sec(inv("get_weather", p("city", "A"), p("city", "B"))),
        content=sec(inv("get_weather", p("city", "A"), p("city", "B"))),
    ),
    Case("bad-invoke-tag", sec(f'<{G}invoke nam="x">\n{IE}'), content=sec(f'<{G}invoke nam="x">\n{IE}')),
    Case(
        "bad-string-flag",
        sec(inv("get_weather", f'<{G}parameter name="city" string="yes">P{PE}')),
        content=sec(inv("get_weather", f'<{G}parameter name="city" string="yes">P{PE}')),
    ),
    Case(
        "mismatched-section-end",
        TC + "\n" + W + "\n" + f"</{G}function_calls>",
        content=TC + "\n" + W + "\n" + f"</{G}function_calls>",
        stable_prefix=False,
    ),
    # DeepSeek's deviations are not GigaChat's: text here.
    Case(
        "self-closing-invoke-is-text",
        sec(f'<{G}invoke name="get_time"/>'),
        content=sec(f'<{G}invoke name="get_time"/>'),
    ),
    Case("bare-invoke-is-text", W + " ok", content=W + " ok"),
    Case(
        "function-calls-section-is-text",
        f"<{G}function_calls>\n{W}\n</{G}function_calls>",
        content=f"<{G}function_calls>\n{W}\n</{G}function_calls>",
    ),
    Case(
        "spaced-dialect-is-text", f"<{G} calls>\n{W}\n</{G} calls>", content=f"<{G} calls>\n{W}\n</{G} calls>"
    ),
    Case(
        "dsml-prefix-is-text",
        sec(W).replace(G, "｜DSML｜"),
        content=sec(W).replace(G, "｜DSML｜"),
    ),
    Case("ascii-bars-are-text", sec(W).replace(G, "|GCML|"), content=sec(W).replace(G, "|GCML|")),
]


# A parameter whose closing tag was left out (DeepSeek's DSML wire: vLLM #54838): the prefix is
# a special token, so a value never holds a parameter's opening tag in it. The value ends where the
# next parameter's tag begins, or where the invoke's closing tag begins right before the section's
# closing tag (its last parameter); one newline before that tag is layout.
def nc(key: str, value: str, string: bool | None = True) -> str:
    return p(key, value, string).removesuffix(PE)


W_MID = inv("get_weather", nc("city", "Paris"), p("days", "3", False))
W_LAST = inv("get_weather", p("city", "Paris"), nc("days", "3", False))
S_MID = inv("search", nc("query", "cats"), nc("limit", "5", False), p("tags", '["a", "b"]', False))
PARAM_CLOSE_LEFT_OUT = [
    Case("param-close-left-out-middle", sec(W_MID), calls=[PW]),
    Case("param-close-left-out-last", sec(W_LAST), calls=[PW]),
    Case(
        "param-close-left-out-every",
        sec(inv("get_weather", nc("city", "Paris"), nc("days", "3", False))),
        calls=[PW],
    ),
    Case("param-close-left-out-json-values", sec(S_MID), calls=[PS]),
    Case(
        "param-close-left-out-compact",
        sec(inv("get_weather", nc("city", "Paris"), p("days", "3", False), nl=""), nl=""),
        calls=[PW],
    ),
    Case(
        "param-close-left-out-value-newlines-kept",
        sec(inv("set_port", nc("blob", "two\nlines\n"), p("port", "80"))),
        calls=[("set_port", {"blob": "two\nlines\n", "port": "80"})],
    ),
    Case(
        "param-close-left-out-parallel",
        "Sure.\n" + sec(W_MID, S_MID) + EOS,
        content="Sure.\n",
        calls=[PW, PS],
    ),
    Case(
        "param-close-left-out-after-think",
        "<think>weather</think>\n\n" + sec(W_LAST),
        reasoning="weather",
        content="\n\n",
        calls=[PW],
    ),
    Case(
        "param-close-left-out-cut",
        sec(W_MID).split("3")[0],
        truncated=True,
        incomplete=["get_weather"],
    ),
    # text: a last parameter's invoke closed before another invoke, a value that would hold a
    # GCML tag, the section left open
    Case(
        "param-close-left-out-last-then-next-invoke-is-text",
        sec(W_LAST, S),
        content=sec(W_LAST, S),
    ),
    Case(
        "param-close-left-out-value-holds-gcml-tag-is-text",
        sec(inv("set_port", nc("blob", f"a {IE} b"), p("port", "80"))),
        content=sec(inv("set_port", nc("blob", f"a {IE} b"), p("port", "80"))),
    ),
    Case(
        "param-close-left-out-section-never-closed-is-text",
        TC + "\n" + W_LAST,
        content=TC + "\n" + W_LAST,
        stable_prefix=False,
    ),
]
CASES += PARAM_CLOSE_LEFT_OUT

# The section tags and a </s> right after the section are structure; a string value ends at the
# parameter's closing tag, or without it where the next parameter's tag begins (or the invoke's
# closing tag, before the section's).
FUZZ = Fuzz(
    markers=(TC, TCE, f"<{G}invoke", IE, f"<{G}parameter", PE, EOS, f"<{G}function_calls>", f"<{G} calls>"),
    structure=("</?" + re.escape(G) + "tool_calls>", EOS),
    forbidden=(PE, f"<{G}parameter", IE),
    wrap=(TC, TCE),
)

# Settings label words; the published template in a tiny GGUF: GigaChat's turn tokens (bos <s>,
# eos </s>, the role and message separators) as control tokens, the reasoning tags and the GCML
# tag prefix (one token in GigaChat 3.5's vocabulary, as llama.cpp's preserved tokens list it)
# as user-defined tokens.
SETTING_WORDS = ("GigaChat 3.5", "GCML")
TINY_MODELS = [
    (
        "GigaChat3.5.jinja",
        ["<s>", "</s>", "<|role_sep|>", "<|message_sep|>"],
        ["<think>", "</think>", G],
        "<s>",
        "</s>",
    ),
]
# One call whose string value holds the wire's markers (all but the parameter's closing tag).
COST_VALUE = f'a {TCE} {IE} <{G}invoke name="x"> {EOS} </think> b'
