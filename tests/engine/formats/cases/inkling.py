"""Inkling content blocks: <|content_thinking|> / <|content_text|> / <|content_invoke_tool_json|> (a
{"name", "args"} object) behind an optional name, each ended by <|end_message|>, later ones opened
by <|message_model|>; the reply starts in the first block's header (the prompt wrote
<|message_model|>)."""

import json

from tests.engine.formats.harness import Case, Fuzz

FAMILY = "inkling"

MM = "<|message_model|>"
THINK = "<|content_thinking|>"
TEXT = "<|content_text|>"
INVOKE = "<|content_invoke_tool_json|>"
INVOKE_TEXT = "<|content_invoke_tool_text|>"
ERROR = "<|content_tool_error|>"
END = "<|end_message|>"
STOP = "<|content_model_end_sampling|>"

W = ("get_weather", {"city": "Paris", "days": 3})
CALL = "get_weather" + INVOKE + '{"name":"get_weather","args":{"city":"Paris","days":3}}' + END
CALL_NO_NAME = INVOKE + '{"name": "get_weather", "args": {"city": "Paris", "days": "3"}}' + END
SEARCH = "search" + INVOKE + '{"name":"search","args":{"query":"Oslo","limit":"5"}}' + END
S = ("search", {"query": "Oslo", "limit": 5})
THOUGHT = THINK + "The user wants the weather." + END

CASES = [
    Case("single-call", CALL + STOP, calls=[W], ids=["call00000"]),
    Case("call-without-name-echo", CALL_NO_NAME, calls=[W]),
    Case(
        "thinking-then-call", THOUGHT + MM + CALL + STOP, reasoning="The user wants the weather.", calls=[W]
    ),
    Case(
        "parallel-calls",
        THOUGHT + MM + CALL + MM + SEARCH + STOP,
        reasoning="The user wants the weather.",
        calls=[W, S],
        ids=["call00000", "call00001"],
    ),
    Case(
        "text-before-and-after",
        TEXT + "Let me check." + END + MM + CALL + MM + TEXT + " Done." + END + STOP,
        content="Let me check. Done.",
        calls=[W],
    ),
    Case(
        "thinking-then-answer",
        THOUGHT + MM + TEXT + "It is sunny." + END + STOP,
        reasoning="The user wants the weather.",
        content="It is sunny.",
    ),
    Case("answer-only", TEXT + "Hello there!" + END + STOP, content="Hello there!"),
    Case("plain-text-reply", "Just a plain answer.", content="Just a plain answer."),
    Case("plain-text-with-newlines", "Line one\nline two", content="Line one\nline two"),
    Case(
        "prefilled-thinking",
        "still thinking" + END + MM + CALL,
        in_reasoning=True,
        reasoning="still thinking",
        calls=[W],
    ),
    Case(
        "thinking-again-after-call",
        CALL + MM + THINK + "more" + END + MM + TEXT + "ok" + END,
        reasoning="more",
        content="ok",
        calls=[W],
    ),
    Case(
        "two-text-blocks-concatenate",
        TEXT + "Hello" + END + MM + TEXT + ", world" + END,
        content="Hello, world",
    ),
    # The raw and error tool blocks are shown as text (what the servers do).
    Case(
        "raw-tool-text-block-is-content", INVOKE_TEXT + "get_weather Paris" + END, content="get_weather Paris"
    ),
    Case("tool-error-block-is-content", ERROR + "no such tool" + END, content="no such tool"),
    Case("call-ends-at-end-of-sampling", CALL[: -len(END)] + STOP, calls=[W]),
    Case("call-ends-at-eos", CALL[: -len(END)], calls=[W]),
    Case("call-cut-off", CALL[:-20], truncated=True, incomplete=["get_weather"]),
    Case("call-cut-before-end", CALL[: -len(END)], truncated=True, incomplete=["get_weather"]),
    Case(
        "call-cut-after-kind",
        THOUGHT + MM + "get_time" + INVOKE,
        truncated=True,
        reasoning="The user wants the weather.",
        incomplete=["get_time"],
    ),
    Case(
        "cut-second-of-pair",
        CALL + MM + SEARCH[:50],
        truncated=True,
        calls=[W],
        incomplete=["search"],
    ),
    Case(
        "empty-arguments",
        "get_time" + INVOKE + '{"name":"get_time","args":{}}' + END,
        calls=[("get_time", {})],
    ),
    Case(
        "nested-json-unicode",
        "search" + INVOKE + '{"name":"search","args":{"query":"Zürich \\"q\\" \\u00e9 東京",'
        '"filters":{"year":"2020"},"tags":["a","b"]}}' + END,
        calls=[("search", {"query": 'Zürich "q" é 東京', "filters": {"year": 2020}, "tags": ["a", "b"]})],
    ),
    Case(
        "strings-stay-strings",
        "set_port" + INVOKE + '{"name":"set_port","args":{"port":"8080","zip":"02139","flag":"true"}}' + END,
        calls=[("set_port", {"port": "8080", "zip": "02139", "flag": "true"})],
    ),
    Case(
        "other-markers-inside-argument",
        "set_port"
        + INVOKE
        + '{"name":"set_port","args":{"blob":"a <tool_call> b </think> c <|end|>"}}'
        + END,
        calls=[("set_port", {"blob": "a <tool_call> b </think> c <|end|>"})],
    ),
    Case(
        "unknown-tool-is-a-call",
        "launch" + INVOKE + '{"name":"launch","args":{"x":1}}' + END,
        calls=[("launch", {"x": 1})],
    ),
    Case(
        "whitespace-around-json",
        "get_time" + INVOKE + '\n {"name":"get_time","args":{}} \n' + END,
        calls=[("get_time", {})],
    ),
    Case(
        "thinking-mentions-call-syntax",
        THINK + 'I could write get_weather {"name":"get_weather","args":{}}.' + END + MM + TEXT + "Hi" + END,
        reasoning='I could write get_weather {"name":"get_weather","args":{}}.',
        content="Hi",
    ),
    Case("stray-end-markers-are-structure", END + TEXT + "hi" + END + END + STOP, content="hi"),
    Case(
        "cut-inside-header",
        THOUGHT + MM + "get_wea",
        truncated=True,
        reasoning="The user wants the weather.",
        content="get_wea",
    ),
]

