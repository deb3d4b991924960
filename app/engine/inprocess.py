"""The in-process backend: llama-cpp-python in this process (see ``app.engine.backend``).

This is what the engine process runs for its one model (``app.engine.engine_child``), and what
``load_model(..., isolate=False)`` gives the tests of llama.cpp internals. Generation here:

* Tokens are decoded with special tokens written as text (``[TOOL_CALLS]``,
  ``<|python_tag|>`` survive), through an incremental UTF-8 decoder, so a character split
  over several tokens is emitted only once it is whole.
* Generation stops at any end-of-generation token llama.cpp reports (``stop``), at
  ``max_tokens`` or the end of the context (``length``), at a stop string (``stop``), at
  the deadline (``deadline``) or when ``cancel`` is set (``cancelled``); the cancel event and
  the deadline are checked before every token.
* A GBNF grammar is validated before llama.cpp sees it (an invalid one would crash the
  process): ``GrammarError`` says what is wrong. A grammar may not name an
  end-of-generation token; it ends generation by being complete.
* The KV cache is reused: llama.cpp evaluates only the prompt tokens after the longest
  common prefix with what it evaluated before (``result.prompt_tokens_evaluated``).
* A prompt longer than one batch (``n_batch`` tokens after the reused prefix) is evaluated here,
  batch by batch, before the token loop sees it: the same ``llama_decode`` calls with the same
  batch sizes (the last batch is left to the loop, which needs it for the first token's logits),
  so it costs no speed; between batches ``progress(done, total)`` is called,
  ``LoadedModel.prompt_progress`` is updated and ``cancel`` / the deadline are checked.
* The token loop (:meth:`InProcessBackend._tokens`) is llama-cpp-python's ``Llama.generate``
  (the same prefix reuse, ``eval`` and sampler chain, so greedy output and speed are its own)
  with speculative decoding (``app.engine.speculative``): with ``ngram_draft`` on, when the
  reply's tail is found earlier in the prompt or reply, the tokens that followed it are verified
  in the same decode as the last token; ``llm.n_tokens`` and its ``input_ids`` always name the
  KV the context holds, so the next turn's prefix reuse and the KV store work as before.
* Images (``app.engine.vision``): the load's ``mmproj`` (None: a ``*mmproj*.gguf`` beside the
  model, ``"none"``: none, else that file) loads a :class:`~app.engine.vision.Projector`
  (``projector``; ``projector_path``). A prompt with images (an ``ImagePrompt``) is checked and
  its images decoded in :meth:`InProcessBackend.prepare` (``ImageError``; ``NoProjectorError``
  without a projector), before anything is evaluated; :meth:`InProcessBackend.stream` evaluates
  it with ``Projector.evaluate`` (prefix reuse never ending inside an image, so a conversation's
  earlier images are not read again) instead of ``_read_prompt``; the token loop reads its last
  token. ``total_eval`` counts an image's decoded embeddings too. Prompt ids then hold negative
  media ids, which the n-gram drafts skip and a draft model is never given (it does not draft
  for such a prompt).
* Log probabilities (``app.engine.logprobs``): a generation that asks for them has each sampled
  token's entry read from the logits at the row it was sampled from (a verified draft's at its
  own), kept with the token and added to ``Generation.token_logprobs`` before its text is yielded.

One thread per model: llama.cpp's CPU backend (OpenMP) keeps a team of worker threads per
calling thread, so :meth:`InProcessBackend.stream` logs a warning the first time a thread other
than the loading one (``owner_thread``) runs the model. ``llama_cpp`` is imported lazily.
"""

from __future__ import annotations

import codecs
import logging
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from app.engine.backend import GenerationResult
from app.engine.errors import (
    ConstraintError,
    ContextOverflowError,
    EmbeddingOnlyError,
    GenerationError,
    GrammarError,
    ModelLoadError,
)
from app.engine.holdback import first_stop, partial_start
from app.engine.sampling import bias_of
from app.engine.speculative import DecodeCost, Speculation, verify

if TYPE_CHECKING:
    from app.engine.embedding import Embeddings, Scores
    from app.engine.generation import Generation
    from app.engine.kvstore import KVStore, KVStoreConfig
    from app.engine.llm import LoadedModel
    from app.engine.models.metadata import GGUFMetadata

__all__ = [
    "GGML_KV_TYPES",
    "InProcessBackend",
    "gpu_offload_available",
    "offloaded_layers",
    "resolve_gpu_layers",
]

log = logging.getLogger(__name__)
#: llama.cpp's GGML type of each KV cache type (``type_k`` / ``type_v``)
GGML_KV_TYPES = {"f16": 1, "q8_0": 8, "q4_0": 2}
_warned_threads: set[tuple[int, int]] = set()


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


#: llama-cpp-python passes ``n_gpu_layers=-1`` ("every layer") to llama.cpp as this
_ALL_LAYERS = 0x7FFFFFFF
#: a prediction is cut to this many characters a context token before it is tokenized (a token
#: of text is a few characters; one of a run of spaces, a few dozen)
_PREDICTION_CHARS_A_TOKEN = 32


def offloaded_layers(n_gpu_layers: int) -> int:
    """The layers a model loaded with ``n_gpu_layers`` (llama.cpp's ``model_params``) has on a GPU,
    as the settings write it: 0 where the build has no GPU backend (llama.cpp keeps every layer on
    the CPU whatever it is given), -1 for every layer, else the number."""
    if not gpu_offload_available():
        return 0
    return -1 if n_gpu_layers < 0 or n_gpu_layers >= _ALL_LAYERS else int(n_gpu_layers)


