"""Ollama's ``/api/pull`` and ``/api/delete``: a model named ``hf.co/{owner}/{repo}:{quant}`` is
downloaded from a real local hub (``tests.support.fake_hub``, real tiny GGUFs, ``HF_ENDPOINT``) into
the library's folder and served under that name; the official ollama client drives it against a
real server on a loopback port."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from app.engine.models.tiny import write_tiny_gguf
from tests.server.test_idle_ttl import FakeClock, _server
from tests.support.fake_hub import FakeHub
from tests.ui.scripted_gguf import CHATML

REPO = "acme/Tiny-Chat-GGUF"
USER = [{"role": "user", "content": "Hi"}]


def _gguf(folder: Path, name: str, seed: int) -> bytes:
    return write_tiny_gguf(
        folder / name,
        chat_template=CHATML,
        control_tokens=["<|im_start|>", "<|im_end|>"],
        bos=None,
        eos="<|im_end|>",
        seed=seed,
    ).read_bytes()


@pytest.fixture
def hub(tmp_path) -> Iterator[FakeHub]:
    src = tmp_path / "src"
    src.mkdir()
    h = FakeHub()
    h.add_repo(
        REPO,
        {
            "Tiny-Chat-Q8_0.gguf": _gguf(src, "a.gguf", 1),
            "Tiny-Chat-Q4_K_M.gguf": _gguf(src, "b.gguf", 2),
            "README.md": b"# Tiny\n",
        },
    )
    h.start()
    yield h
    h.release.set()
    h.stop()


@pytest.fixture
def server(hub, tmp_path, monkeypatch) -> Iterator[object]:
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setenv("HF_TOKEN", "")
    own = tmp_path / "own" / "mine.gguf"
    own.parent.mkdir()
    own.write_bytes(_gguf(tmp_path / "src", "c.gguf", 3))
    yield from _server({"mine": own}, FakeClock())


@pytest.fixture
def client(server):
    import ollama

    return ollama.Client(host=server.url, timeout=60)


def _models_dir() -> Path:
    from app.storage import paths

    return paths.models_dir()


def test_a_hugging_face_name_is_pulled_with_progress_then_served_under_it(server, client, hub):
    name = f"hf.co/{REPO}:Q8_0"
    lines = list(client.pull(name, stream=True))
    statuses = [p.status for p in lines]
    assert statuses[0] == "pulling manifest" and statuses[-1] == "success"
    assert "verifying sha256 digest" in statuses and "writing manifest" in statuses
    digest = f"sha256:{hub.sha256(REPO, 'Tiny-Chat-Q8_0.gguf')}"
    pulling = [p for p in lines if p.digest == digest]
    assert pulling and pulling[-1].completed == pulling[-1].total == len(
        hub.repos[REPO].files["Tiny-Chat-Q8_0.gguf"]
    )
    path = _models_dir() / "acme__Tiny-Chat-GGUF" / "Tiny-Chat-Q8_0.gguf"
    assert path.read_bytes() == hub.repos[REPO].files["Tiny-Chat-Q8_0.gguf"]
    # served under the name pulled, listed, and in the library as a file Callisto downloaded
    r = client.chat(model=name, messages=USER, options={"num_predict": 3})
    assert r.done and r.eval_count == 3
    assert "Tiny-Chat-Q8_0" in [m.model for m in client.list().models]
    from app.engine.models.library import Library

    found = [m for m in Library().scan() if m.path.resolve() == path.resolve()]
    assert found and found[0].deletable_without_confirmation
    # the server has the file by its sha256: a client that makes a model from the same GGUF
    # (ollama create, app.server._blobs) is told it need not send it
    import httpx

    assert httpx.head(f"{server.url}/api/blobs/{digest}", timeout=30).status_code == 200
    # pulled again: nothing downloaded a second time
    fetched = hub.count("GET", "/_cdn/")
    assert client.pull(name).status == "success"
    assert hub.count("GET", "/_cdn/") == fetched


def test_without_a_tag_q4_k_m_is_pulled_and_a_tag_the_repo_lacks_is_a_404(client):
    assert client.pull(f"hf.co/{REPO}").status == "success"
    assert (_models_dir() / "acme__Tiny-Chat-GGUF" / "Tiny-Chat-Q4_K_M.gguf").is_file()
    assert not (_models_dir() / "acme__Tiny-Chat-GGUF" / "Tiny-Chat-Q8_0.gguf").exists()
    import ollama

    with pytest.raises(ollama.ResponseError) as err:
        client.pull(f"hf.co/{REPO}:Q2_K")
    assert err.value.status_code == 404 and "Q4_K_M" in str(err.value) and "Q8_0" in str(err.value)
    with pytest.raises(ollama.ResponseError) as err:
        client.pull("hf.co/acme/no-such-repo:Q4_K_M")
    assert err.value.status_code == 404 and "does not exist" in str(err.value)


def test_a_hub_that_fails_is_a_502_that_says_so_and_a_later_pull_succeeds(client, hub):
    """A hub error is the hub's (502, its status in the words), never a 404 that says the
    repository is not there; nothing is registered, and the pull works once the hub is back."""
    import ollama

    hub.api_fail = 400  # (a 5xx too: the hub client retries those for 20 s first)
    with pytest.raises(ollama.ResponseError) as err:
        client.pull(f"hf.co/{REPO}:Q8_0")
    assert err.value.status_code == 502 and "answered 400" in str(err.value)
    assert not (_models_dir() / "acme__Tiny-Chat-GGUF").exists()
    hub.api_fail = None
    assert client.pull(f"hf.co/{REPO}:Q8_0").status == "success"


def test_a_name_of_ollamas_registry_says_how_to_name_a_hugging_face_model(client, server):
    import ollama

    with pytest.raises(ollama.ResponseError) as err:
        client.pull("llama3.2")
    assert err.value.status_code == 404 and "hf.co/" in str(err.value)
    # a model the server already offers is there: a success at once
    assert client.pull("mine").status == "success"


def test_a_client_that_leaves_stops_the_download_and_a_later_pull_resumes_it(client, server, hub):
    name = f"hf.co/{REPO}:Q8_0"
    data = hub.repos[REPO].files["Tiny-Chat-Q8_0.gguf"]
    hub.hold_after["Tiny-Chat-Q8_0.gguf"] = len(data) // 2
    dest = _models_dir() / "acme__Tiny-Chat-GGUF" / "Tiny-Chat-Q8_0.gguf"
    part = dest.with_name(dest.name + ".part")
    body = json.dumps({"model": name}).encode()
    host, port = server.url.rsplit("//", 1)[1].split(":")
    with socket.create_connection((host, int(port)), timeout=60) as conn:
        conn.sendall(
            f"POST /api/pull HTTP/1.1\r\nHost: {host}:{port}\r\n".encode()
            + b"Content-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
        got = conn.recv(4096)
        assert got.startswith(b"HTTP/1.1 200")
        # the client leaves once the hub holds the rest and the server says bytes are on disk
        while not (hub.held.is_set() and re.search(rb'"completed": [1-9]', got)):
            more = conn.recv(4096)
            assert more, "the server closed the stream"
            got += more
    # the server sees the client go and stops the download (the hub still holds the rest)
    for _ in range(2400):
        if not any(t.name == "callisto-pull" for t in threading.enumerate()):
            break
        time.sleep(0.05)
    assert not any(t.name == "callisto-pull" for t in threading.enumerate())
    assert part.exists()
    assert not dest.exists()
    hub.release.set()
    assert client.pull(name).status == "success"
    assert dest.read_bytes() == data
    assert any(rng and rng.startswith("bytes=") and rng != "bytes=0-" for _m, _p, rng in hub.requests)


def test_delete_removes_a_downloaded_model_and_never_the_users_own_file(client, server):
    name = f"hf.co/{REPO}:Q4_K_M"
    client.pull(name)
    client.chat(model=name, messages=USER, options={"num_predict": 1})  # loaded: unloaded first
    path = _models_dir() / "acme__Tiny-Chat-GGUF" / "Tiny-Chat-Q4_K_M.gguf"
    assert path.is_file()
    client.delete(name)
    assert not path.exists()
    assert "Tiny-Chat-Q4_K_M" not in [m.model for m in client.list().models]
    import ollama

    with pytest.raises(ollama.ResponseError) as err:
        client.chat(model=name, messages=USER)
    assert err.value.status_code == 404
    with pytest.raises(ollama.ResponseError) as err:
        client.delete("mine")
    assert err.value.status_code == 403
    assert "mine" in [m.model for m in client.list().models]


def test_a_model_pulled_in_an_earlier_run_is_found_by_its_hugging_face_name(tmp_path):
    """No alias from this run: the name's repository folder and tag find the file."""
    from app.server._errors import ApiError
    from app.server._models import ModelCatalog, hf_name

    folder = tmp_path / "models" / "acme__Tiny-Chat-GGUF"
    folder.mkdir(parents=True)
    q8, q4 = folder / "Tiny-Chat-Q8_0.gguf", folder / "Tiny-Chat-Q4_K_M.gguf"
    q8.write_bytes(_gguf(tmp_path, "a.gguf", 1))
    q4.write_bytes(_gguf(tmp_path, "b.gguf", 2))
    catalog = ModelCatalog([q8, q4], use_library=False)
    assert catalog.resolve(f"hf.co/{REPO}:Q8_0").path == q8.resolve()
    assert catalog.resolve(f"huggingface.co/{REPO}:q4_k_m").path == q4.resolve()
    with pytest.raises(ApiError):
        catalog.resolve(f"hf.co/{REPO}:Q2_K")
    assert hf_name("hf.co/a/b") == ("a/b", None) and hf_name("hf.co/a/b:latest") == ("a/b", None)
    assert hf_name("llama3.2") is None and hf_name("hf.co/a") is None


