"""A scripted model that answers a tool result: Qwen 2.5's template (Hermes) whose generation
prompt after a tool message ends in the marker token ``<|tool_done|>``.

The scripted model (``tests.ui.scripted_gguf``) keys on the prompt's last token: the generation
prompt's ``\\n`` gives the call, and the call ends the turn. The marker lets the round after the
tool result say something else."""

from __future__ import annotations

from pathlib import Path

__all__ = ["MARKER", "tool_done_template", "write_tool_done_model"]

TEMPLATE = (
    Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates" / "Qwen-Qwen2.5-7B-Instruct.jinja"
)
MARKER = "<|tool_done|>"


def tool_done_template() -> str:
    """Qwen 2.5's template, its generation prompt after a tool message ending in :data:`MARKER`."""
    src = TEMPLATE.read_text(encoding="utf-8")
    template = src.replace(
        "{{- '<|im_start|>assistant\\n' }}",
        "{{- '<|im_start|>assistant\\n' }}{%- if messages[-1].role == 'tool' %}{{- '"
        + MARKER
        + "' }}{%- endif %}",
    )
    assert template != src
    return template


def write_tool_done_model(path: Path, call: str, answer: str, *, name: str | None = None) -> Path:
    """A GGUF at ``path`` whose first reply is ``call`` (one token) and whose reply after a tool
    result is ``answer``."""
    from tests.ui.scripted_gguf import write_scripted_gguf

    extra = {} if name is None else {"name": name}
    return write_scripted_gguf(
        path,
        chat_template=tool_done_template(),
        control_tokens=["<|im_start|>", "<|im_end|>", "<|endoftext|>"],
        user_tokens=[call, MARKER, answer],
        eos="<|im_end|>",
        script={"\n": call, call: "<|im_end|>", MARKER: answer, answer: "<|im_end|>"},
        default_next="\n",
        **extra,
    )
