"""Projectors (mmproj GGUFs) in the library, the hub listing and downloads: recognised by their
header, never listed as chat models, paired with their model (beside it, or chosen), and downloaded
with it. Real tiny GGUFs (tests/support/tiny_vision.py) and a real local HTTP hub."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.engine.models.download import DownloadState
from app.engine.models.errors import LibraryError
from app.engine.models.hub import HubClient, RemotePart, group_gguf_files, match_projector
from app.engine.models.library import NO_PROJECTOR, Library, projector_for
from app.engine.models.manager import ModelManager
from app.engine.models.tiny import write_tiny_gguf
from app.engine.vision import mtmd_available
from tests.support.fake_hub import FakeHub
from tests.support.tiny_vision import write_tiny_projector, write_tiny_vision_pair

REPO = "acme/Tiny-Vision-GGUF"


def _library(tmp_path: Path) -> Library:
    return Library(models_dir=tmp_path / "models", manifest_path=tmp_path / "lib.json", hf_cache_dir=False)


def test_a_model_is_listed_once_with_the_projector_beside_it(tmp_path):
    lib = _library(tmp_path)
    model, projector = write_tiny_vision_pair(lib.models_dir / "vision")
    text = write_tiny_gguf(lib.models_dir / "text" / "plain.gguf", seed=3)  # no mmproj in its folder
    by_name = {m.path.name: m for m in lib.scan()}
    assert set(by_name) == {model.name, text.name}  # the projector is no chat model
    vision = by_name[model.name]
    assert vision.vision and vision.projector == projector and vision.projector_source == "beside"
    assert not by_name[text.name].vision and by_name[text.name].projector is None
    (proj,) = lib.projectors()
    assert proj.path == projector.resolve() and proj.is_projector and proj.usable
    assert proj.summary is not None and proj.summary.projector_type == "mlp" and proj.summary.has_vision
    assert lib.projector_for(model) is None  # no choice: the engine looks beside the model


def test_a_projector_is_recognised_by_its_header_whatever_its_name(tmp_path):
    lib = _library(tmp_path)
    write_tiny_projector(lib.models_dir / "vision-encoder.gguf")  # no "mmproj" in the name
    (lib.models_dir / "mmproj-broken.gguf").write_bytes(b"GGUF\x03\x00\x00\x00 not a header")
    write_tiny_gguf(lib.models_dir / "chat.gguf", seed=1)
    assert [m.path.name for m in lib.scan()] == ["chat.gguf"]
    names = {m.path.name: m for m in lib.projectors()}
    assert set(names) == {"vision-encoder.gguf", "mmproj-broken.gguf"}
    assert names["vision-encoder.gguf"].summary.is_projector
    assert names["mmproj-broken.gguf"].error  # listed with its error, never as a chat model


def test_choosing_and_clearing_a_projector_persists(tmp_path):
    lib = _library(tmp_path)
    other = tmp_path / "elsewhere"
    model, beside = write_tiny_vision_pair(lib.models_dir / "vision")
    chosen = write_tiny_projector(other / "my-projector.gguf", seed=5)
    text = write_tiny_gguf(lib.models_dir / "text" / "plain.gguf", seed=3)

    lib.set_projector(text, chosen)
    again = _library(tmp_path)  # a new Library reads the manifest: the choice was saved
    by_name = {m.path.name: m for m in again.scan()}
    assert by_name[text.name].projector == chosen.resolve()
    assert by_name[text.name].projector_source == "chosen"
    assert again.projector_for(text) == str(chosen.resolve())

    again.set_projector(model, None)  # none, although an mmproj is beside it
    by_name = {m.path.name: m for m in _library(tmp_path).scan()}
    assert by_name[model.name].projector is None and not by_name[model.name].vision
    assert by_name[model.name].projector_source == NO_PROJECTOR
    assert _library(tmp_path).projector_for(model) == NO_PROJECTOR
    assert projector_for(model, _library(tmp_path)) == NO_PROJECTOR  # what a load passes as mmproj

    again.reset_projector(model)  # back to the one beside it
    by_name = {m.path.name: m for m in _library(tmp_path).scan()}
    assert by_name[model.name].projector == beside and _library(tmp_path).projector_for(model) is None

    with pytest.raises(LibraryError, match="not a projector"):
        lib.set_projector(model, text)  # a chat model is no projector
    with pytest.raises(LibraryError, match="does not exist"):
        lib.set_projector(model, tmp_path / "missing.gguf")


def test_hub_listing_marks_projectors_and_matches_each_model_with_one():
    def part(name: str, size: int) -> RemotePart:
        return RemotePart(name, size, None)

    files = [
        part("gemma-3-4b-it-Q4_K_M.gguf", 2000),
        part("gemma-3-4b-it-Q8_0.gguf", 4000),
        part("mmproj-gemma-3-4b-it-Q8_0.gguf", 300),
        part("mmproj-gemma-3-4b-it-f16.gguf", 600),
        part("mmproj-gemma-3-4b-it-bf16.gguf", 600),
        part("qwen-vl-Q4_K_M.gguf", 1000),
        part("mmproj-qwen-vl-f16.gguf", 500),
    ]
    listed = {g.name: g for g in group_gguf_files("r/x", "main", files)}
    projectors = {n for n, g in listed.items() if g.is_projector}
    assert projectors == {
        "mmproj-gemma-3-4b-it-Q8_0",
        "mmproj-gemma-3-4b-it-f16",
        "mmproj-gemma-3-4b-it-bf16",
        "mmproj-qwen-vl-f16",
    }
    assert listed["gemma-3-4b-it-Q4_K_M"].projector.name == "mmproj-gemma-3-4b-it-f16"
    assert listed["gemma-3-4b-it-Q8_0"].projector.name == "mmproj-gemma-3-4b-it-f16"
    assert listed["qwen-vl-Q4_K_M"].projector.name == "mmproj-qwen-vl-f16"
    assert all(listed[n].projector is None for n in projectors)
    plain = group_gguf_files("r/y", "main", [part("plain-Q4_0.gguf", 10)])
    assert plain[0].projector is None and match_projector(plain[0], []) is None


@pytest.fixture
def vision_hub(tmp_path_factory):
    src = tmp_path_factory.mktemp("vision-src")
    model, projector = write_tiny_vision_pair(src, name="tiny-vision")
    second = write_tiny_gguf(src / "second.gguf", seed=7, embedding_length=64)
    h = FakeHub()
    h.add_repo(
        REPO,
        {
            "tiny-vision-Q8_0.gguf": model.read_bytes(),
            "tiny-vision-F32.gguf": second.read_bytes(),
            "mmproj-tiny-vision-f16.gguf": projector.read_bytes(),
        },
        downloads=10,
    )
    h.start()
    yield h
    h.stop()


def test_downloading_a_model_downloads_its_projector_and_pairs_them(vision_hub, tmp_path):
    lib = _library(tmp_path)
    mgr = ModelManager(hub=HubClient(vision_hub.url), library=lib)
    try:
        listed = {g.filename: g for g in mgr.hub.list_ggufs(REPO)}
        assert listed["mmproj-tiny-vision-f16.gguf"].is_projector
        model = listed["tiny-vision-Q8_0.gguf"]
        assert model.projector is not None and model.projector.filename == "mmproj-tiny-vision-f16.gguf"

        queued = mgr.download(model)
        assert len(queued.task_ids) == 1 and len(queued.projector_task_ids) == 1
        for tid in queued.task_ids + queued.projector_task_ids:
            assert mgr.queue.wait(tid, 60).state == DownloadState.DONE
        (local,) = lib.scan()  # one chat model: the projector is not one
        assert local.path.name == "tiny-vision-Q8_0.gguf" and local.source == "downloaded"
        assert local.projector == queued.projector_path.resolve() and local.projector_source == "chosen"
        assert lib.projector_for(local.path) == str(local.projector)
        (proj,) = lib.projectors()
        assert proj.source == "downloaded" and proj.repo_id == REPO and proj.summary.is_projector
        assert proj.path.read_bytes() == vision_hub.repos[REPO].files["mmproj-tiny-vision-f16.gguf"]

        # a second model of the repo reuses the projector already here
        before = vision_hub.count("GET", "/_cdn/")
        again = mgr.download(listed["tiny-vision-F32.gguf"])
        assert again.projector_task_ids == () and again.projector_path == queued.projector_path
        (tid,) = again.task_ids
        assert mgr.queue.wait(tid, 60).state == DownloadState.DONE
        assert vision_hub.count("GET", "/_cdn/") == before + 1  # only the model's bytes
        assert all(m.projector == local.projector for m in lib.scan())
    finally:
        mgr.shutdown()


def test_a_model_can_be_downloaded_without_its_projector(vision_hub, tmp_path):
    lib = _library(tmp_path)
    mgr = ModelManager(hub=HubClient(vision_hub.url), library=lib)
    try:
        model = next(g for g in mgr.hub.list_ggufs(REPO) if g.filename == "tiny-vision-Q8_0.gguf")
        queued = mgr.download(model, with_projector=False)
        assert queued.projector_task_ids == () and queued.projector_path is None
        (tid,) = queued.task_ids
        assert mgr.queue.wait(tid, 60).state == DownloadState.DONE
        (local,) = lib.scan()
        assert local.projector is None and lib.projectors() == []
    finally:
        mgr.shutdown()


@pytest.mark.skipif(not mtmd_available()[0], reason=mtmd_available()[1])
def test_the_library_choice_is_what_a_load_takes_as_mmproj(tmp_path):
    """``Library.projector_for`` -> ``LoadSettings.mmproj``: the chosen projector is the one loaded,
    and "none" loads none although an mmproj is beside the model."""
    from app.engine.llm import LoadSettings, load_model

    lib = _library(tmp_path)
    model, beside = write_tiny_vision_pair(lib.models_dir / "eyes")
    alone = write_tiny_gguf(lib.models_dir / "text" / "alone.gguf", embedding_length=64, seed=1)
    chosen = write_tiny_projector(tmp_path / "elsewhere" / "eyes-for-alone.gguf", seed=3)
    lib.set_projector(alone, chosen)
    lib.set_projector(model, None)

    def load(path: Path):
        settings = LoadSettings(n_ctx=512, n_threads=1, mmproj=lib.projector_for(path))
        return load_model(path, settings=settings, isolate=False)

    loaded = load(alone)
    try:
        assert loaded.vision and Path(loaded.projector_path) == chosen.resolve()
    finally:
        loaded.close()
    loaded = load(model)
    try:
        assert not loaded.vision and loaded.projector_path is None
    finally:
        loaded.close()
