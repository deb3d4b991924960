"""A misbehaving hub: downloads stop at the announced size, give up in the end, stay in the models
folder and stop at once when the user cancels a stalled transfer (real HTTP on 127.0.0.1)."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from app.engine.models.download import (
    DownloadError,
    DownloadQueue,
    DownloadState,
    download_file,
    part_path,
    safe_destination,
)
from app.engine.models.hub import HubClient

REPO = "acme/Tiny-Chat-GGUF"
FILE = "Tiny-Chat-Q8_0.gguf"


def job_for(hub, dest_dir: Path):
    model = next(g for g in HubClient(hub.url).list_ggufs(REPO) if g.filename == FILE)
    (job,) = HubClient(hub.url).download_jobs(model, dest_dir)
    return job


def test_h10_download_stops_at_the_announced_size(hub, tmp_path):
    hub.endless.add(FILE)  # no Content-Length, then junk for ever
    job = job_for(hub, tmp_path)
    path = download_file(job, retries=1, backoff_base=0.01, token=False)
    # Before: 40 MB written for a 1 MB file, then a misleading "disk is full".
    assert path.stat().st_size == job.size
    assert path.read_bytes() == hub.repos[REPO].files[FILE]
    assert not part_path(job.dest).exists()


def test_h11_short_answers_that_ignore_range_exhaust_the_retries(hub, tmp_path):
    hub.short_bodies[FILE] = 1000  # every answer: 200, 1000 bytes, Range ignored
    job = job_for(hub, tmp_path)
    with pytest.raises(DownloadError, match="failed after 3 retries"):
        download_file(job, retries=3, backoff_base=0.01, token=False)
    cdn = [r for r in hub.requests if r[1].startswith("/_cdn/")]
    assert len(cdn) == 4  # before: 380 requests in 20 s and never failing


def test_h11_real_progress_still_earns_the_retries_back(hub, tmp_path):
    data = bytes(range(256)) * (13 * 1024) + b"tail"  # 3.25 MiB
    hub.add_repo("acme/Big-GGUF", {"big.gguf": data})
    step = 1024 * 1024 + 4096
    hub.drop_after["big.gguf"] = [step, step, step]  # every answer drops after a bit over 1 MiB
    model = next(g for g in HubClient(hub.url).list_ggufs("acme/Big-GGUF"))
    (job,) = HubClient(hub.url).download_jobs(model, tmp_path)
    path = download_file(job, retries=1, backoff_base=0.01, token=False)
    assert path.read_bytes() == data


@pytest.mark.parametrize(
    "repo_id, filename",
    [
        ("..", "evil.gguf"),
        ("acme/..", "evil.gguf"),
        ("acme\\..\\..\\..", "evil.gguf"),
        ("acme/x", "..\\..\\..\\evil.gguf"),
        ("acme/x", "../../../evil.gguf"),
        ("acme/x", "C:\\Windows\\evil.gguf"),
        ("C:", "x.gguf"),
        ("acme/x", "sub/dir/ok.gguf"),
    ],
)
def test_h16_destination_stays_inside_the_models_folder(tmp_path, repo_id, filename):
    models = tmp_path / "models"
    models.mkdir()
    try:
        dest = safe_destination(models, repo_id, filename)
    except DownloadError as exc:
        assert "cannot be used" in str(exc)
        return
    assert models.resolve() in dest.resolve().parents
    assert dest.parent.parent == models  # one folder per repository, nothing deeper or higher
    assert "\\" not in str(dest.relative_to(models)) and ".." not in dest.relative_to(models).parts


def test_h16_usual_names_are_unchanged(tmp_path):
    assert safe_destination(tmp_path, "acme/Tiny-Chat-GGUF", "split/Tiny-Q4_K_M-00001-of-00002.gguf") == (
        tmp_path / "acme__Tiny-Chat-GGUF" / "Tiny-Q4_K_M-00001-of-00002.gguf"
    )


@pytest.mark.parametrize("action", ["cancel", "pause"])
def test_h17_cancel_or_pause_of_a_stalled_download_is_immediate(hub, tmp_path, action):
    hub.hold_after[FILE] = 100_000  # then the server goes silent (up to 30 s)
    q = DownloadQueue(timeout=30.0, backoff_base=0.01)
    job = job_for(hub, tmp_path)
    tid = q.add(job)
    try:
        assert hub.held.wait(30)
        part = part_path(job.dest)
        for _ in range(3000):  # until the client has written what it was sent (bounded)
            if part.exists() and part.stat().st_size == 100_000:
                break
            time.sleep(0.01)
        start = time.monotonic()
        getattr(q, action)(tid)
        p = q.wait(tid, 30)
        elapsed = time.monotonic() - start
        assert p.state == (DownloadState.CANCELLED if action == "cancel" else DownloadState.PAUSED)
        assert elapsed < 15.0, elapsed  # before: the 30 s socket timeout (generous: a busy machine)
    finally:
        hub.release.set()
        q.shutdown()
