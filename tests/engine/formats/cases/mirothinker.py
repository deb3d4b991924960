"""MiroThinker: ``<use_mcp_tool>`` blocks (``<server_name>``, ``<tool_name>``, ``<arguments>`` with
a JSON object, in that order), Hermes' ``<tool_call>`` calls too, ``<think>`` reasoning. The
published template (llama.cpp's) renders no past call in Jinja, so the tiny model's template is
a stand-in (``STAND_IN``) written from what that template and MiroMind's parsers document."""

import json

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "mirothinker"

OPEN, CLOSE = "<use_mcp_tool>", "</use_mcp_tool>"
TC, TC_END = "<tool_call>", "</tool_call>"


def block(name: str, args: str, server: str = "generic-extras", nl: str = "\n") -> str:
    """A block as the template writes it (``nl`` between its parts)."""
    return (
        f"{OPEN}{nl}<server_name>{server}</server_name>{nl}<tool_name>{name}</tool_name>{nl}"
        f"<arguments>{nl}{args}{nl}</arguments>{nl}{CLOSE}"
    )


def hermes(name: str, args: str) -> str:
    return f'{TC}\n{{"name": "{name}", "arguments": {args}}}\n{TC_END}'


W = block("get_weather", '{"city": "Paris", "days": 3}')
PW = ("get_weather", {"city": "Paris", "days": 3})
S = block("search", '{"query": "x", "limit": "10"}', server="search_and_scrape_webpage")
PS = ("search", {"query": "x", "limit": 10})
T = ("get_time", {})


def _text(case_id: str, text: str, **kw) -> Case:
    """A reply that is no call: all of it is content, byte for byte."""
    return Case(case_id, text, content=text, **kw)


