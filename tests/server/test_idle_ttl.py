"""The model lifecycle (issue 31): a served model loads on the first request that names it (JIT),
on every API; a model idle past its time to live is unloaded (its engine process ends) and the
next request loads it again. The time to live is the server's (``idle_ttl_s``, ``serve
--idle-ttl``) or the request's: Ollama's ``keep_alive``, the OpenAI ``ttl``.

No wall-clock assertion: the server's reaper runs on a fake clock and sweeps by hand
(``idle_sweep_s=0``), or a time to live of 0 unloads at once (an event the test waits on). Real
servers on free loopback ports, tiny scripted GGUFs, real engine processes."""

from __future__ import annotations

import math
import os
import re
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.engine.test_model_lifetime import engine_children
from tests.server.conftest import TOOLS
from tests.ui.scripted_gguf import CHATML, streaming_script, write_scripted_gguf

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="reads child command lines")

USER = [{"role": "user", "content": "hi"}]
MAX_TTL = 365 * 24 * 3600  # the longest ttl a request may give


class FakeClock:
    """Monotonic seconds that move only when the test says."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def models(family_models, tmp_path) -> dict[str, Path]:
    stream = write_scripted_gguf(
        tmp_path / "stream.gguf", chat_template=CHATML, script=streaming_script(), default_next="a"
    )
    return {
        "loop-hermes": family_models["loop"],
        "call-mistral": family_models["mistral"],
        "call-llama3": family_models["llama3"],
        "stream": stream,
    }


def _server(models: dict[str, Path], clock: FakeClock, **config) -> Iterator[object]:
    from app.server import ApiServer, ServerConfig

    base = dict(
        port=0,
        models=[str(p) for p in models.values()],
        use_library=False,
        n_ctx=2048,
        n_threads=1,
        parallel=1,
        max_loaded=4,
        idle_sweep_s=0,  # the tests sweep by hand
        max_tokens_limit=100_000,
    )
    server = ApiServer(ServerConfig(**{**base, **config}), clock=clock)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def server(models, clock) -> Iterator[object]:
    yield from _server(models, clock)


def _loaded(server) -> set[str]:
    return {p.stem for p in server.host.loaded_paths}


def _openai(server, model: str, **extra) -> httpx.Response:
    body = {"model": model, "messages": USER, "max_tokens": 4, **extra}
    return httpx.post(server.url + "/v1/chat/completions", json=body, timeout=120)


def _ollama(server, model: str, **extra) -> httpx.Response:
    body = {"model": model, "messages": USER, "stream": False, "options": {"num_predict": 4}, **extra}
    return httpx.post(server.url + "/api/chat", json=body, timeout=120)


def _wait_idle(server, timeout: float = 60.0) -> None:
    """Until the engine runs and holds nothing (a cancelled stream's job has ended)."""
    deadline = time.monotonic() + timeout
    while server.host.busy or server.host.pending:
        assert time.monotonic() < deadline, "the engine did not become idle"
        time.sleep(0.02)


# -- JIT ------------------------------------------------------------------------------------------


def test_each_api_loads_a_model_on_the_first_request_that_names_it(server, models):
    assert server.host.loaded_paths == []
    assert httpx.get(server.url + "/v1/models", timeout=30).status_code == 200
    assert httpx.get(server.url + "/api/tags", timeout=30).status_code == 200
    assert server.host.loaded_paths == []  # listing loads nothing

    assert _openai(server, "loop-hermes", tools=TOOLS).status_code == 200
    assert _loaded(server) == {"loop-hermes"}
    r = httpx.post(
        server.url + "/v1/messages",
        json={"model": "call-mistral", "max_tokens": 4, "messages": USER},
        timeout=120,
    )
    assert r.status_code == 200, r.text
    assert _loaded(server) == {"loop-hermes", "call-mistral"}
    assert _ollama(server, "call-llama3").status_code == 200
    assert _loaded(server) == {"loop-hermes", "call-mistral", "call-llama3"}
    r = httpx.post(server.url + "/v1/completions", json={"model": "stream", "prompt": "a", "max_tokens": 2})
    assert r.status_code == 200, r.text
    assert _loaded(server) == set(models)


# -- keep_alive 0 / ttl 0: unloaded right after the reply -----------------------------------------


@pytest.mark.parametrize(
    ("api", "extra"),
    [
        ("ollama-chat", {"keep_alive": 0}),
        ("ollama-generate", {"keep_alive": "0s"}),
        ("openai-chat", {"ttl": 0}),
        ("openai-completions", {"ttl": 0}),
    ],
)
def test_a_time_to_live_of_0_unloads_after_the_reply_and_the_next_request_loads_again(
    server, models, api, extra
):
    before = engine_children()
    path = models["loop-hermes"]
    if api == "ollama-chat":
        r = _ollama(server, "loop-hermes", **extra)
    elif api == "ollama-generate":
        body = {
            "model": "loop-hermes",
            "prompt": "hi",
            "stream": False,
            "options": {"num_predict": 4},
            **extra,
        }
        r = httpx.post(server.url + "/api/generate", json=body, timeout=120)
    elif api == "openai-chat":
        r = _openai(server, "loop-hermes", **extra)
    else:
        body = {"model": "loop-hermes", "prompt": "hi", "max_tokens": 4, **extra}
        r = httpx.post(server.url + "/v1/completions", json=body, timeout=120)
    assert r.status_code == 200, r.text
    assert server.reaper.wait_unloaded(path, timeout=60), "the model was not unloaded"
    assert server.host.loaded_paths == []
    assert not (engine_children() - before), "its engine process still runs"

    assert _openai(server, "loop-hermes").status_code == 200  # JIT again, kept (no time to live)
    assert _loaded(server) == {"loop-hermes"}
    (pid,) = engine_children() - before
    assert server.host.model(path).engine.pid == pid


# -- a time to live, on the reaper's clock --------------------------------------------------------


def _sweep_stays(server, clock: FakeClock, seconds: float, model: str) -> None:
    clock.advance(seconds)
    assert server.reaper.sweep(wait=True) == []
    assert model in _loaded(server)


def _sweep_goes(server, clock: FakeClock, seconds: float, model: str) -> None:
    before = {server.host.model(p).engine.pid for p in server.host.loaded_paths}
    clock.advance(seconds)
    gone = server.reaper.sweep(wait=True)
    assert [p.stem for p in gone] == [model]
    assert model not in _loaded(server)
    still = {server.host.model(p).engine.pid for p in server.host.loaded_paths}
    assert len(before - still) == 1 and not ((before - still) & engine_children())


def test_a_request_ttl_unloads_only_once_past_it(server, clock):
    assert _openai(server, "loop-hermes", ttl=60).status_code == 200
    assert _openai(server, "call-mistral").status_code == 200  # no time to live: kept
    _sweep_stays(server, clock, 59, "loop-hermes")
    _sweep_goes(server, clock, 1, "loop-hermes")
    _sweep_stays(server, clock, 10**9, "call-mistral")
    assert _openai(server, "loop-hermes").status_code == 200  # JIT again
    assert _loaded(server) == {"loop-hermes", "call-mistral"}


def test_the_latest_request_sets_the_time_to_live(server, clock):
    assert _ollama(server, "loop-hermes", keep_alive="5m").status_code == 200
    _sweep_stays(server, clock, 299, "loop-hermes")
    assert _ollama(server, "loop-hermes", keep_alive="1h").status_code == 200  # idle from now, for an hour
    _sweep_stays(server, clock, 3599, "loop-hermes")
    _sweep_goes(server, clock, 1, "loop-hermes")
    assert _ollama(server, "loop-hermes", keep_alive=-1).status_code == 200  # negative: forever
    _sweep_stays(server, clock, 10**12, "loop-hermes")


def test_the_server_default_and_a_request_that_keeps_its_model(models, clock):
    for server in _server(models, clock, idle_ttl_s=30):
        assert _openai(server, "loop-hermes").status_code == 200
        assert _openai(server, "call-mistral", ttl=MAX_TTL).status_code == 200
        _sweep_stays(server, clock, 29, "loop-hermes")
        _sweep_goes(server, clock, 1, "loop-hermes")
        server.config.idle_ttl_s = 0  # 0: never (the window's setting changes it on a running server)
        assert _openai(server, "loop-hermes").status_code == 200
        _sweep_stays(server, clock, 10**6, "loop-hermes")
        assert "call-mistral" in _loaded(server)


def test_a_preloaded_model_is_idle_from_the_start(models, clock):
    for server in _server(models, clock, idle_ttl_s=10, preload=str(models["loop-hermes"])):
        deadline = time.monotonic() + 60
        while "loop-hermes" not in _loaded(server):
            assert time.monotonic() < deadline, "the model did not preload"
            time.sleep(0.02)
        _wait_idle(server)
        _sweep_stays(server, clock, 9, "loop-hermes")
        _sweep_goes(server, clock, 1, "loop-hermes")


def test_a_model_in_use_is_never_unloaded_under_its_request(server, models, clock):
    before = engine_children()
    body = {"model": "stream", "messages": USER, "max_tokens": 100_000, "stream": True, "ttl": 5}
    with httpx.stream("POST", server.url + "/v1/chat/completions", json=body, timeout=120) as r:
        assert r.status_code == 200
        lines = r.iter_lines()
        assert next(line for line in lines if '"content"' in line and "role" not in line)  # it generates
        (pid,) = engine_children() - before
        clock.advance(3600)
        assert server.reaper.sweep(wait=True) == []  # in use: not even looked at
        assert "stream" in _loaded(server) and pid in engine_children()
        assert next(line for line in lines if line)  # it still streams
    _wait_idle(server)  # the client left: its generation stopped, and it is idle from now
    _sweep_stays(server, clock, 4, "stream")
    _sweep_goes(server, clock, 1, "stream")
    assert pid not in engine_children()


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_a_client_that_has_its_reply_finds_the_model_idle(server, clock, monkeypatch, stream):
    """A request's use of its model ends before its reply's last part goes out: a client that read
    the whole reply, then sweeps, finds the model idle from that moment (before, the engine marked
    it idle only after handing the reply over, so the sweep could still see it in use)."""
    replied = threading.Event()
    read_before_end: list[bool] = []
    end = server.reaper.end

    def ending(path: Path, ttl: float | None) -> None:
        # The old order let the client read the reply while this waited; the wait only bounds it.
        read_before_end.append(replied.wait(1.0))
        end(path, ttl)

    monkeypatch.setattr(server.reaper, "end", ending)
    body = {"model": "loop-hermes", "messages": USER, "max_tokens": 4, "ttl": 5, "stream": stream}
    with httpx.stream("POST", server.url + "/v1/chat/completions", json=body, timeout=120) as r:
        assert r.status_code == 200
        text = r.read().decode()
    replied.set()
    assert text.rstrip().endswith("data: [DONE]" if stream else "}")
    assert read_before_end == [False]
    _sweep_goes(server, clock, 5, "loop-hermes")


def test_a_request_queued_for_a_model_keeps_it(server, models, clock):
    """A model with a request waiting for it is in use: a sweep leaves it."""
    assert _openai(server, "loop-hermes", ttl=1).status_code == 200
    path = server.reaper.begin(models["loop-hermes"])  # as a request does when it is queued
    clock.advance(10)
    assert server.reaper.sweep(wait=True) == []
    server.reaper.end(path, 1)
    _sweep_goes(server, clock, 1, "loop-hermes")


# -- the official ollama client, Ollama's load / unload with nothing to generate ------------------


def test_the_ollama_client_keep_alive(server, models):
    import ollama

    client = ollama.Client(host=server.url, timeout=120)
    path = models["loop-hermes"]
    reply = client.chat(model="loop-hermes", messages=USER, keep_alive=0, options={"num_predict": 4})
    assert reply.done
    assert server.reaper.wait_unloaded(path, timeout=60) and server.host.loaded_paths == []

    loaded = client.generate(model="loop-hermes", keep_alive="10m")  # no prompt: only loads
    assert loaded.done and loaded.done_reason == "load" and _loaded(server) == {"loop-hermes"}
    unloaded = client.chat(model="loop-hermes", messages=[], keep_alive=0)  # nothing to say: unloads
    assert unloaded.done and unloaded.done_reason == "unload" and server.host.loaded_paths == []
    assert server.reaper.unloads[path.resolve()] == 2

    parts = list(client.chat(model="call-mistral", messages=USER, stream=True, keep_alive="1m"))
    assert parts[-1].done and _loaded(server) == {"call-mistral"}


def test_unloading_a_model_that_is_not_loaded_loads_nothing(server):
    r = httpx.post(server.url + "/api/generate", json={"model": "loop-hermes", "keep_alive": 0}, timeout=60)
    assert r.status_code == 200 and r.json()["done_reason"] == "unload"
    assert server.host.loaded_paths == []
    r = httpx.post(server.url + "/api/chat", json={"model": "no-such", "keep_alive": 0}, timeout=60)
    assert r.status_code == 404


def test_unloading_a_model_in_use_waits_for_its_requests(server, models):
    assert _openai(server, "loop-hermes").status_code == 200
    path = server.reaper.begin(models["loop-hermes"])  # a request runs on it
    r = httpx.post(server.url + "/api/generate", json={"model": "loop-hermes", "keep_alive": 0}, timeout=60)
    assert r.status_code == 200 and r.json()["done_reason"] == "unload"
    assert _loaded(server) == {"loop-hermes"}  # not under its request
    server.reaper.end(path, None)  # it ends (asking for the default): the model goes now all the same
    assert server.reaper.wait_unloaded(path, timeout=60) and server.host.loaded_paths == []


def test_ollama_ps_lists_the_loaded_models_and_when_each_is_unloaded(server, models, clock):
    """``/api/ps`` (``ollama ps``, and what Open WebUI reads): the models loaded now, the latest
    first, each with the memory it takes and the time it is unloaded at if no request comes."""
    from datetime import UTC, datetime, timedelta

    import ollama

    from app.engine.models.estimate import kv_cache_bytes, kv_shape
    from app.engine.models.metadata import read_metadata

    client = ollama.Client(host=server.url, timeout=120)
    assert client.ps().models == []
    assert client.chat(model="loop-hermes", messages=USER, keep_alive="5m", options={"num_predict": 4}).done
    clock.advance(100)  # idle for 100 of its 300 s
    before = datetime.now(UTC)
    (running,) = client.ps().models
    after = datetime.now(UTC)
    assert running.model == running.name == "loop-hermes" and running.context_length == 2048
    assert before + timedelta(seconds=200) <= running.expires_at <= after + timedelta(seconds=200)
    # the file and its KV cache: 2048 tokens of 1 slot, f16, of the model's shape
    meta = read_metadata(models["loop-hermes"])
    layers, kv_heads, head_dim = kv_shape(meta.raw, meta.architecture)
    kv = kv_cache_bytes(layers, 2048, kv_heads, head_dim)
    assert kv > 0 and running.size == models["loop-hermes"].stat().st_size + kv and running.size_vram == 0
    # what the file says of itself, as `ollama ps` and Open WebUI show it (a --model file too)
    assert running.details.format == "gguf" and running.details.family == meta.architecture == "llama"
    assert running.details.families == ["llama"] and running.details.quantization_level == "F32"
    assert 74_000 <= meta.parameter_count < 76_000  # a scripted model: some 75K parameters
    assert running.details.parameter_size == f"{round(meta.parameter_count / 1000)}K"
    (listed,) = [m for m in client.list().models if m.model == "loop-hermes"]
    shown = client.show("loop-hermes")
    assert listed.details == running.details == shown.details
    assert listed.modified_at == shown.modified_at  # the file's time in both, not the time of asking
    # one ID for this version of the file (`ollama list` shows its first 12 characters), another
    # model's differs, and a changed file gets a new one
    assert len(listed.digest) == 64 and listed.digest == running.digest
    others = {m.model: m.digest for m in client.list().models}
    assert len(set(others.values())) == len(others)
    stat = models["loop-hermes"].stat()
    os.utime(models["loop-hermes"], ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    (again,) = [m for m in client.list().models if m.model == "loop-hermes"]
    assert again.digest != listed.digest
    os.utime(models["loop-hermes"], ns=(stat.st_atime_ns, stat.st_mtime_ns))

    assert client.chat(model="call-mistral", messages=USER, keep_alive=-1, options={"num_predict": 4}).done
    kept, first = client.ps().models
    assert (kept.name, first.name) == ("call-mistral", "loop-hermes")  # the latest first
    assert kept.expires_at.year > 2200  # kept loaded: far in the future, as Ollama says it
    client.generate(model="loop-hermes", keep_alive=0)  # unloaded: gone from the list
    assert [m.name for m in client.ps().models] == ["call-mistral"]


# -- bad values -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "field", "value"),
    [
        ("/api/chat", "keep_alive", "5 minutes"),
        ("/api/chat", "keep_alive", True),
        ("/api/chat", "keep_alive", {"minutes": 5}),
        ("/api/generate", "keep_alive", "1d"),
        ("/api/generate", "keep_alive", ""),
        ("/v1/chat/completions", "ttl", -1),
        ("/v1/chat/completions", "ttl", "60"),
        ("/v1/completions", "ttl", False),
        ("/v1/completions", "ttl", 10**12),
    ],
)
def test_bad_values_are_a_400_naming_the_field(server, path, field, value):
    if path == "/api/generate":
        body = {"model": "loop-hermes", "prompt": "hi"}
    elif path == "/v1/completions":
        body = {"model": "loop-hermes", "prompt": "hi"}
    else:
        body = {"model": "loop-hermes", "messages": USER}
    r = httpx.post(server.url + path, json={**body, field: value}, timeout=30)
    assert r.status_code == 400, r.text
    assert field in r.text
    assert server.host.loaded_paths == []  # refused before any engine work


def test_keep_alive_reads_as_ollama_reads_it():
    from app.server._idle import FOREVER, parse_keep_alive, parse_ttl

    cases = {
        "5m": 300,
        "30s": 30,
        "1h": 3600,
        "1h30m": 5400,
        "1.5h": 5400,
        "250ms": 0.25,
        "0": 0,
        "300": 300,
        "0s": 0,
        0: 0,
        42: 42,
        2.5: 2.5,
        "-1m": FOREVER,
        -1: FOREVER,
        None: None,
    }
    for value, seconds in cases.items():
        assert parse_keep_alive(value) == seconds, value
    assert parse_ttl(None) is None and parse_ttl(0) == 0 and parse_ttl(90) == 90
    assert math.isinf(FOREVER)


# -- serve --idle-ttl -----------------------------------------------------------------------------


def test_serve_idle_ttl_unloads_on_its_own_and_reloads(family_models):
    import psutil

    from tests.server.test_serve_cli import _interrupt, _serve, _url_of

    proc = _serve("--model", str(family_models["loop"]), "--port", "0", "--threads", "1", "--idle-ttl", "1")
    try:
        url = _url_of(proc)
        me = psutil.Process(proc.pid)

        def engines() -> set[int]:
            out = set()
            for child in me.children(recursive=True):
                try:
                    if "--engine-child" in child.cmdline() and child.status() != psutil.STATUS_ZOMBIE:
                        out.add(child.pid)
                except psutil.NoSuchProcess:
                    continue
            return out

        def wait_for(what, timeout: float = 60.0) -> None:
            deadline = time.monotonic() + timeout
            while not what():
                assert time.monotonic() < deadline, "timed out"
                time.sleep(0.05)

        wait_for(lambda: bool(engines()))  # preloaded (--model) ...
        wait_for(lambda: not engines())  # ... and unloaded once idle past 1 s (the server's own sweep)
        r = httpx.post(
            url + "/v1/chat/completions", json={"model": "loop-hermes", "messages": USER}, timeout=60
        )
        assert r.status_code == 200 and re.match(r"chatcmpl-", r.json()["id"])
    finally:
        assert _interrupt(proc) == 0


def test_serve_refuses_a_negative_idle_ttl(family_models):
    from tests.server.test_serve_cli import _serve

    proc = _serve("--model", str(family_models["loop"]), "--port", "0", "--idle-ttl", "-5")
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and "--idle-ttl must be 0 (never) or a number of seconds" in err
