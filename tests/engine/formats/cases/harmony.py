"""gpt-oss Harmony: channels analysis / commentary (calls to=functions.NAME) / final."""

from tests.engine.formats.harness import Case

FAMILY = "harmony"

ANALYSIS = "<|channel|>analysis<|message|>The user wants the weather.<|end|>"
# The recipient after the channel (what gpt-oss usually writes) ...
CALL = ('<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>'
        '{"city": "Paris", "days": 3}<|call|>')
# ... or in the role header (what the official template renders).
CALL_ROLE = ('<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>'
             '{"city": "Paris", "days": 3}<|call|>')
W = ("get_weather", {"city": "Paris", "days": 3})
FINAL = "<|start|>assistant<|channel|>final<|message|>It is sunny.<|return|>"

CASES = [
    Case("analysis-then-call", ANALYSIS + CALL, reasoning="The user wants the weather.", calls=[W],
         ids=["call00000"]),
    Case("recipient-in-role-header", ANALYSIS + CALL_ROLE, reasoning="The user wants the weather.", calls=[W]),
    Case("first-message-is-call",
         ' to=functions.get_weather<|channel|>commentary json<|message|>{"city": "Paris", "days": 3}<|call|>',
         calls=[W]),
    Case("first-message-call-after-channel",
         '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": "Paris", "days": "3"}',
         calls=[W]),
    Case("call-ends-at-eos", ANALYSIS + '<|start|>assistant<|channel|>commentary to=functions.get_time '
         '<|constrain|>json<|message|>{}', reasoning="The user wants the weather.", calls=[("get_time", {})]),
    Case("call-cut-off", ANALYSIS + '<|start|>assistant<|channel|>commentary to=functions.get_time '
         '<|constrain|>json<|message|>{}', truncated=True, reasoning="The user wants the weather.",
         content='<|start|>assistant<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{}'),
    Case("analysis-then-final", ANALYSIS + FINAL, reasoning="The user wants the weather.",
         content="It is sunny."),
    Case("final-only", "<|channel|>final<|message|>Hello there!", content="Hello there!"),
    Case("preamble-then-call",
         ANALYSIS + "<|start|>assistant<|channel|>commentary<|message|>Checking the weather now.<|end|>" + CALL,
         reasoning="The user wants the weather.", content="Checking the weather now.", calls=[W]),
    Case("parallel-calls", ANALYSIS + CALL + CALL.replace("Paris", "Oslo").replace("get_weather", "search")
         .replace('"days": 3', '"limit": "5"').replace('"city"', '"query"'),
         reasoning="The user wants the weather.",
         calls=[W, ("search", {"query": "Oslo", "limit": 5})], ids=["call00000", "call00001"]),
    Case("two-analysis-messages", ANALYSIS + "<|start|>assistant<|channel|>analysis<|message|> More.<|end|>" + FINAL,
         reasoning="The user wants the weather. More.", content="It is sunny."),
    Case("prefilled-analysis", "thinking in progress<|end|>" + FINAL, in_reasoning=True,
         reasoning="thinking in progress", content="It is sunny."),
    Case("empty-arguments", '<|channel|>commentary to=functions.get_time <|constrain|>json<|message|>{}<|call|>',
         calls=[("get_time", {})]),
    Case("numbers-stay-strings",
         '<|channel|>commentary to=functions.set_port <|constrain|>json<|message|>'
         '{"port": "8080", "zip": "02139", "flag": "true"}<|call|>',
         calls=[("set_port", {"port": "8080", "zip": "02139", "flag": "true"})]),
    Case("nested-json-unicode-escapes",
         '<|channel|>commentary to=functions.search <|constrain|>json<|message|>'
         '{"query": "Zürich \\"q\\" \\u00e9 東京", "filters": {"year": "2020"}, "tags": ["a", "b"]}<|call|>',
         calls=[("search", {"query": 'Zürich "q" é 東京', "filters": {"year": 2020}, "tags": ["a", "b"]})]),
    Case("marker-inside-argument",
         '<|channel|>commentary to=functions.set_port <|constrain|>json<|message|>'
         '{"blob": "a <tool_call> b <think> c"}<|call|>',
         calls=[("set_port", {"blob": "a <tool_call> b <think> c"})]),
    Case("analysis-mentions-call-syntax",
         "<|channel|>analysis<|message|>I could write to=functions.get_weather {\"city\": 1}.<|end|>" + FINAL,
         reasoning="I could write to=functions.get_weather {\"city\": 1}.", content="It is sunny."),
    Case("malformed-json-is-text",
         '<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": Paris}<|call|>',
         content='<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{"city": Paris}<|call|>'),
    Case("plain-text-reply", "Just a plain answer.", content="Just a plain answer."),
    Case("unknown-header-is-text", "<|channel|>final extra words here<|message|>x",
         content="<|channel|>final extra words here<|message|>x"),
    Case("cut-second-of-pair", ANALYSIS + CALL + '<|start|>assistant<|channel|>commentary to=functions.search '
         '<|constrain|>json<|message|>{"query": "x', truncated=True, reasoning="The user wants the weather.",
         content='<|start|>assistant<|channel|>commentary to=functions.search <|constrain|>json<|message|>{"query": "x',
         calls=[W]),
    Case("call-then-final", CALL + FINAL, calls=[W], content="It is sunny."),
]
