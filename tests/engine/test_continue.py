"""Continue (``ChatSession.continue_reply``) and prefills: a reply that goes on from text already
written began as that answer. On the real llama.cpp path with a scripted GGUF (its next token is
known from the current one) carrying Qwen3's template, whose model may close a reasoning block it
never opened: before, the parser held the whole continuation in case such a close came, and then
gave the cut text again with it (the reply read "Hello thereHello there friend.")."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.engine.chat import ChatSession, answer_after
from app.engine.events import DoneEvent
from app.engine.formats import FORMATS
from app.engine.llm import load_model
from tests.ui.scripted_gguf import write_scripted_gguf

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates"
WORDS = ["Hello", " there", " friend", "."]


@pytest.fixture(scope="module")
def qwen3(tmp_path_factory):
    path = write_scripted_gguf(
        tmp_path_factory.mktemp("continue") / "qwen3.gguf",
        chat_template=(TEMPLATES / "Qwen-Qwen3-0.6B.jinja").read_text(encoding="utf-8"),
        control_tokens=("<|im_start|>", "<|im_end|>", "<|endoftext|>"),
        user_tokens=WORDS,
        script={"\n": WORDS[0], **dict(zip(WORDS, WORDS[1:], strict=False)), WORDS[-1]: "<|im_end|>"},
        default_next="<|im_end|>",
        name="qwen3-words",
    )
    model = load_model(path, n_ctx=512, isolate=False)
    yield model
    model.close()


def _texts(events) -> list[str]:
    return [e.text for e in events if type(e).__name__ in ("TextDelta", "TextEvent")]


def test_continue_goes_on_from_the_cut_text_once_and_streams(qwen3):
    session = ChatSession(qwen3, max_tokens=2)
    first = list(session.send("Hi"))
    assert [e.finish_reason for e in first if isinstance(e, DoneEvent)] == ["length"]
    assert session.messages[-1].content == "Hello there"

    more = list(session.continue_reply(max_tokens=10))
    assert [e.finish_reason for e in more if isinstance(e, DoneEvent)] == ["stop"]
    # what follows the cut, as it is written (a token a piece: not held to the reply's end)
    assert _texts(more) == [" friend", "."]
    assert session.messages[-1].content == "Hello there friend." and not session.messages[-1].reasoning


def test_answer_after_closes_a_block_the_generation_prompt_opened():
    qwen = FORMATS["hermes"]
    opened = "<|im_start|>assistant\n<think>\n"
    assert answer_after(opened, qwen) == opened + qwen.closing_text()
    assert answer_after(opened, None) == opened + "</think>\n\n"  # no family: <think> blocks
    closed = "<|im_start|>assistant\n<think>\n\n</think>\n\n"
    assert answer_after(closed, qwen) == closed
    plain = "<|im_start|>assistant\n"
    assert answer_after(plain, qwen) == plain and answer_after(plain, FORMATS["llama3"]) == plain


@pytest.mark.parametrize("code", [":6124c78e", ":0a1b2c3d", ""])
def test_answer_after_closes_hunyuan_v4_s_block_in_the_prompt_s_spelling(code):
    """Hunyuan V4's checkpoints each write their own code in the think tags; the block the
    generation prompt opened is closed in that code, whichever it is."""
    hy = FORMATS["hunyuan-v4"]
    opened = f"<|hy_Assistant|><think{code}>"
    assert answer_after(opened, hy) == opened + f"</think{code}>\n\n"


def test_answer_after_keeps_a_prompts_images():
    from app.engine.vision import ImagePrompt

    prompt = ImagePrompt(["<|im_start|>user\n", b"\x89PNG", "<|im_end|>\n<|im_start|>assistant\n<think>\n"])
    closed = answer_after(prompt, FORMATS["hermes"])
    assert isinstance(closed, ImagePrompt) and closed.images == [b"\x89PNG"]
    assert str(closed).endswith("<think>\n" + FORMATS["hermes"].closing_text())
