"""Kimi K3: ``<|open|>call tool="NAME"<|sep|>`` + typed argument frames + ``<|close|>``."""

from tests.engine.formats.harness import Case

FAMILY = "kimi-k3"

OP, C, S = "<|open|>", "<|close|>", "<|sep|>"


def arg(key: str, typ: str, value: str) -> str:
    return f'{OP}argument key="{key}" type="{typ}"{S}{value}{C}'


def call(name: str, *args: str, sep: str = "") -> str:
    return f'{OP}call tool="{name}"{S}' + sep + sep.join(args) + sep + C


W = call("get_weather", arg("city", "string", "Paris"), arg("days", "integer", "3"))
PW = ("get_weather", {"city": "Paris", "days": 3})

CASES = [
    Case("single", W, calls=[PW], ids=["call00000"]),
    Case("newline-layout", call("get_weather", arg("city", "string", "Paris"), arg("days", "integer", "3"), sep="\n"),
         calls=[PW]),
    Case("text-around", "Checking. " + W + " Done.", content="Checking.  Done.", calls=[PW]),
    Case("parallel", W + "\n" + call("get_time"), content="\n", calls=[PW, ("get_time", {})],
         ids=["call00000", "call00001"]),
    Case("think-then-call", "<think>need weather</think>\n" + W, reasoning="need weather", content="\n", calls=[PW]),
    Case("prefilled-think", "need weather</think>" + W, in_reasoning=True, reasoning="need weather", calls=[PW]),
    Case("typed-values", call("search", arg("query", "string", "q"), arg("filters", "object", '{"year": 2020}'),
                              arg("tags", "array", '["a"]'), arg("score", "null", "null"), arg("mode", "integer", "7")),
         calls=[("search", {"query": "q", "filters": {"year": 2020}, "tags": ["a"], "score": None, "mode": 7})]),
    Case("numbers-stay-strings", call("set_port", arg("port", "string", "8080"), arg("zip", "string", "02139")),
         calls=[("set_port", {"port": "8080", "zip": "02139"})]),
    Case("whitespace-and-unicode", call("set_port", arg("blob", "string", ' Zürich\n東京 "q" \\n ')),
         calls=[("set_port", {"blob": ' Zürich\n東京 "q" \\n '})]),
    Case("marker-inside-string", call("set_port", arg("blob", "string", f'{OP}call tool="x"{S}')),
         calls=[("set_port", {"blob": f'{OP}call tool="x"{S}'})]),
    Case("close-inside-json-string", call("search", arg("query", "string", "q"), arg("tags", "array", f'["{C}"]')),
         calls=[("search", {"query": "q", "tags": [C]})]),
    Case("string-for-integer-typed-by-schema", call("get_weather", arg("city", "string", "X"), arg("days", "string", "4")),
         calls=[("get_weather", {"city": "X", "days": 4})]),
    Case("unknown-type", call("get_time", arg("x", "date", "today")), content=call("get_time", arg("x", "date", "today"))),
    Case("unclosed-call", W[:-len(C)], content=W[:-len(C)]),
    Case("cut", W[:30], truncated=True, incomplete=[None]),
    Case("other-frame-is-text", f"{OP}assistant{S}hello{C}", content=f"{OP}assistant{S}hello{C}"),
    Case("text-inside-call", call("get_time", "oops"), content=call("get_time", "oops")),
    Case("duplicate-key", call("get_weather", arg("city", "string", "A"), arg("city", "string", "B")),
         content=call("get_weather", arg("city", "string", "A"), arg("city", "string", "B"))),
]
