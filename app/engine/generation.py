"""The one local generation primitive, used by the chat loop and by one-shot :func:`complete`.

``generate(model, prompt, ...)`` returns a :class:`Generation`: iterate it for text pieces
as they are decoded, then read ``.result`` (a :class:`~app.engine.backend.GenerationResult`).

The prompt is checked before anything runs (``GrammarError`` for a bad grammar,
``ContextOverflowError`` when it does not fit); the model's backend (``app.engine.backend``)
then runs it where its llama.cpp lives: in this process (``app.engine.inprocess``, which
documents the stopping rules, KV reuse and batched prompt reading) or in its engine process
(``app.engine.engine_process``, where the child runs the same code and streams the pieces back).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from app.engine.backend import GenerationResult
from app.engine.errors import GenerationError, TokenIdError
from app.engine.sampling import SamplingParams, resolve_sampling

if TYPE_CHECKING:
    from app.engine.llm import LoadedModel

__all__ = [
    "NO_OPTIONS",
    "Generation",
    "TokenOptions",
    "complete",
    "generate",
    "infill_prompt",
    "validate_grammar",
]


@dataclass(frozen=True)
class TokenOptions:
    """What a request asks of its tokens beyond sampling, one value through every layer (the
    server's ``TurnRequest``, the chat loop's ``LocalReplies``, :func:`generate`, the engine
    process): OpenAI's names.

    ``logprobs`` (None: not asked; else 0 to ``MAX_TOP_LOGPROBS``, the alternatives a token): each
    kept token's log probability (``app.engine.logprobs``) is added to
    ``Generation.token_logprobs`` before its text is yielded, and the whole list is the result's
    ``logprobs``. ``prompt_logprobs``: the prompt's tokens' too, in the result's
    ``prompt_logprobs`` (the prompt is read whole, with logits at every row; with ``max_tokens``
    0 it is read and nothing generated). ``prediction``: the text the reply is expected to say
    (OpenAI's predicted outputs), which speculative decoding drafts from where the model can
    draft (``Generation.prediction_tokens`` once the backend tokenized it); the reply is the
    model's own either way. ``logit_bias``: each token id's bias to its logit (-100 or less bans
    it; ``app.engine.sampling.LogitBias``)."""

    logprobs: int | None = None
    prompt_logprobs: bool = False
    prediction: str | None = None
    logit_bias: Mapping[int, float] | None = None

    def check(self, n_vocab: int) -> None:
        """``ValueError`` for ``logprobs`` out of range, :class:`TokenIdError` for a bias's token
        id outside a vocabulary of ``n_vocab`` tokens."""
        from app.engine.logprobs import MAX_TOP_LOGPROBS

        if self.logprobs is not None and not 0 <= self.logprobs <= MAX_TOP_LOGPROBS:
            raise ValueError(
                f"logprobs must be 0 to {MAX_TOP_LOGPROBS} alternatives a token, got {self.logprobs}"
            )
        TokenIdError.check(self.logit_bias or (), n_vocab, "logit_bias")

    def later(self) -> TokenOptions:
        """The options of a turn's later generations: only the first scores its prompt and drafts
        from the prediction (a later one's prompt holds the reply so far)."""
        return replace(self, prompt_logprobs=False, prediction=None)


#: no options: nothing reported, nothing biased
NO_OPTIONS = TokenOptions()


class Generation:
    """One prepared generation: iterate for text pieces; ``result`` is set once iteration ends."""

    def __init__(
        self,
        model: LoadedModel,
        *,
        max_tokens: int,
        sampling: SamplingParams,
        grammar: str | None,
        deadline_s: float | None,
        cancel: threading.Event | None,
        stop: Sequence[str],
        constraint: Any = None,
        progress: Callable[[int, int], None] | None = None,
        options: TokenOptions = NO_OPTIONS,
    ):
        self.model = model
        self.progress = progress
        self.max_tokens = max_tokens
        self.sampling = sampling
        self.grammar = grammar
        self.constraint = constraint  # app.engine.constraints: every token held to it
        self.deadline_s = deadline_s
        self.cancel = cancel
        self.stop = tuple(s for s in stop if s)
        self.result: GenerationResult | None = None
        #: log probabilities, a prompt to score, a prediction, a logit bias (:class:`TokenOptions`)
        self.options = options
        #: the kept tokens' entries so far (when asked), each added before its text is yielded
        self.token_logprobs: list[Any] = []
        #: the prediction's tokens (``options.prediction``), once the backend tokenized it
        self.prediction_tokens: list[int] = []
        #: the prompt's length in tokens (set by the backend's ``prepare``)
        self.n_prompt = 0
        #: the prompt's tokens, for a backend that runs here (the engine process keeps its own)
        self.prompt_tokens: list[int] = []
        #: the backend's name for this generation (the engine process's id of it)
        self.handle: Any = None
        #: a prompt with images, tokenized by the backend that runs here
        #: (``app.engine.vision.MediaPrompt``: ``prompt_tokens`` are its ids), else None
        self.media: Any = None
        #: called after each token is decoded, before it is kept; True stops generation there (the
        #: engine process waits in it for its reader to take the previous piece: see engine_child)
        self.gate: Callable[[], bool] | None = None
        self._started = False

    def __iter__(self) -> Iterator[str]:
        if self._started:
            raise RuntimeError("a Generation can be iterated only once")
        self._started = True
        return self.model.backend.stream(self)

    def run(self) -> GenerationResult:
        """Consume the whole generation and return its result."""
        for _ in self:
            pass
        assert self.result is not None
        return self.result


def validate_grammar(model: LoadedModel, grammar: str) -> None:
    """Raise ``GrammarError`` unless llama.cpp can use ``grammar`` safely."""
    model.backend.validate_grammar(grammar)


def generate(
    model: LoadedModel,
    prompt: str | Sequence[int],
    *,
    max_tokens: int = 1024,
    sampling: SamplingParams | Mapping[str, Any] | None = None,
    grammar: str | None = None,
    deadline_s: float | None = None,
    cancel: threading.Event | None = None,
    stop: Sequence[str] | None = None,
    constraint: Any = None,
    progress: Callable[[int, int], None] | None = None,
    options: TokenOptions = NO_OPTIONS,
) -> Generation:
    """Prepare a generation of ``prompt`` (rendered text or token ids).

    ``progress(done, total)`` is called (on the generating thread) after each batch of a prompt
    longer than one batch, until the last batch.

    ``constraint`` (from ``app.engine.constraints.compile_constraint``) holds every sampled
    token to its grammar; it cannot be combined with ``grammar``.

    ``options``: log probabilities, a prompt to score, a prediction, a logit bias
    (:class:`TokenOptions`).

    Raises, before anything runs: ``GrammarError`` for a bad grammar, ``ContextOverflowError``
    when the prompt does not fit, :class:`TokenIdError` for a token id outside the vocabulary (in a
    prompt of token ids, where a model that reads images also takes image positions, or in the
    bias), ``ValueError`` for another value out of range.
    ``deadline_s`` is a time budget in seconds.
    """
    if model.closed:
        raise GenerationError("the model is closed")
    if max_tokens < 0:
        raise ValueError(f"max_tokens must be >= 0, got {max_tokens}")
    options.check(model.n_vocab)
    if not isinstance(prompt, str):
        # a negative id is an image's position (``app.engine.vision.media_id``): a model that reads
        # images may be given the ids of a prompt its projector tokenized
        TokenIdError.check(prompt, model.n_vocab, "prompt", images=model.vision)
    gen = Generation(
        model,
        max_tokens=max_tokens,
        sampling=resolve_sampling(model.metadata.sampling, sampling),
        grammar=grammar,
        deadline_s=deadline_s,
        cancel=cancel,
        stop=tuple(stop) if stop is not None else model.stop_strings,
        constraint=constraint,
        progress=progress,
        options=options,
    )
    model.backend.prepare(gen, prompt)
    return gen


#: what separates two files of ``extra`` for a model without a file-separator token (llama-server's)
SNIPPET_SEPARATOR = "\n\n--- snippet ---\n\n"
#: the most tokens of the prefix and the suffix together (3:1), as llama-server's batch bounds them
_FIM_WINDOW = 2048


def infill_prompt(
    model: LoadedModel,
    prefix: str,
    suffix: str,
    *,
    cursor: str = "",
    extra: Sequence[tuple[str, str]] = (),
    fit: tuple[int, int] | None = None,
) -> list[int]:
    """The prompt that asks ``model`` for the text between ``prefix`` and ``suffix`` (fill in the
    middle, what a code editor's completion asks for), in llama.cpp's order, as its server's
    ``/infill`` writes it: [BOS] [the other files], FIM-prefix, the prefix, ``cursor`` (the
    cursor's line up to it, when the editor sends it apart), FIM-suffix, the suffix, FIM-middle.

    ``extra``: (file name, text) of other files of the project, before it all: with the model's
    repository tokens (``<|repo_name|>`` and ``<|file_sep|>``: Qwen2.5-Coder's) as it was trained
    on a repository, else each after :data:`SNIPPET_SEPARATOR`; none, no repository header. ``fit`` (the context, the reply's
    tokens): cut as llama-server cuts them, the prefix to its last 3/4 of a window of
    ``min(2048, context / 2)`` tokens and the suffix to its first quarter, then as much of the
    other files' end as leaves room for the reply; without it the whole prompt is kept (a prompt
    over the context is then refused where it is generated).

    Every text is text only: a special token's text in it (code that writes ``<|fim_middle|>``)
    stays text. ``GenerationError`` when the model has no FIM tokens."""
    if model.fim_ids is None:
        raise GenerationError(
            f"{model.name} cannot fill in the middle (insert): its vocabulary has no fill-in-the-middle "
            "tokens; use a code model trained for it (Qwen2.5-Coder, CodeLlama, StarCoder2, Codestral…)"
        )
    pre, suf, mid = model.fim_ids

    def text(t: str) -> list[int]:
        return model.tokenize_text(t, special=False) if t else []

    head = text(prefix) + text(cursor)
    tail = text(suffix)
    others: list[int] = []
    if extra:
        repo = model.fim_repo_ids
        if repo is not None:
            others += [repo[0], *text("myproject\n")]
        for name, body in extra:
            others += [repo[1], *text(f"{name}\n")] if repo is not None else text(SNIPPET_SEPARATOR)
            others += text(body)
        if repo is not None:
            others += [repo[1], *text("filename\n")]  # the file being edited (its name is not sent)
    if fit is not None:
        n_ctx, n_predict = fit
        window = max(4, min(_FIM_WINDOW, n_ctx // 2))
        head = head[len(head) - min(len(head), 3 * window // 4) :]
        tail = tail[: max(0, min(len(tail), window // 4 - 2))]
        room = max(0, n_ctx - window - 2 * n_predict)
        others = others[len(others) - min(len(others), room) :]
    start = model.tokenize("")  # the BOS, where the model wants one
    return [*start, *others, pre, *head, suf, *tail, mid]


def complete(
    model: LoadedModel,
    prompt: str,
    *,
    grammar: str | None = None,
    max_tokens: int = 256,
    deadline_s: float | None = 30.0,
    sampling: SamplingParams | Mapping[str, Any] | None = None,
    system: str | None = None,
    cancel: threading.Event | None = None,
    raw: bool = False,
) -> GenerationResult:
    """One-shot: ``prompt`` as a user message through the model's template (``raw=True``:
    the prompt text as is), generated on the same primitive as the chat."""
    if raw:
        text = prompt
    else:
        # imported here: the engine process runs generate() and never needs the templates' stack
        from app.engine.messages import Message
        from app.engine.render import render_prompt

        msgs = ([Message(role="system", content=system)] if system else []) + [
            Message(role="user", content=prompt)
        ]
        text = render_prompt(model, msgs).text
    return generate(
        model,
        text,
        max_tokens=max_tokens,
        sampling=sampling,
        grammar=grammar,
        deadline_s=deadline_s,
        cancel=cancel,
    ).run()
