"""Mistral: ``[TOOL_CALLS][{...}]`` arrays, ``[TOOL_CALLS]NAME[CALL_ID]ID[ARGS]{...}``, ``[THINK]``."""

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "mistral"

A = '[TOOL_CALLS][{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}, "id": "abc123XYZ"}]'
N = '[TOOL_CALLS]get_weather[ARGS]{"city": "Paris", "days": 3}'

CASES = [
    Case("array-with-id", A, calls=[("get_weather", {"city": "Paris", "days": 3})], ids=["abc123XYZ"]),
    Case(
        "array-v03-space",
        '[TOOL_CALLS] [{"name": "get_time", "arguments": {}}]',
        calls=[("get_time", {})],
        ids=["call00000"],
    ),
    Case(
        "array-parallel",
        '[TOOL_CALLS][{"name": "get_time", "arguments": {}}, {"name": "search", "arguments": {"query": "x", "limit": "3"}}]',
        calls=[("get_time", {}), ("search", {"query": "x", "limit": 3})],
    ),
    Case(
        "array-cut-keeps-first",
        '[TOOL_CALLS][{"name": "get_time", "arguments": {}}, {"name": "search", "argu',
        truncated=True,
        calls=[("get_time", {})],
        incomplete=["search"],
    ),
    Case("named", N, calls=[("get_weather", {"city": "Paris", "days": 3})], ids=["call00000"]),
    Case(
        "named-call-id",
        "[TOOL_CALLS]get_time[CALL_ID]a1B2c3D4e[ARGS]{}",
        calls=[("get_time", {})],
        ids=["a1B2c3D4e"],
    ),
    Case(
        "named-parallel",
        N + '[TOOL_CALLS]search[ARGS]{"query": "[TOOL_CALLS]x[ARGS]{}"}',
        calls=[("get_weather", {"city": "Paris", "days": 3}), ("search", {"query": "[TOOL_CALLS]x[ARGS]{}"})],
    ),
    Case(
        "think",
        "[THINK]The user wants weather.[/THINK]" + N,
        reasoning="The user wants weather.",
        calls=[("get_weather", {"city": "Paris", "days": 3})],
    ),
    Case(
        "think-with-call-example",
        "[THINK]I could write " + N + " but no.[/THINK]Hello",
        reasoning="I could write " + N + " but no.",
        content="Hello",
    ),
    Case(
        "text-then-call",
        "Sure.\n" + N,
        content="Sure.\n",
        calls=[("get_weather", {"city": "Paris", "days": 3})],
    ),
    Case("named-truncated", N[:-3], truncated=True, incomplete=["get_weather"]),
    Case(
        "array-not-closed-eos",
        '[TOOL_CALLS][{"name": "get_time", "arguments": {}}',
        stable_prefix=False,
        content='[TOOL_CALLS][{"name": "get_time", "arguments": {}}',
    ),
    Case("bad-shape", '[TOOL_CALLS]{"name": "get_time"} ok', content='[TOOL_CALLS]{"name": "get_time"} ok'),
    # [ARGS] decoded away (see NO_ARGS_TOKEN): a call, and the text after it content, as with [ARGS]
    Case("missing-args-marker", "[TOOL_CALLS]get_time{} ok", content=" ok", calls=[("get_time", {})]),
    Case(
        "array-extra-key",
        '[TOOL_CALLS][{"name": "get_time", "arguments": {}, "x": 1}]',
        content='[TOOL_CALLS][{"name": "get_time", "arguments": {}, "x": 1}]',
    ),
    Case("plain-brackets", "Use [INST] and [ARGS] in text", content="Use [INST] and [ARGS] in text"),
    Case("orphan-close", "thinking[/THINK]Hi", reasoning="thinking", content="Hi"),
]

# The closing reasoning tag inside an argument: part of the call in every reasoning state.
CASES += close_tag_in_argument_cases(
    ("[THINK]", "[/THINK]"),
    '[TOOL_CALLS]set_port[ARGS]{"blob": "why [THINK] and [/THINK] here"}',
    ("set_port", {"blob": "why [THINK] and [/THINK] here"}),
    "[TOOL_CALLS]",
)


# Ministral 3 writes its only call inside [THINK] and closes the block right after it (llama.cpp
# #29248): the call counts, its text reasoning too; thinking after it, or a call after the block,
# makes it a draft (the case above).
PW = ("get_weather", {"city": "Paris", "days": 3})
CALL_ENDS_THINK = [
    Case(
        "call-ends-think",
        "[THINK]I will check.\n" + N + "[/THINK]",
        reasoning="I will check.\n" + N,
        calls=[PW],
    ),
    Case(
        "call-ends-think-spaced",
        "[THINK]Check.\n" + N + "\n[/THINK]\n",
        reasoning="Check.\n" + N + "\n",
        content="\n",
        calls=[PW],
    ),
    Case(
        "call-in-think-then-call",
        "[THINK]plan " + N + "[/THINK]" + A,
        reasoning="plan " + N,
        calls=[PW],
        ids=["abc123XYZ"],
    ),
]
CASES += CALL_ENDS_THINK

