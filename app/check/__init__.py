"""The "Will it call?" check (Qt-free): a scenario corpus, two targets (the model in process; a remote
engine through Callisto's remote client), a deterministic scorer, result files with transcripts, and
template forensics.

    from app.check import load_corpus, InProcessTarget, RemoteTarget, run_check, write_result
    from app.check import lint_template, lint_gguf

Names load lazily, so ``import app.check`` imports neither llama.cpp nor httpx.
"""

from __future__ import annotations

from app.lazy import lazy_exports

_EXPORTS = {
    "CATEGORIES": "app.check.corpus",
    "Corpus": "app.check.corpus",
    "CorpusError": "app.check.corpus",
    "Scenario": "app.check.corpus",
    "load_corpus": "app.check.corpus",
    "FAILURE_CLASSES": "app.check.scorer",
    "Observation": "app.check.scorer",
    "ObservedCall": "app.check.scorer",
    "Outcome": "app.check.scorer",
    "score_scenario": "app.check.scorer",
    "InProcessTarget": "app.check.targets",
    "RemoteTarget": "app.check.remote_target",
    "Target": "app.check.targets",
    "run_check": "app.check.runner",
    "write_result": "app.check.runner",
    "load_result": "app.check.runner",
    "validate_result": "app.check.runner",
    "RESULT_SCHEMA_PATH": "app.check.runner",
    "ReferenceServer": "app.check.reference",
    "Finding": "app.check.forensics",
    "lint_template": "app.check.forensics",
    "lint_gguf": "app.check.forensics",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
