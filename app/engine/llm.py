"""Load a GGUF model with llama-cpp-python, after checking it with the ``gguf`` reader.

``load_model(path, n_ctx=..., n_gpu_layers=..., n_threads=...)`` returns a
:class:`LoadedModel`: the llama.cpp model, its metadata, its chat templates and the set
of end-of-generation tokens llama.cpp reports. A corrupt, truncated or non-GGUF file
raises :class:`ModelLoadError` naming the file and the problem; llama.cpp never sees it.

A GGUF with no chat template gets :data:`FALLBACK_TEMPLATE` (ChatML: ``<|im_start|>role\\n
content<|im_end|>``), ``template_is_fallback`` is set and the chat raises a notice saying so.
ChatML is the most widely trained turn format and needs no special tokens to be readable;
its end-of-turn text is also a stop string (:data:`FALLBACK_STOP`), since a model without
a template has no ``<|im_end|>`` token of its own.

``llama_cpp`` is imported lazily: importing this module costs nothing at UI start-up.

**llama.cpp runs in an engine process of its own** (``isolate=True``, the default): the file
is checked here, then :class:`~app.engine.engine_process.EngineProcess` starts a child that
loads it and runs every llama.cpp call. A :class:`LoadedModel` delegates everything that
touches llama.cpp to one of two backends behind one interface (``app.engine.backend``): the
engine process (``ProcessBackend``) or this process (``InProcessBackend``, ``isolate=False``:
:func:`load_model_inline`, which is what the child runs; tests of llama.cpp internals use it).
A native crash (abort, segfault, out of memory) ends the child, never the caller: calls raise
``EngineCrashedError`` and a load that crashes raises ``ModelLoadError`` saying so.

A model that is closed, dropped or garbage-collected frees its backend: its engine process stops
(``weakref.finalize``; closing twice is harmless). At exit every engine process still open is
closed, and an engine process whose parent dies exits by itself (``app.engine.engine_process``):
none outlives the process that started it.

One thread per model: llama.cpp's CPU backend (OpenMP) keeps a team of worker threads per
calling thread. Loading a model on one thread and generating on another leaves two teams
competing for the cores: measured here on 2 cores, SmolLM2 dropped from ~110 to ~65 tok/s,
and stayed there. The engine process loads and generates on its one thread, whichever thread
of the app asks; for an in-process model :attr:`LoadedModel.owner_thread` records the loading
thread and generating logs a warning the first time another thread runs the model.
"""

from __future__ import annotations

import os
import threading
import weakref
from dataclasses import dataclass, field
from operator import attrgetter
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.engine.backend import ModelBackend
from app.engine.errors import ModelLoadError
from app.engine.models.estimate import KV_CACHE_TYPES, head_sizes
from app.engine.models.metadata import GGUFMetadata, GGUFMetadataError, read_metadata

if TYPE_CHECKING:
    from collections.abc import Sequence

    from app.engine.embedding import Embeddings, Scores
    from app.engine.kvstore import KVStoreConfig

__all__ = [
    "FALLBACK_STOP",
    "FALLBACK_TEMPLATE",
    "LoadSettings",
    "LoadedModel",
    "load_model",
    "load_model_inline",
    "round_context",
]

FALLBACK_TEMPLATE = (
    "{%- for message in messages -%}"
    "{{ '<|im_start|>' + message['role'] + '\\n' }}"
    "{%- if message['content'] is string -%}{{ message['content'] }}{%- endif -%}"
    "{{ '<|im_end|>\\n' }}"
    "{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}"
)
FALLBACK_STOP = ("<|im_end|>", "<|im_start|>")


