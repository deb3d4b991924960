"""The local library on real files: scanning, importing in place or by copy, metadata, safe deletes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from app.engine.models.errors import LibraryError, NotDeletableError
from app.engine.models.library import Library
from app.storage import paths
from tests.engine.models.conftest import TEMPLATE


@pytest.fixture
def lib(tmp_path):
    return Library(models_dir=tmp_path / "models", manifest_path=tmp_path / "lib.json", hf_cache_dir=False)


def test_default_library_uses_the_app_models_folder():
    lib = Library(hf_cache_dir=False)
    assert lib.models_dir == paths.models_dir()
    assert lib.scan() == []


def test_scan_shows_metadata_of_each_model(lib, tiny_gguf, tmp_path):
    src = tiny_gguf(chat_template=TEMPLATE, context_length=2048)
    (lib.models_dir / "m").mkdir(parents=True)
    dest = lib.models_dir / "m" / "Tiny-Q4_K_M.gguf"
    dest.write_bytes(src.read_bytes())
    (model,) = lib.scan()
    s = model.summary
    assert model.usable and model.source == "folder" and model.name == "Tiny-Q4_K_M"
    assert s.architecture == "llama" and s.context_length == 2048 and s.quantization == "F32"
    assert s.parameter_count and s.parameter_count > 100_000
    assert s.has_chat_template and s.file_size == dest.stat().st_size == model.size
    assert s.tool_format == "none"  # TEMPLATE is a plain ChatML template: no tool-call format
    est = model.estimate(4096, ram=(16 * 1024**3, 8 * 1024**3))
    assert est.kv_bytes == 2 * s.n_layers * 4096 * s.n_kv_heads * s.head_dim * 2
    assert est.fit == "fits"


def test_library_shows_the_detected_tool_format(lib, tiny_gguf):
    qwen = (
        Path(__file__).resolve().parents[2] / "fixtures" / "chat_templates" / "Qwen-Qwen3-0.6B.jinja"
    ).read_text()
    lib.models_dir.mkdir(parents=True, exist_ok=True)
    path = tiny_gguf(
        chat_template="{{ messages }}",
        named_templates={"tool_use": qwen},
        control_tokens=["<|im_start|>", "<|im_end|>"],
        bos=None,
        eos="<|im_end|>",
    )
    (lib.models_dir / "qwen.gguf").write_bytes(path.read_bytes())
    (model,) = lib.scan()
    assert model.summary.tool_format == "hermes"  # from tokenizer.chat_template.tool_use


def test_corrupt_and_partial_files(lib, tiny_gguf):
    lib.models_dir.mkdir(parents=True)
    (lib.models_dir / "broken.gguf").write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\xff" * 40)
    (lib.models_dir / "half.gguf.part").write_bytes(tiny_gguf().read_bytes()[:1000])
    (model,) = lib.scan()  # the .part is never a model
    assert model.name == "broken" and not model.usable and "Not a usable GGUF" in model.error


def test_user_folder_and_in_place_import_copy_nothing(lib, tiny_gguf, tmp_path):
    elsewhere = tmp_path / "my-models"
    elsewhere.mkdir()
    a = tiny_gguf()
    (elsewhere / "a.gguf").write_bytes(a.read_bytes())
    lib.add_folder(elsewhere)
    b = tiny_gguf(seed=5)
    model = lib.import_in_place(b)
    assert model.path == b.resolve() and model.source == "imported"
    names = {m.path.name: m.source for m in lib.scan()}
    assert names == {"a.gguf": "folder", b.name: "imported"}
    assert not lib.models_dir.exists() or list(lib.models_dir.rglob("*.gguf")) == []
    # a fresh Library reads the same manifest
    again = Library(models_dir=lib.models_dir, manifest_path=lib.manifest_path, hf_cache_dir=False)
    assert {m.path.name for m in again.scan()} == {"a.gguf", b.name}


def test_import_by_copy(lib, tiny_gguf):
    src = tiny_gguf()
    model = lib.import_copy(src)
    assert model.source == "copied" and model.path.parent == lib.models_dir / "imported"
    assert model.path.read_bytes() == src.read_bytes() and src.exists()


def test_import_rejects_bad_files_clearly(lib, tmp_path):
    junk = tmp_path / "junk.gguf"
    junk.write_bytes(b"not a model at all, just text" * 10)
    with pytest.raises(LibraryError, match="Cannot import junk.gguf"):
        lib.import_in_place(junk)
    with pytest.raises(LibraryError, match="does not exist"):
        lib.import_copy(tmp_path / "nope.gguf")
    with pytest.raises(LibraryError, match="not a folder"):
        lib.add_folder(tmp_path / "nope")
    assert lib.scan() == []


def test_delete_only_what_callisto_downloaded_unless_confirmed(lib, tiny_gguf):
    lib.models_dir.mkdir(parents=True)
    downloaded = lib.models_dir / "dl.gguf"
    downloaded.write_bytes(tiny_gguf().read_bytes())
    lib.register_download(downloaded, repo_id="acme/x", filename="dl.gguf")
    mine = tiny_gguf(seed=9)
    lib.import_in_place(mine)
    by_name = {m.path.name: m for m in lib.scan()}
    assert lib.delete(by_name["dl.gguf"]) == [downloaded] and not downloaded.exists()
    with pytest.raises(NotDeletableError, match="confirm"):
        lib.delete(by_name[mine.name])
    assert mine.exists()
    lib.delete(by_name[mine.name], confirm_foreign=True)
    assert not mine.exists() and lib.scan() == []


def test_corrupt_manifest_is_kept_aside_and_library_still_works(lib, tiny_gguf):
    lib.manifest_path.write_text("{not json")
    lib.models_dir.mkdir(parents=True)
    (lib.models_dir / "a.gguf").write_bytes(tiny_gguf().read_bytes())
    assert [m.path.name for m in lib.scan()] == ["a.gguf"]
    assert "unreadable" in (lib.notice() or "") or list(lib.manifest_path.parent.glob("lib.json.corrupt-*"))
    lib.add_folder(lib.models_dir)
    assert json.loads(lib.manifest_path.read_text())["folders"]


def test_local_library_works_offline(lib, tiny_gguf, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    model = lib.import_in_place(tiny_gguf())
    assert [m.path for m in lib.scan()] == [model.path]
