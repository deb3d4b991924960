"""Private: read what the library shows from a GGUF header (architecture, size, template...).

Uses ``gguf.GGUFReader`` (a memory map: only the header and tensor index are touched).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["GgufSummary", "read_summary", "split_parts", "SPLIT_RE", "detect_tool_format"]

SPLIT_RE = re.compile(r"^(?P<base>.*)-(?P<idx>\d{5})-of-(?P<count>\d{5})\.gguf$", re.IGNORECASE)


@dataclass(frozen=True)
class GgufSummary:
    name: str | None
    architecture: str | None
    parameter_count: int | None
    quantization: str | None
    context_length: int | None
    file_size: int
    has_chat_template: bool
    tool_format: str
    n_layers: int | None
    n_kv_heads: int | None
    head_dim: int | None
    split_count: int = 1


def _field(reader: Any, key: str) -> Any:
    field = reader.fields.get(key)
    if field is None:
        return None
    try:
        return field.contents()
    except Exception:  # noqa: BLE001 - a malformed field reads as absent
        return None


def split_parts(path: Path) -> list[Path]:
    """All shards of a split GGUF given its first shard (or ``[path]`` for a single file)."""
    m = SPLIT_RE.match(path.name)
    if not m:
        return [path]
    count = int(m.group("count"))
    return [path.with_name(f"{m.group('base')}-{i:05d}-of-{count:05d}.gguf") for i in range(1, count + 1)]


def detect_tool_format(template: str | None) -> str:
    """Family name of the template's tool-call format, via app.engine.formats (built in parallel)."""
    if not template:
        return "none"
    try:
        from app.engine.formats import detect_template
    except ImportError:
        return "unknown"
    try:
        found = detect_template(template)
    except Exception:  # noqa: BLE001 - detection failing must not hide the model
        return "unknown"
    if found is None:
        return "none"
    if isinstance(found, str):
        return found
    for attr in ("name", "family", "format"):
        value = getattr(found, attr, None)
        if isinstance(value, str):
            return value
    return str(found)


def read_summary(path: str | Path) -> GgufSummary:
    """Summary of one GGUF (for a split model: pass the first shard). Raises ValueError on a bad file."""
    import gguf
    import numpy as np

    path = Path(path)
    parts = split_parts(path)
    try:
        reader = gguf.GGUFReader(str(path), "r")
    except Exception as exc:  # noqa: BLE001 - gguf raises ValueError/struct errors/IndexError on junk
        raise ValueError(f"{path.name} is not a readable GGUF file ({type(exc).__name__}: {exc})") from exc
    arch = _field(reader, "general.architecture")
    arch = str(arch) if arch is not None else None

    def arch_int(suffix: str) -> int | None:
        if arch is None:
            return None
        value = _field(reader, f"{arch}.{suffix}")
        return int(value) if isinstance(value, int | np.integer) else None

    params = _field(reader, "general.parameter_count")
    if not isinstance(params, int | np.integer):
        params = sum(int(t.n_elements) for t in reader.tensors) or None
        for extra in parts[1:]:
            if extra.is_file() and params is not None:
                try:
                    params += sum(int(t.n_elements) for t in gguf.GGUFReader(str(extra), "r").tensors)
                except Exception:  # noqa: BLE001
                    params = None
    file_type = _field(reader, "general.file_type")
    quant = None
    if isinstance(file_type, int | np.integer):
        try:
            quant = gguf.LlamaFileType(int(file_type)).name.removeprefix("MOSTLY_").removeprefix("ALL_")
        except ValueError:
            quant = f"type {int(file_type)}"
    if quant is None:
        from app.engine.models.estimate import quant_from_filename

        quant = quant_from_filename(path.name)
    template = _field(reader, "tokenizer.chat_template")
    n_heads = arch_int("attention.head_count")
    n_kv = arch_int("attention.head_count_kv") or n_heads
    emb = arch_int("embedding_length")
    head_dim = arch_int("attention.key_length") or ((emb // n_heads) if emb and n_heads else None)
    size = sum(p.stat().st_size for p in parts if p.is_file())
    name = _field(reader, "general.name")
    return GgufSummary(
        name=str(name) if name is not None else None,
        architecture=arch,
        parameter_count=int(params) if params else None,
        quantization=quant,
        context_length=arch_int("context_length"),
        file_size=size,
        has_chat_template=bool(template),
        tool_format=detect_tool_format(template if isinstance(template, str) else None),
        n_layers=arch_int("block_count"),
        n_kv_heads=n_kv,
        head_dim=head_dim,
        split_count=len(parts),
    )
