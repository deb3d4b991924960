"""MiniMax, Seed-OSS, Command R7B, Command R+, Functionary v3.1/v3.2, FireFunction v2 and LFM2
against their official templates and at scale.

* each official template is detected as its family, renders a real call with tricky values that
  the family's parser reads back typed, and renders a whole tool conversation (system, call,
  tool result, follow-up);
* FireFunction v2's template takes the tools as its own ``functions`` variable: the renderer
  finds that mode and fills it;
* each family's parser stays linear at 1 MB of mixed calls and text, fed in small chunks;
* each family is a ``chat.tool_format`` choice, with a label naming its models, and
  ``python -m app inspect`` shows it for a tiny real GGUF built with the family's template.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import pytest

from app.engine.formats import FORMATS, detect_template, fold_events, tool_format_choices
from app.engine.formats.detect import _template_renderer, call_texts
from app.engine.messages import Message, ToolCall
from app.engine.render import render_messages, template_tools_mode
from tests.engine.formats.harness import TOOLS

REPO = Path(__file__).resolve().parents[3]
TEMPLATES = REPO / "tests" / "fixtures" / "chat_templates"
FAMILIES = json.loads((TEMPLATES / "families.json").read_text())["templates"]
OURS = (
    "minimax",
    "seed-oss",
    "command-r",
    "command-r-plus",
    "functionary-v3.1",
    "functionary-v3.2",
    "firefunction",
    "lfm2",
)
NAMES = sorted(n for n, info in FAMILIES.items() if info["family"] in OURS)
MODELS = {  # words the dropdown's label must hold
    "minimax": "MiniMax",
    "seed-oss": "Seed-OSS",
    "command-r": "Command R7B",
    "command-r-plus": "Command R+",
    "functionary-v3.1": "Functionary v3.1",
    "functionary-v3.2": "Functionary v3.2",
    "firefunction": "FireFunction",
    "lfm2": "LFM2",
}

LOOKUP = [
    {
        "type": "function",
        "function": {
            "name": "lookup",
            "description": "d",
            "parameters": {
                "type": "object",
                "properties": {  # described: Command R+'s template writes each description
                    "zip": {"type": "string", "description": "a"},
                    "limit": {"type": "integer", "description": "b"},
                    "exact": {"type": "boolean", "description": "c"},
                    "tags": {"type": "array", "items": {"type": "string"}, "description": "d"},
                    "where": {
                        "type": "object",
                        "additionalProperties": {"type": "integer"},
                        "description": "e",
                    },
                },
            },
        },
    }
]
LOOKUP_ARGS = {"zip": "02139", "limit": 10, "exact": False, "tags": ["a b", "c"], "where": {"year": 2020}}


def test_every_family_has_official_templates():
    assert {FAMILIES[n]["family"] for n in NAMES} == set(OURS)
    assert len(NAMES) == 12


@pytest.mark.parametrize("name", NAMES)
def test_the_official_template_is_detected_as_its_family(name):
    assert detect_template((TEMPLATES / name).read_text(), bos_token="<s>") == FAMILIES[name]["family"]


@pytest.mark.parametrize("name", NAMES)
def test_a_real_call_rendered_by_the_template_parses_back_typed(name):
    """Strings that look like numbers, a false boolean, a list with spaces and a nested object,
    written by the template as it writes calls, come back as exactly those typed values."""
    source = (TEMPLATES / name).read_text()
    fmt = FORMATS[FAMILIES[name]["family"]]
    texts = call_texts(_template_renderer(source, "<s>", ""), LOOKUP, "lookup", LOOKUP_ARGS)
    assert texts, name
    got = []
    for prompt, text in texts:
        reply = fmt.parse(text, LOOKUP, in_reasoning=fmt.opens_in_reasoning(prompt))
        got.append(([(c.name, c.arguments) for c in reply.tool_calls], reply.content.strip()))
    assert ([("lookup", LOOKUP_ARGS)], "") in got, (name, texts, got)


# Every property described: Command R+'s template writes each parameter's description.
CONV_TOOLS = [
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


def conversation() -> list[Message]:
    return [
        Message("system", "Be brief."),
        Message("user", "Weather in Paris?"),
        Message(
            "assistant", "", tool_calls=[ToolCall("call00000", "get_weather", {"city": "Paris", "days": 2})]
        ),
        Message("tool", "sunny, 21 C", tool_call_id="call00000", name="get_weather"),
        Message("assistant", "It is sunny."),
        Message("user", "And tomorrow?"),
    ]


@pytest.mark.parametrize("name", NAMES)
def test_the_template_renders_a_whole_tool_conversation(name):
    source = (TEMPLATES / name).read_text()
    rendered = render_messages(source, conversation(), tools=CONV_TOOLS, bos_token="<s>", eos_token="</s>")
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
    # The past call is in the prompt as the template writes calls, and the family reads it there.
    fmt = FORMATS[FAMILIES[name]["family"]]
    reply = fmt.parse(text, CONV_TOOLS, orphan_close=False)
    assert ("get_weather", {"city": "Paris", "days": 2}) in [
        (c.name, c.arguments) for c in reply.tool_calls
    ], name


def test_firefunction_takes_the_tools_as_its_functions_variable():
    source = (TEMPLATES / "fireworks-ai-llama-3-firefunction-v2.jinja").read_text()
    assert template_tools_mode(source) == "functions"
    rendered = render_messages(source, [Message("user", "hi")], tools=TOOLS)
    assert rendered.tools_mode == "functions" and rendered.tools_sent
    assert '"name": "set_port"' in rendered.text and "Today is " in rendered.text
    # A template that reads ``tools`` keeps the standard variable.
    assert template_tools_mode((TEMPLATES / "MiniMax-M2.jinja").read_text()) == "variable"


_CHUNKS = {
    "minimax": '<minimax:tool_call>\n<invoke name="set_port">\n<parameter name="blob">'
    + "x </minimax:tool_call> " * 40
    + "</parameter>\n</invoke>\n</minimax:tool_call> text <mini ",
    "seed-oss": "<seed:tool_call>\n<function=set_port>\n<parameter=blob>"
    + "y </seed:tool_call> " * 40
    + "</parameter>\n</function>\n</seed:tool_call> text <seed: ",
    "command-r": '<|START_ACTION|>[{"tool_name": "set_port", "parameters": {"blob": "'
    + "z <|END_ACTION|> " * 40
    + '"}}]<|END_ACTION|><|START_RESPONSE|>ok<|END_RESPONSE|> <|START_',
    "command-r-plus": 'Action: ```json\n[{"tool_name": "set_port", "parameters": {"blob": "'
    + "``` ] " * 60
    + '"}}]\n```\nAction word Act ',
    "functionary-v3.1": '<function=set_port>{"blob": "' + "a </function> " * 50 + '"}</function> text <func ',
    "functionary-v3.2": '>>>set_port\n{"blob": "' + "b >>>all\\n " * 50 + '"}>>>all\nsome text >> ',
    "firefunction": ' functools[{"name": "set_port", "arguments": {"blob": "'
    + "] functools[ " * 40
    + '"}}] text functo ',
    "lfm2": "<|tool_call_start|>[set_port(blob='"
    + "c <|tool_call_end|> ] " * 40
    + "')]<|tool_call_end|> x <|tool ",
}


@pytest.mark.slow
@pytest.mark.parametrize("family", OURS)
def test_cost_is_linear_at_one_megabyte(family):
    """1 MB of calls (values holding the family's own markers) and text, fed in chunks of 1 to 16
    characters: the characters examined stay within a constant factor, and streaming equals parse."""
    chunk = _CHUNKS[family]
    text = (chunk * (1_000_000 // len(chunk) + 1))[:1_000_000]
    fmt = FORMATS[family]
    rnd = random.Random(7)
    s = fmt.stream(TOOLS)
    events, i = [], 0
    while i < len(text):
        k = rnd.randint(1, 16)
        events += s.feed(text[i : i + k])
        i += k
    events += s.finish(truncated=True)
    assert s.ops <= 40 * len(text), f"{family}: {s.ops} characters examined for {len(text)}"
    got = fold_events(events)
    assert got == fmt.parse(text, TOOLS, truncated=True)
    assert len(got.tool_calls) >= len(text) // len(chunk) - 1


def test_each_family_is_a_tool_format_choice_naming_its_models():
    from app.cli import build_parser

    labels = dict(tool_format_choices())
    for family, words in MODELS.items():
        assert words in labels[family], (family, labels[family])
        args = build_parser().parse_args(["chat", "--model", "m.gguf", "--tool-format", family, "hi"])
        assert args.tool_format == family


# Each family's official template in a tiny real GGUF, its markers as special tokens where the
# model's vocabulary has them: (template, control tokens, user-defined tokens, bos, eos).
_LLAMA3 = [
    "<|begin_of_text|>",
    "<|start_header_id|>",
    "<|end_header_id|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|python_tag|>",
]
_COHERE = [
    "<BOS_TOKEN>",
    "<|START_OF_TURN_TOKEN|>",
    "<|END_OF_TURN_TOKEN|>",
    "<|USER_TOKEN|>",
    "<|CHATBOT_TOKEN|>",
    "<|SYSTEM_TOKEN|>",
]
GGUFS = {
    "minimax": (
        "MiniMax-M2.jinja",
        ["]~!b[", "]~b]", "[e~["],
        ["<minimax:tool_call>", "</minimax:tool_call>", "<think>", "</think>"],
        "]~!b[",
        "[e~[",
    ),
    "seed-oss": (
        "ByteDance-Seed-OSS.jinja",
        ["<seed:bos>", "<seed:eos>"],
        ["<seed:think>", "</seed:think>", "<seed:tool_call>", "</seed:tool_call>"],
        "<seed:bos>",
        "<seed:eos>",
    ),
    "command-r": (
        "CohereForAI-c4ai-command-r7b-12-2024-tool_use.jinja",
        [
            *_COHERE,
            "<|START_ACTION|>",
            "<|END_ACTION|>",
            "<|START_THINKING|>",
            "<|END_THINKING|>",
            "<|START_RESPONSE|>",
            "<|END_RESPONSE|>",
        ],
        [],
        "<BOS_TOKEN>",
        "<|END_OF_TURN_TOKEN|>",
    ),
    "command-r-plus": (
        "CohereForAI-c4ai-command-r-plus-tool_use.jinja",
        _COHERE,
        [],
        "<BOS_TOKEN>",
        "<|END_OF_TURN_TOKEN|>",
    ),
    "functionary-v3.1": (
        "meetkai-functionary-medium-v3.1.jinja",
        _LLAMA3,
        [],
        "<|begin_of_text|>",
        "<|eot_id|>",
    ),
    "functionary-v3.2": (
        "meetkai-functionary-medium-v3.2.jinja",
        _LLAMA3,
        [],
        "<|begin_of_text|>",
        "<|eot_id|>",
    ),
    "firefunction": (
        "fireworks-ai-llama-3-firefunction-v2.jinja",
        _LLAMA3,
        [],
        "<|begin_of_text|>",
        "<|eot_id|>",
    ),
    "lfm2": (
        "LFM2.5-8B-A1B.jinja",
        ["<|startoftext|>", "<|im_start|>", "<|im_end|>"],
        ["<|tool_call_start|>", "<|tool_call_end|>", "<think>", "</think>"],
        "<|startoftext|>",
        "<|im_end|>",
    ),
}


@pytest.mark.parametrize("family", OURS)
def test_inspect_shows_the_family_of_a_gguf_built_with_its_template(family, tiny_gguf):
    name, control, user, bos, eos = GGUFS[family]
    path = tiny_gguf(
        chat_template=(TEMPLATES / name).read_text(),
        control_tokens=control,
        user_tokens=user,
        bos=bos,
        eos=eos,
    )
    proc = subprocess.run(
        [sys.executable, "-m", "app", "inspect", "--json", str(path)],
        cwd=REPO,
        env=dict(os.environ, PYTHONPATH=str(REPO)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    info = json.loads(proc.stdout)
    assert info["tool_format"] == family and info["eos_token"] == eos
