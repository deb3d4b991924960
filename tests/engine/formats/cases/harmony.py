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
    # A JSON body that never closes is not JSON-aware text: it ends at its first end marker (a
    # body lacking only its last brace is the call, UNCLOSED below; any other is content, byte for
    # byte); what follows is read as messages, so analysis stays reasoning.
    Case(
        "unclosed-json-then-analysis",
        '<|channel|>commentary to=functions.search<|message|>{"query": "x"<|call|>'
        "<|start|>assistant<|channel|>analysis<|message|>secret<|end|>" + FINAL,
        content="It is sunny.",
        reasoning="secret",
        calls=[("search", {"query": "x"})],
    ),
    Case(
        "unclosed-json-in-string-then-analysis",
        '<|channel|>commentary to=functions.search<|message|>{"query": "x<|call|>'
        "<|start|>assistant<|channel|>analysis<|message|>secret<|end|>" + FINAL,
        content='<|channel|>commentary to=functions.search<|message|>{"query": "x<|call|>It is sunny.',
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
        reasoning="thinkoops no header",
    ),
    # free text after <|end|> (no header there): the message went on, the marker is markup
    Case("stray-end-in-final", "<|channel|>final<|message|>Answer<|end|> more", content="Answer more"),
    Case(
        "free-text-between-messages",
        "<|channel|>analysis<|message|>think<|end|> 364 <|start|>assistant<|channel|>final<|message|>Hi<|return|>",
        reasoning="think 364 ",
        content="Hi",
    ),
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

# LLM-jp-4.1: the same wire with a space after each special token that text follows (its
# tokenizer's), parallel calls closed by <|end|> but the last. A header whose channel name follows
# <|channel|> after a space drops exactly one leading space of its body; gpt-oss's headers never
# have that space, so their bodies keep every character.
J_ANALYSIS = "<|channel|> analysis<|message|> Two cities.<|end|>"
J_START = "<|start|> assistant"


def j_call(city, end="<|call|>", name="get_weather"):
    """A call as LLM-jp writes it: the recipient in the role header, spaces after the tokens."""
    return (
        f"{J_START} to=functions.{name}<|channel|> commentary <|constrain|>  json<|message|> "
        + json.dumps({"city": city})
        + end
    )


