"""Models recommended for tool calling (the Models page's first list), read from ``recommended.json``.

Each entry names a Hugging Face repo and the file to download, its quantisation and approximate
size, the tool-call family Callisto detects from its template, and why it is recommended.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

__all__ = ["RECOMMENDED_PATH", "RecommendedModel", "recommended_models"]

RECOMMENDED_PATH = Path(__file__).with_name("recommended.json")


@dataclass(frozen=True)
class RecommendedModel:
    name: str
    repo_id: str
    file: str
    quantization: str
    size_gb: float
    tool_format: str
    template: str  # the official template (tests/fixtures/chat_templates) its tool format is checked against
    why: str

    @property
    def size_bytes(self) -> int:
        return int(self.size_gb * 1024**3)


@lru_cache(maxsize=1)
def recommended_models() -> tuple[RecommendedModel, ...]:
    data = json.loads(RECOMMENDED_PATH.read_text(encoding="utf-8"))
    return tuple(RecommendedModel(**entry) for entry in data["models"])
