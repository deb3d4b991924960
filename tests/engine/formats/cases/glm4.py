"""GLM-4: the tool's name on the reply's first line, its JSON arguments on the next; further calls
are further messages after ``<|assistant|>``; a plain answer opens with a line break."""

import re

from tests.engine.formats.harness import Case, Fuzz

FAMILY = "glm4"
NEXT = "<|assistant|>"

W = 'get_weather\n{"city": "Paris", "days": 3, "metric": true}'
WC = ("get_weather", {"city": "Paris", "days": 3, "metric": True})
T = ("get_time", {})

CASES = [
    # As GLM-4's templates render a call: name, line break, JSON (0414: a space after the name).
    Case("single", W, calls=[WC], ids=["call00000"]),
    Case("single-space-after-name", W.replace("\n", " \n", 1), calls=[WC]),
    Case(
        "arguments-indented", 'get_weather\n  {"city": "Paris"}', calls=[("get_weather", {"city": "Paris"})]
    ),
    Case("empty-arguments", "get_time\n{}", calls=[T]),
    Case(
        "multiline-arguments",
        'get_weather\n{\n    "city": "Paris"\n}',
        calls=[("get_weather", {"city": "Paris"})],
    ),
    Case("parallel-messages", W + NEXT + "get_time\n{}", calls=[WC, T], ids=["call00000", "call00001"]),
    Case("parallel-header-left-out", W + "\nget_time\n{}", calls=[WC, T]),
    Case("parallel-back-to-back", W + "get_time\n{}", calls=[WC, T]),
    Case("own-header-first", NEXT + W, calls=[WC]),
    Case("call-then-text-message", W + NEXT + "\nDone.", content="Done.", calls=[WC]),
    Case("call-then-text", W + "\nIt is sunny.", content="\nIt is sunny.", calls=[WC]),
    Case(
        "typed-by-schema",
        'search\n{"query": "q", "limit": "10", "tags": "[\\"a\\"]"}',
        calls=[("search", {"query": "q", "limit": 10, "tags": ["a"]})],
    ),
    Case(
        "string-props-keep-text",
        'set_port\n{"port": "8080", "zip": "02139"}',
        calls=[("set_port", {"port": "8080", "zip": "02139"})],
    ),
    Case(
        "header-in-string",
        'set_port\n{"blob": "a <|assistant|>\\nget_time\\n{} b"}',
        calls=[("set_port", {"blob": "a <|assistant|>\nget_time\n{} b"})],
    ),
    Case("unicode", 'get_weather\n{"city": "Zürich 東京"}', calls=[("get_weather", {"city": "Zürich 東京"})]),
    Case("declared-after-line-break", "\n" + W, calls=[WC]),
    # Only a declared tool's name opens a call (the wire has no marker).
    Case("undeclared-at-start", 'fetch_page\n{"url": "x"}', content='fetch_page\n{"url": "x"}'),
    Case("undeclared-after-header", W + NEXT + "fetch_page\n{}", content="fetch_page\n{}", calls=[WC]),
    Case("header-then-prose", "\nLet me check." + NEXT + "Done.", content="Let me check.Done."),
    Case("tool-name-prefix", 'get\n{"city": "Paris"}', content='get\n{"city": "Paris"}'),
    Case("undeclared-after-line-break", '\njson\n{"a": 1}', content='json\n{"a": 1}'),
    Case(
        "text-after-call-names-undeclared", W + '\nresult\n{"a": 1}', content='\nresult\n{"a": 1}', calls=[WC]
    ),
    # GLM-Z1: reasoning first, in a block the prompt opened or the reply opens.
    Case(
        "after-reasoning",
        "<think>The user wants the weather.</think>\n" + W,
        reasoning="The user wants the weather.",
        calls=[WC],
    ),
    Case(
        "after-prefilled-reasoning",
        "The user wants the weather.</think>\n\n" + W,
        reasoning="The user wants the weather.",
        calls=[WC],
        in_reasoning=True,
    ),
    Case(
        "answer-after-reasoning",
        "<think>Easy.</think>\nParis is sunny.",
        reasoning="Easy.",
        content="Paris is sunny.",
    ),
    # Cut by the token limit.
    Case("cut-first", 'get_weather\n{"city": "Pa', truncated=True, incomplete=["get_weather"]),
    Case("cut-second", W + NEXT + 'search\n{"query": "a', truncated=True, calls=[WC], incomplete=["search"]),
    Case("cut-in-name", "get_wea", truncated=True, content="get_wea"),
    Case("cut-after-name-line", "get_weather\n", truncated=True, content="get_weather\n"),
    Case("cut-answer", "\nParis is", truncated=True, content="Paris is"),
    Case("unclosed-at-eos", 'get_weather\n{"city": "Pa', content='get_weather\n{"city": "Pa'),
    # Rejected shapes: text.
    # The line break that opens the reply is the header's (``<|assistant|>\n``): structure.
    Case("plain-answer", "\nHello! How can I help?", content="Hello! How can I help?"),
    Case("answer-after-blank-line", "\n\nHello!", content="\nHello!"),
    Case("answer-after-space-and-line-break", " \nHello!", content=" \nHello!"),
    Case("plain-answer-without-line-break", "Hello! How can I help?", content="Hello! How can I help?"),
    Case("word-line-then-prose", "Sure\nHere it is.", content="Sure\nHere it is."),
    Case("name-then-list", "get_time\n[1, 2]", content="get_time\n[1, 2]"),
    Case("name-then-string", 'get_time\n"now"', content='get_time\n"now"'),
    Case("name-and-braces-on-one-line", "get_time {}", content="get_time {}"),
    Case("two-words-then-object", 'get weather\n{"city": "Paris"}', content='get weather\n{"city": "Paris"}'),
    Case("label-with-colon", 'Result:\n{"a": 1}', content='Result:\n{"a": 1}'),
    Case("name-mid-answer", "\nCall it as\nget_time\n{}", content="Call it as\nget_time\n{}"),
    Case(
        "functionary-shape",
        ">>>get_time\n{}",
        content=">>>get_time\n{}",
    ),
    Case(
        "hermes-shape",
        '<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>',
        content='<tool_call>\n{"name": "get_time", "arguments": {}}\n</tool_call>',
    ),
    Case(
        "llama-json",
        '{"name": "get_time", "parameters": {}}',
        content='{"name": "get_time", "parameters": {}}',
    ),
]