def test_ollamas_default_tag_names_the_model_it_follows(tmp_path):
    """Ollama's clients name "llama3.2" as "llama3.2:latest" too; a name that is the file's own
    comes first, and an unknown one is a 404 that names it as it was sent."""
    from app.server._errors import ApiError
    from app.server._models import ModelCatalog

    plain = tmp_path / "Tiny-Chat.gguf"
    plain.write_bytes(_gguf(tmp_path, "a.gguf", 1))
    tagged = tmp_path / "other:latest.gguf"
    tagged.write_bytes(_gguf(tmp_path, "b.gguf", 2))
    other = tmp_path / "other.gguf"
    other.write_bytes(_gguf(tmp_path, "c.gguf", 3))
    catalog = ModelCatalog([plain, tagged, other], use_library=False)
    assert catalog.resolve("Tiny-Chat:latest").path == plain.resolve()
    assert catalog.resolve("tiny-chat:LATEST").path == plain.resolve()
    assert catalog.resolve("other:latest").path == tagged.resolve()  # its own name first
    assert catalog.resolve("other").path == other.resolve()
    for name in ("nothing:latest", ":latest"):
        with pytest.raises(ApiError) as err:
            catalog.resolve(name)
        assert err.value.status == 404 and name in str(err.value)


# -- LM Studio's download API -----------------------------------------------------------------------


