import json

from tests.engine.formats.harness import TOOLS, Case, Fuzz, close_tag_in_argument_cases

FAMILY = "cwm"

OPEN, CLOSE = "<tool: ", "</tool>"


def block(name: str, content: str) -> str:
    """A block as CWM writes it: the tag, the content on the lines between, the closing tag."""
    return f"{OPEN}{name}>\n{content}\n{CLOSE}"


def _fn(name: str, props: dict, required: list[str]) -> dict:
    return {
        "type": "function",
        "function": {
            "name": name,
            "description": f"test tool {name}",
            "parameters": {"type": "object", "properties": props, "required": required},
        },
    }


# Tools for free-text bodies: one that takes a command (Meta's bash block, Claude Code's Bash
# shape), and some that cannot take {"command": TEXT}.
SHELL_TOOLS = TOOLS + [
    _fn("bash", {"command": {"type": "string"}, "timeout": {"type": "integer"}}, ["command"]),
    _fn("sh", {"command": {"type": ["string", "null"]}}, []),
    _fn("run_in", {"command": {"type": "string"}, "cwd": {"type": "string"}}, ["command", "cwd"]),
    _fn("repeat", {"command": {"type": "integer"}}, ["command"]),
]

W = block("get_weather", '{"city": "Paris", "days": 3}')
PW = ("get_weather", {"city": "Paris", "days": 3})
S = block("search", '{"query": "x", "limit": "10"}')
PS = ("search", {"query": "x", "limit": 10})
T = ("get_time", {})
LS = block("bash", "ls -la")
PLS = ("bash", {"command": "ls -la"})


def _text(case_id: str, text: str, **kw) -> Case:
    """A reply that is no call: all of it is content, byte for byte."""
    return Case(case_id, text, content=text, **kw)


def _shell(case_id: str, text: str, **kw) -> Case:
    return Case(case_id, text, tools=SHELL_TOOLS, **kw)