CASES = [
    # -- calls
    Case("single", W, calls=[PW], ids=["call00000"]),
    Case("compact-layout", block("get_time", "{}", nl=""), calls=[T]),
    Case(
        "loose-whitespace",
        f"{OPEN}\n  <server_name> generic-extras </server_name>\t\n <tool_name>\n get_weather \n</tool_name>"
        f'  <arguments>   {{"city":"Paris","days":3}}  </arguments>\n\n{CLOSE}',
        calls=[PW],
    ),
    Case(
        "server-not-the-derived-one",
        block("get_weather", '{"city": "Paris", "days": 3}', "default"),
        calls=[PW],
    ),
    Case("server-with-spaces", block("get_time", "{}", "my tools: v2 (local)"), calls=[T]),
    Case(
        "typed-by-schema",
        block("search", '{"query": "q", "limit": "7", "score": "null"}'),
        calls=[("search", {"query": "q", "limit": 7, "score": None})],
    ),
    Case(
        "nested-arguments",
        block("search", '{"query": "q", "filters": {"year": 2024}, "tags": ["a", "b"]}'),
        calls=[("search", {"query": "q", "filters": {"year": 2024}, "tags": ["a", "b"]})],
    ),
    Case("trailing-comma-repaired", block("get_time", '{"x": 1,}'), calls=[("get_time", {"x": 1})]),
    Case("unknown-tool-is-a-call", block("launch", '{"when": "now"}'), calls=[("launch", {"when": "now"})]),
    Case(
        "markers-inside-json-string",
        block("set_port", '{"blob": "</arguments> </use_mcp_tool> <tool_call> <server_name>"}'),
        calls=[("set_port", {"blob": "</arguments> </use_mcp_tool> <tool_call> <server_name>"})],
    ),
    # -- reasoning and text around
    Case(
        "think-then-call",
        "<think>\nThe user wants the weather.\n</think>\n\n" + W,
        reasoning="\nThe user wants the weather.\n",
        content="\n\n",
        calls=[PW],
    ),
    Case(
        "prefilled-think-then-call",
        "I need the weather.\n</think>\n\n" + W,
        in_reasoning=True,
        reasoning="I need the weather.\n",
        content="\n\n",
        calls=[PW],
    ),
    Case("text-before", "Let me look that up.\n\n" + W, content="Let me look that up.\n\n", calls=[PW]),
    Case(
        "text-after", W + "\nI will wait for the result.", content="\nI will wait for the result.", calls=[PW]
    ),
    Case(
        "several-blocks",
        W + "\n" + S + "\n",
        content="\n\n",
        calls=[PW, PS],
        ids=["call00000", "call00001"],
    ),
    Case(
        "think-answer-no-call",
        "<think>\neasy\n</think>\n\nIt is 4.",
        reasoning="\neasy\n",
        content="\n\nIt is 4.",
    ),
    # -- Hermes' calls (the template renders past calls so)
    Case("hermes-call", hermes("get_weather", '{"city": "Paris", "days": 3}'), calls=[PW]),
    Case(
        "hermes-then-block",
        hermes("get_time", "{}") + "\n" + W,
        content="\n",
        calls=[T, PW],
    ),
    Case(
        "hermes-arguments-as-json-string",
        hermes("get_weather", json.dumps('{"city": "Rome"}')),
        calls=[("get_weather", {"city": "Rome"})],
    ),
    _text("hermes-list-is-text", f'{TC}\n[{{"name": "get_time", "arguments": {{}}}}]\n{TC_END}'),
    Case("hermes-close-implied-at-eos", f'{TC}\n{{"name": "get_time", "arguments": {{}}}}\n', calls=[T]),
    # -- cut by the token limit
    Case("cut-in-json", W[: W.index('"days"')], truncated=True, incomplete=["get_weather"]),
    Case("cut-in-name", W[: W.index("weather")], truncated=True, incomplete=[None]),
    Case("cut-before-close", W[: -len(CLOSE) + 3], truncated=True, incomplete=["get_weather"]),
    Case("cut-after-first", W + "\n" + S[:60], truncated=True, content="\n", calls=[PW], incomplete=[None]),
    Case(
        "cut-in-hermes",
        f'{TC}\n{{"name": "search", "arguments": {{"q',
        truncated=True,
        incomplete=["search"],
    ),
    # -- text: malformed, unclosed, wrong nesting
    _text("unclosed-at-end", W[: -len(CLOSE)]),
    _text("missing-arguments-close", W.replace("\n</arguments>", "")),
    _text(
        "elements-out-of-order",
        f"{OPEN}\n<tool_name>get_time</tool_name>\n<server_name>x</server_name>\n<arguments>\n{{}}\n</arguments>\n{CLOSE}",
    ),
    _text(
        "missing-server", f"{OPEN}\n<tool_name>get_time</tool_name>\n<arguments>\n{{}}\n</arguments>\n{CLOSE}"
    ),
    _text("empty-server", block("get_time", "{}", server="")),
    _text("blank-server", block("get_time", "{}", server="  \n")),
    _text("server-holding-a-tag", block("get_time", "{}", server="a<b>c")),
    _text("server-too-long", block("get_time", "{}", server="s" * 300)),
    _text("name-with-space", block("get time", "{}")),
    _text("empty-name", block("", "{}")),
    _text("arguments-not-json", block("get_weather", "city=Paris")),
    _text("arguments-a-list", block("get_weather", '["Paris"]')),
    _text("arguments-a-string", block("get_weather", '"Paris"')),
    _text("text-after-json", block("get_weather", '{"city": "Paris"} thanks')),
    _text("text-inside-block", W.replace("</arguments>\n", "</arguments>\nnote\n")),
    _text(
        "two-calls-in-one-block",
        f"{OPEN}\n<server_name>a</server_name>\n<tool_name>get_time</tool_name>\n<arguments>\n{{}}\n</arguments>"
        f"\n<server_name>a</server_name>\n<tool_name>get_time</tool_name>\n<arguments>\n{{}}\n</arguments>\n{CLOSE}",
    ),
    _text("nested-in-other-tags", f"<answer>{W.replace('<arguments>', '<x><arguments>')}</answer>"),
    _text("qwen-xml-shape", "<tool_call>\n<function=get_time>\n</function>\n</tool_call>"),
    _text("plain-text", "Just an answer, no tools: use_mcp_tool is what I would write."),
    _text("partial-opener-at-end", "I would call <use_mcp"),
    _text("closing-tag-alone", "</use_mcp_tool> and </arguments> are text"),
    Case(
        "broken-block-then-block",
        f"{OPEN}\n<server_name>" + W,
        content=f"{OPEN}\n<server_name>",
        calls=[PW],
    ),
    Case(
        "malformed-then-valid",
        block("get_weather", "city=Paris") + "\n" + W,
        content=block("get_weather", "city=Paris") + "\n",
        calls=[PW],
    ),
]

