"""MiniCPM5: ``<function name="NAME"><param name="K">V</param></function>``, CDATA for markup values."""

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "minicpm5"

W = '<function name="get_weather"><param name="city">Paris</param><param name="days">3</param></function>'
S = '<function name="search"><param name="query">x</param><param name="limit">10</param></function>'
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})

CASES = [
    Case("single", W, calls=[PW], ids=["call00000"]),
    Case("text-then-call", "Let me check.\n" + W, content="Let me check.\n", calls=[PW]),
    Case("parallel", W + "\n" + S, content="\n", calls=[PW, PS]),
    Case("call-between-text", "First." + W + "Then.", content="First.Then.", calls=[PW]),
    Case("no-params", '<function name="get_time"></function>', calls=[("get_time", {})]),
    Case(
        "python-literals-typed",
        '<function name="search"><param name="query">q</param><param name="tags">[\'a b\', \'c\']</param>'
        '<param name="filters">{\'year\': 2020}</param><param name="score">None</param></function>',
        calls=[("search", {"query": "q", "tags": ["a b", "c"], "filters": {"year": 2020}, "score": None})],
    ),
    Case(
        "string-props-keep-text",
        '<function name="set_port"><param name="port">8080</param><param name="flag">True</param></function>',
        calls=[("set_port", {"port": "8080", "flag": "True"})],
    ),
    Case(
        "cdata-value",
        '<function name="set_port"><param name="blob"><![CDATA[a < b & c\n</function></param>]]></param></function>',
        calls=[("set_port", {"blob": "a < b & c\n</function></param>"})],
    ),
    Case(
        "spaced-params",
        '<function name="get_weather">\n<param name="city">Paris</param>\n</function>',
        calls=[("get_weather", {"city": "Paris"})],
    ),
    Case(
        "unicode",
        '<function name="get_weather"><param name="city">Zürich 東京</param></function>',
        calls=[("get_weather", {"city": "Zürich 東京"})],
    ),
    # -- reasoning
    Case("think-block", "<think>\nplan\n</think>\n\n" + W, reasoning="\nplan\n", content="\n\n", calls=[PW]),
    Case(
        "prefilled-think",
        "plan\n</think>\n" + W,
        in_reasoning=True,
        reasoning="plan\n",
        content="\n",
        calls=[PW],
    ),
    Case(
        "call-in-closed-reasoning", "<think>maybe " + W + "</think>Hi", reasoning="maybe " + W, content="Hi"
    ),
    # -- cut
    Case(
        "cut-second",
        W + '<function name="search"><param name="qu',
        truncated=True,
        calls=[PW],
        incomplete=["search"],
    ),
    Case(
        "cut-in-cdata",
        '<function name="set_port"><param name="blob"><![CDATA[a </function>',
        truncated=True,
        incomplete=["set_port"],
    ),
    # -- not this family's shapes
    Case(
        "markup-outside-cdata",
        '<function name="set_port"><param name="blob">a <b> c</param></function>',
        content='<function name="set_port"><param name="blob">a <b> c</param></function>',
    ),
    Case("functionary-shape", "<function=get_time>{}</function>", content="<function=get_time>{}</function>"),
    Case(
        "single-quoted-name",
        "<function name='get_time'></function>",
        content="<function name='get_time'></function>",
    ),
    Case(
        "unknown-element",
        '<function name="get_time"><arg name="a">1</arg></function>',
        content='<function name="get_time"><arg name="a">1</arg></function>',
    ),
    Case(
        "duplicate-param",
        '<function name="get_weather"><param name="city">a</param><param name="city">b</param></function>',
        content='<function name="get_weather"><param name="city">a</param><param name="city">b</param>'
        "</function>",
    ),
    Case("unclosed-at-eos", '<function name="get_time">', content='<function name="get_time">'),
    Case(
        "html-in-text",
        'Use <function name="x"> in HTML? no: <b>bold</b>',
        content='Use <function name="x"> in HTML? no: <b>bold</b>',
    ),
]

CASES += close_tag_in_argument_cases(
    ("<think>", "</think>"),
    '<function name="set_port"><param name="blob"><![CDATA[why <think> and </think> here]]></param></function>',
    ("set_port", {"blob": "why <think> and </think> here"}),
    '<function name="',
)

# A CDATA section cannot hold its own end.
FUZZ = Fuzz(markers=("</function>", '<param name="', "</param>", "<![CDATA[", "]]>"), forbidden=("]]>",))
