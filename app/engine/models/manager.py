"""One object for the Models page: hub client + local library + download queue, wired together.

Downloads land in ``library.models_dir/<org>__<repo>/``; when one is verified it is registered in
the library as downloaded by Callisto. A file already in the Hugging Face cache is imported in place
instead of downloaded again.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from app.engine.models.download import DownloadJob, DownloadProgress, DownloadQueue
from app.engine.models.hub import HubClient, RemoteGguf
from app.engine.models.library import Library, LocalModel

__all__ = ["ModelManager", "QueuedDownload"]


@dataclass(frozen=True)
class QueuedDownload:
    """What :meth:`ModelManager.download` did: queued task ids, or a model reused from a cache."""

    task_ids: tuple[int, ...] = ()
    reused: LocalModel | None = None


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

    def restore_interrupted(self) -> list[int]:
        """Downloads left half-done when the app last stopped, listed as paused (resume continues them)."""
        return self.queue.restore_interrupted(self.library.models_dir)

    def download(self, model: RemoteGguf) -> QueuedDownload:
        cached = [
            self.library.find_in_hf_cache(model.repo_id, p.filename, model.revision) for p in model.parts
        ]
        if all(cached) and cached[0] is not None:
            return QueuedDownload(reused=self.library.import_in_place(cached[0]))
        jobs = self.hub.download_jobs(model, self.library.models_dir)
        return QueuedDownload(task_ids=tuple(self.queue.add(job) for job in jobs))

    def shutdown(self) -> None:
        self.queue.shutdown()