# Malformed calls are content, byte for byte (header, body and end marker).
_BAD = [
    ("name-disagrees", "search" + INVOKE + '{"name":"get_time","args":{}}' + END),
    ("arguments-key", "get_time" + INVOKE + '{"name":"get_time","arguments":{}}' + END),
    ("extra-key", "get_time" + INVOKE + '{"name":"get_time","args":{},"id":"1"}' + END),
    ("args-not-object", "get_time" + INVOKE + '{"name":"get_time","args":"{}"}' + END),
    ("malformed-json", "get_weather" + INVOKE + '{"name":"get_weather","args":{"city": Paris}}' + END),
    ("text-after-json", "get_time" + INVOKE + '{"name":"get_time","args":{}} and more' + END),
    ("list-body", "get_time" + INVOKE + '[{"name":"get_time","args":{}}]' + END),
    ("not-json", "get_time" + INVOKE + "get_time()" + END),
]
CASES += [Case(f"malformed-{cid}-is-text", text, content=text) for cid, text in _BAD]
CASES += [
    Case(
        "unclosed-json-is-text",
        "get_time" + INVOKE + '{"name":"get_time","args":{',
        content="get_time" + INVOKE + '{"name":"get_time","args":{',
    ),
    # A kind marker inside a call body ends it: the call is text, the new block is read.
    Case(
        "wrong-nesting-is-text",
        "get_time" + INVOKE + '{"name":"get_time",' + TEXT + '"args":{}}' + END,
        content="get_time" + INVOKE + '{"name":"get_time",' + '"args":{}}',
    ),
    Case(
        "header-that-is-no-name-is-text",
        "get weather" + INVOKE + '{"name":"get_weather","args":{"city":"Paris"}}' + END,
        content="get weather",
        calls=[("get_weather", {"city": "Paris"})],
    ),
    Case(
        "malformed-call-between-good-ones",
        CALL + MM + "get_time" + INVOKE + "{oops}" + END + MM + SEARCH,
        content="get_time" + INVOKE + "{oops}" + END,
        calls=[W, S],
    ),
]


