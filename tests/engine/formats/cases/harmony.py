"""gpt-oss Harmony: channels analysis / commentary (calls to=functions.NAME) / final."""

import json

from tests.engine.formats.harness import Case, Fuzz

FAMILY = "harmony"

ANALYSIS = "<|channel|>analysis<|message|>The user wants the weather.<|end|>"
# The recipient after the channel (what gpt-oss usually writes) ...
CALL = (
    "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
    '{"city": "Paris", "days": 3}<|call|>'
)
# ... or in the role header (what the official template renders).
CALL_ROLE = (
    "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>"
    '{"city": "Paris", "days": 3}<|call|>'
)
W = ("get_weather", {"city": "Paris", "days": 3})
FINAL = "<|start|>assistant<|channel|>final<|message|>It is sunny.<|return|>"

CASES = [
    Case(
        "analysis-then-call",
        ANALYSIS + CALL,
        reasoning="The user wants the weather.",
        calls=[W],
        ids=["call00000"],
    ),
    Case(
        "recipient-in-role-header", ANALYSIS + CALL_ROLE, reasoning="The user wants the weather.", calls=[W]
    ),
    Case(
        "first-message-is-call",
        ' to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris", "days": 3}<|call|>',
        calls=[W],
    ),
    Case(
        "first-message-call-after-channel",
        '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris", "days": "3"}',
        calls=[W],
    ),
    Case(
        "call-ends-at-eos",
        ANALYSIS + "<|start|>assistant<|channel|>commentary to=functions.get_time "
        "<|constrain|>json<|message|>{}",
        reasoning="The user wants the weather.",
        calls=[("get_time", {})],
    ),
    Case(
        "call-cut-off",
        ANALYSIS + "<|start|>assistant<|channel|>commentary to=functions.get_time "
        "<|constrain|>json<|message|>{}",
        truncated=True,
        reasoning="The user wants the weather.",
        incomplete=["get_time"],
    ),
    Case(
        "analysis-then-final",
        ANALYSIS + FINAL,
        reasoning="The user wants the weather.",
        content="It is sunny.",
    ),
    Case("final-only", "<|channel|>final<|message|>Hello there!", content="Hello there!"),
    Case(
        "preamble-then-call",
        ANALYSIS
        + "<|start|>assistant<|channel|>commentary<|message|>Checking the weather now.<|end|>"
        + CALL,
        reasoning="The user wants the weather.",
        content="Checking the weather now.",
        calls=[W],
    ),
    Case(
        "parallel-calls",
        ANALYSIS
        + CALL
        + CALL.replace("Paris", "Oslo")
        .replace("get_weather", "search")
        .replace('"days": 3', '"limit": "5"')
        .replace('"city"', '"query"'),
        reasoning="The user wants the weather.",
        calls=[W, ("search", {"query": "Oslo", "limit": 5})],
        ids=["call00000", "call00001"],
    ),
    Case(
        "two-analysis-messages",
        ANALYSIS + "<|start|>assistant<|channel|>analysis<|message|> More.<|end|>" + FINAL,
        reasoning="The user wants the weather. More.",
        content="It is sunny.",
    ),
    Case(
        "prefilled-analysis",
        "thinking in progress<|end|>" + FINAL,
        in_reasoning=True,
        reasoning="thinking in progress",
        content="It is sunny.",
    ),
    Case(
        "empty-arguments",
        "<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{}<|call|>",
        calls=[("get_time", {})],
    ),
    Case(
        "numbers-stay-strings",
        "<|channel|>commentary to=functions.set_port <|constrain|>json<|message|>"
        '{"port": "8080", "zip": "02139", "flag": "true"}<|call|>',
        calls=[("set_port", {"port": "8080", "zip": "02139", "flag": "true"})],
    ),
    Case(
        "nested-json-unicode-escapes",
        "<|channel|>commentary to=functions.search <|constrain|>json<|message|>"
        '{"query": "Zürich \\"q\\" \\u00e9 東京", "filters": {"year": "2020"}, "tags": ["a", "b"]}<|call|>',
        calls=[("search", {"query": 'Zürich "q" é 東京', "filters": {"year": 2020}, "tags": ["a", "b"]})],
    ),
    Case(
        "marker-inside-argument",
        "<|channel|>commentary to=functions.set_port <|constrain|>json<|message|>"
        '{"blob": "a <tool_call> b <think> c"}<|call|>',
        calls=[("set_port", {"blob": "a <tool_call> b <think> c"})],
    ),
    Case(
        "analysis-mentions-call-syntax",
        '<|channel|>analysis<|message|>I could write to=functions.get_weather {"city": 1}.<|end|>' + FINAL,
        reasoning='I could write to=functions.get_weather {"city": 1}.',
        content="It is sunny.",
    ),
    Case(
        "malformed-json-is-text",
        '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": Paris}<|call|>',
        content='<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": Paris}<|call|>',
    ),
    Case("plain-text-reply", "Just a plain answer.", content="Just a plain answer."),
    Case(
        "unknown-header-is-text",
        "<|channel|>final extra words here<|message|>x",
        content="<|channel|>final extra words here<|message|>x",
    ),
    Case(
        "cut-second-of-pair",
        ANALYSIS + CALL + "<|start|>assistant<|channel|>commentary to=functions.search "
        '<|constrain|>json<|message|>{"query": "x',
        truncated=True,
        reasoning="The user wants the weather.",
        calls=[W],
        incomplete=["search"],
    ),
    Case("call-then-final", CALL + FINAL, calls=[W], content="It is sunny."),
    # Harmony's own markers inside a JSON string argument do not end the call.
    Case(
        "harmony-markers-inside-argument",
        ANALYSIS
        + "<|start|>assistant<|channel|>commentary to=functions.set_port <|constrain|>json<|message|>"
        '{"blob": "x <|call|> <|end|><|start|>assistant<|channel|>final<|message|> y <|return|>"}<|call|>'
        + FINAL,
        reasoning="The user wants the weather.",
        content="It is sunny.",
        calls=[
            (
                "set_port",
                {"blob": "x <|call|> <|end|><|start|>assistant<|channel|>final<|message|> y <|return|>"},
            )
        ],
    ),
    Case(
        "fenced-json-with-marker",
        '<|channel|>commentary to=functions.set_port<|message|>\n```json\n{"blob": "<|end|>"}\n```<|call|>',
        calls=[("set_port", {"blob": "<|end|>"})],
    ),
    # A JSON body that never closes is not JSON-aware text: it ends at its first end marker (and
    # is content, byte for byte); what follows is read as messages, so analysis stays reasoning.
    Case(
        "unclosed-json-then-analysis",
        '<|channel|>commentary to=functions.search<|message|>{"query": "x"<|call|>'
        "<|start|>assistant<|channel|>analysis<|message|>secret<|end|>" + FINAL,
        content='<|channel|>commentary to=functions.search<|message|>{"query": "x"<|call|>It is sunny.',
        reasoning="secret",
    ),
    Case(
        "cut-inside-json-with-marker",
        '<|channel|>commentary to=functions.search<|message|>{"query": "x <|call|> y',
        truncated=True,
        content='<|channel|>commentary to=functions.search<|message|>{"query": "x <|call|> y',
    ),
    # A body-end token that no header follows did not end the message: it stays text of the same
    # channel (analysis stays reasoning, byte for byte; never content).
    Case(
        "stray-end-in-analysis",
        "<|channel|>analysis<|message|>think <|call|> more<|end|><|start|>assistant<|channel|>final<|message|>hi",
        reasoning="think <|call|> more",
        content="hi",
    ),
    Case(
        "analysis-without-next-header",
        "<|channel|>analysis<|message|>think<|end|>oops no header",
        reasoning="think<|end|>oops no header",
    ),
    Case("stray-end-in-final", "<|channel|>final<|message|>Answer<|end|> more", content="Answer<|end|> more"),
    Case("trailing-whitespace-after-end", ANALYSIS + "\n", reasoning="The user wants the weather.\n"),
]

