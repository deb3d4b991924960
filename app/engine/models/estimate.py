"""Memory estimate for running a GGUF: weights + KV cache + overhead, against this machine's RAM.

* weights: the file size (GGUF weights are mmapped as they are stored);
* KV cache: ``2 (K and V) * n_layers * n_ctx * n_kv_heads * head_dim * bytes per element``: 2 for
  an f16 cache, 34/32 for q8_0 and 18/32 for q4_0 (llama.cpp's blocks of 32 values with one f16
  scale: :data:`KV_BYTES_PER_ELEMENT`);
* overhead: compute buffers and runtime, ``256 MiB + 5% of the weights``.

For a local file the shape comes from its GGUF metadata. For a remote file only the size and the
quantization (from the file name) are known: the parameter count is derived from the size and the
quantization's bits per weight, and the layer / KV width from typical transformer shapes.

Verdict against total RAM: "fits" below 70 %, "tight" below 90 %, "too large" above.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = [
    "FITS",
    "KV_BYTES_PER_ELEMENT",
    "KV_CACHE_TYPES",
    "TIGHT",
    "TOO_LARGE",
    "MemoryEstimate",
    "bits_per_weight",
    "classify",
    "describe_kv_cache",
    "estimate_memory",
    "estimate_remote",
    "head_sizes",
    "kv_cache_bytes",
    "kv_shape",
    "model_kv_bytes",
    "quant_from_filename",
    "system_ram",
]

FITS = "fits"
TIGHT = "tight"
TOO_LARGE = "too large"

#: the KV cache types a model may be loaded with (llama.cpp's ``--cache-type-k/v``)
KV_CACHE_TYPES = ("f16", "q8_0", "q4_0")
#: bytes one K or V value takes in each KV cache type
KV_BYTES_PER_ELEMENT: dict[str, float] = {"f16": 2.0, "q8_0": 34 / 32, "q4_0": 18 / 32}

FIT_RATIO = 0.70
TIGHT_RATIO = 0.90
_OVERHEAD_FIXED = 256 * 1024 * 1024
_OVERHEAD_RATIO = 0.05

# Approximate bits per weight of llama.cpp quantizations (incl. scales), for remote estimates.
_BPW: dict[str, float] = {
    "F32": 32.0,
    "F16": 16.0,
    "BF16": 16.0,
    "Q8_0": 8.5,
    "Q8_K": 8.5,
    "Q6_K": 6.56,
    "Q5_K_M": 5.69,
    "Q5_K_S": 5.54,
    "Q5_K": 5.6,
    "Q5_0": 5.5,
    "Q5_1": 6.0,
    "Q4_K_M": 4.85,
    "Q4_K_S": 4.58,
    "Q4_K": 4.7,
    "Q4_0": 4.5,
    "Q4_1": 5.0,
    "Q3_K_L": 4.27,
    "Q3_K_M": 3.91,
    "Q3_K_S": 3.5,
    "Q3_K": 3.9,
    "Q2_K": 3.35,
    "Q2_K_S": 3.0,
    "IQ4_XS": 4.25,
    "IQ4_NL": 4.5,
    "IQ3_M": 3.66,
    "IQ3_S": 3.44,
    "IQ3_XS": 3.3,
    "IQ3_XXS": 3.06,
    "IQ2_M": 2.7,
    "IQ2_S": 2.5,
    "IQ2_XS": 2.31,
    "IQ2_XXS": 2.06,
    "IQ1_M": 1.75,
    "IQ1_S": 1.56,
    "TQ1_0": 1.69,
    "TQ2_0": 2.06,
    "MXFP4": 4.25,
}

_QUANT_RE = re.compile(
    r"(?<![A-Za-z0-9])(I?Q\d_K_[SMLX]L?|I?Q\d_K|IQ\d_(?:XXS|XS|S|M|NL)|Q\d_\d|TQ\d_\d|MXFP4|BF16|F16|F32)(?![A-Za-z0-9])",
    re.IGNORECASE,
)

# Typical (n_layers, n_kv_heads * head_dim) of GQA models by parameter count (billions).
_SHAPES: list[tuple[float, int, int]] = [
    (0.15, 30, 192),
    (0.5, 24, 128),
    (1.0, 16, 512),
    (1.5, 28, 256),
    (3.0, 28, 1024),
    (4.0, 36, 1024),
    (8.0, 32, 1024),
    (14.0, 48, 1024),
    (32.0, 64, 1024),
    (70.0, 80, 1024),
    (120.0, 88, 1024),
    (400.0, 126, 1024),
]


@dataclass(frozen=True)
class MemoryEstimate:
    weights_bytes: int
    kv_bytes: int
    overhead_bytes: int
    n_ctx: int
    ram_total: int
    ram_available: int

    @property
    def total_bytes(self) -> int:
        return self.weights_bytes + self.kv_bytes + self.overhead_bytes

    @property
    def fit(self) -> str:
        return classify(self.total_bytes, self.ram_total)

    def describe(self) -> str:
        gib = 1024**3
        return (
            f"~{self.total_bytes / gib:.1f} GiB needed at {self.n_ctx} context "
            f"(weights {self.weights_bytes / gib:.1f} + KV {self.kv_bytes / gib:.2f} GiB) "
            f"of {self.ram_total / gib:.1f} GiB RAM: {self.fit}"
        )


def system_ram() -> tuple[int, int]:
    """(total, available) bytes of RAM on this machine."""
    import psutil

    vm = psutil.virtual_memory()
    return int(vm.total), int(vm.available)


def classify(total_bytes: int, ram_total: int) -> str:
    if ram_total <= 0:
        return TOO_LARGE
    ratio = total_bytes / ram_total
    if ratio < FIT_RATIO:
        return FITS
    if ratio < TIGHT_RATIO:
        return TIGHT
    return TOO_LARGE


def kv_cache_bytes(
    n_layers: int,
    n_ctx: int,
    n_kv_heads: int,
    head_dim: int,
    bytes_per_elem: float | None = None,
    *,
    kv_type: str = "f16",
) -> int:
    """Size of a K+V cache of ``kv_type`` (f16, q8_0, q4_0) for ``n_ctx`` tokens."""
    per = bytes_per_elem if bytes_per_elem is not None else _kv_bytes_per_element(kv_type)
    return int(2 * n_layers * n_ctx * n_kv_heads * head_dim * per)


def _arch_int(raw: dict, arch: str | None, suffix: str) -> int | None:
    value = raw.get(f"{arch}.{suffix}")
    return int(value) if isinstance(value, int) and not isinstance(value, bool) else None


def head_sizes(raw: dict, arch: str | None) -> tuple[int | None, int | None]:
    """(K, V) head sizes of a model from its GGUF metadata ``raw``: its ``attention.key_length``
    and ``value_length``, else its embedding over its heads, as llama.cpp reckons them (None
    where it does not say)."""
    n_heads = _arch_int(raw, arch, "attention.head_count")
    emb = _arch_int(raw, arch, "embedding_length")
    even = (emb // n_heads) if emb and n_heads else None
    return (
        _arch_int(raw, arch, "attention.key_length") or even,
        _arch_int(raw, arch, "attention.value_length") or even,
    )


def kv_shape(raw: dict, arch: str | None) -> tuple[int | None, int | None, int | None]:
    """(layers, KV heads, head size) of a model from its GGUF metadata ``raw`` (None where it
    does not say): what its KV cache's size is reckoned from (:func:`kv_cache_bytes`)."""
    n_kv = _arch_int(raw, arch, "attention.head_count_kv") or _arch_int(raw, arch, "attention.head_count")
    return _arch_int(raw, arch, "block_count"), n_kv, head_sizes(raw, arch)[0]


