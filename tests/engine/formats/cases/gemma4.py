"""Gemma 4: ``<|tool_call>call:NAME{k:v,...}<tool_call|>`` with ``<|"|>`` string delimiters."""

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases, text_case

FAMILY = "gemma4"

Q = '<|"|>'
W_TEXT = f"<|tool_call>call:get_weather{{city:{Q}Paris{Q},days:3}}<tool_call|>"
W = ("get_weather", {"city": "Paris", "days": 3})
S_TEXT = f"<|tool_call>call:search{{query:{Q}x{Q},limit:10}}<tool_call|>"
S = ("search", {"query": "x", "limit": 10})

CASES = [
    Case("single", W_TEXT, calls=[W], ids=["call00000"]),
    Case("text-around", "Let me check. " + W_TEXT + " Done.", content="Let me check.  Done.", calls=[W]),
    Case("parallel", W_TEXT + S_TEXT, calls=[W, S], ids=["call00000", "call00001"]),
    Case(
        "thought-then-call",
        "<|channel>thought\nThe user wants weather.<channel|>" + W_TEXT,
        reasoning="\nThe user wants weather.",
        calls=[W],
    ),
    Case("empty-thought-then-text", "<|channel>thought\n<channel|>Hello!", reasoning="\n", content="Hello!"),
    Case(
        "prefilled-thought",
        "still thinking<channel|>" + W_TEXT,
        in_reasoning=True,
        reasoning="still thinking",
        calls=[W],
    ),
    Case("stop-marker-after-calls", W_TEXT + S_TEXT + "<|tool_response>", calls=[W, S]),
    text_case("stop-marker-alone-is-text", "Hi <|tool_response> x"),
    Case("empty-arguments", "<|tool_call>call:get_time{}<tool_call|>", calls=[("get_time", {})]),
    Case(
        "numbers-stay-strings",
        f"<|tool_call>call:set_port{{flag:{Q}true{Q},port:{Q}8080{Q},zip:{Q}02139{Q}}}<tool_call|>",
        calls=[("set_port", {"flag": "true", "port": "8080", "zip": "02139"})],
    ),
    Case(
        "nested-and-literals",
        f"<|tool_call>call:search{{filters:{{year:2020}},mode:{Q}fast{Q},query:{Q}q{Q},score:None,"
        f"tags:[{Q}a{Q},{Q}b{Q}]}}<tool_call|>",
        calls=[
            (
                "search",
                {"filters": {"year": 2020}, "mode": "fast", "query": "q", "score": None, "tags": ["a", "b"]},
            )
        ],
    ),
    Case(
        "bools-floats-negative",
        f"<|tool_call>call:get_weather{{city:{Q}X{Q},metric:true,days:-2}}<tool_call|>",
        calls=[("get_weather", {"city": "X", "metric": True, "days": -2})],
    ),
    Case(
        "keys-with-spaces-unknown-tool",
        f"<|tool_call>call:lookup{{first name:{Q}Ada{Q}, {Q}last name{Q}: {Q}Lovelace{Q}, n: 1.5,"
        f" deep: {{a: [1, {{b: false}}, []]}}}}<tool_call|>",
        calls=[
            (
                "lookup",
                {
                    "first name": "Ada",
                    "last name": "Lovelace",
                    "n": 1.5,
                    "deep": {"a": [1, {"b": False}, []]},
                },
            )
        ],
    ),
    Case(
        "unicode-quotes-backslashes",
        f"<|tool_call>call:get_weather{{city:{Q}Zürich \"q\" 'x' \\n 東京 🌧{Q}}}<tool_call|>",
        calls=[("get_weather", {"city": "Zürich \"q\" 'x' \\n 東京 🌧"})],
    ),
    Case(
        "marker-inside-string",
        f"<|tool_call>call:set_port{{blob:{Q}a <tool_call|> b <|tool_call> c {Q}}}<tool_call|>",
        calls=[("set_port", {"blob": "a <tool_call|> b <|tool_call> c "})],
    ),
    Case(
        "thought-marker-inside-string-after-thought",
        "<|channel>thought\nok<channel|>"
        f"<|tool_call>call:set_port{{blob:{Q}<|channel>thought x <channel|>{Q}}}<tool_call|>",
        reasoning="\nok",
        calls=[("set_port", {"blob": "<|channel>thought x <channel|>"})],
    ),
    Case(
        "cut-second-of-pair",
        W_TEXT + f"<|tool_call>call:search{{query:{Q}x",
        truncated=True,
        calls=[W],
        incomplete=["search"],
    ),
    # the closing marker left out at the end of the turn: the whole call is read (below)
    Case("missing-close", "<|tool_call>call:get_time{}", calls=[("get_time", {})]),
    text_case("json-inside-is-text", '<|tool_call>{"name": "get_time", "arguments": {}}<tool_call|> ok'),
    text_case("bare-word-value-is-text", "<|tool_call>call:get_weather{city:Paris}<tool_call|>"),
    text_case("trailing-junk-is-text", "<|tool_call>call:get_time{} extra<tool_call|>"),
    Case(
        "malformed-then-valid",
        "<|tool_call>call:get_time{<tool_call|>" + W_TEXT,
        content="<|tool_call>call:get_time{<tool_call|>",
        calls=[W],
    ),
    Case(
        "call-in-closed-thought",
        "<|channel>thought maybe " + W_TEXT + " no<channel|>Hi",
        reasoning=" maybe " + W_TEXT + " no",
        content="Hi",
    ),
    text_case("plain-text", "A plain answer {with: braces}."),
]

