"""Images for vision models: check an image's bytes, load a projector, evaluate a prompt with images.

A vision model is a text GGUF plus a *projector* (an ``mmproj`` GGUF: a vision encoder and the
layers that map its output into the text model's embedding space). llama.cpp's ``libmtmd`` loads
the projector beside the loaded text model (:meth:`Projector.load`), turns a prompt whose text
holds image places into chunks (:meth:`Projector.tokenize`: text tokens, and per image the
preprocessed image ready for the encoder) and evaluates them into the text model's context
(:meth:`Projector.evaluate`: text chunks through llama-cpp-python's ``Llama.eval``, image chunks
encoded by the projector and decoded as embeddings), after which generation follows as for text.

Everything here runs where llama.cpp runs: in the engine process (``app.engine.engine_child``),
never in the window's process. Image bytes are untrusted input:

* :func:`check_image` reads the header only (pure Python, no decoding): the format (PNG, JPEG,
  GIF, WebP, BMP), the size in pixels, the structure that a truncated or damaged file breaks
  (PNG chunk CRCs and its ``IEND``, a JPEG's end-of-image marker, a GIF's trailer, a BMP's pixel
  array, a WebP's RIFF size), and the limits (:class:`ImageLimits`: bytes, pixels a side, pixels
  in all), so an "image bomb" (a small file that declares 20000x20000 pixels) is refused before
  anything allocates its pixels. Every failure is an :class:`ImageError` with one sentence.
* Only then does llama.cpp decode it (``mtmd_helper_bitmap_init_from_buf``: stb_image, in this
  process); a file it cannot decode is an :class:`ImageError` too, and the context is untouched
  (nothing is evaluated before every image of a prompt is decoded). WebP is recognised and
  checked, but stb_image cannot decode it: an :class:`ImageError` asks for PNG or JPEG.
* The build disables libmtmd's video support (``-DMTMD_VIDEO=OFF``, the Makefile): with it on,
  bytes that stb_image rejects are handed to an ``ffmpeg`` subprocess.

What is cached, and how the KV prefix is reused
------------------------------------------------
* The projector (an ``mtmd`` context) is loaded once per model and kept until :meth:`Projector.close`.
* A :class:`MediaPrompt` holds the tokenized prompt: text token ids and, per image chunk, the
  preprocessed image (libmtmd's chunk) until :meth:`MediaPrompt.close`. Its :attr:`~MediaPrompt.ids`
  list has one entry per position: a text token's id, or for every position of an image a
  *media id*, a negative number derived from the image's SHA-256 (:func:`is_media_id`).
* :meth:`Projector.evaluate` writes those ids into ``llm.input_ids`` as it evaluates, exactly as
  ``Llama.eval`` records text tokens, so ``llm.input_ids[:llm.n_tokens]`` always names what the
  KV cache holds. The next prompt is compared with it: the common prefix (never ending inside an
  image) is kept, and only the rest is evaluated, so a conversation's earlier images are neither
  encoded nor decoded again on the next turn (the KV holds their embeddings). A different image
  at the same place has a different media id, and is evaluated. The KV store
  (``app.engine.kvstore``) saves and restores ``input_ids`` with the state, media ids included.
* Nothing else: image embeddings are not kept outside the KV cache, so an image that is no longer
  in the cached prefix is encoded again.

A media id is not a token: code that reads prompt ids (n-gram drafting, ``_read_prompt``, a
token-by-token ``eval``) must skip them or leave them to :meth:`Projector.evaluate`, which
evaluates everything up to the prompt's last text token(s) (``keep_last``), so that the token
loop only evaluates text.

``llama_cpp`` and its ``mtmd_cpp`` bindings are imported lazily: a llama-cpp-python built
without libmtmd (``LLAVA_BUILD=OFF``) still runs everything else; :func:`mtmd_available` says
whether this build has it.
"""

from __future__ import annotations

import ctypes
import hashlib
import logging
import os
import re
import struct
import weakref
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.engine.errors import (
    ContextOverflowError,
    GenerationError,
    ImageError,
    ModelLoadError,
    NoProjectorError,
)

__all__ = [
    "DEFAULT_LIMITS",
    "DEFAULT_MARKER",
    "Evaluation",
    "ImageError",
    "ImageInfo",
    "ImageLimits",
    "ImagePrompt",
    "MediaPrompt",
    "NoProjectorError",
    "Projector",
    "Segment",
    "check_image",
    "find_projector",
    "image_prompt",
    "is_media_id",
    "media_id",
    "mtmd_available",
    "prompt_images",
    "require_projector",
]

log = logging.getLogger(__name__)

#: libmtmd's default media marker (``mtmd_default_marker()``): where an image goes in a prompt's text
DEFAULT_MARKER = "<__media__>"


# -- limits and header checks ----------------------------------------------------------------------


@dataclass(frozen=True)
class ImageLimits:
    """What an image may be: at most ``max_bytes`` bytes, ``max_side`` pixels wide and high, and
    ``max_pixels`` pixels in all (stb_image decodes to 3 bytes a pixel: 48 MiP is ~144 MiB)."""

    max_bytes: int = 20 * 1024 * 1024
    max_side: int = 16384
    max_pixels: int = 48 * 1024 * 1024