# The closing reasoning tag inside an argument: part of the call in every reasoning state.
CASES += close_tag_in_argument_cases(
    ("<think>", "</think>"),
    block("set_port", '{"blob": "why <think> and </think> here"}'),
    ("set_port", {"blob": "why <think> and </think> here"}),
    OPEN,
)


def _fuzz_write(fmt, name, args, rnd):
    # The template's layout, or the compact one, under the derived server or another one.
    server = rnd.choice(("generic-extras", "default", "tool-python"))
    return block(name, json.dumps(args, ensure_ascii=False), server=server, nl=rnd.choice(("\n", "", " ")))


FUZZ = Fuzz(
    markers=(
        CLOSE,
        "<server_name>",
        "</server_name>",
        "<tool_name>",
        "</tool_name>",
        "<arguments>",
        "</arguments>",
        TC_END,
    ),
    write=_fuzz_write,
)

# -- settings, tiny models (tests/engine/formats/test_added_families.py)

SETTING_WORDS = ("MiroThinker", "MiroMind")

# The published template is tests/fixtures/chat_templates/MiroThinker-v1.jinja (llama.cpp's). The
# stand-in keeps what it and MiroMind's MiroFlow agent document: Qwen's turns, the system
# prompt teaching the <use_mcp_tool> block with the tools grouped under the server its
# render_tool_server macro derives from each name, a past call written as the block at the end of
# the assistant's content (as the agent keeps it), a tool result as a user turn, <think> reasoning.
STAND_IN = (
    "{%- macro server(name) %}{% if '_sandbox' in name or name.startswith('run_') or 'python' in name %}"
    "tool-python{% elif '_search' in name %}search_and_scrape_webpage"
    "{% elif name == 'scrape_and_extract_info' %}jina_scrape_llm_summary{% else %}generic-extras{% endif %}"
    "{%- endmacro %}"
    "<|im_start|>system\n{% for m in messages if m.role == 'system' %}{{ m.content }}\n\n{% endfor %}"
    "{%- if tools %}In this environment you have access to a set of tools. You can only use one tool per "
    "message.\n\n# Tool-Use Formatting Instructions\n\nTool-use is enclosed in <use_mcp_tool></use_mcp_tool>:\n"
    "<use_mcp_tool>\n<server_name>server name here</server_name>\n<tool_name>tool name here</tool_name>\n"
    '<arguments>\n{"param1": "value1"}\n</arguments>\n</use_mcp_tool>\n\nTool-use must be placed at the end '
    "of your response.\n\n{% for t in tools %}## Server name: {{ server(t.function.name) }}\n### Tool name: "
    "{{ t.function.name }}\nDescription: {{ t.function.description }}\nInput JSON schema: "
    "{{ t.function.parameters | tojson }}\n\n{% endfor %}{% endif %}<|im_end|>\n"
    "{%- for m in messages %}{% if m.role == 'user' %}<|im_start|>user\n{{ m.content }}<|im_end|>\n"
    "{%- elif m.role == 'tool' %}<|im_start|>user\n{{ m.content }}<|im_end|>\n"
    "{%- elif m.role == 'assistant' %}<|im_start|>assistant\n"
    "{%- if m.reasoning_content %}<think>\n{{ m.reasoning_content }}\n</think>\n\n{% endif %}{{ m.content or '' }}"
    "{%- for c in m.tool_calls or [] %}\n<use_mcp_tool>\n<server_name>{{ server(c.function.name) }}"
    "</server_name>\n<tool_name>{{ c.function.name }}</tool_name>\n<arguments>\n"
    "{{ c.function.arguments if c.function.arguments is string else (c.function.arguments | tojson) }}"
    "\n</arguments>\n</use_mcp_tool>{% endfor %}<|im_end|>\n{% endif %}{% endfor %}"
    "{%- if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

TINY_MODELS = [
    (
        "stand-in:mirothinker",
        ["<|im_start|>", "<|im_end|>"],
        ["<think>", "</think>"],
        None,
        "<|im_end|>",
    )
]

# One call whose value holds the family's markers (test_added_families' cost cases).
COST_VALUE = "a </arguments> </use_mcp_tool> <use_mcp_tool> <tool_call> </think> b"
