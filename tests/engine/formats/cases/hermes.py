"""Hermes JSON: ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>``."""

from dataclasses import replace

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "hermes"

W = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}\n</tool_call>'

CASES = [
    Case("single", W, calls=[("get_weather", {"city": "Paris", "days": 3})], ids=["call00000"]),
    Case(
        "text-around",
        "Let me check.\n" + W + "\nDone.",
        content="Let me check.\n\nDone.",
        calls=[("get_weather", {"city": "Paris", "days": 3})],
    ),
    Case(
        "parallel",
        W + '\n<tool_call>\n{"name": "search", "arguments": {"query": "x", "limit": "10"}}\n</tool_call>',
        content="\n",
        calls=[("get_weather", {"city": "Paris", "days": 3}), ("search", {"query": "x", "limit": 10})],
        ids=["call00000", "call00001"],
    ),
    Case(
        "qwen3-think",
        "<think>\nThe user wants weather.\n</think>\n\n" + W,
        reasoning="\nThe user wants weather.\n",
        content="\n\n",
        calls=[("get_weather", {"city": "Paris", "days": 3})],
    ),
    Case(
        "prefilled-think",
        "I should call the tool.\n</think>\n\n" + W,
        in_reasoning=True,
        reasoning="I should call the tool.\n",
        content="\n\n",
        calls=[("get_weather", {"city": "Paris", "days": 3})],
    ),
    Case(
        "orphan-close",
        "thinking without an opening tag</think>The answer is 4.",
        reasoning="thinking without an opening tag",
        content="The answer is 4.",
    ),
    Case(
        "call-in-closed-reasoning",
        "<think>maybe " + W + " no, answer directly</think>Hello",
        reasoning="maybe " + W + " no, answer directly",
        content="Hello",
    ),
    Case(
        "unclosed-prefilled-think-then-call",
        "I need the weather.\n" + W,
        in_reasoning=True,
        reasoning="I need the weather.\n",
        calls=[("get_weather", {"city": "Paris", "days": 3})],
    ),
    Case(
        "marker-inside-json-string",
        '<tool_call>{"name": "set_port", "arguments": {"blob": "a </tool_call> b <tool_call>"}}</tool_call>',
        calls=[("set_port", {"blob": "a </tool_call> b <tool_call>"})],
    ),
    Case(
        "string-props-keep-text",
        '<tool_call>{"name": "set_port", "arguments": {"port": "8080", "zip": "02139", "flag": "true", '
        '"blob": "{\\"a\\": 1}"}}</tool_call>',
        calls=[("set_port", {"port": "8080", "zip": "02139", "flag": "true", "blob": '{"a": 1}'})],
    ),
    Case(
        "typed-by-schema",
        '<tool_call>{"name": "search", "arguments": {"query": "q", "limit": "10", "filters": "{\\"year\\": \\"2020\\"}", '
        '"tags": "[\\"a\\"]", "score": "null", "mode": "7"}}</tool_call>',
        calls=[
            (
                "search",
                {
                    "query": "q",
                    "limit": 10,
                    "filters": {"year": 2020},
                    "tags": ["a"],
                    "score": None,
                    "mode": "7",
                },
            )
        ],
    ),
    Case(
        "untypable-kept",
        '<tool_call>{"name": "search", "arguments": {"query": "q", "limit": "ten"}}</tool_call>',
        calls=[("search", {"query": "q", "limit": "ten"})],
    ),
    Case(
        "fenced",
        '<tool_call>\n```json\n{"name": "get_time", "arguments": {}}\n```\n</tool_call>',
        calls=[("get_time", {})],
    ),
    Case(
        "trailing-comma",
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Oslo",},}</tool_call>',
        calls=[("get_weather", {"city": "Oslo"})],
    ),
    Case(
        "arguments-as-json-string",
        '<tool_call>{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}</tool_call>',
        calls=[("get_weather", {"city": "Rome"})],
    ),
    Case(
        "missing-close-at-eos",
        '<tool_call>\n{"name": "get_time", "arguments": {}}\n',
        calls=[("get_time", {})],
    ),
    Case(
        "missing-close-truncated",
        '<tool_call>\n{"name": "get_time", "arguments": {}}\n',
        truncated=True,
        incomplete=["get_time"],
    ),
    Case(
        "cut-second-of-pair",
        W + '<tool_call>{"name": "search", "arguments": {"que',
        truncated=True,
        calls=[("get_weather", {"city": "Paris", "days": 3})],
        incomplete=["search"],
    ),
    # Qwen2.5's doubled braces (QwenLM/Qwen3 #924): one pair taken off (more in CLOSERS)
    Case(
        "qwen25-double-braces",
        '<tool_call>\n{{"name": "get_weather", "arguments": {"city": "Paris"}}}\n</tool_call>',
        calls=[("get_weather", {"city": "Paris"})],
    ),
    Case(
        "not-json",
        "<tool_call>\nget_weather(city='Paris')\n</tool_call> ok",
        content="<tool_call>\nget_weather(city='Paris')\n</tool_call> ok",
    ),
    Case(
        "extra-key",
        '<tool_call>{"name": "get_time", "arguments": {}, "x": 1}</tool_call>',
        content='<tool_call>{"name": "get_time", "arguments": {}, "x": 1}</tool_call>',
    ),
    Case(
        "text-after-json",
        '<tool_call>{"name": "get_time", "arguments": {}} trailing</tool_call>',
        content='<tool_call>{"name": "get_time", "arguments": {}} trailing</tool_call>',
    ),
    Case(
        "json-for-user",
        'Here is JSON: {"name": "get_weather", "arguments": {"city": "Paris"}}',
        content='Here is JSON: {"name": "get_weather", "arguments": {"city": "Paris"}}',
    ),
    Case("partial-marker-text", "a < b and <tool_ is not a tag", content="a < b and <tool_ is not a tag"),
    Case(
        "unclosed-call-at-eos",
        '<tool_call>{"name": "get_time", "argu',
        content='<tool_call>{"name": "get_time", "argu',
    ),
    Case(
        "unicode",
        '<tool_call>{"name": "get_weather", "arguments": {"city": "Zürich 東京"}}</tool_call>',
        calls=[("get_weather", {"city": "Zürich 東京"})],
    ),
]