DEFAULT_LIMITS = ImageLimits()
#: formats llama.cpp's decoder (stb_image) reads; WebP is checked but not decoded
DECODABLE = frozenset({"png", "jpeg", "gif", "bmp"})
_NAMES = {"png": "PNG", "jpeg": "JPEG", "gif": "GIF", "bmp": "BMP", "webp": "WebP"}


@dataclass(frozen=True)
class ImageInfo:
    """What the header says: ``format`` (png, jpeg, gif, bmp, webp), size in pixels and in bytes."""

    format: str
    width: int
    height: int
    n_bytes: int

    @property
    def name(self) -> str:
        return _NAMES[self.format]


def _mb(n: int) -> str:
    return f"{n / (1024 * 1024):.1f} MB"


def check_image(data: bytes | bytearray | memoryview, limits: ImageLimits = DEFAULT_LIMITS) -> ImageInfo:
    """Read an image's header and check its structure and limits, without decoding it.

    Raises :class:`ImageError` (one sentence) for an empty, oversized, unknown, truncated or
    damaged file and for one whose pixel size exceeds ``limits``."""
    if not isinstance(data, bytes | bytearray | memoryview):
        raise ImageError(f"an image must be bytes, not {type(data).__name__}")
    data = bytes(data)
    n = len(data)
    if n == 0:
        raise ImageError("the image is empty (0 bytes)")
    if n > limits.max_bytes:
        raise ImageError(f"the image is {_mb(n)}, more than the {_mb(limits.max_bytes)} an image may be")
    fmt = _sniff(data)
    if fmt is None:
        raise ImageError(
            "the file is not an image Callisto can read (PNG, JPEG, GIF, WebP or BMP), "
            f"it starts with {data[:8]!r}"
        )
    name = _NAMES[fmt]
    size, verify = _READERS[fmt](data)
    width, height = size
    if width <= 0 or height <= 0:
        raise ImageError(f"the {name} image is damaged: its header says {width}x{height} pixels")
    if width > limits.max_side or height > limits.max_side or width * height > limits.max_pixels:
        raise ImageError(
            f"the {name} image is {width}x{height} pixels, more than the limit of {limits.max_side} "
            f"pixels a side and {limits.max_pixels / 1e6:.0f} million pixels in all"
        )
    verify()
    return ImageInfo(fmt, width, height, n)


def _sniff(data: bytes) -> str | None:
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return "png"
    if data.startswith(b"\xff\xd8\xff"):
        return "jpeg"
    if data[:6] in (b"GIF87a", b"GIF89a"):
        return "gif"
    if data[:4] == b"RIFF" and data[8:12] == b"WEBP":
        return "webp"
    if data.startswith(b"BM"):
        return "bmp"
    return None


def _truncated(name: str, where: str = "") -> ImageError:
    return ImageError(f"the {name} image is truncated{' ' + where if where else ''}: the file ends too early")


# Each reader returns the size its header declares and a check of the rest of the file's
# structure, which runs only once the size is within the limits (so a bomb is named as one).
_Reader = Callable[[bytes], tuple[tuple[int, int], Callable[[], None]]]


def _png(data: bytes) -> tuple[tuple[int, int], Callable[[], None]]:
    if len(data) < 33:
        raise _truncated("PNG", "(in its header)")
    if data[12:16] != b"IHDR" or data[8:12] != b"\x00\x00\x00\x0d":
        raise ImageError("the PNG image is damaged: it does not begin with an IHDR header chunk")
    width, height = struct.unpack(">II", data[16:24])

    def verify() -> None:  # every chunk whole, its CRC right, up to IEND
        pos, n = 8, len(data)
        while True:
            if pos + 12 > n:
                raise _truncated("PNG", "(no IEND chunk)")
            length, kind = struct.unpack(">I4s", data[pos : pos + 8])
            label = kind.decode("latin-1")
            end = pos + 12 + length
            if end > n:
                raise _truncated("PNG", f"(in its {label!r} chunk)")
            (crc,) = struct.unpack(">I", data[end - 4 : end])
            if zlib.crc32(data[pos + 4 : end - 4]) != crc:
                raise ImageError(f"the PNG image is damaged: its {label!r} chunk fails its checksum (CRC)")
            if kind == b"IEND":
                return
            pos = end

    return (width, height), verify


# SOF markers: baseline, extended, progressive, lossless (not DHT C4, JPG C8, DAC CC)
_SOF = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}


