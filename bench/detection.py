"""Figure 5: milliseconds to detect the tool-call format of each official template
(``tests/fixtures/chat_templates``, listed in ``sources.json``).

Each template is detected cold (first time in this process: its Jinja compiled, as when a model
is first loaded) and then warm, round-robin over all templates so drift hits them alike; the
figure is the slowest template's median (cold and warm runs together) [each under 50 ms].
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from bench.harness import Row, median, row

__all__ = ["TEMPLATES_DIR", "run", "templates"]

TEMPLATES_DIR = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "chat_templates"


def templates(directory: Path = TEMPLATES_DIR) -> dict[str, str]:
    """name -> template source, for every template ``sources.json`` lists that is present."""
    listed = json.loads((directory / "sources.json").read_text(encoding="utf-8"))["templates"]
    out = {}
    for name in sorted(listed):
        p = directory / name
        if p.is_file():
            out[name] = p.read_text(encoding="utf-8")
    if not out:
        raise RuntimeError(f"no official templates found in {directory}")
    return out


def run(*, reps: int = 3, log: Any = print, directory: Path = TEMPLATES_DIR) -> list[Row]:
    from app.engine.formats import detect_template

    srcs = templates(directory)
    times: dict[str, list[float]] = {n: [] for n in srcs}
    found: dict[str, str | None] = {}
    for _ in range(reps):
        for name, src in srcs.items():
            start = time.perf_counter()
            found[name] = detect_template(src, bos_token="<s>", eos_token="</s>")
            times[name].append((time.perf_counter() - start) * 1000.0)
    meds = {n: median(v) for n, v in times.items()}
    worst = max(meds, key=meds.__getitem__)
    slow = sorted(meds.items(), key=lambda kv: -kv[1])[:5]
    log(f"  {len(srcs)} templates; slowest (median ms): " + ", ".join(f"{n} {v:.1f}" for n, v in slow)
        + f"; cold max {max(v[0] for v in times.values()):.1f} ms; median of all {median(meds.values()):.1f} ms")
    return [row(f"5. format detection, slowest of {len(srcs)} official templates ({worst}; median of all "
                f"{median(meds.values()):.1f} ms)", meds[worst], "ms", "< 50")]
