"""Solar Open: ``<|tool_calls|><|tool_call:begin|>ID<|tool_call:name|>NAME<|tool_call:args|>{...}<|tool_call:end|>
<|calls|>``; messages ``<|think|>...<|end|>``, ``<|begin|>assistant<|content|>...<|end|>``."""

import re

from tests.engine.formats.harness import Case, Fuzz

FAMILY = "solar"

OP, CL = "<|tool_calls|>", "<|calls|>"


def call(cid, name, args):
    return f"<|tool_call:begin|>{cid}<|tool_call:name|>{name}<|tool_call:args|>{args}<|tool_call:end|>"


W = call("a1b2c3d4e5", "get_weather", '{"city": "Paris", "days": 3}')
S = call("k9k9k9k9k9", "search", '{"query": "x", "limit": "10"}')
ONE = OP + W + CL
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})
H = "<|begin|>assistant"

CASES = [
    Case("single", ONE, calls=[PW], ids=["a1b2c3d4e5"]),
    Case("parallel", OP + W + S + CL, calls=[PW, PS], ids=["a1b2c3d4e5", "k9k9k9k9k9"]),
    Case("no-id", OP + call("", "get_time", "{}") + CL, calls=[("get_time", {})], ids=["call00000"]),
    Case("close-implied-at-eos", OP + W, calls=[PW]),
    Case(
        "typed-by-schema",
        OP + call("x1", "search", '{"query": "q", "limit": "4", "tags": "[\\"a\\"]"}') + CL,
        calls=[("search", {"query": "q", "limit": 4, "tags": ["a"]})],
    ),
    Case(
        "markers-inside-json-string",
        OP + call("x1", "set_port", '{"blob": "<|calls|> <|tool_call:end|>"}') + CL,
        calls=[("set_port", {"blob": "<|calls|> <|tool_call:end|>"})],
    ),
    # -- message structure (the engine parses Solar without orphan closes: expects_orphan_close)
    Case("content-message", "<|content|>Hello there.<|end|>", content="Hello there.", orphan_close=False),
    Case(
        "think-then-content",
        "<|think|>The user greets.<|end|>" + H + "<|content|>Hi!<|end|>",
        reasoning="The user greets.",
        content="Hi!",
    ),
    Case("think-then-call", "<|think|>Need weather.<|end|>" + H + ONE, reasoning="Need weather.", calls=[PW]),
    Case("end-without-think-is-not-reasoning", "Answer.<|end|>", content="Answer.", orphan_close=False),
    Case(
        "call-in-reasoning",
        "<|think|>maybe " + ONE + "<|end|>" + H + "<|content|>No.",
        reasoning="maybe " + ONE,
        content="No.",
    ),
    # -- cut
    Case(
        "cut-in-second",
        OP + W + '<|tool_call:begin|>k9<|tool_call:name|>search<|tool_call:args|>{"qu',
        truncated=True,
        calls=[PW],
        incomplete=["search"],
    ),
    Case("cut-in-first", OP + "<|tool_call:begin|>a1<|tool_call:na", truncated=True, incomplete=[None]),
    # -- not this family's shapes
    Case(
        "args-not-object",
        OP + call("x1", "get_time", "[]") + CL,
        content=OP + call("x1", "get_time", "[]") + CL,
    ),
    Case(
        "missing-name-marker",
        OP + "<|tool_call:begin|>x1get_time<|tool_call:args|>{}<|tool_call:end|>" + CL,
        content=OP + "<|tool_call:begin|>x1get_time<|tool_call:args|>{}<|tool_call:end|>" + CL,
    ),
    Case("text-inside-section", OP + "hi" + W + CL, content=OP + "hi" + W + CL),
    Case("call-without-section", W, content=W),
    Case("bad-id", OP + call("a b", "get_time", "{}") + CL, content=OP + call("a b", "get_time", "{}") + CL),
    Case("text-after-call-at-eos", OP + W + " ok", content=OP + W + " ok", stable_prefix=False),
]

_MESSAGE = ("<|content|>", H, "<|end|>")
# The section's tags and the message markers are structure (each call's raw is its own
# <|tool_call:begin|> element).
FUZZ = Fuzz(
    markers=(
        CL,
        "<|tool_call:begin|>",
        "<|tool_call:name|>",
        "<|tool_call:args|>",
        "<|tool_call:end|>",
        *_MESSAGE,
    ),
    structure=(re.escape(OP), re.escape(CL), *(re.escape(m) for m in _MESSAGE)),
    wrap=(OP, CL),
)
