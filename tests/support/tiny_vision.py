"""A tiny vision model for the tests: a random-weight text GGUF and a projector (``mmproj``) GGUF.

The text model is ``app.engine.models.tiny``'s llama-architecture model (byte-level tokenizer,
n_embd 64). The projector is what llama.cpp's libmtmd loads with ``mtmd_init_from_file``
(``tools/mtmd/clip.cpp``), for one projector type: **LLaVA's MLP projector**
(``clip.projector_type = "mlp"``, ``PROJECTOR_TYPE_MLP``).

Why that one: LLaVA 1.5 is exactly a llama text model plus a CLIP ViT plus a two-layer MLP, so
the text side needs nothing but the tiny llama model the tests already write; its image
preprocessing is a fixed-size resize (no tiles, no slices: ``mtmd_image_preprocessor_fixed_size``
when there are no ``image_grid_pinpoints``); its tokens are plain positions (no M-RoPE, causal
attention, no ``<start_of_image>``-style text around the image, which gemma3's projector adds and
whose non-causal decode a llama text model does not have); and the image's token count is simply
``(image_size / patch_size)²``. It is also the oldest, most stable layout in clip.cpp.

What the projector holds (names from ``clip-impl.h``; shapes as numpy writes them, the reverse of
ggml's ``ne``):

* metadata: ``clip.projector_type = mlp``, ``clip.has_vision_encoder``, ``clip.use_gelu``, and
  ``clip.vision.{image_size, patch_size, embedding_length, feed_forward_length, block_count,
  projection_dim, attention.head_count, attention.layer_norm_epsilon, image_mean, image_std}``
  (all required by ``clip_model_loader::load_hparams`` except ``use_gelu``);
* ``v.patch_embd.weight`` (n_embd, 3, patch, patch): the patch convolution, and its bias;
* ``v.position_embd.weight`` (n_patches, n_embd): no class embedding (``v.class_embd``), so the
  ``n_patches`` rows are exactly the image's tokens;
* ``v.pre_ln.{weight,bias}``, and per block ``v.blk.N.{ln1, attn_q, attn_k, attn_v, attn_out,
  ln2, ffn_up, ffn_down}.{weight,bias}``: LLaVA's graph (``models/llava.cpp``) runs all blocks but
  the last (the second-to-last layer's features), so two blocks run one;
* ``mm.0.{weight,bias}`` (vision n_embd -> hidden) and ``mm.2.{weight,bias}`` (hidden -> the text
  model's n_embd): ``clip_n_mmproj_embd`` is ``mm.2.weight``'s output size, which libmtmd checks
  against the text model's n_embd.

With the defaults an image is resized to 32x32 and becomes :data:`N_IMAGE_TOKENS` = 16 tokens of
64 floats; the pair is written in milliseconds and loads (warm-up encode included) in a fraction
of a second.

The module also writes small test images in pure Python (:func:`png_bytes`, :func:`bmp_bytes`,
:func:`gif_bytes`); JPEG and WebP come from Qt's image writers (:func:`qt_image_bytes`, test side
only: the app's core never imports Qt).
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

from app.engine.models.tiny import TensorWriter, write_tiny_gguf

__all__ = [
    "IMAGE_SIZE",
    "N_IMAGE_TOKENS",
    "PATCH_SIZE",
    "PROJECTOR_TYPE",
    "TEXT_EMBD",
    "bmp_bytes",
    "gif_bytes",
    "png_bytes",
    "qt_image_bytes",
    "write_tiny_projector",
    "write_tiny_vision_pair",
]

PROJECTOR_TYPE = "mlp"
IMAGE_SIZE = 32
PATCH_SIZE = 8
#: the tokens one image becomes with the defaults: (32 / 8)²
N_IMAGE_TOKENS = (IMAGE_SIZE // PATCH_SIZE) ** 2
#: the tiny text model's embedding size (the projector's output size)
TEXT_EMBD = 64
#: a ChatML template that writes user content as it is (the image marker stays where it was put)
CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def write_tiny_projector(
    path: str | Path,
    *,
    text_embd: int = TEXT_EMBD,
    image_size: int = IMAGE_SIZE,
    patch_size: int = PATCH_SIZE,
    embedding_length: int = 32,
    feed_forward_length: int = 48,
    block_count: int = 2,
    head_count: int = 2,
    hidden: int = 96,
    seed: int = 0,
    name: str = "tiny-vision-projector",
) -> Path:
    """Write a LLaVA MLP projector whose embeddings are ``text_embd`` floats (see the module
    docstring) and return the path. ``feed_forward_length`` must differ from
    ``embedding_length``: clip.cpp swaps ``ffn_up``/``ffn_down`` of old LLaVA files when
    ``ffn_down``'s input size equals n_embd."""
    import gguf
    import numpy as np

    if image_size % patch_size:
        raise ValueError("image_size must be a multiple of patch_size")
    if feed_forward_length == embedding_length:
        raise ValueError("feed_forward_length must differ from embedding_length (see the docstring)")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    d, ff = embedding_length, feed_forward_length
    n_patches = (image_size // patch_size) ** 2

    w = gguf.GGUFWriter(str(path), "clip")
    w.add_name(name)
    w.add_file_type(gguf.LlamaFileType.ALL_F32)
    w.add_string("clip.projector_type", PROJECTOR_TYPE)
    w.add_bool("clip.has_vision_encoder", True)
    w.add_bool("clip.has_audio_encoder", False)
    w.add_bool("clip.use_gelu", True)
    w.add_uint32("clip.vision.image_size", image_size)
    w.add_uint32("clip.vision.patch_size", patch_size)
    w.add_uint32("clip.vision.embedding_length", d)
    w.add_uint32("clip.vision.feed_forward_length", ff)
    w.add_uint32("clip.vision.block_count", block_count)
    w.add_uint32("clip.vision.projection_dim", text_embd)
    w.add_uint32("clip.vision.attention.head_count", head_count)
    w.add_float32("clip.vision.attention.layer_norm_epsilon", 1e-5)
    w.add_array("clip.vision.image_mean", [0.5, 0.5, 0.5])
    w.add_array("clip.vision.image_std", [0.5, 0.5, 0.5])

    t = TensorWriter(w, seed)
    t.matrix("v.patch_embd.weight", d, 3, patch_size, patch_size)
    w.add_tensor("v.patch_embd.bias", np.zeros(d, dtype=np.float32))
    t.matrix("v.position_embd.weight", n_patches, d)
    t.norm("v.pre_ln", d)
    for i in range(block_count):
        blk = f"v.blk.{i}"
        t.norm(f"{blk}.ln1", d)
        for proj in ("attn_q", "attn_k", "attn_v", "attn_out"):
            t.linear(f"{blk}.{proj}", d, d)
        t.norm(f"{blk}.ln2", d)
        t.linear(f"{blk}.ffn_up", ff, d)
        t.linear(f"{blk}.ffn_down", d, ff)
    t.linear("mm.0", hidden, d)
    t.linear("mm.2", text_embd, hidden)

    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def write_tiny_vision_pair(
    folder: str | Path, *, name: str = "tiny-vision", seed: int = 0
) -> tuple[Path, Path]:
    """Write the text model ``<name>.gguf`` (ChatML, n_embd :data:`TEXT_EMBD`) and its projector
    ``mmproj-<name>.gguf`` side by side in ``folder``; return (model, projector)."""
    folder = Path(folder)
    model = write_tiny_gguf(
        folder / f"{name}.gguf",
        chat_template=CHATML,
        control_tokens=("<|im_start|>", "<|im_end|>"),
        bos="<|im_start|>",
        eos="<|im_end|>",
        embedding_length=TEXT_EMBD,
        seed=seed,
        name=name,
    )
    projector = write_tiny_projector(folder / f"mmproj-{name}.gguf", seed=seed)
    return model, projector


# -- test images ----------------------------------------------------------------------------------


def _pixels(width: int, height: int) -> list[bytes]:
    """Rows of a deterministic RGB gradient."""
    return [
        bytes(v for x in range(width) for v in ((x * 7) % 256, (y * 13) % 256, (x + y) % 256))
        for y in range(height)
    ]


def png_bytes(width: int = 24, height: int = 16) -> bytes:
    """A valid RGB PNG (8-bit, no interlace)."""

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    raw = b"".join(b"\x00" + row for row in _pixels(width, height))
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(raw))
        + chunk(b"IEND", b"")
    )


