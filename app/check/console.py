"""What ``python -m app check`` prints while it runs, and the run itself, for both of its targets
(a model file in this process, or an endpoint through the remote client): one progress line (or
JSON event) per scenario, the template findings of the GGUF under test, and a run that Ctrl-C
cancels. Text lines are made safe for a terminal (:func:`app.terminal.terminal_text`): a model's
words, a scenario file's ids and a file name cannot move the cursor or reorder the line."""

from __future__ import annotations

import json
import sys
import threading
from collections.abc import Callable
from typing import Any

from app.check.corpus import Corpus, Scenario
from app.check.runner import ScenarioResult, run_check
from app.check.targets import Target
from app.terminal import terminal_text

__all__ = ["err", "gguf_findings", "progress_printer", "run_interruptible", "sampling_options"]


def err(text: str) -> None:
    """One line on stderr, made safe for a terminal (it may hold file names and a server's words)."""
    print(terminal_text(text), file=sys.stderr, flush=True)


def sampling_options(args: Any) -> dict[str, Any]:
    """The check's sampling flags (``--max-tokens``, ``--temperature``, ``--seed``) as the targets'
    keyword arguments and the result's settings name them."""
    return {"max_tokens": args.max_tokens, "temperature": args.temperature, "seed": args.seed}


def gguf_findings(path: str) -> list[dict[str, Any]]:
    """The forensics findings of the GGUF at ``path`` (its template's known tool-calling
    breakages); [] with a note on stderr when they cannot be read: forensics never stops a check."""
    try:
        from app.check.forensics import lint_gguf

        return list(lint_gguf(path)["findings"])
    except Exception as exc:  # noqa: BLE001 - forensics never stops a check
        err(f"[forensics] not available: {exc}")
        return []


def progress_printer(
    as_json: bool, parser: str | None = None
) -> Callable[[int, int, Scenario, ScenarioResult | None], None]:
    """The ``progress`` callback of :func:`run_check` that prints each finished scenario: a JSON
    ``scenario`` event with ``as_json``, else a line. ``parser`` (remote checks) names the parser
    in each row; a local check's line shows the scenario's duration instead."""

    def progress(i: int, n: int, scenario: Scenario, res: ScenarioResult | None) -> None:
        if res is None:
            return
        row = res.to_dict("", "")
        if as_json:
            row = {k: v for k, v in row.items() if k not in ("transcript_sha256", "transcript_file")}
            head = {"type": "scenario"} | ({"parser": parser} if parser is not None else {})
            print(json.dumps({**head, "index": i + 1, "of": n, **row}, ensure_ascii=False), flush=True)
            return
        mark = {"pass": "PASS", "fail": "FAIL", "error": "ERROR"}[row["outcome"]]
        why = f"  {row['failure_class']}: {row['message']}" if row["failure_class"] else ""
        where = f"[{i + 1:>3}/{n}] {mark:5} {scenario.category:11} {scenario.id}"
        if parser is None:
            print(terminal_text(f"{where}  ({row['duration_s']:.2f}s){why}"), flush=True)
        else:
            print(terminal_text(f"[{parser:8}] {where}{why}"), flush=True)

    return progress


def run_interruptible(
    target: Target,
    scenarios: list[Scenario],
    corpus: Corpus,
    *,
    progress: Callable[[int, int, Scenario, ScenarioResult | None], None],
    forensics: list[dict[str, Any]],
    settings: dict[str, Any],
    stop: threading.Event | None = None,
) -> dict[str, Any] | None:
    """:func:`run_check` over ``scenarios`` of ``corpus``; None (``[cancelled]`` said on stderr)
    when Ctrl-C interrupted it."""
    try:
        return run_check(
            target,
            scenarios,
            corpus_sha256=corpus.sha256,
            corpus_dir=str(corpus.directory),
            progress=progress,
            stop=stop,
            forensics=forensics,
            settings=settings,
        )
    except KeyboardInterrupt:
        err("\n[cancelled]")
        return None
