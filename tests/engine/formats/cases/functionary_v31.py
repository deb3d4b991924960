"""Functionary v3.1: ``<function=NAME>{json}</function>`` and ``<|python_tag|>code``."""

import re

from tests.engine.formats.harness import Case, Fuzz

FAMILY = "functionary-v3.1"

W = '<function=get_weather>{"city": "Paris", "days": 3, "metric": true}</function>'
WC = ("get_weather", {"city": "Paris", "days": 3, "metric": True})

CASES = [
    Case("single", W, calls=[WC], ids=["call00000"]),
    Case("with-eom", W + "<|eom_id|>", calls=[WC]),
    Case(
        "parallel",
        W + "<function=get_time>{}</function><|eom_id|>",
        calls=[WC, ("get_time", {})],
        ids=["call00000", "call00001"],
    ),
    Case(
        "text-before-and-after",
        "Let me check.\n" + W + "\nDone.",
        content="Let me check.\n\nDone.",
        calls=[WC],
    ),
    Case(
        "typed-by-schema",
        '<function=search>{"query": "q", "limit": "10", "filters": "{\\"year\\": 2020}", '
        '"score": "null"}</function>',
        calls=[("search", {"query": "q", "limit": 10, "filters": {"year": 2020}, "score": None})],
    ),
    Case(
        "string-props-keep-text",
        '<function=set_port>{"port": "8080", "zip": "02139", "flag": "true"}</function>',
        calls=[("set_port", {"port": "8080", "zip": "02139", "flag": "true"})],
    ),
    Case(
        "marker-in-string",
        '<function=set_port>{"blob": "a </function> b <function=x>"}</function>',
        calls=[("set_port", {"blob": "a </function> b <function=x>"})],
    ),
    Case("missing-close-at-eos", "<function=get_time>{}", calls=[("get_time", {})]),
    Case("missing-close-truncated", "<function=get_time>{}", truncated=True, incomplete=["get_time"]),
    Case(
        "cut-second", W + '<function=search>{"query": "a', truncated=True, calls=[WC], incomplete=["search"]
    ),
    Case("python-code", "<|python_tag|>print(2 + 2)", calls=[("python", {"code": "print(2 + 2)"})]),
    Case(
        "python-code-eom-then-nothing",
        "<|python_tag|>x = 1\nprint(x)<|eom_id|>",
        calls=[("python", {"code": "x = 1\nprint(x)"})],
    ),
    Case("python-code-cut", "<|python_tag|>print(2 +", truncated=True, incomplete=["python"]),
    # Rejected shapes: text.
    Case(
        "llama-json-after-python-tag",
        '<|python_tag|>{"name": "get_time", "parameters": {}}',
        content='<|python_tag|>{"name": "get_time", "parameters": {}}',
    ),
    Case(
        "qwen-xml-shape",
        "<function=get_time>\n<parameter=a>\n1\n</parameter>\n</function>",
        content="<function=get_time>\n<parameter=a>\n1\n</parameter>\n</function>",
    ),
    Case(
        "arguments-not-object",
        "<function=get_time>[1, 2]</function>",
        content="<function=get_time>[1, 2]</function>",
    ),
    Case(
        "text-after-json",
        "<function=get_time>{} and more</function>",
        content="<function=get_time>{} and more</function>",
    ),
    Case("spaced-name", "<function=get time>{}</function>", content="<function=get time>{}</function>"),
    Case("no-name", "<function=>{}</function>", content="<function=>{}</function>"),
    Case(
        "hermes-shape",
        '<tool_call>{"name": "get_time", "arguments": {}}</tool_call>',
        content='<tool_call>{"name": "get_time", "arguments": {}}</tool_call>',
    ),
    Case(
        "plain-text",
        "Hello! The <function= tag is how I call tools.",
        content="Hello! The <function= tag is how I call tools.",
    ),
]

FUZZ = Fuzz(markers=("</function>", "<|eom_id|>"), structure=(re.escape("<|eom_id|>"),))
