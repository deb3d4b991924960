"""Load options over the API (issue 31: the KV cache type and flash attention "per model ... /v1
load options"): ``POST /v1/models/load`` loads a model with the context, KV cache type, flash
attention, slots and GPU layers a client asks for, and ``/v1/models/unload`` unloads it; LM
Studio's clients find both under ``/api/v1/``. Real servers on free loopback ports, scripted
GGUFs, real engine processes (the KV cache type is read from llama.cpp's own load log)."""

from __future__ import annotations

import re
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.server.test_idle_ttl import USER, FakeClock, _loaded, _server, _sweep_goes, _sweep_stays
from tests.ui.scripted_gguf import CHATML, streaming_script, write_scripted_gguf

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="reads the engine's log by path")


@pytest.fixture
def models(family_models, tmp_path) -> dict[str, Path]:
    # heads of 32 values (128 over 4): llama.cpp's quantized KV blocks hold 32
    wide = write_scripted_gguf(
        tmp_path / "wide.gguf",
        chat_template=CHATML,
        script=streaming_script(),
        default_next="a",
        embedding_length=128,
    )
    return {"wide": wide, "loop-hermes": family_models["loop"], "call-mistral": family_models["mistral"]}


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def server(models, clock) -> Iterator[object]:
    yield from _server(models, clock, max_loaded=2)  # n_ctx 2048, 1 slot, swept by hand


def _load(server, path: str = "/v1/models/load", **body) -> httpx.Response:
    return httpx.post(server.url + path, json=body, timeout=120)


def _engine_pid(server, name: str) -> int:
    (path,) = [p for p in server.host.loaded_paths if p.stem == name]
    return server.host.model(path).engine.pid


def _kv_types_in_log(server, name: str) -> set[str]:
    """The KV cache types llama.cpp's load log names for the model's engine ("K (q8_0)")."""
    (path,) = [p for p in server.host.loaded_paths if p.stem == name]
    log = Path(server.host.model(path).engine._stderr_path).read_text(errors="replace")
    return set(re.findall(r"K \((\w+)\)", log))


def test_a_load_with_options_loads_the_model_with_them_and_keeps_it(server):
    r = _load(server, model="wide", context_length=1024, kv_cache_type="q8_0", parallel=2)
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["instance_id"] == "wide" and answer["status"] == "loaded"
    assert answer["load_config"] == {
        "context_length": 1024,
        "kv_cache_type": "q8_0",
        "flash_attention": True,
        "parallel": 2,
        "gpu_layers": 0,
        "ngram_draft": True,  # the server's
        "chat_template": None,  # the model's own
    }
    assert _kv_types_in_log(server, "wide") == {"q8_0"}  # what llama.cpp made, not what we asked
    pid = _engine_pid(server, "wide")
    card = httpx.get(server.url + "/v1/models", timeout=30).json()
    (entry,) = [m for m in card["data"] if m["id"] == "wide"]
    assert entry["callisto"]["n_ctx"] == 1024 and entry["callisto"]["parallel"] == 2

    # the same options again, none at all, and a request: the model stays as it was loaded
    assert (
        _load(server, model="wide", context_length=1024, kv_cache_type="q8_0", parallel=2).status_code == 200
    )
    assert _load(server, model="wide").json()["load_config"]["kv_cache_type"] == "q8_0"
    body = {"model": "wide", "messages": USER, "max_tokens": 4}
    assert httpx.post(server.url + "/v1/chat/completions", json=body, timeout=120).status_code == 200
    assert _engine_pid(server, "wide") == pid

    # other options: loaded again with them
    r = _load(server, model="wide", kv_cache_type="f16", flash_attention=False)
    assert r.status_code == 200 and r.json()["load_config"]["flash_attention"] is False
    assert _engine_pid(server, "wide") != pid and _kv_types_in_log(server, "wide") == {"f16"}
    assert r.json()["load_config"]["context_length"] == 2048  # the server's, where the load gives none


