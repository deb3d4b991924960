"""Hunyuan V4's unsuffixed spelling (``<tool_calls><tool_call>NAME<arg_key>...``) and the
reasoning openings of Hunyuan V4 and K2 Horizon.

The unsuffixed calls are GLM's ``<tool_call>`` elements inside a section, so GLM reads them too
and they cannot be cases of the cross-family matrix (``cases/hunyuan_v4.py``): every other check
of the case harness runs on them here."""

from __future__ import annotations

import pytest

from app.engine.formats import FORMATS
from tests.engine.formats.cases.hunyuan_v4 import PW, call, section
from tests.engine.formats.harness import Case, check_parse, check_splits, check_truncation

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


def test_the_generation_prompt_opens_reasoning_in_either_spelling():
    assert FMT.opens_in_reasoning("<｜hy_Assistant｜><think:6124c78e>")
    assert FMT.opens_in_reasoning("<｜hy_Assistant｜><think>\n")
    assert not FMT.opens_in_reasoning("<｜hy_Assistant｜>")


@pytest.mark.parametrize("tag", ["<ifm|think>", "<ifm|think_fast>", "<ifm|think_faster>"])
def test_k2_horizon_prompt_opens_reasoning_at_every_effort(tag):
    fmt = FORMATS["k2-horizon"]
    assert fmt.opens_in_reasoning("<|ifm|im_start|>assistant\n" + tag)
    reply = fmt.parse("plan</ifm|think>Hi", None, in_reasoning=True)
    assert (reply.reasoning, reply.content) == ("plan", "Hi")
    assert not fmt.opens_in_reasoning("<|ifm|im_start|>assistant\n")