# Issue 27, deviation 3: Gemma 4 sometimes drops the ``call`` word: ``<|tool_call>:NAME{...}``,
# read when the rest is well formed (anything else stays text).
BW_TEXT = W_TEXT.replace("call:", ":", 1)
BS_TEXT = S_TEXT.replace("call:", ":", 1)
CASES += [
    Case("i27-bare-opener", BW_TEXT, calls=[W]),
    Case(
        "i27-bare-opener-text-around",
        "Let me check. " + BW_TEXT + " Done.",
        content="Let me check.  Done.",
        calls=[W],
    ),
    Case("i27-bare-opener-mixed-parallel", BW_TEXT + S_TEXT + BS_TEXT, calls=[W, S, S]),
    Case("i27-bare-opener-empty-arguments", "<|tool_call>:get_time{}<tool_call|>", calls=[("get_time", {})]),
    Case("i27-bare-opener-space-before", "<|tool_call> :get_time{}<tool_call|>", calls=[("get_time", {})]),
    Case(
        "i27-bare-opener-after-thought",
        "<|channel>thought\nweather<channel|>" + BW_TEXT + "<|tool_response>",
        reasoning="\nweather",
        calls=[W],
    ),
    Case(
        "i27-bare-opener-marker-in-string",
        f"<|tool_call>:set_port{{blob:{Q}a <tool_call|> b{Q}}}<tool_call|>",
        calls=[("set_port", {"blob": "a <tool_call|> b"})],
    ),
    Case(
        "i27-bare-opener-in-closed-thought",
        "<|channel>thought maybe " + BW_TEXT + " no<channel|>Hi",
        reasoning=" maybe " + BW_TEXT + " no",
        content="Hi",
    ),
    Case("i27-bare-opener-cut", BW_TEXT[:-14], truncated=True, incomplete=["get_weather"]),
    Case(
        "i27-bare-opener-cut-second", BW_TEXT + BS_TEXT[:25], truncated=True, calls=[W], incomplete=["search"]
    ),
    # Anything else stays text.
    text_case("i27-bare-opener-missing-close", "<|tool_call>:get_time{}"),
    # with its colon left out too, the call is read to a declared tool (NO_CALL_WORD below)
    Case("i27-bare-opener-no-colon", "<|tool_call>get_time{}<tool_call|>", calls=[("get_time", {})]),
    text_case("i27-bare-opener-other-word", "<|tool_call>func:get_time{}<tool_call|>"),
    text_case("i27-bare-opener-double-colon", "<|tool_call>::get_time{}<tool_call|>"),
    text_case("i27-bare-opener-bare-word-value", "<|tool_call>:get_weather{city:Paris}<tool_call|>"),
]