def _fuzz_reply(fmt, calls, texts, reasoning, rnd):
    """Blocks: an optional thinking block, text blocks for the texts, the calls between them."""
    reasoning = f"think {rnd.randint(0, 99)}" if rnd.random() < 0.5 else ""
    blocks = [THINK + reasoning + END] if reasoning else []
    for i, t in enumerate(texts):
        if t:
            blocks.append(TEXT + t + END)
        if i < len(calls):
            name, args = calls[i]
            body = json.dumps({"name": name, "args": args}, ensure_ascii=rnd.random() < 0.5)
            blocks.append((name if rnd.random() < 0.5 else "") + INVOKE + body + END)
    return MM.join(blocks) + (STOP if rnd.random() < 0.5 else ""), "".join(texts), reasoning


_MARKERS = (MM, THINK, TEXT, INVOKE, INVOKE_TEXT, ERROR, END, STOP)
FUZZ = Fuzz(
    markers=_MARKERS,
    forbidden=_MARKERS,
    reply=_fuzz_reply,
    structure=(
        r"<\|message_model\|>",
        r"(?:[A-Za-z_][\w.\-:/]*[ \t\r\n]*)?<\|content_(?:thinking|text|invoke_tool_text|tool_error)\|>",
        r"<\|end_message\|>",
        r"<\|content_model_end_sampling\|>",
    ),
)

SETTING_WORDS = ("Inkling", "Inkling Small", "Thinking Machines")

# No published template was found (a Rust test renders one, "render_real_template", not in reach):
# the stand-in renders what vLLM's Inkling renderer (vllm/renderers/inkling) writes: the tools as
# a system block "tool_declare" of kind <|content_xml|>, each message part its own block, a call
# block with the tool's name before its kind marker, a tool result as a <|message_tool|> block
# named by its tool, <|content_model_end_sampling|> after each assistant turn, and the generation
# prompt <|message_model|>.
STAND_IN = (
    "{%- if tools %}<|message_system|>tool_declare<|content_xml|>["
    "{%- for t in tools %}{{ ',' if not loop.first }}{\"description\":{{ (t.function.description or '') | tojson }},"
    '"name":{{ t.function.name | tojson }},"parameters":{{ (t.function.parameters or {}) | tojson }},'
    '"type":"function"}{% endfor %}]<|end_message|>{% endif %}'
    "{%- for m in messages %}"
    "{%- if m.role in ('system', 'developer') %}<|message_system|><|content_text|>{{ m.content }}<|end_message|>"
    "{%- elif m.role == 'user' %}<|message_user|><|content_text|>{{ m.content }}<|end_message|>"
    "{%- elif m.role == 'tool' %}{% set ns = namespace(name=m.name or '') %}"
    "{%- for p in messages %}{% for c in p.tool_calls or [] %}{% if c.id == m.tool_call_id %}"
    "{% set ns.name = c.function.name %}{% endif %}{% endfor %}{% endfor %}"
    "<|message_tool|>{{ ns.name }}<|content_text|>{{ m.content }}<|end_message|>"
    "{%- elif m.role == 'assistant' %}"
    "{%- if m.reasoning_content %}<|message_model|><|content_thinking|>{{ m.reasoning_content }}<|end_message|>{% endif %}"
    "{%- if m.content %}<|message_model|><|content_text|>{{ m.content }}<|end_message|>{% endif %}"
    "{%- for c in m.tool_calls or [] %}<|message_model|>{{ c.function.name }}<|content_invoke_tool_json|>"
    '{"name":{{ c.function.name | tojson }},"args":'
    "{%- if c.function.arguments is string %}{{ c.function.arguments }}{% else %}{{ c.function.arguments | tojson }}{% endif %}"
    "}<|end_message|>{% endfor %}<|content_model_end_sampling|>"
    "{%- endif %}{% endfor %}"
    "{%- if add_generation_prompt %}<|message_model|>{% endif %}"
)

TINY_MODELS = [
    (
        "stand-in:inkling",
        [
            "<|endoftext|>",
            "<|message_system|>",
            "<|message_user|>",
            "<|message_model|>",
            "<|message_tool|>",
            "<|content_text|>",
            "<|content_thinking|>",
            "<|content_xml|>",
            "<|content_invoke_tool_json|>",
            "<|content_invoke_tool_text|>",
            "<|content_tool_error|>",
            "<|end_message|>",
            "<|content_model_end_sampling|>",
        ],
        [],
        None,
        "<|content_model_end_sampling|>",
    )
]

# The value the cost test writes into one huge call (its wire carries no marker inside a value).
COST_VALUE = "a </think> <tool_call> { ] b"
