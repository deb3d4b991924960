"""Time ``detect_template`` over every fixture template (cold and warm compile cache).

Usage: ``.venv/bin/python bench/detect_speed.py [--repeat N] [--json out.json]``.
Cold: the compiled-template cache is cleared before each run (the honest first-detection
number); warm: the template is already compiled. Reports the minimum of N runs (the machine is
shared, so the minimum is the least noisy) and the detected family, so a change can be checked
for identical results.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from app.engine import templates  # noqa: E402
from app.engine.formats import detect_template  # noqa: E402

TEMPLATES = ROOT / "tests" / "fixtures" / "chat_templates"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--json", default="")
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    rows = {}
    for path in sorted(TEMPLATES.rglob("*.jinja")):
        name = str(path.relative_to(TEMPLATES))
        if args.only and args.only not in name:
            continue
        source = path.read_text()
        t_ = {"cold_ms": [], "warm_ms": [], "cold_cpu_ms": [], "warm_cpu_ms": []}
        result = None
        for _ in range(args.repeat):
            for kind in ("cold", "warm"):
                if kind == "cold":
                    templates._compile.cache_clear()
                t, c = time.perf_counter(), time.thread_time()
                result = detect_template(source, bos_token="<s>")
                t_[f"{kind}_cpu_ms"].append((time.thread_time() - c) * 1000)
                t_[f"{kind}_ms"].append((time.perf_counter() - t) * 1000)
        row = {"family": result, **{k: min(v) for k, v in t_.items()}}
        rows[name] = row
        print(
            f"{name:60s} {result!s:13s} cold {row['cold_ms']:6.1f} ms (cpu {row['cold_cpu_ms']:5.1f})"
            f"  warm {row['warm_ms']:5.1f} ms (cpu {row['warm_cpu_ms']:4.1f})"
        )
    for k in ("cold_ms", "cold_cpu_ms", "warm_ms", "warm_cpu_ms"):
        vals = [r[k] for r in rows.values()]
        print(f"{k:12s} total {sum(vals):7.0f}  max {max(vals):6.1f}  over 50: {sum(v > 50 for v in vals)}")
    if args.json:
        Path(args.json).write_text(json.dumps(rows, indent=1))


if __name__ == "__main__":
    main()
