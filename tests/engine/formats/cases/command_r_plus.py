"""Command R+: ``Action: ```json [{"tool_name": N, "parameters": {...}}] ``` ``."""

import re

from tests.engine.formats.harness import Case, Fuzz

FAMILY = "command-r-plus"

ACT = '[\n    {\n        "tool_name": "get_weather",\n        "parameters": {"city": "Paris", "days": 3}\n    }\n]'
W = "Action:\n```json\n" + ACT + "```"
WC = ("get_weather", {"city": "Paris", "days": 3})

CASES = [
    Case("single", W, calls=[WC], ids=["call00000"]),
    Case("fence-on-its-own-line", "Action: ```json\n" + ACT + "\n```", calls=[WC]),
    Case("bare-list", 'Action: [{"tool_name": "get_time", "parameters": {}}]', calls=[("get_time", {})]),
    Case("chatbot-token-is-structure", "<|CHATBOT_TOKEN|>\n" + W + "\n", content="\n\n", calls=[WC]),
    Case(
        "plan-before",
        "Plan: I will look up the weather.\n" + W,
        content="Plan: I will look up the weather.\n",
        calls=[WC],
    ),
    Case(
        "parallel-in-one-list",
        'Action: ```json\n[{"tool_name": "get_weather", "parameters": {"city": "Paris", '
        '"days": 3}}, {"tool_name": "get_time", "parameters": {}}]\n```',
        calls=[WC, ("get_time", {})],
        ids=["call00000", "call00001"],
    ),
    Case(
        "typed-by-schema",
        'Action: ```json\n[{"tool_name": "search", "parameters": {"query": "q", "limit": "10"}}]```',
        calls=[("search", {"query": "q", "limit": 10})],
    ),
    Case(
        "string-props-keep-text",
        'Action: [{"tool_name": "set_port", "parameters": {"port": "8080"}}]',
        calls=[("set_port", {"port": "8080"})],
    ),
    Case(
        "fence-in-string",
        'Action: ```json\n[{"tool_name": "set_port", "parameters": {"blob": "``` ] Action:"}}]\n```',
        calls=[("set_port", {"blob": "``` ] Action:"})],
    ),
    Case(
        "directly-answer-is-a-call",
        'Action: ```json\n[{"tool_name": "directly-answer", "parameters": {}}]\n```',
        calls=[("directly-answer", {})],
    ),
    Case("unclosed-fence-at-eos", "Action: ```json\n" + ACT, calls=[WC]),
    Case(
        "cut-in-list",
        'Action: ```json\n[{"tool_name": "search", "parameters": {"query": "a',
        truncated=True,
        incomplete=["search"],
    ),
    Case("cut-in-closing-fence", "Action: ```json\n" + ACT + "``", truncated=True, calls=[WC]),
    # Rejected shapes: text.
    Case(
        "action-word-in-prose",
        "The Action: button is on the left.",
        content="The Action: button is on the left.",
    ),
    Case("empty-list", "Action: ```json\n[]\n```", content="Action: ```json\n[]\n```"),
    Case(
        "name-key-shape",
        'Action: ```json\n[{"name": "get_time", "arguments": {}}]\n```',
        content='Action: ```json\n[{"name": "get_time", "arguments": {}}]\n```',
    ),
    Case(
        "object-not-list",
        'Action: ```json\n{"tool_name": "get_time", "parameters": {}}\n```',
        content='Action: ```json\n{"tool_name": "get_time", "parameters": {}}\n```',
    ),
    Case(
        "r7b-shape",
        '<|START_ACTION|>[{"tool_name": "get_time", "parameters": {}}]<|END_ACTION|>',
        content='<|START_ACTION|>[{"tool_name": "get_time", "parameters": {}}]<|END_ACTION|>',
    ),
    Case("plain-text", "Hello! How can I help?", content="Hello! How can I help?"),
]

FUZZ = Fuzz(
    markers=("```json", "<|CHATBOT_TOKEN|>"),
    structure=("Action:", "```", "```[A-Za-z]+", "``?\\Z", re.escape("<|CHATBOT_TOKEN|>"), r"\[", r"\]", ","),
    wrap=("Action: [", "]"),
)
