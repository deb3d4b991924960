"""Figure 5: milliseconds to detect the tool-call format of each official template
(``tests/fixtures/chat_templates``, listed in ``sources.json``).

Each template is detected cold (the first time in this process: its Jinja source compiled, as when
a model is first loaded) and then ``reps`` times warm (compiled template cached, as on every later
detection in the same run). Two rows: the slowest template cold, and the slowest template warm
(median of its warm runs) [each under 50 ms].
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
    detect_template("{{ messages }}")  # import and warm the machinery once, not any template
    cold: dict[str, float] = {}
    warm: dict[str, float] = {}
    for name, src in srcs.items():
        times = []
        for _ in range(1 + reps):
            start = time.perf_counter()
            detect_template(src, bos_token="<s>", eos_token="</s>")
            times.append((time.perf_counter() - start) * 1000.0)
        cold[name] = times[0]
        warm[name] = median(times[1:])

    def worst(d: dict[str, float]) -> str:
        return max(d, key=d.__getitem__)

    for label, d in (("cold", cold), ("warm", warm)):
        slow = sorted(d.items(), key=lambda kv: -kv[1])[:5]
        log(
            f"  {label}: slowest "
            + ", ".join(f"{n} {v:.1f} ms" for n, v in slow)
            + f"; median of all {median(d.values()):.1f} ms; over 50 ms: {sum(v >= 50 for v in d.values())}"
        )
    wc, ww = worst(cold), worst(warm)
    return [
        row(
            f"5. format detection, first time (Jinja compile included), slowest of {len(srcs)} official "
            f"templates ({wc}; median {median(cold.values()):.1f} ms)",
            cold[wc],
            "ms",
            "< 50",
        ),
        row(
            f"5. format detection, template already compiled, slowest of {len(srcs)} official "
            f"templates ({ww}; median {median(warm.values()):.1f} ms)",
            warm[ww],
            "ms",
            "< 50",
        ),
    ]
