"""Images through the engine (#30): a user ``Message`` with an image, rendered (``render_prompt``:
an ``ImagePrompt``) and answered by the tiny vision pair (``tests.support.tiny_vision``) in its
engine process, on the one-sequence path and on the scheduler's slots.

* the image's tokens are evaluated (the eval counter grows by at least ``N_IMAGE_TOKENS``) and the
  reply streams; ``LoadedModel.tokenize`` / ``count_tokens`` count the image's positions;
* the next turn keeps the KV prefix that holds the image (it is not evaluated again);
* a corrupt, huge or bomb image is an ``ImageError`` raised in the engine process, which lives on
  and answers the next text request;
* a model without a projector is a ``NoProjectorError`` naming the model and the mmproj file it
  lacks, before anything is evaluated;
* ``LoadSettings.mmproj``: beside the model (None), a path, or ``"none"``;
* rendering places images by a per-render mark that user text cannot forge; n-gram drafts never
  propose an image's positions.

The libmtmd tests skip only when llama-cpp-python was built without libmtmd.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from app.engine.errors import ImageError, NoProjectorError
from app.engine.generation import generate
from app.engine.llm import LoadedModel, LoadSettings, load_model
from app.engine.messages import Message
from app.engine.render import render_messages, render_prompt
from app.engine.speculative import NgramDrafter
from app.engine.vision import DEFAULT_MARKER, ImagePrompt, media_id, mtmd_available
from tests.support.tiny_vision import CHATML, N_IMAGE_TOKENS, png_bytes, write_tiny_vision_pair

HAVE_MTMD, WHY_NOT = mtmd_available()
needs_mtmd = pytest.mark.skipif(not HAVE_MTMD, reason=WHY_NOT)
GREEDY = {"temperature": 0.0}


@pytest.fixture(scope="module")
def pair(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    return write_tiny_vision_pair(tmp_path_factory.mktemp("vision"))


def _load(model: Path, **settings: object) -> LoadedModel:
    return load_model(model, settings=LoadSettings(n_ctx=512, n_threads=1, **settings))  # type: ignore[arg-type]


def _answer(model: LoadedModel, msgs: list[Message], max_tokens: int = 4) -> tuple[list[str], object]:
    prompt = render_prompt(model, msgs).text
    gen = generate(model, prompt, max_tokens=max_tokens, sampling=GREEDY)
    pieces = list(gen)
    return pieces, gen.result


def _turns(model: LoadedModel) -> None:
    """First turn with an image, then a second turn: the image's tokens are read once."""
    assert model.vision and model.projector_path is not None
    msgs = [Message("user", "What is in the picture?", images=[png_bytes()])]
    prompt = render_prompt(model, msgs).text
    assert isinstance(prompt, ImagePrompt) and len(prompt.images) == 1
    counted = model.count_tokens(prompt)
    text_only = len(model.tokenize(render_prompt(model, [Message("user", "What is in the picture?")]).text))
    assert counted == text_only + N_IMAGE_TOKENS

    before = model.total_eval
    pieces, first = _answer(model, msgs)
    assert first.prompt_tokens == counted  # type: ignore[attr-defined]
    assert first.prompt_tokens_evaluated >= N_IMAGE_TOKENS + 1  # type: ignore[attr-defined]
    assert model.total_eval - before >= counted  # the image's embeddings were decoded
    assert first.generated_tokens >= 1 and "".join(pieces) == first.text  # type: ignore[attr-defined]

    msgs += [Message("assistant", first.text or "ok"), Message("user", "And the colours?")]  # type: ignore[attr-defined]
    before = model.total_eval
    _, second = _answer(model, msgs)
    new_text = second.prompt_tokens - first.prompt_tokens  # type: ignore[attr-defined]
    # the first prompt (image included) is the reused prefix: only the new text is read
    reused = second.prompt_tokens - second.prompt_tokens_evaluated  # type: ignore[attr-defined]
    assert reused >= first.prompt_tokens - 1  # type: ignore[attr-defined]
    assert second.prompt_tokens_evaluated <= new_text + 1  # type: ignore[attr-defined]
    assert model.total_eval - before <= new_text + 1 + second.generated_tokens  # type: ignore[attr-defined]