def _jpeg(data: bytes) -> tuple[tuple[int, int], Callable[[], None]]:
    pos, n = 2, len(data)
    size: tuple[int, int] | None = None
    while True:  # the segments up to the first scan
        if pos + 2 > n:
            raise _truncated("JPEG", "(before its image data)")
        if data[pos] != 0xFF:
            raise ImageError("the JPEG image is damaged: a marker is missing where its header expects one")
        while pos < n and data[pos] == 0xFF:  # fill bytes
            pos += 1
        if pos >= n:
            raise _truncated("JPEG", "(before its image data)")
        marker = data[pos]
        pos += 1
        if marker == 0xD9:
            raise ImageError("the JPEG image is damaged: it ends before its image data")
        if marker == 0x01 or 0xD0 <= marker <= 0xD8:
            continue  # no length
        if pos + 2 > n:
            raise _truncated("JPEG", "(before its image data)")
        (length,) = struct.unpack(">H", data[pos : pos + 2])
        if length < 2 or pos + length > n:
            raise _truncated("JPEG", "(before its image data)")
        if marker in _SOF:
            if length < 7:
                raise ImageError("the JPEG image is damaged: its frame header is too short")
            height, width = struct.unpack(">HH", data[pos + 3 : pos + 7])
            size = (width, height)
        if marker == 0xDA:
            break
        pos += length
    if size is None:
        raise ImageError("the JPEG image is damaged: its image data comes before its frame header")
    scan = pos + length

    def verify() -> None:  # the entropy-coded data ends with EOI (a 0xFF in it is stuffed: FF 00)
        if data.find(b"\xff\xd9", scan) < 0:
            raise _truncated("JPEG", "(no end-of-image marker)")

    return size, verify


def _gif(data: bytes) -> tuple[tuple[int, int], Callable[[], None]]:
    if len(data) < 13:
        raise _truncated("GIF", "(in its header)")
    width, height = struct.unpack("<HH", data[6:10])

    def verify() -> None:
        if not data.rstrip(b"\0").endswith(b";"):
            raise _truncated("GIF", "(no trailer)")

    return (width, height), verify


def _bmp(data: bytes) -> tuple[tuple[int, int], Callable[[], None]]:
    n = len(data)
    if n < 26:
        raise _truncated("BMP", "(in its header)")
    (offset,) = struct.unpack("<I", data[10:14])
    (header,) = struct.unpack("<I", data[14:18])
    if header == 12:
        width, height = struct.unpack("<HH", data[18:22])
        (bpp,) = struct.unpack("<H", data[24:26])
        compression = 0
    elif header >= 40 and n >= 34:
        width, height = struct.unpack("<ii", data[18:26])
        height = abs(height)  # negative: rows stored top-down
        (bpp,) = struct.unpack("<H", data[28:30])
        (compression,) = struct.unpack("<I", data[30:34])
    elif header >= 40:
        raise _truncated("BMP", "(in its header)")
    else:
        raise ImageError(f"the BMP image is damaged: unknown header size {header}")

    def verify() -> None:  # an uncompressed pixel array is all there
        if offset > n:
            raise _truncated("BMP", "(before its pixels)")
        if compression in (0, 3) and bpp in (1, 4, 8, 16, 24, 32):
            row = (bpp * width + 31) // 32 * 4
            if offset + row * height > n:
                raise _truncated("BMP", "(in its pixels)")

    return (width, height), verify


def _webp(data: bytes) -> tuple[tuple[int, int], Callable[[], None]]:
    n = len(data)
    if n < 30:
        raise _truncated("WebP", "(in its header)")
    chunk = data[12:16]
    if chunk == b"VP8 ":
        if data[23:26] != b"\x9d\x01\x2a":
            raise ImageError("the WebP image is damaged: its VP8 frame header is missing")
        width, height = struct.unpack("<HH", data[26:30])
        size = (width & 0x3FFF, height & 0x3FFF)
    elif chunk == b"VP8L":
        if data[20] != 0x2F:
            raise ImageError("the WebP image is damaged: its lossless header is missing")
        (bits,) = struct.unpack("<I", data[21:25])
        size = ((bits & 0x3FFF) + 1, ((bits >> 14) & 0x3FFF) + 1)
    elif chunk == b"VP8X":
        size = (1 + int.from_bytes(data[24:27], "little"), 1 + int.from_bytes(data[27:30], "little"))
    else:
        raise ImageError(f"the WebP image is damaged: unknown first chunk {chunk!r}")

    def verify() -> None:
        (riff,) = struct.unpack("<I", data[4:8])
        if riff + 8 > n:
            raise _truncated("WebP")

    return size, verify


_READERS: dict[str, _Reader] = {"png": _png, "jpeg": _jpeg, "gif": _gif, "bmp": _bmp, "webp": _webp}


# -- media ids ------------------------------------------------------------------------------------


def media_id(key: str | bytes) -> int:
    """The id every position of an image chunk gets in :attr:`MediaPrompt.ids` (and in
    ``llm.input_ids``): a negative number from the SHA-256 of ``key`` (the image's id), never a
    token id, equal for equal images."""
    raw = key.encode("utf-8") if isinstance(key, str) else key
    digest = hashlib.sha256(raw).digest()
    return -1 - (int.from_bytes(digest[:4], "little") & 0x3FFFFFFF)


def is_media_id(token: int) -> bool:
    """Whether a prompt id is an image position (:func:`media_id`), not a token."""
    return int(token) < 0


# -- rendered prompts with images ------------------------------------------------------------------


