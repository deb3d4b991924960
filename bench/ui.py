"""Figure 6: the window. Each measurement is a fresh child process (``bench.ui_child``), offscreen,
with its own empty CALLISTO_HOME, so nothing of this process (llama.cpp, other figures) counts.

* longest main-thread stall while 2,000 tokens stream into the chat view (max gap of a 1 ms
  heartbeat) [< 50 ms], median of 3 runs;
* process start -> first painted window (the parent's clock from ``Popen`` to the child's
  ``PAINTED`` line) [< 1.5 s], median of 5;
* resident memory when idle with no model (psutil, in the child, 2 s after the paint) [< 200 MB].
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench.harness import Row, median, row

__all__ = ["run", "run_child", "startup_once"]

ROOT = Path(__file__).resolve().parents[1]


def _env(home: str) -> dict[str, str]:
    env = dict(os.environ)
    env.update(QT_QPA_PLATFORM="offscreen", CALLISTO_HOME=home, PYTHONPATH=str(ROOT))
    return env


def startup_once(timeout: float = 120.0) -> tuple[float, int]:
    """(seconds from process start to PAINTED, idle RSS bytes) of one child."""
    with tempfile.TemporaryDirectory(prefix="bench-ui-home-") as home:
        start = time.perf_counter()
        proc = subprocess.Popen(
            [sys.executable, "-m", "bench.ui_child", "startup"],
            cwd=ROOT,
            env=_env(home),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        painted = None
        rss = None
        try:
            assert proc.stdout is not None
            for line in proc.stdout:
                if line.startswith("PAINTED") and painted is None:
                    painted = time.perf_counter() - start
                elif line.startswith("RSS "):
                    rss = int(line.split()[1])
            proc.wait(timeout=timeout)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        if painted is None or rss is None:
            err = proc.stderr.read() if proc.stderr else ""
            raise RuntimeError(f"the startup child did not report (exit {proc.returncode}): {err[-2000:]}")
        return painted, rss


def run_child(*args: str, timeout: float = 300.0) -> dict[str, str]:
    with tempfile.TemporaryDirectory(prefix="bench-ui-home-") as home:
        proc = subprocess.run(
            [sys.executable, "-m", "bench.ui_child", *args],
            cwd=ROOT,
            env=_env(home),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    out = {}
    for line in proc.stdout.splitlines():
        key, _, val = line.partition(" ")
        out[key] = val
    if proc.returncode != 0 or "ERROR" in out:
        raise RuntimeError(
            f"bench.ui_child {' '.join(args)} failed (exit {proc.returncode}): "
            f"{out.get('ERROR', '')} {proc.stderr[-2000:]}"
        )
    return out


def run(*, stall_runs: int = 3, startup_runs: int = 5, tokens: int = 2000, log: Any = print) -> list[Row]:
    gaps, toks = [], []
    for _ in range(stall_runs):
        out = run_child("stall", str(tokens))
        gaps.append(float(out["MAXGAP"]))
        toks.append(int(out["TOKENS"]))
    startup_once()  # warm the page cache; not counted
    paints, rss = [], []
    for _ in range(startup_runs):
        p, r = startup_once()
        paints.append(p)
        rss.append(r)
    log(
        f"  stall max gaps {gaps} ms over {toks} tokens; first paint {[round(p, 3) for p in paints]} s; "
        f"idle RSS {[round(r / 2**20) for r in rss]} MiB"
    )
    return [
        row(
            f"6. UI: longest main-thread stall while {tokens} tokens stream into the chat view",
            median(gaps),
            "ms",
            "< 50",
        ),
        row(
            "6. UI: process start to first painted window (offscreen, no model)", median(paints), "s", "< 1.5"
        ),
        row("6. UI: resident memory when idle, no model", median(rss) / 2**20, "MiB", "< 200"),
    ]
