"""An Ollama model store written as Ollama keeps one (``<root>/manifests/<registry>/<namespace>/<model>/<tag>``
naming blobs by digest under ``<root>/blobs``), made for the tests that use Ollama's models."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

__all__ = ["add_ollama_model"]


def _blob(root: Path, data: bytes, media_type: str) -> dict:
    digest = "sha256:" + hashlib.sha256(data).hexdigest()
    (root / "blobs").mkdir(parents=True, exist_ok=True)
    (root / "blobs" / digest.replace(":", "-")).write_bytes(data)
    return {"mediaType": media_type, "digest": digest, "size": len(data)}


def add_ollama_model(
    root: Path,
    where: str,
    model: bytes,
    *,
    projector: bytes | None = None,
    params: bytes = b'{"stop": ["<|im_end|>"]}',
    system: bytes | None = None,
    messages: bytes | None = None,
    licenses: tuple[bytes, ...] = (),
) -> Path:
    """Store ``model`` (a GGUF's bytes) as Ollama would under ``where`` ("registry/namespace/model/tag"),
    with a template and parameters layer beside it (and ``projector``'s, and the Modelfile's
    ``system``, ``messages`` and licence layers given); the manifest's path."""
    layers = [
        _blob(root, model, "application/vnd.ollama.image.model"),
        _blob(root, b"{{ .Prompt }}", "application/vnd.ollama.image.template"),
        _blob(root, params, "application/vnd.ollama.image.params"),
    ]
    if projector is not None:
        layers.append(_blob(root, projector, "application/vnd.ollama.image.projector"))
    for data, kind in [(system, "system"), (messages, "messages"), *((lic, "license") for lic in licenses)]:
        if data is not None:
            layers.append(_blob(root, data, f"application/vnd.ollama.image.{kind}"))
    manifest = root / "manifests" / where
    manifest.parent.mkdir(parents=True, exist_ok=True)
    config = _blob(root, b"{}", "application/vnd.docker.container.image.v1+json")
    manifest.write_text(
        json.dumps(
            {
                "schemaVersion": 2,
                "mediaType": "application/vnd.docker.distribution.manifest.v2+json",
                "config": config,
                "layers": layers,
            }
        ),
        encoding="utf-8",
    )
    return manifest