@dataclass(frozen=True)
class LoadSettings:
    """``n_ctx`` is rounded up to a multiple of 256 and capped at the model's training context."""

    n_ctx: int = 4096
    n_gpu_layers: int | None = 0  # None: automatic (see app.engine.inprocess.resolve_gpu_layers)
    n_threads: int | None = None
    #: the KV cache's type (f16, q8_0, q4_0: ``app.engine.models.estimate.KV_CACHE_TYPES``)
    kv_type: str = "f16"
    #: flash attention (a quantized KV cache needs it)
    flash_attn: bool = True
    #: where conversations' KV states are saved and restored (``app.engine.kvstore``); None: nowhere
    kv_store: KVStoreConfig | None = None
    #: the engine process's slots (``app.engine.scheduler``): up to this many generations batched
    #: into one decode a step, each with the whole ``n_ctx``; None: the engine's default
    #: (``app.engine.engine_process.parallel_slots``: 1, or ``CALLISTO_ENGINE_PARALLEL``). An
    #: in-process model has one.
    parallel: int | None = None
    #: speculative decoding (``app.engine.speculative``): draftless n-gram drafting from the
    #: prompt and the reply so far ("prompt lookup"), on by default; it turns itself off for a
    #: reply where it does not pay
    ngram_draft: bool = True
    #: a second, small GGUF with the same vocabulary that drafts tokens for this model; None: none
    draft_model: str | None = None
    #: the vision projector (``app.engine.vision``): None looks beside the model file
    #: (``vision.find_projector``: a ``*mmproj*.gguf``), a path loads that file, ``"none"`` loads none
    mmproj: str | None = None
    #: a Jinja chat template that replaces the model's own (Settings > This model, ``--chat-template-file``):
    #: every prompt is rendered with it and the tool-call family is detected from it; one that cannot
    #: be compiled is a ModelLoadError before anything loads. None: the model's own
    chat_template: str | None = None


