"""The models Ollama keeps on this machine, used where they are (Qt-free): a person who switches
from Ollama does not download them again. Ollama keeps each model as a manifest
(``<models>/manifests/<registry>/<namespace>/<model>/<tag>``, JSON) whose layers name blobs by
digest (``<models>/blobs/sha256-<hex>``); the ``application/vnd.ollama.image.model`` layer is the
GGUF, an ``…image.projector`` layer a vision projector.

:func:`link_ollama_models` gives each one a name Callisto's library lists and loads
(``<dest>/<name>/<name>.gguf``, with ``mmproj-<name>.gguf`` beside it for a projector): a symbolic
link to Ollama's blob, or, where the system allows none (Windows without developer mode), a hard
link. Nothing is copied, and Ollama's files are never written; a model Ollama removes is no longer
listed (its link leads nowhere)."""

from __future__ import annotations

import json
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = [
    "OllamaModel",
    "file_name",
    "is_gguf",
    "link_ollama_models",
    "linked",
    "ollama_models",
    "ollama_models_dir",
]

MODEL_LAYER = "application/vnd.ollama.image.model"
PROJECTOR_LAYER = "application/vnd.ollama.image.projector"
SYSTEM_LAYER = "application/vnd.ollama.image.system"
PARAMS_LAYER = "application/vnd.ollama.image.params"
MESSAGES_LAYER = "application/vnd.ollama.image.messages"
LICENSE_LAYER = "application/vnd.ollama.image.license"
MAX_SETTINGS_BYTES = 1024 * 1024  # a Modelfile's text layer read at most (a licence is ~20 KB)
DEFAULT_REGISTRY, DEFAULT_NAMESPACE = "registry.ollama.ai", "library"
MAX_MANIFEST_BYTES = 1024 * 1024  # a manifest is a few hundred bytes: a bigger file is no manifest


@dataclass(frozen=True)
class OllamaModel:
    """One of Ollama's models: its name as ``ollama list`` shows it, its GGUF blob, and its
    projector's blob (a vision model's), if any; and what its Modelfile set, as Ollama keeps it
    (read, not checked: ``app.server`` checks it as ``/api/create`` does): its ``SYSTEM`` prompt,
    its ``PARAMETER`` values (a JSON object), its ``MESSAGE`` list and its licence texts. Its
    ``TEMPLATE`` is Go's, which Callisto does not run: the GGUF's own template is used."""

    name: str
    model: Path
    projector: Path | None = None
    system: str | None = None
    parameters: Any = None
    messages: Any = None
    license: tuple[str, ...] = ()

    def sets_anything(self) -> bool:
        """Whether its Modelfile sets more than Ollama's template stops (a system prompt, its
        own messages, a sampler value, a context or reply length): worth a made model."""
        params = self.parameters if isinstance(self.parameters, dict) else {}
        return bool(self.system or self.messages or any(k != "stop" for k in params))


def ollama_models_dir(
    env: dict[str, str] | None = None, home: str | os.PathLike[str] | None = None
) -> Path | None:
    """Where Ollama keeps its models: ``OLLAMA_MODELS`` when it is set (Ollama then looks nowhere
    else), else ``~/.ollama/models``, else (Linux, Ollama installed as a service)
    ``/usr/share/ollama/.ollama/models``; None when that holds no ``manifests`` folder."""
    env = dict(os.environ) if env is None else env
    base = Path(home) if home is not None else Path.home()
    if env.get("OLLAMA_MODELS", "").strip():
        places = [Path(env["OLLAMA_MODELS"]).expanduser()]
    else:
        places = [base / ".ollama" / "models"]
        if sys.platform.startswith("linux") and home is None:
            places.append(Path("/usr/share/ollama/.ollama/models"))
    return next((p for p in places if (p / "manifests").is_dir()), None)


def _blob(root: Path, digest: object) -> Path | None:
    """The blob of ``digest`` ("sha256:<hex>"), as Ollama names it now (``sha256-<hex>``) or
    did before (``sha256:<hex>``); None when it is not there or the digest is no digest."""
    if not isinstance(digest, str) or not re.fullmatch(r"sha256[:-][0-9a-fA-F]{64}", digest):
        return None
    for name in (digest.replace(":", "-"), digest.replace("-", ":")):
        path = root / "blobs" / name
        if path.is_file():
            return path
    return None


def _name(parts: tuple[str, ...]) -> str:
    """The model's name as Ollama shows it, from its manifest's path below ``manifests``."""
    *where, model, tag = parts
    if len(where) == 2 and where[0] == DEFAULT_REGISTRY:  # Ollama's own: "llama3.2:3b", "user/model:tag"
        return f"{model}:{tag}" if where[1] == DEFAULT_NAMESPACE else f"{where[1]}/{model}:{tag}"
    return "/".join([*where, model]) + f":{tag}"  # another registry's: "hf.co/user/repo:Q4_K_M"