class ImagePrompt(str):
    """A rendered prompt with images: its :attr:`parts` in order, text (``str``) and images (their
    ``bytes``), as ``app.engine.render`` splits the template's output at each image's place.

    It is a ``str`` (the text, each image written as :data:`DEFAULT_MARKER`, for logs and display)
    so that it goes wherever a rendered prompt goes (``generate``, ``LoadedModel.tokenize``, the
    engine process's pipe: it pickles with its parts); the backends read :attr:`parts`, never the
    marker, so user text that writes the marker places no image. ``prompt + "text"`` (Continue)
    keeps the images; ``str(prompt)`` is the plain text."""

    parts: tuple[str | bytes, ...]

    def __new__(cls, parts: Sequence[str | bytes]) -> ImagePrompt:
        kept: list[str | bytes] = []
        for part in parts:
            if isinstance(part, str):
                if not part:
                    continue
                if kept and isinstance(kept[-1], str):
                    kept[-1] = kept[-1] + part
                    continue
                kept.append(part)
            elif isinstance(part, bytes | bytearray | memoryview):
                kept.append(bytes(part))
            else:
                raise TypeError(f"a prompt part must be text or image bytes, not {type(part).__name__}")
        text = "".join(p if isinstance(p, str) else DEFAULT_MARKER for p in kept)
        self = super().__new__(cls, text)
        self.parts = tuple(kept)
        return self

    @property
    def images(self) -> list[bytes]:
        return [p for p in self.parts if isinstance(p, bytes)]

    def __add__(self, other: str) -> ImagePrompt:  # type: ignore[override]
        more = other.parts if isinstance(other, ImagePrompt) else (str(other),)
        return ImagePrompt(self.parts + tuple(more))

    def __radd__(self, other: str) -> ImagePrompt:
        return ImagePrompt((str(other), *self.parts))

    def __reduce__(self) -> tuple[Any, ...]:
        return (ImagePrompt, (self.parts,))

    def __repr__(self) -> str:
        return f"ImagePrompt({len(self.images)} image(s), {str.__repr__(self)[:80]})"


def image_prompt(parts: Sequence[str | bytes]) -> str:
    """The prompt of ``parts``: an :class:`ImagePrompt` when they hold an image, else the text."""
    if any(not isinstance(p, str) for p in parts):
        return ImagePrompt(parts)
    return "".join(str(p) for p in parts)


def prompt_images(prompt: Any) -> list[bytes]:
    """The images of a prompt (an :class:`ImagePrompt`'s; none for text or token ids)."""
    return prompt.images if isinstance(prompt, ImagePrompt) else []


# -- libmtmd ---------------------------------------------------------------------------------------


def _mtmd() -> Any:
    """llama-cpp-python's libmtmd bindings, or ImageError when this build has none."""
    try:
        import llama_cpp.mtmd_cpp as mtmd
    except Exception as exc:  # noqa: BLE001 - a missing shared library raises FileNotFoundError/OSError/RuntimeError
        raise ImageError(
            "this llama-cpp-python has no libmtmd, which reads images: rebuild it with "
            f"CMAKE_ARGS=-DLLAVA_BUILD=ON ({exc})"
        ) from exc
    return mtmd


def mtmd_available() -> tuple[bool, str]:
    """(True, "") when llama-cpp-python has libmtmd (image input), else (False, why not)."""
    try:
        _mtmd()
    except ImageError as exc:
        return False, str(exc)
    return True, ""


# A model file's name without its quantisation (``-Q4_K_M``, ``.IQ3_XXS``, ``-f16``, ``-BF16``...) and
# without a split part (``-00001-of-00003``): several files of one model share it.
_QUANT = re.compile(
    r"[-_.](?:i?q\d(?:_[a-z0-9]+)*|f16|f32|bf16|fp16|fp32|mxfp4\w*|\d{5}-of-\d{5})$", re.IGNORECASE
)
# Names that share fewer than this many leading characters are not one model's (``qwen`` and
# ``llava`` share nothing; ``gemma-3-4b`` and ``gemma-3-4b-it`` share all).
_MIN_SHARED = 4


def _base_name(stem: str) -> str:
    s = stem.lower()
    while True:
        t = _QUANT.sub("", s)
        if t == s:
            return s.strip("-_. ")
        s = t


def find_projector(model_path: str | os.PathLike[str]) -> Path | None:
    """The projector beside a model: a ``*mmproj*.gguf`` file in the model's folder, or None.

    A folder of one model (its files, in one or several quantisations: a Hugging Face repository,
    LM Studio's ``publisher/model`` folder) pairs the model with its projector whatever the
    projector's name (``mmproj-F16.gguf``). A folder of several models pairs a model only with a
    projector whose name shares the model's start (``mmproj-gemma-3-4b-it-f16.gguf`` for
    ``gemma-3-4b-it-Q4_K_M.gguf``): one projector is not every model's. With several candidates,
    the one whose name shares the longest start with the model's wins."""
    model = Path(model_path)
    try:
        files = [p for p in model.parent.iterdir() if p.is_file() and p.suffix.lower() == ".gguf"]
    except OSError:
        return None
    found = sorted(p for p in files if "mmproj" in p.name.lower() and p != model)
    if not found:
        return None
    base = _base_name(model.stem)

    def shared(p: Path) -> int:
        a = _base_name(p.stem.lower().replace("mmproj", "").strip("-_. "))
        return len(os.path.commonprefix([a, base]))

    one_model = {_base_name(p.stem) for p in files if "mmproj" not in p.name.lower()} <= {base}
    best = max(found, key=shared)
    if one_model or shared(best) >= _MIN_SHARED:
        return best
    return None