@dataclass(eq=False)
class LoadedModel:
    """A loaded model: what is known of it (metadata, templates, context, end-of-generation
    tokens), and its ``backend``, where llama.cpp runs (``app.engine.backend``). Generation on
    it is serialised by ``lock`` (one llama context)."""

    path: Path
    metadata: GGUFMetadata
    backend: ModelBackend
    n_ctx: int
    eog_ids: frozenset[int]
    chat_template: str
    template_is_fallback: bool
    tool_use_template: str | None
    bos_token: str
    eos_token: str
    #: prompt tokens llama.cpp evaluated in the last generate() (after KV prefix reuse)
    last_prompt_eval: int = 0
    #: (prompt tokens evaluated, prompt tokens to evaluate) while a long prompt is being read, else
    #: None: plain attributes, so another thread (the window's "Processing prompt…") may read them
    prompt_progress: tuple[int, int] | None = None
    #: ident of the thread that loaded the model: run llama.cpp on it (see the module docstring)
    owner_thread: int = field(default_factory=threading.get_ident)
    #: the vocabulary's size
    n_vocab: int = 0
    #: the fill-in-the-middle tokens (prefix, suffix, middle), None when the vocabulary has none
    #: (``app.engine.generation.infill_prompt``)
    fim_ids: tuple[int, int, int] | None = None
    #: the repository-level FIM tokens (repo name, file separator), None when the vocabulary lacks one
    fim_repo_ids: tuple[int, int] | None = None
    #: whether the model writes text: an embedding model (BERT and its kin) gives vectors only
    generates: bool = True
    #: the layers on a GPU (``app.engine.inprocess.offloaded_layers``): -1 every layer, 0 none (a
    #: build without a GPU backend offloads none, whatever it was given)
    n_gpu_layers: int = 0
    #: whether a vision projector is loaded beside the model: it reads images (``Message.images``)
    vision: bool = False
    #: the projector's file when :attr:`vision`, else None
    projector_path: str | None = None

    def __post_init__(self) -> None:
        # dropping the model frees its backend (stops its engine process); the callback holds the
        # backend only, never the model
        self._finalizer = weakref.finalize(self, self.backend.close)

    # what the backend knows, read through the model
    lock = property(attrgetter("backend.lock"))
    llm = property(
        attrgetter("backend.llm"),
        doc="The ``llama_cpp.Llama`` of an in-process model, else None (tests of llama.cpp internals).",
    )
    engine = property(
        attrgetter("backend.engine"), doc="The engine process running llama.cpp for this model, else None."
    )
    isolated = property(
        attrgetter("backend.isolated"),
        doc="Whether llama.cpp runs in an engine process of its own for this model.",
    )
    closed = property(attrgetter("backend.closed"))
    crash = property(
        attrgetter("backend.crash"),
        doc="The ``EngineCrashedError`` of an engine process that died, else None.",
    )
    total_eval = property(
        attrgetter("backend.total_eval"),
        doc="Every token passed to llama.cpp's decode since load (prompt and generated).",
    )

    @property
    def name(self) -> str:
        return self.metadata.name or self.path.stem

    @property
    def stop_strings(self) -> tuple[str, ...]:
        return FALLBACK_STOP if self.template_is_fallback else ()

    @property
    def vocab(self) -> Any:
        """llama.cpp's vocabulary pointer (in-process models only)."""
        vocab = getattr(self.backend, "vocab", None)
        if vocab is None:
            raise RuntimeError(f"{self.name} runs in an engine process: its vocabulary is there")
        return vocab

    def is_eog(self, token: int) -> bool:
        return self.backend.is_eog(token)

    def token_bytes(self, token: int) -> bytes:
        """The token's bytes, special tokens written as their text."""
        return self.backend.token_bytes(int(token))

    def detokenize(self, tokens: Sequence[int], *, where: str = "tokens") -> bytes:
        """The bytes of ``tokens`` (special tokens as their text), in one call to the engine;
        ``TokenIdError`` for an id outside the vocabulary (llama.cpp is never given one), naming
        ``where`` the ids came from (an API's field: ``tokens``, ``prompt``)."""
        from app.engine.errors import TokenIdError

        TokenIdError.check(tokens, self.n_vocab, where)
        return self.backend.detokenize(tokens)

    def tokenize(self, text: str) -> list[int]:
        """Tokenize a rendered prompt: special-token text becomes special tokens; a BOS is
        prepended when the model wants one and the template did not write it.

        A prompt with images (``app.engine.vision.ImagePrompt``, what ``render_prompt`` gives for
        messages with images) counts each image's positions too: one negative media id per
        position (``Projector.image_tokens`` of the size its header declares, read with
        ``check_image``; nothing is decoded), so ``len(model.tokenize(prompt))`` is what the
        prompt takes of the context. ``NoProjectorError`` when the model has no projector,
        ``ImageError`` for an image that cannot be used."""
        return self.backend.tokenize(text)

    def count_tokens(self, prompt: str) -> int:
        """The context a rendered prompt takes, images included (``len(tokenize(prompt))``)."""
        return len(self.tokenize(prompt))

    def tokenize_text(self, text: str, *, special: bool = True) -> list[int]:
        """Tokenize ``text`` as is (no BOS): with ``special``, special-token text becomes tokens."""
        return self.backend.tokenize_text(text, special)

    def special_opener(self, opener: str) -> bool:
        """Whether ``opener`` begins with one special token of the vocabulary (then ``auto``
        holds every call from that token on; a text opener leaves ``auto`` free)."""
        return bool(opener) and self.backend.special_opener(opener)

    def reset_cache(self) -> None:
        """Forget the KV cache (the next prompt is evaluated in full)."""
        self.backend.reset_cache()

    def rerank(self, query: str, documents: Sequence[str], *, truncate: bool = True) -> Scores:
        """A relevance score per document for ``query`` from a reranking model (rank pooling:
        ``app.engine.embedding.Embedder.rank``); ``EmbeddingModelError`` for any other model."""
        return self.backend.rerank(query, list(documents), truncate=bool(truncate), n_ctx=self.n_ctx)

    def embed(self, inputs: Sequence[str | Sequence[int]], *, truncate: bool = True) -> Embeddings:
        """A vector per input (a text, or token ids as they are), from the model's embedding
        context (``app.engine.embedding``): each at most :attr:`n_ctx` tokens, a longer one cut to
        it (``truncate``) or refused (``EmbeddingInputError``, as is an empty one)."""
        return self.backend.embed(list(inputs), truncate=bool(truncate), n_ctx=self.n_ctx)

    def close(self) -> None:
        """Free the model (an engine process is stopped). Safe to call twice, or after a crash."""
        self._finalizer()


