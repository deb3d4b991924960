"""Where a loaded model's llama.cpp runs: the one interface of its two backends.

A :class:`~app.engine.llm.LoadedModel` holds what is known of a model (its metadata, templates,
context size, end-of-generation tokens) and delegates everything that touches llama.cpp to a
:class:`ModelBackend`:

* ``app.engine.inprocess.InProcessBackend``: llama-cpp-python in this process (what the engine
  process runs, and tests of llama.cpp internals);
* ``app.engine.engine_process.ProcessBackend``: llama.cpp in an engine process of its own, the
  default (a native crash ends that process, never the caller).

Callers never ask which one they have: tokenizing, grammar checks, constraint compilation and
generation read the same either way. This module holds the interface and the result of a
generation (:class:`GenerationResult`, which the engine process sends back as is); it imports
nothing of the engine but its errors, so both backends and every caller may import it.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from app.engine.embedding import Embeddings, Scores
    from app.engine.errors import EngineCrashedError
    from app.engine.generation import Generation
    from app.engine.llm import LoadedModel

__all__ = ["GenerationResult", "ModelBackend", "portable"]


@dataclass
class GenerationResult:
    text: str
    finish_reason: str  # stop | length | cancelled | deadline
    prompt_tokens: int
    prompt_tokens_evaluated: int
    generated_tokens: int
    ttft_s: float | None
    tokens_per_s: float | None
    elapsed_s: float
    tokens: list[int] = field(default_factory=list)
    #: the stop string that ended the text (finish ``stop``; left out of ``text``), else None
    stop: str | None = None
    #: the end-of-generation token that ended the reply (finish ``stop``, no stop string), else None
    eog: int | None = None
    #: speculative decoding (``app.engine.speculative``): drafted tokens that were verified, and
    #: how many of them the model accepted (the rest were rejected and replaced)
    draft_tokens: int = 0
    draft_accepted: int = 0
    #: the kept tokens' log probabilities (``app.engine.logprobs.TokenLogprob``), when asked
    logprobs: list[Any] | None = None
    #: the prompt's tokens' (the first one's ``logprob`` None), when asked (``prompt_logprobs``)
    prompt_logprobs: list[Any] | None = None


class ModelBackend(Protocol):
    """What a :class:`~app.engine.llm.LoadedModel` asks of the place its llama.cpp runs.

    ``llm`` is the ``llama_cpp.Llama`` of an in-process model (None otherwise); ``engine`` is the
    ``EngineProcess`` of an isolated one (None otherwise): for tests and diagnostics only."""

    llm: Any
    engine: Any
    #: serialises generation on the model (one llama context)
    lock: Any
    #: every token passed to llama.cpp's decode since load (prompt and generated)
    total_eval: int
    #: ``llama_decode`` calls since load, and the generations they held, summed: one a decode on a
    #: one-slot model; a scheduler's step holds every busy slot (``/metrics``' ``n_decode_total``
    #: and ``n_busy_slots_per_decode``)
    decode_calls: int
    busy_slots_total: int

    @property
    def isolated(self) -> bool:
        """Whether llama.cpp runs in an engine process of its own."""
        ...

    @property
    def closed(self) -> bool: ...

    @property
    def crash(self) -> EngineCrashedError | None:
        """The error of an engine process that died, else None."""
        ...

    def close(self) -> None:
        """Free the model (an engine process is stopped). Safe to call twice, or after a crash."""
        ...

    def tokenize(self, text: str) -> list[int]:
        """A rendered prompt's tokens: special-token text becomes special tokens, a BOS is
        prepended when the model wants one and the template did not write it."""
        ...

    def tokenize_text(self, text: str, special: bool) -> list[int]: ...

    def token_bytes(self, token: int) -> bytes: ...

    def detokenize(self, tokens: Sequence[int]) -> bytes:
        """The bytes of ``tokens`` (special tokens as their text), in one call."""
        ...

    def is_eog(self, token: int) -> bool: ...

    def reset_cache(self) -> None: ...

    def validate_grammar(self, grammar: str) -> None:
        """Raise ``GrammarError`` unless llama.cpp can use ``grammar`` safely."""
        ...

    def special_opener(self, opener: str) -> bool:
        """Whether ``opener`` begins with one special (control) token of the vocabulary."""
        ...

    def compile_constraint(self, model: LoadedModel, kwargs: dict[str, Any]) -> Any:
        """``app.engine.constraints.compile_inline(model, kwargs)``, run where llama.cpp runs."""
        ...

    def prepare(self, gen: Generation, prompt: str | Sequence[int]) -> None:
        """Check ``prompt`` for ``gen`` (the errors ``generate`` documents) and get it ready:
        sets ``gen.n_prompt``."""
        ...

    def stream(self, gen: Generation) -> Iterator[str]:
        """Run ``gen``: yield its text pieces, set ``gen.result`` when it ends."""
        ...

    def embed(self, inputs: list[str | Sequence[int]], *, truncate: bool, n_ctx: int) -> Embeddings:
        """A vector per input from the model's embedding context (``app.engine.embedding``), at
        most ``n_ctx`` tokens an input (the engine process knows its own)."""
        ...

    def rerank(self, query: str, documents: list[str], *, truncate: bool, n_ctx: int) -> Scores:
        """A relevance score per document from a reranker's embedding context."""
        ...


def portable(exc: BaseException) -> BaseException:
    """``exc`` if it survives pickling (to cross from the engine process to the app), else a
    plain :class:`~app.engine.errors.GenerationError` with its words."""
    import pickle

    from app.engine.errors import GenerationError

    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - any failure means: send the words
        return GenerationError(f"{type(exc).__name__}: {exc}")
