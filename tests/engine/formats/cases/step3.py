"""Step-3: ``<｜tool_calls_begin｜><｜tool_call_begin｜>function<｜tool_sep｜><steptml:invoke name="N">
<steptml:parameter name="K">V</steptml:parameter></steptml:invoke><｜tool_call_end｜><｜tool_calls_end｜>``,
in two spellings: the servers' (``call``: nothing between ``<｜tool_call_begin｜>`` and ``function``,
newlines inside the invoke) and the one the published template's system text teaches (``taught``:
one newline after ``<｜tool_call_begin｜>``, none inside the invoke; see
tests/fixtures/chat_templates/sources.txt)."""

import re

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "step3"

OPEN, CLOSE = "<｜tool_calls_begin｜>", "<｜tool_calls_end｜>"
B, E, SEP = "<｜tool_call_begin｜>", "<｜tool_call_end｜>", "<｜tool_sep｜>"


def call(name, params):
    body = "".join(f'<steptml:parameter name="{k}">{v}</steptml:parameter>\n' for k, v in params)
    return f'{B}function{SEP}<steptml:invoke name="{name}">\n{body}</steptml:invoke>{E}'


def taught(name, params, *, lead="\n"):
    """A call as the template's instruction writes it; ``lead`` stands between
    ``<｜tool_call_begin｜>`` and ``function``."""
    body = "".join(f'<steptml:parameter name="{k}">{v}</steptml:parameter>' for k, v in params)
    return f'{B}{lead}function{SEP}<steptml:invoke name="{name}">{body}</steptml:invoke>{E}'


W = call("get_weather", [("city", "Paris"), ("days", "3")])
S = call("search", [("query", "x"), ("limit", "10")])
ONE = OPEN + "\n" + W + "\n" + CLOSE
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})

CASES = [
    Case("single", ONE, calls=[PW], ids=["call00000"]),
    Case(
        "parallel", OPEN + "\n" + W + "\n" + S + "\n" + CLOSE, calls=[PW, PS], ids=["call00000", "call00001"]
    ),
    Case("compact", OPEN + W + S + CLOSE, calls=[PW, PS]),
    Case("text-before", "Let me check.\n" + ONE, content="Let me check.\n", calls=[PW]),
    Case("think-then-call", "<think>weather</think>\n" + ONE, reasoning="weather", content="\n", calls=[PW]),
    Case("no-parameters", OPEN + call("get_time", []) + CLOSE, calls=[("get_time", {})]),
    Case(
        "typed-by-schema",
        OPEN
        + call("search", [("query", "q"), ("tags", '["a", "b"]'), ("filters", '{"year": 2020}')])
        + CLOSE,
        calls=[("search", {"query": "q", "tags": ["a", "b"], "filters": {"year": 2020}})],
    ),
    Case(
        "string-props-keep-text",
        OPEN + call("set_port", [("port", "8080"), ("zip", "02139")]) + CLOSE,
        calls=[("set_port", {"port": "8080", "zip": "02139"})],
    ),
    Case(
        "section-close-inside-value",
        OPEN + call("set_port", [("blob", "a " + CLOSE + " b")]) + CLOSE,
        calls=[("set_port", {"blob": "a " + CLOSE + " b"})],
    ),
    Case("close-implied-at-eos", OPEN + "\n" + W + "\n", calls=[PW]),
    # -- cut
    Case("cut-in-value", OPEN + "\n" + W[:80], truncated=True, incomplete=["get_weather"]),
    Case("cut-in-section-close", ONE[:-4], truncated=True, incomplete=["get_weather"]),
    # -- text
    Case(
        "deepseek-markers",
        "<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
        content="<｜tool▁calls▁begin｜><｜tool▁call▁begin｜>function<｜tool▁sep｜>get_time\n```json\n{}\n```<｜tool▁call▁end｜><｜tool▁calls▁end｜>",
    ),
    Case(
        "missing-kind",
        OPEN + W.replace("function" + SEP, SEP) + CLOSE,
        content=OPEN + W.replace("function" + SEP, SEP) + CLOSE,
    ),
    Case("missing-call-end", OPEN + W[: -len(E)] + CLOSE, content=OPEN + W[: -len(E)] + CLOSE),
    Case(
        "repeated-key",
        OPEN + call("get_weather", [("city", "a"), ("city", "b")]) + CLOSE,
        content=OPEN + call("get_weather", [("city", "a"), ("city", "b")]) + CLOSE,
    ),
    Case("empty-section", OPEN + "\n" + CLOSE, content=OPEN + "\n" + CLOSE),
    Case(
        "bare-invoke",
        '<steptml:invoke name="get_time"></steptml:invoke>',
        content='<steptml:invoke name="get_time"></steptml:invoke>',
    ),
    Case(
        "value-holds-parameter-close",
        OPEN + "\n" + call("set_port", [("blob", "a</steptml:parameter>b")]) + "\n" + CLOSE,
        calls=[("set_port", {"blob": "a</steptml:parameter>b"})],
    ),
]

