"""Apertus, Apriel, Nemotron v2, GigaChat, MiniCPM5, Hunyuan and Solar at scale: each parser stays
linear at 1 MB of mixed calls and text (argument values holding the family's own markers), fed
in small chunks, and streaming equals parsing; a reply that is one huge call stays linear too."""

from __future__ import annotations

import random

import pytest

from app.engine.formats import FORMATS, fold_events
from tests.engine.formats.harness import TOOLS

_HY = ":opensource"
# One call whose value holds the family's markers (as its wire can carry them), then some text.
_VALUES = {
    "apertus": "a <|tools_suffix|> ] <|inner_suffix|> b",
    "apriel": "a </tool_calls> [BEGIN FINAL RESPONSE] ] b",
    "nemotron-v2": "a </TOOLCALL> ] </think> b",
    "gigachat": "a <|message_sep|> <|function_call|> } b",
    "minicpm5": "a </function> </param> </think> b",
    "hunyuan": f"a </tool_calls{_HY}> </tool_call{_HY}> <arg_key{_HY}> b",
    "solar": "a <|calls|> <|tool_call:end|> <|end|> b",
}
FAMILIES = sorted(_VALUES)


def _chunk(family: str) -> str:
    fmt = FORMATS[family]
    call = fmt.example_call("set_port", {"blob": _VALUES[family] + " x" * 40, "port": "8080"})
    return call + " and some text < [ { in between\n"


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_cost_is_linear_at_one_megabyte(family):
    chunk = _chunk(family)
    text = chunk * (1_000_000 // len(chunk) + 1)  # whole calls: over 1 MB
    fmt = FORMATS[family]
    rnd = random.Random(11)
    s = fmt.stream(TOOLS)
    events, i = [], 0
    while i < len(text):
        k = rnd.randint(1, 16)
        events += s.feed(text[i : i + k])
        i += k
    events += s.finish()
    assert s.ops <= 40 * len(text), f"{family}: {s.ops} characters examined for {len(text)}"
    got = fold_events(events)
    assert got == fmt.parse(text, TOOLS)
    assert len(got.tool_calls) == len(text) // len(chunk)
    assert got.tool_calls[0].arguments["blob"].startswith(_VALUES[family])


@pytest.mark.parametrize("family", FAMILIES)
def test_one_huge_call_is_linear(family):
    fmt = FORMATS[family]
    text = fmt.example_call("set_port", {"blob": (_VALUES[family] + " ") * 5_000})
    s = fmt.stream(TOOLS)
    events = []
    for i in range(0, len(text), 3):
        events += s.feed(text[i : i + 3])
    events += s.finish()
    assert s.ops <= 40 * len(text), f"{family}: {s.ops} characters examined for {len(text)}"
    assert [c.name for c in fold_events(events).tool_calls] == ["set_port"]


def _readme_rows() -> dict[str, tuple[str, str]]:
    from pathlib import Path

    text = (Path(__file__).resolve().parents[3] / "README.md").read_text()
    section = text.split("## Supported tool-call families\n", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        if not line.startswith("| `"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").replace("\\|", "\x00").split("|")]
        family, models, code = (c.replace("\x00", "|") for c in cells)
        ticks = len(code) - len(code.lstrip("`"))
        code = code[ticks:-ticks]
        if code.startswith(" ") and code.endswith(" ") and code.strip():
            code = code[1:-1]
        rows[family.strip("`")] = (models, code.replace("⏎", "\n"))
    return rows


def test_readme_lists_every_family_with_its_models_and_what_it_writes():
    rows = _readme_rows()
    assert list(rows) == list(FORMATS)
    for family, (models, example) in rows.items():
        assert models, family
        assert example == FORMATS[family].example_call("get_weather", {"city": "Paris"}), family


# -- a whole tool conversation through the engine's renderer --------------------------------------

_TEMPLATES = {
    "Apertus-8B-Instruct.jinja": "apertus",
    "Apriel-1.6-15b-Thinker-fixed.jinja": "apriel",
    "unsloth-Apriel-1.5.jinja": "apriel",
    "NVIDIA-Nemotron-Nano-v2.jinja": "nemotron-v2",
    "GigaChat3-10B-A1.8B.jinja": "gigachat",
    "GigaChat3.1-10B-A1.8B.jinja": "gigachat",
    "openbmb-MiniCPM5-1B.jinja": "minicpm5",
    "tencent-Hy3.jinja": "hunyuan",
    "upstage-Solar-Open-100B.jinja": "solar",
}
_WEATHER = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "City name"},
                    "days": {"type": "integer", "description": "Number of days"},
                },
                "required": ["city"],
            },
        },
    }
]


@pytest.mark.parametrize("name", sorted(_TEMPLATES))
def test_a_whole_tool_conversation_renders_and_its_past_call_reads_back(name):
    """System, user, the call, its result, the answer and a follow-up question, rendered as the
    engine renders prompts: every part is in the prompt, and the family reads the past call in it."""
    from pathlib import Path

    from app.engine.messages import Message, ToolCall
    from app.engine.render import render_messages

    source = (Path(__file__).resolve().parents[2] / "fixtures" / "chat_templates" / name).read_text()
    messages = [
        Message("system", "Be brief."),
        Message("user", "Weather in Paris?"),
        Message(
            "assistant", "", tool_calls=[ToolCall("call00000", "get_weather", {"city": "Paris", "days": 2})]
        ),
        Message("tool", "sunny, 21 C", tool_call_id="call00000", name="get_weather"),
        Message("assistant", "It is sunny."),
        Message("user", "And tomorrow?"),
    ]
    rendered = render_messages(source, messages, tools=_WEATHER, bos_token="<s>", eos_token="</s>")
    text = rendered.text
    for piece in (
        "Be brief.",
        "Weather in Paris?",
        "sunny, 21 C",
        "It is sunny.",
        "And tomorrow?",
        "City name",
    ):
        assert piece in text, (name, piece)
    assert rendered.tools_sent
    assert text.index("sunny, 21 C") < text.index("It is sunny.") < text.index("And tomorrow?")
    reply = FORMATS[_TEMPLATES[name]].parse(text, _WEATHER, orphan_close=False)
    assert ("get_weather", {"city": "Paris", "days": 2}) in [
        (c.name, c.arguments) for c in reply.tool_calls
    ], name


def test_solar_replies_are_read_without_orphan_closes():
    """``<|end|>`` ends every Solar message: without ``<|think|>`` before it, it closes no reasoning,
    so the engine streams a plain Solar reply at once (and ``<|content|>`` text is never reasoning)."""
    from pathlib import Path

    source = (
        Path(__file__).resolve().parents[2] / "fixtures" / "chat_templates" / "upstage-Solar-Open-100B.jinja"
    ).read_text()
    fmt = FORMATS["solar"]
    assert fmt.expects_orphan_close(source, "<|begin|>assistant") is False
    reply = fmt.parse("<|content|>Hi there.<|end|>", TOOLS, orphan_close=False)
    assert (reply.content, reply.reasoning) == ("Hi there.", "")