# Messages to built-in recipients that were not declared: rejected calls, never run, never content.
PY = "<|start|>assistant<|channel|>analysis to=python code<|message|>print(1)<|call|>"
UNDECLARED = [
    Case("undeclared-python", ANALYSIS + PY, reasoning="The user wants the weather.", incomplete=["python"]),
    Case(
        "undeclared-browser-search",
        '<|channel|>commentary to=browser.search <|constrain|>json<|message|>{"query": "weather"}<|call|>',
        incomplete=["browser.search"],
    ),
    Case("undeclared-then-function-call", PY + CALL, calls=[W], incomplete=["python"]),
    Case(
        "declared-tool-without-prefix",
        "<|channel|>commentary to=get_time <|constrain|>json<|message|>{}<|call|>",
        calls=[("get_time", {})],
    ),
]

# Reasoning cut inside the next message's header ends at the analysis message's <|end|>.
CUT_HEADER = [
    Case(
        "cut-inside-header",
        ANALYSIS + "<|start|>assistant<|chan",
        truncated=True,
        reasoning="The user wants the weather.",
        incomplete=[None],
    ),
    Case(
        "cut-inside-call-header",
        ANALYSIS + "<|start|>assistant<|channel|>commentary to=functions.get_weather",
        truncated=True,
        reasoning="The user wants the weather.",
        incomplete=["get_weather"],
    ),
    Case("cut-after-end", ANALYSIS, truncated=True, reasoning="The user wants the weather."),
]
CASES += UNDECLARED + CUT_HEADER