def is_gguf(path: Path) -> bool:
    """Whether ``path`` begins as a GGUF file does."""
    try:
        with path.open("rb") as f:
            return f.read(4) == b"GGUF"
    except OSError:
        return False


def ollama_models(root: str | os.PathLike[str]) -> list[OllamaModel]:
    """Every model of Ollama's folder ``root`` whose GGUF is there, by name. A manifest that
    cannot be read, names no model layer, or whose blob is gone or no GGUF is passed over (Ollama
    lists it broken too)."""
    base = Path(root)
    found: dict[str, OllamaModel] = {}
    for manifest in sorted((base / "manifests").rglob("*")):
        try:
            if not manifest.is_file() or manifest.stat().st_size > MAX_MANIFEST_BYTES:
                continue
            data = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError):
            continue
        layers = data.get("layers") if isinstance(data, dict) else None
        if not isinstance(layers, list):
            continue
        kinds = {
            layer.get("mediaType"): layer.get("digest")
            for layer in layers
            if isinstance(layer, dict) and isinstance(layer.get("mediaType"), str)
        }
        model = _blob(base, kinds.get(MODEL_LAYER))
        parts = manifest.relative_to(base / "manifests").parts
        if model is None or len(parts) < 2 or not is_gguf(model):
            continue
        projector = _blob(base, kinds.get(PROJECTOR_LAYER))
        name = _name(parts)
        licenses = [
            _text(base, layer.get("digest"))
            for layer in layers
            if isinstance(layer, dict) and layer.get("mediaType") == LICENSE_LAYER
        ]
        found[name] = OllamaModel(
            name,
            model,
            projector if projector is not None and is_gguf(projector) else None,
            system=_text(base, kinds.get(SYSTEM_LAYER)),
            parameters=_json(base, kinds.get(PARAMS_LAYER)),
            messages=_json(base, kinds.get(MESSAGES_LAYER)),
            license=tuple(t for t in licenses if t),
        )
    return sorted(found.values(), key=lambda m: m.name.lower())


def _text(root: Path, digest: object) -> str | None:
    """A Modelfile layer's text (None: no such layer, gone, too large, or no UTF-8 text)."""
    path = _blob(root, digest)
    try:
        if path is None or path.stat().st_size > MAX_SETTINGS_BYTES:
            return None
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _json(root: Path, digest: object) -> Any:
    text = _text(root, digest)
    try:
        return None if text is None else json.loads(text)
    except ValueError:
        return None


def file_name(name: str) -> str:
    """A file name for the model ``name`` ("llama3.2:3b" -> "llama3.2-3b"): what a file system
    allows, the name still read in it."""
    cleaned = re.sub(r'[:/\\<>"|?*\x00-\x1f]+', "-", name).strip(" .-")
    return cleaned[:120] or "ollama-model"


def _same(link: Path, target: Path) -> bool:
    try:
        return link.exists() and os.path.samefile(link, target)
    except OSError:
        return False


def linked(model: OllamaModel, dest: str | os.PathLike[str]) -> bool:
    """Whether ``model`` is linked under ``dest`` already (its link leads to its blob)."""
    stem = file_name(model.name)
    return _same(Path(dest) / stem / f"{stem}.gguf", model.model)


def _link(link: Path, target: Path) -> None:
    """``link`` leading to ``target``: a symbolic link, else a hard link (OSError when neither can
    be made: another drive, a file system with neither)."""
    if link.is_symlink() or link.exists():
        if _same(link, target):
            return
        link.unlink()  # a link left by a model Ollama has since changed
    try:
        link.symlink_to(target)
    except (OSError, NotImplementedError):
        os.link(target, link)


def link_ollama_models(
    models: list[OllamaModel], dest: str | os.PathLike[str]
) -> tuple[list[Path], list[tuple[str, str]]]:
    """Give each of ``models`` its file under ``dest`` (see the module): the model files linked,
    and the models that could not be, with why. Links already there are kept."""
    done: list[Path] = []
    failed: list[tuple[str, str]] = []
    for m in models:
        stem = file_name(m.name)
        folder = Path(dest) / stem
        try:
            folder.mkdir(parents=True, exist_ok=True)
            _link(folder / f"{stem}.gguf", m.model)
            if m.projector is not None:
                _link(folder / f"mmproj-{stem}.gguf", m.projector)
        except OSError as exc:
            failed.append((m.name, exc.strerror or str(exc)))
            continue
        done.append(folder / f"{stem}.gguf")
    return done, failed
