"""Ollama's model management: ``POST /api/pull`` and ``DELETE /api/delete``, for the clients that
manage an Ollama server's models (Open WebUI's model pull, ``ollama pull`` pointed at this server,
the ollama SDK's ``pull``/``delete``).

``/api/pull`` takes Ollama's Hugging Face names, ``hf.co/{owner}/{repo}[:{quant}]`` (also
``huggingface.co/...``): the repository's GGUF files are listed on the hub (``HF_ENDPOINT``, the
user's token), the quant the tag names is chosen (its quantization, or a part of its file name;
without a tag Q4_K_M where the repository has it, as Ollama picks, else the best of the usual
quants), and its files (every shard, and the matching vision projector) are downloaded into the
model library's folder as the window downloads them (``app.engine.models.download``: resumed
after a dropped connection, the sha256 checked, never a half file under a ``.gguf`` name), then
registered in the library and offered by this server under the name pulled. A file already there
with its size is not downloaded again. Streamed (the default), the answer is Ollama's progress
lines: ``pulling manifest``, ``pulling <digest>`` with ``total`` and ``completed``, ``verifying
sha256 digest``, ``writing manifest``, ``success``; an error is a last ``{"error": ...}`` line. A
client that leaves cancels the download (the partial file stays, so a later pull resumes it).
A name of Ollama's own registry (``llama3.2``) is a 404 that says how to name a Hugging Face
model; a model already offered is a success at once.

``/api/delete`` deletes a model Callisto downloaded (its files, unloading it first); a file the
user keeps elsewhere (a ``--model`` path, a folder the library reads) is a 403 that says where to
remove it, and is never touched.

LM Studio's download API is the same pull as a job the client polls: ``POST
/api/v1/models/download`` (``model``: a Hugging Face link or ``owner/repo``; ``quantization``, as
a pull's tag) answers once the hub has said which files it takes: ``already_downloaded``, or a
``job_id`` with ``downloading`` and the size; ``GET /api/v1/models/download/status/{job_id}``
says how far it got (``downloading``, ``completed`` or ``failed`` with the reason). The download
goes on without the client and ends with the server; the latest jobs are kept for their status.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.server._common import _watch_disconnect, check_bool, check_str, request_body
from app.server._errors import ApiError, log_error, shown
from app.server._json import json_bytes, json_response
from app.server._models import hf_name

if TYPE_CHECKING:
    from starlette.requests import Request

    from app.server._state import ServerState

__all__ = ["DownloadJobs", "delete", "download", "download_status", "pull"]

#: the quants a pull without a tag takes, the first the repository has (Ollama's default first)
DEFAULT_QUANTS = ("Q4_K_M", "Q4_K_S", "Q5_K_M", "Q4_0", "IQ4_XS", "Q5_K_S", "Q6_K", "Q8_0")
#: how often a streamed pull says how far it got
_PROGRESS_S = 0.25


def _choose(models: list[Any], repo: str, tag: str | None) -> Any:
    """The repository's model the tag names (see the module docstring)."""
    usable = [m for m in models if not m.is_projector and m.complete]
    if not usable:
        raise ApiError(404, f"{repo} has no GGUF model to pull", code="model_not_found")
    if tag is None:
        for quant in DEFAULT_QUANTS:
            for m in usable:
                if (m.quantization or "").upper() == quant:
                    return m
        return usable[0]
    want = tag.lower()
    for m in usable:
        if (m.quantization or "").lower() == want:
            return m
    for m in usable:
        if want in m.filename.rsplit("/", 1)[-1].lower():
            return m
    have = sorted({m.quantization or m.filename.rsplit("/", 1)[-1] for m in usable})
    raise ApiError(
        404, f"{repo} has no GGUF for the tag {shown(tag)}; it has {', '.join(have)}", code="model_not_found"
    )


