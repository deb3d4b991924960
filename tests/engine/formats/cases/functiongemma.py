"""FunctionGemma: ``<start_function_call>call:NAME{k:<escape>v<escape>}<end_function_call>``."""

from tests.engine.formats.harness import Case, Fuzz

FAMILY = "functiongemma"

OPEN, CLOSE, E, RESP = "<start_function_call>", "<end_function_call>", "<escape>", "<start_function_response>"
W = OPEN + "call:get_weather{city:" + E + "Paris" + E + ",days:3}" + CLOSE
S = OPEN + "call:search{query:" + E + "x" + E + ",limit:10}" + CLOSE
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})

CASES = [
    Case("single", W, calls=[PW], ids=["call00000"]),
    Case("then-response-token", W + RESP, calls=[PW]),
    Case("parallel", W + S + RESP, calls=[PW, PS], ids=["call00000", "call00001"]),
    Case("text-around", "Sure. " + W + " Done.", content="Sure.  Done.", calls=[PW]),
    Case(
        "nested-values",
        OPEN
        + "call:search{query:"
        + E
        + "q"
        + E
        + ",tags:["
        + E
        + "a"
        + E
        + "],filters:{year:2020},score:null}"
        + CLOSE,
        calls=[("search", {"query": "q", "tags": ["a"], "filters": {"year": 2020}, "score": None})],
    ),
    Case(
        "booleans",
        OPEN + "call:get_weather{city:" + E + "Oslo" + E + ",metric:true}" + CLOSE,
        calls=[("get_weather", {"city": "Oslo", "metric": True})],
    ),
    Case(
        "string-props-keep-text",
        OPEN + "call:set_port{port:" + E + "8080" + E + ",zip:" + E + "02139" + E + "}" + CLOSE,
        calls=[("set_port", {"port": "8080", "zip": "02139"})],
    ),
    Case(
        "close-marker-inside-string",
        OPEN + "call:set_port{blob:" + E + "a " + CLOSE + " b" + E + "}" + CLOSE,
        calls=[("set_port", {"blob": "a " + CLOSE + " b"})],
    ),
    Case("no-arguments", OPEN + "call:get_time{}" + CLOSE, calls=[("get_time", {})]),
    # -- cut
    Case("cut-in-string", OPEN + "call:search{query:" + E + "a", truncated=True, incomplete=["search"]),
    Case("cut-after-first", W + OPEN + "call:sea", truncated=True, calls=[PW], incomplete=["sea"]),
    # -- text
    Case("missing-call-word", OPEN + "get_time{}" + CLOSE, content=OPEN + "get_time{}" + CLOSE),
    Case(
        "gemma4-quote-is-not-this-wire",
        OPEN + 'call:get_weather{city:<|"|>Paris<|"|>}' + CLOSE,
        content=OPEN + 'call:get_weather{city:<|"|>Paris<|"|>}' + CLOSE,
    ),
    Case(
        "unquoted-string",
        OPEN + "call:get_weather{city:Paris}" + CLOSE,
        content=OPEN + "call:get_weather{city:Paris}" + CLOSE,
    ),
    Case("unclosed-at-eos", OPEN + "call:get_time{}", content=OPEN + "call:get_time{}"),
    Case(
        "gemma4-shape",
        "<|tool_call>call:get_time{}<tool_call|>",
        content="<|tool_call>call:get_time{}<tool_call|>",
    ),
]

FUZZ = Fuzz(
    markers=(CLOSE, E, RESP),
    structure=("<start_function_response>",),
    forbidden=(E, '<|"|>'),
)
