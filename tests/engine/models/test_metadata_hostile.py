"""Hostile GGUF files: the metadata reader stays bounded and refuses what llama.cpp would abort on.

The files are written byte by byte here, so a header can claim anything; the reader must answer
each with a GGUFMetadataError naming the problem, after work bounded by the file's real size.
"""

from __future__ import annotations

import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.engine.models.metadata import LLAMA_MAX_LAYERS, GGUFMetadataError, read_metadata
from app.engine.models.tiny import write_tiny_gguf

U8, I32, U32, F32, BOOL, STRING, ARRAY, U64 = 0, 5, 4, 6, 7, 8, 9, 10


def _s(text: str | bytes) -> bytes:
    data = text.encode() if isinstance(text, str) else text
    return struct.pack("<Q", len(data)) + data


def kv(key: str, vtype: int, payload: bytes) -> bytes:
    return _s(key) + struct.pack("<I", vtype) + payload


def kv_str(key: str, value: str) -> bytes:
    return kv(key, STRING, _s(value))


def kv_u32(key: str, value: int) -> bytes:
    return kv(key, U32, struct.pack("<I", value))


def kv_f32(key: str, value: float) -> bytes:
    return kv(key, F32, struct.pack("<f", value))


def kv_array(key: str, item_type: int, count: int, items: bytes) -> bytes:
    return kv(key, ARRAY, struct.pack("<IQ", item_type, count) + items)


def gguf_bytes(
    kvs: list[bytes], *, n_kv: int | None = None, tensor_elems: int = 4, data: int | None = None
) -> bytes:
    """A GGUF v3 with ``kvs`` and one F32 tensor of ``tensor_elems`` items (``data`` bytes of it)."""
    tensor = (
        _s("token_embd.weight")
        + struct.pack("<I", 1)
        + struct.pack("<Q", tensor_elems)
        + struct.pack("<IQ", 0, 0)
    )
    head = b"GGUF" + struct.pack("<IQQ", 3, 1, len(kvs) if n_kv is None else n_kv) + b"".join(kvs) + tensor
    head += b"\0" * (-len(head) % 32)
    return head + b"\0" * (4 * tensor_elems if data is None else data)


BASE = [kv_str("general.architecture", "llama"), kv_str("general.name", "hostile")]


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    p = tmp_path / name
    p.write_bytes(data)
    return p


def test_reader_reads_a_sound_handwritten_file(tmp_path):
    p = write(tmp_path, "ok.gguf", gguf_bytes(BASE + [kv_u32("llama.context_length", 2048)]))
    meta = read_metadata(p)
    assert (meta.architecture, meta.name, meta.context_length, meta.parameter_count) == (
        "llama",
        "hostile",
        2048,
        4,
    )


def test_h3_array_header_is_bounded(tmp_path):
    # A UINT8 array that claims 2**60 items in a file of a few hundred bytes: refused at once.
    p = write(tmp_path, "arr.gguf", gguf_bytes(BASE + [kv_array("junk", U8, 1 << 60, b"\1\2\3")]))
    with pytest.raises(GGUFMetadataError, match="truncated or corrupt.*junk"):
        read_metadata(p)


@pytest.mark.parametrize("item_type", [STRING, ARRAY, U64])
def test_h3_every_array_kind_is_checked_against_the_file_size(tmp_path, item_type):
    p = write(tmp_path, "arr.gguf", gguf_bytes(BASE + [kv_array("junk", item_type, 1 << 40, b"")]))
    with pytest.raises(GGUFMetadataError, match="truncated or corrupt"):
        read_metadata(p)


def test_h3_counts_and_lengths_past_the_end_are_refused(tmp_path):
    cases = {
        "keys.gguf": gguf_bytes(BASE, n_kv=1 << 62),
        "strlen.gguf": gguf_bytes(BASE + [_s("k")[:8] + b"\xff" * 8]),
        "value.gguf": gguf_bytes(BASE + [kv("k", STRING, struct.pack("<Q", 1 << 62))]),
        "tensor.gguf": gguf_bytes(BASE, tensor_elems=1 << 40, data=64),
    }
    for name, data in cases.items():
        with pytest.raises(GGUFMetadataError):
            read_metadata(write(tmp_path, name, data))


def test_h3_two_million_item_string_array_reads_in_linear_time(tmp_path):
    n = 2_000_000
    items = _s("tok") * n
    p = write(tmp_path, "big.gguf", gguf_bytes(BASE + [kv_array("tokenizer.ggml.merges", STRING, n, items)]))
    assert p.stat().st_size > 20_000_000
    start = time.process_time()
    meta = read_metadata(p)
    cpu = time.process_time() - start
    assert meta.name == "hostile"
    # gguf-py's reader took 53 s and 2.7 GB here; the bounded reader walks the lengths once.
    assert cpu < 10, cpu


def test_h3_token_text_comes_from_the_token_array(tmp_path):
    toks = [_s(t) for t in ("<s>", "</s>", "a")]
    p = write(
        tmp_path,
        "tok.gguf",
        gguf_bytes(
            BASE
            + [
                kv_array("tokenizer.ggml.tokens", STRING, 3, b"".join(toks)),
                kv_u32("tokenizer.ggml.bos_token_id", 0),
                kv_u32("tokenizer.ggml.eos_token_id", 7),
            ]
        ),
    )
    meta = read_metadata(p)
    assert (meta.vocab_size, meta.bos_token, meta.eos_token) == (3, "<s>", None)