@needs_mtmd
def test_engine_process_answers_an_image_and_reuses_its_prefix(pair: tuple[Path, Path]) -> None:
    model = _load(pair[0], parallel=1)
    try:
        assert model.isolated
        _turns(model)
    finally:
        model.close()


@needs_mtmd
def test_scheduler_slots_answer_an_image_and_reuse_its_prefix(pair: tuple[Path, Path]) -> None:
    model = _load(pair[0], parallel=2)
    try:
        assert model.backend.parallel == 2
        _turns(model)
        # a text request on another slot meanwhile is untouched by the image
        _, res = _answer(model, [Message("user", "hello")])
        assert res.generated_tokens >= 1  # type: ignore[attr-defined]
    finally:
        model.close()


@needs_mtmd
def test_image_on_a_slot_changes_what_the_model_reads(pair: tuple[Path, Path]) -> None:
    """The image's embeddings reach the slot's sequence: with a different image, the first greedy
    token's logits differ (compared through the same prompt text)."""
    model = _load(pair[0], parallel=2)
    try:
        outs = set()
        for w, h in ((24, 16), (8, 40), (40, 40)):
            img = png_bytes(w, h)
            _, res = _answer(model, [Message("user", "x", images=[img])], max_tokens=6)
            outs.add(tuple(res.tokens))  # type: ignore[attr-defined]
        assert len(outs) > 1
    finally:
        model.close()


