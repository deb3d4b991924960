"""HyperCLOVA X SEED Think 14B: calls are a message of the role ``assistant -> tool/function_call``
holding a JSON list (``parameters`` read for ``arguments``); reasoning is the role
``assistant/think``. No published template: the tiny model's template is a stand-in
(``STAND_IN``) written from the model card's prompt layout."""

import re

from app.engine.formats.hyperclovax import (
    CALL_ROLE,
    END,
    HEADER,
    SWITCH,
    THINK_CLOSE,
    THINK_OPEN,
    THINKING_ROLE,
)
from tests.engine.formats.harness import Case, Fuzz
from tests.engine.formats.harness import text_case as text

FAMILY = "hyperclovax"

W = '{"name": "get_weather", "arguments": {"city": "Paris", "days": 3}}'
S = '{"name": "search", "arguments": {"query": "x", "limit": "10"}}'
PW = ("get_weather", {"city": "Paris", "days": 3})
PS = ("search", {"query": "x", "limit": 10})
ONE = HEADER + "[" + W + "]" + END  # a call right after the generation prompt's "<|im_start|>assistant"
AFTER_TEXT = SWITCH + "[" + W + "]" + END  # a call message after a text message


CASES = [
    # -- calls as the model writes them
    Case("call-first", ONE, calls=[PW], ids=["call00000"]),
    # llama.cpp ends generation at <|im_end|> (an end-of-generation token): the reply stops at "]"
    Case("call-first-end-implied", HEADER + "[" + W + "]", calls=[PW]),
    Case("call-first-end-implied-newline", HEADER + "[" + W + "]\n", calls=[PW]),
    Case("text-then-call", "Let me check." + AFTER_TEXT, content="Let me check.", calls=[PW]),
    Case(
        "text-then-call-end-implied",
        "\nLet me check." + SWITCH + "[" + W + "]",
        content="\nLet me check.",
        calls=[PW],
    ),
    Case("text-after-call", ONE + "\nDone.", content="\nDone.", calls=[PW]),
    # the header is read wherever it stands (as vLLM reads it), not only after a role switch
    Case("header-after-text", "Sure." + ONE, content="Sure.", calls=[PW]),
    Case("answer-only", "\nThe weather is fine.", content="\nThe weather is fine."),
    Case("answer-only-no-orphan", "\nIt is sunny.", content="\nIt is sunny.", orphan_close=False),
    Case(
        "parallel-in-one-list",
        HEADER + "[" + W + ", " + S + "]" + END,
        calls=[PW, PS],
        ids=["call00000", "call00001"],
    ),
    Case(
        "two-call-messages",
        ONE + "\n" + CALL_ROLE + "[" + S + "]" + END,
        content="\n",
        calls=[PW, PS],
    ),
    Case("spaced-list", HEADER + "[\n  " + W + "\n]" + END, calls=[PW]),
    Case(
        "parameters-key",
        HEADER + '[{"name": "get_weather", "parameters": {"city": "Paris", "days": 3}}]' + END,
        calls=[PW],
    ),
    Case(
        "mixed-keys-in-one-list",
        HEADER + '[{"name": "get_time", "parameters": {}}, ' + S + "]" + END,
        calls=[("get_time", {}), PS],
    ),
    Case(
        "arguments-as-json-string",
        HEADER + '[{"name": "get_weather", "arguments": "{\\"city\\": \\"Rome\\"}"}]' + END,
        calls=[("get_weather", {"city": "Rome"})],
    ),
    Case("no-arguments", HEADER + '[{"name": "get_time", "arguments": {}}]' + END, calls=[("get_time", {})]),
    Case(
        "unknown-tool-read-as-written",
        HEADER + '[{"name": "other_tool", "arguments": {"n": 5}}]' + END,
        calls=[("other_tool", {"n": 5})],
    ),
    Case(
        "typed-by-schema",
        HEADER + '[{"name": "search", "arguments": {"query": "q", "limit": "7", "score": "null"}}]' + END,
        calls=[("search", {"query": "q", "limit": 7, "score": None})],
    ),
    Case(
        "string-props-keep-text",
        HEADER + '[{"name": "set_port", "arguments": {"port": "8080", "zip": "02139"}}]' + END,
        calls=[("set_port", {"port": "8080", "zip": "02139"})],
    ),
    Case(
        "markers-inside-json-string",
        HEADER + '[{"name": "set_port", "arguments": {"blob": "a <|im_end|>\\n<|im_start|>assistant -> '
        'tool/function_call\\n[ ] /think\\n b"}}]' + END,
        calls=[
            (
                "set_port",
                {"blob": "a <|im_end|>\n<|im_start|>assistant -> tool/function_call\n[ ] /think\n b"},
            )
        ],
    ),
    Case(
        "raw-markers-inside-json-string",
        "Sure." + SWITCH + '[{"name": "set_port", "arguments": {"blob": "x <|im_end|> y ]"}}]' + END,
        content="Sure.",
        calls=[("set_port", {"blob": "x <|im_end|> y ]"})],
    ),
    Case(
        "unicode",
        HEADER + '[{"name": "get_weather", "arguments": {"city": "서울 Zürich"}}]' + END,
        calls=[("get_weather", {"city": "서울 Zürich"})],
    ),
    # -- reasoning: the role assistant/think, closed by the next assistant message
    Case(
        "think-then-answer", THINK_OPEN + "plan" + THINK_CLOSE + "Answer", reasoning="plan", content="Answer"
    ),
    Case("think-then-call", THINK_OPEN + "plan" + AFTER_TEXT, reasoning="plan", calls=[PW]),
    Case(
        "think-then-call-end-implied",
        THINK_OPEN + "plan\n" + SWITCH + "[" + W + "]",
        reasoning="plan\n",
        calls=[PW],
    ),
    Case(
        "think-answer-call",
        THINK_OPEN + "plan" + THINK_CLOSE + "Checking." + AFTER_TEXT,
        reasoning="plan",
        content="Checking.",
        calls=[PW],
    ),
    Case(
        "prompt-opened-think-then-answer",
        "plan" + THINK_CLOSE + "Answer",
        in_reasoning=True,
        reasoning="plan",
        content="Answer",
    ),
    Case(
        "prompt-opened-think-then-call",
        "plan" + AFTER_TEXT,
        in_reasoning=True,
        reasoning="plan",
        calls=[PW],
    ),
    Case("prompt-opened-think-unclosed", "still thinking", in_reasoning=True, reasoning="still thinking"),
    Case(
        "call-shaped-text-in-reasoning",
        THINK_OPEN + "I could write [" + W + "] here" + THINK_CLOSE + "Answer",
        reasoning="I could write [" + W + "] here",
        content="Answer",
    ),
    # A call message the model goes on from inside its reasoning and then closes the reasoning
    # after: the shared rule makes the whole block reasoning (the model stops after a call).
    Case(
        "call-inside-closed-reasoning",
        THINK_OPEN + "maybe" + SWITCH + "[" + W + "]" + END + " no." + THINK_CLOSE + "Answer",
        reasoning="maybe" + SWITCH + "[" + W + "]" + END + " no.",
        content="Answer",
        stable_prefix=False,
    ),
    Case("empty-first-message", THINK_CLOSE + "Hi", content="Hi"),
    # Without reasoning opened, the same string only ends a text message: text. (With orphan
    # closes allowed, a caller that cannot tell whether the prompt opened the reasoning role
    # gets the text before it as reasoning; the family's prompts always tell.)
    text("text-message-then-text-no-orphan", "Hello" + THINK_CLOSE + "more", orphan_close=False),
    Case("text-message-then-text-orphan", "Hello" + THINK_CLOSE + "more", reasoning="Hello", content="more"),
    # -- cut replies: complete calls kept, the cut one is an incomplete call
    Case(
        "cut-in-second-element",
        HEADER + "[" + W + ', {"name": "search", "argu',
        truncated=True,
        calls=[PW],
        incomplete=["search"],
    ),
    Case("cut-in-close", HEADER + "[" + W + "]<|im_", truncated=True, calls=[PW]),
    Case("cut-in-first-element", HEADER + '[{"name": "get_wea', truncated=True, incomplete=[None]),
    Case("cut-after-header", HEADER, truncated=True, incomplete=[None]),
    Case(
        "cut-after-text",
        "Let me check." + SWITCH + '[{"name": "get_weather", "arguments": {"ci',
        truncated=True,
        content="Let me check.",
        incomplete=["get_weather"],
    ),
    Case("missing-close-truncated", HEADER + "[" + W + "]", truncated=True, calls=[PW]),
    # a block the token limit cut stays reasoning, a call begun in it included (never run)
    Case(
        "cut-in-call-after-reasoning",
        THINK_OPEN + "plan" + SWITCH + '[{"name": "get_wea',
        truncated=True,
        reasoning="plan" + SWITCH + '[{"name": "get_wea',
    ),
    Case("cut-in-reasoning", THINK_OPEN + "plan and", truncated=True, reasoning="plan and"),
    # -- not this family's shapes: the text, byte for byte
    text("bare-list", "[" + W + "]"),
    text("bare-list-after-answer-line", "\nHere: [" + W + "]"),
    text("bare-list-after-end", "Sure." + END + "\n[" + W + "]"),
    text("object-not-list", HEADER + W + END),
    text("card-input-object", HEADER + '{"name": "get_weather","input": {"location":"Seoul"}}' + END),
    text("both-keys", HEADER + '[{"name": "get_time", "arguments": {}, "parameters": {}}]' + END),
    text("extra-key", HEADER + '[{"name": "get_time", "arguments": {}, "id": "x"}]' + END),
    text("missing-arguments", HEADER + '[{"name": "get_time"}]' + END),
    text("input-key", HEADER + '[{"name": "get_time", "input": {}}]' + END),
    text("empty-name", HEADER + '[{"name": "", "arguments": {}}]' + END),
    text("empty-list", HEADER + "[]" + END),
    text("text-after-list", HEADER + "[" + W + "] more" + END, stable_prefix=False),
    text("text-after-list-at-eos", HEADER + "[" + W + "] Done.", stable_prefix=False),
    text("one-bad-element", HEADER + "[" + W + ', {"x": 1}]' + END, stable_prefix=False),
    text("unclosed-at-eos", HEADER + '[{"name": "get_time", "argu'),
    text("wrong-nesting", HEADER + '[{"name": "get_time", "arguments": {]}' + END),
    text("header-without-space", "-> tool/function_call\n[" + W + "]" + END),
    text("header-without-newline", " -> tool/function_call [" + W + "]" + END),
    text("abbreviated-role", '-> tool/get_weather\n{"city": "Seoul"}'),
    text("role-named-in-prose", "I answer via the assistant -> tool/function_call role, then respond."),
    text("think-without-newline", "/think plan" + THINK_CLOSE + "x", orphan_close=False),
    text("partial-markers", "a <|im_end|>\n<|im_st and  -> tool/funct are text"),
    text("plain-text", "Hello! How can I help?"),
]

