"""Read a GGUF file's metadata with the ``gguf`` package, before llama.cpp ever sees the file.

llama.cpp may crash the whole process on a corrupt file, so :func:`read_metadata` checks
the header, every key/value, every tensor's type and that each tensor's data lies inside
the file. Any problem raises :class:`GGUFMetadataError` naming the file and the problem.
"""

from __future__ import annotations

import os
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["GGUFMetadata", "GGUFMetadataError", "format_parameter_count", "read_metadata"]

_GGUF_MAGIC = b"GGUF"
_MAX_SCALAR_STRING = 512  # raw scalar values kept in ``GGUFMetadata.raw`` are cut to this


class GGUFMetadataError(ValueError):
    """The file is not a readable GGUF model. ``str()`` names the file and the problem."""

    def __init__(self, path: str | os.PathLike[str], problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


@dataclass(frozen=True)
class GGUFMetadata:
    """What Callisto needs to know about a GGUF model without loading it."""

    path: str
    file_size: int
    architecture: str
    name: str | None
    parameter_count: int
    context_length: int | None
    quantization: str
    chat_template: str | None
    named_templates: dict[str, str] = field(default_factory=dict)
    bos_token_id: int | None = None
    eos_token_id: int | None = None
    eot_token_id: int | None = None
    bos_token: str | None = None
    eos_token: str | None = None
    add_bos_token: bool | None = None
    vocab_size: int = 0
    sampling: dict[str, float | int] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict)

    @property
    def parameter_label(self) -> str:
        return format_parameter_count(self.parameter_count)

    @property
    def tool_use_template(self) -> str | None:
        return self.named_templates.get("tool_use")

    def to_dict(self) -> dict[str, Any]:
        data = asdict(self)
        data["parameter_label"] = self.parameter_label
        return data


def format_parameter_count(n: int) -> str:
    """``134515008`` -> ``"135M"``; ``7241732096`` -> ``"7.2B"``."""
    if n >= 1_000_000_000:
        value, unit = n / 1e9, "B"
    elif n >= 1_000_000:
        value, unit = n / 1e6, "M"
    elif n >= 1_000:
        value, unit = n / 1e3, "K"
    else:
        return str(n)
    text = f"{value:.1f}" if value < 10 else f"{value:.0f}"
    return text.removesuffix(".0") + unit


def _field_value(reader_field: Any) -> Any:
    from gguf import GGUFValueType

    types = reader_field.types
    if not types:
        return None
    if types[0] == GGUFValueType.ARRAY:
        return None  # arrays (token lists, merges) are read on demand, never copied whole
    return reader_field.contents()


def _quant_name(file_type: int | None, tensor_types: dict[str, int]) -> str:
    import gguf

    if file_type is not None:
        try:
            name = gguf.LlamaFileType(file_type).name
        except ValueError:
            name = None
        if name:
            return name.removeprefix("MOSTLY_").removeprefix("ALL_")
    if tensor_types:
        return max(tensor_types.items(), key=lambda kv: kv[1])[0]
    return "unknown"


_CACHE: dict[tuple[str, int, int], GGUFMetadata] = {}
_CACHE_LOCK = threading.Lock()
_CACHE_MAX = 64


def read_metadata(path: str | os.PathLike[str]) -> GGUFMetadata:
    """Read and check ``path``; raise :class:`GGUFMetadataError` if it is not a sound GGUF.

    Results are cached by (path, size, modification time): the gguf reader walks every
    token string of a large vocabulary, which takes seconds for a 262k-token model.
    """
    p = Path(path)
    try:
        st = p.stat()
        key = (str(p.resolve()), st.st_size, st.st_mtime_ns)
    except OSError:
        key = None
    if key is not None:
        with _CACHE_LOCK:
            hit = _CACHE.get(key)
        if hit is not None:
            return hit
    meta = _read_metadata(p)
    if key is not None:
        with _CACHE_LOCK:
            if len(_CACHE) >= _CACHE_MAX:
                _CACHE.pop(next(iter(_CACHE)))
            _CACHE[key] = meta
    return meta


