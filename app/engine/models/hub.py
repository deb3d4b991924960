"""Hugging Face search and file listing (huggingface-hub's HfApi), with clear offline/failure errors.

Every call goes through :class:`HubClient`, which takes the endpoint explicitly (default: the
``HF_ENDPOINT`` environment variable, else huggingface.co) so tests can point it at a local server.
Anything the hub client raises (``HfHubHTTPError``, httpx errors, bad JSON: not all ``OSError``)
becomes a :class:`HubUnavailableError` with a readable message.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit

from app.engine.models._endpoint import DEFAULT_ENDPOINT, default_endpoint
from app.engine.models._gguf import SPLIT_RE
from app.engine.models.errors import HubNotFoundError, HubOfflineError, HubUnavailableError
from app.engine.models.estimate import MemoryEstimate, estimate_remote, quant_from_filename

__all__ = [
    "DEFAULT_ENDPOINT",
    "HubClient",
    "RemoteModel",
    "RemoteGguf",
    "RemotePart",
    "default_endpoint",
    "group_gguf_files",
    "is_offline",
    "match_projector",
    "strip_front_matter",
]

#: the projector to take when a repo has several equally good ones: the f16 first (llama.cpp's
#: default mmproj), then the other lossless ones, then the quantised ones
PROJECTOR_QUANTS = ("F16", "BF16", "F32", "Q8_0")

T = TypeVar("T")


def is_offline() -> bool:
    """``HF_HUB_OFFLINE`` (read now, not only at huggingface_hub import time)."""
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE") or ""
    if value.strip().upper() in {"1", "ON", "YES", "TRUE"}:
        return True
    try:
        from huggingface_hub import constants

        return bool(constants.is_offline_mode())
    except Exception:  # noqa: BLE001
        return False


@dataclass(frozen=True)
class RemoteModel:
    repo_id: str
    downloads: int
    likes: int
    tags: tuple[str, ...] = ()
    last_modified: datetime | None = None
    gated: bool = False


@dataclass(frozen=True)
class RemotePart:
    filename: str
    size: int
    sha256: str | None


@dataclass(frozen=True)
class RemoteGguf:
    """One downloadable model: a single GGUF, or the shards of a split one (``-00001-of-0000N``)."""

    repo_id: str
    revision: str
    name: str  # display name: file name without the shard suffix
    parts: tuple[RemotePart, ...]
    quantization: str | None
    estimate: MemoryEstimate | None = field(default=None, compare=False)
    #: a model file's matching projector in the same repo (downloaded with it), None: text only
    projector: RemoteGguf | None = field(default=None, compare=False)

    @property
    def is_projector(self) -> bool:
        """An ``mmproj`` file (a vision projector for a model of the repo), not a chat model.

        A listing has only the names (the header is read once the file is here)."""
        return "mmproj" in self.parts[0].filename.rsplit("/", 1)[-1].lower()

    @property
    def filename(self) -> str:
        return self.parts[0].filename

    @property
    def size(self) -> int:
        return sum(p.size for p in self.parts)

    @property
    def is_split(self) -> bool:
        return len(self.parts) > 1

    @property
    def complete(self) -> bool:
        """All shards present in the listing."""
        m = SPLIT_RE.match(self.parts[0].filename.rsplit("/", 1)[-1])
        return not m or len(self.parts) == int(m.group("count"))


def group_gguf_files(
    repo_id: str,
    revision: str,
    files: list[RemotePart],
    *,
    n_ctx: int = 4096,
    ram: tuple[int, int] | None = None,
    kv_type: str = "f16",
) -> list[RemoteGguf]:
    """Group shards of split files, attach quantization and a memory estimate (a ``kv_type`` KV
    cache); sorted by size."""
    singles: list[RemoteGguf] = []
    groups: dict[tuple[str, str], list[RemotePart]] = {}
    for part in files:
        if not part.filename.lower().endswith(".gguf"):
            continue
        folder, _, base = part.filename.rpartition("/")
        m = SPLIT_RE.match(base)
        if m:
            groups.setdefault((folder, f"{m.group('base')}|{m.group('count')}"), []).append(part)
        else:
            singles.append(_make(repo_id, revision, base.removesuffix(".gguf"), [part], n_ctx, ram, kv_type))
    for (_folder, key), parts in groups.items():
        parts.sort(key=lambda p: p.filename)
        base = key.split("|", 1)[0]
        singles.append(_make(repo_id, revision, base, parts, n_ctx, ram, kv_type))
    singles.sort(key=lambda g: (g.size, g.name))
    projectors = [g for g in singles if g.is_projector]
    if projectors:
        singles = [
            g if g.is_projector else replace(g, projector=match_projector(g, projectors)) for g in singles
        ]
    return singles


def match_projector(model: RemoteGguf, projectors: list[RemoteGguf]) -> RemoteGguf | None:
    """The projector to download with ``model``: the one whose name (without ``mmproj``) shares the
    longest start with the model's, in the model's folder first; among equals the f16 one
    (:data:`PROJECTOR_QUANTS`), then the smallest."""
    import os

    if model.is_projector or not projectors:
        return None
    folder = model.filename.rpartition("/")[0]

    def stem(g: RemoteGguf) -> str:
        """The name without ``mmproj`` and the quantisation: what a model and its projector share."""
        name = g.name.lower().replace("mmproj", "")
        if g.quantization:
            name = name.replace(g.quantization.lower(), "")
        return name.strip("-_. ")

    base = stem(model)

    def rank(p: RemoteGguf) -> tuple:
        name = stem(p)
        quant = (p.quantization or "").upper()
        order = PROJECTOR_QUANTS.index(quant) if quant in PROJECTOR_QUANTS else len(PROJECTOR_QUANTS)
        same_folder = p.filename.rpartition("/")[0] == folder
        return (not same_folder, -len(os.path.commonprefix([name, base])), order, p.size, p.name)

    return min(projectors, key=rank)


def _make(repo_id, revision, name, parts, n_ctx, ram, kv_type="f16") -> RemoteGguf:
    quant = quant_from_filename(parts[0].filename)
    size = sum(p.size for p in parts)
    return RemoteGguf(
        repo_id=repo_id,
        revision=revision,
        name=name,
        parts=tuple(parts),
        quantization=quant,
        estimate=estimate_remote(size, quant, n_ctx, ram=ram, kv_type=kv_type),
    )


class HubClient:
    """Search the hub for GGUF repos and list their files. Thread-safe; blocking (call off the UI thread)."""

    def __init__(
        self, endpoint: str | None = None, *, token: str | bool | None = None, probe_timeout: float = 3.0
    ):
        self.endpoint = (endpoint or default_endpoint()).rstrip("/")
        self.token = token
        self.probe_timeout = probe_timeout

    # -- helpers --------------------------------------------------------------------------------
    def _api(self) -> Any:
        from huggingface_hub import HfApi

        return HfApi(endpoint=self.endpoint, token=self.token)

    def _check_reachable(self) -> None:
        """Fail fast (instead of the hub client's ~20 s of retries) when nothing listens at the endpoint."""
        parts = urlsplit(self.endpoint)
        host = parts.hostname or ""
        port = parts.port or (443 if parts.scheme == "https" else 80)
        try:
            with socket.create_connection((host, port), timeout=self.probe_timeout):
                pass
        except OSError as exc:
            raise HubUnavailableError(
                f"Cannot reach Hugging Face at {self.endpoint} ({exc.strerror or exc}). "
                "Check your network connection; your local models still work."
            ) from exc

    def _call(self, what: str, fn: Callable[[], T]) -> T:
        if is_offline():
            raise HubOfflineError(
                "Hugging Face is in offline mode (HF_HUB_OFFLINE is set), so searching and downloading "
                "are off. Your local models still work."
            )
        self._check_reachable()
        try:
            return fn()
        except HubUnavailableError:
            raise
        except Exception as exc:  # noqa: BLE001 - httpx errors, HfHubHTTPError, JSON errors: not all OSError
            raise _hub_error(what, self.endpoint, exc) from exc

    # -- API ------------------------------------------------------------------------------------
    def search(self, query: str = "", *, limit: int = 30) -> list[RemoteModel]:
        """GGUF repos matching ``query``, most downloaded first."""

        def run() -> list[RemoteModel]:
            models = self._api().list_models(
                search=query.strip() or None, filter="gguf", sort="downloads", limit=limit
            )
            out = []
            for m in models:
                out.append(
                    RemoteModel(
                        repo_id=m.id,
                        downloads=int(m.downloads or 0),
                        likes=int(m.likes or 0),
                        tags=tuple(m.tags or ()),
                        last_modified=m.last_modified,
                        gated=bool(m.gated),
                    )
                )
            return out

        return self._call(f"search for {query!r}", run)

    def list_files(self, repo_id: str, *, revision: str = "main") -> list[RemotePart]:
        """Every GGUF file in the repo with its size and LFS sha256."""

        def run() -> list[RemotePart]:
            from huggingface_hub.hf_api import RepoFile

            out = []
            for entry in self._api().list_repo_tree(repo_id, recursive=True, revision=revision):
                if isinstance(entry, RepoFile) and entry.path.lower().endswith(".gguf"):
                    sha = entry.lfs.sha256 if entry.lfs is not None else None
                    size = entry.lfs.size if entry.lfs is not None else entry.size
                    out.append(RemotePart(entry.path, int(size), sha))
            return out

        return self._call(f"list the files of {repo_id}", run)

    def list_ggufs(
        self,
        repo_id: str,
        *,
        revision: str = "main",
        n_ctx: int = 4096,
        ram: tuple[int, int] | None = None,
        kv_type: str = "f16",
    ) -> list[RemoteGguf]:
        """The repo's GGUF models (split files grouped), each with a memory estimate at ``n_ctx``
        with a ``kv_type`` KV cache."""
        return group_gguf_files(
            repo_id,
            revision,
            self.list_files(repo_id, revision=revision),
            n_ctx=n_ctx,
            ram=ram,
            kv_type=kv_type,
        )

    def model_card(self, repo_id: str, *, revision: str = "main", max_bytes: int = 64_000) -> str:
        """The repo's README (its model card) as Markdown without the YAML metadata block; "" when it
        has none. At most ``max_bytes`` are read (a card is shown as a preview)."""

        def run() -> str:
            import urllib.error
            import urllib.request

            req = urllib.request.Request(self.file_url(repo_id, "README.md", revision))
            if isinstance(self.token, str) and self.token:
                req.add_header("Authorization", f"Bearer {self.token}")
            try:
                with urllib.request.urlopen(req, timeout=15) as resp:  # noqa: S310 - the hub's https/http URL
                    data = resp.read(max_bytes)
            except urllib.error.HTTPError as exc:
                if exc.code in (401, 403, 404):
                    return ""  # no card, or a gated repo: the files still list
                raise
            return strip_front_matter(data.decode("utf-8", errors="replace"))

        return self._call(f"read the model card of {repo_id}", run)

    def file_url(self, repo_id: str, filename: str, revision: str = "main") -> str:
        """``{endpoint}/{repo}/resolve/{revision}/{filename}`` (the hub redirects LFS files to its CDN)."""
        return f"{self.endpoint}/{repo_id}/resolve/{quote(revision, safe='')}/{quote(filename)}"

    def download_jobs(self, model: RemoteGguf, dest_dir: Path) -> list[Any]:
        """One :class:`~app.engine.models.download.DownloadJob` per shard, saved under ``dest_dir/<org>__<name>/``
        (a projector lands there too, beside the models of its repo)."""
        from app.engine.models.download import DownloadJob, safe_destination

        return [
            DownloadJob(
                url=self.file_url(model.repo_id, part.filename, model.revision),
                dest=safe_destination(Path(dest_dir), model.repo_id, part.filename),
                size=part.size,
                sha256=part.sha256,
                repo_id=model.repo_id,
                filename=part.filename,
                revision=model.revision,
            )
            for part in model.parts
        ]


def strip_front_matter(text: str) -> str:
    """A model card without its leading ``---`` YAML block (licence, tags: metadata, not prose)."""
    t = text.lstrip("\ufeff")
    if t.startswith("---"):
        end = t.find("\n---", 3)
        if end >= 0:
            return t[end + 4 :].lstrip("-").lstrip()
    return t.strip()


def _hub_error(what: str, endpoint: str, exc: BaseException) -> HubUnavailableError:
    """The hub client's failure as the error a user reads: :class:`HubNotFoundError` where the hub
    said the repository (or revision) is not there for this user, else :class:`HubUnavailableError`."""
    status = None
    response = getattr(exc, "response", None)
    if response is not None:
        status = getattr(response, "status_code", None)
    name = type(exc).__name__
    denied = status in (401, 403, 404)  # a repository one cannot see is a 404 or 401 on the hub
    missing = denied or name in {"RepositoryNotFoundError", "GatedRepoError", "RevisionNotFoundError"}
    if missing:
        detail = "the repository does not exist, is private or gated (needs a token)"
        if name == "RevisionNotFoundError":
            detail = "the repository has no such revision"
    elif status is not None and status >= 500:
        detail = f"the server answered {status}; try again later"
    elif status is not None:
        detail = f"the server answered {status}"
    elif isinstance(exc, ValueError):
        detail = "the server's answer was not understood"
    else:
        detail = "the network connection failed"
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else name
    kind = HubNotFoundError if missing else HubUnavailableError
    return kind(f"Could not {what} on {endpoint}: {detail} ({name}: {first_line[:200]}).")
