"""Hunyuan V4's unsuffixed spelling (``<tool_calls><tool_call>NAME<arg_key>...``), its reasoning
closed without an opening tag in another checkpoint's spelling, and the reasoning openings of
Hunyuan V4 and K2 Horizon.

The unsuffixed calls are GLM's ``<tool_call>`` elements inside a section, so GLM reads them too
and they cannot be cases of the cross-family matrix (``cases/hunyuan_v4.py``): every other check
of the case harness runs on them here."""

from __future__ import annotations

from dataclasses import replace

import pytest

from app.engine.formats import FORMATS
from tests.engine.formats.cases.hunyuan_v4 import PW, THINK, UNTHINK, call, section
from tests.engine.formats.harness import (
    Case,
    check_parse,
    check_splits,
    check_truncation,
    close_tag_in_argument_cases,
)

FMT = FORMATS["hunyuan-v4"]

PW_TEXT = call("get_weather", s="", city="Paris", days="3")
PS_TEXT = call("search", s="", query="x", limit="10")
PONE = section(PW_TEXT, s="")
PS = ("search", {"query": "x", "limit": 10})

PLAIN = [
    Case("plain-single", PONE, calls=[PW]),
    Case("plain-parallel", section(PW_TEXT, PS_TEXT, s=""), calls=[PW, PS]),
    Case("plain-text-around", "Checking.\n" + PONE + " ok", content="Checking.\n ok", calls=[PW]),
    Case(
        "plain-zero-args",
        "<tool_calls><tool_call>get_time</tool_call></tool_calls>",
        calls=[("get_time", {})],
    ),
    Case(
        "plain-markers-inside-value",
        section(call("set_port", s="", blob="</tool_calls> <tool_call>x"), s=""),
        calls=[("set_port", {"blob": "</tool_calls> <tool_call>x"})],
    ),
    Case("plain-think-block", "<think>plan</think>" + PONE, reasoning="plan", calls=[PW]),
    Case("plain-prefilled-think", "plan</think>" + PONE, in_reasoning=True, reasoning="plan", calls=[PW]),
    Case(
        "plain-and-coded-sections",
        PONE + "\n" + section(call("get_time"), s=":6124c78e"),
        content="\n",
        calls=[PW, ("get_time", {})],
    ),
    Case(
        "plain-cut-in-second-call",
        "<tool_calls>\n" + PW_TEXT + "<tool_call>search\n<arg_key>qu",
        truncated=True,
        content="\n",
        calls=[PW],
        incomplete=["search"],
    ),
    Case("plain-cut-in-section-close", "<tool_calls>\n" + PW_TEXT + "</tool_ca", truncated=True, calls=[PW]),
    Case(
        "plain-not-closed-at-eos",
        "<tool_calls>\n" + PW_TEXT,
        content="<tool_calls>\n" + PW_TEXT,
        stable_prefix=False,
    ),
    Case(
        "plain-section-coded-call",
        "<tool_calls>\n<tool_call:ab12>get_time</tool_call:ab12>\n</tool_calls>",
        content="<tool_calls>\n<tool_call:ab12>get_time</tool_call:ab12>\n</tool_calls>",
    ),
]


@pytest.mark.parametrize("case", PLAIN, ids=[c.id for c in PLAIN])
def test_plain_spelling(case):
    check_parse(FMT, case)
    check_splits(FMT, case)
    check_truncation(FMT, case)


# Reasoning closed without an opening tag in another checkpoint's spelling: the orphan-close
# checks of the shared suite know a family's reasoning by its one written spelling, so these run
# here (every check of the case harness).
OTHER_CODE = [
    Case("other-code-orphan-close", "plan</think:ab12>Hi", reasoning="plan", content="Hi"),
    Case(
        "other-code-orphan-close-no-orphan",
        "plan</think:ab12>Hi",
        content="plan</think:ab12>Hi",
        orphan_close=False,
    ),
    Case(
        "other-code-orphan-first-close-fixes-code",
        "plan</think:ab12>mid</think:cd34>end",
        reasoning="plan",
        content="mid</think:cd34>end",
    ),
    Case(
        "other-code-orphan-close-in-argument",
        "plan " + section(call("set_port", blob="a </think> b")) + " no." + THINK + UNTHINK,
        content="plan  no." + THINK + UNTHINK,
        calls=[("set_port", {"blob": "a </think> b"})],
    ),
    *(
        replace(c, id=c.id + "-other-code")
        for c in close_tag_in_argument_cases(
            ("<think:ab12>", "</think:ab12>"),
            section(call("set_port", s=":ab12", blob="why <think:ab12> and </think:ab12> here"), s=":ab12"),
            ("set_port", {"blob": "why <think:ab12> and </think:ab12> here"}),
            "<tool_calls:ab12>",
        )
    ),
]


@pytest.mark.parametrize("case", OTHER_CODE, ids=[c.id for c in OTHER_CODE])
def test_other_code_reasoning(case):
    check_parse(FMT, case)
    check_splits(FMT, case)
    check_truncation(FMT, case)


def test_think_tag_scan_is_linear():
    """Text that keeps looking like the start of a think tag is scanned once (plus one tag's
    length per feed): the stream's work grows linearly."""

    def ops(n):
        s = FMT.stream(None, in_reasoning=True)
        for _ in range(n):
            s.feed("x </think:ab")
            s.feed("1 y")
        s.finish()
        return s.ops

    small, big = ops(500), ops(5000)
    assert big < 12 * small


def test_the_generation_prompt_opens_reasoning_in_either_spelling():
    assert FMT.opens_in_reasoning("<｜hy_Assistant｜><think:6124c78e>")
    assert FMT.opens_in_reasoning("<｜hy_Assistant｜><think>\n")
    assert FMT.opens_in_reasoning("<｜hy_Assistant｜><think:ab12>")
    assert not FMT.opens_in_reasoning("<｜hy_Assistant｜>")
    assert not FMT.opens_in_reasoning("<｜hy_Assistant｜></think:ab12>")
    assert not FMT.opens_in_reasoning("<｜hy_Assistant｜><think:AB12>")


@pytest.mark.parametrize("tag", ["<ifm|think>", "<ifm|think_fast>", "<ifm|think_faster>"])
def test_k2_horizon_prompt_opens_reasoning_at_every_effort(tag):
    fmt = FORMATS["k2-horizon"]
    assert fmt.opens_in_reasoning("<|ifm|im_start|>assistant\n" + tag)
    reply = fmt.parse("plan</ifm|think>Hi", None, in_reasoning=True)
    assert (reply.reasoning, reply.content) == ("plan", "Hi")
    assert not fmt.opens_in_reasoning("<|ifm|im_start|>assistant\n")
