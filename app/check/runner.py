"""Run scenarios on a target, score them and write the result file with its transcripts.

The result file (``result.schema.json`` beside this module, ``schema_version`` 1) holds the run's
identity (model file, sha256, quantisation, template hash, detected format; the stack and its
version; the machine), a summary per category, the template forensics and, per scenario, the
outcome, failure class, timing and the sha256 of its transcript. Transcripts are written next to
the result as ``<result stem>.transcripts/<sha256>.json``: editing one changes its hash.
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from app.check.corpus import CATEGORIES, Scenario
from app.check.scorer import Outcome, score_scenario
from app.check.targets import Target, machine_info, new_run_id

__all__ = [
    "MAX_RESULT_BYTES",
    "MAX_TRANSCRIPT_BYTES",
    "RESULT_SCHEMA_PATH",
    "SCHEMA_VERSION",
    "ScenarioResult",
    "load_result",
    "result_schema",
    "run_check",
    "summarise",
    "transcript_bytes",
    "validate_result",
    "write_result",
]

SCHEMA_VERSION = 1
RESULT_SCHEMA_PATH = Path(__file__).resolve().parent / "result.schema.json"
MAX_RESULT_BYTES = 64 * 1024 * 1024  # a result file (the full corpus writes about 100 KB)
MAX_TRANSCRIPT_BYTES = 64 * 1024 * 1024  # one scenario's transcript


@dataclass
class ScenarioResult:
    scenario: Scenario
    outcome: Outcome
    duration_s: float
    transcript: dict[str, Any]
    notes: list[str]

    def to_dict(self, transcript_sha: str, transcript_file: str) -> dict[str, Any]:
        o = self.outcome
        return {
            "id": self.scenario.id,
            "category": self.scenario.category,
            "outcome": "pass" if o.passed else ("error" if o.failure_class == "error" else "fail"),
            "failure_class": o.failure_class,
            "message": o.message,
            "turn": o.turn,
            "detail": _jsonable(o.detail),
            "duration_s": round(self.duration_s, 4),
            "notes": list(self.notes),
            "transcript_sha256": transcript_sha,
            "transcript_file": transcript_file,
        }


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, ensure_ascii=False, default=str))


def transcript_bytes(transcript: dict[str, Any]) -> bytes:
    return json.dumps(transcript, ensure_ascii=False, indent=1, sort_keys=True, default=str).encode("utf-8")


def summarise(rows: list[dict[str, Any]]) -> dict[str, Any]:
    by_cat: dict[str, dict[str, Any]] = {}
    classes: dict[str, int] = {}
    for r in rows:
        c = by_cat.setdefault(r["category"], {"passed": 0, "total": 0})
        c["total"] += 1
        c["passed"] += r["outcome"] == "pass"
        if r["failure_class"]:
            classes[r["failure_class"]] = classes.get(r["failure_class"], 0) + 1
    for c in by_cat.values():
        c["score"] = round(c["passed"] / c["total"], 4) if c["total"] else 0.0
    ordered = {k: by_cat[k] for k in CATEGORIES if k in by_cat}
    passed = sum(r["outcome"] == "pass" for r in rows)
    return {
        "passed": passed,
        "total": len(rows),
        "score": round(passed / len(rows), 4) if rows else 0.0,
        "errors": sum(r["outcome"] == "error" for r in rows),
        "by_category": ordered,
        "failure_classes": dict(sorted(classes.items())),
    }


def run_check(
    target: Target | Callable[[Scenario], Target],
    scenarios: list[Scenario],
    *,
    corpus_sha256: str = "",
    corpus_dir: str = "",
    progress: Callable[[int, int, Scenario, ScenarioResult | None], None] | None = None,
    stop: threading.Event | None = None,
    forensics: list[dict[str, Any]] | None = None,
    settings: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run ``scenarios`` in order; return the result document (transcripts under ``"_transcripts"``,
    removed by :func:`write_result`). ``target`` may be a callable giving a target per scenario.
    ``progress(i, n, scenario, result)`` is called before (result None) and after each scenario."""
    started = time.time()
    results: list[ScenarioResult] = []
    ident: dict[str, Any] | None = None
    n = len(scenarios)
    for i, sc in enumerate(scenarios):
        if stop is not None and stop.is_set():
            break
        if progress is not None:
            progress(i, n, sc, None)
        t = target(sc) if callable(target) and not isinstance(target, Target) else target
        if ident is None:
            ident = t.identity()
        run = t.run(sc, cancel=stop)
        outcome = score_scenario(sc, run.observations)
        res = ScenarioResult(
            sc,
            outcome,
            run.duration_s,
            dict(
                run.transcript,
                observations=[o.to_dict() for o in run.observations],
                outcome=outcome.to_dict(),
            ),
            run.notes,
        )
        results.append(res)
        if progress is not None:
            progress(i, n, sc, res)
    rows = []
    transcripts: dict[str, bytes] = {}
    for r in results:
        data = transcript_bytes(r.transcript)
        sha = hashlib.sha256(data).hexdigest()
        transcripts[sha] = data
        rows.append(r.to_dict(sha, f"{sha}.json"))
    ident = ident or {"model": {}, "stack": {}}
    kind = getattr(target, "kind", None) if isinstance(target, Target) else None
    return {
        "schema_version": SCHEMA_VERSION,
        "run_id": new_run_id(),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "complete": len(results) == n,
        "target": {"kind": kind or (results and results[0].transcript.get("target")) or "unknown"},
        "model": _jsonable(ident.get("model", {})),
        "stack": _jsonable(ident.get("stack", {})),
        "machine": machine_info(),
        "settings": settings or {},
        "corpus": {"sha256": corpus_sha256, "directory": corpus_dir, "scenarios": n},
        "summary": summarise(rows),
        "forensics": forensics or [],
        "results": rows,
        "_transcripts": transcripts,
    }


