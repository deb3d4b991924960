"""A tiny model that thinks unless its template's switch is off (issue 30's thinking control).

A real GGUF written by ``tests.ui.scripted_gguf`` with Qwen3's chat template: after the generation
prompt (``<|im_start|>assistant\\n``) it opens ``<think>`` and writes ``x`` until stopped; after a
closed block (``</think>\\n\\n``: what *off* renders, or what a spent budget writes) it answers
``A`` and ends its turn. So the output tells whether the choice reached the prompt: reasoning of
``x`` and no answer, or the answer ``A`` and no reasoning."""

from __future__ import annotations

from pathlib import Path

from tests.ui.scripted_gguf import write_scripted_gguf

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates"
QWEN3 = "Qwen-Qwen3-0.6B.jinja"
ANSWER = "A"
THOUGHT = "x"


def write_thinker(path: str | Path, name: str = "thinker") -> Path:
    """Write the thinker to ``path`` (a ``.gguf``): Qwen3's template, detected as Hermes with
    ``<think>`` reasoning and the ``enable_thinking`` switch."""
    return write_scripted_gguf(
        path,
        chat_template=(TEMPLATES / QWEN3).read_text(encoding="utf-8"),
        control_tokens=("<|im_start|>", "<|im_end|>", "<|endoftext|>"),
        user_tokens=["<think>", "</think>\n\n", ANSWER],
        eos="<|im_end|>",
        script={
            "\n": "<think>",
            "<think>": THOUGHT,
            THOUGHT: THOUGHT,
            "</think>\n\n": ANSWER,
            ANSWER: "<|im_end|>",
        },
        default_next="<|im_end|>",
        name=name,
    )


#: the screenshot thinker's words: a thought it repeats until its budget closes the block, and its answer
THOUGHTS = ("The user says hello.", " I should greet them back", " and offer help. ")
GREETING = "Hello! How can I help you today?"


def write_screenshot_thinker(path: str | Path) -> Path:
    """The ``thinking`` screenshot's model (``make screenshots``): Qwen3's template; it thinks in
    words (:data:`THOUGHTS`, over and over) until the budget closes the block, then greets."""
    a, b, c = THOUGHTS
    return write_scripted_gguf(
        path,
        chat_template=(TEMPLATES / QWEN3).read_text(encoding="utf-8"),
        control_tokens=("<|im_start|>", "<|im_end|>", "<|endoftext|>"),
        user_tokens=["<think>", "</think>\n\n", a, b, c, GREETING],
        eos="<|im_end|>",
        script={
            "\n": "<think>",
            "<think>": a,
            a: b,
            b: c,
            c: a,
            "</think>\n\n": GREETING,
            GREETING: "<|im_end|>",
        },
        default_next="<|im_end|>",
        name="Scripted thinker (test model)",
    )
