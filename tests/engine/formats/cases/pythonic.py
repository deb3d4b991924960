"""Pythonic (Llama 4): ``[f(a=1, b='x'), g()]``, optionally in ``<|python_start|>...<|python_end|>``."""

from tests.engine.formats.harness import Case, Fuzz

FAMILY = "pythonic"

W_TEXT = "[get_weather(city='Paris', days=3)]"
W = ("get_weather", {"city": "Paris", "days": 3})

CASES = [
    Case("single", W_TEXT, calls=[W], ids=["call00000"]),
    Case(
        "parallel",
        "[get_weather(city=\"Paris\", days=3), search(query='x', limit='10'), get_time()]",
        calls=[W, ("search", {"query": "x", "limit": 10}), ("get_time", {})],
        ids=["call00000", "call00001", "call00002"],
    ),
    Case(
        "leading-whitespace-and-text-after",
        "\n " + W_TEXT + "\nI asked for the weather.",
        content="\n \nI asked for the weather.",
        calls=[W],
    ),
    Case("python-tags", "<|python_start|>" + W_TEXT + "<|python_end|>", calls=[W]),
    Case(
        "python-tags-after-text",
        "Let me check. <|python_start|>" + W_TEXT + "<|python_end|> Done.",
        content="Let me check.  Done.",
        calls=[W],
    ),
    Case("python-tags-end-at-eos", "<|python_start|>[get_time()]", calls=[("get_time", {})]),
    # Cut at max_tokens: calls written completely count (the list here is even closed), the cut
    # call and what follows are text byte for byte.
    Case("python-tags-cut", "<|python_start|>[get_time()]", truncated=True, calls=[("get_time", {})]),
    # The list is one unit: a list cut before its close is no call, it is one incomplete call
    # (named after the call being written, where its name was complete).
    Case("cut-second-call", "[search(query='x'), get_ti", truncated=True, incomplete=[None]),
    Case(
        "python-tags-cut-second-call",
        "Ok <|python_start|>[get_time(), search(query='x",
        truncated=True,
        content="Ok ",
        incomplete=["search"],
    ),
    Case("cut-after-comma", "[get_time(),", truncated=True, incomplete=[None]),
    Case("cut-first-call", "[get_weather(city='Par", truncated=True, incomplete=["get_weather"]),
    Case(
        "cut-after-bad-item", "[get_time(), 5, get_ti", truncated=True, incomplete=[None], stable_prefix=False
    ),
    Case("empty-arguments", "[get_time()]", calls=[("get_time", {})]),
    Case(
        "literals",
        "[search(query='q', filters={'year': '2020'}, tags=['a', \"b\"], score=None, mode=7)]",
        calls=[
            (
                "search",
                {"query": "q", "filters": {"year": 2020}, "tags": ["a", "b"], "score": None, "mode": 7},
            )
        ],
    ),
    Case(
        "bools-tuples-negative",
        "[lookup(flag=True, off=false, pair=(1, -2.5), none=null)]",
        calls=[("lookup", {"flag": True, "off": False, "pair": [1, -2.5], "none": None})],
    ),
    Case(
        "numbers-stay-strings",
        "[set_port(port='8080', zip='02139', flag='true')]",
        calls=[("set_port", {"port": "8080", "zip": "02139", "flag": "true"})],
    ),
    Case(
        "escapes-unicode",
        "[get_weather(city='Zürich \\'q\\' \"d\" \\n 東京 🌧')]",
        calls=[("get_weather", {"city": "Zürich 'q' \"d\" \n 東京 🌧"})],
    ),
    Case("triple-quoted", "[set_port(blob='''a ] b ) c''')]", calls=[("set_port", {"blob": "a ] b ) c"})]),
    Case(
        "marker-inside-string",
        "[set_port(blob='x <|python_end|> ] <|python_start|> [')]",
        calls=[("set_port", {"blob": "x <|python_end|> ] <|python_start|> ["})],
    ),
    Case("dotted-name", "[tools.search(query='x')]", calls=[("tools.search", {"query": "x"})]),
    Case("positional-is-text", "[get_weather('Paris')]", content="[get_weather('Paris')]"),
    Case(
        "eval-is-never-done",
        "[get_weather(city=__import__('os').getcwd())]",
        content="[get_weather(city=__import__('os').getcwd())]",
    ),
    Case("expression-is-text", "[get_weather(city='a' + 'b')]", content="[get_weather(city='a' + 'b')]"),
    Case("plain-list-is-text", "[1, 2, 3] are numbers.", content="[1, 2, 3] are numbers."),
    Case(
        "markdown-link-is-text",
        "[see the docs](https://example.com)",
        content="[see the docs](https://example.com)",
    ),
    Case("list-mid-text-is-text", "Call " + W_TEXT + " later.", content="Call " + W_TEXT + " later."),
    Case("unclosed-list", "[get_weather(city='Paris'", content="[get_weather(city='Paris'"),
    Case("duplicate-keyword", "[get_time(a=1, a=2)]", content="[get_time(a=1, a=2)]"),
    Case("plain-text", "Hello! How can I help?", content="Hello! How can I help?"),
]


def _fuzz_reply(fmt, calls, texts, reasoning, rnd):
    """The list opens the reply (bare or in python tags), or stands in python tags after text."""
    if not calls:
        return texts[0], texts[0], ""
    listing = "[" + ", ".join(fmt.example_call(n, a)[1:-1] for n, a in calls) + "]"
    if rnd.random() < 0.5:
        lead = rnd.choice(["", " ", "\n"])
        wrapped = f"<|python_start|>{listing}<|python_end|>" if rnd.random() < 0.5 else listing
        return lead + wrapped + texts[1], lead + texts[1], ""
    return texts[0] + "<|python_start|>" + listing + "<|python_end|>" + texts[1], texts[0] + texts[1], ""


FUZZ = Fuzz(
    markers=("<|python_start|>", "<|python_end|>"),
    reply=_fuzz_reply,
    wrap=("[", "]"),
    structure=(r"<\|python_start\|>", r"<\|python_end\|>", r"\[", r"\]", ","),
)
