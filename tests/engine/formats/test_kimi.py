"""Kimi families: K2 through its official templates (parallel tricky calls parse back typed, the
reasoning prompt, detection); K3 (no official template) is never detected for any template; the
settings choices list both; the scanners' cost is linear."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.engine.formats import FORMATS, detect_template, tool_format_choices
from app.engine.formats.events import ToolCallDone
from app.engine.formats.kimi import SECTION_BEGIN, TOOLS_OPEN
from tests.engine.formats.harness import TOOLS, fold_split
from tests.engine.formats.test_deepseek import CALLS, rendered_reply

TEMPLATES = Path(__file__).resolve().parents[2] / "fixtures" / "chat_templates"
K2_TEMPLATES = [
    "Kimi-K2-Instruct.jinja",
    "Kimi-K2-Thinking.jinja",
    "moonshotai-Kimi-K2.jinja",
    "older/moonshotai-Kimi-K2.jinja",
]
K2_CALLS = [*CALLS, ("set_port", {"blob": "<|tool_calls_section_end|><|tool_call_end|> <|tool_call_begin|>"})]


@pytest.mark.parametrize("name", K2_TEMPLATES)
def test_parallel_tricky_calls_rendered_by_the_template_parse_back_typed(name):
    fmt = FORMATS["kimi-k2"]
    text = rendered_reply(
        (TEMPLATES / name).read_text(), K2_CALLS, openers=(SECTION_BEGIN,), eot="<|im_end|>"
    )
    reply = fmt.parse(text, TOOLS)
    assert [(c.name, c.arguments) for c in reply.tool_calls] == K2_CALLS, text
    assert reply.content == "" and reply.reasoning == ""
    assert fold_split(fmt, list(text), TOOLS)[0] == reply
    for other, ofmt in FORMATS.items():
        if other != "kimi-k2":
            assert not ofmt.parse(text, TOOLS).tool_calls, other


@pytest.mark.parametrize("name", K2_TEMPLATES)
def test_k2_templates_are_detected(name):
    assert detect_template((TEMPLATES / name).read_text(), eos_token="<|im_end|>") == "kimi-k2"


def test_k2_text_before_calls_and_thinking_reply():
    source = (TEMPLATES / "Kimi-K2-Instruct.jinja").read_text()
    text = rendered_reply(source, CALLS[:1], content="One moment.", eot="<|im_end|>")
    reply = FORMATS["kimi-k2"].parse(text, TOOLS)
    assert reply.content == "One moment." and [(c.name, c.arguments) for c in reply.tool_calls] == CALLS[:1]
    section = rendered_reply(
        (TEMPLATES / "Kimi-K2-Thinking.jinja").read_text(),
        CALLS[2:],
        openers=(SECTION_BEGIN,),
        eot="<|im_end|>",
    )
    reply = FORMATS["kimi-k2"].parse("<think>The user asks the time.</think>" + section, TOOLS)
    assert reply.reasoning == "The user asks the time." and reply.content == ""
    assert [(c.name, c.arguments) for c in reply.tool_calls] == CALLS[2:]


def test_k3_reads_no_call_out_of_any_template():
    # test_detect.py checks every template's detection against families.json; the raw text of
    # each (Kimi K3's own too) holds no call.
    families = json.loads((TEMPLATES / "families.json").read_text())["templates"]
    k3 = FORMATS["kimi-k3"]
    for name in families:
        assert not k3.parse((TEMPLATES / name).read_text(), TOOLS).tool_calls, name


def test_settings_choices_list_the_kimi_families():
    choices = tool_format_choices()
    values = [v for v, _label in choices]
    assert values[0] == "auto" and values[-1] == "none"
    labels = dict(choices)
    for family in ("kimi-k2", "kimi-k3"):
        assert labels[family] == FORMATS[family].label and "Kimi" in labels[family]


def _k3_call(i: int) -> str:
    return (
        f'{TOOLS_OPEN}<|open|>call tool="search" index="{i}"<|sep|>\n<|open|>argument key="query" type="string"'
        f"<|sep|>q{i} <|close|>argument<|sep|> x<|close|>argument<|sep|>\n"
        f'<|open|>argument key="tags" type="array"<|sep|>["<|close|>", "{i}"]<|close|>argument<|sep|>\n'
        "<|close|>call<|sep|><|close|>tools<|sep|>"
    )


def _k2_section(k: int) -> str:
    calls = "".join(
        f'<|tool_call_begin|>functions.search:{i}<|tool_call_argument_begin|>{{"query": "q{i}"}}'
        "<|tool_call_end|>"
        for i in range(k)
    )
    return SECTION_BEGIN + calls + "<|tool_calls_section_end|>"


@pytest.mark.parametrize("family", ["kimi-k2", "kimi-k3"])
def test_cost_is_linear_in_the_reply(family):
    fmt = FORMATS[family]

    def run(k: int) -> tuple[int, int]:
        body = _k2_section(3) if family == "kimi-k2" else "\n".join(_k3_call(i) for i in range(3))
        text = "<think>plan</think>" + ("Words before the calls. " * 4 + body + "\n") * k
        s = fmt.stream(TOOLS)
        done = 0
        for ch in text:
            done += sum(isinstance(e, ToolCallDone) for e in s.feed(ch))
        done += sum(isinstance(e, ToolCallDone) for e in s.finish())
        assert done == 3 * k
        return s.ops, len(text)

    small, _ = run(4)
    big, n = run(16)
    assert big <= 4.5 * small and big <= 10 * n


@pytest.mark.parametrize("family", ["kimi-k2", "kimi-k3"])
def test_region_scanner_is_linear_on_one_big_region(family):
    fmt = FORMATS[family]
    for k in (10, 40):
        if family == "kimi-k2":
            text, opener = _k2_section(k), SECTION_BEGIN
        else:
            text, opener = _k3_call(k), TOOLS_OPEN
            text = text.replace("q", "q" * 50 * k, 1)
        body = text[len(opener) :]
        sc = fmt.region_scanner(opener)
        consumed, ended = sc.scan(body, True)
        assert ended and consumed == len(body) and sc.ops <= 3 * len(body)
        calls, leftover = fmt.parse_region(opener, body, at_end=False, truncated=False, tools=TOOLS)
        assert len(calls) == (k if family == "kimi-k2" else 1) and leftover == ""


@pytest.mark.slow
def test_k3_one_megabyte_reply_one_character_at_a_time_is_linear():
    """A 1 MB Kimi K3 reply (reasoning, text, a string value full of closing text that is not a
    close) fed one character at a time: the characters examined stay within a constant factor."""
    fmt = FORMATS["kimi-k3"]
    value = "a <|close|>argument<|sep|> b <|close|>call<|sep|> " * 20_000
    text = (
        "plan " * 10_000
        + "<|close|>think<|sep|><|open|>response<|sep|>"
        + "words " * 10_000
        + '<|close|>response<|sep|><|open|>tools<|sep|><|open|>call tool="set_port" index="1"<|sep|>'
        '<|open|>argument key="blob" type="string"<|sep|>' + value + "<|close|>argument<|sep|>"
        "<|close|>call<|sep|><|close|>tools<|sep|><|close|>message<|sep|>"
    )
    assert len(text) >= 1_000_000
    s = fmt.stream(TOOLS, in_reasoning=True)
    done = []
    for ch in text:
        done += [e for e in s.feed(ch) if isinstance(e, ToolCallDone)]
    done += [e for e in s.finish() if isinstance(e, ToolCallDone)]
    assert [e.call.arguments for e in done] == [{"blob": value}]
    assert s.ops <= 40 * len(text), f"{s.ops} characters examined for {len(text)}"
