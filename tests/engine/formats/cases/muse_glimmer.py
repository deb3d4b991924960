"""Muse Glimmer messages: `` to=self<|message|>..<|eom|>`` reasoning, ``<|start|>assistant
to=NAME<|message|>`` + one ATEM invoke (``atem:`` tags, raw values typed by schema) for a call,
`` to=user<|message|>..<|eot|>`` (or a bare ``<|message|>``) for the answer; the reply starts in
the first message's header (the prompt wrote ``<|start|>assistant``)."""

from tests.engine.formats.harness import TOOLS, Case, Fuzz

FAMILY = "muse-glimmer"

S = "<|start|>assistant"
MSG = "<|message|>"
EOM = "<|eom|>"
EOT = "<|eot|>"


def atem(name: str, params: dict[str, str]) -> str:
    inner = "".join(f'<atem:parameter name="{k}">{v}</atem:parameter>\n' for k, v in params.items())
    return (
        f'<atem:function_calls>\n<atem:invoke name="{name}">\n{inner}</atem:invoke>\n</atem:function_calls>'
    )


THOUGHT = " to=self" + MSG + "The user wants the weather." + EOM
R = "The user wants the weather."
W = ("get_weather", {"city": "Paris", "days": 3})
CALL_BODY = atem("get_weather", {"city": "Paris", "days": "3"})
CALL = S + " to=get_weather" + MSG + CALL_BODY + EOM
FIRST_CALL = " to=get_weather" + MSG + CALL_BODY + EOM
SEARCH = S + " to=search" + MSG + atem("search", {"query": "Oslo", "limit": "5"}) + EOM
Q = ("search", {"query": "Oslo", "limit": 5})
ANSWER = S + " to=user" + MSG + "It is sunny." + EOT