FUZZ = Fuzz(
    markers=(END, THINKING_ROLE),
    structure=(
        re.escape(SWITCH),
        re.escape(CALL_ROLE),
        re.escape(HEADER),
        r"\[",
        r"\]",
        ",",
        re.escape(END),
        "(?:" + "|".join(re.escape(END[:k]) for k in range(1, len(END))) + r")\Z",
    ),
    wrap=(HEADER + "[", "]" + END),
)

# -- settings, tiny models (tests/engine/formats/test_added_families.py)

SETTING_WORDS = ("HyperCLOVAX-SEED-Think-14B", "NAVER")

# No published template was found. The stand-in keeps the prompt layout NAVER's model card
# documents: the tools as a JSON list in a tool_list block, then the system block (both written
# even when empty), a past answer as an assistant message, a past call as a message of the role
# "assistant -> tool/function_call" holding the JSON list, a tool result as a message of the role
# "tool/function_call"; the generation prompt "<|im_start|>assistant" (the model picks the role),
# "/think\n" after it with force_reasoning, "\n" with skip_reasoning. The card's stop tokens after
# a turn's <|im_end|> (<|stop|>, <|endofturn|>) are generation signals and left out.
STAND_IN = (
    "<|im_start|>tool_list\n{% if tools %}[{% for t in tools %}{% if not loop.first %}, {% endif %}"
    "{{ (t.function if t.function is defined else t) | tojson }}{% endfor %}]{% endif %}<|im_end|>\n"
    "<|im_start|>system\n{% for m in messages if m.role == 'system' %}{{ m.content }}{% endfor %}"
    "{% if tools %}{{ '\\n' }}- Use the tools of the tool_list through the assistant -> tool/function_call role."
    "{% endif %}<|im_end|>\n"
    "{% for m in messages %}{% if m.role == 'user' %}<|im_start|>user\n{{ m.content }}<|im_end|>\n"
    "{% elif m.role == 'tool' %}<|im_start|>tool/function_call\n{{ m.content }}<|im_end|>\n"
    "{% elif m.role == 'assistant' %}{% if m.content %}<|im_start|>assistant\n{{ m.content }}<|im_end|>\n"
    "{% endif %}{% if m.tool_calls %}<|im_start|>assistant -> tool/function_call\n[{% for c in m.tool_calls %}"
    '{% if not loop.first %}, {% endif %}{"name": "{{ c.function.name }}", "arguments": '
    "{{ c.function.arguments if c.function.arguments is string else (c.function.arguments | tojson) }}}"
    "{% endfor %}]<|im_end|>\n{% endif %}{% endif %}{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant{% if force_reasoning %}/think\n"
    "{% elif skip_reasoning %}{{ '\\n' }}{% endif %}{% endif %}"
)

TINY_MODELS = [
    (
        "stand-in:hyperclovax",
        ["<|im_start|>", "<|im_end|>", "<|endofturn|>", "<|stop|>"],
        [],
        None,
        "<|endofturn|>",
    )
]

# One call whose value holds the family's markers (test_added_families' cost cases).
COST_VALUE = "a <|im_end|> ] -> tool/function_call\n[ /think\n b"