def round_context(n_ctx: int, train_ctx: int | None) -> int:
    """The context a load of ``n_ctx`` tokens gets: a multiple of 256, at most the model's training
    context ``train_ctx`` (where it says one), at least 256."""
    if n_ctx <= 0:
        raise ValueError(f"context length must be positive, got {n_ctx}")
    n = -(-n_ctx // 256) * 256
    if train_ctx and train_ctx >= 256:
        n = min(n, (train_ctx // 256) * 256)
    return max(n, 256)


def load_model(
    path: str | os.PathLike[str],
    *,
    n_ctx: int = 4096,
    n_gpu_layers: int | None = 0,
    n_threads: int | None = None,
    settings: LoadSettings | None = None,
    isolate: bool = True,
    check_limits: bool = True,
    kv_type: str = "f16",
    flash_attn: bool = True,
    kv_store: KVStoreConfig | None = None,
    parallel: int | None = None,
    ngram_draft: bool = True,
    draft_model: str | None = None,
    mmproj: str | None = None,
    chat_template: str | None = None,
) -> LoadedModel:
    """Check ``path`` with the gguf reader, then load it with llama.cpp, in an engine process of
    its own unless ``isolate`` is False.

    ``kv_type`` (f16, q8_0, q4_0) and ``flash_attn``: the KV cache (a quantized one needs flash
    attention: ModelLoadError otherwise). ``kv_store``: save and restore conversations' KV states
    there (``app.engine.kvstore``). ``parallel``: the engine process's slots (None: the engine's
    default; ignored with ``isolate=False``, one generation at a time). ``ngram_draft`` and
    ``draft_model``: speculative decoding (``app.engine.speculative``; :class:`LoadSettings`).
    ``mmproj``: the vision projector (:class:`LoadSettings`; None looks beside the model).
    ``chat_template``: a template that replaces the model's own (:class:`LoadSettings`).

    ``n_gpu_layers=None`` chooses automatically (``app.engine.inprocess.resolve_gpu_layers``). ``check_limits=False``
    skips the refusal of the values llama.cpp is known to abort on (the tests of the engine
    process use it to make llama.cpp abort for real); never pass it for a user's file."""
    if settings is not None:
        n_ctx, n_gpu_layers, n_threads = settings.n_ctx, settings.n_gpu_layers, settings.n_threads
        kv_type, flash_attn, kv_store = settings.kv_type, settings.flash_attn, settings.kv_store
        parallel = settings.parallel
        ngram_draft, draft_model = settings.ngram_draft, settings.draft_model
        mmproj = settings.mmproj
        chat_template = settings.chat_template
    p = Path(path)
    if kv_type not in KV_CACHE_TYPES:
        raise ModelLoadError(p, f"unknown KV cache type {kv_type!r} (one of {', '.join(KV_CACHE_TYPES)})")
    if kv_type != "f16" and not flash_attn:
        raise ModelLoadError(
            p, f"a {kv_type} KV cache needs flash attention (llama.cpp quantizes V only with it): turn it on"
        )
    try:
        meta = read_metadata(p, check_limits=check_limits)
    except GGUFMetadataError as exc:
        raise ModelLoadError(p, exc.problem) from exc
    if chat_template:
        meta = _with_template(p, meta, chat_template)
    if kv_type != "f16":
        # llama.cpp refuses a quantized cache on such heads with no word of why
        odd = next((n for n in head_sizes(meta.raw, meta.architecture) if n and n % 32), None)
        if odd is not None:
            raise ModelLoadError(
                p,
                f"a {kv_type} KV cache stores a head in blocks of 32 values and this model's heads are "
                f"{odd} values long: load it with an f16 KV cache (Settings > Model, This model; serve --kv-type f16)",
            )
    try:
        str(p).encode("utf-8")  # llama-cpp-python encodes the path strictly
    except UnicodeEncodeError:
        raise ModelLoadError(
            p,
            "its file name is not valid UTF-8, which llama.cpp cannot open; "
            "rename the file (or its folder) and load it again",
        ) from None
    try:
        ctx = round_context(int(n_ctx), meta.context_length)
    except (TypeError, ValueError) as exc:
        raise ModelLoadError(p, str(exc)) from exc
    if n_threads is None:
        n_threads = max(1, min(8, (os.cpu_count() or 2) - 1))
    args: dict[str, Any] = {
        "path": str(p),
        "meta": meta,
        "n_ctx": ctx,
        "n_gpu_layers": n_gpu_layers,
        "n_threads": int(n_threads),
        "kv_type": kv_type,
        "flash_attn": bool(flash_attn),
        "kv_store": kv_store,
        "ngram_draft": bool(ngram_draft),
        "draft_model": None if draft_model is None else str(draft_model),
        "mmproj": None if mmproj is None else str(mmproj),
    }
    if not isolate:
        return load_model_inline(**args)

    from app.engine.engine_process import ProcessBackend

    if parallel is not None:
        args["parallel"] = max(1, int(parallel))
    backend, info = ProcessBackend.start(meta.name or p.stem, args)
    return _loaded(p, meta, backend, info)


def load_model_inline(**args: Any) -> LoadedModel:
    """Load a checked file with llama.cpp in this process (what the engine process runs, with
    ``verbose``: llama.cpp's log goes to the engine's log file, which explains a crash). The
    arguments are :meth:`InProcessBackend.load`'s (one signature for both)."""
    from app.engine.inprocess import InProcessBackend

    try:
        backend = InProcessBackend.load(**{**args, "path": str(args["path"])})
    except ModelLoadError as exc:
        raise _why_no_context(exc, args) from exc
    return _loaded(Path(args["path"]), args["meta"], backend, backend.info(int(args["n_ctx"])))


def _why_no_context(exc: ModelLoadError, args: dict[str, Any]) -> ModelLoadError:
    """``exc``, with the KV cache the context would have held where llama.cpp refused to make the
    context with no word of why (its usual cause: that much memory is not there)."""
    from app.engine.models.estimate import describe_kv_cache

    if "llama_context" not in exc.problem:
        return exc
    meta = args["meta"]
    kv = describe_kv_cache(meta.raw, meta.architecture, int(args["n_ctx"]), args.get("kv_type") or "f16")
    if kv is None:
        return exc
    return ModelLoadError(
        exc.path, f"{exc.problem}: {kv} may not fit in this machine's memory; lower the context length"
    )


def _with_template(p: Path, meta: GGUFMetadata, source: str) -> GGUFMetadata:
    """``meta`` with ``source`` as its only chat template (the model's own and its tool-use one
    replaced); ModelLoadError when the template cannot be compiled."""
    from app.engine.errors import TemplateRenderError
    from app.engine.templates import compile_template

    try:
        compile_template(source)
    except TemplateRenderError as exc:
        raise ModelLoadError(
            p, f"the chat template set for this model cannot be read ({exc}): fix it in Settings > This model"
        ) from exc
    return meta.with_chat_template(source)


def _loaded(p: Path, meta: GGUFMetadata, backend: ModelBackend, info: dict[str, Any]) -> LoadedModel:
    """The :class:`LoadedModel` of a file whose backend reported ``info`` (``InProcessBackend.info``:
    what the engine process sends back once it has loaded the model)."""
    template = meta.chat_template
    projector_path = info.get("projector")
    fim_ids, fim_repo_ids = info.get("fim_ids"), info.get("fim_repo_ids")
    return LoadedModel(
        path=p,
        metadata=meta,
        backend=backend,
        n_ctx=int(info["n_ctx"]),
        eog_ids=frozenset(info["eog_ids"]),
        chat_template=template if template is not None else FALLBACK_TEMPLATE,
        template_is_fallback=template is None,
        tool_use_template=meta.tool_use_template,
        bos_token=meta.bos_token or "",
        eos_token=meta.eos_token or "",
        n_vocab=int(info["n_vocab"]),
        n_gpu_layers=int(info["n_gpu_layers"]),
        vision=projector_path is not None,
        projector_path=projector_path,
        fim_ids=None if fim_ids is None else (int(fim_ids[0]), int(fim_ids[1]), int(fim_ids[2])),
        fim_repo_ids=None if fim_repo_ids is None else (int(fim_repo_ids[0]), int(fim_repo_ids[1])),
        generates=bool(info.get("generates", True)),
    )