J_TOKYO, J_OSAKA = ("get_weather", {"city": "Tokyo"}), ("get_weather", {"city": "Osaka"})
LLM_JP = [
    Case(
        "llm-jp-analysis-then-final",
        J_ANALYSIS + J_START + "<|channel|> final<|message|> It is sunny.<|return|>",
        reasoning="Two cities.",
        content="It is sunny.",
    ),
    Case(
        "llm-jp-parallel-calls-end-separated",
        J_ANALYSIS + j_call("Tokyo", "<|end|>") + j_call("Osaka"),
        reasoning="Two cities.",
        calls=[J_TOKYO, J_OSAKA],
        ids=["call00000", "call00001"],
    ),
    Case(
        "llm-jp-last-call-at-eos",
        J_ANALYSIS + j_call("Tokyo", "<|end|>") + j_call("Osaka", ""),
        reasoning="Two cities.",
        calls=[J_TOKYO, J_OSAKA],
    ),
    Case(
        "llm-jp-first-message-recipient-in-role",
        ' to=functions.get_weather<|channel|> commentary json<|message|> {"city": "Paris", "days": 3}<|call|>',
        calls=[W],
    ),
    Case(
        "llm-jp-recipient-after-channel",
        '<|channel|> commentary to=functions.get_weather <|constrain|> json<|message|> {"city": "Paris", "days": 3}<|call|>',
        calls=[W],
    ),
    Case(
        "llm-jp-preamble-then-call",
        J_ANALYSIS + J_START + "<|channel|> commentary<|message|> Checking both.<|end|>" + j_call("Tokyo"),
        reasoning="Two cities.",
        content="Checking both.",
        calls=[J_TOKYO],
    ),
    Case(
        "llm-jp-final-only",
        "<|channel|> final<|message|> こんにちは<|return|>",
        content="こんにちは",
    ),
    # Exactly one space is the tokenizer's: a second one is the body's own.
    Case("llm-jp-body-own-space-kept", "<|channel|> final<|message|>  indented", content=" indented"),
    Case("llm-jp-body-starts-with-newline", "<|channel|> final<|message|>\nHi", content="\nHi"),
    Case("llm-jp-empty-final", "<|channel|> final<|message|><|return|>"),
    Case("llm-jp-empty-analysis", "<|channel|> analysis<|message|><|end|>"),
    Case(
        "llm-jp-two-analysis-messages",
        J_ANALYSIS + J_START + "<|channel|> analysis<|message|> More.<|end|>",
        reasoning="Two cities.More.",
    ),
    Case(
        "llm-jp-stray-end-in-analysis",
        "<|channel|> analysis<|message|> think<|end|> oops no header",
        reasoning="think oops no header",
    ),
    Case(
        "llm-jp-cut-in-call",
        J_ANALYSIS + j_call("Tokyo", "<|end|>") + j_call("Osaka", "")[:-5],
        truncated=True,
        reasoning="Two cities.",
        calls=[J_TOKYO],
        incomplete=["get_weather"],
    ),
    Case(
        "llm-jp-malformed-json-is-text",
        '<|channel|> commentary to=functions.get_weather<|message|> {"city": Paris}<|call|>',
        content='<|channel|> commentary to=functions.get_weather<|message|> {"city": Paris}<|call|>',
    ),
    # gpt-oss: no space after <|channel|>, so a body's leading space is the body's.
    Case("gpt-oss-body-leading-space-kept", "<|channel|>final<|message|> Hello<|return|>", content=" Hello"),
    Case(
        "gpt-oss-analysis-leading-space-kept",
        "<|channel|>analysis<|message|> plan<|end|><|start|>assistant<|channel|>final<|message|> ok",
        reasoning=" plan",
        content=" ok",
    ),
    Case(
        "spaced-start-only-is-not-llm-jp",
        "<|start|> assistant<|channel|>final<|message|> Hi",
        content=" Hi",
    ),
    Case("tab-after-channel-is-not-llm-jp", "<|channel|>\tfinal<|message|> Hi", content=" Hi"),
]

# gpt-oss's final message whose header lost its <|message|>: "<|channel|>final", a space or a
# newline, then the answer up to the message's end (vLLM #45736). Any other channel, or the word
# run into the text, stays as before.
STRANDED = "<|start|>assistant<|channel|>final It is sunny."
STRANDED_FINAL = [
    Case(
        "stranded-final-after-analysis",
        ANALYSIS + STRANDED,
        reasoning="The user wants the weather.",
        content="It is sunny.",
    ),
    Case(
        "stranded-final-with-return",
        ANALYSIS + STRANDED + "<|return|>",
        reasoning="The user wants the weather.",
        content="It is sunny.",
    ),
    Case("stranded-final-first-message", "<|channel|>final It is sunny.", content="It is sunny."),
    Case("stranded-final-newline", "<|channel|>final\nIt is\nsunny.", content="It is\nsunny."),
    Case(
        "stranded-final-then-call",
        "<|channel|>final Checking.<|end|>" + CALL,
        content="Checking.",
        calls=[W],
    ),
    Case(
        "stranded-final-cut",
        ANALYSIS + STRANDED[:-4],
        truncated=True,
        reasoning="The user wants the weather.",
        content="It is su",
    ),
    Case(
        "stranded-final-long",
        "<|channel|>final " + "sunny " * 200,
        content="sunny " * 200,
    ),
    # not a stranded final: another channel word, or no separator after it
    Case(
        "stranded-analysis-stays-reasoning",
        ANALYSIS + "<|start|>assistant<|channel|>analysis more",
        reasoning="The user wants the weather.<|end|><|start|>assistant<|channel|>analysis more",
    ),
    Case(
        "final-run-into-text-is-text", "<|channel|>finalIt is sunny.", content="<|channel|>finalIt is sunny."
    ),
]
CASES += UNDECLARED + CUT_HEADER + LLM_JP + STRANDED_FINAL