# The closing reasoning tag inside an argument: part of the call in every reasoning state.
# Strings in JSON's or Python's quotes (vLLM #51284: inside arrays and objects, and whole JSON
# arguments), and Python's keyword-call shell (omlx #1846), also with ':' (hermes-agent #7457).
QUOTES_AND_SHELL = [
    Case("json-quoted-values", '<|tool_call>call:get_weather{city: "Paris", days: 3}<tool_call|>', calls=[W]),
    Case("json-arguments", '<|tool_call>call:get_weather{"city": "Paris", "days": 3}<tool_call|>', calls=[W]),
    Case(
        "json-escapes-and-a-brace",
        '<|tool_call>call:set_port{blob: "a \\"b\\" } c\\n"}<tool_call|>',
        calls=[("set_port", {"blob": 'a "b" } c\n'})],
    ),
    Case(
        "quotes-inside-containers",
        f'<|tool_call>call:search{{query:{Q}x{Q},tags:[\'a\', "b"],filters:{{"year": 2020}}}}<tool_call|>',
        calls=[("search", {"query": "x", "tags": ["a", "b"], "filters": {"year": 2020}})],
    ),
    Case(
        "python-quote-with-escape",
        "<|tool_call>call:set_port{blob:'it\\'s'}<tool_call|>",
        calls=[("set_port", {"blob": "it's"})],
    ),
    Case("keyword-call-shell", '<|tool_call>call:get_weather(city="Paris", days=3)<tool_call|>', calls=[W]),
    Case(
        "keyword-call-shell-gemma-strings",
        f"<|tool_call>call:get_weather(city={Q}Paris{Q}, days=3)<tool_call|>",
        calls=[W],
    ),
    Case("keyword-call-shell-empty", "<|tool_call>call:get_time()<tool_call|>", calls=[("get_time", {})]),
    # The same shell with Gemma's ':' (Gemma 4 31B through hosted APIs, hermes-agent #7457).
    Case("colon-call-shell", '<|tool_call>call:get_weather(city: "Paris", days: 3)<tool_call|>', calls=[W]),
    Case(
        "colon-call-shell-gemma-strings",
        f"<|tool_call>call:get_weather(city:{Q}Paris{Q},days:3)<tool_call|>",
        calls=[W],
    ),
    Case(
        "colon-call-shell-python-quotes",
        "<|tool_call>call:search(query: 'x', tags: ['a'])<tool_call|>",
        calls=[("search", {"query": "x", "tags": ["a"]})],
    ),
    # still text: a bare word for a string, both separators in one call, an unclosed quote
    text_case("bare-word-value-is-text", "<|tool_call>call:get_weather{city: Paris}<tool_call|>"),
    text_case(
        "mixed-separators-in-call-shell-are-text",
        '<|tool_call>call:get_weather(city: "Paris", days=3)<tool_call|>',
    ),
    text_case("bare-word-in-call-shell-is-text", "<|tool_call>call:get_weather(city: Paris)<tool_call|>"),
    text_case("unclosed-quote-is-text", '<|tool_call>call:get_weather{city: "Paris}<tool_call|>'),
]
CASES += QUOTES_AND_SHELL