def test_lm_studio_downloads_a_hugging_face_model_as_a_job_it_polls(server, hub):
    """``POST /api/v1/models/download`` answers at once with a job, whose status says how far it
    got while the file is held half way, and that it completed; the model is then served and a
    second download of it is ``already_downloaded``."""
    import httpx

    from tests.support.slot_server import until

    data = hub.repos[REPO].files["Tiny-Chat-Q8_0.gguf"]
    hub.hold_after["Tiny-Chat-Q8_0.gguf"] = len(data) // 2
    body = {"model": f"https://huggingface.co/{REPO}", "quantization": "Q8_0"}
    r = httpx.post(server.url + "/api/v1/models/download", json=body, timeout=60)
    assert r.status_code == 200, r.text
    started = r.json()
    assert started["status"] == "downloading" and started["total_size_bytes"] == len(data)
    assert started["job_id"].startswith("job_") and started["started_at"].endswith("Z")

    def status() -> dict:
        s = httpx.get(server.url + f"/api/v1/models/download/status/{started['job_id']}", timeout=60)
        assert s.status_code == 200, s.text
        return s.json()

    assert hub.held.wait(30)
    assert until(lambda: status()["downloaded_bytes"] > 0)
    half = status()
    assert half["status"] == "downloading" and 0 < half["downloaded_bytes"] <= len(data) // 2
    assert half["total_size_bytes"] == len(data)
    hub.release.set()
    assert until(lambda: status()["status"] == "completed")
    done = status()
    assert done["downloaded_bytes"] == len(data) and done["completed_at"] >= done["started_at"]
    path = _models_dir() / "acme__Tiny-Chat-GGUF" / "Tiny-Chat-Q8_0.gguf"
    assert path.read_bytes() == data
    listed = httpx.get(server.url + "/api/v1/models", timeout=60).json()["models"]
    (model,) = [m for m in listed if m["key"] == "Tiny-Chat-Q8_0"]
    assert model["publisher"] == "acme" and model["size_bytes"] == len(data)
    again = httpx.post(server.url + "/api/v1/models/download", json={**body, "model": REPO}, timeout=60)
    assert again.status_code == 200 and again.json() == {"status": "already_downloaded"}


