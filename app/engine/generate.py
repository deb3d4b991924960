"""The one local generation primitive, used by the chat loop and by one-shot ``complete()``.

``generate(model, prompt, ...)`` returns a :class:`Generation`: iterate it for text pieces
as they are decoded, then read ``.result`` (a :class:`GenerationResult`).

* Tokens are decoded with special tokens written as text (``[TOOL_CALLS]``,
  ``<|python_tag|>`` survive), through an incremental UTF-8 decoder, so a character split
  over several tokens is emitted only once it is whole.
* Generation stops at any end-of-generation token llama.cpp reports (``stop``), at
  ``max_tokens`` or the end of the context (``length``), at a stop string (``stop``), at
  the deadline (``deadline``) or when ``cancel`` is set (``cancelled``); the cancel event and
  the deadline are checked before every token.
* A GBNF grammar is validated before llama.cpp sees it (an invalid one would crash the
  process): :class:`GrammarError` says what is wrong. A grammar may not name an
  end-of-generation token; it ends generation by being complete.
* The KV cache is reused: llama.cpp evaluates only the prompt tokens after the longest
  common prefix with what it evaluated before (``result.prompt_tokens_evaluated``).
* A prompt longer than one batch (``n_batch`` tokens after the reused prefix) is evaluated here,
  batch by batch, before llama-cpp-python's ``generate`` sees it: the same ``llama_decode`` calls
  with the same batch sizes (the last batch is left to ``generate``, which needs it for the first
  token's logits), so it costs no speed; between batches ``progress(done, total)`` is called,
  :attr:`LoadedModel.prompt_progress` is updated and ``cancel`` / the deadline are checked.
* A model in an engine process (``LoadedModel.engine``, the default) generates there: the prompt
  is checked and prepared by the child (the same errors, raised here before anything runs) and
  the pieces stream back (``app.engine.engine_process.ProcessGeneration``); the code above is
  what the child runs.
"""

from __future__ import annotations

import codecs
import logging
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from app.engine.holdback import partial_start
from app.engine.sampling import SamplingParams, resolve_sampling

log = logging.getLogger(__name__)
_warned_threads: set[tuple[int, int]] = set()

if TYPE_CHECKING:
    from app.engine.llm import LoadedModel

__all__ = [
    "ContextOverflowError",
    "Generation",
    "GenerationError",
    "GenerationResult",
    "GrammarError",
    "complete",
    "generate",
    "validate_grammar",
]


class GenerationError(RuntimeError):
    """Generation could not run (the message says why)."""


class GrammarError(GenerationError, ValueError):
    """The GBNF grammar was rejected before llama.cpp saw it."""


class ContextOverflowError(GenerationError):
    """The prompt does not fit in the model's context."""


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


# --- grammar validation -------------------------------------------------------------

_TOKEN_REF = re.compile(r"!?<(\[\d+\]|[^>\s]*)>")


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


def validate_grammar(model: LoadedModel, grammar: str) -> None:
    """Raise :class:`GrammarError` unless llama.cpp can use ``grammar`` safely."""
    if model.engine is not None:
        model.engine.call("validate_grammar", grammar)
        return
    import llama_cpp

    if not isinstance(grammar, str) or not grammar.strip():
        raise GrammarError("the grammar is empty")
    if "\x00" in grammar:
        raise GrammarError("the grammar contains a NUL character")
    if not re.search(r"(?m)^\s*root\s*::=", grammar):
        raise GrammarError("the grammar has no 'root' rule")
    n_vocab = model.llm.n_vocab()
    for ref in _grammar_token_refs(grammar):
        if ref.startswith("["):
            tid = int(ref[1:-1])
            if tid >= n_vocab:
                raise GrammarError(
                    f"the grammar names token id {tid}, but the vocabulary has {n_vocab} tokens"
                )
            label = f"<[{tid}]>"
        else:
            toks = model.llm.tokenize(f"<{ref}>".encode(), add_bos=False, special=True)
            if len(toks) != 1:
                raise GrammarError(f"the grammar names <{ref}>, which is not a single token of this model")
            tid, label = toks[0], f"<{ref}>"
        if model.is_eog(tid):
            raise GrammarError(
                f"the grammar names the end-of-generation token {label}; a grammar ends generation "
                "by being complete, it may not contain an end-of-generation token"
            )
    sampler = llama_cpp.llama_sampler_init_grammar(model.vocab, grammar.encode("utf-8"), b"root")
    if not sampler:
        raise GrammarError("the grammar is not valid GBNF (llama.cpp's parser rejected it)")
    llama_cpp.llama_sampler_free(sampler)


# --- generation ----------------------------------------------------------------------


