"""Which models the server offers: the library's GGUFs plus the files named when it started."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from app.server._errors import ApiError, shown

__all__ = ["ModelCatalog", "ModelEntry"]


@dataclass(frozen=True)
class ModelEntry:
    id: str  # what /v1/models lists: the file name without .gguf
    path: Path
    size: int = 0
    quantization: str | None = None
    architecture: str | None = None
    #: the model's parameters (its GGUF's declared count, else its tensors'); None: unknown
    parameter_count: int | None = None
    #: the vision projector a load passes (``LoadSettings.mmproj``): the library's pairing (a path,
    #: or ``"none"``: the user chose none); None: the server's setting (None looks beside the model)
    mmproj: str | None = None
    #: the context the model was trained for, and the tool-call family its template writes ("none":
    #: no calls), as its GGUF says; None: unknown
    context_length: int | None = None
    tool_format: str | None = None
    #: a model made over the API (``app.server._presets.Preset``) over the file at ``path``; None: the file
    preset: Any = None


def _entry(path: Path, summaries: dict[tuple[Path, int, int], Any]) -> ModelEntry:
    """The entry of a file named to the server: what its GGUF says of itself (architecture,
    quantization, parameters) when it can be read, read once per version of the file (``summaries``
    keeps them by path, size and modification time); a file that cannot be read is listed all the
    same (its load says why)."""
    try:
        st = path.stat()
    except OSError:
        return ModelEntry(id=path.name.removesuffix(".gguf"), path=path)
    key = (path, st.st_size, st.st_mtime_ns)
    summary = summaries.get(key)
    if summary is None:
        from app.engine.models._gguf import read_summary

        try:
            summary = read_summary(path)
        except (OSError, ValueError):
            summary = False
        summaries[key] = summary
    return _with_summary(ModelEntry(id=path.name.removesuffix(".gguf"), path=path, size=st.st_size), summary)


def _with_summary(entry: ModelEntry, summary: Any) -> ModelEntry:
    """``entry`` with what a GGUF summary (``app.engine.models._gguf.GgufSummary``) says of it."""
    if not summary:
        return entry
    return replace(
        entry,
        quantization=getattr(summary, "quantization", None),
        architecture=getattr(summary, "architecture", None),
        parameter_count=getattr(summary, "parameter_count", None),
        context_length=getattr(summary, "context_length", None),
        tool_format=getattr(summary, "tool_format", None),
    )


def _library_projector(m: Any) -> str | None:
    """A library model's projector as ``LoadSettings.mmproj`` says it: the one the user chose (a
    path, or ``"none"``); None for one found beside the model or none at all (a load looks beside it)."""
    source = getattr(m, "projector_source", "")
    if source == "none":
        return "none"
    projector = getattr(m, "projector", None)
    return str(projector) if source == "chosen" and projector is not None else None


def _unique_ids(entries: Iterable[ModelEntry]) -> list[ModelEntry]:
    """Each entry with an id no earlier one has: two files of the same name (a ``--model`` file and
    the library's copy) are ``name`` and ``name-2``, so ``/v1/models`` lists each id once and
    every file can be asked for by its id."""
    seen: set[str] = set()
    out = []
    for e in entries:
        new_id, k = e.id, 2
        while new_id in seen:
            new_id, k = f"{e.id}-{k}", k + 1
        seen.add(new_id)
        out.append(e if new_id == e.id else replace(e, id=new_id))
    return out


_LATEST = ":latest"
_HF = re.compile(
    r"^(?:https?://)?(?:hf\.co|huggingface\.co)/(?P<repo>[^/:\s]+/[^/:\s]+)(?::(?P<tag>[^/\s]+))?$", re.I
)


def hf_name(name: str) -> tuple[str, str | None] | None:
    """(repository, tag or None) of an Ollama Hugging Face name (``hf.co/{owner}/{repo}:{quant}``),
    else None."""
    m = _HF.match(name.strip())
    if m is None:
        return None
    tag = m.group("tag")
    return m.group("repo"), (None if tag is None or tag.lower() == "latest" else tag)


def _pulled(entries: list[ModelEntry], name: str) -> ModelEntry | None:
    """The entry of a model downloaded from the repository an Ollama Hugging Face name names (in
    its folder of the library, ``app.engine.models.download.safe_destination``), with the tag in
    its file name: a model pulled in an earlier run."""
    parsed = hf_name(name)
    if parsed is None:
        return None
    repo, tag = parsed
    folder = re.sub(r"[^A-Za-z0-9._+-]", "_", repo.replace("/", "__")).lower()  # as safe_destination
    for e in entries:
        if e.path.parent.name.lower() == folder and (tag is None or tag.lower() in e.path.name.lower()):
            return e
    return None


class ModelCatalog:
    """``resolve(name)``: by id, file name or path; a name that matches nothing is a 404 that lists
    the names. ``use_library=False`` offers only the given files (tests, ``serve --model`` alone).
    ``library``: the window's own ``Library`` object (one object over the manifest); headless, one
    is made on first use."""

    def __init__(
        self,
        paths: Sequence[str | Path] | None = None,
        *,
        use_library: bool = True,
        library: Any = None,
        presets: Any = None,
    ):
        from app.server._presets import PresetStore

        self._paths = [Path(p).expanduser().resolve() for p in paths or []]
        #: the models made over the API (``app.server._presets``), offered after the files
        self.presets = presets if presets is not None else PresetStore()
        self._use_library = use_library
        self._library = library
        self._lock = threading.Lock()
        self._entries: list[ModelEntry] | None = None
        #: other names of the files (what a client pulled a model as: ``hf.co/owner/repo:Q4_K_M``)
        self._aliases: dict[str, Path] = {}
        #: the named files' GGUF summaries (False: unreadable), by path, size and modification time
        self._summaries: dict[tuple[Path, int, int], Any] = {}

    def entries(self, *, refresh: bool = False) -> list[ModelEntry]:
        """The files offered (as last scanned; ``refresh``: scanned now), then the made models over
        them, read from their store each time (another server or the window may change them)."""
        with self._lock:
            files = self._entries
        if files is None or refresh:
            files = self._files()
            with self._lock:
                self._entries = files
        return _unique_ids([*files, *self._made({e.path: e for e in files})])

    def _files(self) -> list[ModelEntry]:
        found: dict[Path, ModelEntry] = {}
        for p in self._paths:
            if p.is_file():
                found.setdefault(p, _entry(p, self._summaries))
        if self._use_library:
            try:
                for m in self.library().scan():
                    if m.usable:
                        p = Path(m.path).resolve()
                        if p in found:  # a file named at start that the library knows: its projector
                            found[p] = replace(found[p], mmproj=_library_projector(m))
                            continue
                        found.setdefault(
                            p,
                            _with_summary(
                                ModelEntry(id=m.name, path=p, size=m.size, mmproj=_library_projector(m)),
                                m.summary,
                            ),
                        )
            except Exception:  # noqa: BLE001 - a broken library must not take the server down
                pass
        return _unique_ids(found.values())

    def _made(self, files: dict[Path, ModelEntry]) -> list[ModelEntry]:
        """The made models whose base file is there: its entry under the made model's name."""
        out = []
        for preset in self.presets.all():
            base = Path(preset.base)
            entry = files.get(base) or (_entry(base, self._summaries) if base.is_file() else None)
            if entry is not None:
                out.append(replace(entry, id=preset.name, preset=preset))
        return out

    def library(self) -> Any:
        """The model library (the window's, else one made on first use): what the catalog offers
        beside its files, and where a pulled model lands."""
        if self._library is None:
            from app.engine.models.library import Library

            self._library = Library()
        return self._library

    def add(self, path: str | Path, *, alias: str | None = None) -> None:
        """Offer the file at ``path`` from now on (a model pulled while the server runs), also under
        ``alias``."""
        p = Path(path).expanduser().resolve()
        with self._lock:
            if p not in self._paths:
                self._paths.append(p)
            if alias:
                self._aliases[alias] = p
            self._entries = None

    def forget(self, path: str | Path) -> None:
        """Offer the file at ``path`` no more (its model was deleted)."""
        p = Path(path).expanduser().resolve()
        with self._lock:
            self._paths = [q for q in self._paths if q != p]
            self._aliases = {k: v for k, v in self._aliases.items() if v != p}
            self._entries = None

    def entry_for(self, path: str | Path) -> ModelEntry:
        """The entry of the file at ``path`` (one the catalog does not list gets a plain one)."""
        p = Path(path).expanduser().resolve()
        for e in self.entries():
            if e.path == p and e.preset is None:
                return e
        return _entry(p, self._summaries)

    def default(self) -> ModelEntry | None:
        entries = self.entries()
        return entries[0] if entries else None

    def _find(self, entries: list[ModelEntry], name: str) -> ModelEntry | None:
        """The entry ``name`` is the id, file name, path or pulled name of (ids and file names
        also without regard to case), or None."""
        aliased = self._aliases.get(name)
        for e in entries:
            if name in (e.id, e.path.name, str(e.path)) or e.path == aliased:
                return e
        lowered = name.lower()
        for e in entries:
            if lowered in (e.id.lower(), e.path.name.lower()):
                return e
        return None

    def resolve(self, name: str | None, loaded: ModelEntry | None = None) -> ModelEntry:
        """The entry ``name`` names (Ollama's default tag ``:latest`` may follow it); no name: the
        loaded model, else the first one offered."""
        if not name:
            entry = loaded or self.default()
            if entry is None:
                raise ApiError(
                    404,
                    "no model is available: start the server with --model PATH or "
                    "add GGUF files to the model library",
                    code="model_not_found",
                )
            return entry
        for refresh in (False, True):
            entries = self.entries(refresh=refresh)
            found = self._find(entries, name)
            if found is not None:
                return found
            pulled = _pulled(entries, name)
            if pulled is not None:
                return pulled
            if name.lower().endswith(_LATEST) and len(name) > len(_LATEST):
                # Ollama's default tag: its clients name a model "llama3.2:latest" as "llama3.2"
                untagged = self._find(entries, name[: -len(_LATEST)])
                if untagged is not None:
                    return untagged
        names = ", ".join(e.id for e in self.entries()) or "none"
        raise ApiError(
            404,
            f"model {shown(name)} not found; available models: {names}",
            param="model",
            code="model_not_found",
        )
