"""The Hugging Face endpoint the hub client and the downloader talk to (a leaf: both import it)."""

from __future__ import annotations

import os

__all__ = ["DEFAULT_ENDPOINT", "default_endpoint"]

DEFAULT_ENDPOINT = "https://huggingface.co"


def default_endpoint() -> str:
    """``HF_ENDPOINT`` (read now), else huggingface.co; without a trailing slash."""
    return (os.environ.get("HF_ENDPOINT") or DEFAULT_ENDPOINT).rstrip("/")