class Generation:
    """Iterate for text pieces; ``result`` is set once iteration ends."""

    def __init__(
        self,
        model: LoadedModel,
        prompt_tokens: list[int],
        *,
        max_tokens: int,
        sampling: SamplingParams,
        grammar: str | None,
        deadline_s: float | None,
        cancel: threading.Event | None,
        stop: Sequence[str],
        constraint: Any = None,
        progress: Callable[[int, int], None] | None = None,
    ):
        self.model = model
        self.progress = progress
        self.prompt_tokens = prompt_tokens
        self.max_tokens = max_tokens
        self.sampling = sampling
        self.grammar = grammar
        self.constraint = constraint  # app.engine.constraints.Constraint: every token held to it
        self.deadline_s = deadline_s
        self.cancel = cancel
        self.stop = tuple(s for s in stop if s)
        self.result: GenerationResult | None = None
        self._started = False
        #: called after each token is decoded, before it is kept; True stops generation there (the
        #: engine process waits in it for its reader to take the previous piece: see engine_child)
        self.gate: Callable[[], bool] | None = None

    def __iter__(self) -> Iterator[str]:
        if self._started:
            raise RuntimeError("a Generation can be iterated only once")
        self._started = True
        return self._run()

    def run(self) -> GenerationResult:
        """Consume the whole generation and return its result."""
        for _ in self:
            pass
        assert self.result is not None
        return self.result

    def _run(self) -> Iterator[str]:
        model = self.model
        start = time.monotonic()
        deadline = None if self.deadline_s is None else start + max(0.0, self.deadline_s)
        n_prompt = len(self.prompt_tokens)
        budget = min(self.max_tokens, model.n_ctx - n_prompt)
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        text_parts: list[str] = []
        tokens: list[int] = []
        pending = ""  # decoded text held back because it may begin a stop string
        finish = "length"
        first_at: float | None = None
        evaluated = 0
        stop_hit = False
        tail = ""
        eval_before = model.total_eval

        def emit(piece: str) -> str:
            text_parts.append(piece)
            return piece

        _check_thread(model)
        model.lock.acquire()
        gen = None
        try:
            grammar_obj = None
            if self.grammar is not None:
                from llama_cpp import LlamaGrammar

                grammar_obj = LlamaGrammar.from_string(self.grammar, verbose=False)
            if self.sampling.seed is not None:
                model.llm.set_seed(int(self.sampling.seed))
            run = self.constraint.start() if self.constraint is not None else None
            if budget > 0 and not self._read_prompt(deadline):
                budget = 0
                finish = "cancelled" if self.cancel is not None and self.cancel.is_set() else "deadline"
            if budget > 0:
                gen = model.llm.generate(
                    self.prompt_tokens,
                    reset=True,
                    grammar=grammar_obj,
                    logits_processor=[run] if run is not None else None,
                    **self.sampling.llama_kwargs(),
                )
            while True:
                if self.cancel is not None and self.cancel.is_set():
                    finish = "cancelled"
                    break
                if deadline is not None and time.monotonic() >= deadline:
                    finish = "deadline"
                    break
                if gen is None:
                    break  # finish says why: no room (length), or stopped while reading the prompt
                if len(tokens) >= budget:
                    finish = "length"
                    break
                try:
                    tok = next(gen)
                except StopIteration:
                    finish = "stop"
                    break
                except Exception as exc:  # noqa: BLE001 - llama.cpp decode failures
                    raise GenerationError(f"llama.cpp failed while generating: {exc}") from exc
                if self.gate is not None and self.gate():
                    finish = "cancelled"  # stopped while this token was decoded: it is not kept
                    break
                if first_at is None:
                    first_at = time.monotonic()
                    evaluated = model.total_eval - eval_before
                if tok in model.eog_ids or model.is_eog(tok):
                    finish = "stop"
                    break
                if run is not None:
                    run.consume(tok)
                tokens.append(tok)
                piece = decoder.decode(model.token_bytes(tok))
                if not piece:
                    continue
                if not self.stop:
                    yield emit(piece)
                    continue
                pending += piece
                hit = min((i for i in (pending.find(s) for s in self.stop) if i >= 0), default=-1)
                if hit >= 0:
                    stop_hit = True
                    if hit:
                        yield emit(pending[:hit])
                    pending = ""
                    finish = "stop"
                    break
                cut = partial_start(pending, self.stop)
                out, pending = pending[:cut], pending[cut:]
                if out:
                    yield emit(out)
            if not stop_hit:
                tail = pending + decoder.decode(b"", final=True)
            if tail:
                yield emit(tail)
        finally:
            if gen is not None:
                gen.close()
            model.prompt_progress = None
            try:
                model.lock.release()
            except RuntimeError:
                pass
            end = time.monotonic()
            gen_time = (end - first_at) if first_at is not None else None
            if first_at is None:
                evaluated = model.total_eval - eval_before
            self.result = GenerationResult(
                text="".join(text_parts),
                finish_reason=finish,
                prompt_tokens=n_prompt,
                prompt_tokens_evaluated=evaluated,
                generated_tokens=len(tokens),
                ttft_s=(first_at - start) if first_at is not None else None,
                tokens_per_s=(len(tokens) / gen_time) if gen_time and len(tokens) > 1 else None,
                elapsed_s=end - start,
                tokens=tokens,
            )
            model.last_prompt_eval = evaluated

    def _read_prompt(self, deadline: float | None) -> bool:
        """Evaluate all but the last batch of a long prompt, reporting progress; False: cancelled
        or out of time between batches (nothing is generated)."""
        llm = self.model.llm
        n_batch = int(getattr(llm, "n_batch", 0) or 0)
        ids, n_cached = getattr(llm, "_input_ids", None), int(getattr(llm, "n_tokens", 0) or 0)
        ctx = getattr(llm, "_ctx", None)
        if n_batch <= 0 or ids is None or ctx is None:
            return True  # not the llama-cpp-python this was written for: generate() reads it all
        tokens = self.prompt_tokens
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
        self.model.prompt_progress = (prefix, total)
        for i in range(prefix, total - last, n_batch):
            if self.cancel is not None and self.cancel.is_set():
                return False
            if deadline is not None and time.monotonic() >= deadline:
                return False
            llm.eval(tokens[i : min(i + n_batch, total - last)])
            done = min(i + n_batch, total - last)
            self.model.prompt_progress = (done, total)
            if self.progress is not None:
                self.progress(done, total)
        return True