class InProcessBackend:
    """llama-cpp-python's ``Llama`` in this process, for one :class:`~app.engine.llm.LoadedModel`."""

    engine = None
    isolated = False

    def __init__(self, llm: Any, meta: GGUFMetadata, model_name: str, *, ngram_draft: bool = True):
        self.llm = llm
        self.name = model_name
        self.bos_id = meta.bos_token_id
        self.add_bos = meta.add_bos_token
        self.lock = threading.RLock()
        self.total_eval = 0
        self.decode_calls = 0  # (a scheduler in an engine process adds its batched steps here too)
        self.busy_slots_total = 0
        #: ident of the thread that loaded the model: run llama.cpp on it (see the module docstring)
        self.owner_thread = threading.get_ident()
        self.n_vocab = int(llm.n_vocab())
        self.eog_ids = frozenset(t for t in range(self.n_vocab) if self._vocab_is_eog(t))
        self.fim_ids = self._fim_ids()
        #: the repository-level FIM tokens (repo name, file separator), None when either is missing
        self.fim_repo_ids = self._fim_repo_ids()
        self.n_gpu_layers = offloaded_layers(int(llm.model_params.n_gpu_layers))
        #: whether the model writes text: an embedding model (BERT, nomic-bert…) has no KV memory
        self.generates = self._generates()
        #: where conversations' KV states are saved and restored (``app.engine.kvstore``), or None
        self.kv_store: KVStore | None = None
        #: whether the KV of rejected drafts can be removed: not from a recurrent or hybrid model's
        #: state (Mamba, RWKV, LFM2...), which llama.cpp cannot roll back; such a model never drafts
        self.can_draft = not (getattr(llm, "_is_recurrent", False) or getattr(llm, "_is_hybrid", False))
        #: speculative decoding: draftless n-gram drafting (``app.engine.speculative``)
        self.ngram_draft = bool(ngram_draft) and self.can_draft
        #: what one more token in a decode costs here, learned from the timed decodes
        self.decode_cost = DecodeCost()
        #: the draft model (``draft_model``), or None
        self.draft: DraftModel | None = None
        #: the vision projector (``app.engine.vision.Projector``), or None
        self.projector: Any = None
        self._image_tokens: dict[tuple[int, int], int] = {}
        #: the embedding context (``app.engine.embedding.Embedder``), made on the first request
        self._embedder: Any = None
        self._count_evals()

    @property
    def projector_path(self) -> str | None:
        return None if self.projector is None else str(self.projector.path)

    def info(self, n_ctx: int) -> dict[str, Any]:
        """What is known of the model once loaded (``n_ctx``: its context), as the engine process
        reports it to the app (``app.engine.llm._loaded`` reads it)."""
        return {
            "n_ctx": n_ctx,
            "eog_ids": self.eog_ids,
            "n_vocab": self.n_vocab,
            "n_gpu_layers": self.n_gpu_layers,
            "projector": self.projector_path,
            "fim_ids": self.fim_ids,
            "fim_repo_ids": self.fim_repo_ids,
            "generates": self.generates,
            "drafts": self.drafts,
        }

    @property
    def drafts(self) -> bool:
        """Whether its generations draft tokens (n-gram lookup, or a draft model)."""
        return bool(self.can_draft and (self.ngram_draft or self.draft is not None))

    @classmethod
    def load(
        cls,
        *,
        path: str,
        meta: GGUFMetadata,
        n_ctx: int,
        n_gpu_layers: int | None,
        n_threads: int,
        verbose: bool = False,
        kv_type: str = "f16",
        flash_attn: bool = True,
        kv_store: KVStoreConfig | None = None,
        ngram_draft: bool = True,
        draft_model: str | None = None,
        mmproj: str | None = None,
    ) -> InProcessBackend:
        """Load a checked file with llama.cpp in this process (``verbose``: llama.cpp's log goes
        to stderr, which the engine process writes to the log file that explains a crash).

        ``kv_type`` (f16, q8_0, q4_0) is the KV cache's type for K and V; ``flash_attn`` turns
        flash attention on (llama.cpp needs it for a quantized V cache); ``kv_store``: where the
        conversations' states are saved and restored (``app.engine.kvstore``); ``ngram_draft``:
        speculative decoding with n-gram drafts (``app.engine.speculative``); ``draft_model``: the
        path of a second, small GGUF with the same vocabulary that drafts (:class:`DraftModel`);
        ``mmproj``: the vision projector (``LoadSettings.mmproj``: None looks beside the model,
        ``"none"`` loads none). A projector found beside the model that libmtmd refuses is left
        out (logged); one named that it refuses is a ModelLoadError."""
        if kv_type not in GGML_KV_TYPES:
            raise ModelLoadError(
                Path(path), f"unknown KV cache type {kv_type!r} (one of {', '.join(GGML_KV_TYPES)})"
            )
        if kv_type != "f16" and not flash_attn:
            raise ModelLoadError(
                Path(path), f"a {kv_type} KV cache needs flash attention (llama.cpp quantizes V only with it)"
            )
        p = Path(path)
        try:
            from llama_cpp import Llama
        except ImportError as exc:  # pragma: no cover - the dependency is pinned
            raise ModelLoadError(p, f"llama-cpp-python is not installed ({exc})") from exc
        llm = _open_llama(
            Llama,
            p,
            "the model",
            n_ctx=n_ctx,
            n_gpu_layers=n_gpu_layers,
            n_threads=n_threads,
            # llama-server's default (-fa auto turns it on for CPU): ~6% faster decoding (bench figure 1b)
            flash_attn=bool(flash_attn),
            type_k=GGML_KV_TYPES[kv_type],
            type_v=GGML_KV_TYPES[kv_type],
            verbose=verbose,
        )
        from app.engine.warmup import warm_up

        warm_up(llm._ctx.ctx, llm._model.model)  # the first decode's cost at load, not in a reply
        backend = cls(llm, meta, meta.name or p.stem, ngram_draft=ngram_draft)
        if draft_model is not None:
            try:
                backend.draft = DraftModel.load(
                    draft_model, llm, n_ctx=n_ctx, n_gpu_layers=n_gpu_layers, n_threads=n_threads
                )
            except BaseException:
                backend.close()
                raise
        try:
            backend.projector = _load_projector(p, mmproj, llm, n_threads, n_gpu_layers, verbose)
        except BaseException:
            backend.close()
            raise
        if kv_store is not None:
            from app.engine.kvstore import KVStore, fingerprint

            fp = fingerprint(p, template=meta.chat_template, kv_type=kv_type, flash_attn=flash_attn)
            backend.kv_store = KVStore.from_config(kv_store, fp)
        return backend

    def _count_evals(self) -> None:
        """Count the tokens llama.cpp decodes, so callers (and tests) can see KV reuse, and its
        decodes (``Llama.eval`` decodes ``n_batch`` tokens at a time)."""
        original = self.llm.eval
        n_batch = max(1, int(getattr(self.llm, "n_batch", 0) or 0))

        def counting_eval(tokens: Any) -> Any:
            self.total_eval += len(tokens)
            self.decoded(-(-len(tokens) // n_batch))
            return original(tokens)

        self.llm.eval = counting_eval

    def decoded(self, calls: int = 1, slots: int = 1) -> None:
        """Count ``calls`` decodes of llama.cpp, each holding ``slots`` generations."""
        self.decode_calls += calls
        self.busy_slots_total += calls * slots

    # -- the model's state -------------------------------------------------------------------------

    @property
    def closed(self) -> bool:
        return self.llm is None

    @property
    def crash(self) -> None:
        return None

    @property
    def vocab(self) -> Any:
        return self._open().llm._model.vocab

    def _open(self) -> InProcessBackend:
        if self.llm is None:
            raise GenerationError(f"the model {self.name} is closed")
        return self

    def close(self) -> None:
        with self.lock:
            projector, self.projector = self.projector, None
            if projector is not None:
                projector.close()  # before the model it was loaded for
            embedder, self._embedder = self._embedder, None
            if embedder is not None:
                embedder.close()  # before the model it reads
            llm, self.llm = self.llm, None
            if llm is not None:
                if self.kv_store is not None:
                    from app.engine.kvstore import save_current

                    try:
                        save_current(llm, self.kv_store)  # the conversation open at close
                    except Exception:  # noqa: BLE001 - a state not saved is read again, never a crash
                        log.exception("KV store: the state at close was not saved")
                llm.close()
            draft, self.draft = self.draft, None
            if draft is not None:
                draft.close()

    def reset_cache(self) -> None:
        with self.lock:
            self._open().llm.reset()

    def _embedding_context(self, n_ctx: int) -> Any:
        """The model's embedder (``app.engine.embedding.Embedder``), made on first use and again
        for a new context. Called with the lock held."""
        from app.engine.embedding import Embedder

        llm = self._open().llm
        embedder = self._embedder
        if embedder is None or embedder.asked_ctx != n_ctx:
            if embedder is not None:
                embedder.close()
                self._embedder = None
            embedder = self._embedder = Embedder(llm, self.name, n_ctx)
        return embedder

    def embed(self, inputs: list[str | Sequence[int]], *, truncate: bool, n_ctx: int) -> Embeddings:
        with self.lock:
            return self._embedding_context(n_ctx).embed(inputs, truncate=truncate)

    def rerank(self, query: str, documents: list[str], *, truncate: bool, n_ctx: int) -> Scores:
        with self.lock:
            return self._embedding_context(n_ctx).rank(query, documents, truncate=truncate)

    # -- the vocabulary ----------------------------------------------------------------------------

    def _fim_ids(self) -> tuple[int, int, int] | None:
        """The fill-in-the-middle tokens (prefix, suffix, middle) llama.cpp found in the vocabulary
        (by the GGUF's keys or their texts: ``<|fim_prefix|>``, ``<PRE>``…), None when any is missing."""
        import llama_cpp

        ids = self._vocab_tokens(
            llama_cpp.llama_vocab_fim_pre, llama_cpp.llama_vocab_fim_suf, llama_cpp.llama_vocab_fim_mid
        )
        return None if ids is None else (ids[0], ids[1], ids[2])

    def _fim_repo_ids(self) -> tuple[int, int] | None:
        """The repository-level FIM tokens (``<|repo_name|>``, ``<|file_sep|>``: Qwen2.5-Coder's),
        None when either is missing: other files of the project go before the prefix with them."""
        import llama_cpp

        ids = self._vocab_tokens(llama_cpp.llama_vocab_fim_rep, llama_cpp.llama_vocab_fim_sep)
        return None if ids is None else (ids[0], ids[1])

    def _vocab_tokens(self, *getters: Any) -> tuple[int, ...] | None:
        """The tokens llama.cpp's ``getters`` find in the vocabulary, None when any is missing."""
        vocab = self.llm._model.vocab
        ids = tuple(int(get(vocab)) for get in getters)
        return ids if all(0 <= t < self.n_vocab for t in ids) else None

    def _generates(self) -> bool:
        import llama_cpp

        ctx = getattr(self.llm, "ctx", None)
        return ctx is None or bool(llama_cpp.llama_get_memory(ctx))

    def _vocab_is_eog(self, token: int) -> bool:
        import llama_cpp

        return bool(llama_cpp.llama_vocab_is_eog(self.llm._model.vocab, token))

    def is_eog(self, token: int) -> bool:
        if self.llm is None:
            return int(token) in self.eog_ids
        return self._vocab_is_eog(token)

    def token_bytes(self, token: int) -> bytes:
        """The token's bytes, special tokens written as their text."""
        import ctypes

        import llama_cpp

        vocab = self.vocab
        size = 64
        while True:
            buf = ctypes.create_string_buffer(size)
            n = llama_cpp.llama_token_to_piece(vocab, int(token), buf, size, 0, True)
            if n >= 0:
                return buf.raw[:n]
            size = -n + 1

    def detokenize(self, tokens: Sequence[int]) -> bytes:
        return b"".join(self.token_bytes(t) for t in tokens)

    def tokenize(self, text: str) -> list[int]:
        from app.engine.vision import ImagePrompt

        if isinstance(text, ImagePrompt):
            return self._count_parts(text)
        tokens = list(self._open().llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))
        bos = self._bos()
        if bos is not None and (not tokens or tokens[0] != bos):
            tokens.insert(0, bos)
        return tokens

    def _bos(self) -> int | None:
        """The BOS a prompt begins with when the model wants one, else None."""
        wants_bos = self.add_bos
        if wants_bos is None:
            import llama_cpp

            wants_bos = bool(llama_cpp.llama_vocab_get_add_bos(self.vocab))
        return self.bos_id if wants_bos else None

    def vision_projector(self) -> Any:
        """The projector, or ``NoProjectorError`` naming what this model lacks."""
        from app.engine.vision import require_projector

        return require_projector(self.projector, self.name)

    def image_tokens(self, width: int, height: int) -> int:
        """The positions an image of that size takes (``Projector.image_tokens``, kept per size)."""
        key = (int(width), int(height))
        n = self._image_tokens.get(key)
        if n is None:
            with self.lock:
                n = self._image_tokens[key] = self.vision_projector().image_tokens(*key)
        return n

    def _count_parts(self, prompt: Any) -> list[int]:
        """A prompt with images as ids, without decoding one: its text's tokens and, per image,
        its media id once for each position its header's size takes (``LoadedModel.tokenize``)."""
        import hashlib

        from app.engine.vision import check_image, media_id

        self.vision_projector()
        ids: list[int] = []
        for i, part in enumerate(prompt.parts):
            if isinstance(part, str):
                ids += self.tokenize(part) if i == 0 else self.tokenize_text(part, True)
            else:
                info = check_image(part)
                ids += [media_id(hashlib.sha256(part).digest())] * self.image_tokens(info.width, info.height)
        if prompt.parts and not isinstance(prompt.parts[0], str):  # an image first: the BOS before it
            ids = self.tokenize("")[:1] + ids
        return ids

    def tokenize_text(self, text: str, special: bool) -> list[int]:
        return [
            int(t) for t in self._open().llm.tokenize(text.encode("utf-8"), add_bos=False, special=special)
        ]

    def special_opener(self, opener: str) -> bool:
        import llama_cpp

        toks = (
            self._open().llm.tokenize(opener.encode("utf-8"), add_bos=False, special=True) if opener else []
        )
        if not toks:
            return False
        attr = llama_cpp.llama_vocab_get_attr(self.vocab, toks[0])
        piece = self.token_bytes(toks[0]).decode("utf-8", "replace")
        return bool(
            attr & llama_cpp.LLAMA_TOKEN_ATTR_CONTROL
            or (
                attr & llama_cpp.LLAMA_TOKEN_ATTR_USER_DEFINED
                and piece.startswith("<")
                and piece.endswith(">")
                and opener.startswith(piece)
            )
        )

    # -- grammars and constraints ------------------------------------------------------------------

    def validate_grammar(self, grammar: str) -> None:
        import llama_cpp

        if not isinstance(grammar, str) or not grammar.strip():
            raise GrammarError("the grammar is empty")
        if "\x00" in grammar:
            raise GrammarError("the grammar contains a NUL character")
        if not re.search(r"(?m)^\s*root\s*::=", grammar):
            raise GrammarError("the grammar has no 'root' rule")
        llm = self._open().llm
        n_vocab = llm.n_vocab()
        for ref in _grammar_token_refs(grammar):
            if ref.startswith("["):
                tid = int(ref[1:-1])
                if tid >= n_vocab:
                    raise GrammarError(
                        f"the grammar names token id {tid}, but the vocabulary has {n_vocab} tokens"
                    )
                label = f"<[{tid}]>"
            else:
                toks = llm.tokenize(f"<{ref}>".encode(), add_bos=False, special=True)
                if len(toks) != 1:
                    raise GrammarError(
                        f"the grammar names <{ref}>, which is not a single token of this model"
                    )
                tid, label = toks[0], f"<{ref}>"
            if self.is_eog(tid):
                raise GrammarError(
                    f"the grammar names the end-of-generation token {label}; a grammar ends generation "
                    "by being complete, it may not contain an end-of-generation token"
                )
        sampler = llama_cpp.llama_sampler_init_grammar(self.vocab, grammar.encode("utf-8"), b"root")
        if not sampler:
            raise GrammarError("the grammar is not valid GBNF (llama.cpp's parser rejected it)")
        llama_cpp.llama_sampler_free(sampler)

    def compile_constraint(self, model: LoadedModel, kwargs: dict[str, Any]) -> Any:
        from app.engine.constraints.compiler import compile_inline

        return compile_inline(model, kwargs)

    # -- generation ---------------------------------------------------------------------------------

    def prepare(self, gen: Generation, prompt: str | Sequence[int]) -> None:
        from app.engine.vision import ImagePrompt

        model = gen.model
        if not self.generates:
            raise EmbeddingOnlyError(
                f"{model.name} is an embedding model: it gives vectors (/v1/embeddings, /api/embed), "
                "not replies; choose a chat model to talk to"
            )
        if isinstance(prompt, ImagePrompt):
            # every image checked and decoded here, before anything is evaluated; first from the
            # headers alone: the context it takes and the pixels all its images decode to
            projector = self.vision_projector()
            counted = len(self._count_parts(prompt))
            if counted >= model.n_ctx:
                raise ContextOverflowError(
                    f"the prompt is {counted} tokens (images included) but the context holds {model.n_ctx}: "
                    "send fewer images, shorten the conversation or load the model with a larger context length"
                )
            _check_pixels(prompt.images)
            with self.lock:
                media = projector.tokenize_parts(prompt.parts, bos=self._bos())
            gen.media = media
            tokens = list(media.ids)
        else:
            tokens = self.tokenize(prompt) if isinstance(prompt, str) else [int(t) for t in prompt]
        if not tokens:
            raise GenerationError("the prompt is empty")
        if len(tokens) >= model.n_ctx:
            raise ContextOverflowError(
                f"the prompt is {len(tokens)} tokens but the context holds {model.n_ctx}: "
                "shorten the conversation or load the model with a larger context length"
            )
        if gen.grammar is not None:
            if gen.constraint is not None:
                raise GrammarError("pass either a grammar or a constraint, not both")
            self.validate_grammar(gen.grammar)
        gen.prompt_tokens = tokens
        gen.n_prompt = len(tokens)
        if gen.options.prediction and self.can_draft:
            # a reply never holds more than a context of tokens: drafts come from the prediction's
            # first n_ctx tokens, and a prediction of megabytes costs no more than that to index
            text = gen.options.prediction[: model.n_ctx * _PREDICTION_CHARS_A_TOKEN]
            gen.prediction_tokens = self.tokenize_text(text, special=False)[: model.n_ctx]

    def stream(self, gen: Generation) -> Iterator[str]:
        model = gen.model
        start = time.monotonic()
        deadline = None if gen.deadline_s is None else start + max(0.0, gen.deadline_s)
        n_prompt = len(gen.prompt_tokens)
        budget = min(gen.max_tokens, model.n_ctx - n_prompt)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        text_parts: list[str] = []
        tokens: list[int] = []
        pending = ""  # decoded text held back because it may begin a stop string
        finish = "length"
        first_at: float | None = None
        evaluated = 0
        stop_hit = False
        stopped: str | None = None  # the stop string that ended the text
        eog: int | None = None  # the end-of-generation token that ended it
        tail = ""
        eval_before = self.total_eval
        cancel = gen.cancel
        noted: deque[Any] = deque()  # the sampled tokens' log probabilities, when asked
        note: Callable[[int, int], None] | None = None
        scored: list[Any] | None = None  # the prompt's, when asked

        def emit(piece: str) -> str:
            text_parts.append(piece)
            return piece

        self._check_thread()
        self.lock.acquire()
        llm = self._open().llm
        it: Any = None
        sampler: Any = None
        spec: Speculation | None = None
        try:
            grammar_obj = None
            if gen.grammar is not None:
                from llama_cpp import LlamaGrammar

                grammar_obj = LlamaGrammar.from_string(gen.grammar, verbose=False)
            if gen.sampling.seed is not None:
                llm.set_seed(int(gen.sampling.seed))
            run = gen.constraint.start(budget) if gen.constraint is not None else None
            if budget > 0 and self.kv_store is not None:
                from app.engine.kvstore import switch

                try:
                    switch(llm, self.kv_store, gen.prompt_tokens)  # save the one left, restore this one
                except Exception:  # noqa: BLE001 - the store is a cache: without it the prompt is read
                    log.exception("KV store: no state saved or restored for this prompt")
            if budget > 0 and not self._read_media(gen, deadline):
                budget = 0
                finish = "cancelled" if cancel is not None and cancel.is_set() else "deadline"
            if gen.options.prompt_logprobs and gen.media is None:
                scored = self._score_prompt(gen, deadline, budget > 0)
                if scored is None:
                    budget = 0
                    finish = "cancelled" if cancel is not None and cancel.is_set() else "deadline"
            elif budget > 0 and gen.media is None and not self._read_prompt(gen, deadline):
                budget = 0
                finish = "cancelled" if cancel is not None and cancel.is_set() else "deadline"
            if budget > 0:
                processors = [p for p in (bias_of(gen), run) if p is not None]
                sampler = llm._init_sampler(
                    logits_processor=processors or None,
                    grammar=grammar_obj,
                    **gen.sampling.llama_kwargs(),
                )
                if self.can_draft and (self.ngram_draft or self.draft is not None or gen.prediction_tokens):
                    spec = Speculation.start(
                        gen.prompt_tokens,
                        ngram=self.ngram_draft,
                        hint=gen.prediction_tokens,
                        cost=self.decode_cost,
                        # a draft model reads token ids only: none for a prompt with images
                        model_draft=self.draft.propose
                        if self.draft is not None and gen.media is None
                        else None,
                    )
                if gen.options.logprobs is not None:
                    from app.engine.logprobs import logprob_at

                    top, n_vocab, raw_ctx = gen.options.logprobs, int(llm.n_vocab()), llm._ctx.ctx

                    def record(row: int, tok: int) -> None:
                        noted.append(logprob_at(raw_ctx, row, tok, n_vocab, top, self.token_bytes))

                    note = record

                it = self._tokens(gen.prompt_tokens, sampler, run, budget, spec, note)
            while True:
                if cancel is not None and cancel.is_set():
                    finish = "cancelled"
                    break
                if deadline is not None and time.monotonic() >= deadline:
                    finish = "deadline"
                    break
                if it is None:
                    break  # finish says why: no room (length), or stopped while reading the prompt
                if len(tokens) >= budget:
                    finish = "length"
                    break
                try:
                    tok = next(it)
                except StopIteration:
                    finish = "stop"
                    break
                except ConstraintError:
                    raise
                except Exception as exc:  # noqa: BLE001 - llama.cpp decode failures
                    raise GenerationError(f"llama.cpp failed while generating: {exc}") from exc
                entry = noted.popleft() if noted else None  # (in the order they were sampled)
                if gen.gate is not None and gen.gate():
                    finish = "cancelled"  # stopped while this token was decoded: it is not kept
                    break
                if first_at is None:
                    first_at = time.monotonic()
                    evaluated = self.total_eval - eval_before
                if tok in model.eog_ids or self.is_eog(tok):
                    finish, eog = "stop", tok
                    break
                tokens.append(tok)  # (the constraint consumed it when it was sampled)
                if entry is not None:
                    gen.token_logprobs.append(entry)
                piece = decoder.decode(self.token_bytes(tok))
                if not piece:
                    continue
                if not gen.stop:
                    yield emit(piece)
                    continue
                pending += piece
                found = first_stop(pending, gen.stop)
                if found is not None:
                    stop_hit = True
                    hit, stopped = found
                    if hit:
                        yield emit(pending[:hit])
                    pending = ""
                    finish = "stop"
                    break
                cut = partial_start(pending, gen.stop)
                out, pending = pending[:cut], pending[cut:]
                if out:
                    yield emit(out)
            if not stop_hit:
                tail = pending + decoder.decode(b"", final=True)
            if tail:
                yield emit(tail)
        finally:
            if it is not None:
                it.close()
            if sampler is not None:
                sampler.close()
            if gen.media is not None:
                gen.media.close()  # libmtmd's chunks: the KV holds the images now
            model.prompt_progress = None
            try:
                self.lock.release()
            except RuntimeError:
                pass
            end = time.monotonic()
            gen_time = (end - first_at) if first_at is not None else None
            if first_at is None:
                evaluated = self.total_eval - eval_before
            gen.result = GenerationResult(
                text="".join(text_parts),
                finish_reason=finish,
                prompt_tokens=n_prompt,
                prompt_tokens_evaluated=evaluated,
                generated_tokens=len(tokens),
                ttft_s=(first_at - start) if first_at is not None else None,
                tokens_per_s=(len(tokens) / gen_time) if gen_time and len(tokens) > 1 else None,
                elapsed_s=end - start,
                tokens=tokens,
                stop=stopped,
                eog=eog,
                draft_tokens=spec.drafted if spec is not None else 0,
                draft_accepted=spec.accepted if spec is not None else 0,
                logprobs=list(gen.token_logprobs) if gen.options.logprobs is not None else None,
                prompt_logprobs=scored,
            )
            model.last_prompt_eval = evaluated

    def _tokens(
        self,
        prompt: Sequence[int],
        sampler: Any,
        run: Any,
        budget: int,
        spec: Speculation | None,
        note: Callable[[int, int], None] | None = None,
    ) -> Iterator[int]:
        """The reply's tokens, at most ``budget``, ending after an end-of-generation token.

        llama-cpp-python's ``Llama.generate`` (its prefix reuse, ``eval`` of the prompt's rest, one
        decode a token, the sampler chain sampling at the last logits) with speculative decoding:
        when ``spec`` drafts tokens after the last one, ``[last, d1..dK]`` are decoded in one batch
        with logits at every position and :func:`~app.engine.speculative.verify` samples them in
        turn; the KV of the rejected positions is removed. Each sampled token is fed to the
        constraint ``run`` as it is sampled (the next position's mask needs it), once; an
        end-of-generation token is not. A token is decoded only when the next one is asked for,
        as ``generate`` does (the reader's pace). ``note(row, token)`` is told of each token
        sampled, in order (the log probabilities' hook)."""
        llm = self.llm
        ctx = llm._ctx

        def pick(row: int) -> int:
            tok = int(sampler.sample(ctx, row))
            if note is not None:
                note(row, tok)
            return tok

        tokens = list(prompt)
        reset = True
        if llm.n_tokens > 0:  # Llama.generate's prefix reuse, as is
            longest = 0
            for a, b in zip(llm._input_ids, tokens, strict=False):
                if a != b:
                    break
                longest += 1
            consumed = longest == len(tokens)
            if consumed and llm.n_tokens == len(tokens) and not getattr(llm, "_requires_eval", True):
                reset, tokens, reuse = False, [], 0  # the logits of the whole prompt are there
            else:
                reuse = longest - 1 if consumed else longest
            if reuse > 0 and ctx.kv_cache_seq_rm(-1, reuse, -1):
                reset = False
                tokens = tokens[reuse:]
                llm.n_tokens = reuse
                llm._requires_eval = True
        if reset:
            llm.reset()
        llm.eval(tokens)
        eog = self.eog_ids
        produced = 0
        ended = False

        def take(tok: int) -> bool:
            nonlocal produced, ended
            produced += 1
            if tok in eog or self.is_eog(tok):
                ended = True
            else:
                if run is not None:
                    run.consume(tok)
                ended = produced >= budget
            return not ended

        first = pick(-1)
        take(first)
        out = [first]
        while True:
            for tok in out[:-1]:  # accepted drafts: their KV is written
                yield tok
                if spec is not None:
                    spec.kept(tok)
            tok = out[-1]
            yield tok
            if ended:
                return
            if spec is not None:
                spec.kept(tok)
            room = min(budget - produced, int(llm.n_batch)) - 1
            drafts = spec.draft(room) if spec is not None else []
            if not drafts:
                t0 = time.perf_counter()
                llm.eval([tok])
                if spec is not None:
                    self.decode_cost.record(1, time.perf_counter() - t0)
                nxt = pick(-1)
                take(nxt)
                out = [nxt]
                continue
            assert spec is not None
            p = llm.n_tokens
            batch = [tok, *drafts]
            ctx.kv_cache_seq_rm(-1, p, -1)
            llm._batch.set_batch(batch=batch, n_past=p, logits_all=True)
            t0 = time.perf_counter()
            ctx.decode(llm._batch)
            self.decode_cost.record(len(batch), time.perf_counter() - t0)
            self.total_eval += len(batch)
            self.decoded()
            llm.input_ids[p : p + len(batch)] = batch
            out, accepted = verify(pick, drafts, take)
            spec.verified(len(drafts), accepted)
            # the KV of [tok, the accepted drafts] stays; the rejected positions go
            llm.n_tokens = p + 1 + accepted
            llm._requires_eval = False
            if accepted < len(drafts):
                ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1)

    def _read_media(self, gen: Generation, deadline: float | None) -> bool:
        """Evaluate a prompt with images (``gen.media``) but its last token, reusing the KV prefix
        (``Projector.evaluate``); False: cancelled or out of time between batches."""
        if gen.media is None:
            return True
        projector = self.vision_projector()
        total = len(gen.prompt_tokens)

        def should_stop() -> bool:
            gen.model.prompt_progress = (int(self.llm.n_tokens), total)
            if gen.cancel is not None and gen.cancel.is_set():
                return True
            return deadline is not None and time.monotonic() >= deadline

        done = projector.evaluate(gen.media, keep_last=1, should_stop=should_stop)
        self.total_eval += done.image_tokens  # (its text went through the counting eval)
        # an image's embeddings are decoded n_batch at a time (counted over them all)
        self.decoded(-(-done.image_tokens // max(1, int(self.llm.n_batch))))
        return done.n_past >= total - 1

    def _score_prompt(self, gen: Generation, deadline: float | None, generates: bool) -> list[Any] | None:
        """Read the whole prompt with logits at every row (``SCORE_ROWS`` a decode) and return
        its tokens' entries (``app.engine.logprobs``); None: cancelled or out of time between
        decodes. ``generates``: a reply follows, which samples the last row's logits."""
        from app.engine.logprobs import SCORE_ROWS, TokenLogprob, logprob_at

        llm = self.llm
        ctx = llm._ctx
        tokens = gen.prompt_tokens
        total, top, n_vocab = len(tokens), gen.options.logprobs or 0, int(llm.n_vocab())
        ctx.kv_cache_seq_rm(-1, 0, -1)  # no prefix kept: its rows' logits are gone
        llm.n_tokens = 0
        entries = [TokenLogprob(tokens[0], self.token_bytes(tokens[0]), None)]
        for at in range(0, total, SCORE_ROWS):
            if (gen.cancel is not None and gen.cancel.is_set()) or (
                deadline is not None and time.monotonic() >= deadline
            ):
                return None
            chunk = tokens[at : at + SCORE_ROWS]
            llm._batch.set_batch(batch=chunk, n_past=at, logits_all=True)
            try:
                ctx.decode(llm._batch)
            except Exception as exc:  # noqa: BLE001 - llama.cpp's decode failures
                raise GenerationError(f"llama.cpp failed while reading the prompt: {exc}") from exc
            self.total_eval += len(chunk)
            self.decoded()
            llm.input_ids[at : at + len(chunk)] = chunk
            llm.n_tokens = at + len(chunk)
            for row in range(min(len(chunk), total - 1 - at)):  # row i predicts the token after it
                entries.append(logprob_at(ctx.ctx, row, tokens[at + row + 1], n_vocab, top, self.token_bytes))
            if llm.n_tokens < total:
                gen.model.prompt_progress = (llm.n_tokens, total)
                if gen.progress is not None:
                    gen.progress(llm.n_tokens, total)
        # the last row's logits are there: the reply samples them (none follows: evaluate again)
        llm._requires_eval = not generates
        return entries

    def _read_prompt(self, gen: Generation, deadline: float | None) -> bool:
        """Evaluate all but the last batch of a long prompt, reporting progress; False: cancelled
        or out of time between batches (nothing is generated)."""
        llm = self.llm
        n_batch = int(getattr(llm, "n_batch", 0) or 0)
        ids, n_cached = getattr(llm, "_input_ids", None), int(getattr(llm, "n_tokens", 0) or 0)
        ctx = getattr(llm, "_ctx", None)
        if n_batch <= 0 or ids is None or ctx is None:
            return True  # not the llama-cpp-python this was written for: generate() reads it all
        tokens = gen.prompt_tokens
        prefix = 0
        for a, b in zip(ids[:n_cached], tokens, strict=False):
            if a != b:
                break
            prefix += 1
        todo = len(tokens) - prefix
        if todo <= n_batch:
            return True  # one batch: generate() reads it as before
        last = todo % n_batch or n_batch  # left to generate(): the batch that yields the logits
        if prefix > 0:
            if not ctx.kv_cache_seq_rm(-1, prefix, -1):
                return True  # no partial KV removal: generate() resets and reads it all
            llm.n_tokens = prefix
        else:
            llm.reset()
        total = len(tokens)
        gen.model.prompt_progress = (prefix, total)
        for i in range(prefix, total - last, n_batch):
            if gen.cancel is not None and gen.cancel.is_set():
                return False
            if deadline is not None and time.monotonic() >= deadline:
                return False
            llm.eval(tokens[i : min(i + n_batch, total - last)])
            done = min(i + n_batch, total - last)
            gen.model.prompt_progress = (done, total)
            if gen.progress is not None:
                gen.progress(done, total)
        return True

    def _check_thread(self) -> None:
        """Warn once per (model, thread) when llama.cpp runs on a thread other than the loading one."""
        me = threading.get_ident()
        if me == self.owner_thread or (id(self), me) in _warned_threads:
            return
        _warned_threads.add((id(self), me))
        log.warning(
            "%s was loaded on another thread: generating here makes two llama.cpp (OpenMP) "
            "thread teams compete for the cores and slows decoding; load and generate on one "
            "thread",
            self.name,
        )


class DraftModel:
    """A second, small GGUF with the target's vocabulary that drafts for the one-sequence path
    (``LoadSettings.draft_model``): a llama.cpp context of its own in this process, whose KV
    follows the sequence's history (the prompt and the kept tokens: its longest shared prefix
    stays, the rest is read), and which writes K tokens greedily. The target verifies them as it
    verifies n-gram drafts (``app.engine.speculative``). The scheduler's slots draft n-grams only."""

    def __init__(self, llm: Any):
        from llama_cpp import _internals as internals

        self.llm = llm
        self.sampler = internals.LlamaSampler()
        self.sampler.add_greedy()

    @classmethod
    def load(
        cls, path: str, target: Any, *, n_ctx: int, n_gpu_layers: int | None, n_threads: int
    ) -> DraftModel:
        """Load ``path`` beside ``target`` (a ``Llama``); ModelLoadError when it cannot be loaded
        or its vocabulary is not the target's."""
        from llama_cpp import Llama

        p = Path(path)
        if not p.is_file():
            raise ModelLoadError(p, "the draft model's file does not exist")
        llm = _open_llama(
            Llama,
            p,
            "the draft model",
            n_ctx=n_ctx,
            n_gpu_layers=n_gpu_layers,
            n_threads=n_threads,
            verbose=False,
        )
        n = int(target.n_vocab())
        sample = range(0, n, max(1, n // 512))
        if int(llm.n_vocab()) != n or any(
            llm.detokenize([t], special=True) != target.detokenize([t], special=True) for t in sample
        ):
            llm.close()
            raise ModelLoadError(p, "the draft model's vocabulary is not the model's: it cannot draft for it")
        return cls(llm)

    def propose(self, history: Sequence[int], k: int) -> list[int]:
        """``k`` tokens the draft model writes greedily after ``history``."""
        llm = self.llm
        if k <= 0 or len(history) + k >= int(llm.n_ctx()):
            return []
        n = int(llm.n_tokens)
        shared = 0
        for a, b in zip(llm.input_ids[:n], history, strict=False):
            if a != b:
                break
            shared += 1
        keep = min(shared, len(history) - 1)  # the last token is read again: its logits
        llm._ctx.kv_cache_seq_rm(-1, keep, -1)
        llm.n_tokens = keep
        llm.eval(history[keep:])
        out: list[int] = []
        for i in range(k):
            tok = int(self.sampler.sample(llm._ctx, -1))
            out.append(tok)
            if i < k - 1:
                llm.eval([tok])
        return out

    def close(self) -> None:
        self.sampler.close()
        self.llm.close()


#: the pixels all the images of one prompt may decode to together (RGB: 3 bytes a pixel, ~288 MiB)
MAX_PROMPT_PIXELS = 96 * 1024 * 1024


def _check_pixels(images: Sequence[bytes]) -> None:
    """ImageError when the images of a prompt decode to more than :data:`MAX_PROMPT_PIXELS` together
    (each is within ``ImageLimits``; many at once are refused before one is decoded)."""
    from app.engine.errors import ImageError
    from app.engine.vision import check_image

    total = 0
    for data in images:
        info = check_image(data)
        total += info.width * info.height
    if total > MAX_PROMPT_PIXELS:
        raise ImageError(
            f"the prompt's {len(images)} images are {total / 1e6:.0f} million pixels together, more than "
            f"the {MAX_PROMPT_PIXELS / 1e6:.0f} million one prompt may hold: send fewer or smaller images"
        )


def _load_projector(
    model: Path, mmproj: str | None, llm: Any, n_threads: int, n_gpu_layers: int | None, verbose: bool
) -> Any:
    """The vision projector for ``model`` (see :meth:`InProcessBackend.load`'s ``mmproj``), or None."""
    from app.engine.vision import Projector, find_projector, mtmd_available

    if mmproj is not None and mmproj.strip().lower() == "none":
        return None
    named = mmproj is not None
    path = Path(mmproj) if mmproj is not None else find_projector(model)
    if path is None:
        return None
    if named and not path.is_file():
        raise ModelLoadError(path, "the vision projector (mmproj) file does not exist")
    if not mtmd_available()[0]:
        if named:
            raise ModelLoadError(path, mtmd_available()[1])
        log.warning("%s: a vision projector is beside the model, but %s", model.name, mtmd_available()[1])
        return None
    try:
        return Projector.load(
            path, llm, n_threads=n_threads, use_gpu=resolve_gpu_layers(n_gpu_layers) != 0, verbose=verbose
        )
    except ModelLoadError:
        if named:
            raise
        log.warning(
            "%s: the vision projector %s beside it was not loaded", model.name, path.name, exc_info=True
        )
        return None


# --- grammar validation -------------------------------------------------------------

_TOKEN_REF = re.compile(r"!?<(\[\d+\]|[^>\s]*)>")


def _open_llama(
    llama: Any, path: Path, what: str, *, n_ctx: int, n_gpu_layers: int | None, n_threads: int, **extra: Any
) -> Any:
    """A ``llama_cpp.Llama`` over ``path`` with the context, batch and threads every Callisto load
    uses (``extra``: flash attention, KV types, verbosity); ModelLoadError naming ``what`` when
    llama.cpp cannot load it."""
    try:
        return llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_gpu_layers=resolve_gpu_layers(n_gpu_layers),
            n_threads=int(n_threads),
            n_threads_batch=int(n_threads),
            n_batch=min(512, n_ctx),
            **extra,
        )
    except Exception as exc:  # noqa: BLE001 - llama.cpp reports load failures as ValueError/RuntimeError
        raise ModelLoadError(path, f"llama.cpp could not load {what} ({exc})") from exc


def _grammar_token_refs(grammar: str) -> list[str]:
    """Token references (``<[12]>``, ``<|im_end|>``) outside strings, classes and comments."""
    refs: list[str] = []
    i, n = 0, len(grammar)
    while i < n:
        c = grammar[i]
        if c == "#":
            j = grammar.find("\n", i)
            i = n if j < 0 else j + 1
        elif c in '"[':
            close = '"' if c == '"' else "]"
            i += 1
            while i < n and grammar[i] != close:
                i += 2 if grammar[i] == "\\" else 1
            i += 1
        elif c in "<!":
            m = _TOKEN_REF.match(grammar, i)
            if m:
                refs.append(m.group(1))
                i = m.end()
            else:
                i += 1
        else:
            i += 1
    return refs
