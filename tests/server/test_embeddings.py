"""Embeddings on the server: OpenAI's ``/v1/embeddings`` (through the official openai SDK, which
asks for base64), Ollama's ``/api/embed`` and ``/api/embeddings`` (through the ollama client). A
real server on a free loopback port, real engine processes, tiny random-weight GGUFs: a chat
model (no pooling of its own: the mean), an embedding model (CLS pooling) and a reranker."""

from __future__ import annotations

import contextlib
import math
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.engine.models.tiny import write_tiny_bert_gguf, write_tiny_gguf
from tests.server.test_idle_ttl import FakeClock, _server

N_EMBD = 64
N_CTX = 512


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[object]:
    folder = tmp_path_factory.mktemp("embeddings")
    models: dict[str, Path] = {
        "chat": write_tiny_gguf(folder / "chat.gguf", seed=1),
        "embedder": write_tiny_gguf(
            folder / "embedder.gguf", seed=2, extra_metadata={"llama.pooling_type": 2}
        ),
        "reranker": write_tiny_gguf(
            folder / "reranker.gguf", seed=3, extra_metadata={"llama.pooling_type": 4}
        ),
        "bert": write_tiny_bert_gguf(folder / "bert.gguf", pooling=1),
        "ranker": write_tiny_bert_gguf(folder / "ranker.gguf", pooling=4, classifier=True, seed=5),
    }
    yield from _server(models, FakeClock(), n_ctx=N_CTX)


def _openai(server):
    from openai import OpenAI

    return OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=120)


def _post(server, path: str, **body) -> httpx.Response:
    return httpx.post(server.url + path, json=body, timeout=120)


def _norm(v) -> float:
    return math.sqrt(math.fsum(x * x for x in v))


def test_openai_sdk_gets_unit_vectors_as_base64_and_as_floats(server):
    client = _openai(server)
    texts = ["hello there", "the quick brown fox"]
    packed = client.embeddings.create(model="embedder", input=texts)  # the SDK asks for base64
    plain = client.embeddings.create(model="embedder", input=texts, encoding_format="float")
    assert [d.index for d in plain.data] == [0, 1] and plain.model == "embedder"
    for a, b in zip(packed.data, plain.data, strict=True):
        assert len(a.embedding) == len(b.embedding) == N_EMBD
        assert math.isclose(_norm(b.embedding), 1.0, rel_tol=1e-9)
        assert a.embedding == pytest.approx(b.embedding, abs=1e-6)  # float32 on the wire
    assert plain.data[0].embedding != plain.data[1].embedding
    n = sum(len(t.encode()) for t in texts)  # a byte vocabulary without a BOS
    assert plain.usage.prompt_tokens == plain.usage.total_tokens == n
    # one string, and the same text as token ids, give the same vector
    one = client.embeddings.create(model="embedder", input=texts[0], encoding_format="float")
    ids = client.embeddings.create(model="embedder", input=list(texts[0].encode()), encoding_format="float")
    assert one.data[0].embedding == plain.data[0].embedding == ids.data[0].embedding


def test_a_long_request_is_embedded_in_parts_and_each_vector_is_its_texts(server):
    client = _openai(server)
    texts = [f"text number {i}" for i in range(40)]  # more than one engine call's worth
    many = client.embeddings.create(model="chat", input=texts, encoding_format="float")
    assert [d.index for d in many.data] == list(range(40))
    alone = client.embeddings.create(model="chat", input=texts[33], encoding_format="float")
    assert many.data[33].embedding == alone.data[0].embedding


def test_dimensions_shortens_and_normalizes_again(server):
    client = _openai(server)
    full = (
        client.embeddings.create(model="embedder", input="hello", encoding_format="float").data[0].embedding
    )
    short = client.embeddings.create(model="embedder", input="hello", dimensions=16, encoding_format="float")
    vec = short.data[0].embedding
    assert len(vec) == 16 and math.isclose(_norm(vec), 1.0, rel_tol=1e-9)
    head = full[:16]
    assert vec == pytest.approx([x / _norm(head) for x in head], abs=1e-9)


def test_ollama_embed_matches_openai_and_truncates_unless_told_not_to(server):
    import ollama

    client = ollama.Client(host=server.url, timeout=120)
    out = client.embed(model="embedder", input=["hello there", "zz"])
    assert len(out.embeddings) == 2 and out.prompt_eval_count == len("hello there") + 2
    openai_vec = _openai(server).embeddings.create(
        model="embedder", input="hello there", encoding_format="float"
    )
    assert out.embeddings[0] == pytest.approx(openai_vec.data[0].embedding, abs=1e-12)
    # longer than the context: cut to it by default (Ollama's truncate), refused with false
    long = "y" * (N_CTX + 100)
    cut = client.embed(model="embedder", input=long)
    assert cut.prompt_eval_count == N_CTX and len(cut.embeddings[0]) == N_EMBD
    with pytest.raises(ollama.ResponseError) as e:
        client.embed(model="embedder", input=long, truncate=False)
    assert e.value.status_code == 400
    assert f"input is {N_CTX + 100} tokens long; the model embeds at most {N_CTX} tokens" in str(e.value)
    r = _post(server, "/v1/embeddings", model="embedder", input=long)
    assert r.status_code == 400 and r.json()["error"]["code"] == "invalid_input"


