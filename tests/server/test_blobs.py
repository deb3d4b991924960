"""Ollama's blob uploads (``HEAD``/``POST /api/blobs/sha256:<hex>``) and ``/api/create`` with
``files``: how ``ollama create NAME`` from a local GGUF gets the file onto the server. The official
ollama client sends a real tiny GGUF to a real server on a loopback port; the file lands in the
library's folder (the test's own ``CALLISTO_HOME``) and is served, listed and deleted as a model."""

from __future__ import annotations

import hashlib
import os
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from app.engine.models.tiny import write_tiny_gguf
from tests.server.conftest import _start
from tests.ui.scripted_gguf import CHATML

USER = [{"role": "user", "content": "Hi"}]
WAIT_S = 60.0


def _gguf(path: Path, seed: int = 1) -> Path:
    return write_tiny_gguf(
        path,
        chat_template=CHATML,
        control_tokens=["<|im_start|>", "<|im_end|>"],
        bos=None,
        eos="<|im_end|>",
        seed=seed,
    )


def _digest(path: Path) -> str:
    return "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def _serve(**config: Any) -> Iterator[Any]:
    from app.server import ServerConfig

    base = dict(port=0, n_ctx=2048, n_threads=1, parallel=1)
    yield from _start(ServerConfig(**{**base, **config}))


@pytest.fixture
def server() -> Iterator[Any]:
    yield from _serve()


@pytest.fixture
def client(server):
    import ollama

    return ollama.Client(host=server.url, timeout=60)


