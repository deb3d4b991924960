"""The shared engine host: one queue and one thread for everyone, at most ``max_loaded`` models
(least recently used closed first, a failed load changes nothing), a bounded queue that the
window's own jobs may pass, and a cancelled job that never runs. Real tiny GGUFs, real llama.cpp."""

from __future__ import annotations

from pathlib import Path

import pytest

from app.engine.errors import EngineBusy, JobCancelled
from app.engine.host import EngineHost, Job, ModelChange
from app.engine.models.tiny import write_tiny_gguf
from tests.support.host_hold import hold


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> list[Path]:
    folder = tmp_path_factory.mktemp("host-models")
    return [write_tiny_gguf(folder / f"m{i}.gguf", seed=i) for i in range(3)]


@pytest.fixture
def host():
    h = EngineHost(max_loaded=1, queue_size=2)
    h.start()
    yield h
    h.stop()


def _closed(model) -> bool:
    """Whether the model was closed (``LoadedModel.closed`` where it exists, else its llama is gone)."""
    return model.closed if hasattr(type(model), "closed") else model.llm is None


def test_one_model_at_a_time_by_default_and_listeners_hear_the_swap(host, models):
    a, b = models[0], models[1]
    changes: list[ModelChange] = []
    host.add_listener(changes.append)
    first = host.call(lambda m: m, model=a, owner="window")
    assert host.call(lambda m: m, model=a) is first  # loaded once, reused
    second = host.call(lambda m: m, model=b, owner="server")
    assert host.loaded_paths == [b.resolve()] and host.current == b.resolve()
    assert _closed(first) and not _closed(second)
    assert [(c.loaded.name, [p.name for p in c.closed], c.owner) for c in changes] == [
        ("m0.gguf", [], "window"),
        ("m1.gguf", ["m0.gguf"], "server"),
    ]
    assert changes[1].model is second


def test_a_job_is_told_whether_its_model_was_loaded_for_it(host, models):
    """``Job.load_s``: the load's seconds for the job that loaded its model (a swap or a reload
    with other settings too), None for one that found it loaded."""
    import threading

    from app.engine.llm import LoadSettings

    def run(job: Job) -> float | None:
        done = threading.Event()
        job.run = lambda _host, _model: done.set()
        host.submit(job)
        assert done.wait(60)
        return job.load_s

    first = run(Job(run=lambda h, m: None, model=models[0]))
    assert first is not None and first > 0
    assert run(Job(run=lambda h, m: None, model=models[0])) is None  # loaded already
    assert run(Job(run=lambda h, m: None, model=models[1])) is not None  # swapped in
    reloaded = Job(run=lambda h, m: None, model=models[1], settings=LoadSettings(n_ctx=256), exact=True)
    assert run(reloaded) is not None  # loaded again with other settings
    assert run(Job(run=lambda h, m: None)) is None  # no model


def test_max_loaded_two_keeps_both_and_closes_the_least_recently_used(models):
    host = EngineHost(max_loaded=2)
    host.start()
    try:
        a, b, c = (host.call(lambda m: m, model=p) for p in models)
        assert [p.name for p in host.loaded_paths] == ["m1.gguf", "m2.gguf"] and _closed(a)
        host.call(lambda m: m, model=models[1])  # b is now the most recently used
        host.call(lambda m: m, model=models[0])
        assert [p.name for p in host.loaded_paths] == ["m1.gguf", "m0.gguf"]
        assert _closed(c) and not _closed(b)
    finally:
        host.stop()


def test_a_failed_load_changes_nothing(host, models, tmp_path):
    from app.engine.errors import ModelLoadError

    loaded = host.call(lambda m: m, model=models[0])
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\0" * 20)
    with pytest.raises(ModelLoadError):
        host.call(lambda m: m, model=broken)
    assert host.loaded_paths == [models[0].resolve()] and not _closed(loaded)
    assert host.call(lambda m: m is loaded, model=models[0])


def test_the_bound_refuses_server_jobs_but_counts_and_passes_the_windows(host):
    ran: list[str] = []
    release = hold(host)
    assert host.busy and host.running_owner == "server"
    host.submit(Job(run=lambda h, m: ran.append("window"), owner="window"), bounded=False)
    host.submit(Job(run=lambda h, m: ran.append("server 1")))
    with pytest.raises(EngineBusy) as busy:  # the window's job plus one request fill a bound of 2
        host.submit(Job(run=lambda h, m: ran.append("refused")))
    assert busy.value.waiting == 2 and busy.value.retry_after_s >= 1
    host.submit(Job(run=lambda h, m: ran.append("window 2"), owner="window"), bounded=False)
    assert host.pending_owners() == ["window", "server", "window"]
    release.set()
    host.call(lambda m: None)
    assert ran == ["window", "server 1", "window 2"]  # in the order they came


def test_a_job_cancelled_while_it_waits_never_runs_and_is_told(host):
    errors: list[BaseException] = []
    ran: list[str] = []
    release = hold(host)
    job = Job(run=lambda h, m: ran.append("ran"), on_error=errors.append)
    host.submit(job)
    job.cancel.set()
    release.set()
    host.call(lambda m: None)
    assert ran == [] and len(errors) == 1 and isinstance(errors[0], JobCancelled)


def test_a_failing_job_does_not_stop_the_engine(host):
    errors: list[BaseException] = []

    def boom(_h, _m) -> None:
        raise ValueError("broken job")

    host.submit(Job(run=boom, on_error=errors.append))
    assert host.call(lambda m: "still serving") == "still serving"
    assert [str(e) for e in errors] == ["broken job"]


def test_stop_drops_the_waiting_jobs_and_closes_the_models(models):
    host = EngineHost()
    host.start()
    model = host.call(lambda m: m, model=models[0])
    errors: list[BaseException] = []
    release = hold(host)
    ran: list[str] = []
    host.submit(Job(run=lambda h, m: ran.append("ran"), on_error=errors.append))
    thread = host._thread
    host.stop(timeout=0)  # drops the waiting job at once; the loop ends after the running one
    assert len(errors) == 1 and isinstance(errors[0], JobCancelled)
    release.set()
    thread.join(30)
    assert not host.alive and _closed(model) and host.loaded_paths == [] and ran == []


def test_call_from_the_hosts_own_thread_is_refused(host):
    with pytest.raises(RuntimeError, match="own thread"):
        host.call(lambda m: host.call(lambda m2: None))


def test_lowering_max_loaded_closes_the_least_recently_used_now(models):
    host = EngineHost(max_loaded=2)
    host.start()
    try:
        a, b = (host.call(lambda m: m, model=p) for p in models[:2])
        changes: list[ModelChange] = []
        host.add_listener(changes.append)
        host.set_max_loaded(1)
        host.call(lambda m: None)
        assert host.loaded_paths == [models[1].resolve()] and _closed(a) and not _closed(b)
        assert [(c.loaded.name, [p.name for p in c.closed], c.owner) for c in changes] == [
            ("m1.gguf", ["m0.gguf"], "settings")
        ]
        with pytest.raises(ValueError):
            host.set_max_loaded(0)
    finally:
        host.stop()