def test_ollama_older_embeddings_endpoint_gives_the_models_own_vector(server):
    import ollama

    client = ollama.Client(host=server.url, timeout=120)
    raw = client.embeddings(model="chat", prompt="hello there").embedding
    unit = client.embed(model="chat", input="hello there").embeddings[0]
    assert len(raw) == N_EMBD and not math.isclose(_norm(raw), 1.0)  # not normalized, as Ollama's
    assert [x / _norm(raw) for x in raw] == pytest.approx(unit, abs=1e-6)


def test_ollama_embed_says_how_long_loading_its_model_took(server):
    import ollama

    client = ollama.Client(host=server.url, timeout=120)
    _post(server, "/api/generate", model="embedder", keep_alive=0)  # Ollama's unload
    first = client.embed(model="embedder", input="hello")
    assert first.load_duration > 0 and first.total_duration >= first.load_duration
    assert client.embed(model="embedder", input="hello").load_duration == 0  # loaded already


def _running(server) -> set[str]:
    return {m["name"] for m in httpx.get(server.url + "/api/ps", timeout=30).json()["models"]}


def test_no_input_loads_the_model(server):
    for path, body in (("/api/embed", {}), ("/api/embeddings", {"prompt": ""})):
        _post(server, "/api/generate", model="chat", keep_alive=0)  # Ollama's unload
        assert "chat" not in _running(server)
        r = _post(server, path, model="chat", **body)
        assert r.status_code == 200, r.text
        assert r.json() == ({"embedding": []} if body else {**r.json(), "model": "chat", "embeddings": []})
        assert "chat" in _running(server)


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"input": ""}, "input is empty: there is no text to embed"),
        ({"input": []}, "input is empty"),
        ({"input": ["ok", ""]}, "input[1] is empty"),
        ({"input": ["ok", []]}, "input[1] is an empty list of tokens"),
        ({"input": {"text": "a"}}, "input must be a string, an array of strings, or token ids, got object"),
        ({"input": ["a", 3]}, "input[1] must be a string or an array of token ids, got number"),
        ({"input": [[1, 2, 10**6]]}, "token id 1000000, outside the model's vocabulary"),
        ({"input": "a", "encoding_format": "int8"}, "encoding_format must be 'float' or 'base64'"),
        ({"input": "a", "dimensions": 0}, "dimensions"),
        ({"input": "a", "dimensions": N_EMBD + 1}, f"the model's embeddings have {N_EMBD}"),
        ({"input": ["a"] * 2049}, "at most 2048 are embedded at once"),
    ],
)
def test_openai_inputs_it_cannot_embed_are_400s_that_say_why(server, body, words):
    r = _post(server, "/v1/embeddings", model="chat", **body)
    assert r.status_code == 400, r.text
    assert words in r.json()["error"]["message"]


def test_an_embedding_model_embeds_is_listed_so_and_refuses_a_chat(server):
    import ollama

    client = ollama.Client(host=server.url, timeout=120)
    out = client.embed(model="bert", input=["hello there", "cat"])
    assert len(out.embeddings[0]) == 32 and out.prompt_eval_count == 4 + 3  # [CLS] … [SEP] each
    assert client.show("bert").capabilities == ["embedding"]
    assert "completion" in client.show("chat").capabilities
    r = _post(server, "/api/chat", model="bert", messages=[{"role": "user", "content": "hi"}], stream=False)
    assert r.status_code == 400 and "bert is an embedding model" in r.json()["error"], r.text
    r = _post(server, "/v1/chat/completions", model="bert", messages=[{"role": "user", "content": "hi"}])
    assert r.status_code == 400 and r.json()["error"]["code"] == "model_cannot_generate"


