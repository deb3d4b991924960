"""Issue 30: ``chat --image FILE`` (and ``--mmproj``) in the CLI, run as a real subprocess: the tiny
vision model (``tests.support.tiny_vision``: a random-weight llama and a LLaVA MLP projector beside
it) reads the images through the engine process and answers; ``--json`` describes what was sent;
``--save`` keeps the images with the conversation; a file that is missing or not an image is an
error before anything loads; a model without a projector says so and exits non-zero."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from app.engine.vision import mtmd_available
from app.storage.history import History
from app.storage.settings import Settings, save_settings
from tests.support.tiny_vision import N_IMAGE_TOKENS, gif_bytes, png_bytes, write_tiny_vision_pair
from tests.test_cli import run_app

needs_mtmd = pytest.mark.skipif(not mtmd_available()[0], reason=mtmd_available()[1] or "libmtmd")

PNG, GIF = png_bytes(), gif_bytes()


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[Path, Path]:
    return write_tiny_vision_pair(tmp_path_factory.mktemp("cli-vision"))


@pytest.fixture
def images(tmp_path) -> dict[str, Path]:
    files = {"png": tmp_path / "picture.png", "gif": tmp_path / "drawing.gif"}
    files["png"].write_bytes(PNG)
    files["gif"].write_bytes(GIF)
    return files


def chat(model: Path, *flags: str) -> tuple[int, list[dict], str]:
    proc = run_app(
        "chat",
        "--model",
        str(model),
        "--tools",
        "none",
        "--threads",
        "1",
        "--n-ctx",
        "512",
        "--max-tokens",
        "4",
        "--temperature",
        "0",
        "--json",
        *flags,
        "What is in the picture?",
    )
    return proc.returncode, [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


def _described(data: bytes, path: Path, fmt: str) -> dict:
    return {
        "file": str(path),
        "bytes": len(data),
        "sha256": hashlib.sha256(data).hexdigest(),
        "format": fmt,
        "width": 24,
        "height": 16,
    }


@needs_mtmd
def test_the_images_are_read_through_the_engine_the_model_answers_and_save_keeps_them(pair, images, tmp_path):
    model, _projector = pair
    # a grammar holds the random model to three letters, so that it answers whatever it would sample
    grammar = _write(tmp_path / "three.gbnf", b"root ::= [a-z] [a-z] [a-z]\n")
    rc, events, err = chat(
        model,
        "--grammar-file",
        str(grammar),
        "--image",
        str(images["png"]),
        "--image",
        str(images["gif"]),
        "--save",
    )
    assert rc == 0, err
    assert events[0] == {
        "type": "user",
        "content": "What is in the picture?",
        "images": [_described(PNG, images["png"], "png"), _described(GIF, images["gif"], "gif")],
    }
    done = events[-1]
    assert done["type"] == "done" and done["finish_reason"] == "stop", done
    reply = "".join(e["text"] for e in events if e["type"] == "text")
    assert len(reply) == 3 and reply.isalpha() and done["generated_tokens"] == 3
    # the images' tokens were evaluated: the same prompt without them is two images shorter
    rc, plain, err = chat(model, "--grammar-file", str(grammar))
    assert rc == 0, err
    assert plain[0]["type"] != "user"  # no image, no user event: the stream is as it was
    assert done["prompt_tokens"] - plain[-1]["prompt_tokens"] == 2 * N_IMAGE_TOKENS
    with History() as h:
        (conv,) = h.list_conversations()
        user = h.load_conversation(conv.id).messages[0]
        assert (user.role, user.content, user.images) == ("user", "What is in the picture?", [PNG, GIF])
        assert h.load_conversation(conv.id).messages[-1].content == reply


@needs_mtmd
def test_mmproj_chooses_the_projector(pair, images, tmp_path):
    model, projector = pair
    alone = tmp_path / "alone" / "tiny-vision.gguf"  # the model without its projector beside it
    alone.parent.mkdir()
    alone.write_bytes(model.read_bytes())
    rc, events, err = chat(alone, "--mmproj", str(projector), "--image", str(images["png"]))
    assert rc == 0, err
    assert events[-1]["finish_reason"] in ("stop", "length") and events[-1]["prompt_tokens"] > N_IMAGE_TOKENS


def test_a_model_without_a_projector_names_what_is_missing_and_exits_non_zero(pair, images, tiny_gguf):
    """The engine's NoProjectorError, in the done event (``--json``) and on stderr; the user event
    still says what was sent (its images described, never their bytes)."""
    text_only = tiny_gguf()
    for model, flags in ((text_only, ()), (pair[0], ("--mmproj", "none"))):
        rc, events, err = chat(model, *flags, "--image", str(images["png"]))
        assert rc == 1, err
        assert events[0]["images"] == [_described(PNG, images["png"], "png")]
        done = events[-1]
        assert done["finish_reason"] == "error" and "no vision projector (mmproj)" in done["error"], done
        assert "cannot read images" in done["error"]
        proc = run_app(
            "chat", "--model", str(model), "--tools", "none", *flags, "--image", str(images["png"]), "Hi"
        )
        assert proc.returncode == 1 and "no vision projector (mmproj)" in proc.stderr, proc.stderr


@pytest.mark.parametrize(
    ("make", "flag_error"),
    [
        (lambda d: d / "missing.png", "--image {path}: cannot read the file: No such file"),
        (lambda d: d, "--image {path}: cannot read the file: not a regular file"),
        (lambda d: _write(d / "cut.png", PNG[:60]), "--image {path}: the PNG image is truncated"),
        (lambda d: _write(d / "notes.png", b"just some text\n"), "--image {path}: the file is not an image"),
        (lambda d: _write(d / "empty.png", b""), "--image {path}: the image is empty"),
    ],
    ids=["missing", "folder", "truncated", "not-an-image", "empty"],
)
def test_an_image_file_that_cannot_be_used_is_an_error_before_anything_loads(tmp_path, make, flag_error):
    path = make(tmp_path)
    # the model does not exist: the image's error comes first, before any load
    proc = run_app("chat", "--model", str(tmp_path / "no-such-model.gguf"), "--image", str(path), "Hi")
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith("error: " + flag_error.format(path=path)), proc.stderr
    assert "no-such-model" not in proc.stderr and proc.stdout == ""


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


def test_flags_that_cannot_be_honoured_are_refused_before_loading(tmp_path, images):
    missing = tmp_path / "no-such-model.gguf"
    proc = run_app("chat", "--model", str(missing), "--mmproj", str(tmp_path / "nope.gguf"), "Hi")
    assert proc.returncode == 2 and "--mmproj" in proc.stderr and "no such file" in proc.stderr, proc.stderr
    remote = ("--endpoint", "http://127.0.0.1:9", "--model", "m")
    proc = run_app("chat", *remote, "--image", str(images["png"]), "Hi")
    assert proc.returncode == 2 and "--image is for local models" in proc.stderr, proc.stderr
    # --save: an image over the history's bound (images.max_bytes) is refused before the model loads
    settings = Settings()
    settings.images.max_bytes = 1024
    save_settings(settings)
    big = _write(tmp_path / "big.png", png_bytes(40, 40))
    assert len(big.read_bytes()) > 1024
    proc = run_app("chat", "--model", str(missing), "--save", "--image", str(big), "Hi")
    assert proc.returncode == 2 and "images.max_bytes" in proc.stderr, proc.stderr
    assert "no-such-model" not in proc.stderr
    with History() as h:
        assert h.list_conversations() == []
