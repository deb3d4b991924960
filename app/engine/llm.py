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
loads it and runs every llama.cpp call; the returned :class:`LoadedModel` has the same API
either way (``engine`` is set, ``llm`` is None). A native crash (abort, segfault, out of memory)
ends the child, never the caller: calls raise ``EngineCrashedError`` and a load that crashes
raises :class:`ModelLoadError` saying so. ``isolate=False`` loads llama.cpp in this process
(:func:`load_model_inline`, which is what the child runs; tests of llama.cpp internals use it).

One thread per model: llama.cpp's CPU backend (OpenMP) keeps a team of worker threads per
calling thread. Loading a model on one thread and generating on another leaves two teams
competing for the cores: measured here on 2 cores, SmolLM2 dropped from ~110 to ~65 tok/s,
and stayed there. The engine process loads and generates on its one thread, whichever thread
of the app asks; for an in-process model :attr:`LoadedModel.owner_thread` records the loading
thread and ``generate()`` logs a warning the first time another thread runs the model.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from app.engine.models.metadata import GGUFMetadata, GGUFMetadataError, read_metadata

__all__ = [
    "FALLBACK_STOP",
    "FALLBACK_TEMPLATE",
    "LoadSettings",
    "LoadedModel",
    "ModelLoadError",
    "gpu_offload_available",
    "load_model",
    "load_model_inline",
    "resolve_gpu_layers",
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


class ModelLoadError(RuntimeError):
    """The model could not be loaded. ``str()`` names the file and the problem."""

    def __init__(self, path: str | os.PathLike[str], problem: str):
        self.path = str(path)
        self.problem = problem
        super().__init__(f"Cannot load {self.path}: {problem}")

    def __reduce__(self):  # the engine process sends it to the app
        return (ModelLoadError, (self.path, self.problem))


@dataclass(frozen=True)
class LoadSettings:
    """``n_ctx`` is rounded up to a multiple of 256 and capped at the model's training context."""

    n_ctx: int = 4096
    n_gpu_layers: int | None = 0  # None: automatic (see resolve_gpu_layers)
    n_threads: int | None = None


@dataclass
class LoadedModel:
    """A loaded model. Generation on it is serialised by ``lock`` (one llama context).

    ``engine`` is the engine process that holds llama.cpp (``llm`` is then None); for a model
    loaded in this process ``llm`` is the ``llama_cpp.Llama`` and ``engine`` is None."""

    path: Path
    metadata: GGUFMetadata
    llm: Any  # llama_cpp.Llama, or None in the app when the model lives in an engine process
    n_ctx: int
    eog_ids: frozenset[int]
    chat_template: str
    template_is_fallback: bool
    tool_use_template: str | None
    bos_token: str
    eos_token: str
    lock: threading.RLock = field(default_factory=threading.RLock)
    #: prompt tokens llama.cpp evaluated in the last generate() (after KV prefix reuse)
    last_prompt_eval: int = 0
    #: every token passed to llama.cpp's decode since load (prompt and generated)
    total_eval: int = 0
    #: (prompt tokens evaluated, prompt tokens to evaluate) while a long prompt is being read, else
    #: None: plain attributes, so another thread (the window's "Processing prompt…") may read them
    prompt_progress: tuple[int, int] | None = None
    #: ident of the thread that loaded the model: run llama.cpp on it (see the module docstring)
    owner_thread: int = field(default_factory=threading.get_ident)
    #: the engine process running llama.cpp for this model (None: llama.cpp is in this process)
    engine: Any = None
    #: the vocabulary's size
    n_vocab: int = 0
    #: the layer count llama.cpp was given for the GPU (its model_params; -1 "all" reads 2**31-1)
    n_gpu_layers: int = 0

    @property
    def isolated(self) -> bool:
        """Whether llama.cpp runs in an engine process of its own for this model."""
        return self.engine is not None

    @property
    def closed(self) -> bool:
        return self.llm is None and self.engine is None

    def _check_open(self) -> None:
        if self.llm is None:
            from app.engine.generate import GenerationError

            raise GenerationError(f"the model {self.name} is closed")

    @property
    def crash(self) -> Any:
        """The ``EngineCrashedError`` of an engine process that died, else None."""
        return None if self.engine is None else self.engine.crash

    @property
    def name(self) -> str:
        return self.metadata.name or self.path.stem

    @property
    def stop_strings(self) -> tuple[str, ...]:
        return FALLBACK_STOP if self.template_is_fallback else ()

    @property
    def vocab(self) -> Any:
        """llama.cpp's vocabulary pointer (in-process models only)."""
        if self.llm is None:
            raise RuntimeError(f"{self.name} runs in an engine process: its vocabulary is there")
        return self.llm._model.vocab

    def is_eog(self, token: int) -> bool:
        if self.llm is None:
            return int(token) in self.eog_ids
        import llama_cpp

        return bool(llama_cpp.llama_vocab_is_eog(self.vocab, token))

    def token_bytes(self, token: int) -> bytes:
        """The token's bytes, special tokens written as their text."""
        if self.engine is not None:
            return self.engine.call("token_bytes", int(token))
        self._check_open()
        import ctypes

        import llama_cpp

        size = 64
        while True:
            buf = ctypes.create_string_buffer(size)
            n = llama_cpp.llama_token_to_piece(self.vocab, token, buf, size, 0, True)
            if n >= 0:
                return buf.raw[:n]
            size = -n + 1

    def tokenize(self, text: str) -> list[int]:
        """Tokenize a rendered prompt: special-token text becomes special tokens; a BOS is
        prepended when the model wants one and the template did not write it."""
        if self.engine is not None:
            return self.engine.call("tokenize", text)
        self._check_open()
        tokens = list(self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))
        bos = self.metadata.bos_token_id
        wants_bos = self.metadata.add_bos_token
        if wants_bos is None:
            import llama_cpp

            wants_bos = bool(llama_cpp.llama_vocab_get_add_bos(self.vocab))
        if wants_bos and bos is not None and (not tokens or tokens[0] != bos):
            tokens.insert(0, bos)
        return tokens

    def tokenize_text(self, text: str, *, special: bool = True) -> list[int]:
        """Tokenize ``text`` as is (no BOS): with ``special``, special-token text becomes tokens."""
        if self.engine is not None:
            return self.engine.call("tokenize_raw", text, special)
        self._check_open()
        return [int(t) for t in self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=special)]

    def reset_cache(self) -> None:
        """Forget the KV cache (the next prompt is evaluated in full)."""
        with self.lock:
            if self.engine is not None:
                self.engine.call("reset")
            else:
                self.llm.reset()

    def close(self) -> None:
        """Free the model (an engine process is stopped). Safe to call twice, or after a crash."""
        engine, self.engine = self.engine, None
        if engine is not None:
            engine.close()
            return
        with self.lock:
            llm, self.llm = self.llm, None
            if llm is not None:
                llm.close()


