"""Fixtures for model management: a real local hub (HTTP on 127.0.0.1) serving real tiny GGUFs."""

from __future__ import annotations

import pytest

from app.engine.models.tiny import write_tiny_gguf
from tests.support.fake_hub import FakeHub

TEMPLATE = "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"


@pytest.fixture
def gguf_bytes(tmp_path_factory):
    """A few hundred KB of real GGUF (bigger models: more blocks/width), keyed by seed."""
    folder = tmp_path_factory.mktemp("src")

    def make(seed: int = 0, **kwargs) -> bytes:
        path = write_tiny_gguf(
            folder / f"m{seed}.gguf",
            seed=seed,
            chat_template=TEMPLATE,
            control_tokens=["<|im_start|>", "<|im_end|>"],
            bos=None,
            eos="<|im_end|>",
            **kwargs,
        )
        return path.read_bytes()

    return make


@pytest.fixture
def hub(gguf_bytes):
    h = FakeHub()
    big = gguf_bytes(1, embedding_length=256, feed_forward_length=512)
    h.add_repo(
        "acme/Tiny-Chat-GGUF",
        {
            "Tiny-Chat-Q4_K_M.gguf": gguf_bytes(0),
            "Tiny-Chat-Q8_0.gguf": big,
            # two shards, each a readable GGUF (as gguf-split writes them)
            "split/Tiny-Chat-F16-00001-of-00002.gguf": gguf_bytes(3),
            "split/Tiny-Chat-F16-00002-of-00002.gguf": gguf_bytes(4),
            "README.md": b"# Tiny chat\n",
        },
        downloads=500,
        likes=7,
    )
    h.add_repo("acme/Other-Tiny-GGUF", {"other-Q4_0.gguf": gguf_bytes(2)}, downloads=9000)
    h.add_repo("acme/not-gguf", {"model.safetensors": b"x"}, downloads=10**6, tags=["safetensors"])
    h.start()
    yield h
    h.stop()