def _reply(fmt, calls, texts, reasoning, rnd):
    """The reasoning block, then the calls as messages (the first opens the answer, each next one
    after ``<|assistant|>`` or at once), a text message after a call where its text is not empty."""
    head = "" if reasoning is None else fmt.reasoning[0] + reasoning + fmt.reasoning[1]
    if not calls:
        return head + "\n" + texts[0], texts[0], reasoning or ""
    parts, content = [head], []
    for i, (name, args) in enumerate(calls):
        if i:
            if texts[i]:
                parts.append(NEXT + "\n" + texts[i])
                content.append(texts[i])
            parts.append(NEXT if texts[i] or rnd.random() < 0.7 else "")
        parts.append(fmt.example_call(name, args))
    if texts[-1]:
        parts.append(NEXT + "\n" + texts[-1])
        content.append(texts[-1])
    return "".join(parts), "".join(content), reasoning or ""


# A reply parsed with ``orphan_close`` (a block it did not open may close later) is held in the
# machine's window state, where a start-only family's call opening the reply is no region (base.py:
# it is read again from the start when no closing tag follows): an argument holding ``</think>``
# there closes the block. GLM-4's templates never leave a reply in that state (Z1's prompt opens
# the block; the others never mention it), so the fuzz keeps the tag out of arguments.
FUZZ = Fuzz(structure=(re.escape(NEXT) + r"\n?",), reply=_reply, declared=True, forbidden=("</think>",))

SETTING_WORDS = ("GLM-4",)
TINY_MODELS = [
    (
        "glm-z1-9b-0414.jinja",
        ["[gMASK]", "<sop>", "<|endoftext|>"],
        ["<|system|>", "<|user|>", "<|assistant|>", "<|observation|>", "<think>", "</think>"],
        None,
        "<|user|>",
    )
]
COST_VALUE = "a <|assistant|> } {\\n b"  # (a call holds the value as JSON text)
