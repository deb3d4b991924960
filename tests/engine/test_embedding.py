"""Embeddings (``app.engine.embedding``): a vector per input from the loaded model's embedding
context, on the real llama.cpp path (tiny random-weight GGUFs), in this process, through the
engine process, and beside a generation or the scheduler's slots."""

from __future__ import annotations

import math

import pytest

from app.engine.embedding import Embedder, normalized, shortened
from app.engine.errors import EmbeddingInputError, EmbeddingModelError, GenerationError
from app.engine.generation import generate
from app.engine.llm import load_model

N_EMBD = 64  # write_tiny_gguf's embedding length
TEXTS = ["hello there", "the quick brown fox", "zz yy xx", "a"]


def _model(path, *, isolate: bool, n_ctx: int = 256):
    return load_model(path, n_ctx=n_ctx, n_threads=1, isolate=isolate)


def _vectors(model, inputs, **kw) -> list[list[float]]:
    return [list(v) for v in model.embed(inputs, **kw).vectors]


def test_a_vector_per_input_the_same_in_process_and_through_the_engine(tiny_gguf):
    path = tiny_gguf()
    inproc = _model(path, isolate=False)
    try:
        here = inproc.embed(TEXTS)
        assert [len(v) for v in here.vectors] == [N_EMBD] * len(TEXTS)
        # a byte vocabulary without a BOS: one token a byte
        assert here.tokens == [len(t.encode()) for t in TEXTS] and here.truncated == [False] * len(TEXTS)
        assert len({tuple(v) for v in here.vectors}) == len(TEXTS)  # different texts, different vectors
        assert inproc.backend._embedder.pooling == "mean"  # a chat model names no pooling
    finally:
        inproc.close()
    isolated = _model(path, isolate=True)
    try:
        there = isolated.embed(TEXTS)
        assert [list(v) for v in there.vectors] == [list(v) for v in here.vectors]
        assert there.tokens == here.tokens
    finally:
        isolated.close()


def test_an_inputs_vector_does_not_depend_on_the_rest_of_the_request(tiny_gguf):
    """Each input is decoded alone: a client that caches vectors by text finds one per text."""
    m = _model(tiny_gguf(), isolate=False)
    try:
        alone = _vectors(m, ["the quick brown fox"])[0]
        among = _vectors(m, ["a much longer text before it, " * 4, "the quick brown fox", "z"])[1]
        assert among == alone
        assert _vectors(m, ["the quick brown fox"])[0] == alone  # and again, the same
        # token ids are read as they are: the same tokens, the same vector
        ids = m.tokenize_text("the quick brown fox", special=False)
        assert _vectors(m, [ids])[0] == alone
    finally:
        m.close()


@pytest.mark.parametrize(("pooling", "name"), [(1, "mean"), (2, "cls"), (3, "last")])
def test_the_models_own_pooling_is_used(tiny_gguf, pooling, name):
    m = _model(tiny_gguf(extra_metadata={"llama.pooling_type": pooling}), isolate=False)
    try:
        vec = _vectors(m, ["hello there"])[0]
        assert m.backend._embedder.pooling == name and len(vec) == N_EMBD
    finally:
        m.close()
    if name != "mean":  # pooled otherwise than a chat model is
        plain = _model(tiny_gguf(), isolate=False)
        try:
            assert _vectors(plain, ["hello there"])[0] != vec
        finally:
            plain.close()


def test_a_reranking_model_says_it_has_no_embeddings(tiny_gguf):
    m = _model(tiny_gguf(name="tiny-reranker", extra_metadata={"llama.pooling_type": 4}), isolate=True)
    try:
        with pytest.raises(EmbeddingModelError, match="reranking model"):
            m.embed(["hello"])
        # the model still generates
        assert generate(m, "hello", max_tokens=3, sampling={"temperature": 0}, stop=()).run().generated_tokens
    finally:
        m.close()


def test_inputs_it_cannot_read_are_named_and_long_ones_are_cut_or_refused(tiny_gguf):
    m = _model(tiny_gguf(), isolate=True, n_ctx=256)
    try:
        assert m.n_ctx == 256
        long = "x" * 300
        cut = m.embed(["ok", long], truncate=True)
        assert cut.tokens == [2, 256] and cut.truncated == [False, True]
        assert list(cut.vectors[1]) == _vectors(m, ["x" * 256])[0]  # the first 256 tokens
        with pytest.raises(
            EmbeddingInputError, match=r"input\[1\] is 300 tokens long; the model embeds at most 256"
        ) as e:
            m.embed(["ok", long], truncate=False)
        assert e.value.index == 1  # it crossed from the engine process whole
        with pytest.raises(EmbeddingInputError, match=r"input\[0\] is empty"):
            m.embed([""])
        with pytest.raises(EmbeddingInputError, match=r"input\[2\] is an empty list of tokens"):
            m.embed(["a", "b", []])
        with pytest.raises(EmbeddingInputError, match=r"token id 100000, outside the model's vocabulary"):
            m.embed([[1, 2, 100000]])
        assert len(_vectors(m, ["still fine"])[0]) == N_EMBD  # nothing was lost
    finally:
        m.close()
    with pytest.raises(GenerationError, match="closed"):
        m.embed(["after close"])


