"""``python -m app serve --kv-type T --flash-attn on|off``: the KV cache options of the models the
server loads reach llama.cpp (its own log line in the engine's log says the cache's types), and a
quantized cache without flash attention is refused before anything starts (exit status 2)."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx

REPO = Path(__file__).resolve().parents[2]


def _serve(env_tmp: Path, *args: str) -> subprocess.Popen:
    env = dict(os.environ, PYTHONUNBUFFERED="1", TMPDIR=str(env_tmp))
    return subprocess.Popen(
        [sys.executable, "-m", "app", "serve", *args],
        cwd=REPO,
        env=env,
        stderr=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        text=True,
    )


def _stop(proc: subprocess.Popen) -> int | None:
    proc.send_signal(signal.SIGINT)
    try:
        return proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(30)
        raise AssertionError("serve did not stop on Ctrl-C") from None


def test_serve_loads_models_with_the_kv_type(tiny_gguf, tmp_path):
    model = tiny_gguf(embedding_length=128, head_count=4)
    logs = tmp_path / "tmp"
    logs.mkdir()
    proc = _serve(logs, "--model", str(model), "--port", "0", "--threads", "1", "--kv-type", "q4_0")
    try:
        url = None
        assert proc.stderr is not None
        for line in proc.stderr:
            m = re.search(r"on (http://127\.0\.0\.1:\d+)", line)
            if m:
                url = m.group(1)
                break
        assert url, "the server did not say where it listens"
        r = httpx.post(
            url + "/v1/completions",
            timeout=60,
            json={"model": model.stem, "prompt": "hello", "max_tokens": 2, "temperature": 0},
        )
        assert r.status_code == 200, r.text
        text = "".join(p.read_text(errors="replace") for p in logs.glob("callisto-engine-*.log"))
        # llama.cpp's own account of the cache it made: "K (q4_0): ... MiB, V (q4_0): ... MiB"
        assert re.search(r"K \(q4_0\).*V \(q4_0\)", text), text[-3000:]
        assert "K (f16)" not in text
    finally:
        assert _stop(proc) == 0


def test_serve_refuses_a_quantized_kv_cache_without_flash_attention(tmp_path):
    proc = _serve(tmp_path, "--port", "0", "--kv-type", "q8_0", "--flash-attn", "off")
    _out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2
    assert "needs flash attention" in err
