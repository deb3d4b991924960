"""The local model library: scans folders, imports GGUFs, shows metadata, deletes safely.

* Folders scanned: ``app.storage.paths.models_dir()`` (where downloads go) plus folders the user adds.
* Import *in place* (the path is remembered, nothing is copied) or *by copy* (into the models folder).
* Files already in the Hugging Face cache are listed too (``huggingface_hub.scan_cache_dir``) and
  reused instead of downloading again (:meth:`Library.find_in_hf_cache`).
* A manifest (``data_dir()/model_library.json``) records which files Callisto downloaded or copied:
  only those are deleted without an explicit ``confirm_foreign=True``.
* A corrupt GGUF is listed with its error, never a crash. Split models (``-00001-of-0000N``) are one
  entry (the first shard), sized as the sum of their shards.
* Projectors (``mmproj`` GGUFs: a vision encoder for a text model, recognised by their header's
  ``clip`` architecture / ``general.type = mmproj`` / ``clip.*`` keys, or by ``mmproj`` in the name
  when the header cannot be read) are never listed as chat models: :meth:`Library.scan` pairs each
  model with its projector (:attr:`LocalModel.projector`) and :meth:`Library.projectors` lists them.
  A model's projector is the one the user chose (:meth:`Library.set_projector`, kept in the
  manifest's ``projectors``), else the one beside it (``app.engine.vision.find_projector``);
  :meth:`Library.projector_for` is what a load passes as ``LoadSettings.mmproj``.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.engine.models._gguf import SPLIT_RE, GgufSummary, read_summary, split_parts
from app.engine.models.errors import LibraryError, NotDeletableError
from app.engine.models.estimate import MemoryEstimate, estimate_memory, estimate_remote

__all__ = ["LINKED_APPS", "NO_PROJECTOR", "Library", "LocalModel", "SOURCES", "projector_for"]

SOURCES = ("downloaded", "copied", "uploaded", "imported", "folder", "hf-cache", "ollama", "jan")
#: the apps whose models are linked into a folder of the models folder named after them
#: (``ollama_store``, ``jan_store``): their files are theirs, never deleted here
LINKED_APPS = {"ollama": "Ollama", "jan": "Jan"}

#: the files Callisto put in its folder: deleted without ``confirm_foreign`` ("uploaded": sent by a
#: client of the server, Ollama's ``ollama create`` from a GGUF file)
_OWNED = {"downloaded", "copied", "uploaded"}
#: the projector choice "this model has none" (even with an mmproj beside it): ``LoadSettings.mmproj``'s word
NO_PROJECTOR = "none"


@dataclass(frozen=True)
class LocalModel:
    path: Path  # the file to load (first shard of a split model)
    name: str
    size: int
    source: str  # one of SOURCES
    summary: GgufSummary | None = None
    error: str | None = None
    repo_id: str | None = None
    #: the model's projector (chosen by the user, else the mmproj beside it); None: text only
    projector: Path | None = None
    #: how the projector was found: "chosen" (by the user), "beside" (the model), "none" (the user
    #: chose none), or "" (none found)
    projector_source: str = ""

    @property
    def usable(self) -> bool:
        return self.error is None

    @property
    def is_projector(self) -> bool:
        """An mmproj file (a projector for a text model), not a chat model."""
        if self.summary is not None:
            return self.summary.is_projector
        return "mmproj" in self.path.name.lower()

    @property
    def vision(self) -> bool:
        """A chat model paired with a projector: it can read images."""
        return self.projector is not None and not self.is_projector

    @property
    def deletable_without_confirmation(self) -> bool:
        return self.source in _OWNED

    @property
    def parts(self) -> list[Path]:
        return split_parts(self.path)

    def estimate(
        self, n_ctx: int, *, ram: tuple[int, int] | None = None, kv_type: str = "f16"
    ) -> MemoryEstimate:
        """Memory to run this file at ``n_ctx`` with a ``kv_type`` KV cache (f16, q8_0, q4_0)."""
        s = self.summary
        if s and s.n_layers and s.n_kv_heads and s.head_dim:
            return estimate_memory(
                weights_bytes=self.size,
                n_layers=s.n_layers,
                n_kv_heads=s.n_kv_heads,
                head_dim=s.head_dim,
                n_ctx=n_ctx,
                ram=ram,
                kv_type=kv_type,
            )
        return estimate_remote(self.size, s.quantization if s else None, n_ctx, ram=ram, kv_type=kv_type)


def _key(path: Path) -> str:
    return str(Path(path).expanduser().resolve())


def projector_for(model_path: str | Path, library: Library | None = None) -> str | None:
    """``LoadSettings.mmproj`` for loading ``model_path``: the projector chosen in ``library`` (the
    user's library by default), ``"none"``, or None (look beside the model). See
    :meth:`Library.projector_for`; an unreadable library is no choice (None)."""
    try:
        return (library or Library()).projector_for(model_path)
    except Exception:  # noqa: BLE001 - a load must not fail on the library's manifest
        return None


class Library:
    """Thread-safe; scans are blocking (run them off the UI thread)."""

    def __init__(
        self,
        *,
        models_dir: Path | None = None,
        manifest_path: Path | None = None,
        hf_cache_dir: Path | None | bool = None,
    ) -> None:
        from app.storage import paths

        self.models_dir = Path(models_dir) if models_dir is not None else paths.models_dir()
        self.manifest_path = (
            Path(manifest_path) if manifest_path is not None else paths.data_dir() / "model_library.json"
        )
        self._hf_cache_dir = hf_cache_dir  # None: huggingface_hub's default; False: do not look
        self._lock = threading.RLock()
        self._cache: dict[tuple[str, int, int], GgufSummary | str] = {}

    # -- manifest -------------------------------------------------------------------------------
    def _load(self) -> dict:
        try:
            data = json.loads(self.manifest_path.read_text())
            if not isinstance(data, dict):
                raise ValueError("not an object")
        except FileNotFoundError:
            data = {}
        except (OSError, ValueError) as exc:
            # Keep the unreadable file aside instead of overwriting it: nothing is lost.
            backup = self.manifest_path.with_name(self.manifest_path.name + f".corrupt-{int(time.time())}")
            try:
                os.replace(self.manifest_path, backup)
            except OSError:
                pass
            data = {"notice": f"The model list was unreadable ({exc}); a copy was kept as {backup.name}."}
        data.setdefault("folders", [])
        data.setdefault("entries", {})
        data.setdefault("projectors", {})  # model key -> the projector's path, or NO_PROJECTOR
        return data

    def _save(self, data: dict) -> None:
        self.manifest_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.manifest_path.with_name(self.manifest_path.name + ".tmp")
        tmp.write_text(json.dumps({k: v for k, v in data.items() if k != "notice"}, indent=1))
        os.replace(tmp, self.manifest_path)

    def _record(self, path: Path, source: str, **extra) -> None:
        with self._lock:
            data = self._load()
            data["entries"][_key(path)] = {"source": source, "added": time.time(), **extra}
            self._save(data)

    def links(self, app: str) -> Path:
        """The folder of the models folder where the models of ``app`` (one of
        :data:`LINKED_APPS`) are linked: what is there has the source ``app``."""
        return self.models_dir / app

    @property
    def ollama_links(self) -> Path:
        """Where Ollama's models are linked (``ollama_store``)."""
        return self.links("ollama")

    # -- folders --------------------------------------------------------------------------------
    def folders(self) -> list[Path]:
        with self._lock:
            return [Path(f) for f in self._load()["folders"]]

    def add_folder(self, folder: str | Path) -> Path:
        p = Path(folder).expanduser()
        if not p.is_dir():
            raise LibraryError(f"{p} is not a folder.")
        with self._lock:
            data = self._load()
            key = _key(p)
            if key not in data["folders"]:
                data["folders"].append(key)
                self._save(data)
        return Path(key)

    def remove_folder(self, folder: str | Path) -> None:
        with self._lock:
            data = self._load()
            key = _key(Path(folder))
            if key in data["folders"]:
                data["folders"].remove(key)
                self._save(data)

    # -- registration ---------------------------------------------------------------------------
    def register_download(
        self, path: Path, *, repo_id: str = "", filename: str = "", sha256: str | None = None
    ) -> None:
        """Called when a verified download lands: Callisto owns this file."""
        self._record(Path(path), "downloaded", repo_id=repo_id, filename=filename, sha256=sha256)

    def register_upload(self, path: Path, *, sha256: str, filename: str = "") -> None:
        """Called when a file a client uploaded (its sha256 checked) is moved into the models
        folder: Callisto owns it, and :meth:`find_sha256` finds it by its digest."""
        self._record(Path(path), "uploaded", filename=filename, sha256=sha256.lower())

    def find_sha256(self, sha256: str) -> Path | None:
        """A file Callisto downloaded or was sent whose recorded sha256 is ``sha256`` and that is
        still there (a client that sends it again need not), else None."""
        want = sha256.lower()
        with self._lock:
            entries = dict(self._load()["entries"])
        for key, entry in entries.items():
            if (
                isinstance(entry, dict)
                and entry.get("source") in _OWNED
                and str(entry.get("sha256") or "").lower() == want
                and Path(key).is_file()
            ):
                return Path(key)
        return None

    def import_in_place(self, path: str | Path) -> LocalModel:
        """Remember a GGUF where it is (no copy). The file is checked first."""
        p = self._check_importable(path)
        self._record(p, "imported")
        return self._describe(p, "imported")

    def import_copy(
        self, path: str | Path, *, progress: Callable[[int, int], None] | None = None
    ) -> LocalModel:
        """Copy a GGUF (all shards of a split one) into the models folder."""
        src = self._check_importable(path)
        dest_dir = self.models_dir / "imported"
        dest_dir.mkdir(parents=True, exist_ok=True)
        parts = split_parts(src)
        total = sum(p.stat().st_size for p in parts)
        free = shutil.disk_usage(dest_dir).free
        if free < total:
            raise LibraryError(
                f"Not enough disk space to copy {src.name}: it needs {total} bytes, {free} free."
            )
        done = 0
        copied: list[Path] = []
        try:
            for part in parts:
                dest = dest_dir / part.name
                if dest.exists():
                    raise LibraryError(f"{dest} already exists; import in place or remove it first.")
                tmp = dest.with_name(dest.name + ".part")
                with open(part, "rb") as fin, open(tmp, "wb") as fout:
                    while block := fin.read(1 << 20):
                        fout.write(block)
                        done += len(block)
                        if progress:
                            progress(done, total)
                os.replace(tmp, dest)
                copied.append(dest)
        except OSError as exc:
            for p in copied:
                p.unlink(missing_ok=True)
            for part in parts:
                (dest_dir / (part.name + ".part")).unlink(missing_ok=True)
            raise LibraryError(
                f"Copying {src.name} failed: {exc.strerror or exc}. The original is untouched."
            ) from exc
        first = dest_dir / src.name
        self._record(first, "copied", original=str(src))
        return self._describe(first, "copied")

    def _check_importable(self, path: str | Path) -> Path:
        p = Path(path).expanduser()
        if not p.is_file():
            raise LibraryError(f"{p} does not exist or is not a file.")
        if not p.name.lower().endswith(".gguf"):
            raise LibraryError(f"{p.name} is not a .gguf file.")
        m = SPLIT_RE.match(p.name)
        if m and int(m.group("idx")) != 1:
            p = split_parts(p)[0]
        missing = [x.name for x in split_parts(p) if not x.is_file()]
        if missing:
            raise LibraryError(
                f"{p.name} is a split model and these shards are missing: {', '.join(missing)}."
            )
        try:
            read_summary(p)
        except ValueError as exc:
            raise LibraryError(f"Cannot import {p.name}: {exc}") from exc
        return p.resolve()

    # -- listing --------------------------------------------------------------------------------
    def notice(self) -> str | None:
        return self._load().get("notice")

    def scan(self) -> list[LocalModel]:
        """Every chat model: the models folder, added folders, in-place imports and the HF cache,
        each with its projector (projector files themselves are in :meth:`projectors`)."""
        with self._lock:
            choices = dict(self._load()["projectors"])
        return [self._paired(m, choices) for m in self._scan_all() if not m.is_projector]

    def projectors(self) -> list[LocalModel]:
        """The projector (mmproj) files the library sees, for a model to be paired with."""
        return [m for m in self._scan_all() if m.is_projector]

    def _paired(self, model: LocalModel, choices: dict[str, str]) -> LocalModel:
        from dataclasses import replace

        choice = choices.get(_key(model.path))
        if choice == NO_PROJECTOR:
            return replace(model, projector=None, projector_source=NO_PROJECTOR)
        if choice:
            return replace(model, projector=Path(choice), projector_source="chosen")
        from app.engine.vision import find_projector

        beside = find_projector(model.path)
        if beside is None:
            return model
        return replace(model, projector=beside, projector_source="beside")

    # -- projectors -----------------------------------------------------------------------------
    def set_projector(self, model_path: str | Path, projector: str | Path | None) -> None:
        """Pair ``model_path`` with ``projector`` (a projector GGUF, checked first), or with none
        (``None`` or :data:`NO_PROJECTOR`: text only, even with an mmproj beside it)."""
        if projector is None or str(projector) == NO_PROJECTOR:
            value = NO_PROJECTOR
        else:
            p = Path(projector).expanduser()
            if not p.is_file():
                raise LibraryError(f"{p} does not exist or is not a file.")
            try:
                summary = read_summary(p)
            except ValueError as exc:
                raise LibraryError(f"Cannot use {p.name} as a projector: {exc}") from exc
            if not summary.is_projector:
                raise LibraryError(
                    f"{p.name} is not a projector (an mmproj GGUF); it is a {summary.architecture} model."
                )
            value = _key(p)
        with self._lock:
            data = self._load()
            data["projectors"][_key(Path(model_path))] = value
            self._save(data)

    def reset_projector(self, model_path: str | Path) -> None:
        """Forget the user's choice: the model uses the mmproj beside it, if any."""
        with self._lock:
            data = self._load()
            if data["projectors"].pop(_key(Path(model_path)), None) is not None:
                self._save(data)

    def projector_for(self, model_path: str | Path) -> str | None:
        """What loading ``model_path`` passes as ``LoadSettings.mmproj``: the projector the user
        chose (a path), :data:`NO_PROJECTOR` when they chose none, or None (no choice: the engine
        looks beside the model with ``find_projector``)."""
        with self._lock:
            return self._load()["projectors"].get(_key(Path(model_path)))

    def _scan_all(self) -> list[LocalModel]:
        """Every GGUF, models and projectors."""
        with self._lock:
            data = self._load()
        entries: dict[str, dict] = data["entries"]
        found: dict[str, LocalModel] = {}

        def consider(path: Path, default_source: str, repo_id: str | None = None) -> None:
            m = SPLIT_RE.match(path.name)
            if m and int(m.group("idx")) != 1:
                return  # listed through its first shard
            key = _key(path)
            if key in found:
                return
            entry = entries.get(key, {})
            source = entry.get("source", default_source)
            if default_source == "folder":
                source = next((a for a in LINKED_APPS if self.links(a) in path.parents), source)
            found[key] = self._describe(
                # a link is listed by its own name (the HF cache's and Ollama's models are links to blobs)
                path if default_source == "hf-cache" or path.is_symlink() else Path(key),
                source,
                repo_id=entry.get("repo_id") or repo_id,
            )

        folders = [self.models_dir] + [Path(f) for f in data["folders"]]
        for folder in folders:
            if not folder.is_dir():
                continue
            for path in sorted(folder.rglob("*.gguf")):
                if path.is_file():
                    consider(path, "folder")
        for key, entry in entries.items():
            if key not in found and entry.get("source") in {"imported", *_OWNED}:
                p = Path(key)
                if p.exists():
                    consider(p, entry["source"])
                else:
                    found[key] = LocalModel(
                        p, p.name, 0, entry["source"], None, f"The file is missing: {p}", entry.get("repo_id")
                    )
        for path, repo_id in self._hf_cache_ggufs():
            key = _key(path)
            if key not in found and not any(_key(m.path) == key for m in found.values()):
                consider(path, "hf-cache", repo_id)
        return sorted(found.values(), key=lambda m: (m.name.lower(), str(m.path)))

    def _describe(self, path: Path, source: str, *, repo_id: str | None = None) -> LocalModel:
        name = path.name.removesuffix(".gguf")
        m = SPLIT_RE.match(path.name)
        if m:
            name = m.group("base")
        try:
            parts = split_parts(path)
            size = sum(p.stat().st_size for p in parts if p.exists())
            st = path.stat()
        except OSError as exc:
            return LocalModel(
                path, name, 0, source, None, f"Cannot read {path}: {exc.strerror or exc}", repo_id
            )
        cache_key = (_key(path), st.st_mtime_ns, size)
        cached = self._cache.get(cache_key)
        if cached is None:
            try:
                missing = [p.name for p in parts if not p.exists()]
                if missing:
                    raise ValueError(f"shards missing: {', '.join(missing)}")
                cached = read_summary(path)
            except ValueError as exc:
                cached = str(exc)
            except OSError as exc:
                cached = f"cannot be read: {exc.strerror or exc}"
            self._cache[cache_key] = cached
        if isinstance(cached, str):
            return LocalModel(path, name, size, source, None, f"Not a usable GGUF: {cached}", repo_id)
        return LocalModel(path, name, size, source, cached, None, repo_id)

    # -- Hugging Face cache ---------------------------------------------------------------------
    def _hf_cache_root(self) -> Path | None:
        if self._hf_cache_dir is False:
            return None
        if self._hf_cache_dir and self._hf_cache_dir is not True:
            return Path(self._hf_cache_dir)
        env = os.environ.get("HF_HUB_CACHE")
        if env:
            return Path(env)
        if os.environ.get("HF_HOME"):
            return Path(os.environ["HF_HOME"]) / "hub"
        from huggingface_hub import constants

        return Path(constants.HF_HUB_CACHE)

    def _hf_cache_ggufs(self) -> list[tuple[Path, str]]:
        root = self._hf_cache_root()
        if root is None or not root.is_dir():
            return []
        try:
            from huggingface_hub import scan_cache_dir

            info = scan_cache_dir(root)
        except Exception:  # noqa: BLE001 - a broken HF cache must not break the library
            return []
        out = []
        for repo in info.repos:
            if repo.repo_type != "model":
                continue
            for rev in repo.revisions:
                for f in rev.files:
                    if f.file_name.lower().endswith(".gguf"):
                        out.append((Path(f.file_path), repo.repo_id))
        return out

    def find_in_hf_cache(self, repo_id: str, filename: str, revision: str = "main") -> Path | None:
        """A file already in the Hugging Face cache (so it need not be downloaded again)."""
        root = self._hf_cache_root()
        if root is None or not root.is_dir():
            return None
        from huggingface_hub import try_to_load_from_cache

        try:
            hit = try_to_load_from_cache(repo_id, filename, cache_dir=root, revision=revision)
        except Exception:  # noqa: BLE001
            return None
        return Path(hit) if isinstance(hit, str) and Path(hit).is_file() else None

    # -- deleting -------------------------------------------------------------------------------
    def unlink_linked(self, model: LocalModel) -> list[Path]:
        """Stop listing one of Ollama's or Jan's models: the links to it go (the app's files
        stay); the links removed."""
        if model.source not in LINKED_APPS:
            raise LibraryError(f"{model.name} is not one of Ollama's or Jan's models.")
        folder = Path(model.path).parent
        gone = []
        for p in sorted(folder.iterdir()):
            try:
                p.unlink()  # (a link, symbolic or hard: the name goes, the app's file stays)
            except OSError as exc:
                raise LibraryError(f"Cannot remove {p}: {exc.strerror or exc}.") from exc
            gone.append(p)
        folder.rmdir()
        self.forget(model.path)
        return gone

    def forget(self, path: str | Path) -> None:
        """Stop listing an in-place import (the file stays); its projector choice goes too."""
        with self._lock:
            data = self._load()
            data["entries"].pop(_key(Path(path)), None)
            data["projectors"].pop(_key(Path(path)), None)
            self._save(data)

    def delete(self, model: LocalModel | str | Path, *, confirm_foreign: bool = False) -> list[Path]:
        """Delete a model's file(s). Files Callisto did not download or copy need ``confirm_foreign``.

        Returns the deleted paths. Files in the Hugging Face cache are never deleted here.
        """
        if not isinstance(model, LocalModel):
            path = Path(model)
            model = next((m for m in self._scan_all() if _key(m.path) == _key(path)), None) or self._describe(
                path, self._load()["entries"].get(_key(path), {}).get("source", "folder")
            )
        if model.source == "hf-cache":
            raise NotDeletableError(
                f"{model.name} lives in the Hugging Face cache, shared with other apps; "
                "remove it with `hf cache delete`."
            )
        if model.source == "ollama":
            raise NotDeletableError(
                f"{model.name} is Ollama's: remove it with `ollama rm`, or Remove it from the library here."
            )
        if model.source == "jan":
            raise NotDeletableError(
                f"{model.name} is Jan's: delete it in Jan, or Remove it from the library here."
            )
        if model.source not in _OWNED and not confirm_foreign:
            raise NotDeletableError(
                f"Callisto did not download {model.name}; confirm to delete your own file {model.path}."
            )
        deleted = []
        for p in model.parts:
            try:
                p.unlink()
                deleted.append(p)
            except FileNotFoundError:
                pass
            except OSError as exc:
                raise LibraryError(f"Cannot delete {p}: {exc.strerror or exc}.") from exc
        self.forget(model.path)
        return deleted