def test_a_load_of_a_model_loaded_so_answers_at_once_beside_its_running_requests(server, models):
    """A load that changes nothing does not queue behind the requests running on the model's
    slots (before, every load waited for them to end: a load replaces the model under them)."""
    from app.engine.host import Job

    options = {"model": "wide", "kv_cache_type": "q8_0", "parallel": 2}
    assert _load(server, **options).status_code == 200
    pid = _engine_pid(server, "wide")
    release, started = threading.Event(), threading.Event()

    def hold(_host, _model) -> None:  # a request that runs on a slot until the test lets it end
        started.set()
        release.wait(120)

    server.host.submit(Job(run=hold, model=models["wide"], owner="server", batchable=True), bounded=False)
    try:
        assert started.wait(120) and server.host.slots_busy == 1
        for again in (options, {"model": "wide"}):
            answer = _load(server, **again)
            assert answer.status_code == 200 and answer.json()["load_config"]["kv_cache_type"] == "q8_0"
        assert server.host.slots_busy == 1 and not release.is_set()  # answered beside it
    finally:
        release.set()
    assert _engine_pid(server, "wide") == pid


def test_gpu_layers_are_answered_as_the_build_offloads_them(server):
    """A build without a GPU backend keeps every layer on the CPU whatever it is given: the load
    and ``/api/ps`` say 0 layers and no VRAM then, not the number asked for (before: 5, and a
    sixth of the model "in VRAM"); "every layer" is -1, not llama-cpp-python's 2**31-1."""
    from app.engine.inprocess import gpu_offload_available

    gpu = gpu_offload_available()
    for asked, offloaded in ((5, 5 if gpu else 0), (-1, -1 if gpu else 0)):
        r = _load(server, model="wide", gpu_layers=asked)
        assert r.status_code == 200 and r.json()["load_config"]["gpu_layers"] == offloaded, r.text
        (ps,) = [
            m for m in httpx.get(server.url + "/api/ps", timeout=30).json()["models"] if m["name"] == "wide"
        ]
        if not gpu:
            assert ps["size_vram"] == 0
        elif asked == -1:
            assert ps["size_vram"] == ps["size"]
        else:
            assert 0 < ps["size_vram"] < ps["size"]


def test_lm_studio_paths_and_names(server):
    r = _load(
        server,
        "/api/v1/models/load",
        model="call-mistral",
        context_length=512,
        echo_load_config=True,
        eval_batch_size=64,
    )
    assert r.status_code == 200, r.text
    answer = r.json()
    assert answer["type"] == "llm" and answer["instance_id"] == "call-mistral"
    assert answer["load_config"]["context_length"] == 512
    assert answer["ignored"] == ["eval_batch_size"]  # LM Studio's; nothing here to set with it
    assert "load_config" not in _load(server, "/api/v1/models/load", model="call-mistral").json()  # not asked
    r = httpx.post(server.url + "/api/v1/models/unload", json={"instance_id": "call-mistral"}, timeout=60)
    assert r.status_code == 200 and r.json() == {"instance_id": "call-mistral"}
    assert _loaded(server) == set()
    r = httpx.post(server.url + "/api/v1/models/unload", json={"instance_id": "call-mistral"}, timeout=60)
    assert r.status_code == 404 and "not loaded" in r.json()["error"]["message"]  # an object, as LM Studio's


def test_a_kv_cache_type_the_model_cannot_take_is_a_load_error_that_says_why(server):
    r = _load(server, model="loop-hermes", kv_cache_type="q4_0")  # heads of 16 values
    assert r.status_code == 500 and r.json()["error"]["code"] == "model_load_failed"
    assert "heads are 16 values long: load it with an f16 KV cache" in r.json()["error"]["message"]
    assert server.host.loaded_paths == []


def test_a_load_ttl_unloads_the_model_once_idle_past_it(server, clock):
    assert _load(server, model="loop-hermes", ttl=30).status_code == 200
    _sweep_stays(server, clock, 29, "loop-hermes")
    _sweep_goes(server, clock, 1, "loop-hermes")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"kv_cache_type": "q5_1"}, "kv_cache_type"),
        ({"kv_cache_type": "q4_0", "flash_attention": False}, "flash_attention"),
        ({"context_length": 0}, "context_length"),
        ({"context_length": "4096"}, "context_length"),
        ({"parallel": 257}, "parallel"),
        ({"gpu_layers": -2}, "gpu_layers"),
        ({"flash_attention": "yes"}, "flash_attention"),
        ({"ttl": -1}, "ttl"),
        ({"chat_template": "{% if %}"}, "chat_template"),
        ({"ngram_draft": "off"}, "ngram_draft"),
        ({"n_ctx": 4096}, "n_ctx"),  # not a load option: named, with the ones there are
    ],
)
def test_a_bad_load_option_is_a_400_naming_it_and_loads_nothing(server, body, field):
    r = _load(server, model="loop-hermes", **body)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["param"] == field and field in error["message"]
    assert server.host.loaded_paths == []


