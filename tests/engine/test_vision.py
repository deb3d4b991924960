"""Images through libmtmd (``app.engine.vision``) with the tiny vision pair (``tests.support.tiny_vision``:
a random-weight llama text model and a LLaVA MLP projector written by the tests).

* an image's header is read and checked without decoding it: each format's size, image bombs,
  truncated, damaged and non-image files are clear ``ImageError`` s (pure Python: these run on any build);
* an image goes end to end in this process: the projector loads beside the model, the prompt's
  image becomes its tokens, they are evaluated (``n_past`` grows by the image's token count and
  the image changes what the model reads), a reply streams with llama.cpp's sampling, and the KV
  prefix that holds an image is reused on the next turn;
* a bad image is a clear error, the context untouched and usable afterwards; a projector made for
  another model and a model without projector are clear errors.

The libmtmd tests skip only when llama-cpp-python was built without libmtmd (``LLAVA_BUILD=OFF``).
"""

from __future__ import annotations

import struct
import zlib
from types import SimpleNamespace

import pytest

from app.engine.errors import ContextOverflowError, ModelLoadError
from app.engine.generation import generate
from app.engine.llm import load_model
from app.engine.vision import (
    DEFAULT_MARKER,
    ImageError,
    ImageLimits,
    NoProjectorError,
    Projector,
    check_image,
    find_projector,
    is_media_id,
    mtmd_available,
    require_projector,
)
from tests.support.tiny_vision import (
    N_IMAGE_TOKENS,
    bmp_bytes,
    gif_bytes,
    png_bytes,
    qt_image_bytes,
    write_tiny_projector,
    write_tiny_vision_pair,
)

HAVE_MTMD, WHY_NOT = mtmd_available()
needs_mtmd = pytest.mark.skipif(not HAVE_MTMD, reason=WHY_NOT)  # "this llama-cpp-python has no libmtmd..."
GREEDY = {"temperature": 0.0}
MARK = DEFAULT_MARKER
BOMB = 20000


def turn(text: str) -> str:
    """A ChatML user turn and the generation prompt (what the pair's template renders)."""
    return f"<|im_start|>user\n{text}<|im_end|>\n<|im_start|>assistant\n"


# -- images made for the tests --------------------------------------------------------------------


def _png_chunk(kind: bytes, body: bytes) -> bytes:
    return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))


def png_bomb() -> bytes:
    """A valid-looking PNG (right CRCs) whose header declares 20000x20000 pixels."""
    good = png_bytes()
    ihdr = struct.pack(">IIBBBBB", BOMB, BOMB, 8, 2, 0, 0, 0)
    return good[:8] + _png_chunk(b"IHDR", ihdr) + good[33:]


def png_damaged() -> bytes:
    """A PNG with one byte of its compressed pixels changed (its CRC no longer matches)."""
    data = bytearray(png_bytes())
    data[45] ^= 0xFF  # inside IDAT's data
    return bytes(data)


def png_undecodable() -> bytes:
    """A PNG whose every chunk is whole and checksummed, but whose pixel data is not zlib: only the
    decoder can tell."""
    good = png_bytes()
    return good[:33] + _png_chunk(b"IDAT", b"\x00this is not deflate data" * 4) + _png_chunk(b"IEND", b"")


def jpeg_bomb() -> bytes:
    data = bytearray(qt_image_bytes("JPEG"))
    sof = data.find(b"\xff\xc0")
    assert sof > 0
    data[sof + 5 : sof + 9] = struct.pack(">HH", BOMB, BOMB)
    return bytes(data)


def gif_bomb() -> bytes:
    data = bytearray(gif_bytes())
    data[6:10] = struct.pack("<HH", BOMB, BOMB)
    return bytes(data)


def bmp_bomb() -> bytes:
    data = bytearray(bmp_bytes())
    data[18:26] = struct.pack("<ii", BOMB, BOMB)
    return bytes(data)


def webp_bomb() -> bytes:
    """An extended WebP (VP8X: 24-bit canvas size) declaring 20000x20000 pixels."""
    vp8x = struct.pack("<I", 0) + (BOMB - 1).to_bytes(3, "little") + (BOMB - 1).to_bytes(3, "little")
    body = b"WEBP" + b"VP8X" + struct.pack("<I", len(vp8x)) + vp8x
    return b"RIFF" + struct.pack("<I", len(body)) + body


# -- the header check (no libmtmd needed) ------------------------------------------------------------