def test_h3_bad_types_duplicates_and_alignment_are_clear_errors(tmp_path):
    cases = {
        "type.gguf": (gguf_bytes(BASE + [kv("k", 99, b"\0" * 8)]), "unknown value type 99"),
        "dup.gguf": (gguf_bytes(BASE + [kv_str("general.name", "again")]), "duplicate key"),
        "align.gguf": (gguf_bytes(BASE + [kv_u32("general.alignment", 3)]), "power of two"),
        "key.gguf": (
            gguf_bytes(BASE + [kv_str("general.name\xff", "x").replace("\xff".encode(), b"\xff")]),
            "not valid UTF-8",
        ),
        "version.gguf": (b"GGUF" + struct.pack("<I", 7) + b"\0" * 40, "version 7"),
    }
    for name, (data, words) in cases.items():
        with pytest.raises(GGUFMetadataError, match=words):
            read_metadata(write(tmp_path, name, data))


@pytest.mark.parametrize("layers", [0, 10**6])
def test_h1_layer_count_llama_cpp_aborts_on_is_refused(tmp_path, layers):
    p = write(tmp_path, "layers.gguf", gguf_bytes(BASE + [kv_u32("llama.block_count", layers)]))
    with pytest.raises(GGUFMetadataError, match=f"layer count: llama.block_count is {layers}"):
        read_metadata(p)
    read_metadata(
        write(tmp_path, "ok.gguf", gguf_bytes(BASE + [kv_u32("llama.block_count", LLAMA_MAX_LAYERS)]))
    )


def test_h1_nan_norm_epsilon_is_refused(tmp_path):
    for key in ("llama.attention.layer_norm_rms_epsilon", "llama.attention.layer_norm_epsilon"):
        for value in (float("nan"), -1e-5, float("inf")):
            p = write(tmp_path, "eps.gguf", gguf_bytes(BASE + [kv_f32(key, value)]))
            with pytest.raises(GGUFMetadataError, match="norm epsilon"):
                read_metadata(p)


def test_h1_llama_tokenizer_without_scores_is_refused(tmp_path):
    toks = kv_array("tokenizer.ggml.tokens", STRING, 2, _s("a") + _s("b"))
    p = write(tmp_path, "spm.gguf", gguf_bytes(BASE + [kv_str("tokenizer.ggml.model", "llama"), toks]))
    with pytest.raises(GGUFMetadataError, match="no score for every token"):
        read_metadata(p)
    scores = kv_array("tokenizer.ggml.scores", F32, 2, struct.pack("<ff", 0.0, -1.0))
    read_metadata(
        write(
            tmp_path,
            "spm_ok.gguf",
            gguf_bytes(BASE + [kv_str("tokenizer.ggml.model", "llama"), toks, scores]),
        )
    )


@pytest.mark.parametrize("ctx", [2**31 - 1, 300_000_000, 2**32 - 1])
def test_h13_absurd_context_length_is_refused(tmp_path, ctx):
    p = write(tmp_path, "ctx.gguf", gguf_bytes(BASE + [kv_u32("llama.context_length", ctx)]))
    with pytest.raises(GGUFMetadataError, match="context length"):
        read_metadata(p)


def test_h1_cli_chat_gives_a_message_not_an_abort(tmp_path):
    # A real llama.cpp model whose only fault is the layer count: before the check, llama.cpp's
    # GGML_ASSERT killed the process (rc 134) with no message.
    p = write_tiny_gguf(
        tmp_path / "block_count_0.gguf", block_count=0, chat_template="{{ messages[0].content }}"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "app", "chat", "--model", str(p), "hi"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 1, (proc.returncode, proc.stderr[-500:])
    assert "layer count" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_h17_non_utf8_file_name_gets_a_clear_load_error(tmp_path):
    import os

    from app.engine.errors import ModelLoadError
    from app.engine.llm import load_model

    good = write_tiny_gguf(tmp_path / "m.gguf", chat_template="{{ messages[0].content }}")
    odd = Path(os.fsdecode(bytes(tmp_path) + b"/caf\xe9.gguf"))  # Latin-1 bytes: not UTF-8
    try:
        os.rename(good, odd)
    except OSError:
        pytest.skip("this file system refuses non-UTF-8 names")
    assert read_metadata(odd).name == "tiny-test-model"  # inspecting works
    with pytest.raises(ModelLoadError, match="not valid UTF-8"):
        load_model(odd, n_ctx=256)


def test_hostile_vocabulary_is_a_constraint_error_not_a_panic(tmp_path):
    # A 3600-character token made llguidance panic (a BaseException past every `except Exception`).
    from app.engine.constraints import compile_constraint
    from app.engine.errors import ConstraintError
    from app.engine.llm import load_model

    p = write_tiny_gguf(
        tmp_path / "long_token.gguf",
        chat_template="{{ messages[0].content }}",
        user_tokens=["[calculator(expression=0x" + "f" * 3600 + ")]"],
    )
    model = load_model(p, n_ctx=256)
    try:
        # the tokenizer is built in the model's engine process; the error comes back here
        tool = {"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}}
        with pytest.raises(ConstraintError, match="cannot read this model's vocabulary"):
            compile_constraint(model, family="hermes", tools=[tool], tool_choice="required")
        assert model.engine.alive
    finally:
        model.close()