# -- the spelling the template teaches: newlines after the section and call openers and after each
# call, none inside the invoke (what the constraint grammar writes)
TW = taught("get_weather", [("city", "Paris"), ("days", "3")])
TS = taught("search", [("query", "x"), ("limit", "10")])
TAUGHT = OPEN + "\n" + TW + "\n" + TS + "\n" + CLOSE
CASES += [
    Case("taught", OPEN + "\n" + TW + "\n" + CLOSE, calls=[PW], ids=["call00000"]),
    Case("taught-parallel", TAUGHT, calls=[PW, PS], ids=["call00000", "call00001"]),
    Case("taught-compact", OPEN + TW + TS + CLOSE, calls=[PW, PS]),
    Case(
        "taught-after-think-and-text",
        "<think>weather</think>\nLet me check.\n" + TAUGHT,
        reasoning="weather",
        content="\nLet me check.\n",
        calls=[PW, PS],
    ),
    Case(
        "taught-no-parameters", OPEN + "\n" + taught("get_time", []) + "\n" + CLOSE, calls=[("get_time", {})]
    ),
    Case("taught-close-implied-at-eos", OPEN + "\n" + TW + "\n", calls=[PW]),
    Case("taught-then-servers-spelling", OPEN + "\n" + TW + "\n" + S + "\n" + CLOSE, calls=[PW, PS]),
    Case("servers-then-taught-spelling", OPEN + "\n" + W + "\n" + TS + "\n" + CLOSE, calls=[PW, PS]),
    Case("taught-cut-after-call-begin", OPEN + "\n" + B + "\n", truncated=True, incomplete=[None]),
    Case(
        "taught-cut-in-value",
        OPEN + "\n" + TW[: TW.index("Paris") + 3],
        truncated=True,
        incomplete=["get_weather"],
    ),
]
# Between <｜tool_call_begin｜> and function stands one newline or nothing; any other whitespace
# there, or whitespace inside "function<｜tool_sep｜><steptml:invoke", is not the wire: the section
# is text, nothing lost.
_STRAY = (" ", "\t", "\r\n", "\n\n", " \n", "\n ", "\r")
for _i, _ws in enumerate(_STRAY):
    _bad = OPEN + "\n" + taught("get_weather", [("city", "Paris")], lead=_ws) + "\n" + CLOSE
    CASES.append(Case(f"stray-whitespace-after-call-begin-{_i}", _bad, content=_bad))
for _where, _at in (("kind", "function"), ("sep", SEP)):
    for _ws in ("\n", " "):
        _bad = OPEN + "\n" + TW.replace(_at, _at + _ws, 1) + "\n" + CLOSE
        CASES.append(
            Case(f"whitespace-after-{_where}-{_ws == ' ' and 'space' or 'newline'}", _bad, content=_bad)
        )
CASES.append(
    Case(
        "one-stray-call-makes-the-section-text",
        OPEN + "\n" + TW + "\n" + taught("search", [("query", "x")], lead="\n\n") + "\n" + CLOSE,
        content=OPEN + "\n" + TW + "\n" + taught("search", [("query", "x")], lead="\n\n") + "\n" + CLOSE,
    )
)

CASES += close_tag_in_argument_cases(
    ("<think>", "</think>"),
    OPEN + call("set_port", [("blob", "why <think> and </think> here")]) + CLOSE,
    ("set_port", {"blob": "why <think> and </think> here"}),
    OPEN,
)

FUZZ = Fuzz(
    markers=(CLOSE, E, '<steptml:parameter name="', "</steptml:parameter>", "</steptml:invoke>"),
    structure=(re.escape(OPEN), re.escape(CLOSE)),
    forbidden=("</steptml:parameter>",),
    wrap=(OPEN, CLOSE),
)
