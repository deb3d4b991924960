"""OLMo 3: ``<function_calls>\\nNAME(k='v')\\nNAME2(...)\\n</function_calls>``, Python calls one per
line, ``<think>`` reasoning."""

import re

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "olmo3"

OPEN, CLOSE = "<function_calls>", "</function_calls>"
W = "get_weather(city='Paris', days=3)"
S = "search(query='x', limit=10)"
ONE = OPEN + "\n" + W + "\n" + CLOSE
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})

CASES = [
    Case("single", ONE, calls=[PW], ids=["call00000"]),
    Case(
        "two-lines", OPEN + "\n" + W + "\n" + S + "\n" + CLOSE, calls=[PW, PS], ids=["call00000", "call00001"]
    ),
    Case("compact", OPEN + W + CLOSE, calls=[PW]),
    Case("text-before", "Let me look.\n" + ONE, content="Let me look.\n", calls=[PW]),
    Case("think-then-call", "<think>weather</think>\n" + ONE, reasoning="weather", content="\n", calls=[PW]),
    Case(
        "json-words-as-the-template-writes",
        OPEN + "\nget_weather(city='Oslo', metric=true)\nsearch(query='q', score=null)\n" + CLOSE,
        calls=[("get_weather", {"city": "Oslo", "metric": True}), ("search", {"query": "q", "score": None})],
    ),
    Case(
        "python-literals",
        OPEN + '\nsearch(query="q", tags=["a", "b"], filters={"year": 2020}, score=None)\n' + CLOSE,
        calls=[("search", {"query": "q", "tags": ["a", "b"], "filters": {"year": 2020}, "score": None})],
    ),
    Case(
        "multiline-string-value",
        OPEN + "\nset_port(blob='''line one\nline two''')\n" + CLOSE,
        calls=[("set_port", {"blob": "line one\nline two"})],
    ),
    Case(
        "close-tag-inside-string",
        OPEN + "\nset_port(blob='</function_calls> x')\n" + CLOSE,
        calls=[("set_port", {"blob": "</function_calls> x"})],
    ),
    Case("no-arguments", OPEN + "\nget_time()\n" + CLOSE, calls=[("get_time", {})]),
    Case("close-implied-at-eos", OPEN + "\n" + W + "\n", calls=[PW]),
    # -- cut
    Case("cut-in-call", OPEN + "\nsearch(query='a", truncated=True, incomplete=["search"]),
    Case("cut-before-close", OPEN + "\n" + W + "\n</function_", truncated=True, incomplete=["get_weather"]),
    # -- text
    Case(
        "positional-argument",
        OPEN + "\nget_weather('Paris')\n" + CLOSE,
        content=OPEN + "\nget_weather('Paris')\n" + CLOSE,
    ),
    Case(
        "two-on-one-line",
        OPEN + "\nget_time(); get_time()\n" + CLOSE,
        content=OPEN + "\nget_time(); get_time()\n" + CLOSE,
    ),
    Case("assignment", OPEN + "\nx = get_time()\n" + CLOSE, content=OPEN + "\nx = get_time()\n" + CLOSE),
    Case(
        "expression-call",
        OPEN + "\n__import__('os')\n" + CLOSE,
        content=OPEN + "\n__import__('os')\n" + CLOSE,
    ),
    Case("list-inside", OPEN + "\n[get_time()]\n" + CLOSE, content=OPEN + "\n[get_time()]\n" + CLOSE),
    Case("empty-block", OPEN + "\n" + CLOSE, content=OPEN + "\n" + CLOSE),
    Case(
        "unclosed-text-after",
        OPEN + "\n" + W + "\nand then",
        content=OPEN + "\n" + W + "\nand then",
    ),
    Case("pythonic-list-is-text", "[get_time()]", content="[get_time()]"),
]

CASES += close_tag_in_argument_cases(
    ("<think>", "</think>"),
    OPEN + "\nset_port(blob='why <think> and </think> here')\n" + CLOSE,
    ("set_port", {"blob": "why <think> and </think> here"}),
    OPEN,
)

FUZZ = Fuzz(
    markers=(CLOSE,),
    structure=(re.escape(OPEN), re.escape(CLOSE)),
    wrap=(OPEN + "\n", "\n" + CLOSE),
)
