"""Live: SmolLM2-135M-Instruct checked in process (hermes forced, through ChatSession) and through
Callisto's own server (``python -m app serve``, read by Callisto's remote client): both runs write result files that validate against the
published schema. A short run (one scenario per category, short replies); the full scores are in the
README's check section."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from app.check.corpus import CATEGORIES, load_corpus
from app.check.remote_target import RemoteTarget
from app.check.runner import result_schema, run_check, write_result
from app.check.targets import InProcessTarget
from app.engine.llm import load_model
from app.engine.remote import Provider, list_models

pytestmark = pytest.mark.live

REPO = Path(__file__).resolve().parents[2]
CORPUS = load_corpus()


def _validate(path: Path) -> dict:
    import jsonschema

    data = json.loads(path.read_text(encoding="utf-8"))
    jsonschema.validate(data, result_schema())
    assert set(data["summary"]["by_category"]) == set(CATEGORIES)
    for row in data["results"]:
        assert (path.parent / data["transcripts_dir"] / row["transcript_file"]).is_file()
    return data


def test_smollm2_in_process_with_hermes_forced(smollm2_path, tmp_path):
    model = load_model(smollm2_path, n_ctx=4096)
    try:
        target = InProcessTarget(model, tool_format="hermes", max_tokens=32)
        result = run_check(target, CORPUS.quick(), corpus_sha256=CORPUS.sha256)
    finally:
        model.close()
    write_result(result, tmp_path / "smollm2.json")
    data = _validate(tmp_path / "smollm2.json")
    assert data["model"]["file_name"] == smollm2_path.name and data["model"]["tool_format"] == "hermes"
    assert data["model"]["detected_format"] is None and data["model"]["quantization"]
    assert all(r["outcome"] in ("pass", "fail") for r in data["results"])  # no harness error


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_smollm2_through_callistos_own_server(smollm2_path, tmp_path):
    port = _free_port()
    env = {**os.environ, "CALLISTO_HOME": str(tmp_path / "home")}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "app",
            "serve",
            "--model",
            str(smollm2_path),
            "--tool-format",
            "hermes",
            "--port",
            str(port),
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        base = f"http://127.0.0.1:{port}/v1"
        deadline = time.monotonic() + 60
        while True:
            try:
                if httpx.get(f"{base}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.3)
        provider = Provider(base, timeout_s=120)
        listed = list_models(provider)
        target = RemoteTarget(
            provider,
            smollm2_path.stem,
            max_tokens=32,
            model_file=str(smollm2_path),
            stack_name="callisto-serve",
        )
        result = run_check(target, CORPUS.quick(), corpus_sha256=CORPUS.sha256)
        target.close()
    finally:
        proc.terminate()
        proc.wait(timeout=20)
    write_result(result, tmp_path / "server.json")
    data = _validate(tmp_path / "server.json")
    assert data["target"]["kind"] == "remote" and data["stack"]["name"].startswith("callisto-serve · ")
    assert data["model"]["sha256"] and smollm2_path.stem in listed
    assert all(r["outcome"] in ("pass", "fail") for r in data["results"]), [
        r["message"] for r in data["results"]
    ]