def _bad_images() -> dict[str, bytes]:
    good = png_bytes()
    bomb = bytearray(good)
    bomb[16:24] = (20000).to_bytes(4, "big") * 2  # the header declares 20000x20000 (CRC now wrong too)
    return {
        "corrupt": good[: len(good) // 2],
        "not an image": b"hello, this is text" * 10,
        "bomb": bytes(bomb),
        "huge": good + b"\0" * (21 * 1024 * 1024),
    }


@needs_mtmd
@pytest.mark.parametrize("parallel", [1, 2])
def test_bad_images_are_clear_errors_and_the_engine_lives(pair: tuple[Path, Path], parallel: int) -> None:
    model = _load(pair[0], parallel=parallel)
    try:
        pid = model.engine.call("ping")
        for name, data in _bad_images().items():
            msgs = [Message("user", "look", images=[data])]
            before = model.total_eval
            with pytest.raises(ImageError) as err:
                _answer(model, msgs)
            words = str(err.value)
            assert "image" in words and "\n" not in words, name
            assert model.total_eval == before, name  # refused before anything was evaluated
        _, res = _answer(model, [Message("user", "hello")])
        assert res.generated_tokens >= 1  # type: ignore[attr-defined]
        assert model.engine.call("ping") == pid  # the same engine process answered
    finally:
        model.close()


@needs_mtmd
def test_model_without_projector_names_what_is_missing(pair: tuple[Path, Path], tmp_path: Path) -> None:
    alone = tmp_path / "lonely-vision.gguf"
    shutil.copy(pair[0], alone)  # no mmproj beside it
    for path, settings in ((alone, {}), (pair[0], {"mmproj": "none"})):
        model = _load(path, **settings)
        try:
            assert not model.vision and model.projector_path is None
            msgs = [Message("user", "look", images=[png_bytes()])]
            prompt = render_prompt(model, msgs).text
            before = model.total_eval
            with pytest.raises(NoProjectorError) as err:
                generate(model, prompt, max_tokens=2)
            assert model.name in str(err.value) and "mmproj" in str(err.value)
            with pytest.raises(NoProjectorError):
                model.count_tokens(prompt)
            assert model.total_eval == before
            _, res = _answer(model, [Message("user", "hello")])  # text still works
            assert res.generated_tokens >= 1  # type: ignore[attr-defined]
        finally:
            model.close()


@needs_mtmd
def test_mmproj_setting_names_a_projector_elsewhere(pair: tuple[Path, Path], tmp_path: Path) -> None:
    alone = tmp_path / "model-only.gguf"
    shutil.copy(pair[0], alone)
    model = load_model(
        alone, settings=LoadSettings(n_ctx=512, n_threads=1, mmproj=str(pair[1])), isolate=False
    )
    try:
        assert model.vision and model.projector_path == str(pair[1])
        _, res = _answer(model, [Message("user", "x", images=[png_bytes()])])
        assert res.prompt_tokens_evaluated >= N_IMAGE_TOKENS  # type: ignore[attr-defined]
    finally:
        model.close()


# -- rendering and drafting: no libmtmd needed ------------------------------------------------------


def test_render_places_images_before_the_text_and_user_text_cannot_forge_one() -> None:
    img = png_bytes()
    msgs = [
        Message("system", "sys"),
        Message("user", f"two {DEFAULT_MARKER} markers \x00image-00-0\x00 typed", images=[img, b"second"]),
    ]
    r = render_messages(CHATML, msgs)
    assert isinstance(r.text, ImagePrompt) and r.images == 2
    parts = r.text.parts
    assert parts[1] == img and parts[2] == b"second"
    assert parts[0].endswith("<|im_start|>user\n")  # type: ignore[union-attr]
    assert isinstance(parts[3], str) and parts[3].startswith("two <__media__> markers")
    assert len(r.text.images) == 2  # the typed markers placed nothing
    # Continue: the reply so far is appended, the images stay
    more = r.text + "partial"
    assert isinstance(more, ImagePrompt) and more.images == r.text.images and more.endswith("partial")
    plain = render_messages(CHATML, [Message("user", "hi")])
    assert not isinstance(plain.text, ImagePrompt) and plain.images == 0


def test_image_prompt_pickles_with_its_images() -> None:
    import pickle

    p = ImagePrompt(["a", b"\x89PNG", "b"])
    q = pickle.loads(pickle.dumps(p))
    assert isinstance(q, ImagePrompt) and q.parts == p.parts and str(q) == f"a{DEFAULT_MARKER}b"


def test_ngram_drafts_never_propose_an_image() -> None:
    m = media_id(b"img")
    d = NgramDrafter([5, 6, m, m, m, 7, 5, 6])
    assert d.propose(4) == ([], 0)  # 5 6 was followed by the image: nothing to draft
    d = NgramDrafter([5, 6, 8, m, m, 5, 6])
    assert d.propose(4) == ([8], 2)  # up to the image, not into it


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG whose chunks are whole and checksummed but whose pixels are missing: the header
    check passes, the decoder would fail (the tests that must refuse it before decoding use it)."""
    import struct
    import zlib

    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", b"") + chunk(b"IEND", b"")


@needs_mtmd
def test_too_many_images_are_refused_from_their_headers(pair: tuple[Path, Path]) -> None:
    from app.engine.errors import ContextOverflowError

    model = _load(pair[0], parallel=1)
    try:
        before = model.total_eval
        many = [Message("user", "x", images=[png_bytes()] * (512 // N_IMAGE_TOKENS + 1))]
        with pytest.raises(ContextOverflowError, match="images included"):
            _answer(model, many)
        big = [Message("user", "x", images=[_png_header_only(4000, 4000)] * 7)]
        with pytest.raises(ImageError, match="million pixels together"):
            _answer(model, big)
        assert model.total_eval == before
        _, res = _answer(model, [Message("user", "hello")])
        assert res.generated_tokens >= 1  # type: ignore[attr-defined]
    finally:
        model.close()


@needs_mtmd
def test_engine_host_runs_an_image_turn_with_the_models_settings(pair: tuple[Path, Path]) -> None:
    """What the window and the server use: the host loads the pair (its projector found beside the
    model) in an engine process with slots, and a job answers an image; a bad image fails that job
    alone."""
    from app.engine.host import EngineHost

    host = EngineHost(settings=LoadSettings(n_ctx=512, n_threads=1, parallel=2))
    host.start()
    try:

        def turn(images: list[bytes]):  # type: ignore[no-untyped-def]
            def run(model: LoadedModel | None):  # type: ignore[no-untyped-def]
                assert model is not None and model.vision
                before = model.total_eval
                _, res = _answer(model, [Message("user", "look", images=images)])
                return res, model.total_eval - before

            return host.call(run, model=pair[0])

        res, evaluated = turn([png_bytes()])
        assert evaluated >= N_IMAGE_TOKENS and res.generated_tokens >= 1
        with pytest.raises(ImageError):
            turn([b"GIF89a broken"])
        res, _ = turn([])
        assert res.generated_tokens >= 1
    finally:
        host.stop(timeout=30)
