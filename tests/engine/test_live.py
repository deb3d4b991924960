"""Live: the engine with the real models shipped on PyPI (marker ``live``)."""

from __future__ import annotations

import pytest

from app.engine.chat import ChatSession
from app.engine.events import DoneEvent, NoticeEvent, TextEvent
from app.engine.llm import load_model
from app.engine.models.metadata import read_metadata
from app.tools.builtins import register_builtin_tools
from app.tools.registry import ToolRegistry

pytestmark = pytest.mark.live


@pytest.fixture(scope="module")
def smollm2(smollm2_path):
    model = load_model(smollm2_path, n_ctx=1024, n_threads=1)
    yield model
    model.close()


def test_smollm2_answers_a_simple_question(smollm2):
    meta = smollm2.metadata
    assert meta.architecture == "llama" and meta.parameter_label == "135M"
    assert meta.chat_template and "<|im_start|>" in meta.chat_template
    registry = ToolRegistry()
    register_builtin_tools(registry)
    session = ChatSession(
        smollm2,
        registry=registry,
        system_prompt="Answer in one short sentence.",
        sampling={"temperature": 0.0},
        max_tokens=32,
    )
    assert session.detected_format is None  # ChatML without tool support
    assert session.tools is None
    events = list(session.send("What is the capital of France?"))
    notices = [e for e in events if isinstance(e, NoticeEvent)]
    assert [(n.code, n.setting) for n in notices] == [("no_tool_format", "chat.tool_format")]
    reply = "".join(e.text for e in events if isinstance(e, TextEvent))
    assert "Paris" in reply
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason in ("stop", "length")
    assert done.ttft_s is not None and done.generated_tokens > 0 and done.prompt_tokens > 0
    assert not session.last_prompt.tools_sent
    # a follow-up turn reuses the KV cache of the first
    events = list(session.send("And of Italy?"))
    assert session.messages[-1].role == "assistant"
    assert not [e for e in events if isinstance(e, NoticeEvent)]
    done = events[-1]
    assert done.prompt_tokens_evaluated < done.prompt_tokens


def test_gemma3_base_has_no_template_so_fallback_and_notice(gemma3_path):
    meta = read_metadata(gemma3_path)
    assert meta.architecture == "gemma3" and meta.chat_template is None
    model = load_model(gemma3_path, n_ctx=512, n_threads=1)
    try:
        assert model.template_is_fallback
        session = ChatSession(model, sampling={"temperature": 0.0, "seed": 1}, max_tokens=16)
        events = list(session.send("The capital of France is"))
        codes = [e.code for e in events if isinstance(e, NoticeEvent)]
        assert codes == ["no_chat_template", "no_tool_format"]
        assert session.last_prompt.template == "fallback"
        assert isinstance(events[-1], DoneEvent) and events[-1].finish_reason in ("stop", "length")
    finally:
        model.close()