def model_kv_bytes(raw: dict, architecture: str | None, tokens: int, kv_type: str = "f16") -> int | None:
    """The KV cache of ``tokens`` for the model whose GGUF metadata is ``raw`` (None when it does
    not say its shape)."""
    layers, kv_heads, head_dim = kv_shape(raw, architecture)
    if not (layers and kv_heads and head_dim):
        return None
    return kv_cache_bytes(layers, tokens, kv_heads, head_dim, kv_type=kv_type)


def describe_kv_cache(raw: dict, architecture: str | None, tokens: int, kv_type: str = "f16") -> str | None:
    """What a context of ``tokens`` holds for the model whose GGUF metadata is ``raw``, in words
    ("a KV cache of about 2.0 GiB for 4,194,304 tokens"; None when it does not say its shape):
    what a load llama.cpp refused with no word of why says, since its KV cache is the usual cause."""
    size = model_kv_bytes(raw, architecture, tokens, kv_type)
    if size is None:
        return None
    return f"a KV cache of about {size / 1024**3:,.1f} GiB for {tokens:,} tokens"


def _kv_bytes_per_element(kv_type: str) -> float:
    try:
        return KV_BYTES_PER_ELEMENT[kv_type]
    except KeyError:
        raise ValueError(f"unknown KV cache type {kv_type!r} (one of {', '.join(KV_CACHE_TYPES)})") from None