@pytest.mark.parametrize(
    ("make", "fmt"),
    [
        (lambda: png_bytes(37, 11), "png"),
        (lambda: bmp_bytes(37, 11), "bmp"),
        (lambda: gif_bytes(37, 11), "gif"),
        (lambda: qt_image_bytes("JPEG", 37, 11), "jpeg"),
        (lambda: qt_image_bytes("WEBP", 37, 11), "webp"),  # lossy: VP8
        (lambda: qt_image_bytes("WEBP", 37, 11, quality=100), "webp"),  # lossless: VP8L
    ],
)
def test_the_header_gives_each_format_and_its_size(make, fmt):
    info = check_image(make())
    assert (info.format, info.width, info.height) == (fmt, 37, 11)


@pytest.mark.parametrize("make", [png_bomb, jpeg_bomb, gif_bomb, bmp_bomb, webp_bomb])
def test_an_image_bomb_is_refused_from_its_header(make):
    data = make()
    assert len(data) < 4096  # a small file that declares 400 million pixels
    with pytest.raises(ImageError, match=r"is 20000x20000 pixels, more than the limit"):
        check_image(data)


def test_the_limits_in_bytes_and_pixels_are_the_callers():
    data = png_bytes(64, 64)
    check_image(data)
    with pytest.raises(ImageError, match=r"more than the 0\.0 MB an image may be"):
        check_image(data, ImageLimits(max_bytes=100))
    with pytest.raises(ImageError, match=r"64x64 pixels, more than the limit of 32 pixels a side"):
        check_image(data, ImageLimits(max_side=32))
    with pytest.raises(ImageError, match=r"64x64 pixels"):
        check_image(data, ImageLimits(max_pixels=64 * 63))


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (png_bytes()[:-20], "PNG image is truncated"),
        (png_bytes()[:30], "PNG image is truncated"),
        (png_damaged(), "PNG image is damaged: its 'IDAT' chunk fails its checksum"),
        (qt_image_bytes("JPEG")[:-40], "JPEG image is truncated (no end-of-image marker)"),
        (qt_image_bytes("JPEG")[:100], "JPEG image is truncated"),
        (gif_bytes()[:-30], "GIF image is truncated"),
        (bmp_bytes()[:-100], "BMP image is truncated (in its pixels)"),
        (qt_image_bytes("WEBP")[:-10], "WebP image is truncated"),
        (b"", "the image is empty"),
        (b"#!/bin/sh\necho hello\n", "not an image Callisto can read"),
        (b"%PDF-1.7\n" + b"x" * 200, "not an image Callisto can read"),
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 40, "PNG image is damaged: it does not begin with an IHDR"),
    ],
)
def test_a_truncated_damaged_or_foreign_file_is_a_clear_error(data, words):
    with pytest.raises(ImageError) as err:
        check_image(data)
    assert words in str(err.value)
    assert str(err.value)[0].islower() and "\n" not in str(err.value)  # one sentence, for any front end


def test_a_model_without_projector_names_what_is_missing(tmp_path):
    model, projector = write_tiny_vision_pair(tmp_path / "pair")
    assert find_projector(model) == projector
    alone = tmp_path / "alone"
    alone.mkdir()
    text_only = alone / model.name
    text_only.write_bytes(model.read_bytes())
    assert find_projector(text_only) is None
    with pytest.raises(
        NoProjectorError, match=r"^this model has no vision projector \(mmproj\): tiny-vision"
    ):
        require_projector(find_projector(text_only), "tiny-vision")


@pytest.mark.parametrize(
    ("names", "model", "expected"),
    [
        # one model's folder (several quantisations): its projector, whatever its name
        (["Qwen2.5-VL-7B-Q4_K_M.gguf", "Qwen2.5-VL-7B-Q8_0.gguf", "mmproj-F16.gguf"], 0, "mmproj-F16.gguf"),
        (["model-00001-of-00002.gguf", "model-00002-of-00002.gguf", "mmproj.gguf"], 0, "mmproj.gguf"),
        # a flat folder of several models: only a projector named after the model
        (
            ["gemma-3-4b-it-Q4_K_M.gguf", "llama-3.2-1b-Q4_K_M.gguf", "mmproj-gemma-3-4b-it-f16.gguf"],
            0,
            "mmproj-gemma-3-4b-it-f16.gguf",
        ),
        (["gemma-3-4b-it-Q4_K_M.gguf", "llama-3.2-1b-Q4_K_M.gguf", "mmproj-gemma-3-4b-it-f16.gguf"], 1, None),
        (["qwen3-8b-Q4_K_M.gguf", "smollm2-135m.gguf", "mmproj-F16.gguf"], 0, None),
        # several projectors: the one named after the model
        (
            ["a-vl-Q4_0.gguf", "b-vl-Q4_0.gguf", "mmproj-a-vl-f16.gguf", "mmproj-b-vl-f16.gguf"],
            1,
            "mmproj-b-vl-f16.gguf",
        ),
    ],
)
def test_a_projector_pairs_with_its_own_model_only(tmp_path, names, model, expected):
    for n in names:
        (tmp_path / n).write_bytes(b"GGUF")
    found = find_projector(tmp_path / names[model])
    assert (found.name if found is not None else None) == expected


