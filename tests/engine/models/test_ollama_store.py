"""Ollama's models used where they are (``app.engine.models.ollama_store``) over real files: found
where Ollama keeps them (``OLLAMA_MODELS``, ``~/.ollama/models``), named as ``ollama list`` names
them, each GGUF (and a vision model's projector) linked under that name, nothing copied; a
manifest that is broken, names no GGUF or whose blob is gone is passed over. A linked model is a
GGUF llama.cpp loads."""

from __future__ import annotations

import os

import pytest

from app.engine.models.errors import NotDeletableError
from app.engine.models.library import Library
from app.engine.models.ollama_store import (
    file_name,
    link_ollama_models,
    linked,
    ollama_models,
    ollama_models_dir,
)
from app.engine.models.tiny import write_tiny_gguf
from tests.support.ollama_store import add_ollama_model

TEMPLATE = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"


@pytest.fixture
def gguf(tmp_path) -> bytes:
    return write_tiny_gguf(tmp_path / "tiny.gguf", chat_template=TEMPLATE).read_bytes()


def test_ollama_s_folder_is_found_where_ollama_keeps_it(tmp_path):
    assert ollama_models_dir({}, tmp_path) is None
    (tmp_path / ".ollama" / "models" / "manifests").mkdir(parents=True)
    assert ollama_models_dir({}, tmp_path) == tmp_path / ".ollama" / "models"
    moved = tmp_path / "disk" / "ollama"
    (moved / "manifests").mkdir(parents=True)
    assert ollama_models_dir({"OLLAMA_MODELS": str(moved)}, tmp_path) == moved
    # set, it is Ollama's only place: one that is not there means no models
    assert ollama_models_dir({"OLLAMA_MODELS": str(tmp_path / "gone")}, tmp_path) is None


def test_each_model_is_named_as_ollama_names_it_and_the_broken_are_passed_over(tmp_path, gguf):
    root = tmp_path / "models"
    add_ollama_model(root, "registry.ollama.ai/library/tiny/latest", gguf)
    add_ollama_model(root, "registry.ollama.ai/someone/tool-model/q8", gguf + b"\0")
    add_ollama_model(root, "hf.co/user/Tiny-GGUF/Q4_K_M", gguf + b"\0\0", projector=gguf + b"\0\0\0")
    gone = add_ollama_model(root, "registry.ollama.ai/library/gone/1b", gguf + b"\1")
    for blob in (root / "blobs").iterdir():
        if blob.read_bytes() == gguf + b"\1":
            blob.unlink()
    add_ollama_model(root, "registry.ollama.ai/library/notgguf/1b", b"safetensors, not a GGUF")
    (root / "manifests" / "registry.ollama.ai" / "library" / "broken").mkdir()
    (root / "manifests" / "registry.ollama.ai" / "library" / "broken" / "x").write_text("{not json")
    found = ollama_models(root)
    assert [m.name for m in found] == ["hf.co/user/Tiny-GGUF:Q4_K_M", "someone/tool-model:q8", "tiny:latest"]
    assert found[0].projector is not None and found[2].projector is None
    assert all(m.model.parent == root / "blobs" for m in found) and gone.is_file()
    assert [file_name(m.name) for m in found] == [
        "hf.co-user-Tiny-GGUF-Q4_K_M",
        "someone-tool-model-q8",
        "tiny-latest",
    ]