def test_loading_an_unknown_model_is_a_404_that_lists_the_names(server):
    r = _load(server, model="no-such")
    assert r.status_code == 404 and "loop-hermes" in r.text
    assert server.host.loaded_paths == []


def test_ollama_num_ctx_loads_the_model_with_the_context_the_request_needs(server, models):
    """Ollama's clients set the context per request (``options.num_ctx``): a model loaded with less
    is loaded again with it; a smaller one never shrinks it (no reload for it), and one past the
    model's training context gets that context once, not a reload each time."""
    import ollama

    client = ollama.Client(host=server.url, timeout=120)

    def chat(num_ctx):
        reply = client.chat(
            model="loop-hermes", messages=USER, options={"num_predict": 4, "num_ctx": num_ctx}
        )
        assert reply.done
        (running,) = client.ps().models
        return running.context_length, _engine_pid(server, "loop-hermes")

    ctx, pid = chat(3000)  # not loaded: loaded with it (rounded to 256), not the server's 2048
    assert ctx == 3072
    assert chat(1000) == (3072, pid)  # less: kept as it is
    ctx, pid2 = chat(3500)  # more: loaded again with it
    assert ctx == 3584 and pid2 != pid
    ctx, pid3 = chat(100_000)  # past the model's 4096 of training: 4096, once
    assert ctx == 4096 and pid3 != pid2
    assert chat(100_000) == (4096, pid3)
    r = httpx.post(
        server.url + "/api/chat",
        json={"model": "loop-hermes", "messages": USER, "stream": False, "options": {"num_ctx": 0}},
        timeout=60,
    )
    assert r.status_code == 400 and "options.num_ctx" in r.text


def test_a_load_turns_n_gram_drafting_off_and_on(server):
    """``ngram_draft``: speculative decoding by n-gram lookup, as ``serve --ngram-draft`` sets it for
    every model; ``/slots`` says whether the model's slots draft."""

    def speculative() -> set[bool]:
        states = httpx.get(server.url + "/slots", params={"model": "wide"}, timeout=60).json()
        return {s["speculative"] for s in states}

    r = _load(server, model="wide", ngram_draft=False)
    assert r.status_code == 200 and r.json()["load_config"]["ngram_draft"] is False
    assert speculative() == {False}
    pid = _engine_pid(server, "wide")
    r = _load(server, model="wide", ngram_draft=True)
    assert r.status_code == 200 and r.json()["load_config"]["ngram_draft"] is True
    assert speculative() == {True} and _engine_pid(server, "wide") != pid


def test_lm_studio_lists_the_models_with_their_loaded_instances(server, models):
    """``GET /api/v1/models``: LM Studio's list, each model as its GGUF says it, and a loaded one
    with the settings it was loaded with."""
    from app.engine.models.metadata import read_metadata

    def listed() -> dict[str, dict]:
        r = httpx.get(server.url + "/api/v1/models", timeout=60)
        assert r.status_code == 200, r.text
        return {m["key"]: m for m in r.json()["models"]}

    before = listed()
    assert set(before) == {"wide", "loop-hermes", "call-mistral"}
    hermes = before["loop-hermes"]
    meta = read_metadata(models["loop-hermes"])
    assert hermes["type"] == "llm" and hermes["format"] == "gguf" and hermes["loaded_instances"] == []
    assert hermes["size_bytes"] == models["loop-hermes"].stat().st_size
    assert hermes["architecture"] == meta.architecture and hermes["max_context_length"] == meta.context_length
    assert hermes["capabilities"] == {"vision": False, "trained_for_tool_use": True}
    assert before["wide"]["capabilities"]["trained_for_tool_use"] is False  # plain ChatML: no calls
    assert hermes["quantization"]["name"] == "F32" and hermes["params_string"]

    assert (
        _load(server, "/api/v1/models/load", model="wide", context_length=1024, parallel=2).status_code == 200
    )
    (instance,) = listed()["wide"]["loaded_instances"]
    assert instance == {
        "id": "wide",
        "config": {"context_length": 1024, "parallel": 2, "flash_attention": True, "kv_cache_type": "f16"},
    }
    assert _load(server, "/api/v1/models/unload", instance_id="wide").status_code == 200
    assert listed()["wide"]["loaded_instances"] == []