@pytest.fixture
def http(server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as c:
        yield c


@pytest.fixture
def model_file(tmp_path) -> Path:
    return _gguf(tmp_path / "outside" / "Tiny-Chat-Q8_0.gguf")


def _models_dir(server: Any) -> Path:
    return Path(server.state.catalog.library().models_dir)


def _blob_folder(server: Any) -> Path:
    return _models_dir(server) / ".blobs"


def _left(server: Any) -> list[str]:
    folder = _blob_folder(server)
    return sorted(os.listdir(folder)) if folder.is_dir() else []


def test_ollama_create_from_a_gguf_file_uploads_it_and_serves_the_made_model(
    server, client, http, model_file
):
    digest = _digest(model_file)
    assert http.head(f"/api/blobs/{digest}").status_code == 404
    assert client.create_blob(model_file) == digest  # 201: kept under its digest
    assert http.head(f"/api/blobs/{digest}").status_code == 200
    steps = [
        p.status
        for p in client.create(model="mine", files={model_file.name: digest}, system="Be brief.", stream=True)
    ]
    assert steps[0] == "parsing GGUF" and f"using existing layer {digest}" in steps and steps[-1] == "success"
    # the file is in the models folder, under the made model's folder, the same bytes
    placed = _models_dir(server) / "uploaded" / "mine" / model_file.name
    assert placed.read_bytes() == model_file.read_bytes()
    assert _left(server) == []  # the upload was moved, not copied
    # listed as a made model over the file, and the file itself, which the library owns
    listed = {m.model: m for m in client.list().models}
    assert "mine" in listed and "Tiny-Chat-Q8_0" in listed
    from app.engine.models.library import Library

    found = [m for m in Library().scan() if m.path.resolve() == placed.resolve()]
    assert found and found[0].source == "uploaded" and found[0].deletable_without_confirmation
    shown = client.show("mine")
    assert shown.details.parent_model == "Tiny-Chat-Q8_0" and 'SYSTEM """Be brief."""' in shown.modelfile
    # it chats, with its system prompt in the prompt
    r = client.chat(model="mine", messages=USER, options={"num_predict": 3})
    assert r.done and r.eval_count == 3
    prompt = http.post("/apply-template", json={"model": "mine", "messages": USER}).json()["prompt"]
    assert "Be brief." in prompt
    # the server still has the file: HEAD finds it in the library, and a second create needs no upload
    assert http.head(f"/api/blobs/{digest}").status_code == 200
    assert client.create(model="mine-too", files={model_file.name: digest}).status == "success"
    assert client.show("mine-too").details.parent_model == "Tiny-Chat-Q8_0"
    assert len(list((_models_dir(server) / "uploaded").rglob("*.gguf"))) == 1
    # the same upload again: 200, nothing written
    r = http.post(f"/api/blobs/{digest}", content=model_file.read_bytes())
    assert r.status_code == 200 and _left(server) == []


def test_a_create_with_no_settings_under_the_files_own_name_offers_the_file(server, client, http, model_file):
    digest = client.create_blob(model_file)
    assert client.create(model="Tiny-Chat-Q8_0", files={model_file.name: digest}).status == "success"
    tags = [m for m in client.list().models if m.model.startswith("Tiny-Chat-Q8_0")]
    assert [m.model for m in tags] == ["Tiny-Chat-Q8_0"]
    assert server.state.presets.all() == []  # the file itself, no made model over it
    r = client.chat(model="Tiny-Chat-Q8_0", messages=USER, options={"num_predict": 2})
    assert r.done and r.eval_count == 2
    # deleted as a file Callisto owns
    placed = _models_dir(server) / "uploaded" / "Tiny-Chat-Q8_0" / model_file.name
    assert placed.is_file()
    client.delete("Tiny-Chat-Q8_0")
    assert not placed.exists()
    assert http.head(f"/api/blobs/{digest}").status_code == 404


def test_settings_under_the_files_own_name_name_the_file_apart(server, client, model_file):
    digest = client.create_blob(model_file)
    client.create(model="Tiny-Chat-Q8_0", files={model_file.name: digest}, system="Answer in French.")
    hex8 = digest.split(":")[1][:8]
    placed = _models_dir(server) / "uploaded" / "Tiny-Chat-Q8_0" / f"Tiny-Chat-Q8_0-{hex8}.gguf"
    assert placed.is_file()
    listed = {m.model for m in client.list().models}
    assert {"Tiny-Chat-Q8_0", f"Tiny-Chat-Q8_0-{hex8}"} <= listed
    shown = client.show("Tiny-Chat-Q8_0")
    assert shown.details.parent_model == f"Tiny-Chat-Q8_0-{hex8}" and "Answer in French." in shown.modelfile


def test_a_name_another_file_has_is_refused_before_anything_moves(server, client, tmp_path, model_file):
    import ollama

    other = _gguf(_models_dir(server) / "taken.gguf", seed=7)
    assert other.is_file()
    digest = client.create_blob(model_file)
    with pytest.raises(ollama.ResponseError) as err:
        client.create(model="taken", files={model_file.name: digest})
    assert err.value.status_code == 400 and "taken is the name of a model file" in str(err.value)
    assert _left(server) == [f"sha256-{digest.split(':')[1]}"]  # the upload waits for a create


def test_a_vision_projector_comes_with_its_model(server, client, tmp_path):
    from tests.support.tiny_vision import write_tiny_vision_pair

    model, projector = write_tiny_vision_pair(tmp_path / "pair", name="seer")
    files = {model.name: client.create_blob(model), projector.name: client.create_blob(projector)}
    assert client.create(model="seer-made", files=files).status == "success"
    folder = _models_dir(server) / "uploaded" / "seer-made"
    assert sorted(p.name for p in folder.iterdir()) == ["mmproj-seer.gguf", "seer.gguf"]
    from app.engine.models.library import Library

    assert Library().projector_for(folder / "seer.gguf") == str((folder / "mmproj-seer.gguf").resolve())
    assert "vision" in client.show("seer-made").capabilities
    # a projector alone is not a model
    import ollama

    with pytest.raises(ollama.ResponseError) as err:
        client.create(model="eyes-only", files={projector.name: files[projector.name]})
    assert err.value.status_code == 400 and "one model GGUF" in str(err.value)


@pytest.mark.parametrize(
    ("files", "said"),
    [
        ({"model.gguf": "sha256:" + "0" * 64}, "is not on this server: send it first"),
        ({"model.safetensors": "sha256:" + "0" * 64}, "this server runs GGUF files"),
        ({"../model.gguf": "sha256:" + "0" * 64}, "give a plain file name"),
        ({"model.gguf": "md5:abc"}, "must be sha256:<64 hex digits>"),
        (
            {"a.gguf": "sha256:" + "0" * 64, "b.gguf": "sha256:" + "1" * 64, "c.gguf": "sha256:" + "2" * 64},
            "at most 2",
        ),
        (["model.gguf"], "files must be an object"),
    ],
)
def test_bad_files_are_400s_that_say_why(http, files, said):
    r = http.post("/api/create", json={"model": "x", "files": files})
    assert r.status_code == 400 and said in r.json()["error"], r.text


def test_from_and_files_together_or_neither_are_400s(http):
    r = http.post("/api/create", json={"model": "x", "from": "y", "files": {"a.gguf": "sha256:" + "0" * 64}})
    assert r.status_code == 400 and "not both" in r.json()["error"]
    r = http.post("/api/create", json={"model": "x"})
    assert r.status_code == 400 and "from is required" in r.json()["error"]


def test_a_file_the_server_has_is_read_and_dropped_when_sent_again(server, http, tmp_path):
    """The ollama SDK's create_blob sends the file without asking first: a large file the server
    has gets its 200 after the whole body, not a connection closed while the client still sends
    (a client that writes its whole body before it reads, as a raw socket here, sees the answer)."""
    data = _gguf(tmp_path / "big.gguf").read_bytes() + b"\0" * (12 << 20)
    digest = f"sha256:{hashlib.sha256(data).hexdigest()}"
    assert http.post(f"/api/blobs/{digest}", content=data).status_code == 201
    for _ in range(2):
        with socket.create_connection(("127.0.0.1", server.port), timeout=WAIT_S) as s:
            s.sendall(_head(server, digest, len(data)))
            for i in range(0, len(data), 1 << 16):
                s.sendall(data[i : i + (1 << 16)])
            assert s.recv(65536).startswith(b"HTTP/1.1 200")
    assert len(_left(server)) == 1


def test_a_wrong_digest_keeps_nothing(server, http, model_file):
    wrong = "sha256:" + "ab" * 32
    r = http.post(f"/api/blobs/{wrong}", content=model_file.read_bytes())
    assert r.status_code == 400 and "digest mismatch" in r.json()["error"], r.text
    assert _left(server) == []
    assert http.head(f"/api/blobs/{wrong}").status_code == 404


def test_a_file_that_is_not_a_gguf_is_refused_and_nothing_is_kept(server, http):
    data = b"#!/bin/sh\necho not a model\n" * 1000
    r = http.post(f"/api/blobs/sha256:{hashlib.sha256(data).hexdigest()}", content=data)
    assert r.status_code == 400 and "not a GGUF file" in r.json()["error"], r.text
    assert _left(server) == []
    # a body past the first flush (4 MiB) is read and dropped before the answer: the client sees it
    big = b"\0" * (6 << 20)
    r = http.post(f"/api/blobs/sha256:{hashlib.sha256(big).hexdigest()}", content=big)
    assert r.status_code == 400 and "not a GGUF file" in r.json()["error"]
    assert _left(server) == []


def test_a_bad_digest_in_the_path_is_a_400(http):
    r = http.post("/api/blobs/sha256:xyz", content=b"GGUF")
    assert r.status_code == 400 and "sha256:<64 hex digits>" in r.json()["error"]
    assert http.head("/api/blobs/nothing").status_code == 400


def test_an_upload_that_would_fill_the_disk_is_a_507_and_keeps_nothing(model_file):
    """The free space an upload must leave is set past the disk's size: refused before a byte is
    written when the length is given, and once its first part is written when it is not."""
    for server in _serve(min_free_disk_bytes=1 << 60):
        with httpx.Client(base_url=server.url, timeout=60) as http:
            data = model_file.read_bytes()
            url = f"/api/blobs/{_digest(model_file)}"
            r = http.post(url, content=data)
            assert r.status_code == 507 and "must stay free" in r.json()["error"], r.text
            r = http.post(url, content=iter([data[:100], data[100:]]))  # chunked: no length
            assert r.status_code == 507 and "free on the disk" in r.json()["error"], r.text
            assert "nothing was kept" in r.json()["error"]
            assert _left(server) == []


def test_a_full_device_mid_upload_is_a_507_and_the_part_is_deleted(tmp_path):
    """The write that fails with ENOSPC is a real one, to /dev/full."""
    if not Path("/dev/full").exists():
        pytest.skip("this system has no /dev/full")
    from app.server._blobs import _Receiving

    receiving = _Receiving(tmp_path, "0" * 64, margin=0)
    assert receiving.part.exists()
    receiving._file.close()
    receiving._file = open("/dev/full", "wb")  # noqa: SIM115 - closed by abort()
    receiving.write(b"GGUF" + b"\0" * (1 << 20))
    assert receiving.refused is not None and receiving.refused.status == 507
    assert "the disk is full" in receiving.refused.message
    assert not receiving.part.exists()
    with pytest.raises(Exception) as err:
        receiving.finish()
    assert getattr(err.value, "status", None) == 507


def _head(server: Any, digest: str, length: int) -> bytes:
    return (
        f"POST /api/blobs/{digest} HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        f"Content-Length: {length}\r\n\r\n"
    ).encode()


def _wait_for(check, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not check():
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


def test_a_client_that_leaves_mid_upload_leaves_no_part(server):
    with socket.create_connection(("127.0.0.1", server.port), timeout=10) as s:
        s.sendall(_head(server, "sha256:" + "c" * 64, 64 << 20))
        s.sendall(b"GGUF" + b"\0" * (5 << 20))  # past the first write
        _wait_for(lambda: any(n.endswith(".part") for n in _left(server)), "the upload began")
    _wait_for(lambda: _left(server) == [], "the part was deleted")


def test_an_upload_may_outlast_the_body_timeout_while_it_keeps_coming(model_file):
    for server in _serve(body_timeout_s=1.0):
        data = model_file.read_bytes() + b"\0" * (6 << 20)  # a GGUF may end in padding
        digest = "sha256:" + hashlib.sha256(data).hexdigest()

        def slowly(data: bytes = data) -> Iterator[bytes]:
            for i in range(0, len(data), 1 << 19):  # 512 KiB every 0.1 s for about 1.5 s
                yield data[i : i + (1 << 19)]
                time.sleep(0.1)

        with httpx.Client(base_url=server.url, timeout=60) as http:
            r = http.post(f"/api/blobs/{digest}", content=slowly())
            assert r.status_code == 201, r.text
            assert _left(server) == [f"sha256-{digest.split(':')[1]}"]


def test_an_upload_that_stalls_gets_408_and_keeps_nothing():
    for server in _serve(body_timeout_s=1.0):
        with socket.create_connection(("127.0.0.1", server.port), timeout=WAIT_S) as s:
            s.sendall(_head(server, "sha256:" + "d" * 64, 64 << 20) + b"GGUF" + b"\0" * (1 << 20))
            got = b""
            while chunk := s.recv(65536):  # 1 s + 1 MiB at 1 MiB/s: the server answers and closes
                got += chunk
        assert got.startswith(b"HTTP/1.1 408"), got[:200]
        assert b"the upload did not arrive at 1 MiB/s after its first 1 s" in got
        _wait_for(lambda s=server: _left(s) == [], "the part was deleted")


def test_a_refused_upload_that_goes_on_sending_is_closed():
    """Refused (not a GGUF), the rest of the body has the plain timeout however fast it comes: a
    client cannot hold a connection by sending forever."""
    for server in _serve(body_timeout_s=1.0):
        with socket.create_connection(("127.0.0.1", server.port), timeout=WAIT_S) as s:
            s.sendall(_head(server, "sha256:" + "b" * 64, 1 << 30) + b"NOPE" + b"\0" * (5 << 20))
            s.settimeout(0.05)
            got, closed = b"", False
            deadline = time.monotonic() + WAIT_S
            while not closed and time.monotonic() < deadline:
                try:
                    s.sendall(b"\0" * (1 << 20))  # 1 MiB every 50 ms or so: far above the rate
                except OSError:
                    closed = True
                try:
                    chunk = s.recv(65536)
                    got += chunk
                    closed = closed or not chunk
                except TimeoutError:
                    pass
                except OSError:
                    closed = True
        assert closed, "the connection was held while the client sent"
        assert got.startswith(b"HTTP/1.1 400") and b"not a GGUF file" in got, got[:300]
        assert got.count(b"HTTP/1.1 ") == 1  # one answer, no 408 after it


def test_old_uploads_no_create_took_are_deleted_at_the_next_upload(server, client, tmp_path, model_file):
    from app.server._blobs import STALE_S

    folder = _blob_folder(server)
    folder.mkdir(parents=True, exist_ok=True)
    stale = folder / ("sha256-" + "e" * 64)
    stale.write_bytes(b"GGUF old")
    dead_part = folder / ("sha256-" + "f" * 64 + ".0.part")
    dead_part.write_bytes(b"GGUF cut")
    old = time.time() - STALE_S - 60
    for p in (stale, dead_part):
        os.utime(p, (old, old))
    fresh = _gguf(tmp_path / "fresh.gguf", seed=3)
    digest = client.create_blob(fresh)
    assert _left(server) == [f"sha256-{digest.split(':')[1]}"]
