"""GigaChat 3.1: ``content<|function_call|>{"name": ..., "arguments": {...}}<|message_sep|>``; GigaChat 3:
``content<|message_sep|>\\n\\nfunction call<|role_sep|>\\n{...}<|message_sep|>``. No reasoning."""

from tests.engine.formats.harness import Case, Fuzz

FAMILY = "gigachat"

FC = "<|function_call|>"
SEP = "<|message_sep|>"
ROLE = "function call<|role_sep|>"
W = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'
PW = ("get_weather", {"city": "Paris", "days": 3})

CASES = [
    # -- GigaChat 3.1
    Case("v31-call", FC + W + SEP, calls=[PW], ids=["call00000"]),
    Case("v31-text-then-call", "Let me check." + FC + W + SEP, content="Let me check.", calls=[PW]),
    Case("v31-call-at-eos", FC + W, calls=[PW]),
    Case("v31-space-before-json", FC + "\n" + W + "\n" + SEP, calls=[PW]),
    # -- GigaChat 3: the call is a message of the "function call" role
    Case("v3-call", SEP + "\n\n" + ROLE + "\n" + W + SEP + "\n\n", content="\n\n", calls=[PW]),
    Case("v3-text-then-call", "Checking." + SEP + "\n\n" + ROLE + "\n" + W, content="Checking.", calls=[PW]),
    Case("v3-separator-dropped", "\n\n" + ROLE + "\n" + W, content="\n\n", calls=[PW]),
    # -- values
    Case(
        "arguments-as-json-string",
        FC + '{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}',
        calls=[("get_weather", {"city": "Rome"})],
    ),
    Case(
        "typed-by-schema",
        FC + '{"name": "search", "arguments": {"query": "q", "limit": "5", "tags": "[\\"t\\"]"}}',
        calls=[("search", {"query": "q", "limit": 5, "tags": ["t"]})],
    ),
    Case(
        "string-props-keep-text",
        FC + '{"name": "set_port", "arguments": {"port": "8080", "zip": "02139"}}',
        calls=[("set_port", {"port": "8080", "zip": "02139"})],
    ),
    Case(
        "markers-inside-json-string",
        FC + '{"name": "set_port", "arguments": {"blob": "<|message_sep|> <|function_call|>{}"}}' + SEP,
        calls=[("set_port", {"blob": "<|message_sep|> <|function_call|>{}"})],
    ),
    Case(
        "unicode",
        FC + '{"name": "get_weather", "arguments": {"city": "Москва"}}',
        calls=[("get_weather", {"city": "Москва"})],
    ),
    Case(
        "two-messages",
        FC + W + SEP + "\n\n" + ROLE + "\n" + '{"name": "get_time", "arguments": {}}',
        content="\n\n",
        calls=[PW, ("get_time", {})],
    ),
    # -- cut
    Case("cut-in-json", FC + '{"name": "get_weather", "argu', truncated=True, incomplete=["get_weather"]),
    Case("cut-after-json", FC + W + "<|message_", truncated=True, calls=[PW], content="<|message_"),
    # -- not this family's shapes
    Case("text-after-json", FC + W + " and more", content=" and more", calls=[PW]),
    Case("not-json", FC + "get_weather(city='Paris')", content=FC + "get_weather(city='Paris')"),
    Case(
        "extra-key",
        FC + '{"name": "get_time", "arguments": {}, "id": "1"}',
        content=FC + '{"name": "get_time", "arguments": {}, "id": "1"}',
    ),
    Case("missing-arguments", FC + '{"name": "get_time"}', content=FC + '{"name": "get_time"}'),
    Case(
        "list-not-object",
        FC + '[{"name": "get_time", "arguments": {}}]',
        content=FC + '[{"name": "get_time", "arguments": {}}]',
    ),
    Case(
        "role-word-in-text",
        "The function call role is documented.",
        content="The function call role is documented.",
    ),
    Case(
        "unclosed-at-eos",
        FC + '{"name": "get_time", "arguments": {',
        content=FC + '{"name": "get_time", "arguments": {',
    ),
]

# Issue 27, deviation 7: GigaChat 3 writes the end-of-sequence token as the text </s> after the
# call: consumed with it. Anywhere else it is text.
EOS = "</s>"
CASES += [
    Case("i27-eos-after-call", FC + W + EOS, calls=[PW]),
    Case("i27-eos-after-separator", FC + W + SEP + EOS, calls=[PW]),
    Case("i27-eos-after-whitespace", FC + W + "\n" + SEP + "\n" + EOS, calls=[PW]),
    Case("i27-eos-v3-role-message", SEP + "\n\n" + ROLE + "\n" + W + SEP + EOS, content="", calls=[PW]),
    Case("i27-eos-v3-separator-dropped", "\n\n" + ROLE + "\n" + W + " " + EOS, content="\n\n", calls=[PW]),
    Case(
        "i27-eos-then-next-message",
        FC + W + EOS + "\n\n" + ROLE + '{"name": "get_time", "arguments": {}}',
        content="\n\n",
        calls=[PW, ("get_time", {})],
    ),
    Case("i27-eos-cut", FC + W + "</", truncated=True, content="</", calls=[PW]),
    # Anywhere else </s> is text.
    Case("i27-eos-in-plain-text", "Done.</s>", content="Done.</s>"),
    Case("i27-eos-twice", FC + W + EOS + EOS, content=EOS, calls=[PW]),
    Case("i27-eos-after-text-after-call", FC + W + " ok" + EOS, content=" ok" + EOS, calls=[PW]),
    Case(
        "i27-eos-inside-json-string",
        FC + '{"name": "set_port", "arguments": {"blob": "a</s>"}}' + EOS,
        calls=[("set_port", {"blob": "a</s>"})],
    ),
    Case(
        "i27-eos-after-bad-call", FC + '{"name": "get_time"}' + EOS, content=FC + '{"name": "get_time"}' + EOS
    ),
]

# The separator that ends the call's message, and a </s> after the call, are consumed with it.
FUZZ = Fuzz(markers=(SEP, ROLE, EOS), structure=(r"<\|message_sep\|>", "</s>"))