# The closing reasoning tag inside an argument: part of the call in every reasoning state.
CASES += close_tag_in_argument_cases(
    ("<think>", "</think>"),
    '<tool_call>{"name": "set_port", "arguments": {"blob": "why <think> and </think> here"}}</tool_call>',
    ("set_port", {"blob": "why <think> and </think> here"}),
    "<tool_call>",
)

# -- TNG R1T2 Chimera's deviation: a JSON list of calls inside one <tool_call> (vLLM's tng parser)
EW = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'
ES = '{"name": "search", "arguments": {"query": "x", "limit": "10"}}'
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})
LIST2 = "<tool_call>\n[" + EW + ", " + ES + "]\n</tool_call>"


def _text(case_id: str, text: str, **kw) -> Case:
    """A region that is not the list deviation: the text, byte for byte."""
    return Case(case_id, text, content=text, **kw)


TNG_LIST = [
    Case("list-two-calls", LIST2, calls=[PW, PS], ids=["call00000", "call00001"]),
    Case("list-one-call", "<tool_call>\n[" + EW + "]\n</tool_call>", calls=[PW]),
    Case("list-compact", "<tool_call>[" + EW + "," + ES + "]</tool_call>", calls=[PW, PS]),
    Case(
        "list-spaced",
        "<tool_call>\n[\n  " + EW + ",\n  " + ES + "\n]\n</tool_call>",
        calls=[PW, PS],
    ),
    Case(
        "list-text-around",
        "I'll check both.\n" + LIST2 + "\nOK.",
        content="I'll check both.\n\nOK.",
        calls=[PW, PS],
    ),
    Case(
        "list-then-object-tag",
        LIST2 + "\n<tool_call>\n" + '{"name": "get_time", "arguments": {}}' + "\n</tool_call>",
        content="\n",
        calls=[PW, PS, ("get_time", {})],
        ids=["call00000", "call00001", "call00002"],
    ),
    Case(
        "list-after-think",
        "<think>\nTwo tools.\n</think>\n\n" + LIST2,
        reasoning="\nTwo tools.\n",
        content="\n\n",
        calls=[PW, PS],
    ),
    Case(
        "list-prefilled-think",
        "Two tools.\n</think>\n\n" + LIST2,
        in_reasoning=True,
        reasoning="Two tools.\n",
        content="\n\n",
        calls=[PW, PS],
    ),
    Case(
        "list-prefilled-unclosed",
        "Two tools.\n" + LIST2,
        in_reasoning=True,
        reasoning="Two tools.\n",
        calls=[PW, PS],
    ),
    Case(
        "list-in-closed-reasoning",
        "<think>maybe " + LIST2 + " no</think>Hi",
        reasoning="maybe " + LIST2 + " no",
        content="Hi",
    ),
    Case(
        "list-markers-inside-strings",
        '<tool_call>[{"name": "set_port", "arguments": {"blob": "a </tool_call> ] b"}}, '
        '{"name": "set_port", "arguments": {"blob": "[<tool_call>{"}}]</tool_call>',
        calls=[("set_port", {"blob": "a </tool_call> ] b"}), ("set_port", {"blob": "[<tool_call>{"})],
    ),
    Case(
        "list-arguments-as-json-string",
        '<tool_call>[{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}]</tool_call>',
        calls=[("get_weather", {"city": "Rome"})],
    ),
    Case(
        "list-typed-by-schema",
        '<tool_call>[{"name": "search", "arguments": {"query": "q", "limit": "7", "score": "null"}}, '
        '{"name": "set_port", "arguments": {"port": "8080"}}]</tool_call>',
        calls=[("search", {"query": "q", "limit": 7, "score": None}), ("set_port", {"port": "8080"})],
    ),
    Case(
        "list-unicode",
        '<tool_call>[{"name": "get_weather", "arguments": {"city": "Zürich 東京"}}]</tool_call>',
        calls=[("get_weather", {"city": "Zürich 東京"})],
    ),
    Case("list-fenced", "<tool_call>\n```json\n[" + EW + "]\n```\n</tool_call>", calls=[PW]),
    Case("list-close-implied-at-eos", "<tool_call>\n[" + EW + ", " + ES + "]\n", calls=[PW, PS]),
    # cut by the token limit: the list is one region, one incomplete call
    Case(
        "list-cut-in-second",
        "<tool_call>\n[" + EW + ', {"name": "search", "argu',
        truncated=True,
        incomplete=["get_weather"],
    ),
    Case(
        "list-cut-in-close-tag", "<tool_call>[" + EW + "]</tool_", truncated=True, incomplete=["get_weather"]
    ),
    Case("list-cut-before-close", "<tool_call>\n[" + EW + "]\n", truncated=True, incomplete=["get_weather"]),
    Case(
        "list-after-complete-call-cut",
        W + '<tool_call>[{"name": "search", "arguments": {"que',
        truncated=True,
        calls=[("get_weather", {"city": "Paris", "days": 3})],
        incomplete=["search"],
    ),
    # not the deviation: the whole region is text
    _text("list-empty", "<tool_call>[]</tool_call>"),
    _text("list-empty-spaced", "<tool_call>\n[ ]\n</tool_call> ok"),
    _text("list-string-element", "<tool_call>[" + EW + ', "get_time"]</tool_call>'),
    _text("list-nested-list-element", "<tool_call>[[" + EW + "]]</tool_call>"),
    _text("list-number-element", "<tool_call>[1, " + EW + "]</tool_call>"),
    _text("list-extra-key", '<tool_call>[{"name": "get_time", "arguments": {}, "id": "c1"}]</tool_call>'),
    _text(
        "list-one-bad-element",
        "<tool_call>[" + EW + ', {"name": "get_time", "arguments": {}, "x": 1}]</tool_call>',
    ),
    _text("list-missing-arguments", '<tool_call>[{"name": "get_time"}]</tool_call>'),
    _text("list-parameters-key", '<tool_call>[{"name": "get_time", "parameters": {}}]</tool_call>'),
    _text("list-arguments-not-object", '<tool_call>[{"name": "get_time", "arguments": [1]}]</tool_call>'),
    _text("list-name-not-string", '<tool_call>[{"name": 7, "arguments": {}}]</tool_call>'),
    _text("list-trailing-comma", "<tool_call>[" + EW + ",]</tool_call>"),
    _text("list-text-after", "<tool_call>[" + EW + "] and more</tool_call>"),
    _text("list-text-before", "<tool_call>calls: [" + EW + "]</tool_call>"),
    _text("list-two-lists", "<tool_call>[" + EW + "][" + ES + "]</tool_call>"),
    _text("list-unclosed-at-eos", "<tool_call>[" + EW + ', {"name": "get_t'),
    _text("list-python-calls", '<tool_call>\n[get_weather(city="Paris")]\n</tool_call>'),
    _text("list-wrong-nesting", "<tool_call>[" + EW + "</tool_call>]"),
]
CASES += TNG_LIST