def require_projector(projector: Projector | None, model_name: str) -> Projector:
    """``projector``, or :class:`NoProjectorError` naming what is missing (a model given images)."""
    if projector is None:
        raise NoProjectorError(
            f"this model has no vision projector (mmproj): {model_name} cannot read images. Put the "
            "model's mmproj GGUF file beside it (or choose one in the library) and load the model again"
        )
    return projector


@dataclass
class Segment:
    """A run of positions of a :class:`MediaPrompt`: text tokens, or one image chunk."""

    kind: str  # "text" or "image"
    start: int  # the first position
    ids: list[int]  # text: the token ids; image: its media id, once per position
    chunk: Any = None  # image: libmtmd's chunk (owned by the prompt's chunk list)
    n_tokens: int = 0  # image: the embeddings it decodes (n_pos may be fewer: M-RoPE)

    @property
    def end(self) -> int:
        return self.start + len(self.ids)


@dataclass
class MediaPrompt:
    """A tokenized prompt with images (:meth:`Projector.tokenize`). ``ids`` has one entry per
    position (text token ids and :func:`media_id` s); close it (or let it be collected) to free
    libmtmd's chunks."""

    segments: list[Segment]
    ids: list[int]
    n_images: int
    _free: Callable[[], None] = field(repr=False, default=lambda: None)

    @property
    def n_image_tokens(self) -> int:
        """The image embeddings the prompt decodes (what the context meter counts for images)."""
        return sum(s.n_tokens for s in self.segments if s.kind == "image")

    @property
    def n_positions(self) -> int:
        return len(self.ids)

    def close(self) -> None:
        self._free()


@dataclass(frozen=True)
class Evaluation:
    """What :meth:`Projector.evaluate` did: ``n_past`` (positions now in the KV cache), ``reused``
    (of them, kept from before), ``text_tokens`` and ``image_tokens`` it decoded, ``images`` it
    encoded."""

    n_past: int
    reused: int
    text_tokens: int
    image_tokens: int
    images: int