def write_result(result: dict[str, Any], path: str | Path) -> Path:
    """Write the result JSON and its transcripts folder; returns the folder. The result document loses
    its in-memory ``_transcripts`` and gains ``transcripts_dir`` (relative to the result file)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    folder = p.with_name(p.stem + ".transcripts")
    folder.mkdir(exist_ok=True)
    for sha, data in (result.pop("_transcripts", None) or {}).items():
        (folder / f"{sha}.json").write_bytes(data)
    result["transcripts_dir"] = folder.name
    tmp = p.with_name(p.name + ".tmp")
    tmp.write_text(json.dumps(result, ensure_ascii=False, indent=1), encoding="utf-8")
    tmp.replace(p)
    return folder


def result_schema() -> dict[str, Any]:
    return json.loads(RESULT_SCHEMA_PATH.read_text(encoding="utf-8"))


def validate_result(result: dict[str, Any]) -> list[str]:
    """Every way ``result`` breaks the published schema (empty: valid)."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(result_schema())
    doc = {k: v for k, v in result.items() if k != "_transcripts"}
    return [
        f"{'/'.join(str(x) for x in e.absolute_path) or '(root)'}: {e.message}"
        for e in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    ]


def load_result(path: str | Path) -> dict[str, Any]:
    """Read a result file; raises ValueError (saying why) when it is not one: also for a FIFO, a
    device, a file over :data:`MAX_RESULT_BYTES` or JSON nested too deeply."""
    from app.files import read_json_file

    p = Path(path)
    try:
        data = read_json_file(p, max_bytes=MAX_RESULT_BYTES)
    except OSError as exc:
        raise ValueError(f"{p}: cannot read the result file ({exc.strerror or exc})") from exc
    except ValueError as exc:  # UnicodeDecodeError among them
        raise ValueError(f"{p}: cannot read the result file ({exc})") from exc
    if not isinstance(data, dict):
        raise ValueError(f"{p}: not a check result")
    try:
        problems = validate_result(data)
    except RecursionError:
        raise ValueError(f"{p}: not a valid check result: it is nested too deeply") from None
    if problems:
        raise ValueError(f"{p}: not a valid check result: {problems[0]}")
    data["_path"] = str(p)
    return data


def _plain_name(name: Any) -> bool:
    """A single file or folder name: no separator, not ``.`` or ``..``, not absolute."""
    return (
        isinstance(name, str)
        and name not in ("", ".", "..")
        and "/" not in name
        and "\\" not in name
        and "\0" not in name
        and not Path(name).is_absolute()
        and not Path(name).drive
    )


def read_transcript(result: dict[str, Any], row: dict[str, Any]) -> tuple[dict[str, Any] | None, bool]:
    """(transcript, intact) for one result row of a loaded result file; intact is False when the file's
    sha256 no longer matches the one recorded. (None, False) when it cannot be read: also when the
    result names a folder or file outside its own transcripts folder (``transcripts_dir`` and
    ``transcript_file`` are single names, as :func:`write_result` writes them), or a FIFO, a device,
    or a file over :data:`MAX_TRANSCRIPT_BYTES`."""
    from app.files import loads_json, read_regular_file

    folder, name = result.get("transcripts_dir", ""), row.get("transcript_file")
    if not _plain_name(folder) or not _plain_name(name):
        return None, False
    base = Path(result.get("_path", ".")).parent / folder
    f = base / name
    try:
        if Path(os.path.realpath(f)).parent != Path(os.path.realpath(base)):  # a link out of the folder
            return None, False
        data = read_regular_file(f, max_bytes=MAX_TRANSCRIPT_BYTES)
    except (OSError, ValueError):
        return None, False
    intact = hashlib.sha256(data).hexdigest() == row.get("transcript_sha256")
    try:
        value = loads_json(data)
    except ValueError:
        return None, False
    return (value, intact) if isinstance(value, dict) else (None, False)
