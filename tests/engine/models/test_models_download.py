"""Downloads from a real local HTTP hub: resume, pause, kill, corrupt bodies, 5xx, full disks, queueing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import replace
from pathlib import Path

import pytest

from app.engine.models.download import (
    DownloadJob,
    DownloadQueue,
    DownloadState,
    GatedModelError,
    download_file,
    part_path,
    sidecar_path,
)
from app.engine.models.errors import DiskFullError, DiskSpaceError, DownloadError, HashMismatchError
from app.engine.models.hub import HubClient
from app.engine.models.library import Library
from app.engine.models.manager import ModelManager

REPO = "acme/Tiny-Chat-GGUF"
FILE = "Tiny-Chat-Q8_0.gguf"
ROOT = Path(__file__).resolve().parents[3]


def job_for(hub, dest_dir: Path, filename: str = FILE) -> DownloadJob:
    model = next(g for g in HubClient(hub.url).list_ggufs(REPO) if g.filename == filename)
    (job,) = HubClient(hub.url).download_jobs(model, dest_dir)
    return job


def usable_ggufs(folder: Path) -> list[Path]:
    return sorted(folder.rglob("*.gguf"))


def test_download_verifies_hash_and_reports_progress(hub, tmp_path):
    job = job_for(hub, tmp_path)
    seen = []
    path = download_file(job, progress=lambda done, total, bps, attempt: seen.append((done, total)))
    assert path.read_bytes() == hub.repos[REPO].files[FILE]
    assert not part_path(path).exists() and not sidecar_path(path).exists()
    assert seen[-1] == (len(hub.repos[REPO].files[FILE]),) * 2
    # the hub redirected the resolve URL to its CDN path, as huggingface.co does
    assert hub.count("GET", f"/{REPO}/resolve/main/{FILE}") == 1
    assert hub.count("GET", f"/_cdn/{REPO}/{FILE}") == 1


def test_dropped_connection_is_retried_with_range_resume(hub, tmp_path):
    hub.drop_after[FILE] = [100_000, 50_000]
    job = job_for(hub, tmp_path)
    seen_attempts = []
    path = download_file(job, backoff_base=0.01, progress=lambda d, t, b, a: seen_attempts.append(a))
    assert path.read_bytes() == hub.repos[REPO].files[FILE]
    ranges = [r for m, p, r in hub.requests if p.startswith("/_cdn/")]
    assert ranges[0] is None
    assert ranges[1] == "bytes=100000-"
    assert ranges[2] == "bytes=150000-"
    assert max(seen_attempts) >= 1


def test_server_errors_are_retried_with_backoff(hub, tmp_path):
    hub.fail_status[FILE] = [500, 503]
    path = download_file(job_for(hub, tmp_path), backoff_base=0.01)
    assert path.read_bytes() == hub.repos[REPO].files[FILE]
    assert hub.count("GET", f"/{REPO}/resolve/main/{FILE}") == 3


def test_too_many_failures_give_up_with_a_clear_error_and_keep_nothing_usable(hub, tmp_path):
    hub.fail_status[FILE] = [500] * 10
    with pytest.raises(DownloadError, match="failed after 2 retries"):
        download_file(job_for(hub, tmp_path), retries=2, backoff_base=0.01)
    assert usable_ggufs(tmp_path) == []


def test_client_error_is_not_retried(hub, tmp_path):
    job = job_for(hub, tmp_path)
    bad = DownloadJob(url=job.url.replace(FILE, "missing.gguf"), dest=tmp_path / "missing.gguf", size=10)
    with pytest.raises(DownloadError, match="HTTP 404"):
        download_file(bad, backoff_base=0.01)
    assert hub.count("GET", "/missing.gguf") == 1


def test_corrupted_body_is_rejected_by_the_hash(hub, tmp_path):
    hub.corrupt.add(FILE)
    job = job_for(hub, tmp_path)
    with pytest.raises(HashMismatchError, match="does not match"):
        download_file(job)
    assert usable_ggufs(tmp_path) == []
    assert not part_path(job.dest).exists() and not sidecar_path(job.dest).exists()


def test_not_enough_disk_space_stops_before_any_byte(hub, tmp_path):
    hub.repos[REPO].declared_sizes[FILE] = 1 << 60  # an exabyte: no disk has that free
    job = job_for(hub, tmp_path)
    with pytest.raises(DiskSpaceError, match="Not enough disk space"):
        download_file(job)
    assert hub.count("GET", "/_cdn/") == 0 and hub.count("GET", "/resolve/") == 0
    assert usable_ggufs(tmp_path) == []


def _child(script: str, *args: str, **popen) -> subprocess.Popen:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        env=env,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        **popen,
    )


def test_disk_full_while_writing_is_a_clear_error(hub, tmp_path):
    """A real write failure: the child process may only write files up to 64 KiB (RLIMIT_FSIZE -> EFBIG)."""
    job = job_for(hub, tmp_path)
    script = """
        import json, resource, signal, sys
        from pathlib import Path
        from app.engine.models.download import DownloadJob, download_file
        from app.engine.models.errors import DiskFullError
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (65536, 65536))
        job = DownloadJob.from_json(json.loads(sys.argv[1]))
        try:
            download_file(job)
        except DiskFullError as e:
            print("DISKFULL:", e)
    """
    proc = _child(script, __import__("json").dumps(job.to_json()))
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    assert "DISKFULL: The disk is full" in out and "resume" in out
    assert not job.dest.exists()
    assert part_path(job.dest).exists() and part_path(job.dest).stat().st_size <= 65536  # kept for resume
    # with space again, the same download resumes from the partial file and verifies
    path = download_file(job)
    assert path.read_bytes() == hub.repos[REPO].files[FILE]
    assert any(r and r.startswith("bytes=") for m, p, r in hub.requests if p.startswith("/_cdn/"))


def test_pause_and_resume(hub, tmp_path):
    hub.hold_after[FILE] = 120_000
    q = DownloadQueue(backoff_base=0.01)
    job = job_for(hub, tmp_path)
    tid = q.add(job)
    assert hub.held.wait(30)
    # ``held`` says the server has sent its bytes, not that the client has written them: pausing
    # then could land before the first chunk. Wait (bounded) until the client holds them all.
    part = part_path(job.dest)
    for _ in range(3000):
        if part.exists() and part.stat().st_size == 120_000:
            break
        time.sleep(0.01)
    q.pause(tid)
    hub.release.set()
    p = q.wait(tid, 30)
    assert p.state == DownloadState.PAUSED and p.resumable
    assert 0 < p.downloaded < p.total
    paused_at = p.downloaded
    job = p.job
    assert part_path(job.dest).stat().st_size == paused_at
    assert part_path(job.dest).exists() and not job.dest.exists()
    assert usable_ggufs(tmp_path) == []
    q.resume(tid)
    p = q.wait(tid, 30)
    assert p.state == DownloadState.DONE, p.error
    assert job.dest.read_bytes() == hub.repos[REPO].files[FILE]
    ranges = [r for m, pth, r in hub.requests if pth.startswith("/_cdn/")]
    assert ranges[-1] == f"bytes={paused_at}-"
    q.shutdown()


def test_resume_after_the_app_was_killed(hub, tmp_path):
    hub.hold_after[FILE] = 150_000
    job = job_for(hub, tmp_path)
    script = """
        import json, sys
        from app.engine.models.download import DownloadJob, download_file
        download_file(DownloadJob.from_json(json.loads(sys.argv[1])))
    """
    proc = _child(script, __import__("json").dumps(job.to_json()))
    try:
        assert hub.held.wait(60)
        part = part_path(job.dest)
        for _ in range(3000):  # until the child has written every byte it was sent (bounded wait)
            if part.exists() and part.stat().st_size == 150_000:
                break
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)  # the app dies mid-download
        proc.wait(30)
    finally:
        proc.kill()
    hub.hold_after.clear()
    hub.release.set()
    assert not job.dest.exists() and part_path(job.dest).stat().st_size == 150_000
    assert Library(models_dir=tmp_path, hf_cache_dir=False).scan() == []  # never a usable model
    q = DownloadQueue()
    (tid,) = q.restore_interrupted(tmp_path)
    p = q.get(tid)
    assert p.state == DownloadState.PAUSED and p.downloaded == 150_000
    q.resume(tid)
    p = q.wait(tid, 30)
    assert p.state == DownloadState.DONE, p.error
    assert job.dest.read_bytes() == hub.repos[REPO].files[FILE]
    assert [r for m, pth, r in hub.requests if pth.startswith("/_cdn/")][-1] == "bytes=150000-"
    q.shutdown()


def test_cancel_removes_the_partial_file(hub, tmp_path):
    hub.hold_after[FILE] = 60_000
    q = DownloadQueue()
    tid = q.add(job_for(hub, tmp_path))
    assert hub.held.wait(30)
    q.cancel(tid)
    hub.release.set()
    p = q.wait(tid, 30)
    assert p.state == DownloadState.CANCELLED
    assert list(tmp_path.rglob("*")) == [] or all(x.is_dir() for x in tmp_path.rglob("*"))
    q.shutdown()


def test_downloads_queue_one_at_a_time(hub, tmp_path):
    hub.hold_after[FILE] = 60_000
    events = []
    q = DownloadQueue(on_progress=lambda p: events.append((p.task_id, p.state)))
    first = q.add(job_for(hub, tmp_path))
    second = q.add(job_for(hub, tmp_path, "Tiny-Chat-Q4_K_M.gguf"))
    assert hub.held.wait(30)
    assert q.get(second).state == DownloadState.QUEUED
    hub.release.set()
    assert q.wait(first, 30).state == DownloadState.DONE
    assert q.wait(second, 30).state == DownloadState.DONE
    running = [tid for tid, state in events if state == DownloadState.RUNNING]
    assert running == sorted(running) and set(running) == {first, second}  # never interleaved
    q.shutdown()


def test_progress_has_speed_and_eta(hub, tmp_path):
    hub.throttle_bps = 2_000_000
    snaps = []
    q = DownloadQueue(on_progress=snaps.append)
    tid = q.add(job_for(hub, tmp_path))
    assert q.wait(tid, 60).state == DownloadState.DONE
    running = [s for s in snaps if s.state == DownloadState.RUNNING and s.downloaded > 0 and s.speed_bps > 0]
    assert running, "no progress with speed was reported"
    assert any(s.eta_s is not None and s.eta_s >= 0 for s in running)
    assert all(s.total == len(hub.repos[REPO].files[FILE]) for s in running)
    q.shutdown()


def test_manager_downloads_split_model_and_library_lists_it_once(hub, tmp_path):
    lib = Library(models_dir=tmp_path / "models", manifest_path=tmp_path / "lib.json", hf_cache_dir=False)
    mgr = ModelManager(hub=HubClient(hub.url), library=lib)
    split = next(g for g in mgr.hub.list_ggufs(REPO) if g.is_split)
    queued = mgr.download(split)
    assert len(queued.task_ids) == 2
    for tid in queued.task_ids:
        assert mgr.queue.wait(tid, 30).state == DownloadState.DONE
    models = lib.scan()
    assert [m.name for m in models] == ["Tiny-Chat-F16"]
    (m,) = models
    assert m.source == "downloaded" and m.repo_id == REPO and m.size == split.size
    assert m.summary is not None and m.summary.split_count == 2 and m.summary.architecture == "llama"
    mgr.shutdown()


def test_failed_download_is_never_listed(hub, tmp_path):
    hub.corrupt.add(FILE)
    lib = Library(models_dir=tmp_path / "models", manifest_path=tmp_path / "lib.json", hf_cache_dir=False)
    mgr = ModelManager(hub=HubClient(hub.url), library=lib)
    model = next(g for g in mgr.hub.list_ggufs(REPO) if g.filename == FILE)
    (tid,) = mgr.download(model).task_ids
    p = mgr.queue.wait(tid, 30)
    assert p.state == DownloadState.FAILED and "does not match" in p.error
    assert lib.scan() == []
    mgr.shutdown()


def test_files_in_the_hf_cache_are_reused(hub, tmp_path):
    from huggingface_hub import hf_hub_download

    cache = tmp_path / "hf-cache"
    cached = hf_hub_download(REPO, FILE, cache_dir=cache, endpoint=hub.url)  # the real client fills its cache
    lib = Library(models_dir=tmp_path / "models", manifest_path=tmp_path / "lib.json", hf_cache_dir=cache)
    mgr = ModelManager(hub=HubClient(hub.url), library=lib)
    before = hub.count("GET", "/_cdn/")
    model = next(g for g in mgr.hub.list_ggufs(REPO) if g.filename == FILE)
    queued = mgr.download(model)
    assert queued.task_ids == () and queued.reused is not None
    assert queued.reused.path == Path(cached).resolve()
    assert hub.count("GET", "/_cdn/") == before  # nothing downloaded again
    assert [m.path for m in lib.scan()] == [Path(cached).resolve()]
    mgr.shutdown()


def test_disk_full_error_type_is_a_download_error():
    assert issubclass(DiskFullError, DownloadError)


# -- Hugging Face token: sent to the hub only, gated repos explained ----------------------------

TOKEN = "hf_test_secret_token"


def _bearer_seen(hub, path_part: str) -> list[str | None]:
    return [auth for m, p, _host, auth in hub.seen if m == "GET" and path_part in p]


def test_gated_repo_downloads_with_the_users_token_and_the_cdn_host_never_sees_it(hub, tmp_path, monkeypatch):
    hub.gated[REPO] = TOKEN
    hub.cdn_origin = hub.url.replace("127.0.0.1", "localhost")  # another origin, like the hub's CDN
    monkeypatch.setenv("HF_TOKEN", TOKEN)  # what `hf auth login` / HF_TOKEN give huggingface_hub.get_token()
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    job = job_for(hub, tmp_path)  # listing a gated repo works without accepting anything, as on the hub
    path = download_file(job)
    assert path.read_bytes() == hub.repos[REPO].files[FILE]
    assert _bearer_seen(hub, f"/{REPO}/resolve/main/{FILE}") == [f"Bearer {TOKEN}"]
    cdn = [(host, auth) for m, p, host, auth in hub.seen if m == "GET" and p.startswith("/_cdn/")]
    assert cdn and all(host.startswith("localhost:") and auth is None for host, auth in cdn)


def test_a_redirect_on_the_hubs_own_origin_keeps_the_token(hub, tmp_path):
    hub.gated[REPO] = TOKEN  # the fake hub's default CDN is a path on its own origin
    job = job_for(hub, tmp_path)
    path = download_file(job, token=TOKEN, endpoint=hub.url)
    assert path.read_bytes() == hub.repos[REPO].files[FILE]
    assert _bearer_seen(hub, f"/_cdn/{REPO}/{FILE}") == [f"Bearer {TOKEN}"]


@pytest.mark.parametrize(
    ("token", "status", "why"),
    [
        (False, 401, "no Hugging Face token was sent"),
        ("hf_wrong", 403, "your Hugging Face token was refused"),
    ],
)
def test_gated_repo_without_access_is_a_clear_message_not_a_retry(hub, tmp_path, token, status, why):
    hub.gated[REPO] = TOKEN
    job = job_for(hub, tmp_path)
    with pytest.raises(GatedModelError) as caught:
        download_file(job, token=token, endpoint=hub.url, backoff_base=0.01)
    message = str(caught.value)
    assert message.startswith(f"This model is gated: the hub refused {FILE} (HTTP {status}; {why}).")
    assert f"Accept its licence on huggingface.co/{REPO} and log in with `hf auth login`" in message
    assert isinstance(caught.value, DownloadError)
    assert hub.count("GET", f"/{REPO}/resolve/main/{FILE}") == 1
    assert usable_ggufs(tmp_path) == []


def test_the_token_is_never_sent_to_a_url_off_the_hub_endpoint(hub, tmp_path):
    hub.gated[REPO] = TOKEN
    job = job_for(hub, tmp_path)
    elsewhere = replace(job, url=job.url.replace("127.0.0.1", "localhost"))  # e.g. an edited sidecar
    with pytest.raises(GatedModelError, match=r"HTTP 401; no Hugging Face token was sent"):
        download_file(elsewhere, token=TOKEN, endpoint=hub.url, headers={"Authorization": f"Bearer {TOKEN}"})
    assert [auth for _m, _p, _h, auth in hub.seen if "/resolve/" in _p] == [None]


def test_the_queue_downloads_a_gated_model_with_the_token_and_explains_a_refusal(hub, tmp_path):
    hub.gated[REPO] = TOKEN
    job = job_for(hub, tmp_path)
    refused = DownloadQueue(token=False, endpoint=hub.url)
    try:
        failed = refused.wait(refused.add(job), timeout=60)
    finally:
        refused.shutdown()
    assert failed.state == DownloadState.FAILED and failed.error.startswith("This model is gated")
    allowed = DownloadQueue(token=TOKEN, endpoint=hub.url)
    try:
        done = allowed.wait(allowed.add(job), timeout=60)
    finally:
        allowed.shutdown()
    assert done.state == DownloadState.DONE, done.error
    assert job.dest.read_bytes() == hub.repos[REPO].files[FILE]


def test_the_manager_downloads_with_the_token_its_hub_client_lists_with(hub, tmp_path):
    hub.gated[REPO] = TOKEN
    lib = Library(models_dir=tmp_path / "models", manifest_path=tmp_path / "lib.json", hf_cache_dir=False)
    mgr = ModelManager(hub=HubClient(hub.url, token=TOKEN), library=lib)
    try:
        model = next(g for g in mgr.hub.list_ggufs(REPO) if g.filename == FILE)
        (tid,) = mgr.download(model).task_ids
        assert mgr.queue.wait(tid, 60).state == DownloadState.DONE
    finally:
        mgr.shutdown()
    assert [m.name for m in lib.scan()] == [FILE.removesuffix(".gguf")]
    assert _bearer_seen(hub, f"/{REPO}/resolve/main/{FILE}") == [f"Bearer {TOKEN}"]