# The call without its opening marker where the answer starts: Gemma 4 goes straight from its
# thought channel to ``call:NAME{...}`` (vLLM #54256), or a small model starts its reply so
# (mattn/tensai #217). Read only for an offered tool, the whole call then the closing marker or
# the end of the reply; anywhere else, or naming another tool, it is text.
UNMARKED_BODY = f"call:get_weather{{city:{Q}Paris{Q},days:3}}"
UNMARKED = [
    Case(
        "unmarked-after-thought",
        "<|channel>thought\nThe user wants weather.<channel|>" + UNMARKED_BODY,
        reasoning="\nThe user wants weather.",
        calls=[W],
    ),
    Case(
        "unmarked-after-thought-with-close",
        "<|channel>thought\nok<channel|>" + UNMARKED_BODY + "<tool_call|>",
        reasoning="\nok",
        calls=[W],
    ),
    Case(
        "unmarked-prefilled-thought",
        "plan<channel|>" + UNMARKED_BODY,
        in_reasoning=True,
        reasoning="plan",
        calls=[W],
    ),
    Case("unmarked-whole-reply", UNMARKED_BODY, calls=[W]),
    Case("unmarked-whole-reply-newline-after", "\n" + UNMARKED_BODY + "\n", content="\n\n", calls=[W]),
    Case("unmarked-keyword-shell", f"call:get_weather(city={Q}Paris{Q}, days=3)", calls=[W]),
    Case(
        "unmarked-then-a-marked-call",
        UNMARKED_BODY + "<tool_call|>" + S_TEXT,
        calls=[W, S],
    ),
    Case("unmarked-cut", f"call:get_weather{{city:{Q}Par", truncated=True, incomplete=["get_weather"]),
    # still text: an undeclared tool, text after the call, a call later in the answer, prose
    text_case("unmarked-undeclared-tool-is-text", f"call:rm_rf{{path:{Q}/{Q}}}"),
    text_case("unmarked-then-text-is-text", UNMARKED_BODY + " and more"),
    text_case("unmarked-mid-answer-is-text", "Sure: " + UNMARKED_BODY),
    text_case("unmarked-prose-is-text", "call: me when you can"),
    Case(
        "unmarked-cut-undeclared-is-text",
        f"call:rm_rf{{path:{Q}/",
        truncated=True,
        content=f"call:rm_rf{{path:{Q}/",
    ),
]
CASES += UNMARKED

# The arguments' last brace left out, the closing marker right after the rest (ollama #17565).
MISSING_BRACE = [
    Case(
        "last-brace-left-out",
        f"<|tool_call>call:search{{query:{Q}x{Q},tags:[{{a:{Q}b{Q}}}]<tool_call|>",
        calls=[("search", {"query": "x", "tags": [{"a": "b"}]})],
    ),
    Case(
        "last-brace-left-out-scalar",
        f"<|tool_call>call:get_weather{{city:{Q}Paris{Q},days:3<tool_call|>",
        calls=[W],
    ),
    # two left out, or a keyword shell's parenthesis: text
    text_case("two-braces-left-out-is-text", "<|tool_call>call:search{filters:{year:2020<tool_call|>"),
    text_case("parenthesis-left-out-is-text", f"<|tool_call>call:get_weather(city={Q}Paris{Q}<tool_call|>"),
]
CASES += MISSING_BRACE

# A marked call ended with the turn instead of <tool_call|> (transformers' Gemma 4 reader: "Some
# Gemma4 models emit <turn|> instead of <tool_call|>"; llama.cpp stops at <turn|>): the whole
# call, complete, at the end of a reply that was not cut.
OPEN_CALL = W_TEXT.removesuffix("<tool_call|>")
TURN_ENDED = [
    Case("turn-ended-call", "Let me check. " + OPEN_CALL, content="Let me check. ", calls=[W]),
    Case("turn-ended-call-turn-marker", OPEN_CALL + "<turn|>", calls=[W]),
    Case("turn-ended-call-newline-after", OPEN_CALL + "\n", content="\n", calls=[W]),
    Case("turn-ended-after-a-closed-call", S_TEXT + OPEN_CALL, calls=[S, W]),
    Case("turn-ended-keyword-shell", f"<|tool_call>call:get_weather(city={Q}Paris{Q}, days=3)", calls=[W]),
    Case(
        "turn-ended-after-thought", "<|channel>thought\nok<channel|>" + OPEN_CALL, reasoning="\nok", calls=[W]
    ),
    Case("turn-ended-cut", OPEN_CALL, truncated=True, incomplete=["get_weather"]),
    # text: something after the call, the last brace left out too, an unclosed string
    text_case("turn-ended-then-text-is-text", OPEN_CALL + " more"),
    text_case("turn-ended-brace-left-out-is-text", f"<|tool_call>call:get_weather{{city:{Q}Paris{Q}"),
    text_case("turn-ended-marker-then-text-is-text", OPEN_CALL + "<turn|>x"),
]
CASES += TURN_ENDED

