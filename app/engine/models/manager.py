"""One object for the Models page: hub client + local library + download queue, wired together.

Downloads land in ``library.models_dir/<org>__<repo>/``; when one is verified it is registered in
the library as downloaded by Callisto. A file already in the Hugging Face cache is imported in place
instead of downloaded again.

A model whose repo has a projector (an ``mmproj`` file: :attr:`RemoteGguf.projector`) is downloaded
with it, into the same folder; once both are here the library pairs them
(:meth:`Library.set_projector`). A projector already here is not downloaded again.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.engine.models._gguf import split_parts
from app.engine.models.download import DownloadJob, DownloadProgress, DownloadQueue
from app.engine.models.errors import LibraryError
from app.engine.models.hub import HubClient, RemoteGguf
from app.engine.models.library import Library, LocalModel

__all__ = ["ModelManager", "QueuedDownload"]


@dataclass(frozen=True)
class QueuedDownload:
    """What :meth:`ModelManager.download` did: queued task ids, or a model reused from a cache."""

    task_ids: tuple[int, ...] = ()
    reused: LocalModel | None = None
    #: the projector's downloads (none when the model has no projector or it is already here)
    projector_task_ids: tuple[int, ...] = ()
    #: where the model's projector is (or will be once downloaded); None: no projector
    projector_path: Path | None = None


class ModelManager:
    def __init__(
        self,
        *,
        hub: HubClient | None = None,
        library: Library | None = None,
        max_parallel: int = 1,
        on_progress: Callable[[DownloadProgress], None] | None = None,
        on_finished: Callable[[DownloadProgress], None] | None = None,
        retries: int = 5,
        backoff_base: float = 0.5,
    ) -> None:
        self.hub = hub or HubClient()
        self.library = library or Library()
        self._pairs: dict[Path, Path] = {}  # a model being downloaded -> its projector
        self._pairs_lock = threading.Lock()
        self.queue = DownloadQueue(
            max_parallel=max_parallel,
            on_progress=on_progress,
            on_finished=on_finished,
            on_complete=self._completed,
            retries=retries,
            backoff_base=backoff_base,
            token=self.hub.token,  # the same token and hub as the listing (sent to that hub only)
            endpoint=self.hub.endpoint,
        )

    def _completed(self, job: DownloadJob, path: Path) -> None:
        self.library.register_download(path, repo_id=job.repo_id, filename=job.filename, sha256=job.sha256)
        self._pair_ready()

    def _pair_ready(self) -> None:
        """Pair each model with its projector once every file of both is here."""
        with self._pairs_lock:
            ready = [
                (m, p)
                for m, p in self._pairs.items()
                if all(x.is_file() for x in split_parts(m)) and p.is_file()
            ]
            for m, _p in ready:
                del self._pairs[m]
        for model_path, projector_path in ready:
            try:
                self.library.set_projector(model_path, projector_path)
            except LibraryError:
                pass  # not a readable projector: the model stays text only (the library says why)

    def restore_interrupted(self) -> list[int]:
        """Downloads left half-done when the app last stopped, listed as paused (resume continues them)."""
        return self.queue.restore_interrupted(self.library.models_dir)

    def _cached(self, model: RemoteGguf) -> Path | None:
        """The first file of ``model`` when the Hugging Face cache has all its files."""
        cached = [
            self.library.find_in_hf_cache(model.repo_id, p.filename, model.revision) for p in model.parts
        ]
        return cached[0] if all(cached) else None

    def download(self, model: RemoteGguf, *, with_projector: bool = True) -> QueuedDownload:
        """Queue ``model`` (and, unless ``with_projector`` is false, its projector) or reuse the
        files the Hugging Face cache or the models folder already has."""
        projector = model.projector if with_projector else None
        proj_jobs: list[DownloadJob] = []
        proj_path: Path | None = None
        if projector is not None:
            proj_path = self._cached(projector)
            if proj_path is None:
                proj_jobs = self.hub.download_jobs(projector, self.library.models_dir)
                proj_path = proj_jobs[0].dest
                if proj_path.is_file():  # already downloaded with another model of the repo
                    proj_jobs = []
        cached = self._cached(model)
        reused = None
        task_ids: tuple[int, ...] = ()
        if cached is not None:
            reused = self.library.import_in_place(cached)
            model_path = reused.path
        else:
            jobs = self.hub.download_jobs(model, self.library.models_dir)
            model_path = jobs[0].dest
            task_ids = tuple(self.queue.add(job) for job in jobs)
        result = QueuedDownload(
            task_ids=task_ids,
            reused=reused,
            projector_task_ids=tuple(self.queue.add(job) for job in proj_jobs),
            projector_path=proj_path,
        )
        if proj_path is not None:
            with self._pairs_lock:
                self._pairs[model_path] = proj_path
            self._pair_ready()
        return result

    def shutdown(self) -> None:
        self.queue.shutdown()
