"""Fixtures the engine suites share."""

from __future__ import annotations

import pytest

from app.engine.llm import load_model
from tests.ui.scripted_gguf import CHATML, streaming_script, write_scripted_gguf


@pytest.fixture(scope="module")
def alphabet_model(tmp_path_factory):
    """A scripted ChatML GGUF loaded in this process (512 tokens of context): after the prompt it
    writes the alphabet from "a", so a reply of n tokens is the first n letters."""
    path = write_scripted_gguf(
        tmp_path_factory.mktemp("alphabet") / "abc.gguf",
        chat_template=CHATML,
        script=streaming_script(),
        default_next="a",
    )
    m = load_model(path, n_ctx=512, isolate=False)
    yield m
    m.close()