# The closing reasoning tag inside an argument of a listed call.
CASES += [
    replace(c, id="list-" + c.id)
    for c in close_tag_in_argument_cases(
        ("<think>", "</think>"),
        '<tool_call>[{"name": "set_port", "arguments": {"blob": "why <think> and </think> here"}}]</tool_call>',
        ("set_port", {"blob": "why <think> and </think> here"}),
        "<tool_call>",
    )
]

# Qwen2.5-Coder's strays (it ships Hermes' template): the whole reply a bare or fenced call object,
# or calls between its tool-list tags <tools>...</tools>. Read only as calls to offered tools.
LLAMA3 = ("llama3",)  # Llama 3 reads a bare or fenced object written with "arguments" too
LLAMAS = ("llama3", "llama4")  # ... and Llama 4 a bare one
TOOLS1 = "<tools>\n" + EW + "\n</tools>"
DEFINITION = '{"type": "function", "function": {"name": "get_weather", "parameters": {}}}'
QWEN_CODER = [
    Case("bare-call", EW, calls=[PW], also=LLAMAS),
    Case("bare-call-compact", '{"name":"get_time","arguments":{}}', calls=[("get_time", {})], also=LLAMAS),
    Case("bare-call-spaced", "\n" + EW + "\n\n", content="\n\n\n", calls=[PW], also=LLAMAS),
    Case(
        "bare-call-after-reasoning",
        "<think>\nweather, so call it\n</think>\n\n" + EW,
        reasoning="\nweather, so call it\n",
        content="\n\n",
        calls=[PW],
        also=LLAMA3,
    ),
    Case(
        "bare-call-after-prefilled-reasoning",
        "call it</think>" + EW,
        in_reasoning=True,
        reasoning="call it",
        calls=[PW],
        also=LLAMA3,
    ),
    Case(
        "bare-arguments-as-json-string",
        '{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}',
        calls=[("get_weather", {"city": "Rome"})],
        also=LLAMAS,
    ),
    _text("bare-text-before", "Here it is: " + EW),
    _text("bare-text-after", EW + "\nThat is the call."),
    _text("bare-two-objects", EW + "\n" + ES),
    _text("bare-list", "[" + EW + ", " + ES + "]"),
    _text("bare-unknown-tool", '{"name": "launch_rocket", "arguments": {}}'),
    _text("bare-extra-key", '{"name": "get_time", "arguments": {}, "id": 1}'),
    _text("bare-parameters-key", '{"name": "get_weather", "parameters": {"city": "Paris"}}'),
    _text("bare-user-json", '{"city": "Paris", "days": 3}'),
    _text("bare-name-only", '{"name": "get_time"}'),
    _text("tools-tag-name-only", '<tools>{"name": "get_time"}</tools>'),
    _text("bare-unclosed", '{"name": "get_time", "arguments": {}'),
    _text("bare-brace-text", "{braces} are fine"),
    _text("bare-double-braces", "{" + EW + "}"),
    Case("bare-cut", EW[:40], truncated=True, incomplete=["get_weather"]),
    Case(
        "bare-cut-unknown-tool",
        '{"name": "launch_rocket", "argu',
        truncated=True,
        content='{"name": "launch_rocket", "argu',
    ),
    Case("bare-cut-user-json", '{"city": "Par', truncated=True, content='{"city": "Par'),
    Case("fenced-call", "```json\n" + EW + "\n```", calls=[PW], also=LLAMA3),
    Case("fenced-call-no-language", "```\n" + EW + "\n```\n", content="\n", calls=[PW], also=LLAMA3),
    Case("fenced-call-upper", "```JSON\n" + EW + "\n```", calls=[PW], also=LLAMA3),
    _text("fenced-text-before", "Calling:\n```json\n" + EW + "\n```"),
    _text("fenced-text-after", "```json\n" + EW + "\n```\nDone."),
    _text("fenced-python", "```python\n" + EW + "\n```"),
    _text("fenced-unknown-tool", '```json\n{"name": "launch_rocket", "arguments": {}}\n```'),
    _text("fenced-list", "```json\n[" + EW + "]\n```"),
    _text("fenced-code", "```py\nprint({'a': 1})\n```"),
    _text("fenced-unclosed", "```json\n" + EW + "\n"),
    Case("fenced-cut", "```json\n" + EW[:30], truncated=True, incomplete=["get_weather"]),
    Case("tools-tag", TOOLS1, calls=[PW]),
    Case("tools-tag-compact", "<tools>" + ES + "</tools>", calls=[PS]),
    Case(
        "tools-tag-list",
        "<tools>\n[" + EW + ", " + ES + "]\n</tools>",
        calls=[PW, PS],
        ids=["call00000", "call00001"],
    ),
    Case("tools-tag-text-around", "Checking.\n" + TOOLS1 + "\nOK.", content="Checking.\n\nOK.", calls=[PW]),
    Case("tools-tag-then-tool-call", TOOLS1 + "\n" + W, content="\n", calls=[PW, PW]),
    Case("tools-tag-fenced", "<tools>\n```json\n" + EW + "\n```\n</tools>", calls=[PW]),
    Case("tools-tag-missing-close-at-eos", "<tools>\n" + EW + "\n", calls=[PW]),
    Case("tools-tag-cut", "<tools>\n" + EW[:35], truncated=True, incomplete=["get_weather"]),
    Case(
        "tools-tag-cut-unknown-tool",
        '<tools>\n{"name": "launch_rocket", "ar',
        truncated=True,
        content='<tools>\n{"name": "launch_rocket", "ar',
    ),
    Case(
        "tools-tag-in-reasoning",
        "<think>maybe " + TOOLS1 + "</think>Hello",
        reasoning="maybe " + TOOLS1,
        content="Hello",
    ),
    _text("tools-tag-definition-echo", "<tools>\n" + DEFINITION + "\n</tools>"),
    _text("tools-tag-unknown-tool", '<tools>{"name": "launch_rocket", "arguments": {}}</tools>'),
    _text(
        "tools-tag-list-with-unknown",
        "<tools>[" + EW + ', {"name": "launch_rocket", "arguments": {}}]</tools>',
    ),
    _text("tools-tag-not-json", "<tools>\nget_weather(city='Paris')\n</tools> ok"),
    _text("tools-tag-two-objects", "<tools>" + EW + ES + "</tools>"),
    _text("tools-tag-unclosed-then-text", "<tools>\n" + EW + "\nthen more words"),
    _text("tools-tag-wrong-nesting", "<tools>[" + EW + "</tools>]"),
    _text("tools-word", "The <tools> tag lists them."),
]
CASES += QWEN_CODER