# Mistral-derived models that reason in <think> rather than [THINK].
THINK_TAGS = [
    Case(
        "think-tags-then-call",
        "<think>The user wants weather.</think>" + N,
        reasoning="The user wants weather.",
        calls=[("get_weather", {"city": "Paris", "days": 3})],
    ),
    Case("think-tags-then-answer", "<think>easy</think>It is 4.", reasoning="easy", content="It is 4."),
    Case(
        "think-tags-prefilled",
        "plan</think>" + N,
        in_reasoning=True,
        reasoning="plan",
        calls=[("get_weather", {"city": "Paris", "days": 3})],
    ),
    Case("think-tags-cut", "<think>still thinking", truncated=True, reasoning="still thinking"),
    Case(
        "bracket-tags-still-read",
        "[THINK]r[/THINK]" + N,
        reasoning="r",
        calls=[("get_weather", {"city": "Paris", "days": 3})],
    ),
]

# A reply that stops right after [TOOL_CALLS]: no call, no marker in content.
BARE_MARKER = [
    Case("stops-after-marker", "Let me check.[TOOL_CALLS]", content="Let me check."),
    Case("stops-after-marker-space", "[TOOL_CALLS] \n", content=" \n"),
    Case("stops-after-marker-truncated", "Ok [TOOL_CALLS]", truncated=True, content="Ok "),
]

# v11+ as servers that decode without control tokens hand it on: [ARGS] decoded away, the
# arguments right after the name (read as vLLM's own Mistral parser reads them).
NO_ARGS_TOKEN = [
    Case(
        "v11-args-token-dropped",
        '[TOOL_CALLS]get_weather{"city": "Paris"}',
        calls=[("get_weather", {"city": "Paris"})],
    ),
    Case(
        "v11-args-token-dropped-pair",
        '[TOOL_CALLS]get_weather{"city": "Paris"}[TOOL_CALLS]get_time{}',
        calls=[("get_weather", {"city": "Paris"}), ("get_time", {})],
    ),
    Case(
        "v11-args-token-dropped-after-text",
        'Checking.[TOOL_CALLS]get_weather{"city": "Paris"}',
        content="Checking.",
        calls=[("get_weather", {"city": "Paris"})],
    ),
    Case(
        "v11-args-token-dropped-cut",
        '[TOOL_CALLS]get_weather{"city": "Pa',
        truncated=True,
        incomplete=["get_weather"],
    ),
    # a space between the name and the JSON: text
    Case(
        "v11-space-before-json-is-text",
        '[TOOL_CALLS]get_weather {"city": "Paris"}',
        content='[TOOL_CALLS]get_weather {"city": "Paris"}',
    ),
]
CASES += THINK_TAGS + BARE_MARKER + NO_ARGS_TOKEN

# v3's list as a Python literal (quantised Mistral 7B v0.3, Small 3.2: ollama #5284, vLLM #20028),
# read without evaluating anything.
PY = "[TOOL_CALLS][{'name': 'get_weather', 'arguments': {'city': 'Paris', 'days': 3}}]"
PYTHON_LIST = [
    Case("python-list", PY, calls=[("get_weather", {"city": "Paris", "days": 3})]),
    Case(
        "python-list-parallel-literals",
        "[TOOL_CALLS] [{'name': 'get_time', 'arguments': {}}, {'name': 'search', 'arguments': "
        "{'query': \"it's\", 'filters': {'year': 2020}, 'score': None, 'tags': ['a']}, 'id': 'abc123XYZ'}]",
        calls=[
            ("get_time", {}),
            ("search", {"query": "it's", "filters": {"year": 2020}, "score": None, "tags": ["a"]}),
        ],
        ids=["call00000", "abc123XYZ"],
    ),
    Case(
        "python-list-then-text",
        PY + " In order to",
        content=" In order to",
        calls=[("get_weather", {"city": "Paris", "days": 3})],
    ),
    Case(
        "python-list-cut-keeps-first",
        "[TOOL_CALLS][{'name': 'get_time', 'arguments': {}}, {'name': 'search', 'argu",
        truncated=True,
        calls=[("get_time", {})],
        incomplete=[None],
    ),
    # text: an expression that is no literal, a set where an object belongs
    Case(
        "python-list-with-a-call-is-text",
        "[TOOL_CALLS][{'name': 'get_time', 'arguments': {'x': len('a')}}]",
        content="[TOOL_CALLS][{'name': 'get_time', 'arguments': {'x': len('a')}}]",
    ),
    Case(
        "python-list-with-a-set-is-text",
        "[TOOL_CALLS][{'name': 'get_time', 'arguments': {'a', 'b'}}]",
        content="[TOOL_CALLS][{'name': 'get_time', 'arguments': {'a', 'b'}}]",
    ),
]
CASES += PYTHON_LIST

# The array's brackets and commas (and the opener) are structure; an element alone needs them back.
FUZZ = Fuzz(
    markers=("[TOOL_CALLS]", "[ARGS]", "[CALL_ID]", "[THINK]", "[/THINK]"),
    structure=(r"\[TOOL_CALLS\]", r"\[", r"\]", ","),
    wrap=("[TOOL_CALLS][", "]"),
)