class _Pull:
    """One pull on a worker thread: its progress lines go to ``lines`` (None: the end)."""

    def __init__(self, state: ServerState, name: str, repo: str, tag: str | None):
        from app.engine.models.download import DownloadControl

        self.state = state
        self.name = name
        self.repo = repo
        self.tag = tag
        self.control = DownloadControl()
        self.loop = asyncio.get_running_loop()
        self.lines: asyncio.Queue[dict[str, Any] | None] = asyncio.Queue()
        #: the files the pull takes, once the hub has said (``_run``): their jobs, none there yet
        self.jobs: list[Any] = []

    def say(self, line: dict[str, Any] | None) -> None:
        self.loop.call_soon_threadsafe(self.lines.put_nowait, line)

    def run(self) -> None:
        try:
            self._run()
            self.say({"status": "success"})
        except ApiError as err:
            self.say({"error": err.message, "_status": err.status})
        except Exception as exc:  # noqa: BLE001 - the hub's and the download's errors, in words
            self.say({"error": f"pulling {self.name} failed: {exc}", "_status": 500})
        finally:
            self.say(None)

    def _run(self) -> None:
        from app.engine.models.errors import HubNotFoundError, HubOfflineError, HubUnavailableError
        from app.engine.models.hub import HubClient

        self.say({"status": "pulling manifest"})
        hub = HubClient()
        try:
            models = hub.list_ggufs(self.repo)
        except HubNotFoundError as exc:  # no such repository (or not for this token)
            raise ApiError(404, str(exc), code="model_not_found") from exc
        except (HubOfflineError, HubUnavailableError) as exc:  # the hub cannot answer now
            raise ApiError(502, str(exc)) from exc
        model = _choose(models, self.repo, self.tag)
        library = self.state.catalog.library()
        jobs = hub.download_jobs(model, library.models_dir)
        if model.projector is not None:
            jobs += hub.download_jobs(model.projector, library.models_dir)
        self.chose(jobs)
        for job in jobs:
            self._fetch(job, library)
        self.say({"status": "writing manifest"})
        first = Path(jobs[0].dest)
        self.state.catalog.add(first, alias=self.name)

    def chose(self, jobs: list[Any]) -> None:
        """The hub said which files the pull takes (a job of LM Studio's download API answers then)."""
        self.jobs = jobs

    def _fetch(self, job: Any, library: Any) -> None:
        """Download one file (saying how far it got), unless it is there whole; register it."""
        from app.engine.models.download import download_file

        digest = f"sha256:{job.sha256}" if job.sha256 else job.filename
        status = f"pulling {(job.sha256 or job.filename)[:12]}"
        dest = Path(job.dest)
        if dest.is_file() and (job.size is None or dest.stat().st_size == job.size):
            self.say({"status": status, "digest": digest, "total": job.size, "completed": job.size})
            return
        last, said = 0.0, -1

        def progress(done: int, total: int | None, _speed: float, _attempt: int) -> None:
            nonlocal last, said
            now = time.monotonic()
            # a few lines a second, and the first bytes at once (not a line that says 0 for long)
            if now - last >= _PROGRESS_S or (said <= 0 < done):
                last, said = now, done
                self.say({"status": status, "digest": digest, "total": total or job.size, "completed": done})

        path = download_file(job, control=self.control, progress=progress)
        self.say({"status": status, "digest": digest, "total": job.size, "completed": job.size})
        self.say({"status": "verifying sha256 digest"})  # (download_file checked it)
        library.register_download(path, repo_id=job.repo_id, filename=job.filename, sha256=job.sha256)


