"""Private: read what the library shows from a GGUF header (architecture, size, template...).

Uses :func:`app.engine.models.metadata.read_metadata` (a bounded reader over a memory map).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from app.engine.models.metadata import GGUFMetadata

__all__ = [
    "GgufSummary",
    "SPLIT_RE",
    "detect_tool_format",
    "projector_kind",
    "read_summary",
    "split_parts",
    "template_problem",
]

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
    template_problem: str | None = None  # why the chat template does not render, when it does not
    #: a projector (an ``mmproj`` GGUF: a vision/audio encoder for a text model), not a chat model
    is_projector: bool = False
    projector_type: str | None = None  # ``clip.projector_type`` (mlp, gemma3, qwen2vl_merger...)
    has_vision: bool = False  # a projector with a vision encoder (an audio-only one has not)


def projector_kind(raw: dict) -> tuple[bool, str | None, bool]:
    """(is a projector, its projector type, has a vision encoder) from a GGUF's metadata.

    llama.cpp's converter writes ``general.architecture = clip`` and (newer files)
    ``general.type = mmproj``, with ``clip.*`` keys; any of these marks a projector.
    """
    arch = raw.get("general.architecture")
    is_proj = (
        arch == "clip"
        or raw.get("general.type") == "mmproj"
        or any(isinstance(k, str) and k.startswith("clip.") for k in raw)
    )
    if not is_proj:
        return False, None, False
    ptype = raw.get("clip.projector_type") or raw.get("clip.vision.projector_type")
    vision = raw.get("clip.has_vision_encoder")
    # files written before ``has_vision_encoder`` existed are vision projectors
    has_vision = bool(vision) if isinstance(vision, bool) else not raw.get("clip.has_audio_encoder", False)
    return True, ptype if isinstance(ptype, str) else None, has_vision


def split_parts(path: Path) -> list[Path]:
    """All shards of a split GGUF given its first shard (or ``[path]`` for a single file)."""
    m = SPLIT_RE.match(path.name)
    if not m:
        return [path]
    count = int(m.group("count"))
    return [path.with_name(f"{m.group('base')}-{i:05d}-of-{count:05d}.gguf") for i in range(1, count + 1)]


def detect_tool_format(meta: GGUFMetadata) -> str:
    """Family name of the model's tool-call format ("none" when its templates render no calls).

    The same detection the engine runs at load: the ``tool_use`` template first, with the
    model's own bos/eos text.
    """
    from app.engine.detection import detect_tool_format as detect

    return (
        detect(meta.chat_template, meta.tool_use_template, bos_token=meta.bos_token, eos_token=meta.eos_token)
        or "none"
    )


def template_problem(meta: GGUFMetadata) -> str | None:
    """Why the model's chat template cannot render one user message (None when it can, or has none)."""
    if not meta.chat_template:
        return None
    from app.engine.errors import TemplateRenderError
    from app.engine.formats.detect import PROBE_TOOLS
    from app.engine.templates import render_template

    msgs = [{"role": "user", "content": "Hello"}]
    bos, eos = meta.bos_token or "", meta.eos_token or ""
    try:
        render_template(meta.chat_template, msgs, bos_token=bos, eos_token=eos)
    except TemplateRenderError as exc:
        try:  # some templates (tool_use ones, FireFunction) render only with tools: those work
            render_template(meta.chat_template, msgs, tools=PROBE_TOOLS, bos_token=bos, eos_token=eos)
        except TemplateRenderError:
            return str(exc)
    return None


def read_summary(path: str | Path) -> GgufSummary:
    """Summary of one GGUF (for a split model: pass the first shard). Raises ValueError on a bad file.

    The checks (header, keys, tensors inside the file) are :func:`app.engine.models.metadata.read_metadata`'s.
    """
    from app.engine.models.metadata import read_metadata

    path = Path(path)
    parts = split_parts(path)
    meta = read_metadata(path)  # GGUFMetadataError is a ValueError naming the file and the problem
    raw = meta.raw
    arch = meta.architecture
    params: int | None = meta.parameter_count
    declared = raw.get("general.parameter_count")
    if isinstance(declared, int) and declared > 0:
        params = declared
    elif len(parts) > 1:
        for extra in parts[1:]:
            try:
                params = (params or 0) + read_metadata(extra).parameter_count
            except ValueError:
                params = None
                break
    quant: str | None = meta.quantization
    if not quant or quant == "unknown":
        from app.engine.models.estimate import quant_from_filename

        quant = quant_from_filename(path.name)
    from app.engine.models.estimate import kv_shape

    n_layers, n_kv, head_dim = kv_shape(raw, arch)
    size = sum(p.stat().st_size for p in parts if p.is_file())
    # A template that renders a call is fine (some render only with tools, or with their own
    # variables, as the session renders them); one that does not is checked for what breaks it.
    is_proj, ptype, has_vision = projector_kind(raw)
    tool_format = "none" if is_proj else detect_tool_format(meta)
    problem = template_problem(meta) if tool_format == "none" and not is_proj else None
    return GgufSummary(
        name=meta.name,
        architecture=arch,
        parameter_count=params or None,
        quantization=quant,
        context_length=meta.context_length,
        file_size=size,
        has_chat_template=bool(meta.chat_template),
        tool_format=tool_format,
        template_problem=problem,
        n_layers=n_layers,
        n_kv_heads=n_kv,
        head_dim=head_dim,
        split_count=len(parts),
        is_projector=is_proj,
        projector_type=ptype,
        has_vision=has_vision,
    )
