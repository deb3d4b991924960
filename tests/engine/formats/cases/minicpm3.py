"""MiniCPM3: Python calls in a ```` ```python ```` fence between ``<|tool_call_start|>`` and
``<|tool_call_end|>``, reasoning in ``<|thought_start|>...<|thought_end|>``."""

import re

from tests.engine.formats.harness import Case, Fuzz, close_tag_in_argument_cases

FAMILY = "minicpm3"

OPEN, CLOSE = "<|tool_call_start|>", "<|tool_call_end|>"
T_OPEN, T_CLOSE = "<|thought_start|>", "<|thought_end|>"
W = 'get_weather(city="Paris",days=3)'  # as the template writes a past call (JSON values)
S = "search(query='x', limit=10)"  # as OpenBMB's function-call code writes one (Python repr)
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})


def region(*lines: str, fence: str = "```python") -> str:
    body = "\n".join(lines)
    return f"{OPEN}\n{fence}\n{body}\n```\n{CLOSE}" if fence else f"{OPEN}\n{body}\n{CLOSE}"


ONE = region(W)

CASES = [
    Case("single", ONE, calls=[PW], ids=["call00000"]),
    Case("two-lines", region(W, S), calls=[PW, PS], ids=["call00000", "call00001"]),
    Case(
        "thought-call-answer",
        f"{T_OPEN}\nThe user wants the weather.\n{T_CLOSE}\n{ONE}\nLet me check.",
        reasoning="\nThe user wants the weather.\n",
        content="\n\nLet me check.",
        calls=[PW],
    ),
    Case("text-before", "Sure.\n" + ONE, content="Sure.\n", calls=[PW]),
    Case("fence-without-language", region(W, fence="```"), calls=[PW]),
    Case("no-fence", region(W, fence=""), calls=[PW]),
    Case("compact", f"{OPEN}```python\n{W}\n```{CLOSE}", calls=[PW]),
    Case(
        "python-and-json-literals",
        region(
            "search(query='q', tags=['a', 'b'], filters={\"year\": 2020}, score=None)",
            "get_weather(metric=true)",
        ),
        calls=[
            ("search", {"query": "q", "tags": ["a", "b"], "filters": {"year": 2020}, "score": None}),
            ("get_weather", {"metric": True}),
        ],
    ),
    Case(
        "closing-token-inside-a-string",
        region(f"set_port(blob='{CLOSE} and ``` here')"),
        calls=[("set_port", {"blob": f"{CLOSE} and ``` here"})],
    ),
    Case("no-arguments", region("get_time()"), calls=[("get_time", {})]),
    Case("close-implied-at-eos", f"{OPEN}\n```python\n{W}\n```\n", calls=[PW]),
    Case("close-implied-at-eos-no-fence", f"{OPEN}\n{W}", calls=[PW]),
    Case(
        "thought-only-answer",
        f"{T_OPEN}\nNo tool needed.\n{T_CLOSE}\nParis is in France.",
        reasoning="\nNo tool needed.\n",
        content="\nParis is in France.",
    ),
    # -- cut
    Case("cut-in-call", f"{OPEN}\n```python\nsearch(query='a", truncated=True, incomplete=["search"]),
    Case(
        "cut-before-close",
        f"{OPEN}\n```python\n{W}\n```\n<|tool_call",
        truncated=True,
        incomplete=["get_weather"],
    ),
    # -- text: anything but calls on lines of their own in the region
    Case("positional-argument", region("get_weather('Paris')"), content=region("get_weather('Paris')")),
    Case("two-on-one-line", region("get_time(); get_time()"), content=region("get_time(); get_time()")),
    Case("assignment", region("x = get_time()"), content=region("x = get_time()")),
    Case("a-list-is-lfm2-s", f"{OPEN}[get_time()]{CLOSE}", content=f"{OPEN}[get_time()]{CLOSE}"),
    Case(
        "a-json-list-is-openpangu-s",
        f'{OPEN}[{{"name": "get_time", "arguments": {{}}}}]{CLOSE}',
        content=f'{OPEN}[{{"name": "get_time", "arguments": {{}}}}]{CLOSE}',
    ),
    Case(
        "another-language",
        region("get_time()", fence="```json"),
        content=region("get_time()", fence="```json"),
    ),
    Case(
        "fence-left-open",
        f"{OPEN}\n```python\nget_time()\n{CLOSE}",
        content=f"{OPEN}\n```python\nget_time()\n{CLOSE}",
    ),
    Case("empty-region", f"{OPEN}\n```python\n```\n{CLOSE}", content=f"{OPEN}\n```python\n```\n{CLOSE}"),
    Case("unclosed-text-after", f"{OPEN}\n{W}\nand then", content=f"{OPEN}\n{W}\nand then"),
    Case("a-bare-call-is-text", W, content=W),
]

CASES += close_tag_in_argument_cases(
    (T_OPEN, T_CLOSE),
    region(f"set_port(blob='why {T_OPEN} and {T_CLOSE} here')"),
    ("set_port", {"blob": f"why {T_OPEN} and {T_CLOSE} here"}),
    OPEN,
)

FUZZ = Fuzz(
    markers=(CLOSE,),
    structure=(re.escape(OPEN), re.escape(CLOSE), r"```(?:python)?"),  # the fence is the region's
    wrap=(OPEN + "\n```python\n", "\n```\n" + CLOSE),
)

SETTING_WORDS = ("MiniCPM3",)
TINY_MODELS = [
    (
        "vllm-minicpm3.jinja",
        ["<|im_start|>", "<|im_end|>"],
        [OPEN, CLOSE, T_OPEN, T_CLOSE],
        None,
        "<|im_end|>",
    )
]
COST_VALUE = f"a {CLOSE} ``` ) ( b"  # (a block holds at most 200,000 characters)