# The JSON's closing brackets, where the model ended the call with </tool_call> and they are all
# that is wrong: the outer one left out (hermes-agent #5315: Qwen3.5, Hermes, LongCat) or one
# written too often (langchain-qwq #30: QwQ, Qwen3).
PWH = ("get_weather", {"city": "Paris", "days": 3})
OBJ = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}'
CLOSERS = [
    Case("outer-brace-left-out", f"<tool_call>{OBJ}</tool_call>", calls=[PWH]),
    Case("outer-brace-left-out-newlines", f"<tool_call>\n{OBJ}\n</tool_call>\n", content="\n", calls=[PWH]),
    Case(
        "outer-brace-left-out-after-think",
        f"<think>weather</think>Sure.\n<tool_call>\n{OBJ}\n</tool_call>",
        reasoning="weather",
        content="Sure.\n",
        calls=[PWH],
    ),
    Case(
        "nested-braces-left-out",
        '<tool_call>{"name": "search", "arguments": {"query": "x", "filters": {"tags": ["a"]</tool_call>',
        calls=[("search", {"query": "x", "filters": {"tags": ["a"]}})],
    ),
    Case("surplus-brace", f"<tool_call>\n{OBJ}}}}}\n</tool_call>", calls=[PWH]),
    Case(
        "surplus-braces-then-text",
        f"<tool_call>{OBJ}}}}}}} \n</tool_call> Done.",
        content=" Done.",
        calls=[PWH],
    ),
    Case(
        "surplus-brace-then-a-call",
        f"<tool_call>{OBJ}}}}}</tool_call>\n" + W,
        content="\n",
        calls=[PWH, PWH],
    ),
    Case(
        "outer-brace-left-out-cut", f"<tool_call>{OBJ}</tool_ca", truncated=True, incomplete=["get_weather"]
    ),
    # the call object's braces doubled (QwenLM/Qwen3 #924: Qwen2.5-72B; llamadart #43)
    Case("doubled-braces", "<tool_call>\n{" + OBJ + "}}\n</tool_call>", calls=[PWH]),
    Case(
        "doubled-braces-then-text",
        "<tool_call>{" + OBJ + "}}</tool_call> Done.",
        content=" Done.",
        calls=[PWH],
    ),
    # text: a call the tag did not end, text after a call whose JSON never closed, anything else
    # after the JSON, an open string, doubled braces with a surplus one or a closer left out
    _text("outer-brace-left-out-no-tag", f"<tool_call>{OBJ}"),
    _text("outer-brace-left-out-then-text", f"<tool_call>{OBJ}</tool_call> then more", stable_prefix=False),
    _text("surplus-other-text", f"<tool_call>{OBJ}}}}}x</tool_call>"),
    _text("open-string", '<tool_call>{"name": "get_weather", "arguments": {"city": "Par</tool_call>'),
    _text("doubled-braces-and-a-surplus", "<tool_call>{" + OBJ + "}}}</tool_call>"),
    _text("doubled-opening-brace-only", "<tool_call>{" + OBJ + "}</tool_call>"),
]
CASES += CLOSERS