# -- libmtmd: the tiny vision pair in this process ------------------------------------------------------


@pytest.fixture(scope="module")
def vision(tmp_path_factory):
    if not HAVE_MTMD:
        pytest.skip(WHY_NOT)
    model_path, projector_path = write_tiny_vision_pair(tmp_path_factory.mktemp("vision"))
    model = load_model(model_path, n_ctx=512, n_threads=1, isolate=False)
    # media ids are not tokens: n-gram drafting must not propose them (the integration's part,
    # see app.engine.vision); this model drafts nothing
    model.backend.ngram_draft = False
    try:
        llm = model.backend.llm
        projector = Projector.load(projector_path, llm, n_threads=1)
        try:
            yield SimpleNamespace(model=model, llm=llm, projector=projector, folder=model_path.parent)
        finally:
            projector.close()
    finally:
        model.close()


@pytest.fixture
def fresh(vision):
    vision.model.reset_cache()
    return vision


def _last_logits(llm):
    import llama_cpp
    import numpy as np

    ptr = llama_cpp.llama_get_logits_ith(llm._ctx.ctx, -1)
    return np.ctypeslib.as_array(ptr, shape=(llm.n_vocab(),)).copy()


@needs_mtmd
def test_an_image_is_evaluated_then_a_reply_streams(fresh):
    llm, projector = fresh.llm, fresh.projector
    text_only = projector.tokenize(turn("Look: ."), [])
    prompt = projector.tokenize(turn(f"Look: {MARK}."), [png_bytes()])
    assert prompt.n_images == 1 and prompt.n_image_tokens == N_IMAGE_TOKENS
    assert len(prompt.ids) == len(text_only.ids) + N_IMAGE_TOKENS
    # what the context meter counts, from the header's size alone (nothing decoded)
    assert projector.image_tokens(24, 16) == projector.image_tokens(3000, 2000) == N_IMAGE_TOKENS

    ev = projector.evaluate(prompt)
    # every position but the last token (the token loop reads it for its logits)
    assert ev.n_past == llm.n_tokens == len(prompt.ids) - 1
    assert (ev.images, ev.image_tokens, ev.reused) == (1, N_IMAGE_TOKENS, 0)
    assert ev.text_tokens == len(text_only.ids) - 1
    image = next(s for s in prompt.segments if s.kind == "image")
    recorded = [int(t) for t in llm.input_ids[image.start : image.end]]
    assert len(recorded) == N_IMAGE_TOKENS and all(is_media_id(t) for t in recorded)

    gen = generate(fresh.model, prompt.ids, max_tokens=8, sampling=GREEDY)
    pieces = list(gen)
    assert gen.result.prompt_tokens_evaluated == 1  # the image and the text before were already read
    assert gen.result.generated_tokens >= 1 and "".join(pieces) == gen.result.text
    prompt.close()
    text_only.close()


@needs_mtmd
def test_the_image_changes_what_the_model_reads(fresh):
    projector, llm = fresh.projector, fresh.llm

    def logits_after(image: bytes):
        fresh.model.reset_cache()
        prompt = projector.tokenize(turn(f"What is this? {MARK}"), [image])
        ev = projector.evaluate(prompt, keep_last=0)
        assert ev.n_past == len(prompt.ids) and ev.images == 1
        prompt.close()
        return _last_logits(llm)

    a, b, a_again = (
        logits_after(png_bytes(24, 16)),
        logits_after(png_bytes(40, 40)),
        logits_after(png_bytes(24, 16)),
    )
    assert not (abs(a - b) < 1e-6).all()  # the embeddings reached the model
    assert (abs(a - a_again) < 1e-4).all()  # and the same image reads the same


@needs_mtmd
@pytest.mark.parametrize(
    "make",
    [png_bytes, bmp_bytes, gif_bytes, lambda: qt_image_bytes("JPEG")],
    ids=["png", "bmp", "gif", "jpeg"],
)
def test_each_format_llama_cpp_decodes_becomes_the_image_tokens(fresh, make):
    prompt = fresh.projector.tokenize(turn(f"{MARK} and?"), [make()])
    try:
        assert prompt.n_image_tokens == N_IMAGE_TOKENS
        assert fresh.projector.evaluate(prompt).image_tokens == N_IMAGE_TOKENS
    finally:
        prompt.close()