# gpt-oss leaves out the last closing brackets of deeply nested arguments before <|call|> (ollama
# #14180): a body that the model ended itself and that lacks only those is read with them.
NESTED = "<|start|>assistant<|channel|>commentary to=functions.search <|constrain|>json<|message|>"
UNCLOSED = [
    Case(
        "brackets-left-out-before-call",
        ANALYSIS + NESTED + '{"query": "x", "filters": {"year": 2020, "tags": ["a", "b"]<|call|>',
        reasoning="The user wants the weather.",
        calls=[("search", {"query": "x", "filters": {"year": 2020, "tags": ["a", "b"]}})],
    ),
    Case(
        "bracket-left-out-before-end-then-a-call",
        NESTED + '{"query": "x", "filters": {"year": 2020}<|end|>' + NESTED + '{"query": "y"}<|call|>',
        calls=[("search", {"query": "x", "filters": {"year": 2020}}), ("search", {"query": "y"})],
    ),
    Case(
        "brace-inside-a-string-is-not-a-bracket",
        NESTED + '{"query": "a } b", "filters": {"year": 1<|call|>',
        calls=[("search", {"query": "a } b", "filters": {"year": 1}})],
    ),
    # an open string, a mismatched bracket, or a cut reply: not mended
    Case(
        "open-string-is-text",
        NESTED + '{"query": "x<|call|>',
        content=NESTED + '{"query": "x<|call|>',
    ),
    Case(
        "mismatched-bracket-is-text",
        NESTED + '{"query": "x", "filters": {"year": 1]<|call|>',
        content=NESTED + '{"query": "x", "filters": {"year": 1]<|call|>',
    ),
    Case(
        "unclosed-cut-is-incomplete",
        NESTED + '{"query": "x", "filters": {"year": 1',
        truncated=True,
        incomplete=["search"],
    ),
]
CASES += UNCLOSED

# gpt-oss-20b at its recommended sampling writes a broken header at a turn's start now and then:
# "<|channel|>", free text or "??" or "commentary?", then "<|end|>" with no "<|message|>", and only
# then its messages (llama.cpp #27720). The words are reasoning, the markers structure. And it
# writes a call's channel again after the recipient (vLLM #31677): read as the call.
TWICE = "<|start|>assistant<|channel|>commentary to=functions.get_weather<|channel|>commentary"
BROKEN_HEADER = [
    Case(
        "broken-header-then-analysis-and-final",
        "<|channel|>commentary?<|end|>" + ANALYSIS + FINAL,
        reasoning="commentary?The user wants the weather.",
        content="It is sunny.",
    ),
    Case("broken-header-then-call", "<|channel|>??<|end|>" + CALL, reasoning="??", calls=[W]),
    Case(
        "broken-header-channel-twice",
        "<|channel|>commentary to=assistant<|channel|>commentary?<|end|>" + FINAL,
        reasoning="commentary to=assistantcommentary?",
        content="It is sunny.",
    ),
    Case(
        "broken-header-free-text",
        "<|channel|>The user asks\nabout weather<|end|>" + FINAL,
        reasoning="The user asks\nabout weather",
        content="It is sunny.",
    ),
    Case(
        "broken-header-after-analysis",
        ANALYSIS + "<|start|>assistant<|channel|>commentary 2?<|end|>" + FINAL,
        reasoning="The user wants the weather.commentary 2?",
        content="It is sunny.",
    ),
    Case("broken-header-alone", "<|channel|>??<|end|>", reasoning="??"),
    Case("broken-header-then-text", "<|channel|>??<|end|>Hello", reasoning="??", content="Hello"),
    Case("broken-header-empty", "<|channel|><|end|>" + FINAL, content="It is sunny."),
    Case(
        "call-channel-twice",
        ANALYSIS + TWICE + CALL[CALL.index(" <|constrain|>") :],
        reasoning="The user wants the weather.",
        calls=[W],
    ),
    Case(
        "call-channel-twice-no-constrain",
        TWICE + '<|message|>{"city": "Paris", "days": 3}<|call|>',
        calls=[W],
    ),
    # text as before: a header ended by another end marker, a channel twice in a message that is
    # not a call, a header cut by the token limit
    Case("header-ended-by-return-is-text", "<|channel|>??<|return|>", content="<|channel|>??"),
    Case(
        "final-channel-twice-is-text",
        "<|channel|>final<|channel|>final<|message|>Hi",
        content="<|channel|>final<|channel|>final<|message|>Hi",
        stable_prefix=False,
    ),
]
CASES += BROKEN_HEADER

