"""LFM2: ``<|tool_call_start|>[f(a=1, b='x')]<|tool_call_end|>``."""

import re

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "lfm2"

S, E = "<|tool_call_start|>", "<|tool_call_end|>"
W = S + "[get_weather(city='Paris', days=3, metric=True)]" + E
WC = ("get_weather", {"city": "Paris", "days": 3, "metric": True})

CASES = [
    Case("single", W, calls=[WC], ids=["call00000"]),
    Case(
        "think-then-call",
        "<think>The user wants weather.</think>" + W,
        reasoning="The user wants weather.",
        calls=[WC],
    ),
    Case(
        "prefilled-think-closed",
        "plan</think>\n" + W,
        in_reasoning=True,
        reasoning="plan",
        content="\n",
        calls=[WC],
    ),
    Case(
        "call-in-closed-reasoning",
        "<think>maybe " + W + " no</think>Hi",
        reasoning="maybe " + W + " no",
        content="Hi",
    ),
    Case(
        "parallel-in-one-list",
        S + "[get_weather(city='Paris'), get_time()]" + E,
        calls=[("get_weather", {"city": "Paris"}), ("get_time", {})],
        ids=["call00000", "call00001"],
    ),
    Case(
        "two-lists-text-around",
        "Checking. " + W + " and " + S + "[get_time()]" + E + " done.",
        content="Checking.  and  done.",
        calls=[WC, ("get_time", {})],
    ),
    Case(
        "template-literals",
        S + "[search(query='q', filters={\"year\": 2020}, tags=['a b', 'c'], score=None, mode=7)]" + E,
        calls=[
            (
                "search",
                {"query": "q", "filters": {"year": 2020}, "tags": ["a b", "c"], "score": None, "mode": 7},
            )
        ],
    ),
    Case(
        "numbers-stay-strings",
        S + "[set_port(port='8080', zip='02139', flag='true')]" + E,
        calls=[("set_port", {"port": "8080", "zip": "02139", "flag": "true"})],
    ),
    Case(
        "marker-in-string",
        S + "[set_port(blob='x <|tool_call_end|> ] y')]" + E,
        calls=[("set_port", {"blob": "x <|tool_call_end|> ] y"})],
    ),
    Case(
        "unicode-escapes",
        S + "[get_weather(city='Zürich \\'q\\' 東京')]" + E,
        calls=[("get_weather", {"city": "Zürich 'q' 東京"})],
    ),
    Case("missing-end-at-eos", S + "[get_time()]", calls=[("get_time", {})]),
    Case("cut-in-end-marker", S + "[get_time()]<|tool_call_e", truncated=True, calls=[("get_time", {})]),
    Case(
        "cut-second-call",
        S + "[get_time(), search(query='x",
        truncated=True,
        calls=[("get_time", {})],
        incomplete=["search"],
    ),
    Case("cut-first-call", S + "[get_weather(city='Par", truncated=True, incomplete=["get_weather"]),
    # Rejected shapes: text.
    Case("bare-list-is-text", "[get_time()]", content="[get_time()]"),
    Case("positional-is-text", S + "[get_weather('Paris')]" + E, content=S + "[get_weather('Paris')]" + E),
    Case(
        "expression-is-text",
        S + "[get_weather(city=__import__('os').getcwd())]" + E,
        content=S + "[get_weather(city=__import__('os').getcwd())]" + E,
    ),
    Case(
        "json-inside-is-text",
        S + '[{"name": "get_time", "arguments": {}}]' + E,
        content=S + '[{"name": "get_time", "arguments": {}}]' + E,
    ),
    Case("bare-call-is-text", S + "get_time()" + E, content=S + "get_time()" + E),
    Case("orphan-close", "hmm</think>Hi", reasoning="hmm", content="Hi"),
    Case("plain-text", "Hello! How can I help?", content="Hello! How can I help?"),
]