def quant_from_filename(filename: str) -> str | None:
    """``"Qwen3-8B-Q4_K_M-00001-of-00002.gguf"`` -> ``"Q4_K_M"``; None when the name says nothing."""
    name = filename.rsplit("/", 1)[-1]
    matches = _QUANT_RE.findall(name)
    return matches[-1].upper() if matches else None


def bits_per_weight(quant: str | None) -> float:
    if not quant:
        return 4.85  # Q4_K_M, the most common download
    q = quant.upper()
    if q in _BPW:
        return _BPW[q]
    base = q.split("_")[0]
    for key, bpw in _BPW.items():
        if key.startswith(base):
            return bpw
    return 4.85


def _shape_for_params(n_params: float) -> tuple[int, int]:
    b = n_params / 1e9
    best = _SHAPES[0]
    for shape in _SHAPES:
        if shape[0] <= b:
            best = shape
    return best[1], best[2]


def _overhead(weights: int) -> int:
    return _OVERHEAD_FIXED + int(weights * _OVERHEAD_RATIO)


def estimate_memory(
    *,
    weights_bytes: int,
    n_layers: int,
    n_kv_heads: int,
    head_dim: int,
    n_ctx: int,
    ram: tuple[int, int] | None = None,
    kv_type: str = "f16",
) -> MemoryEstimate:
    """Estimate from a known model shape (local GGUF metadata), with a ``kv_type`` KV cache."""
    total, avail = ram if ram is not None else system_ram()
    return MemoryEstimate(
        weights_bytes=int(weights_bytes),
        kv_bytes=kv_cache_bytes(n_layers, n_ctx, n_kv_heads, head_dim, kv_type=kv_type),
        overhead_bytes=_overhead(int(weights_bytes)),
        n_ctx=n_ctx,
        ram_total=total,
        ram_available=avail,
    )


def estimate_remote(
    file_size: int, quant: str | None, n_ctx: int, *, ram: tuple[int, int] | None = None, kv_type: str = "f16"
) -> MemoryEstimate:
    """Estimate from a remote file's size and quantization only, with a ``kv_type`` KV cache."""
    total, avail = ram if ram is not None else system_ram()
    n_params = file_size * 8 / bits_per_weight(quant)
    n_layers, kv_width = _shape_for_params(n_params)
    return MemoryEstimate(
        weights_bytes=int(file_size),
        kv_bytes=int(2 * n_layers * n_ctx * kv_width * _kv_bytes_per_element(kv_type)),
        overhead_bytes=_overhead(int(file_size)),
        n_ctx=n_ctx,
        ram_total=total,
        ram_available=avail,
    )