def test_embedding_between_the_tokens_of_a_generation_leaves_it_unchanged(tiny_gguf):
    """One slot: the engine answers an embedding call between two tokens of a running reply,
    which goes on exactly as it would have."""
    m = _model(tiny_gguf(seed=5), isolate=True)
    try:
        greedy = {"temperature": 0}
        ref = generate(m, "hello there", max_tokens=24, sampling=greedy, stop=()).run()
        m.reset_cache()
        alone = _vectors(m, ["an embedding"])[0]
        gen = generate(m, "hello there", max_tokens=24, sampling=greedy, stop=())
        pieces, during = [], None
        for piece in gen:
            pieces.append(piece)
            if len(pieces) == 3:
                during = _vectors(m, ["an embedding"])[0]
        assert during == alone
        assert gen.result.tokens == ref.tokens and "".join(pieces) == ref.text
    finally:
        m.close()


def test_a_model_with_slots_embeds_as_a_one_slot_model_does(tiny_gguf, monkeypatch):
    path = tiny_gguf(seed=7)
    one = _model(path, isolate=True)
    try:
        ref = _vectors(one, TEXTS)
    finally:
        one.close()
    monkeypatch.setenv("CALLISTO_ENGINE_PARALLEL", "2")
    slots = _model(path, isolate=True)
    try:
        assert slots.backend.parallel == 2
        assert _vectors(slots, TEXTS) == ref
        # and the slots still generate beside it
        out = generate(slots, "hello", max_tokens=4, sampling={"temperature": 0}, stop=()).run()
        assert out.generated_tokens >= 1
    finally:
        slots.close()


def test_a_new_context_makes_a_new_embedding_context(tiny_gguf):
    m = _model(tiny_gguf(), isolate=False, n_ctx=256)
    try:
        m.embed(["a"])
        first = m.backend._embedder
        assert isinstance(first, Embedder) and first.n_ctx == 256
        m.embed(["b"])
        assert m.backend._embedder is first  # kept while the model's context is the same
        m.n_ctx = 512  # as a slot's context is set after the load
        assert m.embed(["y" * 300]).tokens == [300]
        assert m.backend._embedder is not first and m.backend._embedder.n_ctx == 512
    finally:
        m.close()


def test_normalized_and_shortened_vectors():
    v = [3.0, 4.0, 0.0, 12.0]
    n = normalized(v)
    assert math.isclose(math.fsum(x * x for x in n), 1.0) and math.isclose(n[0], 3 / 13)
    s = shortened(v, 2)
    assert s == pytest.approx([0.6, 0.8])
    assert shortened(v, None) == n and shortened(v, 10) == n
    assert normalized([0.0, 0.0]) == [0.0, 0.0]  # nothing to scale


# -- an embedding model (llama.cpp's BERT) --------------------------------------------------------


def test_an_embedding_model_embeds_with_its_own_pooling_and_refuses_to_write(tmp_path):
    from app.engine.errors import EmbeddingOnlyError
    from app.engine.models.metadata import read_metadata
    from app.engine.models.tiny import write_tiny_bert_gguf

    path = write_tiny_bert_gguf(tmp_path / "bert.gguf", pooling=2)
    assert read_metadata(path).embedding_model
    m = _model(path, isolate=True)
    try:
        out = m.embed(["hello there", "the quick brown fox"])
        # [CLS] hello there [SEP]: the model's own specials around the text
        assert out.tokens == [4, 6] and len(out.vectors[0]) == 32
        with pytest.raises(EmbeddingOnlyError, match="tiny-bert is an embedding model"):
            generate(m, "hello", max_tokens=3, sampling={"temperature": 0}, stop=()).run()
        # a text longer than the context is cut with its [SEP] kept last: the same vector as its
        # first n - 1 tokens with the separator after them
        n = m.n_ctx
        words = "the " * (n + 20)
        cut = m.embed([words])
        assert cut.tokens == [n] and cut.truncated == [True]
        the = m.tokenize_text("the", special=False)
        assert list(cut.vectors[0]) == _vectors(m, [[101, *(the * (n - 2)), 102]])[0]
    finally:
        m.close()


