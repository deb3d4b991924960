"""Where the window keeps check results: ``<data dir>/check/results/<run id>.json`` (with transcripts)
and each model's last score in ``<data dir>/check/scores.json`` (keyed by file name and size, and by
sha256), which the Models page shows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["last_score", "model_key", "record_score", "results_dir", "saved_results", "score_label"]


def _root() -> Path:
    from app.storage.paths import data_dir

    return Path(data_dir()) / "check"


def results_dir() -> Path:
    d = _root() / "results"
    d.mkdir(parents=True, exist_ok=True)
    return d


def model_key(file_name: str, size: int | None) -> str:
    return f"{file_name}|{size or 0}"


MAX_SCORES_BYTES = 4 * 1024 * 1024  # one short entry per checked model


def _load() -> dict[str, Any]:
    from app.files import read_json_file

    try:
        data = read_json_file(_root() / "scores.json", max_bytes=MAX_SCORES_BYTES)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):  # missing, not a regular file, too big, not JSON: no scores yet
        return {}


def record_score(result: dict[str, Any], result_path: str | Path) -> None:
    """Remember ``result`` as its model's last check (a result without a model file is not recorded)."""
    m = result.get("model") or {}
    if not m.get("file_name"):
        return
    s = result["summary"]
    entry = {
        "passed": s["passed"],
        "total": s["total"],
        "score": s["score"],
        "at": result.get("finished_at"),
        "stack": (result.get("stack") or {}).get("name"),
        "result": str(result_path),
    }
    data = _load()
    data[model_key(m["file_name"], m.get("file_size"))] = entry
    if m.get("sha256"):
        data[m["sha256"]] = entry
    root = _root()
    root.mkdir(parents=True, exist_ok=True)
    tmp = root / "scores.json.tmp"
    tmp.write_text(json.dumps(data, indent=1), encoding="utf-8")
    tmp.replace(root / "scores.json")


def last_score(file_name: str, size: int | None) -> dict[str, Any] | None:
    return _load().get(model_key(file_name, size))


def score_label(file_name: str, size: int | None) -> str:
    s = last_score(file_name, size)
    if not s:
        return ""
    return f"check {s['passed']}/{s['total']}"


def saved_results(limit: int = 12) -> list[Path]:
    """The newest saved result files, oldest first."""
    files = sorted(results_dir().glob("*.json"), key=lambda p: p.stat().st_mtime)
    return files[-limit:]