def test_rerank_orders_the_documents_by_the_models_scores(server):
    docs = ["the cat", "the quick brown fox", "dog", "hello there"]
    r = _post(server, "/v1/rerank", model="ranker", query="cat", documents=docs)
    assert r.status_code == 200, r.text
    data = r.json()
    scores = [x["relevance_score"] for x in data["results"]]
    assert scores == sorted(scores, reverse=True) and sorted(x["index"] for x in data["results"]) == [
        0,
        1,
        2,
        3,
    ]
    assert data["model"] == "ranker" and data["usage"]["prompt_tokens"] > 0
    # each document's score is its own: asked alone, the same
    for x in data["results"]:
        alone = _post(server, "/rerank", model="ranker", query="cat", documents=[docs[x["index"]]]).json()
        assert alone["results"][0]["relevance_score"] == x["relevance_score"]
    # Cohere's path and document objects, the best two, with their texts
    r = _post(
        server,
        "/v2/rerank",
        model="ranker",
        query="cat",
        documents=[{"text": d} for d in docs],
        top_n=2,
        return_documents=True,
    )
    best = r.json()["results"]
    assert [x["index"] for x in best] == [x["index"] for x in data["results"][:2]]
    assert [x["document"]["text"] for x in best] == [docs[x["index"]] for x in best]


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"model": "ranker", "query": "", "documents": ["a"]}, "query is empty"),
        ({"model": "ranker", "query": "a", "documents": []}, "documents must be a non-empty array"),
        (
            {"model": "ranker", "query": "a", "documents": ["a", 3]},
            "documents[1] must be a string or an object",
        ),
        ({"model": "ranker", "query": "a", "documents": ["a", ""]}, "documents[1] is empty"),
        ({"model": "ranker", "query": "a", "documents": ["a"], "top_n": 0}, "top_n"),
        ({"model": "chat", "query": "a", "documents": ["a"]}, "is not a reranking model"),
    ],
)
def test_rerank_requests_it_cannot_serve_are_400s(server, body, words):
    r = _post(server, "/v1/rerank", **body)
    assert r.status_code == 400, r.text
    assert words in r.json()["error"]["message"]


def test_a_reranker_and_an_unknown_model_say_so(server):
    r = _post(server, "/v1/embeddings", model="reranker", input="a")
    assert r.status_code == 400 and "is a reranking model" in r.json()["error"]["message"]
    assert "/v1/rerank" in r.json()["error"]["message"]
    assert r.json()["error"]["code"] == "model_cannot_embed"
    r = _post(server, "/api/embed", model="reranker", input="a")
    assert r.status_code == 400 and "reranking model" in r.json()["error"]
    r = _post(server, "/v1/embeddings", model="nope", input="a")
    assert r.status_code == 404 and "chat" in r.json()["error"]["message"]
    r = _post(server, "/api/embed", model="chat", input=["a", 1])
    assert r.status_code == 400 and r.json()["error"] == "input[1] must be a string, got number"


def test_embeddings_beside_a_streaming_reply_on_a_model_with_slots(tmp_path):
    """A model with slots: the embedding calls are answered between the slots' steps while a
    reply streams; both finish."""

    models = {"chat": write_tiny_gguf(tmp_path / "chat.gguf", seed=4)}
    with contextlib.contextmanager(_server)(models, FakeClock(), n_ctx=N_CTX, parallel=2) as srv:
        client = _openai(srv)
        alone = (
            client.embeddings.create(model="chat", input="hello", encoding_format="float").data[0].embedding
        )
        text: list[str] = []

        def chat() -> None:
            stream = client.chat.completions.create(
                model="chat",
                messages=[{"role": "user", "content": "hi"}],
                max_tokens=48,
                stream=True,
                temperature=0,
            )
            text.extend(c.choices[0].delta.content or "" for c in stream if c.choices)

        t = threading.Thread(target=chat)
        t.start()
        during = [
            client.embeddings.create(model="chat", input="hello", encoding_format="float") for _ in range(5)
        ]
        t.join(120)
        assert not t.is_alive() and "".join(text)
        assert all(d.data[0].embedding == alone for d in during)


# -- the package models --------------------------------------------------------------------------

PARAPHRASES = [
    ("The cat sat on the mat.", "A cat is sitting on a rug."),
    ("Stock markets fell sharply today.", "Share prices dropped on Wall Street."),
    ("How do I bake bread at home?", "A simple recipe for homemade bread."),
]


@pytest.mark.live
@pytest.mark.parametrize("which", ["smollm2_path", "gemma3_path"])
def test_a_real_models_vectors_put_each_text_nearest_its_paraphrase(request, which, tmp_path):
    """SmolLM2 (a chat model: mean pooling) and Gemma 3 270M through the openai SDK: each text's
    nearest other text is the one that says the same thing (a margin of 0.06 in cosine or more
    here, far above any rounding a CPU's kernels make)."""
    path = request.getfixturevalue(which)
    with contextlib.contextmanager(_server)({"m": path}, FakeClock(), n_ctx=N_CTX) as srv:
        texts = [t for pair in PARAPHRASES for t in pair]
        out = _openai(srv).embeddings.create(model=path.stem, input=texts)
    vecs = [d.embedding for d in out.data]
    assert all(math.isclose(_norm(v), 1.0, rel_tol=1e-5) for v in vecs)  # float32 over base64
    for i, v in enumerate(vecs):
        sims = [(sum(a * b for a, b in zip(v, w, strict=True)), j) for j, w in enumerate(vecs) if j != i]
        assert max(sims)[1] == i ^ 1, (texts[i], sorted(sims, reverse=True)[:2])