NAMESPACED = [
    {
        "type": "function",
        "function": {
            "name": "weather.get",
            "description": "a namespaced tool",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    },
    *TOOLS,
]

CASES = [
    Case("reasoning-call", THOUGHT + CALL, reasoning=R, calls=[W], ids=["call00000"]),
    Case("call-first", FIRST_CALL, calls=[W]),
    Case("reasoning-call-answer", THOUGHT + CALL + ANSWER, reasoning=R, calls=[W], content="It is sunny."),
    Case(
        "parallel-calls", THOUGHT + CALL + SEARCH, reasoning=R, calls=[W, Q], ids=["call00000", "call00001"]
    ),
    Case("call-ends-at-eos", THOUGHT + CALL[: -len(EOM)], reasoning=R, calls=[W]),
    Case("call-ended-by-eot", FIRST_CALL[: -len(EOM)] + EOT, calls=[W]),
    Case("call-cut-off", THOUGHT + CALL[:-40], truncated=True, reasoning=R, incomplete=["get_weather"]),
    Case(
        "call-cut-before-eom",
        THOUGHT + CALL[: -len(EOM)],
        truncated=True,
        reasoning=R,
        incomplete=["get_weather"],
    ),
    Case(
        "cut-second-of-pair",
        THOUGHT + CALL + SEARCH[:60],
        truncated=True,
        reasoning=R,
        calls=[W],
        incomplete=["search"],
    ),
    Case(
        "cut-inside-call-header",
        THOUGHT + S + " to=get_wea",
        truncated=True,
        reasoning=R,
        incomplete=["get_wea"],
    ),
    Case("cut-inside-header", THOUGHT + "<|start|>assis", truncated=True, reasoning=R, incomplete=[None]),
    Case("answer-only", " to=user" + MSG + "Hello there!" + EOT, content="Hello there!"),
    Case("bare-message-is-content", MSG + "Hello there!" + EOT, content="Hello there!"),
    Case("reasoning-then-answer", THOUGHT + ANSWER, reasoning=R, content="It is sunny."),
    Case(
        "two-reasoning-messages",
        THOUGHT + S + " to=self" + MSG + " More." + EOM + ANSWER,
        reasoning=R + " More.",
        content="It is sunny.",
    ),
    Case(
        "prefilled-reasoning",
        "still thinking" + EOM + CALL,
        in_reasoning=True,
        reasoning="still thinking",
        calls=[W],
    ),
    Case("plain-text-reply", "Just a plain answer.", content="Just a plain answer."),
    Case(
        "text-then-call", " to=user" + MSG + "Let me check." + EOM + CALL, content="Let me check.", calls=[W]
    ),
    Case("no-space-before-recipient", "to=get_weather" + MSG + CALL_BODY + EOM, calls=[W]),
    Case(
        "empty-arguments",
        " to=get_time"
        + MSG
        + '<atem:function_calls>\n<atem:invoke name="get_time">\n</atem:invoke>\n</atem:function_calls>'
        + EOM,
        calls=[("get_time", {})],
    ),
    Case(
        "values-typed-by-schema",
        " to=search"
        + MSG
        + atem(
            "search",
            {
                "query": "Zürich 東京",
                "filters": '{"year": 2020}',
                "tags": '["a", "b"]',
                "score": "null",
                "mode": "7",
            },
        )
        + EOM,
        calls=[
            (
                "search",
                {
                    "query": "Zürich 東京",
                    "filters": {"year": 2020},
                    "tags": ["a", "b"],
                    "score": None,
                    "mode": 7,
                },
            )
        ],
    ),
    Case(
        "strings-stay-strings",
        " to=set_port" + MSG + atem("set_port", {"port": "8080", "zip": "02139", "flag": "true"}) + EOM,
        calls=[("set_port", {"port": "8080", "zip": "02139", "flag": "true"})],
    ),
    Case(
        "markers-inside-argument",
        " to=set_port"
        + MSG
        + atem("set_port", {"blob": "a <tool_call> </think> <|message|> </atem:invoke> b"})
        + EOM,
        calls=[("set_port", {"blob": "a <tool_call> </think> <|message|> </atem:invoke> b"})],
    ),
    Case(
        "multiline-value-kept",
        " to=set_port" + MSG + atem("set_port", {"blob": "\nline 1\nline 2\n"}) + EOM,
        calls=[("set_port", {"blob": "\nline 1\nline 2\n"})],
    ),
    Case(
        "unknown-tool-is-a-call",
        " to=launch" + MSG + atem("launch", {"x": "1"}) + EOM,
        calls=[("launch", {"x": "1"})],
    ),
    Case(
        "namespace-recipient",
        " to=weather" + MSG + atem("weather.get", {"city": "Oslo"}) + EOM,
        calls=[("weather.get", {"city": "Oslo"})],
        tools=NAMESPACED,
    ),
    Case(
        "full-recipient",
        " to=weather.get" + MSG + atem("weather.get", {"city": "Oslo"}) + EOM,
        calls=[("weather.get", {"city": "Oslo"})],
        tools=NAMESPACED,
    ),
    Case(
        "doubled-bare-name",
        " to=get_weather.get_weather"
        + MSG
        + atem("get_weather.get_weather", {"city": "Paris", "days": "3"})
        + EOM,
        calls=[W],
    ),
    Case(
        "atem-in-reasoning-is-reasoning",
        " to=self" + MSG + CALL_BODY + EOM + ANSWER,
        reasoning=CALL_BODY,
        content="It is sunny.",
    ),
    Case("atem-in-answer-is-content", " to=user" + MSG + CALL_BODY + EOT, content=CALL_BODY),
    Case("stray-eom-after-answer", ANSWER[len(S) :] + EOM, content="It is sunny."),
    Case("trailing-whitespace", THOUGHT + "\n", reasoning=R),
]

# Malformed call messages are content, byte for byte (header, body, end marker).
_BAD = [
    ("recipient-disagrees", " to=search" + MSG + CALL_BODY + EOM),
    ("missing-close", " to=get_weather" + MSG + CALL_BODY[: -len("</atem:function_calls>")] + EOM),
    ("missing-wrapper", " to=get_weather" + MSG + '<atem:invoke name="get_weather">\n</atem:invoke>' + EOM),
    ("text-after-block", " to=get_weather" + MSG + CALL_BODY + " thanks" + EOM),
    (
        "two-invokes",
        " to=get_weather"
        + MSG
        + CALL_BODY.replace(
            "</atem:invoke>\n", '</atem:invoke>\n<atem:invoke name="get_weather">\n</atem:invoke>\n'
        )
        + EOM,
    ),
    (
        "unclosed-parameter",
        " to=get_weather"
        + MSG
        + '<atem:function_calls>\n<atem:invoke name="get_weather">\n<atem:parameter name="city">Paris</atem:invoke>\n</atem:function_calls>'
        + EOM,
    ),
    (
        "repeated-parameter",
        " to=get_weather"
        + MSG
        + atem("get_weather", {"city": "a"}).replace(
            "</atem:invoke>", '<atem:parameter name="city">b</atem:parameter>\n</atem:invoke>'
        )
        + EOM,
    ),
    ("json-body", " to=get_weather" + MSG + '{"city": "Paris"}' + EOM),
]
# (The space before the first message's recipient is structure: whitespace before a header.)
CASES += [Case(f"malformed-{cid}-is-text", text, content=text.lstrip()) for cid, text in _BAD]
CASES += [
    Case(
        "unclosed-block-at-eos-is-text",
        " to=get_weather" + MSG + CALL_BODY[:-5],
        content="to=get_weather" + MSG + CALL_BODY[:-5],
    ),
    Case(
        "malformed-header-is-text",
        S + " to=get weather" + MSG + "x" + EOT,
        content=S + " to=get weather" + MSG + "x",
    ),
    # A message's <|start|> inside a call ends it: the call is text, the next message is read.
    Case(
        "wrong-nesting-is-text",
        " to=get_weather" + MSG + CALL_BODY[:40] + ANSWER,
        content="to=get_weather" + MSG + CALL_BODY[:40] + "It is sunny.",
    ),
    Case(
        "malformed-call-between-good-ones",
        FIRST_CALL + S + " to=get_time" + MSG + "oops" + EOM + SEARCH,
        content=S + " to=get_time" + MSG + "oops" + EOM,
        calls=[W, Q],
    ),
]


def _fuzz_reply(fmt, calls, texts, reasoning, rnd):
    """Messages: an optional reasoning message, answer messages for the texts, the calls between."""
    reasoning = f"think {rnd.randint(0, 99)}" if rnd.random() < 0.5 else ""
    msgs = [" to=self" + MSG + reasoning + EOM] if reasoning else []
    for i, t in enumerate(texts):
        if t:
            msgs.append(
                (" to=user" if rnd.random() < 0.5 else "") + MSG + t + (EOM if i < len(calls) else EOT)
            )
        if i < len(calls):
            call = fmt.example_call(*calls[i])  # written with its <|start|>assistant
            msgs.append(call[len(S) :] if rnd.random() < 0.5 else call)
    return S.join(msgs).replace(S + S, S), "".join(texts), reasoning


_MARKERS = (
    "<|start|>",
    MSG,
    EOM,
    EOT,
    "<atem:function_calls>",
    "</atem:function_calls>",
    '<atem:invoke name="',
    "</atem:invoke>",
    '<atem:parameter name="',
    "</atem:parameter>",
)
FUZZ = Fuzz(
    markers=_MARKERS,
    forbidden=("<|start|>", EOM, EOT, "</atem:parameter>"),
    reply=_fuzz_reply,
    structure=(
        r"(?:<\|start\|>[ \t]*assistant)?[ \t]*(?:to=[A-Za-z0-9_][A-Za-z0-9_.\-]*[ \t]*)?<\|message\|>",
        r"<\|eom\|>",
        r"<\|eot\|>",
    ),
)

SETTING_WORDS = ("Muse Glimmer", "Meta")

# No published template was found (the model's own ships with its weights; a rendered prompt in
# axolotl's Muse Glimmer example and vLLM's/llama.cpp's parsers document the layout): the stand-in
# writes the tools and the valid recipients in the system message, the ATEM call format, each
# assistant message addressed (to=self reasoning, to=NAME calls, to=user answers), tool results as
# <|start|>tool NAME<|message|><tool_output name="NAME">...</tool_output>, and the generation
# prompt <|start|>assistant.
STAND_IN = (
    "<|start|>system<|message|>{% for m in messages if m.role == 'system' %}{{ m.content }}\n\n{% endfor %}"
    "Reasoning: high\n"
    "{%- if tools %}\n\n# Tools\n{% for t in tools %}## {{ t.function.name }}\n{{ t.function.description }}\n"
    "{{ t.function.parameters | tojson }}\n{% endfor %}\nTo call a tool, address a message to it and write:\n"
    '<atem:function_calls>\n<atem:invoke name="$FUNCTION_NAME">\n'
    '<atem:parameter name="$PARAMETER_NAME">$PARAMETER_VALUE</atem:parameter>\n</atem:invoke>\n'
    '</atem:function_calls>\n\n# Valid recipients: "self", {% for t in tools %}"{{ t.function.name }}.*", '
    '{% endfor %}"user".{% endif %}<|eot|>'
    "{%- for m in messages %}"
    "{%- if m.role == 'user' %}<|start|>user<|message|>{{ m.content }}<|eot|>"
    "{%- elif m.role == 'tool' %}{% set ns = namespace(name=m.name or '') %}"
    "{%- for p in messages %}{% for c in p.tool_calls or [] %}{% if c.id == m.tool_call_id %}"
    "{% set ns.name = c.function.name %}{% endif %}{% endfor %}{% endfor %}"
    '<|start|>tool {{ ns.name }}<|message|><tool_output name="{{ ns.name }}">\n{{ m.content }}\n</tool_output><|eot|>'
    "{%- elif m.role == 'assistant' %}"
    "{%- if m.reasoning_content %}<|start|>assistant to=self<|message|>{{ m.reasoning_content }}<|eom|>{% endif %}"
    "{%- if m.content %}<|start|>assistant to=user<|message|>{{ m.content }}"
    "{{ '<|eom|>' if m.tool_calls else '<|eot|>' }}{% endif %}"
    "{%- for c in m.tool_calls or [] %}{% if c.function.arguments is string %}"
    "{{ raise_exception('tool call arguments must be a mapping') }}{% endif %}"
    "<|start|>assistant to={{ c.function.name }}<|message|><atem:function_calls>\n"
    '<atem:invoke name="{{ c.function.name }}">\n'
    '{% for k, v in c.function.arguments.items() %}<atem:parameter name="{{ k }}">'
    "{{ v if v is string else (v | tojson) }}</atem:parameter>\n{% endfor %}"
    "</atem:invoke>\n</atem:function_calls>{{ '<|eom|>' if not loop.last else '<|eot|>' }}{% endfor %}"
    "{%- endif %}{% endfor %}"
    "{%- if add_generation_prompt %}<|start|>assistant{% endif %}"
)

TINY_MODELS = [
    (
        "stand-in:muse-glimmer",
        ["<|start|>", "<|message|>", "<|eom|>", "<|eot|>"],
        [
            "<atem:function_calls>",
            "</atem:function_calls>",
            "<atem:invoke",
            "</atem:invoke>",
            "<atem:parameter",
            "</atem:parameter>",
        ],
        None,
        "<|eot|>",
    )
]

# The value the cost test writes into one huge call (its wire carries no marker inside a value).
COST_VALUE = "a </atem:invoke> </atem:function_calls> <|message|> b"
