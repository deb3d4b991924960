"""Read a GGUF file's metadata, before llama.cpp ever sees the file.

llama.cpp may crash the whole process on a corrupt file, so :func:`read_metadata` checks
the header, every key/value, every tensor's type and that each tensor's data lies inside
the file, and refuses the values llama.cpp is known to abort on (layer count, norm epsilon,
a SentencePiece tokenizer without scores, an absurd context length). Its reader is bounded:
every count and length is checked against the file's size before anything is read, so the
work is linear in the file's size whatever the header claims. Any problem raises
:class:`GGUFMetadataError` naming the file and the problem.
"""

from __future__ import annotations

import errno
import os
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "LLAMA_MAX_LAYERS",
    "MAX_CONTEXT_LENGTH",
    "GGUFMetadata",
    "GGUFMetadataError",
    "GGUFOutOfMemoryError",
    "format_parameter_count",
    "read_metadata",
]

_GGUF_MAGIC = b"GGUF"
_MAX_SCALAR_STRING = 512  # raw scalar values kept in ``GGUFMetadata.raw`` are cut to this


class GGUFMetadataError(ValueError):
    """The file is not a readable GGUF model. ``str()`` names the file and the problem."""

    def __init__(self, path: str | os.PathLike[str], problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"{self.path}: {problem}")


class GGUFOutOfMemoryError(GGUFMetadataError):
    """The metadata could not be read for want of memory (a ``ulimit -v``, a full machine): the file
    itself may be sound, so nothing should mark it as broken."""

    def __init__(self, path: str | os.PathLike[str]):
        super().__init__(
            path,
            "out of memory while reading its metadata (the file may well be sound: free memory, or "
            "raise this process's memory limit, such as ulimit -v)",
        )


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

    def with_chat_template(self, source: str) -> GGUFMetadata:
        """This metadata with ``source`` as the model's only chat template (its own and its named
        ones replaced): what a model a template was set for is loaded and described with."""
        from dataclasses import replace

        return replace(self, chat_template=source, named_templates={})

    @property
    def embedding_model(self) -> bool:
        """Whether the file is an embedding model: it names a pooling of its own (mean, CLS, last
        token) or reads its input both ways (BERT's non-causal attention). A chat model names
        neither (it still embeds, by the mean: ``app.engine.embedding``)."""
        arch = self.architecture
        return (
            self.raw.get(f"{arch}.pooling_type") in (1, 2, 3)
            or self.raw.get(f"{arch}.attention.causal") is False
        )

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


# --- A bounded GGUF reader -------------------------------------------------------------------
# Every count and length is checked against the bytes left in the file *before* anything is read
# or allocated, so a header that claims 2**60 items fails at once instead of looping (gguf-py's
# reader walks arrays item by item past the end of the file).  Arrays are skipped, not copied:
# only the token list keeps an index of item offsets (for the bos/eos text).

_SCALARS: dict[int, tuple[str, int]] = {
    0: ("B", 1),
    1: ("b", 1),
    2: ("H", 2),
    3: ("h", 2),
    4: ("I", 4),
    5: ("i", 4),
    6: ("f", 4),
    7: ("?", 1),
    10: ("Q", 8),
    11: ("q", 8),
    12: ("d", 8),
}
_T_STRING, _T_ARRAY = 8, 9
_MAX_ARRAY_DEPTH = 4
_MAX_DIMS = 4  # GGML_MAX_DIMS
_INDEXED_ARRAYS = frozenset({"tokenizer.ggml.tokens"})


class _Corrupt(Exception):
    """Raised inside the reader; turned into a GGUFMetadataError naming the file."""


@dataclass
class _Array:
    """An array value, not read: its element type, item count and (for strings) item offsets."""

    item_type: int
    count: int
    start: int
    offsets: Any = None  # array('Q') of string item offsets, only for _INDEXED_ARRAYS


@dataclass
class _Tensor:
    name: str
    dims: tuple[int, ...]
    type_id: int
    offset: int
    type_name: str = ""
    n_elements: int = 0
    n_bytes: int = 0
    data_offset: int = 0