async def pull(request: Request):
    state, body = await request_body(request)
    name = check_str(body.get("model", body.get("name")), "model", allow_none=True) or ""
    if not name.strip():
        raise ApiError(
            400, "model is empty: name the model to pull, as hf.co/{owner}/{repo}:{quant}", param="model"
        )
    stream = check_bool(body.get("stream"), "stream", True)
    parsed = hf_name(name)
    if parsed is None:
        try:
            state.catalog.resolve(name)
        except ApiError:
            raise ApiError(
                404,
                f"{shown(name)} is a name of Ollama's registry, which this server does not pull from: "
                "name a GGUF model on Hugging Face as hf.co/{owner}/{repo}:{quant} "
                "(e.g. hf.co/bartowski/Llama-3.2-1B-Instruct-GGUF:Q4_K_M)",
                code="model_not_found",
            ) from None
        return _answer(stream, [{"status": "success"}])
    job = _Pull(state, name, *parsed)
    worker = threading.Thread(target=job.run, name="callisto-pull", daemon=True)
    worker.start()
    if not stream:
        last: dict[str, Any] = {}
        watcher = asyncio.ensure_future(_watch_disconnect(request, job.control.cancel))
        try:
            while (line := await job.lines.get()) is not None:
                last = line
        finally:
            watcher.cancel()
            job.control.cancel.set()  # (done by now, unless the client left)
        if "error" in last:
            raise ApiError(int(last.pop("_status")), last["error"])
        return json_response(last)

    from starlette.responses import StreamingResponse

    async def lines():
        # a client that leaves stops the download (its part file stays), even while the hub is silent
        watcher = asyncio.ensure_future(_watch_disconnect(request, job.control.cancel))
        try:
            while (line := await job.lines.get()) is not None:
                status = line.pop("_status", None)
                if status is not None:
                    log_error(request.scope, ApiError(int(status), str(line["error"])))
                yield json_bytes(line) + b"\n"
        finally:
            watcher.cancel()
            job.control.cancel.set()

    return StreamingResponse(lines(), media_type="application/x-ndjson")


def _answer(stream: bool, lines: list[dict[str, Any]]):
    if not stream:
        return json_response(lines[-1])
    from starlette.responses import Response

    return Response(
        b"".join(json.dumps(x).encode() + b"\n" for x in lines), media_type="application/x-ndjson"
    )


async def delete(request: Request):
    from starlette.concurrency import run_in_threadpool
    from starlette.responses import Response

    state, body = await request_body(request)
    name = check_str(body.get("model", body.get("name")), "model", allow_none=True) or ""
    if not name.strip():
        raise ApiError(400, "model is empty: name the model to delete", param="model")

    def remove() -> None:
        entry = state.catalog.resolve(name)  # (may scan the library: off the event loop)
        if entry.preset is not None:  # a made model: its name goes, never its base's file
            state.presets.delete(entry.preset.name)
            return
        library = state.catalog.library()
        found = next((m for m in library.scan() if m.path.resolve() == entry.path), None)
        if found is None or not found.deletable_without_confirmation:
            raise ApiError(
                403,
                f"{entry.path} is not a file Callisto downloaded or was sent, so it is not deleted here: remove it "
                "where you keep it (or in the window's Models page)",
                code="model_not_deletable",
            )
        state.reaper.expire(entry)  # unloaded now if idle
        if state.host.model(entry.path) is not None:
            raise ApiError(409, f"{entry.id} is in use: delete it once its requests end", code="model_in_use")
        library.delete(found)
        state.catalog.forget(entry.path)

    await run_in_threadpool(remove)
    return Response(status_code=200)


# -- LM Studio's download API ------------------------------------------------------------------------

_HF_LINK = re.compile(r"^(?:https?://)?(?:www\.)?(?:huggingface\.co|hf\.co)/([^/\s]+/[^/\s?#]+)/?$", re.I)
_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