# A string's opening delimiter left out, its closing one written (sglang #39240: Gemma 4 26B A4B
# does so on up to a third of calls), and the comma after a string left out (yzma #243).
OPENING_LEFT_OUT = [
    Case(
        "string-opening-left-out",
        f"<|tool_call>call:search{{query:weather in Tokyo{Q}}}<tool_call|>",
        calls=[("search", {"query": "weather in Tokyo"})],
    ),
    Case(
        "string-opening-left-out-comma-inside",
        f"<|tool_call>call:search{{query:Paris, France{Q},limit:5}}<tool_call|>",
        calls=[("search", {"query": "Paris, France", "limit": 5})],
    ),
    Case(
        "string-opening-left-out-second-value",
        f"<|tool_call>call:get_weather{{days:2,city:New York {Q}}}<tool_call|>",
        calls=[("get_weather", {"days": 2, "city": "New York "})],
    ),
    Case(
        "string-opening-left-out-braces-inside",
        f"<|tool_call>call:set_port{{blob:a}} b {{c{Q},flag:{Q}x{Q}}}<tool_call|>",
        calls=[("set_port", {"blob": "a} b {c", "flag": "x"})],
    ),
    Case(
        "string-opening-left-out-in-array",
        f"<|tool_call>call:search{{query:{Q}q{Q},tags:[red{Q},{Q}blue{Q}]}}<tool_call|>",
        calls=[("search", {"query": "q", "tags": ["red", "blue"]})],
    ),
    Case(
        "string-opening-left-out-then-text",
        f"Checking. <|tool_call>call:search{{query:cats{Q}}}<tool_call|> Done.",
        content="Checking.  Done.",
        calls=[("search", {"query": "cats"})],
    ),
    Case(
        "string-opening-left-out-keyword-shell",
        f"<|tool_call>call:get_weather(city=Paris{Q}, days=3)<tool_call|>",
        calls=[W],
    ),
    Case(
        "comma-left-out-after-string",
        f"<|tool_call>call:get_weather{{city:{Q}Paris{Q}days:3}}<tool_call|>",
        calls=[W],
    ),
    Case(
        "comma-left-out-after-string-newline",
        f"<|tool_call>call:search{{query:{Q}x{Q}\nlimit:10}}<tool_call|>",
        calls=[S],
    ),
    # still text: a bare word with no delimiter after it, a delimiter that opens the next value,
    # a comma left out after a number, a string left open before the closing marker
    text_case("bare-word-is-text", "<|tool_call>call:search{query:cats}<tool_call|>"),
    text_case(
        "bare-word-before-a-string-is-text", f"<|tool_call>call:search{{query:cats,mode:{Q}x{Q}}}<tool_call|>"
    ),
    text_case(
        "comma-left-out-after-number-is-text",
        f"<|tool_call>call:get_weather{{days:3 city:{Q}Paris{Q}}}<tool_call|>",
    ),
    text_case("string-left-open-is-text", f"<|tool_call>call:search{{query:{Q}cats}}<tool_call|> more"),
]
CASES += OPENING_LEFT_OUT