class _Reader:
    def __init__(self, buf: Any, size: int):
        import struct

        self.buf, self.size, self.pos, self.e = buf, size, 0, "<"
        self._struct = struct
        self._u64 = struct.Struct("<Q")

    def need(self, n: int, what: str) -> None:
        if n < 0 or self.pos + n > self.size:
            raise _Corrupt(
                f"the file is truncated or corrupt ({what} needs {n} bytes at offset {self.pos}, "
                f"the file has {self.size})"
            )

    def scalar(self, t: int, what: str) -> Any:
        fmt, n = _SCALARS[t]
        self.need(n, what)
        (v,) = self._struct.unpack_from(self.e + fmt, self.buf, self.pos)
        self.pos += n
        return v

    def u32(self, what: str) -> int:
        return self.scalar(4, what)

    def u64(self, what: str) -> int:
        return self.scalar(10, what)

    def raw_string(self, what: str) -> bytes:
        n = self.u64(f"the length of {what}")
        self.need(n, what)
        data = bytes(self.buf[self.pos : self.pos + n])
        self.pos += n
        return data

    def string(self, what: str) -> str:
        data = self.raw_string(what)
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise _Corrupt(f"{what} is not valid UTF-8 ({exc.reason} at byte {exc.start})") from None

    def value(self, t: int, key: str, depth: int = 0) -> Any:
        if t in _SCALARS:
            return self.scalar(t, f"the value of {key!r}")
        if t == _T_STRING:
            return self.string(f"the value of {key!r}")
        if t == _T_ARRAY:
            if depth >= _MAX_ARRAY_DEPTH:
                raise _Corrupt(f"the array {key!r} is nested more than {_MAX_ARRAY_DEPTH} deep")
            item_type = self.u32(f"the item type of array {key!r}")
            count = self.u64(f"the length of array {key!r}")
            arr = _Array(item_type, count, self.pos)
            if item_type in _SCALARS:
                self.need(count * _SCALARS[item_type][1], f"array {key!r} of {count} items")
                self.pos += count * _SCALARS[item_type][1]
            elif item_type == _T_STRING:
                self.need(count * 8, f"array {key!r} of {count} strings")  # each has an 8-byte length
                self._skip_strings(arr, key in _INDEXED_ARRAYS and depth == 0, key)
            elif item_type == _T_ARRAY:
                self.need(count * 12, f"array {key!r} of {count} arrays")
                for _ in range(count):
                    self.value(_T_ARRAY, key, depth + 1)
            else:
                raise _Corrupt(f"array {key!r} has an unknown item type {item_type}")
            return arr
        raise _Corrupt(f"key {key!r} has an unknown value type {t}")

    def _skip_strings(self, arr: _Array, index: bool, key: str) -> None:
        from array import array

        unpack, buf, size, pos = self._u64.unpack_from, self.buf, self.size, self.pos
        if self.e != "<":
            unpack = self._struct.Struct(">Q").unpack_from
        offsets = array("Q") if index else None
        for _ in range(arr.count):
            if pos + 8 > size:
                raise _Corrupt(f"the file is truncated or corrupt (array {key!r} runs past the end)")
            if offsets is not None:
                offsets.append(pos)
            pos += 8 + unpack(buf, pos)[0]
        if pos > size:
            raise _Corrupt(f"the file is truncated or corrupt (array {key!r} runs past the end)")
        self.pos = pos
        arr.offsets = offsets

    def item_string(self, arr: _Array, i: int) -> str | None:
        if arr.offsets is None or not 0 <= i < len(arr.offsets):
            return None
        start = arr.offsets[i]
        n = (
            self._u64.unpack_from(self.buf, start)[0]
            if self.e == "<"
            else self._struct.unpack_from(">Q", self.buf, start)[0]
        )
        try:
            return bytes(self.buf[start + 8 : start + 8 + n]).decode("utf-8")
        except UnicodeDecodeError:
            return None