# Inside the tags, the arguments under Llama 3's key ``parameters`` (gpt_server #47, localharness
# #104; Ollama reads both): never both keys, and never in a bare reply or a TNG list.
PWP = ("get_weather", {"city": "Paris", "days": 3})
PAR = '{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}'
PARAMETERS = [
    Case("parameters-key", f"<tool_call>\n{PAR}\n</tool_call>", calls=[PWP]),
    Case(
        "parameters-then-arguments",
        f"<think>two</think><tool_call>\n{PAR}\n</tool_call>\n{W}",
        reasoning="two",
        content="\n",
        calls=[PWP, PWP],
    ),
    Case(
        "parameters-as-json-string",
        '<tool_call>{"name": "get_weather", "parameters": "{\\"city\\": \\"Rome\\"}"}</tool_call>',
        calls=[("get_weather", {"city": "Rome"})],
    ),
    Case("parameters-outer-brace-left-out", f"<tool_call>{PAR[:-1]}</tool_call>", calls=[PWP]),
    Case(
        "parameters-cut",
        '<tool_call>\n{"name": "get_weather", "parameters": {"city": "Pa',
        truncated=True,
        incomplete=["get_weather"],
    ),
    _text(
        "parameters-and-arguments",
        '<tool_call>{"name": "get_weather", "parameters": {"city": "Paris"}, "arguments": {}}</tool_call>',
    ),
    _text("parameters-bare-reply", PAR),
    _text("parameters-in-a-list", f"<tool_call>\n[{PAR}]\n</tool_call>"),
]
CASES += PARAMETERS

FUZZ = Fuzz(markers=("<tool_call>", "</tool_call>"))