def _iso(t: float | None) -> str | None:
    from datetime import UTC, datetime

    if t is None:
        return None
    return datetime.fromtimestamp(t, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


class _DownloadJob(_Pull):
    """A pull whose progress is kept for polling, not streamed (LM Studio's download job)."""

    def __init__(self, state: ServerState, job_id: str, repo: str, tag: str | None):
        super().__init__(state, f"hf.co/{repo}" + (f":{tag}" if tag else ""), repo, tag)
        self.job_id = job_id
        self.started = time.time()
        self.status = "downloading"
        self.error: tuple[int, str] | None = None
        self.completed_at: float | None = None
        self.total = 0
        self.done: dict[str, int] = {}  # bytes downloaded, by file
        self.already = False  # every file was there whole when the hub answered
        self.chosen = threading.Event()  # the hub answered (or the job failed before it did)

    def chose(self, jobs: list[Any]) -> None:
        super().chose(jobs)
        self.total = sum(int(j.size or 0) for j in jobs)
        self.already = all(Path(j.dest).is_file() and Path(j.dest).stat().st_size == j.size for j in jobs)
        self.chosen.set()

    def say(self, line: dict[str, Any] | None) -> None:
        if line is None:
            self.chosen.set()
            return
        if "error" in line:
            self.status, self.error = "failed", (int(line.get("_status", 500)), str(line["error"]))
        elif line.get("status") == "success":
            self.status, self.completed_at = "completed", time.time()
        elif "completed" in line and "digest" in line:
            self.done[str(line["digest"])] = int(line["completed"] or 0)

    def answer(self) -> dict[str, Any]:
        """The job's status object, as LM Studio's status endpoint answers it."""
        downloaded = sum(self.done.values())
        out: dict[str, Any] = {"job_id": self.job_id, "status": self.status, "total_size_bytes": self.total}
        out["downloaded_bytes"] = self.total if self.status == "completed" else downloaded
        out["started_at"] = _iso(self.started)
        if self.status == "completed":
            out["completed_at"] = _iso(self.completed_at)
        elif self.status == "failed" and self.error is not None:
            out["error"] = self.error[1]
        else:
            elapsed = time.time() - self.started
            if downloaded and elapsed > 0:
                rate = downloaded / elapsed
                out["bytes_per_second"] = round(rate)
                out["estimated_completion"] = _iso(time.time() + max(0, self.total - downloaded) / rate)
        return out


class DownloadJobs:
    """LM Studio's download jobs of one server: the latest ``keep`` (a running one is never
    dropped); :meth:`cancel_all` when the server stops."""

    def __init__(self, keep: int = 64):
        self.keep = keep
        self._jobs: dict[str, _DownloadJob] = {}
        self._lock = threading.Lock()

    def add(self, job: _DownloadJob) -> None:
        with self._lock:
            self._jobs[job.job_id] = job
            ended = [k for k, j in self._jobs.items() if j.status != "downloading"]  # the oldest first
            while len(self._jobs) > self.keep and ended:
                del self._jobs[ended.pop(0)]

    def discard(self, job_id: str) -> None:
        with self._lock:
            self._jobs.pop(job_id, None)

    def get(self, job_id: str) -> _DownloadJob | None:
        with self._lock:
            return self._jobs.get(job_id)

    def cancel_all(self) -> None:
        with self._lock:
            for job in self._jobs.values():
                job.control.cancel.set()


def _download_repo(value: Any) -> str:
    """The Hugging Face repository a download names (a link, or ``owner/repo``), or a 400 saying how."""
    name = (check_str(value, "model", allow_none=True) or "").strip()
    link = _HF_LINK.match(name)
    repo = link.group(1) if link else name
    if not _REPO_ID.match(repo):
        raise ApiError(
            400,
            f"model {shown(name)} is not a Hugging Face repository: send its link "
            "(https://huggingface.co/{owner}/{repo}) or {owner}/{repo}",
            param="model",
        )
    return repo


async def download(request: Request):
    """``POST /api/v1/models/download``: start a download job (see the module docstring)."""
    import secrets

    from starlette.concurrency import run_in_threadpool

    state, body = await request_body(request)
    repo = _download_repo(body.get("model"))
    tag = check_str(body.get("quantization"), "quantization", allow_none=True) or None
    job = _DownloadJob(state, f"job_{secrets.token_hex(5)}", repo, tag)
    state.downloads.add(job)  # (from the start: a server that stops cancels it)
    threading.Thread(target=job.run, name="callisto-download", daemon=True).start()
    await run_in_threadpool(job.chosen.wait)  # the hub has said which files (or why not)
    if job.error is not None and not job.jobs:
        state.downloads.discard(job.job_id)
        raise ApiError(job.error[0], job.error[1], code="model_not_found" if job.error[0] == 404 else None)
    if job.already:
        state.downloads.discard(job.job_id)  # (nothing to download: no job to poll)
        return json_response({"status": "already_downloaded"})
    return json_response(
        {
            "job_id": job.job_id,
            "status": "downloading",
            "total_size_bytes": job.total,
            "started_at": _iso(job.started),
        }
    )


async def download_status(request: Request):
    """``GET /api/v1/models/download/status/{job_id}``: how far a download job got."""
    state = request.app.state.callisto
    job_id = request.path_params["job_id"]
    job = state.downloads.get(job_id)
    if job is None:
        raise ApiError(404, f"there is no download job {shown(job_id)}", param="job_id", code="job_not_found")
    return json_response(job.answer())