@pytest.mark.parametrize(
    ("body", "status", "says"),
    [
        ({"model": "granite-4-micro"}, 400, "not a Hugging Face repository"),
        ({"model": "https://example.com/a/b"}, 400, "not a Hugging Face repository"),
        ({"model": 7}, 400, "model"),
        ({"model": "acme/no-such-repo"}, 404, "does not exist"),
        ({"model": REPO, "quantization": "Q2_K"}, 404, "Q4_K_M"),
    ],
)
def test_a_download_that_cannot_start_says_why_and_leaves_no_job(server, body, status, says):
    import httpx

    r = httpx.post(server.url + "/api/v1/models/download", json=body, timeout=60)
    assert r.status_code == status and says in r.json()["error"]["message"], r.text
    assert server.state.downloads._jobs == {}  # no job kept for it
    unknown = httpx.get(server.url + "/api/v1/models/download/status/job_nothing", timeout=60)
    assert unknown.status_code == 404 and "job_nothing" in unknown.json()["error"]["message"]


def test_a_download_that_fails_part_way_says_so_in_its_status(server, hub):
    """The file the hub serves does not match its sha256: the job fails, its status says why, and
    no model is served from it."""
    import httpx

    from tests.support.slot_server import until

    hub.corrupt.add("Tiny-Chat-Q4_K_M.gguf")
    r = httpx.post(server.url + "/api/v1/models/download", json={"model": REPO}, timeout=60)
    assert r.status_code == 200 and r.json()["status"] == "downloading", r.text
    url = server.url + f"/api/v1/models/download/status/{r.json()['job_id']}"
    assert until(lambda: httpx.get(url, timeout=60).json()["status"] != "downloading")
    failed = httpx.get(url, timeout=60).json()
    assert failed["status"] == "failed" and "sha256" in failed["error"].lower(), failed
    assert not (_models_dir() / "acme__Tiny-Chat-GGUF" / "Tiny-Chat-Q4_K_M.gguf").exists()
    keys = [m["key"] for m in httpx.get(server.url + "/api/v1/models", timeout=60).json()["models"]]
    assert "Tiny-Chat-Q4_K_M" not in keys