def _check_thread(model: LoadedModel) -> None:
    """Warn once per (model, thread) when llama.cpp runs on a thread other than the loading one."""
    me = threading.get_ident()
    if model.engine is not None or me == model.owner_thread or (id(model), me) in _warned_threads:
        return
    _warned_threads.add((id(model), me))
    log.warning(
        "%s was loaded on another thread: generating here makes two llama.cpp (OpenMP) "
        "thread teams compete for the cores and slows decoding; load and generate on one "
        "thread",
        model.name,
    )


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
) -> Generation:
    """Prepare a generation of ``prompt`` (rendered text or token ids).

    ``progress(done, total)`` is called (on the generating thread) after each batch of a prompt
    longer than one batch, until the last batch.

    ``constraint`` (from ``app.engine.constraints.compile_constraint``) holds every sampled
    token to its grammar; it cannot be combined with ``grammar``.

    Raises :class:`GrammarError` for a bad grammar and :class:`ContextOverflowError` when the
    prompt does not fit, before anything runs. ``deadline_s`` is a time budget in seconds.
    """
    if model.closed:
        raise GenerationError("the model is closed")
    if max_tokens < 0:
        raise ValueError(f"max_tokens must be >= 0, got {max_tokens}")
    if model.engine is not None:
        return _generate_in_engine(
            model,
            prompt,
            max_tokens=max_tokens,
            sampling=sampling,
            grammar=grammar,
            deadline_s=deadline_s,
            cancel=cancel,
            stop=stop,
            constraint=constraint,
            progress=progress,
        )
    tokens = model.tokenize(prompt) if isinstance(prompt, str) else [int(t) for t in prompt]
    if not tokens:
        raise GenerationError("the prompt is empty")
    if len(tokens) >= model.n_ctx:
        raise ContextOverflowError(
            f"the prompt is {len(tokens)} tokens but the context holds {model.n_ctx}: "
            "shorten the conversation or load the model with a larger context length"
        )
    if grammar is not None:
        if constraint is not None:
            raise GrammarError("pass either a grammar or a constraint, not both")
        validate_grammar(model, grammar)
    params = resolve_sampling(model.metadata.sampling, sampling)
    stops = tuple(stop) if stop is not None else model.stop_strings
    return Generation(
        model,
        tokens,
        max_tokens=max_tokens,
        sampling=params,
        grammar=grammar,
        deadline_s=deadline_s,
        cancel=cancel,
        stop=stops,
        constraint=constraint,
        progress=progress,
    )


def _generate_in_engine(
    model: LoadedModel,
    prompt: str | Sequence[int],
    *,
    max_tokens: int,
    sampling: SamplingParams | Mapping[str, Any] | None,
    grammar: str | None,
    deadline_s: float | None,
    cancel: threading.Event | None,
    stop: Sequence[str] | None,
    constraint: Any,
    progress: Callable[[int, int], None] | None,
) -> Any:
    """:func:`generate` for a model in an engine process: the child prepares (and checks) the
    generation now; iterating the returned ``ProcessGeneration`` runs it there."""
    handle = None
    if constraint is not None:
        if grammar is not None:
            raise GrammarError("pass either a grammar or a constraint, not both")
        if getattr(constraint, "engine", None) is not model.engine:
            raise GenerationError("the constraint was compiled for another model")
        handle = constraint.handle
    params = resolve_sampling(model.metadata.sampling, sampling)
    stops = tuple(stop) if stop is not None else model.stop_strings
    kwargs = {
        "max_tokens": max_tokens,
        "sampling": params,
        "grammar": grammar,
        "deadline_s": deadline_s,
        "stop": stops,
        "constraint": handle,
    }
    body = prompt if isinstance(prompt, str) else [int(t) for t in prompt]
    gid, n_prompt = model.engine.call("prepare", body, kwargs)
    gen = model.engine.generation(model, gid, cancel=cancel, progress=progress)
    gen.sampling, gen.stop, gen.max_tokens, gen.grammar = (
        params,
        tuple(s for s in stops if s),
        max_tokens,
        grammar,
    )
    gen.constraint, gen.deadline_s, gen.n_prompt = constraint, deadline_s, n_prompt
    return gen


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
