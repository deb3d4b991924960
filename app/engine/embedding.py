"""Embeddings: one vector per text from a loaded model (``/v1/embeddings``, ``/api/embed``).

A model embeds in a llama.cpp context of its own, made on its first embedding request and kept
while the model is loaded (:class:`Embedder`): the model's threads, flash attention and KV cache
type, embeddings on, one sequence, and as many tokens as the model's context (a slot's, as the
user set it; never more than the model was trained on, nor than :data:`MAX_EMBED_CTX`). An input
is read in one decode, as llama.cpp needs for a pooled embedding, so an input longer than that
context is cut to it (``truncate``, Ollama's default) or refused
(:class:`~app.engine.errors.EmbeddingInputError`, as OpenAI refuses one).

The pooling is the model's own (an embedding model's GGUF names it: mean, CLS or last token);
a chat model, which names none, is pooled by the mean of its tokens' last hidden states. A
reranking model (rank pooling) has no embeddings and says so (``EmbeddingModelError``).

Each input is decoded alone: its vector is the same whatever else the request holds (on a CPU a
decode's rounding depends on its shape), so a client that caches vectors by text never finds two
for one text. Vectors leave the engine as llama.cpp gives them (float32, not normalized);
:func:`normalized` and :func:`shortened` are what the APIs apply. Qt-free; ``llama_cpp`` is
imported when an embedder is made.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from app.engine.errors import EmbeddingInputError, EmbeddingModelError, GenerationError

__all__ = ["MAX_EMBED_CTX", "MAX_INPUTS", "Embedder", "Embeddings", "Scores", "normalized", "shortened"]

#: the most inputs one request embeds (OpenAI's bound)
MAX_INPUTS = 2048
#: the most tokens an input is read with: the embedding context holds a KV cache and a batch of this
#: many (a chat model loaded with 128K of context must not take a second 128K cache to embed;
#: embedding models are trained on 8K or less)
MAX_EMBED_CTX = 8192

#: llama.cpp's pooling types (``enum llama_pooling_type``)
_UNSPECIFIED, _NONE, _MEAN, _CLS, _LAST, _RANK = -1, 0, 1, 2, 3, 4
_POOLING_NAMES = {_MEAN: "mean", _CLS: "cls", _LAST: "last", _RANK: "rank"}


@dataclass
class _PerInput:
    """What each input of a request was read as: its tokens (after any cut), whether it was cut."""

    tokens: list[int] = field(default_factory=list)
    truncated: list[bool] = field(default_factory=list)

    @property
    def total_tokens(self) -> int:
        return sum(self.tokens)


@dataclass
class Embeddings(_PerInput):
    """What :meth:`Embedder.embed` gives: a float32 vector per input (in order), with the tokens
    each input was read as and which were cut to the context."""

    vectors: list[array] = field(default_factory=list)


@dataclass
class Scores(_PerInput):
    """What :meth:`Embedder.rank` gives: a relevance score per document (in order; the model's
    own, a logit, not squashed into 0-1), with the tokens each query-document pair was read as and
    which documents were cut to fit."""

    scores: list[float] = field(default_factory=list)


def normalized(vector: Sequence[float]) -> list[float]:
    """``vector`` scaled to length 1 (a zero vector stays zero), as OpenAI and Ollama return them."""
    norm = math.sqrt(math.fsum(x * x for x in vector))
    if norm == 0.0 or not math.isfinite(norm):
        return [float(x) for x in vector]
    return [x / norm for x in vector]


def shortened(vector: Sequence[float], dimensions: int | None) -> list[float]:
    """The first ``dimensions`` values of ``vector``, normalized again (OpenAI's ``dimensions``;
    all of it when None): what a model trained for shortened vectors is read with."""
    if dimensions is None or dimensions >= len(vector):
        return normalized(vector)
    return normalized(vector[:dimensions])


class Embedder:
    """The embedding context of one in-process model (``llm``, llama-cpp-python's ``Llama``),
    ``n_ctx`` tokens at most per input. Not thread-safe: the model's one llama.cpp thread uses it."""

    def __init__(self, llm: Any, name: str, n_ctx: int):
        import llama_cpp

        self.name = name
        self._llm = llm
        self._lib = llama_cpp
        self.asked_ctx = int(n_ctx)
        train = int(llm._model.n_ctx_train()) or int(n_ctx)
        self.n_ctx = max(8, min(int(n_ctx), train, MAX_EMBED_CTX))
        self.n_embd = int(llama_cpp.llama_model_n_embd(llm._model.model))
        self.n_vocab = int(llm.n_vocab())
        self._ctx = self._context(_UNSPECIFIED)
        pooling = int(llama_cpp.llama_pooling_type(self._ctx.ctx))
        if pooling not in _POOLING_NAMES:  # a chat model names no pooling: the mean of its tokens
            self._ctx.close()
            self._ctx = self._context(_MEAN)
            pooling = _MEAN
        self.pooling = _POOLING_NAMES[pooling]
        model = llm._model.model
        self._encode = bool(llama_cpp.llama_model_has_encoder(model)) and not bool(
            llama_cpp.llama_model_has_decoder(model)
        )
        vocab = llm._model.vocab
        self._add = (
            bool(llama_cpp.llama_vocab_get_add_bos(vocab)),
            bool(llama_cpp.llama_vocab_get_add_eos(vocab)),
            bool(llama_cpp.llama_vocab_get_add_sep(vocab)),
        )
        self._specials = (
            int(llama_cpp.llama_vocab_bos(vocab)),
            int(llama_cpp.llama_vocab_eos(vocab)),
            int(llama_cpp.llama_vocab_sep(vocab)),
        )
        #: the token an input ends with (BERT's [SEP], else EOS), kept last when an input is cut
        self._eos = self._specials[2] if self._specials[2] >= 0 else self._specials[1]
        #: a reranker's prompt (``tokenizer.chat_template.rerank``: Qwen3-Reranker's, with ``{query}``
        #: and ``{document}`` in it, as llama.cpp reads it), else None
        meta = getattr(llm, "metadata", None) or {}
        self.rerank_template: str | None = meta.get("tokenizer.chat_template.rerank")
        self._mem = llama_cpp.llama_get_memory(self._ctx.ctx)
        self._batch = llama_cpp.llama_batch_init(self.n_ctx, 0, 1)

    def _context(self, pooling: int) -> Any:
        from llama_cpp import _internals as internals

        llm = self._llm
        params = type(llm.context_params).from_buffer_copy(llm.context_params)
        params.embeddings = True
        params.pooling_type = pooling
        params.n_ctx = self.n_ctx
        params.n_batch = self.n_ctx  # an input in one decode: llama.cpp pools one ubatch
        params.n_ubatch = self.n_ctx
        params.n_seq_max = 1
        try:
            return internals.LlamaContext(model=llm._model, params=params, verbose=False)
        except Exception as exc:  # noqa: BLE001 - llama.cpp says only "Failed to create llama_context"
            raise GenerationError(
                f"llama.cpp could not make an embedding context of {self.n_ctx} tokens for {self.name} "
                "(not enough memory?): load it with a smaller context"
            ) from exc

    def close(self) -> None:
        ctx, self._ctx = self._ctx, None
        if ctx is not None:
            self._lib.llama_batch_free(self._batch)
            ctx.close()

    # -- embedding -----------------------------------------------------------------------------------

    def tokens_of(self, index: int, item: str | Sequence[int], truncate: bool) -> tuple[list[int], bool]:
        """The tokens ``item`` (a text, or token ids as they are) is read as, and whether it was cut
        to the context; :class:`EmbeddingInputError` for one that cannot be read."""
        if isinstance(item, str):
            # the model's own specials around it (a BOS; BERT's [CLS] and [SEP]); its text is text
            tokens = list(self._llm.tokenize(item.encode("utf-8"), add_bos=True, special=False))
            if not item or not tokens:
                raise EmbeddingInputError(index, "is empty: there is no text to embed")
        else:
            tokens = [int(t) for t in item]
            if not tokens:
                raise EmbeddingInputError(index, "is an empty list of tokens: there is nothing to embed")
            bad = next((t for t in tokens if not 0 <= t < self.n_vocab), None)
            if bad is not None:
                raise EmbeddingInputError(
                    index,
                    f"holds the token id {bad}, outside the model's vocabulary (0 to {self.n_vocab - 1}): "
                    "token ids are read in the model's own vocabulary; a client that counts tokens with "
                    "another tokenizer (langchain's OpenAIEmbeddings, unless check_embedding_ctx_length "
                    "is false) should send the text",
                )
        if len(tokens) <= self.n_ctx:
            return tokens, False
        if not truncate:
            why = (
                "(its context): shorten it, or load the model with a larger context"
                if self.n_ctx == self.asked_ctx
                else "at once: shorten it, or send it in parts"
            )
            raise EmbeddingInputError(
                index, f"is {len(tokens):,} tokens long; the model embeds at most {self.n_ctx:,} tokens {why}"
            )
        ends_with_sep = isinstance(item, str) and tokens[-1] == self._eos
        cut = tokens[: self.n_ctx]
        if ends_with_sep:
            cut[-1] = self._eos  # the separator the model reads its input's end by stays last
        return cut, True

    def embed(self, inputs: Sequence[str | Sequence[int]], *, truncate: bool = True) -> Embeddings:
        """A vector per input, each read in a decode of its own."""
        if self._ctx is None:
            raise GenerationError(f"the model {self.name} is closed")
        if self.pooling == "rank":
            raise EmbeddingModelError(
                f"{self.name} is a reranking model: it scores texts against a query (/v1/rerank) and "
                "has no embeddings"
            )
        read = [self.tokens_of(i, item, truncate) for i, item in enumerate(inputs)]  # all checked first
        out = Embeddings()
        for tokens, cut in read:
            out.vectors.append(self._one(tokens))
            out.tokens.append(len(tokens))
            out.truncated.append(cut)
        return out

    def pair_tokens(self, query: str, document: str) -> tuple[list[int], int]:
        """The tokens a reranker reads a query and a document as, and where the document's own
        tokens end among them (what a cut shortens): the model's rerank template with the two put
        in, else llama.cpp's pair (its BOS, the query, EOS, SEP, the document, EOS, each where the
        vocabulary adds it)."""
        llm = self._llm
        if self.rerank_template is not None:
            head, _, tail = self.rerank_template.replace("{query}", query).partition("{document}")
            before = list(llm.tokenize(head.encode("utf-8"), add_bos=False, special=True))
            doc = list(llm.tokenize(document.encode("utf-8"), add_bos=False, special=False))
            after = list(llm.tokenize(tail.encode("utf-8"), add_bos=False, special=True))
            return before + doc + after, len(before) + len(doc)
        add_bos, add_eos, add_sep = self._add
        bos, eos, sep = self._specials
        q = list(llm.tokenize(query.encode("utf-8"), add_bos=False, special=False))
        doc = list(llm.tokenize(document.encode("utf-8"), add_bos=False, special=False))
        lead = [bos] * add_bos + q + [eos] * add_eos + [sep] * add_sep
        return lead + doc + [eos] * add_eos, len(lead) + len(doc)

    def rank(self, query: str, documents: Sequence[str], *, truncate: bool = True) -> Scores:
        """A relevance score per document for ``query``, each pair read in a decode of its own. A
        pair longer than the context has its document's end cut (``truncate``) or is refused
        (``EmbeddingInputError`` naming the document); so is an empty document."""
        if self._ctx is None:
            raise GenerationError(f"the model {self.name} is closed")
        if self.pooling != "rank":
            raise EmbeddingModelError(
                f"{self.name} is not a reranking model: it has no relevance head; use a reranker "
                "(bge-reranker, jina-reranker, Qwen3-Reranker…), or compare its embeddings"
            )
        read = []
        for i, doc in enumerate(documents):
            if not doc:
                raise EmbeddingInputError(i, "is empty: there is no text to score")
            tokens, doc_end = self.pair_tokens(query, doc)
            over = len(tokens) - self.n_ctx
            if over > 0:
                if not truncate or doc_end - over < 1:
                    raise EmbeddingInputError(
                        i,
                        f"is {len(tokens):,} tokens long with the query; the model reads at most "
                        f"{self.n_ctx:,} tokens at once: shorten it",
                    )
                tokens = tokens[: doc_end - over] + tokens[doc_end:]
            read.append((tokens, over > 0))
        out = Scores()
        for tokens, cut in read:
            out.scores.append(float(self._one(tokens)[0]))
            out.tokens.append(len(tokens))
            out.truncated.append(cut)
        return out

    def _one(self, tokens: list[int]) -> array:
        lib, ctx, batch = self._lib, self._ctx, self._batch
        lib.llama_memory_clear(self._mem, True)
        for i, tok in enumerate(tokens):
            batch.token[i] = tok
            batch.pos[i] = i
            batch.n_seq_id[i] = 1
            batch.seq_id[i][0] = 0
            batch.logits[i] = True  # every token's state goes into the pooling
        batch.n_tokens = len(tokens)
        run = lib.llama_encode if self._encode else lib.llama_decode
        rc = run(ctx.ctx, batch)
        if rc != 0:
            raise GenerationError(f"llama.cpp failed while embedding: it returned {rc}")
        ptr = lib.llama_get_embeddings_seq(ctx.ctx, 0)
        if not ptr:
            raise GenerationError(f"llama.cpp gave no embedding for {self.name}")
        return array("f", ptr[: self.n_embd])