def bmp_bytes(width: int = 24, height: int = 16) -> bytes:
    """A valid 24-bit uncompressed BMP (bottom-up rows, BGR)."""
    row_size = (24 * width + 31) // 32 * 4
    rows = [
        bytes(v for i in range(0, len(r), 3) for v in (r[i + 2], r[i + 1], r[i]))
        for r in _pixels(width, height)
    ]
    data = b"".join(r.ljust(row_size, b"\0") for r in reversed(rows))
    header = struct.pack("<IiiHHIIiiII", 40, width, height, 1, 24, 0, len(data), 2835, 2835, 0, 0)
    return b"BM" + struct.pack("<IHHI", 14 + len(header) + len(data), 0, 0, 14 + len(header)) + header + data


def gif_bytes(width: int = 24, height: int = 16) -> bytes:
    """A valid GIF89a with a 4-colour palette, LZW-coded without compression (a clear code every
    two pixels keeps every code 3 bits wide)."""
    palette = bytes([0, 0, 0, 255, 0, 0, 0, 255, 0, 0, 0, 255])
    clear, end = 4, 5
    codes: list[int] = []
    for i in range(width * height):
        if i % 2 == 0:
            codes.append(clear)
        codes.append((i // 3) % 4)
    codes.append(end)
    bits = acc = 0
    out = bytearray()
    for code in codes:
        acc |= code << bits
        bits += 3
        while bits >= 8:
            out.append(acc & 0xFF)
            acc >>= 8
            bits -= 8
    if bits:
        out.append(acc & 0xFF)
    blocks = b"".join(
        bytes([len(out[i : i + 255])]) + bytes(out[i : i + 255]) for i in range(0, len(out), 255)
    )
    return (
        b"GIF89a"
        + struct.pack("<HHBBB", width, height, 0x81, 0, 0)  # global palette of 4 entries
        + palette
        + b"\x2c"
        + struct.pack("<HHHHB", 0, 0, width, height, 0)
        + bytes([2])  # LZW minimum code size
        + blocks
        + b"\x00;"
    )


def qt_image_bytes(fmt: str, width: int = 24, height: int = 16, quality: int = -1) -> bytes:
    """An image in ``fmt`` (``"JPEG"``, ``"WEBP"``, ``"PNG"``, ``"BMP"``) written by Qt's image
    plugins (no QApplication needed); ``quality`` 100 makes a lossless WebP."""
    from PySide6.QtCore import QBuffer, QByteArray, QIODevice
    from PySide6.QtGui import QImage

    # one constructor call over the pixel bytes (PySide6 mis-counts None's references on each call
    # of a void method such as setPixel: thousands of them abort the interpreter at exit)
    raw = b"".join(_pixels(width, height))
    img = QImage(raw, width, height, 3 * width, QImage.Format.Format_RGB888).copy()
    data = QByteArray()
    buf = QBuffer(data)
    buf.open(QIODevice.OpenModeFlag.WriteOnly)
    if not img.save(buf, fmt, quality):
        raise RuntimeError(f"Qt cannot write {fmt} images here")
    buf.close()
    return bytes(data.data())