# Issue 27, deviation 6: a NUL character inside a string argument (kept, \u0000 in JSON) ...
N = "\x00"
NUL = [
    Case(
        "i27-nul-in-string",
        S + f"[get_weather(city='Par{N}is')]" + E,
        calls=[("get_weather", {"city": f"Par{N}is"})],
    ),
    Case(
        "i27-nul-in-every-string-kind",
        S + f'[search(query="{N}", filters={{"y{N}": "a{N}b"}}, tags=[\'\'\'x{N}\'\'\', "{N}{N}"])]' + E,
        calls=[("search", {"query": N, "filters": {f"y{N}": f"a{N}b"}, "tags": [f"x{N}", N + N]})],
    ),
    Case(
        "i27-nul-escape-written",
        S + "[set_port(blob='a\\x00b')]" + E,
        calls=[("set_port", {"blob": f"a{N}b"})],
    ),
    Case(
        "i27-nul-text-around",
        "Hi " + S + f"[set_port(blob='{N}')]" + E + " bye",
        content="Hi  bye",
        calls=[("set_port", {"blob": N})],
    ),
    Case(
        "i27-nul-cut-second-call",
        S + f"[set_port(blob='{N}'), search(query='{N}",
        truncated=True,
        calls=[("set_port", {"blob": N})],
        incomplete=["search"],
    ),
    Case("i27-nul-missing-end-at-eos", S + f"[set_port(blob='{N}')]", calls=[("set_port", {"blob": N})]),
    # A NUL anywhere else is a stray character: text.
    Case("i27-nul-in-name", S + f"[get_{N}time()]" + E, content=S + f"[get_{N}time()]" + E),
    Case(
        "i27-nul-between-arguments",
        S + f"[get_weather(city='x',{N} days=1)]" + E,
        content=S + f"[get_weather(city='x',{N} days=1)]" + E,
    ),
    # (a prefix cut inside the list keeps its complete call: no stable prefix)
    Case(
        "i27-nul-after-list",
        S + f"[get_time()]{N}" + E,
        content=S + f"[get_time()]{N}" + E,
        stable_prefix=False,
    ),
]

# ... and its echo of the call body after <|tool_call_end|>: the very text between the markers,
# after optional whitespace, written again. Structure; anything else after the call is content.
B = "[get_weather(city='Paris', days=3, metric=True)]"
P = "[get_weather(city='Paris'), get_time()]"
ECHO = [
    Case("i27-echo", W + B, calls=[WC]),
    Case("i27-echo-after-newline", W + "\n" + B + "\nDone.", content="\nDone.", calls=[WC]),
    Case("i27-echo-parallel", S + P + E + P, calls=[("get_weather", {"city": "Paris"}), ("get_time", {})]),
    Case("i27-echo-of-spaced-body", S + " " + B + "\n" + E + B, calls=[WC]),
    Case("i27-echo-then-next-call", W + B + S + "[get_time()]" + E, calls=[WC, ("get_time", {})]),
    Case(
        "i27-echo-with-nul",
        S + f"[set_port(blob='{N}')]" + E + f"[set_port(blob='{N}')]",
        calls=[("set_port", {"blob": N})],
    ),
    Case(
        "i27-echo-after-reasoning",
        "<think>plan</think>" + W + B,
        reasoning="plan",
        calls=[WC],
    ),
    Case("i27-echo-cut", W + B[:20], truncated=True, calls=[WC]),
    # Not the echo: content as written.
    Case("i27-echo-partial-at-end", W + B[:20], content=B[:20], calls=[WC]),
    Case("i27-echo-departs", W + B[:20] + "X", content=B[:20] + "X", calls=[WC]),
    Case(
        "i27-echo-other-arguments",
        W + B.replace("Paris", "Rome"),
        content=B.replace("Paris", "Rome"),
        calls=[WC],
    ),
    Case("i27-echo-without-brackets", W + B[1:-1], content=B[1:-1], calls=[WC]),
    Case("i27-echo-twice", W + B + B, content=B, calls=[WC]),
    Case(
        "i27-echo-of-text-region",
        S + "[get_weather('Paris')]" + E + "[get_weather('Paris')]",
        content=S + "[get_weather('Paris')]" + E + "[get_weather('Paris')]",
    ),
]
CASES += NUL + ECHO