# The closing marker written again after a call (ollama #15370: Gemma 4 does so now and then):
# part of the call, never content.
REPEATED_CLOSE = [
    Case("close-written-twice", W_TEXT + "<tool_call|>", calls=[W]),
    Case("close-written-twice-then-text", W_TEXT + "<tool_call|>Done.", content="Done.", calls=[W]),
    Case("close-written-again-after-newline", W_TEXT + "\n<tool_call|>\n", content="\n", calls=[W]),
    Case(
        "close-written-three-times-then-response", W_TEXT + "<tool_call|>" * 2 + "<|tool_response>", calls=[W]
    ),
    Case("close-written-twice-then-a-call", W_TEXT + "<tool_call|>" + S_TEXT, calls=[W, S]),
    # text: the marker after words, and a marker's start at the reply's end
    Case("close-after-words-is-text", W_TEXT + " ok<tool_call|>", content=" ok<tool_call|>", calls=[W]),
    Case("close-started-is-text", W_TEXT + "<tool_c", content="<tool_c", calls=[W]),
]
CASES += REPEATED_CLOSE

# A marked call whose call word was left out or written "-" (vLLM #54778), to a declared tool.
NO_CALL_WORD = [
    Case("call-word-left-out", W_TEXT.replace("call:", ""), calls=[W]),
    Case("call-word-written-dash", W_TEXT.replace("call:", "-"), calls=[W]),
    Case(
        "call-word-left-out-keyword-shell",
        f"<|tool_call>get_weather(city={Q}Paris{Q}, days=3)<tool_call|>",
        calls=[W],
    ),
    Case("call-word-left-out-after-a-call", S_TEXT + W_TEXT.replace("call:", ""), calls=[S, W]),
    # text: an undeclared tool, a space before the brace, a second fault
    text_case("call-word-left-out-undeclared-is-text", W_TEXT.replace("call:get_weather", "get_forecast")),
    text_case("call-word-left-out-space-is-text", W_TEXT.replace("call:get_weather", "get_weather ")),
    text_case(
        "call-word-left-out-brace-too-is-text", f"<|tool_call>get_weather{{city:{Q}Paris{Q}<tool_call|>"
    ),
]
CASES += NO_CALL_WORD

