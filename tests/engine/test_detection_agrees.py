"""One detection rule: the library (Models page), ``inspect`` and a loaded session name the same
tool-call family for every official template, each embedded in a real (tiny) GGUF."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from app.engine.models.tiny import write_tiny_gguf

TEMPLATES = Path(__file__).resolve().parents[1] / "fixtures" / "chat_templates"
NAMES = sorted(json.loads((TEMPLATES / "families.json").read_text())["templates"])
SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>"]


@pytest.mark.parametrize("name", NAMES)
def test_library_inspect_and_session_agree(tmp_path, name):
    from app.cli import main
    from app.engine.chat import ChatSession
    from app.engine.llm import load_model
    from app.engine.models._gguf import read_summary

    source = (TEMPLATES / name).read_text(encoding="utf-8")
    named = {"tool_use": source} if name.endswith("tool_use.jinja") else None
    path = write_tiny_gguf(
        tmp_path / "m.gguf",
        chat_template=source,
        named_templates=named,
        control_tokens=SPECIALS,
        bos=None,
        eos="<|im_end|>",
    )
    library = read_summary(path).tool_format
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["inspect", "--json", str(path)]) == 0
    inspected = json.loads(out.getvalue())["tool_format"]
    # in-process llama.cpp: detection is under test, not the engine process (77 models)
    model = load_model(path, n_ctx=512, n_threads=1, isolate=False)
    try:
        session = ChatSession(model).detected_format or "none"
    finally:
        model.close()
    assert library == inspected == session, (library, inspected, session)
