"""``python -m bench``: run every figure, print the table, write ``bench/results.json``.

Options: ``--only 1,1b,2,3,4,5,6,7,8,9,10,10b,11`` (a subset; with ``--merge`` the other figures' rows are kept from
the existing results file), ``--quick`` (1 pair, 32 tokens, small sizes: a
smoke run, never for the README), ``--out PATH``, ``--profile`` (pyinstrument around each figure,
text reports into ``bench/profiles/``), ``--readme`` (replace the README's Benchmarks table).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import traceback
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from bench.harness import Row, format_table, machine_info, read_results, row, write_results

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results.json"
README = HERE.parent / "README.md"
FIGURES = ("1", "1b", "2", "3", "4", "5", "6", "7", "8", "9", "10", "10b", "11")
README_BEGIN = "<!-- bench:begin -->"
README_END = "<!-- bench:end -->"


def _log(msg: str) -> None:
    print(msg, flush=True)


def _profiled(name: str, enabled: bool, fn: Callable[[], Any]) -> Any:
    if not enabled:
        return fn()
    from pyinstrument import Profiler

    prof = Profiler()
    prof.start()
    try:
        return fn()
    finally:
        prof.stop()
        out = HERE / "profiles"
        out.mkdir(exist_ok=True)
        (out / f"figure-{name}.txt").write_text(
            prof.output_text(unicode=False, color=False), encoding="utf-8"
        )


def figure_of(r: Row) -> str:
    """The figure a row belongs to: the text before the first '.' of its name ("1b", "4")."""
    return r.name.split(".", 1)[0]


def merge_rows(old: list[Row], new: list[Row], rerun: set[str]) -> list[Row]:
    """``old`` without the rows of the ``rerun`` figures, plus ``new``, in figure order."""
    kept = [r for r in old if figure_of(r) not in rerun] + list(new)
    order = {f: i for i, f in enumerate(FIGURES)}
    return sorted(kept, key=lambda r: order.get(figure_of(r), len(order)))


def update_readme(table: str, machine: str, date: str, path: Path = README, note: str = "") -> bool:
    """Replace the text between the bench markers in the README; False when there are none."""
    text = path.read_text(encoding="utf-8")
    if README_BEGIN not in text or README_END not in text:
        return False
    head, rest = text.split(README_BEGIN, 1)
    _, tail = rest.split(README_END, 1)
    body = f"{README_BEGIN}\nMeasured {date} on {machine}.{(' ' + note) if note else ''}\n\n{table}\n{README_END}"
    path.write_text(head + body + tail, encoding="utf-8")
    return True


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__)
    ap.add_argument("--only", default=",".join(FIGURES), help="comma-separated figures to run")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 1 pair, 32 tokens, small sizes")
    ap.add_argument("--out", default=str(RESULTS))
    ap.add_argument("--profile", action="store_true", help="pyinstrument each figure into bench/profiles/")
    ap.add_argument(
        "--readme", action="store_true", help="write the table into README.md's Benchmarks section"
    )
    ap.add_argument(
        "--merge",
        action="store_true",
        help="keep the rows of figures not run from the existing results file (rerun one figure)",
    )
    args = ap.parse_args(argv)
    only = {f.strip() for f in args.only.split(",") if f.strip()}
    unknown = only - set(FIGURES)
    if unknown:
        ap.error(f"unknown figure(s) {sorted(unknown)}; choose from {', '.join(FIGURES)}")
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    pairs, tokens = (1, 32) if args.quick else (5, 256)
    sizes = (2_000, 20_000, 200_000) if args.quick else (10_000, 100_000, 1_000_000)

    rows: list[Row] = []
    t0 = time.monotonic()
    load0 = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    _log(f"Callisto benchmarks on {machine_info()}; load average {load0}")

    def figure(name: str, fn: Callable[[], list[Row]], fallback: list[tuple[str, str, str]]) -> None:
        _log(f"figure {name} ...")
        start = time.monotonic()
        try:
            got = _profiled(name, args.profile, fn)
        except Exception as exc:  # noqa: BLE001 - one broken figure must not lose the others
            traceback.print_exc()
            _log(f"  figure {name} failed: {exc}")
            got = [row(f"{n} (failed: {type(exc).__name__})", None, unit, goal) for n, unit, goal in fallback]
        rows.extend(got)
        _log(f"  ({time.monotonic() - start:.0f} s)")

    loaded: list[tuple[str, Any]] = []
    raw: dict[str, Any] = {}
    # One engine thread loads the models and runs every llama.cpp loop, bare and Callisto alike, as
    # the app's EngineWorker does: llama.cpp keeps an OpenMP team per calling thread, and a second
    # calling thread cost ~40% of SmolLM2's decode rate here (see app.engine.llm). Callisto's models run
    # in their engine processes (the app's default); the bare loops run in this process.
    engine = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bench-engine")

    def on_engine(fn: Callable[[], Any]) -> Any:
        return engine.submit(fn).result()

    if only & {"1", "1b", "2", "3", "7"}:
        from bench.models import callisto_model, package_models

        loaded = on_engine(lambda: [(label, callisto_model(path)) for label, path in package_models()])

    gen_rows: list[Row] = []
    if only & {"1", "2"} and loaded:

        def gen() -> list[Row]:
            from bench import generation

            got, r = generation.run(loaded, pairs=pairs, max_tokens=tokens, log=_log)
            raw.update(r)
            return got

        figure(
            "1+2",
            lambda: gen_rows.extend(on_engine(gen)) or [],
            [("1. generation tokens/s", "ratio", ">= 0.97"), ("2. time to first token", "ratio", "<= 1.10")],
        )
        rows.extend(r for r in gen_rows if r.name.split(".", 1)[0] in only)
    if "1b" in only:
        from bench import server

        figure(
            "1b",
            lambda: on_engine(lambda: server.run(loaded, pairs=pairs, max_tokens=tokens, log=_log)),
            [("1b. generation tokens/s, Callisto / llama-server", "ratio", ">= 0.95")],
        )
    if "3" in only:
        from bench import kv_reuse

        figure(
            "3",
            lambda: on_engine(lambda: kv_reuse.run(loaded, reps=pairs, log=_log)),
            [("3. KV reuse: second-turn TTFT / first-turn TTFT", "ratio", "<= 0.25")],
        )
    if "7" in only:
        from bench import constraints
        from bench.models import callisto_model, package_models

        # the constraint's own cost: both sides without drafting (n-gram drafting pays on free text
        # that repeats itself far more than on a held call, which figure 10 measures on its own)
        plain = on_engine(
            lambda: [(label, callisto_model(path, ngram_draft=False)) for label, path in package_models()]
        )
        loaded.extend(plain)  # closed with the others
        figure(
            "7",
            lambda: constraints.run(
                plain, pairs=pairs, max_tokens=min(tokens, 128), log=_log, on_engine=on_engine
            ),
            [
                ("7. generation tokens/s, required / unconstrained", "ratio", ">= 0.95"),
                ("7. time to first token, required / unconstrained", "ratio", "<= 1.10"),
                ("7. constraint build, 32 tools", "ms", "< 50"),
            ],
        )
    for _, m in loaded:
        on_engine(m.close)
    engine.shutdown()
    if "4" in only:
        from bench import parser_cost

        tps = max((r["callisto_tps"] for r in raw.values()), default=100.0)
        figure(
            "4", lambda: parser_cost.run(tps, sizes=sizes, log=_log), [("4. parser cost", "ratio", "<= 1.2")]
        )
    if "5" in only:
        from bench import detection

        figure(
            "5",
            lambda: detection.run(reps=1 if args.quick else 3, log=_log),
            [
                ("5. format detection, first time", "ms", "< 50"),
                ("5. format detection, compiled", "ms", "< 50"),
            ],
        )
    if "6" in only:
        from bench import ui

        n = 1 if args.quick else 3
        figure(
            "6",
            lambda: ui.run(stall_runs=n, startup_runs=n + 2, tokens=200 if args.quick else 2000, log=_log),
            [
                ("6. UI: longest main-thread stall", "ms", "< 50"),
                ("6. UI: first painted window", "s", "< 1.5"),
                ("6. UI: idle resident memory", "MiB", "< 200"),
            ],
        )

    if "8" in only:
        from bench import api_server
        from bench.models import package_models

        figure(
            "8",
            lambda: api_server.run(package_models(), pairs=pairs, max_tokens=tokens, log=_log),
            [
                ("8. API streamed tokens/s / in-process", "ratio", ">= 0.97"),
                ("8. API streamed tokens/s / llama-server streaming", "ratio", ">= 0.95"),
                ("8. API time to first streamed token / in-process", "ratio", "<= 1.10"),
                ("8. 8 concurrent streams, all finished: throughput / one client's", "ratio", ">= 0.95"),
            ],
        )

    if "9" in only:
        from bench import parallel
        from bench.models import package_models

        figure(
            "9",
            lambda: parallel.run(package_models(), reps=pairs, max_tokens=min(tokens, 128), log=_log),
            [
                (
                    "9. 8 concurrent streams through serve --parallel 8: aggregate tokens/s / one client's",
                    "ratio",
                    ">= 2.5",
                ),
                ("9. 8 concurrent streams, aggregate tokens/s, Callisto / llama-server", "ratio", ">= 1.00"),
                ("9. requests to serve --parallel 8 that finished without an error", "ratio", ">= 1"),
                ("9. concurrent streams equal to their non-streamed reply", "ratio", ">= 1"),
                ("9. time to first token of a new request while 7 stream / idle", "ratio", "<= 1.5"),
            ],
        )
    if "10" in only:
        from bench import speculative
        from bench.models import package_models

        figure(
            "10",
            lambda: speculative.run(
                package_models(),
                pairs=pairs,
                max_tokens=tokens,
                n_prompts=4 if args.quick else speculative.IDENTICAL_PROMPTS,
                identical_tokens=16 if args.quick else speculative.IDENTICAL_TOKENS,
                log=_log,
            ),
            [
                ("10. tokens/s, n-gram drafting / none, copying workloads", "ratio", ">= 1.5"),
                ("10. tokens/s, n-gram drafting / none, a reply that copies nothing", "ratio", ">= 0.97"),
                ("10. greedy outputs identical with n-gram drafting and without", "ratio", ">= 1"),
            ],
        )
    if "10b" in only:
        from bench import speculative
        from bench.models import package_models

        figure(
            "10b",
            lambda: speculative.run_prediction(package_models(), pairs=pairs, max_tokens=tokens, log=_log),
            [("10b. tokens/s, predicted output / none, rewriting a code block", "ratio", ">= 1.5")],
        )
    if "11" in only:
        from bench import kv_store
        from bench.models import package_models

        figure(
            "11",
            lambda: kv_store.run(
                package_models(),
                reps=pairs,
                conversation_tokens=400 if args.quick else 1500,
                n_prompts=4 if args.quick else kv_store.IDENTICAL_PROMPTS,
                identical_tokens=16 if args.quick else kv_store.IDENTICAL_TOKENS,
                log=_log,
            ),
            [
                (
                    "11. KV store: time to first token reopening a conversation after a restart / a second turn's",
                    "ratio",
                    "<= 1.5",
                ),
                ("11. KV cache memory, q8_0 / f16", "ratio", "<= 0.55"),
                ("11. greedy replies identical with a q8_0 KV cache and f16", "ratio", ">= 1"),
            ],
        )

    if args.merge and Path(args.out).is_file():
        rows = merge_rows(read_results(args.out), rows, only)
    table = format_table(rows)
    print()
    print(table)
    missed = [r.name for r in rows if not r.meets]
    print(
        f"\n{len(rows) - len(missed)}/{len(rows)} figures meet their goal; {time.monotonic() - t0:.0f} s in all"
    )
    write_results(rows, args.out)
    print(f"wrote {args.out}")
    if args.readme and rows:
        load1 = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
        note = (
            f"Load average {load0:.1f} at the start and {load1:.1f} at the end (a shared machine: "
            "other work competed for the cores)."
            if load0 is not None and load1 is not None
            else ""
        )
        if update_readme(table, rows[0].machine, rows[0].date, note=note):
            print(f"updated {README}")
        else:
            print(f"{README} has no {README_BEGIN} / {README_END} markers; table not written there")
    return 0


if __name__ == "__main__":
    sys.exit(main())
