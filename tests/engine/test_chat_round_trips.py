"""The chat loop with MiniMax, Seed-OSS, Command R7B (Cohere2), Command R+, Functionary v3.1 and
v3.2, FireFunction v2 and LFM2, on the real llama.cpp path: a tiny GGUF carries the family's
official template and its markers as special tokens; a grammar makes the random model write a
call in the family's syntax; the loop detects the family, parses the call, runs a real tool,
renders its result through the template and runs round two."""

from __future__ import annotations

import pytest

from app.engine.chat import ChatSession
from app.engine.events import (
    DoneEvent,
    ReasoningEvent,
    TextEvent,
    ToolCallFinishedEvent,
    ToolCallStartedEvent,
)
from tests.engine.test_chat import TEMPLATES, Family, make_registry

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
    "<|START_ACTION|>",
    "<|END_ACTION|>",
    "<|START_THINKING|>",
    "<|END_THINKING|>",
    "<|START_RESPONSE|>",
    "<|END_RESPONSE|>",
]


def tok(marker: str) -> tuple[str, str]:
    return ("tok", marker)


FAMILIES = [
    Family(
        "minimax",
        "MiniMax-M2.jinja",
        ["]~!b[", "]~b]", "[e~["],
        ["<minimax:tool_call>", "</minimax:tool_call>", "<think>", "</think>"],
        None,
        "[e~[",
        call=[
            "I should add them.\n",
            tok("</think>"),
            "\n",
            tok("<minimax:tool_call>"),
            '\n<invoke name="add">\n<parameter name="a">2</parameter>\n<parameter name="b">3</parameter>\n'
            "</invoke>\n",
            tok("</minimax:tool_call>"),
        ],
        answer=["Done.\n", tok("</think>"), "\n\nThe sum is 5."],
        result_in_prompt="<response>5</response>",
        reasoning="I should add them.Done.",
    ),
    Family(
        "seed-oss",
        "ByteDance-Seed-OSS.jinja",
        ["<seed:bos>", "<seed:eos>"],
        ["<seed:think>", "</seed:think>", "<seed:tool_call>", "</seed:tool_call>"],
        "<seed:bos>",
        "<seed:eos>",
        call=[
            tok("<seed:think>"),
            "Add them.",
            tok("</seed:think>"),
            tok("<seed:tool_call>"),
            "\n<function=add>\n<parameter=a>2</parameter>\n<parameter=b>3</parameter>\n</function>\n",
            tok("</seed:tool_call>"),
        ],
        answer=["The sum is 5."],
        result_in_prompt="5",
        reasoning="Add them.",
    ),
    Family(
        "command-r",
        "Cohere2MoE.jinja",
        _COHERE,
        [],
        "<BOS_TOKEN>",
        "<|END_OF_TURN_TOKEN|>",
        call=[
            "I will add them.",
            tok("<|END_THINKING|>"),
            tok("<|START_ACTION|>"),
            '[{"tool_call_id": "0", "tool_name": "add", "parameters": {"a": 2, "b": 3}}]',
            tok("<|END_ACTION|>"),
        ],
        answer=[
            "Got it.",
            tok("<|END_THINKING|>"),
            tok("<|START_RESPONSE|>"),
            "The sum is 5.",
            tok("<|END_RESPONSE|>"),
        ],
        result_in_prompt="5",
        reasoning="I will add them.Got it.",
    ),
    Family(
        "command-r-plus",
        "CohereForAI-c4ai-command-r-plus-tool_use.jinja",
        _COHERE[:6],
        [],
        "<BOS_TOKEN>",
        "<|END_OF_TURN_TOKEN|>",
        call=['Action:\n```json\n[{"tool_name": "add", "parameters": {"a": 2, "b": "3"}}]\n```'],
        answer=["The sum is 5."],
        result_in_prompt="<results>\n",
    ),
    Family(
        "functionary-v3.1",
        "meetkai-functionary-medium-v3.1.jinja",
        _LLAMA3,
        [],
        "<|begin_of_text|>",
        "<|eot_id|>",
        call=['<function=add>{"a": 2, "b": 3}</function>'],
        answer=["The sum is 5."],
        result_in_prompt="<|start_header_id|>ipython<|end_header_id|>\n\n5<|eot_id|>",
    ),
    Family(
        "functionary-v3.2",
        "meetkai-functionary-medium-v3.2.jinja",
        _LLAMA3,
        [],
        "<|begin_of_text|>",
        "<|eot_id|>",
        call=['add\n{"a": 2, "b": 3}'],
        answer=["all\nThe sum is 5."],
        result_in_prompt="<|start_header_id|>tool<|end_header_id|>\n\n5<|eot_id|>",
    ),
    Family(
        "firefunction",
        "fireworks-ai-llama-3-firefunction-v2.jinja",
        _LLAMA3,
        [],
        "<|begin_of_text|>",
        "<|eot_id|>",
        call=[' functools[{"name": "add", "arguments": {"a": 2, "b": 3}}]'],
        answer=["The sum is 5."],
        result_in_prompt="<|start_header_id|>tool<|end_header_id|>\n\n5<|eot_id|>",
    ),
    Family(
        "lfm2",
        "LFM2.5-8B-A1B.jinja",
        ["<|startoftext|>", "<|im_start|>", "<|im_end|>"],
        ["<|tool_call_start|>", "<|tool_call_end|>", "<think>", "</think>"],
        "<|startoftext|>",
        "<|im_end|>",
        call=[tok("<|tool_call_start|>"), "[add(a=2, b=3)]", tok("<|tool_call_end|>")],
        answer=["The sum is 5."],
        result_in_prompt="5",
    ),
]


@pytest.fixture
def family_model(tiny_gguf):
    from app.engine.llm import load_model

    loaded = []

    def make(fam: Family):
        path = tiny_gguf(
            chat_template=(TEMPLATES / fam.template).read_text(),
            control_tokens=fam.control,
            user_tokens=fam.user,
            bos=fam.bos,
            eos=fam.eos,
        )
        m = load_model(path, n_ctx=4096, n_threads=1)
        loaded.append(m)
        return m

    yield make
    for m in loaded:
        m.close()


@pytest.mark.parametrize("fam", FAMILIES, ids=lambda f: f.name)
def test_tool_call_round_trip(family_model, fam):
    model = family_model(fam)
    ran: list = []
    grammars = {1: fam.grammar(fam.call), 2: fam.grammar(fam.answer)}
    session = ChatSession(
        model,
        tool_format="auto",
        registry=make_registry(ran),
        grammar=lambda r: grammars.get(r),
        max_tokens=400,
    )
    assert session.detected_format == fam.name
    events = list(session.send("What is 2 + 3?"))

    started = [e for e in events if isinstance(e, ToolCallStartedEvent)]
    finished = [e for e in events if isinstance(e, ToolCallFinishedEvent)]
    # typed by the schema
    assert [(e.call.name, e.call.arguments) for e in started] == [("add", {"a": 2, "b": 3})]
    assert [(e.outcome.content, e.outcome.error) for e in finished] == [("5", None)]
    assert ran == [(2, 3)]
    assert "".join(e.text for e in events if isinstance(e, TextEvent)).strip() == "The sum is 5."
    assert "".join(e.text for e in events if isinstance(e, ReasoningEvent)).replace("\n", "") == fam.reasoning
    done = events[-1]
    assert isinstance(done, DoneEvent) and (done.finish_reason, done.rounds) == ("stop", 2)
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]
    assert session.messages[1].tool_calls[0].name == "add"
    assert fam.result_in_prompt in session.last_prompt.text