def _round_ctx(n_ctx: int, train_ctx: int | None) -> int:
    if n_ctx <= 0:
        raise ValueError(f"context length must be positive, got {n_ctx}")
    n = -(-n_ctx // 256) * 256
    if train_ctx and train_ctx >= 256:
        n = min(n, (train_ctx // 256) * 256)
    return max(n, 256)


def gpu_offload_available() -> bool:
    """Whether this llama.cpp build has a GPU backend (Metal, CUDA, Vulkan…) it can offload layers to."""
    try:
        from llama_cpp import llama_cpp as _lib
    except ImportError:  # pragma: no cover - the dependency is pinned
        return False
    return bool(_lib.llama_supports_gpu_offload())


def resolve_gpu_layers(n_gpu_layers: int | None) -> int:
    """The layer count llama.cpp gets: ``None`` (automatic) is every layer (-1) where the build can
    offload to a GPU and 0 (CPU only) where it cannot; any number is used as given."""
    if n_gpu_layers is None:
        return -1 if gpu_offload_available() else 0
    return int(n_gpu_layers)


def load_model(
    path: str | os.PathLike[str],
    *,
    n_ctx: int = 4096,
    n_gpu_layers: int | None = 0,
    n_threads: int | None = None,
    settings: LoadSettings | None = None,
    isolate: bool = True,
    check_limits: bool = True,
) -> LoadedModel:
    """Check ``path`` with the gguf reader, then load it with llama.cpp, in an engine process of
    its own unless ``isolate`` is False.

    ``n_gpu_layers=None`` chooses automatically (:func:`resolve_gpu_layers`). ``check_limits=False``
    skips the refusal of the values llama.cpp is known to abort on (the tests of the engine
    process use it to make llama.cpp abort for real); never pass it for a user's file."""
    if settings is not None:
        n_ctx, n_gpu_layers, n_threads = settings.n_ctx, settings.n_gpu_layers, settings.n_threads
    p = Path(path)
    try:
        meta = read_metadata(p, check_limits=check_limits)
    except GGUFMetadataError as exc:
        raise ModelLoadError(p, exc.problem) from exc
    try:
        str(p).encode("utf-8")  # llama-cpp-python encodes the path strictly
    except UnicodeEncodeError:
        raise ModelLoadError(
            p,
            "its file name is not valid UTF-8, which llama.cpp cannot open; "
            "rename the file (or its folder) and load it again",
        ) from None
    try:
        ctx = _round_ctx(int(n_ctx), meta.context_length)
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
    }
    if not isolate:
        return load_model_inline(**args)

    from app.engine.engine_process import EngineProcess

    engine, info = EngineProcess.start(meta.name or p.stem, args)
    template = meta.chat_template
    return LoadedModel(
        path=p,
        metadata=meta,
        llm=None,
        n_ctx=int(info["n_ctx"]),
        eog_ids=frozenset(info["eog_ids"]),
        chat_template=template if template is not None else FALLBACK_TEMPLATE,
        template_is_fallback=template is None,
        tool_use_template=meta.tool_use_template,
        bos_token=meta.bos_token or "",
        eos_token=meta.eos_token or "",
        engine=engine,
        n_vocab=int(info["n_vocab"]),
        n_gpu_layers=int(info["n_gpu_layers"]),
    )


def load_model_inline(
    *,
    path: str,
    meta: GGUFMetadata,
    n_ctx: int,
    n_gpu_layers: int | None,
    n_threads: int,
    verbose: bool = False,
) -> LoadedModel:
    """Load a checked file with llama.cpp in this process (what the engine process runs, with
    ``verbose``: llama.cpp's log goes to the engine's log file, which explains a crash)."""
    p = Path(path)
    ctx = n_ctx
    try:
        from llama_cpp import Llama
    except ImportError as exc:  # pragma: no cover - the dependency is pinned
        raise ModelLoadError(p, f"llama-cpp-python is not installed ({exc})") from exc
    try:
        llm = Llama(
            model_path=str(p),
            n_ctx=ctx,
            n_gpu_layers=resolve_gpu_layers(n_gpu_layers),
            n_threads=int(n_threads),
            n_threads_batch=int(n_threads),
            n_batch=min(512, ctx),
            # llama-server's default (-fa auto turns it on for CPU): ~6% faster decoding (bench figure 1b)
            flash_attn=True,
            verbose=verbose,
        )
    except Exception as exc:  # noqa: BLE001 - llama.cpp reports load failures as ValueError/RuntimeError
        raise ModelLoadError(p, f"llama.cpp could not load the model ({exc})") from exc

    import llama_cpp

    vocab = llm._model.vocab
    n_vocab = llm.n_vocab()
    eog = frozenset(t for t in range(n_vocab) if llama_cpp.llama_vocab_is_eog(vocab, t))

    template = meta.chat_template
    fallback = template is None
    model = LoadedModel(
        path=p,
        metadata=meta,
        llm=llm,
        n_ctx=ctx,
        eog_ids=eog,
        chat_template=template if template is not None else FALLBACK_TEMPLATE,
        template_is_fallback=fallback,
        tool_use_template=meta.tool_use_template,
        bos_token=meta.bos_token or "",
        eos_token=meta.eos_token or "",
        n_vocab=int(n_vocab),
        n_gpu_layers=int(llm.model_params.n_gpu_layers),
    )
    _count_evals(model)
    return model


def _count_evals(model: LoadedModel) -> None:
    """Count the tokens llama.cpp decodes, so callers (and tests) can see KV reuse."""
    llm = model.llm
    original = llm.eval

    def counting_eval(tokens):
        model.total_eval += len(tokens)
        return original(tokens)

    llm.eval = counting_eval
