"""Jan's models used where they are (``app.engine.models.jan_store``) over real files: found in
Jan's data folder (``llamacpp/models/<id>/``), named by their ids, each GGUF (and a vision
model's projector) linked under that name as Ollama's are, nothing copied; listed by the library
as Jan's, never deleted here; a folder whose model is gone or no GGUF is passed over."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from app.engine.models.errors import NotDeletableError
from app.engine.models.jan_store import jan_models
from app.engine.models.library import Library
from app.engine.models.ollama_store import link_ollama_models, linked
from app.engine.models.tiny import write_tiny_gguf
from app.storage.jan import jan_data_folder
from tests.support.tiny_vision import write_tiny_projector

TEMPLATE = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"


def _jan_model(data: Path, model_id: str, yml: str | None = None, *, gguf: bool = True) -> Path:
    """A model as Jan keeps it: ``llamacpp/models/<id>/model.gguf`` and its ``model.yml``."""
    folder = data / "llamacpp" / "models" / model_id
    folder.mkdir(parents=True)
    if gguf:
        write_tiny_gguf(folder / "model.gguf", chat_template=TEMPLATE)
    if yml is None:
        yml = f"model_path: llamacpp/models/{model_id}/model.gguf\nname: {model_id}\nsize_bytes: 1\n"
    (folder / "model.yml").write_text(yml, encoding="utf-8")
    return folder


def test_jan_s_models_are_found_by_their_ids(tmp_path):
    data = tmp_path / "Jan" / "data"
    _jan_model(data, "qwen3-4b")
    seeing = _jan_model(data, "unsloth/seeing-2b")
    write_tiny_projector(seeing / "mmproj.gguf")
    (seeing / "model.yml").write_text(
        "model_path: 'llamacpp/models/unsloth/seeing-2b/model.gguf'\n"
        'mmproj_path: "llamacpp/models/unsloth/seeing-2b/mmproj.gguf"\n'
        "settings:\n  model_path: not this one\n",
        encoding="utf-8",
    )
    elsewhere = write_tiny_gguf(tmp_path / "Downloads" / "mine.gguf", chat_template=TEMPLATE)
    _jan_model(data, "mine", f"model_path: {elsewhere}\n", gguf=False)  # imported, kept where it was
    _jan_model(data, "gone", "model_path: llamacpp/models/gone/model.gguf\n", gguf=False)
    (_jan_model(data, "not-gguf", gguf=False) / "model.gguf").write_bytes(b"not a model")
    bare = data / "llamacpp" / "models" / "bare"
    bare.mkdir()
    write_tiny_gguf(bare / "model.gguf", chat_template=TEMPLATE)  # no model.yml: its own file
    found = jan_models(data)
    assert [(m.name, m.model, m.projector) for m in found] == [
        ("bare", bare / "model.gguf", None),
        ("mine", elsewhere, None),
        ("qwen3-4b", data / "llamacpp" / "models" / "qwen3-4b" / "model.gguf", None),
        ("unsloth/seeing-2b", seeing / "model.gguf", seeing / "mmproj.gguf"),
    ]
    assert jan_models(tmp_path / "nowhere") == []


def test_linked_jan_models_are_listed_as_jan_s_and_kept_in_jan(tmp_path):
    data = tmp_path / "data"
    seeing = _jan_model(data, "unsloth/seeing-2b")
    write_tiny_projector(seeing / "mmproj.gguf")
    _jan_model(data, "qwen3-4b")
    lib = Library(models_dir=tmp_path / "lib", manifest_path=tmp_path / "lib.json", hf_cache_dir=False)
    models = jan_models(data)
    done, failed = link_ollama_models(models, lib.links("jan"))
    assert failed == [] and [p.name for p in done] == ["qwen3-4b.gguf", "unsloth-seeing-2b.gguf"]
    assert all(linked(m, lib.links("jan")) for m in models)
    assert all(os.path.samefile(p, m.model) for p, m in zip(done, models, strict=True))  # by a link
    listed = {m.name: m for m in lib.scan()}
    assert sorted(listed) == ["qwen3-4b", "unsloth-seeing-2b"] and {m.source for m in listed.values()} == {
        "jan"
    }
    assert listed["unsloth-seeing-2b"].projector is not None and listed["qwen3-4b"].usable
    with pytest.raises(NotDeletableError, match="Jan's: delete it in Jan"):
        lib.delete(listed["qwen3-4b"], confirm_foreign=True)
    lib.unlink_linked(listed["unsloth-seeing-2b"])
    assert (seeing / "model.gguf").is_file() and (seeing / "mmproj.gguf").is_file()  # Jan keeps them
    assert [m.name for m in lib.scan()] == ["qwen3-4b"]


def test_jan_s_models_folder_is_found_as_its_chats_are(tmp_path, monkeypatch):
    monkeypatch.delenv("XDG_DATA_HOME")
    data = tmp_path / ".local" / "share" / "Jan" / "data"
    (data / "llamacpp" / "models").mkdir(parents=True)
    assert jan_data_folder(tmp_path, platform="linux") is None  # no chats there yet
    assert jan_data_folder(tmp_path, platform="linux", holding="llamacpp/models") == data