@needs_mtmd
def test_the_kv_prefix_holding_an_image_is_reused_on_the_next_turn(fresh):
    projector = fresh.projector
    first = turn(f"Look: {MARK}.")
    p1 = projector.tokenize(first, [png_bytes()])
    projector.evaluate(p1)
    gen = generate(fresh.model, p1.ids, max_tokens=4, sampling=GREEDY)
    reply = "".join(gen)
    image = next(s for s in p1.segments if s.kind == "image")

    second = first + reply + "<|im_end|>\n" + turn("And now?")
    p2 = projector.tokenize(second, [png_bytes()])
    ev = projector.evaluate(p2)
    assert ev.images == 0 and ev.image_tokens == 0  # neither encoded nor decoded again
    assert ev.reused >= len(p1.ids) - 1 > image.end
    assert ev.n_past == len(p2.ids) - 1

    # another image at the same place: the prefix up to it is kept, the image is read
    p3 = projector.tokenize(second, [png_bytes(40, 40)])
    ev3 = projector.evaluate(p3)
    assert (ev3.reused, ev3.images, ev3.image_tokens) == (image.start, 1, N_IMAGE_TOKENS)
    for p in (p1, p2, p3):
        p.close()


@needs_mtmd
@pytest.mark.parametrize(
    ("make", "words"),
    [
        (png_damaged, "PNG image is damaged: its 'IDAT' chunk fails its checksum"),
        (png_undecodable, "PNG image is damaged: llama.cpp's decoder could not read its pixels"),
        (lambda: qt_image_bytes("JPEG")[:-40], "JPEG image is truncated"),
        (png_bomb, "20000x20000 pixels, more than the limit"),
        (lambda: b"#!/bin/sh\necho hello\n", "not an image Callisto can read"),
        (lambda: qt_image_bytes("WEBP"), "WebP images cannot be decoded by llama.cpp's image decoder"),
    ],
    ids=["damaged-png", "undecodable-png", "truncated-jpeg", "bomb", "not-an-image", "webp"],
)
def test_a_bad_image_is_a_clear_error_and_the_context_stays_usable(fresh, make, words):
    projector, llm = fresh.projector, fresh.llm
    good = projector.tokenize(turn(f"First {MARK}"), [png_bytes()])
    projector.evaluate(good)
    held = [int(t) for t in llm.input_ids[: llm.n_tokens]]

    with pytest.raises(ImageError) as err:
        projector.tokenize(turn(f"First {MARK} then {MARK}"), [png_bytes(), make()])
    assert words in str(err.value)
    assert [int(t) for t in llm.input_ids[: llm.n_tokens]] == held  # nothing was evaluated

    ev = projector.evaluate(good)  # the same prompt again: all of it is still in the KV
    assert ev.reused == len(held) and ev.images == 0
    gen = generate(fresh.model, good.ids, max_tokens=4, sampling=GREEDY)
    list(gen)
    assert gen.result.finish_reason in ("stop", "length")
    good.close()


@needs_mtmd
def test_markers_and_images_must_agree(fresh):
    with pytest.raises(ImageError, match=r"has 2 image place\(s\) .* but 1 image\(s\) were given"):
        fresh.projector.tokenize(turn(f"{MARK} and {MARK}"), [png_bytes()])
    # a caller's own marker keeps libmtmd's out of user text
    prompt = fresh.projector.tokenize(turn(f"literal {MARK} and [img]"), [png_bytes()], marker="[img]")
    assert prompt.n_images == 1
    prompt.close()


@needs_mtmd
def test_images_that_do_not_fit_the_context_are_refused_before_anything_runs(fresh):
    llm = fresh.llm
    n = llm.n_ctx() // N_IMAGE_TOKENS + 1
    prompt = fresh.projector.tokenize(turn(MARK * n), [png_bytes()] * n)
    before = llm.n_tokens
    with pytest.raises(ContextOverflowError, match=r"images included"):
        fresh.projector.evaluate(prompt)
    assert llm.n_tokens == before
    prompt.close()


@needs_mtmd
def test_a_projector_for_another_model_or_no_projector_at_all_is_refused(vision, tmp_path):
    wrong = write_tiny_projector(tmp_path / "mmproj-wrong.gguf", text_embd=32)  # the model's n_embd is 64
    with pytest.raises(ModelLoadError, match=r"libmtmd could not load the vision projector"):
        Projector.load(wrong, vision.llm, n_threads=1)
    junk = tmp_path / "mmproj-junk.gguf"
    junk.write_bytes(b"not a gguf at all")
    with pytest.raises(ModelLoadError, match=r"not a GGUF file"):
        Projector.load(junk, vision.llm, n_threads=1)


@needs_mtmd
def test_a_closed_projector_says_so(vision):
    projector = Projector.load(vision.folder / "mmproj-tiny-vision.gguf", vision.llm, n_threads=1)
    projector.close()
    projector.close()  # twice is fine
    with pytest.raises(ImageError, match=r"is closed"):
        projector.tokenize(turn(MARK), [png_bytes()])