class Projector:
    """A vision projector (``mmproj``) loaded beside a llama-cpp-python ``Llama`` (libmtmd's context).

    Use it on the thread that runs the model, with the model's lock held; close it before the
    model (:meth:`close`)."""

    def __init__(self, ctx: Any, path: Path, llm: Any, marker: str):
        self._ctx = ctx
        self.path = path
        self.llm = llm
        #: where an image goes in a prompt's text (:meth:`tokenize`)
        self.marker = marker
        self._finalizer = weakref.finalize(self, _free_ctx, ctx)

    @classmethod
    def load(
        cls,
        path: str | os.PathLike[str],
        llm: Any,
        *,
        n_threads: int | None = None,
        use_gpu: bool = False,
        warmup: bool = True,
        verbose: bool = False,
    ) -> Projector:
        """Load the projector at ``path`` for the loaded model ``llm`` (llama-cpp-python's ``Llama``).

        Raises :class:`ImageError` when llama-cpp-python has no libmtmd, ``ModelLoadError`` when
        libmtmd refuses the file (not a projector, or one made for another model: the embedding
        sizes differ; llama.cpp's log says which)."""
        p = Path(path)
        mtmd = _mtmd()
        import llama_cpp

        try:
            with open(p, "rb") as f:
                magic = f.read(4)
        except OSError as exc:
            raise ModelLoadError(p, f"the vision projector cannot be read ({exc.strerror or exc})") from exc
        if magic != b"GGUF":
            raise ModelLoadError(p, "the vision projector is not a GGUF file")
        params = mtmd.mtmd_context_params_default()
        params.use_gpu = bool(use_gpu)
        params.print_timings = bool(verbose)
        params.n_threads = int(n_threads or getattr(llm, "n_threads", 1) or 1)
        params.warmup = bool(warmup)
        fa = getattr(getattr(llm, "context_params", None), "flash_attn_type", None)
        if fa is not None:
            params.flash_attn_type = (
                llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED
                if fa == llama_cpp.LLAMA_FLASH_ATTN_TYPE_ENABLED
                else llama_cpp.LLAMA_FLASH_ATTN_TYPE_DISABLED
            )
        ctx = mtmd.mtmd_init_from_file(os.fsencode(p), llm.model, params)
        if not ctx:
            raise ModelLoadError(
                p,
                "libmtmd could not load the vision projector (not a projector, or one made for another "
                "model: see the engine log)",
            )
        if not mtmd.mtmd_support_vision(ctx):
            mtmd.mtmd_free(ctx)
            raise ModelLoadError(p, "this projector reads no images (an audio-only mmproj)")
        marker = (mtmd.mtmd_default_marker() or DEFAULT_MARKER.encode()).decode("utf-8")
        return cls(ctx, p, llm, marker)

    @property
    def closed(self) -> bool:
        return not self._finalizer.alive

    def close(self) -> None:
        """Free libmtmd's context (before the model it was loaded for)."""
        self._finalizer()

    def _open(self) -> Any:
        if self.closed:
            raise ImageError(f"the vision projector {self.path.name} is closed")
        return self._ctx

    # -- images -> chunks ------------------------------------------------------------------------

    def decode(self, data: bytes, limits: ImageLimits = DEFAULT_LIMITS) -> Any:
        """Check ``data`` (:func:`check_image`), then decode it with llama.cpp (stb_image) into an
        RGB bitmap. The caller frees it (``mtmd_bitmap_free``); :meth:`tokenize` does."""
        info = check_image(data, limits)
        if info.format not in DECODABLE:
            raise ImageError(
                f"{info.name} images cannot be decoded by llama.cpp's image decoder: convert it to PNG or JPEG"
            )
        mtmd = _mtmd()
        ctx = self._open()
        buf = (ctypes.c_uint8 * len(data)).from_buffer_copy(data)
        wrapped = mtmd.mtmd_helper_bitmap_init_from_buf_wrapper(
            ctx, buf, len(data), False, mtmd.mtmd_helper_init_opt_default()
        )
        bitmap, video = wrapped.bitmap, wrapped.video_ctx
        if video:  # a build with video support handed the bytes to ffmpeg: not an image
            if bitmap:
                mtmd.mtmd_bitmap_free(bitmap)
            mtmd.mtmd_helper_video_free(video)
            bitmap = None
        if not bitmap:
            raise ImageError(
                f"the {info.name} image is damaged: llama.cpp's decoder could not read its pixels"
            )
        nx, ny = mtmd.mtmd_bitmap_get_nx(bitmap), mtmd.mtmd_bitmap_get_ny(bitmap)
        if (nx, ny) != (info.width, info.height):
            mtmd.mtmd_bitmap_free(bitmap)
            raise ImageError(
                f"the {info.name} image is damaged: its header says {info.width}x{info.height} pixels, "
                f"its data {nx}x{ny}"
            )
        return bitmap

    def tokenize(
        self,
        text: str,
        images: Sequence[bytes],
        *,
        bos: int | None = None,
        marker: str | None = None,
        limits: ImageLimits = DEFAULT_LIMITS,
    ) -> MediaPrompt:
        """Tokenize ``text``, in which each ``marker`` (default :attr:`marker`) is the place of the
        next of ``images`` (their bytes), into a :class:`MediaPrompt`.

        Text is tokenized with special tokens parsed (as ``InProcessBackend.tokenize``); ``bos``,
        when given, is put first unless the text already starts with it. Every image is checked
        and decoded before anything else happens: a bad one raises :class:`ImageError` and the
        model's context is untouched. A caller that cannot keep the marker out of user text picks
        a marker of its own (any string) and passes it."""
        mark = marker or self.marker
        pieces = text.split(mark)
        if len(pieces) - 1 != len(images):
            raise ImageError(
                f"the prompt has {len(pieces) - 1} image place(s) ({mark}) but {len(images)} image(s) were given"
            )
        parts: list[str | bytes] = []
        for i, piece in enumerate(pieces):
            if piece:
                parts.append(piece)
            if i < len(images):
                parts.append(images[i])
        return self.tokenize_parts(parts, bos=bos, limits=limits)

    def tokenize_parts(
        self, parts: Sequence[str | bytes], *, bos: int | None = None, limits: ImageLimits = DEFAULT_LIMITS
    ) -> MediaPrompt:
        """:meth:`tokenize` for a prompt given as its parts in order: text (``str``) and images
        (their ``bytes``); no marker is looked for in the text."""
        mtmd = _mtmd()
        ctx = self._open()
        bitmaps: list[Any] = []
        image_bytes: list[bytes] = []
        try:
            for part in parts:
                if isinstance(part, bytes | bytearray | memoryview):
                    image_bytes.append(bytes(part))
                    bitmaps.append(self.decode(bytes(part), limits))
                elif not isinstance(part, str):
                    raise ImageError(f"a prompt part must be text or image bytes, not {type(part).__name__}")
            chunks = _run_tokenizer(mtmd, ctx, parts, bitmaps)
        finally:
            for b in bitmaps:
                mtmd.mtmd_bitmap_free(b)
        try:
            prompt = self._segments(mtmd, chunks, image_bytes, bos)
        except BaseException:
            mtmd.mtmd_input_chunks_free(chunks)
            raise
        prompt._free = weakref.finalize(prompt, mtmd.mtmd_input_chunks_free, chunks)
        return prompt

    def image_tokens(self, width: int, height: int) -> int:
        """The positions an image of ``width`` x ``height`` pixels takes in a prompt, counted
        without its pixels (libmtmd's placeholder bitmap): what the context meter counts for an
        image whose header :func:`check_image` read."""
        mtmd = _mtmd()
        ctx = self._open()
        if width <= 0 or height <= 0:
            raise ImageError(f"an image of {width}x{height} pixels has no pixels")
        bitmap = mtmd.mtmd_bitmap_init(int(width), int(height), None)
        if not bitmap:
            raise GenerationError("libmtmd could not make a placeholder image")
        try:
            chunks = _run_tokenizer(mtmd, ctx, [b""], [bitmap])
        finally:
            mtmd.mtmd_bitmap_free(bitmap)
        try:
            return sum(
                int(mtmd.mtmd_input_chunk_get_n_pos(mtmd.mtmd_input_chunks_get(chunks, i)))
                for i in range(mtmd.mtmd_input_chunks_size(chunks))
            )
        finally:
            mtmd.mtmd_input_chunks_free(chunks)

    def _segments(self, mtmd: Any, chunks: Any, image_bytes: list[bytes], bos: int | None) -> MediaPrompt:
        segments: list[Segment] = []
        pos = 0
        n_chunks = 0  # image chunks so far
        for i in range(mtmd.mtmd_input_chunks_size(chunks)):
            chunk = mtmd.mtmd_input_chunks_get(chunks, i)
            kind = mtmd.mtmd_input_chunk_get_type(chunk)
            if kind == mtmd.MTMD_INPUT_CHUNK_TYPE_TEXT:
                n = ctypes.c_size_t()
                ptr = mtmd.mtmd_input_chunk_get_tokens_text(chunk, ctypes.byref(n))
                ids = [int(ptr[j]) for j in range(n.value)]
                if ids:
                    segments.append(Segment("text", pos, ids))
                    pos += len(ids)
            elif kind == mtmd.MTMD_INPUT_CHUNK_TYPE_IMAGE:
                # libmtmd's id of the image (the SHA-256 of its bytes); else the bytes' own hash (images
                # are chunked in order: a sliced image's chunks share its id)
                raw_id = mtmd.mtmd_input_chunk_get_id(chunk)
                key = raw_id or hashlib.sha256(image_bytes[min(n_chunks, len(image_bytes) - 1)]).digest()
                n_pos = int(mtmd.mtmd_input_chunk_get_n_pos(chunk))
                n_tok = int(mtmd.mtmd_input_chunk_get_n_tokens(chunk))
                segments.append(Segment("image", pos, [media_id(key)] * n_pos, chunk, n_tok))
                pos += n_pos
                n_chunks += 1
            else:
                raise ImageError("the prompt holds audio, which this engine does not read")
        if bos is not None and not (segments and segments[0].kind == "text" and segments[0].ids[0] == bos):
            if segments and segments[0].kind == "text":
                segments[0].ids.insert(0, int(bos))
            else:
                segments.insert(0, Segment("text", 0, [int(bos)]))
            for s in segments[1:]:
                s.start += 1
        ids = [t for s in segments for t in s.ids]
        return MediaPrompt(segments, ids, len(image_bytes))

    # -- chunks -> KV ----------------------------------------------------------------------------

    def evaluate(
        self,
        prompt: MediaPrompt,
        *,
        keep_last: int = 1,
        should_stop: Callable[[], bool] | None = None,
    ) -> Evaluation:
        """Evaluate ``prompt`` into the model's context, reusing the KV prefix it shares with
        what the context holds (see the module docstring), up to all but its last ``keep_last``
        text tokens: the token loop evaluates those (it needs their logits), exactly as it does
        after ``InProcessBackend._read_prompt``. ``keep_last=0`` evaluates everything, with the
        logits of the last position.

        ``should_stop()`` is asked between two batches; when it says True, evaluation stops there
        (``n_past`` says how far it got). Raises ``ContextOverflowError`` when the prompt does
        not fit, ``GenerationError`` when llama.cpp fails (the context then holds the positions
        before the failed chunk, and is usable)."""
        mtmd = _mtmd()
        ctx = self._open()
        llm = self.llm
        ids = prompt.ids
        total = len(ids)
        n_ctx = int(llm.n_ctx())
        if total >= n_ctx:
            raise ContextOverflowError(
                f"the prompt is {total} tokens (images included) but the context holds {n_ctx}: "
                "shorten the conversation, send fewer images or load the model with a larger context length"
            )
        tail = prompt.segments[-1] if prompt.segments else None
        trailing_text = len(tail.ids) if tail is not None and tail.kind == "text" else 0
        target = total - min(max(0, keep_last), trailing_text)

        # the common prefix with what the KV holds, never ending inside an image
        import numpy as np

        m = min(int(llm.n_tokens), total)
        differ = np.flatnonzero(llm.input_ids[:m] != np.asarray(ids[:m], dtype=llm.input_ids.dtype))
        common = int(differ[0]) if differ.size else m
        for seg in prompt.segments:
            if seg.kind == "image" and seg.start < common < seg.end:
                common = seg.start
        common = min(common, target)
        # always: a reset context (n_tokens 0) may still hold cells, and libmtmd decodes at n_past
        if not llm._ctx.kv_cache_seq_rm(-1, common, -1):
            llm.reset()
            llm._ctx.kv_cache_clear()
            common = 0
        llm.n_tokens = common
        reused = common
        text_done = image_done = images = 0
        n_batch = int(llm.n_batch)
        for seg in prompt.segments:
            if seg.end <= llm.n_tokens or seg.start >= target:
                continue
            if seg.kind == "text":
                lo, hi = llm.n_tokens - seg.start, min(seg.end, target) - seg.start
                for i in range(lo, hi, n_batch):
                    if should_stop is not None and should_stop():
                        return Evaluation(llm.n_tokens, reused, text_done, image_done, images)
                    piece = seg.ids[i : min(i + n_batch, hi)]
                    try:
                        llm.eval(piece)
                    except Exception as exc:  # noqa: BLE001 - llama_decode failures
                        self._drop_from(seg.start + i)
                        raise GenerationError(f"llama.cpp failed while reading the prompt: {exc}") from exc
                    text_done += len(piece)
                continue
            if should_stop is not None and should_stop():
                return Evaluation(llm.n_tokens, reused, text_done, image_done, images)
            n_past = llm.n_tokens
            new_n_past = ctypes.c_int32(0)
            last = seg.end == total  # keep_last=0 with an image last: its logits are the next token's
            rc = mtmd.mtmd_helper_eval_chunk_single(
                ctx, llm._ctx.ctx, seg.chunk, n_past, 0, n_batch, last, ctypes.byref(new_n_past)
            )
            if rc != 0:
                self._drop_from(n_past)
                raise GenerationError(f"llama.cpp failed to read an image of the prompt (libmtmd code {rc})")
            if new_n_past.value != seg.end:
                self._drop_from(n_past)
                raise GenerationError(
                    f"libmtmd placed an image at positions {n_past}..{new_n_past.value}, "
                    f"the prompt expected {seg.start}..{seg.end}"
                )
            llm.input_ids[seg.start : seg.end] = seg.ids
            llm.n_tokens = seg.end
            llm._requires_eval = not last
            image_done += seg.n_tokens
            images += 1
        return Evaluation(llm.n_tokens, reused, text_done, image_done, images)

    def eval_image(self, segment: Segment, lctx: Any, n_past: int, *, seq_id: int, n_batch: int) -> None:
        """Encode the image ``segment`` and decode its embeddings into sequence ``seq_id`` of the
        llama context ``lctx`` at ``n_past`` (libmtmd's seq-aware helper): what a slot of the
        scheduler (``app.engine.scheduler``) does for an image of its prompt. Raises
        ``GenerationError`` when llama.cpp fails (the caller forgets the sequence from ``n_past``)."""
        mtmd = _mtmd()
        ctx = self._open()
        if segment.kind != "image":
            raise ValueError("eval_image evaluates an image segment")
        new_n_past = ctypes.c_int32(0)
        rc = mtmd.mtmd_helper_eval_chunk_single(
            ctx, lctx, segment.chunk, int(n_past), int(seq_id), int(n_batch), False, ctypes.byref(new_n_past)
        )
        if rc != 0:
            raise GenerationError(f"llama.cpp failed to read an image of the prompt (libmtmd code {rc})")
        if new_n_past.value != n_past + len(segment.ids):
            raise GenerationError(
                f"libmtmd placed an image at positions {n_past}..{new_n_past.value}, "
                f"the prompt expected {n_past}..{n_past + len(segment.ids)}"
            )

    def _drop_from(self, pos: int) -> None:
        """Forget the KV from ``pos`` on (after a failed decode), so the context stays usable."""
        llm = self.llm
        llm.n_tokens = min(int(llm.n_tokens), pos)
        if not llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1):
            llm.reset()
            llm._ctx.kv_cache_clear()
        llm._requires_eval = True