# What LFM2's agent traces hold that Python refuses or JSON lacks (vLLM #48171, SGLang #34237): a
# heredoc's raw newlines in a one-line string, an argument named by a Python keyword, a set, an
# f-string without a placeholder.
HEREDOC = "cat > f.py << EOF\nprint('x')\r\nEOF"
LENIENT = [
    Case(
        "raw-newlines-in-a-string",
        S + f'[set_port(blob="{HEREDOC}")]' + E,
        calls=[("set_port", {"blob": HEREDOC})],
    ),
    Case(
        "raw-newline-in-single-quotes-then-a-call",
        S + "[set_port(blob='a\nb'), get_time()]" + E,
        calls=[("set_port", {"blob": "a\nb"}), ("get_time", {})],
    ),
    Case(
        "raw-newline-cut-second-call",
        S + "[set_port(blob='a\nb'), search(query='c\nd",
        truncated=True,
        calls=[("set_port", {"blob": "a\nb"})],
        incomplete=["search"],
    ),
    Case(
        "keyword-named-arguments",
        S + "[search(query='x', from=1, class='c', lambda_=2)]" + E,
        calls=[("search", {"query": "x", "from": 1, "class": "c", "lambda_": 2})],
    ),
    Case(
        "keyword-inside-a-string-stays",
        S + "[search(query='from=1', in_=True)]" + E,
        calls=[("search", {"query": "from=1", "in_": True})],
    ),
    Case("a-set", S + "[search(tags={'a', 'b', 'a'})]" + E, calls=[("search", {"tags": ["a", "b"]})]),
    Case("an-f-string", S + "[search(query=f'hello')]" + E, calls=[("search", {"query": "hello"})]),
    # still text: a raw newline between arguments, a keyword as a value, an f-string with a placeholder
    Case(
        "raw-newline-outside-strings-in-a-name-is-text",
        S + "[get_\ntime()]" + E,
        content=S + "[get_\ntime()]" + E,
    ),
    Case(
        "keyword-as-a-value-is-text", S + "[search(query=from)]" + E, content=S + "[search(query=from)]" + E
    ),
    Case(
        "f-string-with-a-placeholder-is-text",
        S + "[search(query=f'{x}')]" + E,
        content=S + "[search(query=f'{x}')]" + E,
    ),
]
CASES += LENIENT

# Integers written with leading zeros (tabbyAPI #464; an open vLLM pull request), which Python
# refuses: the schema decides, a string keeps the text as written, a number is the integer.
PADDED = [
    Case(
        "padded-int-string-property", S + "[set_port(zip=02139)]" + E, calls=[("set_port", {"zip": "02139"})]
    ),
    Case(
        "padded-int-integer-property",
        S + "[get_weather(city='Rome', days=007)]" + E,
        calls=[("get_weather", {"city": "Rome", "days": 7})],
    ),
    Case(
        "padded-ints-in-a-list-and-a-union",
        S + "[search(query='x', tags=[01, 'b'], mode=0042, score=03)]" + E,
        calls=[("search", {"query": "x", "tags": ["01", "b"], "mode": "0042", "score": 3})],
    ),
    Case(
        "padded-int-quoted-stays",
        S + "[set_port(zip='007', port=0)]" + E,
        calls=[("set_port", {"zip": "007", "port": 0})],
    ),
    Case(
        "padded-float-is-python",
        S + "[search(query='x', score=0012.5)]" + E,
        calls=[("search", {"query": "x", "score": 12.5})],
    ),
    # still text: a padded hex or an exponent after it, digits run into a name
    Case(
        "padded-then-letters-is-text",
        S + "[search(query='x', limit=007x)]" + E,
        content=S + "[search(query='x', limit=007x)]" + E,
    ),
]
CASES += PADDED

CASES += close_tag_in_argument_cases(
    ("<think>", "</think>"),
    S + "[set_port(blob='why <think> and </think> here')]" + E,
    ("set_port", {"blob": "why <think> and </think> here"}),
    S,
)

# A closing marker cut by the token limit is structure too.
CUT_E = "(?:" + "|".join(re.escape(E[:k]) for k in range(1, len(E))) + r")\Z"
FUZZ = Fuzz(
    markers=(E,), structure=(re.escape(S), re.escape(E), CUT_E, r"\[", r"\]", ","), wrap=(S + "[", "]" + E)
)
