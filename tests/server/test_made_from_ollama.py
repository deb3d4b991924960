"""Ollama's models whose Modelfile set something (a system prompt, parameters, messages) become
made models over their linked files (``app.server.made_from_ollama``), on a real presets file:
named as Ollama names them, each setting checked as ``/api/create`` checks it (one that does not
pass is left out and said), a made model of that name kept as it is, a model that sets only its
template's stops left a plain file. The window's chat and every API then use those settings."""

from __future__ import annotations

from pathlib import Path

from app.engine.models.ollama_store import OllamaModel
from app.server import PresetStore, made_from_ollama


def _model(name: str, **settings) -> OllamaModel:
    return OllamaModel(name, Path("/ollama/blobs") / name, **settings)


def test_a_modelfile_s_settings_become_a_made_model_over_the_linked_file(tmp_path):
    store = PresetStore(tmp_path / "presets.json")
    mario = _model(
        "mario:latest",
        system="You are Mario.",
        parameters={"temperature": 0.9, "top_k": 40, "num_ctx": 8192, "stop": ["<|im_end|>"], "num_gpu": 99},
        messages=[
            {"role": "user", "content": "Who are you?"},
            {"role": "assistant", "content": "It's-a me!"},
        ],
        license=("MIT",),
    )
    plain = _model("llama3.2:3b", parameters={"stop": ["<|eot_id|>"]})
    files = [(mario, tmp_path / "mario-latest.gguf"), (plain, tmp_path / "llama3.2-3b.gguf")]
    done = made_from_ollama(store, files, max_tokens_limit=32768)
    assert (done.made, done.kept, done.left) == (
        ["mario"],
        [],
        [],
    )  # (Ollama's ":latest" is no part of a name)
    again = PresetStore(tmp_path / "presets.json").get("mario")  # written to the file
    assert again is not None and again.base == str(tmp_path / "mario-latest.gguf")
    assert again.license == ["MIT"] and again.template is None  # (Ollama's Go template: the GGUF's own)
    values = again.chat_values()
    assert values["system_prompt"] == "You are Mario." and values["n_ctx"] == 8192
    assert values["sampling"] == {"temperature": 0.9, "top_k": 40} and values["stop"] == ("<|im_end|>",)
    assert values["opening"] == (("user", "Who are you?"), ("assistant", "It's-a me!"))
    assert store.get("llama3.2:3b") is None  # only its template's stops: the file itself will do


def test_a_made_model_of_that_name_is_kept_and_a_bad_setting_is_left_out_and_said(tmp_path):
    store = PresetStore(tmp_path / "presets.json")
    made_from_ollama(store, [(_model("helper", system="Mine."), tmp_path / "a.gguf")], max_tokens_limit=100)
    odd = _model(
        "tutor:1b",
        system="You teach.",
        parameters={"temperature": "hot"},
        messages=[{"role": "wizard", "content": "x"}],
    )
    done = made_from_ollama(
        store,
        [(_model("helper", system="Ollama's."), tmp_path / "b.gguf"), (odd, tmp_path / "tutor.gguf")],
        max_tokens_limit=100,
    )
    assert done.kept == ["helper"] and store.get("helper").system == "Mine."  # the one there stays
    assert done.made == ["tutor:1b"] and len(done.left) == 2
    assert done.left[0].startswith("tutor:1b's parameters (") and "temperature" in done.left[0]
    assert done.left[1].startswith("tutor:1b's messages (")
    tutor = store.get("tutor:1b")
    assert tutor.system == "You teach." and tutor.parameters == {} and tutor.messages == []
    bad_name = made_from_ollama(
        store, [(_model("not a name!", system="x"), tmp_path / "c.gguf")], max_tokens_limit=1
    )
    assert bad_name.made == [] and bad_name.left == ["not a name!: not a name a made model takes"]


def test_a_made_model_never_hides_a_model_file_of_that_name(tmp_path):
    store = PresetStore(tmp_path / "presets.json")
    done = made_from_ollama(
        store, [(_model("tiny", system="x"), tmp_path / "t.gguf")], max_tokens_limit=1, file_ids=["Tiny"]
    )
    assert done.made == [] and done.left == ["tiny: the name of a model file here"] and store.all() == []