def _run_tokenizer(mtmd: Any, ctx: Any, parts: Sequence[str | bytes], bitmaps: Sequence[Any]) -> Any:
    """libmtmd's chunks for ``parts`` (text, and in place of each image part the next of
    ``bitmaps``); the caller frees them (``mtmd_input_chunks_free``)."""
    keep: list[Any] = []  # the ctypes objects the parts point at, alive until the call returns
    ptrs = []
    it = iter(bitmaps)
    for part in parts:
        p = mtmd.mtmd_input_part()
        if isinstance(part, str):
            raw = part.encode("utf-8")
            t = mtmd.mtmd_input_text()
            t.text, t.text_len, t.add_special, t.parse_special = raw, len(raw), False, True
            keep += [raw, t]
            p.text = ctypes.pointer(t)
        else:
            p.bitmap = next(it)
        keep.append(p)
        ptrs.append(ctypes.pointer(p))
    array = (ctypes.POINTER(mtmd.mtmd_input_part) * max(1, len(ptrs)))(*ptrs)
    chunks = mtmd.mtmd_input_chunks_init()
    if not chunks:
        raise GenerationError("libmtmd could not allocate the prompt's chunks")
    rc = mtmd.mtmd_tokenize_from_parts(ctx, chunks, array, len(ptrs), False)
    if rc != 0:
        mtmd.mtmd_input_chunks_free(chunks)
        raise ImageError(
            "the projector could not prepare the image(s) for this prompt "
            f"(libmtmd's tokenizer failed with code {rc}: see the engine log)"
        )
    return chunks


def _free_ctx(ctx: Any) -> None:
    try:
        import llama_cpp.mtmd_cpp as mtmd
    except Exception:  # noqa: BLE001 - interpreter shutdown
        return
    mtmd.mtmd_free(ctx)