def _fuzz_call(name, args, rnd, first):
    start = "" if first else "<|start|>assistant"
    body = json.dumps(args, ensure_ascii=rnd.random() < 0.5)
    if rnd.random() < 0.5:
        return f"{start}<|channel|>commentary to=functions.{name} <|constrain|>json<|message|>{body}<|call|>"
    return f"{start} to=functions.{name}<|channel|>commentary json<|message|>{body}<|call|>"


def _fuzz_reply(fmt, calls, texts, reasoning, rnd):
    """Messages: an optional analysis message, final messages for the texts, the calls between."""
    reasoning = f"think {rnd.randint(0, 99)}" if rnd.random() < 0.5 else ""
    parts = [f"<|channel|>analysis<|message|>{reasoning}<|end|>"] if reasoning else []
    for i, t in enumerate(texts):
        if t:
            parts.append(("<|start|>assistant" if parts else "") + f"<|channel|>final<|message|>{t}<|end|>")
        if i < len(calls):
            parts.append(_fuzz_call(*calls[i], rnd, not parts))
    return "".join(parts), "".join(texts), reasoning


_H_MARKERS = ("<|start|>", "<|channel|>", "<|message|>", "<|constrain|>", "<|end|>", "<|call|>", "<|return|>")
_H_CHANNEL = r"<\|channel\|>[ \t]*[A-Za-z_]\w*[ \t]*"
# A message header without recipient (a call's header is in its raw), and the end tokens.
FUZZ = Fuzz(
    markers=_H_MARKERS,
    forbidden=_H_MARKERS,
    reply=_fuzz_reply,
    structure=(
        r"(?:<\|start\|>[ \t]*assistant[ \t]*(?:" + _H_CHANNEL + r")?|" + _H_CHANNEL + r")"
        r"(?:<\|constrain\|>[ \t]*)?(?:[A-Za-z_][\w\-]*)?[ \t]*<\|message\|>",
        r"<\|end\|>",
        r"<\|call\|>",
        r"<\|return\|>",
    ),
)