CASES = [
    # -- calls with JSON arguments
    Case("single", W, calls=[PW], ids=["call00000"]),
    Case("no-arguments", block("get_time", "{}"), calls=[T]),
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
    Case("pretty-printed-json", block("get_weather", '{\n  "city": "Paris",\n  "days": 3\n}'), calls=[PW]),
    Case("indented-json", block("get_weather", '  {"city": "Paris", "days": 3}  '), calls=[PW]),
    Case("trailing-comma-repaired", block("get_time", '{"x": 1,}'), calls=[("get_time", {"x": 1})]),
    Case("unknown-tool-is-a-call", block("launch", '{"when": "now"}'), calls=[("launch", {"when": "now"})]),
    Case("dotted-name", block("fs.read", '{"path": "a"}'), calls=[("fs.read", {"path": "a"})]),
    Case("longest-name", block("n" * 256, "{}"), calls=[("n" * 256, {})]),
    Case(
        "markers-inside-json-string",
        block("set_port", '{"blob": "</tool> <tool: x>\\n</tool> {\\"a\\"} <think>"}'),
        calls=[("set_port", {"blob": '</tool> <tool: x>\n</tool> {"a"} <think>'})],
    ),
    Case(
        "braces-inside-json-string",
        block("set_port", '{"blob": "}}} </tool>", "zip": "{"}'),
        calls=[("set_port", {"blob": "}}} </tool>", "zip": "{"})],
    ),
    # -- free-text bodies: a command, for a declared tool that takes one
    _shell("command", LS, calls=[PLS]),
    _shell(
        "multi-line-command",
        block("bash", 'cd /tmp\nfor f in *.py; do\n  grep -n "def " "$f"\ndone'),
        calls=[("bash", {"command": 'cd /tmp\nfor f in *.py; do\n  grep -n "def " "$f"\ndone'})],
    ),
    _shell(
        "command-opening-with-a-brace",
        block("bash", "{ echo a; echo b; } > out.txt"),
        calls=[("bash", {"command": "{ echo a; echo b; } > out.txt"})],
    ),
    _shell(
        "command-with-an-unclosed-quote-after-a-brace",
        block("bash", '{ echo "a; }\necho b'),
        calls=[("bash", {"command": '{ echo "a; }\necho b'})],
    ),
    _shell(
        "command-kept-byte-for-byte",
        block("bash", "  echo  'x'  \n"),
        calls=[("bash", {"command": "  echo  'x'  \n"})],
    ),
    _shell(
        "opener-inside-command",
        block("bash", "cat <<'EOF' > notes.md\n<tool: bash> is how\nEOF"),
        calls=[("bash", {"command": "cat <<'EOF' > notes.md\n<tool: bash> is how\nEOF"})],
    ),
    _shell("command-optional", block("sh", "pwd"), calls=[("sh", {"command": "pwd"})]),
    _shell("json-list-to-a-command-tool", block("bash", '["ls"]'), calls=[("bash", {"command": '["ls"]'})]),
    _shell(
        "json-object-to-a-command-tool",
        block("bash", '{"command": "ls", "timeout": "5"}'),
        calls=[("bash", {"command": "ls", "timeout": 5})],
    ),
    _shell(
        "command-and-json-calls",
        "Looking.\n" + LS + "\n" + W,
        content="Looking.\n\n",
        calls=[PLS, PW],
    ),
    # -- reasoning and text around
    Case(
        "think-then-call",
        "<think>\nThe user wants the weather.\n</think>\n" + W,
        reasoning="\nThe user wants the weather.\n",
        content="\n",
        calls=[PW],
    ),
    Case(
        "prefilled-think-then-call",
        "I need the weather.\n</think>\n" + W,
        in_reasoning=True,
        reasoning="I need the weather.\n",
        content="\n",
        calls=[PW],
    ),
    Case("text-before", "Let me look that up.\n" + W, content="Let me look that up.\n", calls=[PW]),
    Case(
        "text-after", W + "\nI will wait for the result.", content="\nI will wait for the result.", calls=[PW]
    ),
    Case("inline-after-text", "Calling " + W, content="Calling ", calls=[PW]),
    Case(
        "several-blocks",
        W + "\n" + S + "\n" + block("get_time", "{}"),
        content="\n\n",
        calls=[PW, PS, T],
        ids=["call00000", "call00001", "call00002"],
    ),
    Case("back-to-back", W + S, calls=[PW, PS]),
    Case(
        "think-answer-no-call",
        "<think>\neasy\n</think>\nIt is 4.",
        reasoning="\neasy\n",
        content="\nIt is 4.",
    ),
    # -- cut by the token limit
    Case("cut-in-json", W[: W.index('"days"')], truncated=True, incomplete=["get_weather"]),
    Case("cut-in-name", W[: W.index("weather")], truncated=True, incomplete=[None]),
    Case(
        "cut-after-opener",
        "Let me check. " + OPEN,
        truncated=True,
        content="Let me check. ",
        incomplete=[None],
    ),
    Case("cut-before-close", W[:-3], truncated=True, incomplete=["get_weather"]),
    _shell("cut-in-command", block("bash", "ls -la /very/long")[:-12], truncated=True, incomplete=["bash"]),
    Case(
        "cut-after-first", W + "\n" + S[:30], truncated=True, content="\n", calls=[PW], incomplete=["search"]
    ),
    # -- text: malformed, unclosed, wrong nesting
    _text("unclosed-at-end", W[: -len(CLOSE)]),
    _text("unclosed-no-newline", W[: -len(CLOSE) - 1]),
    _text("no-space-in-tag", W.replace(OPEN, "<tool:")),
    _text("two-spaces-in-tag", W.replace(OPEN, "<tool:  ")),
    _text("space-before-gt", W.replace("get_weather>", "get_weather >")),
    _text("upper-case-tag", W.replace(OPEN, "<TOOL: ")),
    _text("no-newline-after-tag", f"{OPEN}get_time>{{}}\n{CLOSE}"),
    _text("no-newline-before-close", f"{OPEN}get_time>\n{{}}{CLOSE}"),
    _text("crlf-lines", f"{OPEN}get_time>\r\n{{}}\r\n{CLOSE}"),
    _text("one-line-block", f"{OPEN}get_time>{{}}{CLOSE}"),
    _text("empty-body", f"{OPEN}get_time>\n{CLOSE}"),
    _text("blank-body", block("get_time", "  \n ")),
    _text("empty-name", block("", "{}")),
    _text("name-with-space", block("get time", "{}")),
    _text("name-opening-with-a-digit", block("1tool", "{}")),
    _text("name-too-long", block("n" * 257, "{}")),
    _text("tag-inside-tag", f"{OPEN}get<b>_time>\n{{}}\n{CLOSE}"),
    _text("text-after-json", block("get_weather", '{"city": "Paris"} thanks')),
    _text("arguments-a-string", block("get_weather", '"Paris"')),
    _text("arguments-a-list", block("get_weather", '["Paris"]')),
    _text("free-text-to-a-json-tool", block("get_weather", "Paris")),
    _shell(
        "free-text-to-an-undeclared-tool", block("python", "print(1)"), content=block("python", "print(1)")
    ),
    _shell(
        "free-text-to-a-tool-needing-more",
        block("run_in", "make"),
        content=block("run_in", "make"),
    ),
    _shell("free-text-to-a-non-string-command", block("repeat", "3"), content=block("repeat", "3")),
    _shell(
        "free-text-holding-the-close",
        block("bash", 'echo "</tool>"'),
        content=block("bash", 'echo "</tool>"'),
    ),
    # vLLM's reading (label informational, name first in the body) is not CWM's documented wire
    _shell(
        "label-then-name-in-body",
        block("function", 'get_weather {"city": "Paris"}'),
        content=block("function", 'get_weather {"city": "Paris"}'),
    ),
    _text(
        "nested-blocks",
        f"{OPEN}get_time>\n{OPEN}get_time>\n{{}}\n{CLOSE}\n{CLOSE}",
    ),
    _text("closing-tag-alone", "</tool> closes nothing"),
    _text("plain-text", "Just an answer: CWM writes tool blocks such as <tool: bash> on their own lines."),
    _text("partial-opener-at-end", "I would call <tool"),
    _text("tag-mentioned-in-prose", "Use <tool: bash> and then </tool> to run commands."),
    Case(
        "broken-block-then-block",
        block("get time", "{}") + "\n" + W,
        content=block("get time", "{}") + "\n",
        calls=[PW],
    ),
    Case(
        "malformed-then-valid",
        block("get_weather", "Paris") + "\n" + W,
        content=block("get_weather", "Paris") + "\n",
        calls=[PW],
    ),
    Case(
        "unclosed-json-string-then-block",
        block("set_port", '{"blob": "a') + "\n" + W,
        content=block("set_port", '{"blob": "a') + "\n",
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
    # The compact JSON Meta's server writes, or the JSON pretty-printed over several lines.
    return block(name, json.dumps(args, ensure_ascii=False, indent=rnd.choice((None, 2))))


FUZZ = Fuzz(markers=(CLOSE,), write=_fuzz_write)

# -- settings, tiny models (tests/engine/formats/test_added_families.py)

SETTING_WORDS = ("Code World Model", "CWM")

# No published CWM chat template was found (the model's Hugging Face tokenizer files are not in
# reach). The stand-in keeps what Meta's prompting guide and its OpenAI-compatible server
# (facebookresearch/cwm serve/fgserve.py, serve/tools.py) document: Llama 3's headers, the tools
# described in a system message after the system prompt as their <tool: NAME> blocks with the
# JSON schema, a past call written after the assistant's content as <tool: NAME>\nARGS\n</tool>
# (several joined by newlines), a tool result as a "tool: NAME" turn, and the reply prefilled
# with <think>\n unless enable_thinking is false (the Hugging Face template's default).
STAND_IN = (
    "{{ bos_token }}{% for m in messages if m.role == 'system' %}"
    "{{ '<|start_header_id|>system<|end_header_id|>\\n\\n' ~ (m.content | trim) ~ '<|eot_id|>' }}{% endfor %}"
    "{% if tools %}{{ '<|start_header_id|>system<|end_header_id|>\\n\\nYou have access to the following tools:' }}"
    "{% for t in tools %}{{ '\\n<tool: ' ~ t.function.name ~ '>\\n[json params]\\n</tool>\\n' }}"
    "{{ (t.function.description or '') ~ '\\nParameters must respect the following schema: ' }}"
    "{{ t.function.parameters | tojson }}{{ '\\n' }}{% endfor %}<|eot_id|>{% endif %}"
    "{% set ns = namespace(calls=[], k=0, body='') %}"
    "{% for m in messages %}{% if m.role == 'user' %}"
    "{{ '<|start_header_id|>user<|end_header_id|>\\n\\n' ~ (m.content | trim) ~ '<|eot_id|>' }}"
    "{% elif m.role == 'tool' %}{{ '<|start_header_id|>tool: ' }}"
    "{{ ns.calls[ns.k].function.name if ns.k < ns.calls | length else 'tool' }}"
    "{{ '<|end_header_id|>\\n\\n' ~ m.content ~ '<|eot_id|>' }}{% set ns.k = ns.k + 1 %}"
    "{% elif m.role == 'assistant' %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
    "{% set ns.body = m.content or '' %}{% if m.tool_calls %}{% set ns.calls = m.tool_calls %}"
    "{% set ns.k = 0 %}{% if ns.body and not ns.body.endswith('\\n') %}{% set ns.body = ns.body ~ '\\n' %}"
    "{% endif %}{% for c in m.tool_calls %}{% set ns.body = ns.body ~ ('' if loop.first else '\\n') ~ "
    "'<tool: ' ~ c.function.name ~ '>\\n' ~ (c.function.arguments if c.function.arguments is string "
    "else (c.function.arguments | tojson)) ~ '\\n</tool>' %}{% endfor %}{% endif %}"
    "{{ (ns.body | trim) ~ '<|eot_id|>' }}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}"
    "{% if enable_thinking is not defined or enable_thinking %}{{ '<think>\\n' }}{% endif %}{% endif %}"
)

TINY_MODELS = [
    (
        "stand-in:cwm",
        ["<|begin_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"],
        [],
        "<|begin_of_text|>",
        "<|eot_id|>",
    )
]

# One call whose value holds the family's markers (test_added_families' cost cases).
COST_VALUE = "a </tool> <tool: x>\n</tool> { } </think> b"