def test_linked_models_are_listed_by_the_library_and_nothing_is_copied(tmp_path, gguf):
    from tests.support.tiny_vision import write_tiny_projector

    root = tmp_path / "ollama"
    projector = write_tiny_projector(tmp_path / "mmproj.gguf").read_bytes()
    add_ollama_model(root, "registry.ollama.ai/library/tiny/latest", gguf)
    add_ollama_model(root, "registry.ollama.ai/library/seeing/2b", gguf + b"\0", projector=projector)
    lib = Library(models_dir=tmp_path / "lib", manifest_path=tmp_path / "lib.json", hf_cache_dir=False)
    models = ollama_models(root)
    dest = lib.models_dir / "ollama"
    assert not any(linked(m, dest) for m in models)

    done, failed = link_ollama_models(models, dest)
    assert failed == [] and [p.name for p in done] == ["seeing-2b.gguf", "tiny-latest.gguf"]
    assert all(linked(m, dest) for m in models)
    for link, m in zip(done, models, strict=True):
        assert os.path.samefile(link, m.model)  # the blob itself, by a link
    blobs = sorted(p.name for p in (root / "blobs").iterdir())
    listed = {m.name: m for m in lib.scan()}
    assert sorted(listed) == ["seeing-2b", "tiny-latest"] and all(m.usable for m in listed.values())
    assert listed["seeing-2b"].projector is not None and os.path.samefile(
        listed["seeing-2b"].projector, models[0].projector
    )
    assert sorted(p.name for p in (root / "blobs").iterdir()) == blobs  # Ollama's files untouched
    assert link_ollama_models(models, dest) == (done, [])  # linked again: the same, kept

    # Ollama's files are not deleted here; removed from the library, the links go and the blobs stay
    assert {m.source for m in listed.values()} == {"ollama"}
    with pytest.raises(NotDeletableError, match="ollama rm"):
        lib.delete(listed["seeing-2b"], confirm_foreign=True)
    assert sorted(p.name for p in lib.unlink_linked(listed["seeing-2b"])) == [
        "mmproj-seeing-2b.gguf",
        "seeing-2b.gguf",
    ]
    assert models[0].model.is_file() and models[0].projector.is_file()
    assert sorted(m.name for m in lib.scan()) == ["tiny-latest"] and not linked(models[0], dest)
    # Ollama removes a model: no longer listed (its link leads nowhere)
    models[1].model.unlink()
    assert lib.scan() == []


def test_a_linked_model_loads_in_llama_cpp(tmp_path, gguf):
    from llama_cpp import Llama

    root = tmp_path / "ollama"
    add_ollama_model(root, "registry.ollama.ai/library/tiny/latest", gguf)
    (path,), _ = link_ollama_models(ollama_models(root), tmp_path / "lib")
    llm = Llama(model_path=str(path), n_ctx=64, verbose=False)
    try:
        assert llm.n_vocab() > 0 and llm.metadata.get("tokenizer.chat_template") == TEMPLATE
    finally:
        llm.close()


def test_what_a_modelfile_set_is_read_with_the_model(tmp_path, gguf):
    root = tmp_path / "models"
    add_ollama_model(
        root,
        "registry.ollama.ai/library/mario/latest",
        gguf,
        params=b'{"temperature": 0.9, "num_ctx": 8192, "stop": ["<|im_end|>"]}',
        system=b"You are Mario from Super Mario Bros.",
        messages=b'[{"role": "user", "content": "Who are you?"}, {"role": "assistant", "content": "It\'s-a me!"}]',
        licenses=(b"Licence one", b"Licence two"),
    )
    add_ollama_model(root, "registry.ollama.ai/library/plain/latest", gguf + b"\0")  # only the stops
    add_ollama_model(
        root, "registry.ollama.ai/library/odd/latest", gguf + b"\0\0", params=b"{not json", system=b"\xff"
    )
    mario, odd, plain = ollama_models(root)
    assert mario.system == "You are Mario from Super Mario Bros."
    assert mario.parameters == {"temperature": 0.9, "num_ctx": 8192, "stop": ["<|im_end|>"]}
    assert [m["role"] for m in mario.messages] == ["user", "assistant"]
    assert mario.license == ("Licence one", "Licence two") and mario.sets_anything()
    assert plain.parameters == {"stop": ["<|im_end|>"]} and not plain.sets_anything()
    # a layer that is not what it should be is not read (the model is still listed)
    assert (odd.parameters, odd.system, odd.messages) == (None, None, None) and not odd.sets_anything()