def _parse(buf: Any, size: int) -> tuple[dict[str, Any], list[_Tensor], _Reader]:
    import gguf

    r = _Reader(buf, size)
    r.pos = 4
    version = r.u32("the version")
    if version & 0xFFFF == 0 and version != 0:  # written on a big-endian machine
        r.e = ">"
        version = int.from_bytes(version.to_bytes(4, "little"), "big")
    if version not in (2, 3):
        raise _Corrupt(f"GGUF version {version} is not supported (Callisto can handle versions 2 and 3)")
    n_tensors = r.u64("the tensor count")
    n_kv = r.u64("the key count")
    # The smallest key/value is 8 (key length) + 1 + 4 (type) + 1 bytes; the smallest tensor
    # record is 8 + 1 + 4 + 4 + 8 bytes.
    r.need(n_kv * 14, f"{n_kv} keys")
    fields: dict[str, Any] = {}
    for _ in range(n_kv):
        key = r.string("a key name")
        t = r.u32(f"the type of {key!r}")
        if key in fields:
            raise _Corrupt(f"duplicate key {key!r}")
        fields[key] = r.value(t, key)
    r.need(n_tensors * 25, f"{n_tensors} tensors")
    tensors: list[_Tensor] = []
    for _ in range(n_tensors):
        name = r.string("a tensor name")
        n_dims = r.u32(f"the dimension count of tensor {name!r}")
        if n_dims > _MAX_DIMS:
            raise _Corrupt(f"tensor {name!r} has {n_dims} dimensions (at most {_MAX_DIMS})")
        dims = tuple(r.u64(f"a dimension of tensor {name!r}") for _ in range(n_dims))
        type_id = r.u32(f"the type of tensor {name!r}")
        offset = r.u64(f"the data offset of tensor {name!r}")
        try:
            qtype = gguf.GGMLQuantizationType(type_id)
            block, type_size = gguf.GGML_QUANT_SIZES[qtype]
        except (ValueError, KeyError):
            raise _Corrupt(f"tensor {name!r} has an unknown type {type_id}") from None
        n_el = 1
        for d in dims:
            n_el *= d
        tensors.append(_Tensor(name, dims, type_id, offset, qtype.name, n_el, n_el * type_size // block))
    align = fields.get("general.alignment", 32)
    if isinstance(align, bool) or not isinstance(align, int) or align <= 0 or align & (align - 1):
        raise _Corrupt(f"general.alignment must be a non-zero power of two, not {align!r}")
    data_start = -(-r.pos // align) * align
    for tensor in tensors:
        tensor.data_offset = data_start + tensor.offset
    return fields, tensors, r


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


def read_metadata(path: str | os.PathLike[str], *, check_limits: bool = True) -> GGUFMetadata:
    """Read and check ``path``; raise :class:`GGUFMetadataError` if it is not a sound GGUF.

    Results are cached by (path, size, modification time): the gguf reader walks every
    token string of a large vocabulary, which takes seconds for a 262k-token model.
    ``check_limits=False`` skips the refusal of values llama.cpp aborts on (tests of the engine
    process only; the result is not cached).
    """
    p = Path(path)
    if not check_limits:
        return _read_metadata(p, check_limits=False)
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


def _read_metadata(p: Path, *, check_limits: bool = True) -> GGUFMetadata:
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

    import mmap

    try:
        with open(p, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as buf:
            try:
                fields, tensors, reader = _parse(buf, size)
                return _build(p, size, fields, tensors, reader, check_limits=check_limits)
            except GGUFMetadataError:
                raise
            except MemoryError:
                raise GGUFOutOfMemoryError(p) from None
            except _Corrupt as exc:
                raise GGUFMetadataError(p, f"corrupt GGUF: {exc}") from None
            except Exception as exc:  # noqa: BLE001 - any reader failure means a bad file, never a crash
                raise GGUFMetadataError(p, f"corrupt GGUF metadata: {type(exc).__name__}: {exc}") from exc
    except OSError as exc:
        if exc.errno == errno.ENOMEM:  # mmap: no address space left for the file
            raise GGUFOutOfMemoryError(p) from None
        raise GGUFMetadataError(p, f"cannot be read ({exc.strerror or exc})") from exc


LLAMA_MAX_LAYERS = 512  # llama.cpp's LLAMA_MAX_LAYERS: GGML_ASSERT aborts the process beyond it
MAX_CONTEXT_LENGTH = 1 << 24  # llama-cpp-python allocates n_ctx_train tokens on every tokenize call


def _int_value(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _check_llama_cpp_limits(p: Path, arch: str, fields: dict[str, Any]) -> None:
    """Refuse, with a precise message, the values on which llama.cpp aborts the whole process.

    llama.cpp checks these with ``GGML_ASSERT`` (abort) or an uncaught C++ exception instead of
    a load error, so they must never reach it.
    """
    layers = _int_value(fields.get(f"{arch}.block_count"))
    if layers is not None and not 1 <= layers <= LLAMA_MAX_LAYERS:
        raise GGUFMetadataError(
            p,
            f"llama.cpp would reject its layer count: {arch}.block_count is {layers}, "
            f"llama.cpp accepts 1 to {LLAMA_MAX_LAYERS} layers",
        )
    for suffix in ("attention.layer_norm_rms_epsilon", "attention.layer_norm_epsilon"):
        eps = fields.get(f"{arch}.{suffix}")
        if isinstance(eps, float) and not (eps >= 0.0 and eps != float("inf")):
            raise GGUFMetadataError(
                p,
                f"its norm epsilon {arch}.{suffix} is {eps}: llama.cpp needs a finite "
                f"number >= 0 and would abort at the first message",
            )
    if fields.get("tokenizer.ggml.model") == "llama":
        scores = fields.get("tokenizer.ggml.scores")
        tokens = fields.get("tokenizer.ggml.tokens")
        if not isinstance(scores, _Array) or (isinstance(tokens, _Array) and scores.count < tokens.count):
            raise GGUFMetadataError(
                p,
                "its 'llama' (SentencePiece) tokenizer has no score for every token "
                "(tokenizer.ggml.scores), which makes llama.cpp abort",
            )
    ctx = _int_value(fields.get(f"{arch}.context_length"))
    if ctx is not None and not 0 <= ctx <= MAX_CONTEXT_LENGTH:
        raise GGUFMetadataError(
            p,
            f"its context length {arch}.context_length is {ctx:,}: Callisto accepts "
            f"0 to {MAX_CONTEXT_LENGTH:,} tokens (llama-cpp-python allocates that many "
            f"on every tokenize call)",
        )


def _build(
    p: Path,
    size: int,
    fields: dict[str, Any],
    tensors: list[_Tensor],
    reader: _Reader,
    *,
    check_limits: bool = True,
) -> GGUFMetadata:
    raw: dict[str, Any] = {}
    for key, value in fields.items():
        if isinstance(value, _Array):
            continue  # arrays (token lists, merges) are never copied whole
        if (
            isinstance(value, str)
            and len(value) > _MAX_SCALAR_STRING
            and not key.startswith("tokenizer.chat_template")
        ):
            value = value[:_MAX_SCALAR_STRING] + "…"
        if value is not None:
            raw[key] = value

    def get(key: str) -> Any:
        value = fields.get(key)
        return None if isinstance(value, _Array) else value

    arch = get("general.architecture")
    if not isinstance(arch, str) or not arch:
        raise GGUFMetadataError(p, "not a model: the GGUF has no general.architecture key")

    if check_limits:
        _check_llama_cpp_limits(p, arch, fields)

    # Tensors: every one must have a known type and lie inside the file.
    n_params = 0
    tensor_types: dict[str, int] = {}
    for t in tensors:
        end = t.data_offset + t.n_bytes
        if end > size:
            raise GGUFMetadataError(
                p,
                f"the file is truncated: tensor {t.name!r} needs bytes up to {end} but the file has {size}",
            )
        n_params += t.n_elements
        tensor_types[t.type_name] = tensor_types.get(t.type_name, 0) + t.n_elements
    if not tensors:
        raise GGUFMetadataError(p, "not a model: the GGUF holds no tensors")

    ctx = get(f"{arch}.context_length")
    tokens_field = fields.get("tokenizer.ggml.tokens")
    if not isinstance(tokens_field, _Array):
        tokens_field = None
    vocab_size = tokens_field.count if tokens_field is not None else 0

    def token_text(tid: Any) -> str | None:
        if tokens_field is None or isinstance(tid, bool) or not isinstance(tid, int):
            return None
        return reader.item_string(tokens_field, tid)

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

    bos_id, eos_id, eot_id = (
        get("tokenizer.ggml.bos_token_id"),
        get("tokenizer.ggml.eos_token_id"),
        get("tokenizer.ggml.eot_token_id"),
    )
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
