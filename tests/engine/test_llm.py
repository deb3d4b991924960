"""Model loading and GGUF metadata on real files: good tiny models, and corrupt, truncated
and non-GGUF files that must give a clear error naming the file, with the process alive."""

from __future__ import annotations

import os
import random

import pytest

from app.engine.errors import ModelLoadError
from app.engine.generation import generate
from app.engine.llm import FALLBACK_TEMPLATE, load_model
from app.engine.models.metadata import GGUFMetadataError, format_parameter_count, read_metadata

TEMPLATE = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"


def test_metadata_is_read_with_the_gguf_package(tiny_gguf):
    path = tiny_gguf(
        chat_template=TEMPLATE,
        named_templates={"tool_use": "{{ tools }}"},
        control_tokens=["<|im_start|>", "<|im_end|>"],
        bos="<|im_start|>",
        eos="<|im_end|>",
        context_length=2048,
        extra_metadata={"general.sampling.temp": 0.6, "general.sampling.top_p": 0.9},
    )
    meta = read_metadata(path)
    assert meta.architecture == "llama"
    assert meta.name == "tiny-test-model"
    assert meta.context_length == 2048
    assert meta.quantization == "F32"
    assert meta.chat_template == TEMPLATE
    assert meta.named_templates == {"tool_use": "{{ tools }}"}
    assert meta.tool_use_template == "{{ tools }}"
    assert (meta.bos_token, meta.eos_token) == ("<|im_start|>", "<|im_end|>")
    assert (meta.bos_token_id, meta.eos_token_id) == (256, 257)
    assert meta.vocab_size == 258
    assert meta.sampling == {"temp": 0.6, "top_p": 0.9}
    # 258 x 64 embeddings + output, norms, 2 blocks of attention and FFN
    d, ff, v = 64, 128, 258
    assert meta.parameter_count == 2 * v * d + d + 2 * (2 * d + 4 * d * d + 3 * d * ff)
    assert meta.to_dict()["parameter_label"] == format_parameter_count(meta.parameter_count)
    assert meta.file_size == os.path.getsize(path)


def test_parameter_labels():
    assert format_parameter_count(134_515_008) == "135M"
    assert format_parameter_count(7_241_732_096) == "7.2B"
    assert format_parameter_count(268_098_176) == "268M"
    assert format_parameter_count(999) == "999"


def test_load_model_settings_and_eog_set(tiny_gguf):
    path = tiny_gguf(
        chat_template=TEMPLATE,
        control_tokens=["<|im_start|>", "<|im_end|>", "<|eot|>"],
        bos="<|im_start|>",
        eos="<|im_end|>",
        eot="<|eot|>",
        context_length=1024,
    )
    m = load_model(path, n_ctx=300, n_gpu_layers=0, n_threads=1, isolate=False)
    try:
        assert m.n_ctx == 512  # rounded up to a multiple of 256
        assert m.llm.n_ctx() == 512
        assert m.eog_ids == {257, 258}  # eos and eot, as llama.cpp reports them
        assert not m.template_is_fallback
        assert m.chat_template == TEMPLATE
    finally:
        m.close()
    m = load_model(path, n_ctx=100_000, n_threads=1)
    try:
        assert m.n_ctx == 1024  # capped at the model's training context
    finally:
        m.close()


def test_model_without_template_gets_the_fallback(tiny_gguf):
    m = load_model(tiny_gguf(), n_ctx=256, n_threads=1)
    try:
        assert m.template_is_fallback
        assert m.chat_template == FALLBACK_TEMPLATE
        assert "<|im_end|>" in m.stop_strings
    finally:
        m.close()


def _bad_files(tmp_path, good: bytes) -> dict[str, tuple[bytes, str]]:
    return {
        "empty.gguf": (b"", "only 0 bytes"),
        "text.gguf": (b"This is a README, not a model.\n" * 4, "not a GGUF model"),
        "half.gguf": (good[: len(good) // 2], "truncated"),
        "header-only.gguf": (good[:300], "corrupt"),
        "cut-at-end.gguf": (good[:-100], "truncated"),
        "bad-version.gguf": (b"GGUF" + (99).to_bytes(4, "little") + bytes(64), "version"),
        "garbage-kv.gguf": (good[:24] + random.Random(0).randbytes(2000), "corrupt"),
    }


def test_corrupt_truncated_and_non_gguf_files_give_clear_errors(tiny_gguf, tmp_path):
    good_path = tiny_gguf(chat_template=TEMPLATE)
    good = good_path.read_bytes()
    for name, (data, problem) in _bad_files(tmp_path, good).items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(GGUFMetadataError) as meta_err:
            read_metadata(path)
        assert str(path) in str(meta_err.value)
        with pytest.raises(ModelLoadError) as err:
            load_model(path, n_ctx=256, n_threads=1)
        assert str(path) in str(err.value), name
        assert problem in str(err.value), (name, str(err.value))
    # the process survived every one of them and still loads and runs a good model
    m = load_model(good_path, n_ctx=256, n_threads=1)
    try:
        assert generate(m, "x", grammar='root ::= "ok"').run().text == "ok"
    finally:
        m.close()


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(ModelLoadError, match="file not found"):
        load_model(tmp_path / "nope.gguf")
    with pytest.raises(ModelLoadError, match="not a regular file"):
        load_model(tmp_path)


def test_gguf_that_is_not_a_model(tmp_path):
    import gguf

    path = tmp_path / "vocab-only.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_context_length(128)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    with pytest.raises(ModelLoadError, match="no tensors"):
        load_model(path)
