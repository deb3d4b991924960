"""Speculative decoding's settings (issue 31): n-gram drafting and a draft model, global and per
model, saved and read back; a file that cannot be a draft model said in words."""

from __future__ import annotations

import json
import os

import pytest

from app.storage.settings import (
    ModelOverride,
    Settings,
    draft_model_problem,
    effective_settings,
    load_settings,
    model_key,
    save_settings,
)


def test_drafting_is_on_and_no_draft_model_by_default_and_a_file_without_them_reads_so(tmp_path):
    eff = effective_settings(Settings(), str(tmp_path / "m.gguf"))
    assert (eff.ngram_draft, eff.draft_model) == (True, None)
    old = tmp_path / "settings.json"
    old.write_text(json.dumps({"schema_version": 2, "model": {"kv_type": "q8_0"}}))
    s, notice = load_settings(old)
    assert notice is None and (s.model.ngram_draft, s.model.draft_model, s.model.kv_type) == (
        True,
        None,
        "q8_0",
    )


def test_the_draft_settings_round_trip_and_a_models_override_wins(tmp_path):
    path, draft, other_draft = (str(tmp_path / n) for n in ("m.gguf", "d.gguf", "e.gguf"))
    s = Settings()
    s.model.ngram_draft = False
    s.model.draft_model = f"  {draft} "
    assert s.model.draft_model == draft  # kept trimmed
    s.set_override(model_key(path), ModelOverride(ngram_draft=True, draft_model=other_draft))
    s.set_override(model_key(str(tmp_path / "none.gguf")), ModelOverride(draft_model=""))
    file = save_settings(s, tmp_path / "settings.json")
    back, notice = load_settings(file)
    assert notice is None
    assert (back.model.ngram_draft, back.model.draft_model) == (False, draft)
    eff = effective_settings(back, path)
    assert (eff.ngram_draft, eff.draft_model) == (True, other_draft)
    assert {"ngram_draft", "draft_model"} <= set(eff.overridden)
    assert eff.to_dict()["draft_model"] == other_draft
    # "" in an override: no draft model for that model, whatever the global one
    assert effective_settings(back, str(tmp_path / "none.gguf")).draft_model is None
    # without an override: the global values
    assert (effective_settings(back, str(tmp_path / "x.gguf")).draft_model, eff.ngram_draft) == (draft, True)
    s.model.draft_model = "   "
    assert s.model.draft_model is None  # an empty path is no draft model


def test_what_cannot_be_a_draft_model_is_said_in_words(tmp_path, tiny_gguf):
    assert draft_model_problem(tiny_gguf()) is None
    assert "does not exist" in (draft_model_problem(tmp_path / "gone.gguf") or "")
    assert "not a .gguf file" in (draft_model_problem(tmp_path / "notes.txt") or "")
    (tmp_path / "dir.gguf").mkdir()
    assert "not a regular file" in (draft_model_problem(tmp_path / "dir.gguf") or "")
    (tmp_path / "fake.gguf").write_bytes(b"PK\x03\x04 not a model")
    assert "not a GGUF file" in (draft_model_problem(tmp_path / "fake.gguf") or "")
    assert "empty" in (draft_model_problem("") or "")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_a_pipe_named_like_a_model_is_refused_without_blocking(tmp_path):
    fifo = tmp_path / "pipe.gguf"
    os.mkfifo(fifo)
    assert "not a regular file" in (draft_model_problem(fifo) or "")


@pytest.mark.skipif(os.name != "posix" or os.geteuid() == 0, reason="permissions (root reads anything)")
def test_an_unreadable_file_is_refused(tmp_path, tiny_gguf):
    model = tiny_gguf()
    model.chmod(0)
    try:
        assert "cannot read" in (draft_model_problem(model) or "")
    finally:
        model.chmod(0o644)
