"""The models Jan keeps on this machine, used where they are (Qt-free), as Ollama's are
(``ollama_store``): a person who switches from Jan does not download them again.

Jan keeps each model in its data folder (``app.storage.jan.jan_data_folder``) as
``llamacpp/models/<id>/model.gguf``, the id a name or "org/name" (a folder each), with a
``model.yml`` beside it whose ``model_path`` names the GGUF (relative to the data folder; a model
imported from elsewhere may name its own file) and whose ``mmproj_path`` names a vision model's
projector. Each is linked under its id (``ollama_store.link_ollama_models``: "org/name" is listed
as "org-name"); Jan's files are never written."""

from __future__ import annotations

import os
from pathlib import Path

from app.engine.models.ollama_store import OllamaModel, is_gguf

__all__ = ["jan_models"]

MAX_YML_BYTES = 64 * 1024  # a model.yml is a few lines: a bigger file is not read


def _fields(yml: Path) -> dict[str, str]:
    """The top-level ``key: value`` lines of a ``model.yml`` (all Jan writes there that is read
    here), their quotes taken off; {} for none or a file that cannot be read."""
    try:
        if yml.stat().st_size > MAX_YML_BYTES:
            return {}
        lines = yml.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    fields: dict[str, str] = {}
    for line in lines:
        key, sep, value = line.partition(":")
        if sep and key and not key[0].isspace() and not key.startswith("#"):
            fields[key.strip()] = value.strip().strip("'\"")
    return fields


def _file(data: Path, folder: Path, value: str | None) -> Path | None:
    """The GGUF a ``model.yml`` path names (relative to the data folder, else to the model's
    folder, or absolute), when it is one."""
    if not value:
        return None
    given = Path(value).expanduser()
    for path in [given] if given.is_absolute() else [data / given, folder / given]:
        if path.is_file() and is_gguf(path):
            return path
    return None


def jan_models(data: str | os.PathLike[str]) -> list[OllamaModel]:
    """Every model of Jan's data folder ``data`` whose GGUF is there, named by its id, with its
    projector when it has one. A folder whose model is gone or no GGUF is passed over."""
    base = Path(data)
    root = base / "llamacpp" / "models"
    try:
        folders = sorted({p.parent for name in ("model.yml", "model.gguf") for p in root.rglob(name)})
    except OSError:
        return []
    found: list[OllamaModel] = []
    for folder in folders:
        fields = _fields(folder / "model.yml")
        own = folder / "model.gguf"
        model = _file(base, folder, fields.get("model_path")) or (
            own if own.is_file() and is_gguf(own) else None
        )
        if model is None:
            continue
        projector = _file(base, folder, fields.get("mmproj_path")) or _file(base, folder, "mmproj.gguf")
        found.append(OllamaModel(folder.relative_to(root).as_posix(), model, projector))
    return sorted(found, key=lambda m: m.name.lower())