# gpt-oss-120b's headers with "<|start|>" written twice or an empty channel name (vLLM #43408;
# openai/harmony #48): read as the header they stand for; a header without a channel is content.
START_TWICE = [
    Case(
        "start-twice-then-final",
        ANALYSIS + "<|start|>" + FINAL,
        reasoning="The user wants the weather.",
        content="It is sunny.",
    ),
    Case(
        "start-twice-then-call",
        ANALYSIS + "<|start|>" + CALL,
        reasoning="The user wants the weather.",
        calls=[W],
    ),
    Case(
        "empty-channel-after-analysis",
        ANALYSIS + "<|start|>assistant<|channel|><|message|>It is sunny.<|return|>",
        reasoning="The user wants the weather.",
        content="It is sunny.",
    ),
    Case("empty-channel-first", "<|channel|><|message|>It is sunny.", content="It is sunny."),
    Case(
        "empty-channel-call",
        '<|channel|> to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris", "days": 3}<|call|>',
        calls=[W],
    ),
]
CASES += START_TWICE


def _fuzz_call(name, args, rnd, first, sp=""):
    start = "" if first else f"<|start|>{sp}assistant"
    body = json.dumps(args, ensure_ascii=rnd.random() < 0.5)
    end = "<|end|>" if sp and rnd.random() < 0.5 else "<|call|>"  # LLM-jp's parallel calls
    if rnd.random() < 0.5:
        return f"{start}<|channel|>{sp}commentary to=functions.{name} <|constrain|>{sp}json<|message|>{sp}{body}{end}"
    return f"{start} to=functions.{name}<|channel|>{sp}commentary json<|message|>{sp}{body}{end}"


def _fuzz_reply(fmt, calls, texts, reasoning, rnd):
    """Messages: an optional analysis message, final messages for the texts, the calls between;
    in gpt-oss's spelling or in LLM-jp's (a space after each special token that text follows)."""
    sp = " " if rnd.random() < 0.5 else ""
    reasoning = f"think {rnd.randint(0, 99)}" if rnd.random() < 0.5 else ""
    parts = [f"<|channel|>{sp}analysis<|message|>{sp}{reasoning}<|end|>"] if reasoning else []
    for i, t in enumerate(texts):
        if t:
            start = f"<|start|>{sp}assistant" if parts else ""
            parts.append(f"{start}<|channel|>{sp}final<|message|>{sp}{t}<|end|>")
        if i < len(calls):
            name, args = calls[i]
            parts.append(_fuzz_call(name, args, rnd, not parts, sp))
    return "".join(parts), "".join(texts), reasoning


_H_MARKERS = ("<|start|>", "<|channel|>", "<|message|>", "<|constrain|>", "<|end|>", "<|call|>", "<|return|>")
_H_CHANNEL = r"<\|channel\|>[ \t]*(?:[A-Za-z_]\w*)?[ \t]*"
# A message header without recipient (a call's header is in its raw), and the end tokens.
FUZZ = Fuzz(
    markers=_H_MARKERS,
    forbidden=_H_MARKERS,
    reply=_fuzz_reply,
    structure=(
        r"(?:(?:<\|start\|>[ \t]*)+assistant[ \t]*(?:" + _H_CHANNEL + r")?|" + _H_CHANNEL + r")"
        r"(?:<\|constrain\|>[ \t]*)?(?:[A-Za-z_][\w\-]*)?[ \t]*<\|message\|>",
        r"<\|end\|>",
        # the markers of a header that reaches <|end|> with no <|message|> (its words: reasoning)
        r"(?:(?:<\|start\|>[ \t]*)+assistant|<\|channel\|>|<\|constrain\|>)"
        r"(?=(?:(?!<\|start\|>|<\|message\|>)[\s\S])*<\|end\|>)",
        r"<\|call\|>",
        r"<\|return\|>",
    ),
)