def test_a_chat_model_is_not_an_embedding_model(tiny_gguf):
    from app.engine.models.metadata import read_metadata

    assert not read_metadata(tiny_gguf()).embedding_model
    assert read_metadata(tiny_gguf(extra_metadata={"llama.pooling_type": 3})).embedding_model


def test_a_long_context_model_embeds_in_a_bounded_context(tiny_gguf, monkeypatch):
    """A chat model loaded with a long context does not get a second context that long to embed
    with: the embedding context is at most MAX_EMBED_CTX tokens (here lowered to 512)."""
    from app.engine import embedding

    monkeypatch.setattr(embedding, "MAX_EMBED_CTX", 512)
    m = _model(tiny_gguf(), isolate=False, n_ctx=2048)
    try:
        assert m.n_ctx == 2048
        out = m.embed(["x" * 700], truncate=True)
        assert out.tokens == [512] and out.truncated == [True]
        assert m.backend._embedder.n_ctx == 512
        with pytest.raises(EmbeddingInputError, match="embeds at most 512 tokens"):
            m.embed(["x" * 700], truncate=False)
    finally:
        m.close()


def test_a_chat_with_an_embedding_model_is_one_clear_error(tmp_path):
    """The window's chat on an embedding model: no notices about its missing chat template or
    tools (noise for a model that cannot write), one reply that ends with the error saying what
    it is."""
    from app.engine.chat import ChatSession
    from app.engine.events import DoneEvent, NoticeEvent
    from app.engine.models.tiny import write_tiny_bert_gguf

    m = _model(write_tiny_bert_gguf(tmp_path / "bert.gguf"), isolate=True)
    try:
        assert m.generates is False
        events = list(ChatSession(m).send("hi"))
        assert not [e for e in events if isinstance(e, NoticeEvent)]
        (done,) = [e for e in events if isinstance(e, DoneEvent)]
        assert done.finish_reason == "error" and "tiny-bert is an embedding model" in done.error
    finally:
        m.close()


# -- a reranker (rank pooling) --------------------------------------------------------------------


def _reranker(tmp_path, **kw):
    from app.engine.models.tiny import write_tiny_bert_gguf

    return write_tiny_bert_gguf(tmp_path / "reranker.gguf", pooling=4, classifier=True, **kw)


def test_a_reranker_scores_each_document_alone(tmp_path):
    m = _model(_reranker(tmp_path), isolate=True)
    try:
        docs = ["the cat", "the quick brown fox", "dog"]
        out = m.rerank("hello", docs)
        assert len(out.scores) == 3 and len(set(out.scores)) == 3
        # [CLS] the query [SEP] the document: llama.cpp's pair for a BERT vocabulary
        words = {d: len(m.tokenize_text(d, special=False)) for d in [*docs, "hello"]}
        assert out.tokens == [1 + words["hello"] + 1 + words[d] for d in docs]
        assert m.rerank("hello", ["the quick brown fox"]).scores == [out.scores[1]]  # alone, the same
        assert m.rerank("cat", ["the cat"]).scores != [out.scores[0]]  # the query counts
        with pytest.raises(EmbeddingModelError, match="is a reranking model: it scores texts"):
            m.embed(["hello"])
        with pytest.raises(EmbeddingInputError, match=r"input\[1\] is empty"):
            m.rerank("hello", ["the cat", ""])
        long = m.rerank("hello", ["the " * 400])  # past the context: the document's end is cut
        assert long.tokens == [m.n_ctx] and long.truncated == [True]
    finally:
        m.close()


def test_an_embedding_model_is_not_a_reranker(tiny_gguf):
    m = _model(tiny_gguf(), isolate=False)
    try:
        with pytest.raises(EmbeddingModelError, match="is not a reranking model"):
            m.rerank("q", ["d"])
    finally:
        m.close()


def test_a_rerankers_own_prompt_is_used(tmp_path):
    """A reranker whose GGUF carries a rerank template (Qwen3-Reranker's) reads the query and the
    document through it, as llama.cpp does."""
    template = "[CLS] query {query} [SEP] doc {document} [SEP]"
    plain = _model(_reranker(tmp_path / "a"), isolate=False)
    templated = _model(_reranker(tmp_path / "b", rerank_template=template), isolate=False)
    try:
        out = templated.rerank("hello", ["the cat"])
        head = templated.tokenize_text("[CLS] query hello [SEP] doc ", special=True)
        doc = templated.tokenize_text("the cat", special=False)
        tail = templated.tokenize_text(" [SEP]", special=True)
        assert out.tokens == [len(head) + len(doc) + len(tail)]
        assert out.scores != plain.rerank("hello", ["the cat"]).scores
    finally:
        plain.close()
        templated.close()