def _read_metadata(p: Path) -> GGUFMetadata:
    if not p.exists():
        raise GGUFMetadataError(p, "file not found")
    if not p.is_file():
        raise GGUFMetadataError(p, "not a regular file")
    size = p.stat().st_size
    if size < 24:
        raise GGUFMetadataError(p, f"not a GGUF model: the file is only {size} bytes")
    try:
        with open(p, "rb") as fh:
            magic = fh.read(4)
    except OSError as exc:
        raise GGUFMetadataError(p, f"cannot be read ({exc.strerror or exc})") from exc
    if magic != _GGUF_MAGIC:
        raise GGUFMetadataError(p, f"not a GGUF model (the file starts with {magic!r}, not b'GGUF')")

    import gguf

    try:
        reader = gguf.GGUFReader(str(p))
    except (ValueError, KeyError, IndexError, TypeError, OverflowError, MemoryError, OSError) as exc:
        problem = str(exc) or type(exc).__name__
        if isinstance(exc, (IndexError, OverflowError)) or "cannot reshape" in problem or "buffer" in problem:
            problem = f"the file is truncated or corrupt ({problem})"
        raise GGUFMetadataError(p, f"corrupt GGUF: {problem}") from exc
    except Exception as exc:  # noqa: BLE001 - any reader failure means a bad file, never a crash
        raise GGUFMetadataError(p, f"corrupt GGUF: {type(exc).__name__}: {exc}") from exc

    try:
        return _build(p, size, reader)
    except GGUFMetadataError:
        raise
    except Exception as exc:  # noqa: BLE001
        raise GGUFMetadataError(p, f"corrupt GGUF metadata: {type(exc).__name__}: {exc}") from exc


def _build(p: Path, size: int, reader: Any) -> GGUFMetadata:
    fields = reader.fields
    raw: dict[str, Any] = {}
    for key, f in fields.items():
        if key.startswith("GGUF."):
            continue
        value = _field_value(f)
        if isinstance(value, str) and len(value) > _MAX_SCALAR_STRING and not key.startswith(
            "tokenizer.chat_template"
        ):
            value = value[:_MAX_SCALAR_STRING] + "…"
        if value is not None:
            raw[key] = value

    def get(key: str) -> Any:
        f = fields.get(key)
        return None if f is None else _field_value(f)

    arch = get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise GGUFMetadataError(p, "not a model: the GGUF has no general.architecture key")

    # Tensors: every one must have a known type and lie inside the file.
    n_params = 0
    tensor_types: dict[str, int] = {}
    for t in reader.tensors:
        end = int(t.data_offset) + int(t.n_bytes)
        if end > size:
            raise GGUFMetadataError(
                p,
                f"the file is truncated: tensor {t.name!r} needs bytes up to {end} but the file has {size}",
            )
        n_params += int(t.n_elements)
        tname = t.tensor_type.name
        tensor_types[tname] = tensor_types.get(tname, 0) + int(t.n_elements)
    if not reader.tensors:
        raise GGUFMetadataError(p, "not a model: the GGUF holds no tensors")

    ctx = get(f"{arch}.context_length")
    tokens_field = fields.get("tokenizer.ggml.tokens")
    vocab_size = len(tokens_field.data) if tokens_field is not None else 0

    def token_text(tid: Any) -> str | None:
        if tokens_field is None or not isinstance(tid, int) or not 0 <= tid < vocab_size:
            return None
        try:
            return tokens_field.contents(tid)
        except Exception:  # noqa: BLE001
            return None

    named: dict[str, str] = {}
    for key in fields:
        if key.startswith("tokenizer.chat_template.") and isinstance(get(key), str):
            named[key.removeprefix("tokenizer.chat_template.")] = get(key)

    sampling: dict[str, float | int] = {}
    for key in fields:
        if key.startswith("general.sampling."):
            value = get(key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                if isinstance(value, float):
                    value = float(f"{value:.6g}")  # stored as f32
                sampling[key.removeprefix("general.sampling.")] = value

    bos_id, eos_id, eot_id = (get("tokenizer.ggml.bos_token_id"), get("tokenizer.ggml.eos_token_id"),
                              get("tokenizer.ggml.eot_token_id"))
    add_bos = get("tokenizer.ggml.add_bos_token")
    template = get("tokenizer.chat_template")
    name = get("general.name")
    return GGUFMetadata(
        path=str(p),
        file_size=size,
        architecture=arch,
        name=name if isinstance(name, str) else None,
        parameter_count=n_params,
        context_length=int(ctx) if isinstance(ctx, int) else None,
        quantization=_quant_name(get("general.file_type"), tensor_types),
        chat_template=template if isinstance(template, str) and template.strip() else None,
        named_templates=named,
        bos_token_id=bos_id if isinstance(bos_id, int) else None,
        eos_token_id=eos_id if isinstance(eos_id, int) else None,
        eot_token_id=eot_id if isinstance(eot_id, int) else None,
        bos_token=token_text(bos_id),
        eos_token=token_text(eos_id),
        add_bos_token=bool(add_bos) if add_bos is not None else None,
        vocab_size=vocab_size,
        sampling=sampling,
        raw=raw,
    )