# A declared tool named with a prefix Gemma 4 invented (the name doubled: flutter_gemma #228; a
# namespace: omlx #1830; OpenAI's "functions.": mlxcel #521): read as that tool where the whole
# name is not declared; a declared name with a colon (an MCP server's) stays itself.
ARGS = f"{{city:{Q}Paris{Q},days:3}}<tool_call|>"
MCP_TOOLS = [
    {"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}}
    for n in ("srv:get_weather", "get_weather")
]
PREFIXED_NAME = [
    Case("name-doubled", "<|tool_call>call:get_weather:get_weather" + ARGS, calls=[W]),
    Case("name-in-a-namespace", "<|tool_call>call:google:mcp:text_generation:get_weather" + ARGS, calls=[W]),
    Case("name-after-functions", "<|tool_call>call:functions.get_weather" + ARGS, calls=[W]),
    Case(
        "name-declared-with-a-colon",
        "<|tool_call>call:srv:get_weather{}<tool_call|>",
        tools=MCP_TOOLS,
        calls=[("srv:get_weather", {})],
    ),
    # an undeclared last part, or a dotted prefix other than "functions.": the name as written
    Case(
        "name-prefixed-undeclared", "<|tool_call>call:a:get_forecast" + ARGS, calls=[("a:get_forecast", W[1])]
    ),
    Case(
        "name-dotted-prefix",
        "<|tool_call>call:weather.get_weather" + ARGS,
        calls=[("weather.get_weather", W[1])],
    ),
]
CASES += PREFIXED_NAME

# Its only call written inside the thought channel, the channel closed right after it (omlx
# #1854): the call counts, its text reasoning too; thinking after it, or a call after the
# channel, makes it a draft.
THOUGHT = "<|channel>thought"
CALL_ENDS_THOUGHT = [
    Case(
        "call-ends-thought",
        THOUGHT + "\nI will check.\n" + W_TEXT + "<channel|>",
        reasoning="\nI will check.\n" + W_TEXT,
        calls=[W],
    ),
    Case(
        "call-ends-thought-then-text",
        THOUGHT + "\nCheck.\n" + W_TEXT + "\n<channel|>Checking.",
        reasoning="\nCheck.\n" + W_TEXT + "\n",
        content="Checking.",
        calls=[W],
    ),
    Case(
        "call-in-thought-then-more-thinking",
        THOUGHT + "\nplan " + W_TEXT + " no<channel|>ok",
        reasoning="\nplan " + W_TEXT + " no",
        content="ok",
    ),
    Case(
        "call-in-thought-then-call",
        THOUGHT + "\nplan " + W_TEXT + "<channel|>" + S_TEXT,
        reasoning="\nplan " + W_TEXT,
        calls=[S],
    ),
]
CASES += CALL_ENDS_THOUGHT
CASES += close_tag_in_argument_cases(
    ("<|channel>thought", "<channel|>"),
    f"<|tool_call>call:set_port{{blob:{Q}why <|channel>thought and <channel|> here{Q}}}<tool_call|>",
    ("set_port", {"blob": "why <|channel>thought and <channel|> here"}),
    "<|tool_call>",
)

# Python's '=' for ':' after a key in Gemma's braces, for any argument (ollama #17882: Gemma 4
# 26B A4B, `save_as='report.docx'` after a first argument written Gemma's way); and a quoted
# string closed again with Gemma's delimiter (ollama #15315, read so by Ollama's repairs #15374).
PY_SEPARATOR = [
    Case(
        "equals-after-the-first-argument",
        f"<|tool_call>call:search{{query:{Q}x{Q},limit='10'}}<tool_call|>",
        calls=[("search", {"query": "x", "limit": 10})],
    ),
    Case(
        "equals-throughout",
        f"<|tool_call>call:get_weather{{city={Q}Paris{Q}, days=3}}<tool_call|>\nChecking.",
        content="\nChecking.",
        calls=[W],
    ),
    Case(
        "equals-json-quoted",
        '<|channel>thought\nweather<channel|><|tool_call>call:get_weather{city="Paris",days=3}<tool_call|>',
        reasoning="\nweather",
        calls=[W],
    ),
    Case(
        "equals-cut",
        f"<|tool_call>call:get_weather{{city={Q}Par",
        truncated=True,
        incomplete=["get_weather"],
    ),
    Case(
        "quoted-then-gemma-delimiter",
        f"<|tool_call>call:search{{query:':\\s*\\w+'{Q},limit:10}}<tool_call|>",
        calls=[("search", {"query": ":\\s*\\w+", "limit": 10})],
    ),
    Case(
        "quoted-then-gemma-delimiter-last",
        f'<|tool_call>call:get_weather{{days:3,city:"Paris"{Q}}}<tool_call|>',
        calls=[W],
    ),
    # still text: a key that is no identifier before '=', a doubled separator, a bare word after
    # '=', a string closed twice (Python's call shell keeps one separator: QUOTES_AND_SHELL)
    text_case(
        "equals-after-a-spaced-key", f"<|tool_call>call:get_weather{{the city={Q}Paris{Q}}}<tool_call|>"
    ),
    text_case("equals-then-colon", f"<|tool_call>call:get_weather{{city=:{Q}Paris{Q}}}<tool_call|>"),
    text_case("equals-bare-word", "<|tool_call>call:get_weather{city=Paris}<tool_call|>"),
    text_case(
        "quoted-then-two-delimiters",
        f'<|tool_call>call:get_weather{{city:"Paris"{Q}{Q}}}<tool_call|>',
    ),
]
CASES += PY_SEPARATOR

# A <|tool_response> straight after a call is consumed with it (the 31B template renders it there),
# and so is the closing marker written again after it.
FUZZ = Fuzz(
    markers=("<tool_call|>", '<|"|>', "<|tool_response>"),
    structure=(r"<\|tool_response>", r"<tool_call\|>"),
    forbidden=('<|"|>',),
)
