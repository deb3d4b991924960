"""HyperCLOVA X SEED Think 14B (``hyperclovax``): what its cases file cannot say. No published
template was found, so the family is chosen in Settings / ``--tool-format``; a template that
renders past calls as the ``assistant -> tool/function_call`` role is detected by its call. The
generation prompt picks where the reply starts (the role line left open, the reasoning role, the
answer role), and a held call opens where the model can write it."""

from __future__ import annotations

import json

import pytest

from app.engine.formats import FORMATS, detect_template
from app.engine.formats.hyperclovax import HEADER, SWITCH, THINK_CLOSE
from app.engine.templates import render_template
from tests.engine.formats.cases.hyperclovax import STAND_IN
from tests.engine.formats.harness import TOOLS

FMT = FORMATS["hyperclovax"]
USER = [{"role": "user", "content": "Hi"}]


def test_the_stand_in_is_detected_by_its_rendered_call():
    assert detect_template(STAND_IN) == "hyperclovax"
    assert detect_template(STAND_IN, eos_token="<|endofturn|>") == "hyperclovax"


def test_a_template_that_renders_no_call_is_not_detected():
    # The role named in the system text alone (no call rendered) decides nothing.
    no_call = STAND_IN.replace("{% if m.tool_calls %}", "{% if false %}")
    assert detect_template(no_call) is None


@pytest.mark.parametrize(
    ("variables", "in_reasoning"),
    [({}, False), ({"force_reasoning": True}, True), ({"skip_reasoning": True}, False)],
)
def test_the_prompt_says_whether_the_reply_starts_in_reasoning(variables, in_reasoning):
    prompt = render_template(STAND_IN, USER, add_generation_prompt=True, **variables)
    assert FMT.opens_in_reasoning(prompt) is in_reasoning
    # the string that closes the reasoning role ends any message: never an orphan close
    assert FMT.expects_orphan_close(STAND_IN, prompt) is False


def test_each_prompt_s_reply_reads_as_the_model_writes_it():
    call = json.dumps([FMT.list_item("get_time", {})])
    # model picks the role after "<|im_start|>assistant": reasoning, an answer, or a call
    got = FMT.parse("/think\nok" + THINK_CLOSE + "Hello", TOOLS, orphan_close=False)
    assert (got.reasoning, got.content) == ("ok", "Hello")
    got = FMT.parse(HEADER + call, TOOLS, orphan_close=False)
    assert [c.name for c in got.tool_calls] == ["get_time"] and got.content == ""
    # thinking forced: the reply starts inside the reasoning role
    got = FMT.parse("ok" + SWITCH + call, TOOLS, in_reasoning=True, orphan_close=False)
    assert got.reasoning == "ok" and [c.name for c in got.tool_calls] == ["get_time"]


def test_a_spent_budget_opens_the_answer_message():
    assert FMT.closing_text() == THINK_CLOSE + "\n\n"
    got = FMT.parse("a plan" + FMT.closing_text() + "Answer", TOOLS, in_reasoning=True)
    assert (got.reasoning, got.content.strip()) == ("a plan", "Answer")


def test_the_held_call_opens_the_reply(tiny_gguf):
    """``required`` holds the call right after the generation prompt, with no reasoning message
    first (it would end at ``<|im_end|>``, where llama.cpp stops), even after a prompt that opened
    the reasoning role: there the call ends the reasoning."""
    from app.engine.constraints import compile_constraint
    from app.engine.llm import load_model
    from tests.engine.test_constraints_families import TOOLS as HELD_TOOLS
    from tests.engine.test_constraints_families import sample

    path = tiny_gguf(control_tokens=["<s>", "</s>"], bos="<s>", eos="</s>", seed=7)
    model = load_model(path, n_ctx=1024)
    try:
        prompt = [model.metadata.bos_token_id or 0] + model.tokenize_text("Hi!", special=False)
        for in_reasoning in (False, True):
            req = compile_constraint(
                model,
                family="hyperclovax",
                tools=HELD_TOOLS,
                tool_choice="required",
                parallel_tool_calls=False,
                reasoning=True,
                in_reasoning=in_reasoning,
            )
            for seed in range(3):
                text = sample(model, req, prompt, seed, max_tokens=400)
                assert text.startswith(HEADER), text
                got = FMT.parse(text, HELD_TOOLS, in_reasoning=in_reasoning)
                assert len(got.tool_calls) == 1 and not got.content.strip(), text
                assert got.reasoning == "", text
    finally:
        model.close()
