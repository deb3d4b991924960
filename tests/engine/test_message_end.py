"""A family whose turn is several messages (``Format.message_end``: HyperCLOVA X SEED Think 14B's
reasoning, answer and call messages, each ended by ``<|im_end|>``) while llama.cpp ends
generation at that token (ChatML's end of generation). The reply goes on past a message's end
while the model begins its next message, in every place a model generates: in process, the
engine process, and the engine process's scheduler of parallel slots.

The model is a real GGUF the test writes (``tests.ui.scripted_gguf``: after token ``k`` it says
``script[k]``), whose turn ends with ``<|endofturn|>`` as the model card's does.
"""

from __future__ import annotations

import json

import pytest

from app.engine.chat import LocalReplies
from app.engine.events import DoneEvent, TextEvent
from app.engine.formats.events import ToolCallDone
from app.engine.llm import load_model
from app.engine.loop import CallIds, run_rounds
from app.engine.messages import Message
from tests.engine.formats.cases.hyperclovax import STAND_IN
from tests.ui.scripted_gguf import write_scripted_gguf

TEXT = "Let me check."
NEXT = "\n<|im_start|>assistant -> tool/function_call\n"  # one token: a bigram model writes it
THINK, ANSWER = "/think\n", "\n<|im_start|>assistant\n"  # the reasoning role's line; the answer's
CALL = json.dumps([{"name": "get_weather", "arguments": {"city": "Paris"}}])
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def _model(tmp_path, after_end: str, where: str, monkeypatch, script: dict[str, str] | None = None):
    # The generation prompt ends "<|im_start|>assistant": the reply's "\n" opens the answer.
    script = script or {
        "t": "\n",
        "\n": TEXT,
        TEXT: "<|im_end|>",
        "<|im_end|>": after_end,
        NEXT: CALL,
        CALL: "<|endofturn|>",
    }
    path = write_scripted_gguf(
        tmp_path / "hcx.gguf",
        chat_template=STAND_IN,
        script=script,
        default_next="<|endofturn|>",
        control_tokens=("<|im_start|>", "<|im_end|>", "<|endofturn|>"),
        user_tokens=[TEXT, NEXT, CALL, THINK, ANSWER],
        eos="<|endofturn|>",
    )
    monkeypatch.setenv("CALLISTO_ENGINE_PARALLEL", "2" if where == "scheduler" else "1")
    m = load_model(path, n_ctx=1024, n_threads=1, isolate=where != "in-process")
    end = m.tokenize_text("<|im_end|>")
    assert len(end) == 1 and m.is_eog(end[0])  # as llama.cpp counts ChatML's message end
    if where == "scheduler":
        assert m.backend.parallel == 2
    return m


WHERE = ["in-process", "engine-process", "scheduler"]


def _turn(m, family: str = "hyperclovax") -> tuple[list, Message]:
    replies = LocalReplies(
        m,
        lambda: [Message(role="user", content="Weather in Paris?")],
        family=family,
        tools=TOOLS,
        ids=CallIds(),
        max_tokens=40,
        sampling={"temperature": 0.0},
    )
    messages: list[Message] = []
    events = list(run_rounds(replies, messages, dispatcher=None, max_rounds=1))
    return events, messages[-1]


@pytest.mark.parametrize("where", WHERE)
def test_text_then_a_call_message_is_one_reply(where, tmp_path, monkeypatch):
    m = _model(tmp_path, NEXT, where, monkeypatch)
    try:
        events, reply = _turn(m)
        text = "".join(e.text for e in events if isinstance(e, TextEvent))
        calls = [e.call for e in events if isinstance(e, ToolCallDone)]
        assert text.strip() == TEXT, events
        assert [(c.name, dict(c.arguments)) for c in calls] == [("get_weather", {"city": "Paris"})]
        done = events[-1]
        assert isinstance(done, DoneEvent) and done.finish_reason == "stop", done
        assert reply.content.strip() == TEXT and reply.tool_calls == calls
    finally:
        m.close()


@pytest.mark.parametrize("where", WHERE)
@pytest.mark.parametrize("after_end", ["<|endofturn|>", "\n"], ids=["end-of-turn", "another-text"])
def test_a_message_end_not_followed_by_the_next_message_ends_the_reply(
    after_end, where, tmp_path, monkeypatch
):
    # "\n" then "Let me check." again: not the assistant's next message, so the turn ended at
    # "<|im_end|>" and nothing written after it is shown.
    m = _model(tmp_path, after_end, where, monkeypatch)
    try:
        events, reply = _turn(m)
        text = "".join(e.text for e in events if isinstance(e, TextEvent))
        assert text.strip() == TEXT and not any(isinstance(e, ToolCallDone) for e in events), events
        done = events[-1]
        assert isinstance(done, DoneEvent) and done.finish_reason == "stop", done
        assert reply.content.strip() == TEXT and not reply.tool_calls
        assert done.generated_tokens == 2  # "\n" and the text: what was dropped is not counted
    finally:
        m.close()


@pytest.mark.parametrize("where", ["in-process"])
def test_another_chatml_family_stops_at_the_message_end(where, tmp_path, monkeypatch):
    # Only a family whose turn is several messages goes on: Hermes' reply ends at <|im_end|>.
    m = _model(tmp_path, NEXT, where, monkeypatch)
    try:
        events, reply = _turn(m, "hermes")
        assert reply.content.strip() == TEXT and not reply.tool_calls, events
    finally:
        m.close()


@pytest.mark.parametrize("where", WHERE)
def test_reasoning_then_the_answer_message_is_one_reply(where, tmp_path, monkeypatch):
    script = {
        "t": THINK,
        THINK: "x",
        "x": "<|im_end|>",
        "<|im_end|>": ANSWER,
        ANSWER: TEXT,
        TEXT: "<|endofturn|>",
    }
    m = _model(tmp_path, ANSWER, where, monkeypatch, script)
    try:
        events, reply = _turn(m)
        assert reply.reasoning.strip() == "x" and reply.content.strip() == TEXT, events
        assert not reply.tool_calls
    finally:
        m.close()
