"""Token log probabilities through every API that has them: OpenAI's chat (``logprobs``,
``top_logprobs``, ``n`` choices) and completions (``logprobs: N``, several prompts), Ollama's
``/api/chat`` and ``/api/generate``, and llama-server's ``/completion`` (``n_probs``); plain and
streamed, with the official clients (openai, ollama) against a real server on a loopback port.

Two real GGUFs: a random-weight tiny model (a real distribution: every entry is compared with the
engine's own, ``app.engine.logprobs``, which ``tests/engine/test_logprobs.py`` checks against
llama-cpp-python), and a scripted thinker that reasons, answers and calls a tool (what is content,
reasoning and a call's markup is fixed, so which tokens each API shows is exact)."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from app.engine.generation import TokenOptions, generate
from app.engine.llm import load_model
from app.engine.models.tiny import write_tiny_gguf
from tests.server.test_idle_ttl import FakeClock, _server
from tests.support.thinker import QWEN3, TEMPLATES
from tests.ui.scripted_gguf import CHATML, write_scripted_gguf

GREEDY = {"temperature": 0}
TOL = 0.05  # the server batches in slots; the reference is a one-sequence decode
PROMPT = "hello there, general"
CALL = '<tool_call>\n{"name": "calculator", "arguments": {"expression": "6 * 7"}}\n</tool_call>'
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "calculator",
            "description": "Work out an arithmetic expression",
            "parameters": {
                "type": "object",
                "properties": {"expression": {"type": "string"}},
                "required": ["expression"],
            },
        },
    }
]
USER = [{"role": "user", "content": "Hi"}]


@pytest.fixture(scope="module")
def paths(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("logprobs")
    return {
        "tiny": write_tiny_gguf(
            folder / "tiny.gguf",
            chat_template=CHATML,
            control_tokens=["<s>", "</s>", "<|im_start|>", "<|im_end|>"],
            bos="<s>",
            eos="<|im_end|>",
            seed=5,
        ),
        # a model that puts a BOS before every prompt
        "tiny-bos": write_tiny_gguf(
            folder / "tiny-bos.gguf",
            bos="<s>",
            eos="</s>",
            seed=6,
            extra_metadata={"tokenizer.ggml.add_bos_token": True},
        ),
        # reasons ("x"), answers ("A"), then calls the calculator
        "caller": write_scripted_gguf(
            folder / "caller.gguf",
            chat_template=(TEMPLATES / QWEN3).read_text(encoding="utf-8"),
            control_tokens=("<|im_start|>", "<|im_end|>", "<|endoftext|>"),
            user_tokens=["<think>", "</think>\n\n", "x", "A", CALL],
            eos="<|im_end|>",
            script={
                "\n": "<think>",
                "<think>": "x",
                "x": "</think>\n\n",
                "</think>\n\n": "A",
                "A": CALL,
                CALL: "<|im_end|>",
            },
            default_next="<|im_end|>",
        ),
    }


@pytest.fixture(scope="module")
def server(paths) -> Iterator[object]:
    # no drafting: what is compared with the engine's own entries is computed in the same shapes
    yield from _server(paths, FakeClock(), parallel=2, ngram_draft=False)


@pytest.fixture(scope="module")
def engines(paths):
    """The tiny models loaded in this process (one sequence): the engine's own entries."""
    models = {
        name: load_model(paths[name], n_ctx=2048, n_threads=1, isolate=False, ngram_draft=False)
        for name in ("tiny", "tiny-bos")
    }
    yield models
    for m in models.values():
        m.close()


@pytest.fixture(scope="module")
def reference(engines):
    """The engine's entries for a raw prompt on the tiny model."""
    cache: dict[tuple[str, int, int], list] = {}

    def entries(prompt: str, max_tokens: int, top: int) -> list:
        key = (prompt, max_tokens, top)
        if key not in cache:
            res = generate(
                engines["tiny"],
                prompt,
                max_tokens=max_tokens,
                sampling=GREEDY,
                stop=(),
                options=TokenOptions(logprobs=top),
            ).run()
            cache[key] = res.logprobs
        return cache[key]

    return entries


@pytest.fixture(scope="module")
def openai_client(server):
    from openai import OpenAI

    return OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60)


@pytest.fixture(scope="module")
def ollama_client(server):
    import ollama

    return ollama.Client(host=server.url, timeout=60)


def _raw(token: str) -> bytes:
    """A token's bytes from its text (``bytes:\\xNN`` for part of a character)."""
    if token.startswith("bytes:"):
        return bytes(int(h, 16) for h in token[len("bytes:") :].split("\\x")[1:])
    return token.encode()


def _joined(tokens: list[str]) -> str:
    """The text of ``tokens`` (a random model writes bytes that are not whole characters)."""
    return b"".join(_raw(t) for t in tokens).decode("utf-8", errors="replace")


def _same(got_logprobs: list[float], ref: list) -> None:
    assert len(got_logprobs) == len(ref)
    for lp, e in zip(got_logprobs, ref, strict=True):
        assert math.isclose(lp, e.logprob, abs_tol=TOL)


def _well_formed(content, top: int) -> None:
    """OpenAI chat entries: each has ``top`` alternatives, most likely first, the greedy token the
    first of them, and bytes that are its text's."""
    for e in content:
        assert e.logprob <= 0 and bytes(e.bytes) == _raw(e.token)
        assert len(e.top_logprobs) == top
        lps = [t.logprob for t in e.top_logprobs]
        assert lps == sorted(lps, reverse=True)
        if top:
            assert e.top_logprobs[0].token == e.token and math.isclose(e.top_logprobs[0].logprob, e.logprob)


# -- OpenAI --------------------------------------------------------------------------------------


def test_completions_give_each_token_its_log_probability_plain_and_streamed(openai_client, reference):
    ref = reference(PROMPT, 12, 3)
    r = openai_client.completions.create(
        model="tiny", prompt=PROMPT, max_tokens=12, temperature=0, logprobs=3
    )
    lp = r.choices[0].logprobs
    assert _joined(lp.tokens) == r.choices[0].text and lp.tokens == [e.text for e in ref]
    _same(lp.token_logprobs, ref)
    assert [len(t) for t in lp.top_logprobs] == [3] * 12
    offsets = lp.text_offset
    assert offsets[0] == 0 and offsets == sorted(offsets) and offsets[-1] < len(r.choices[0].text)
    # streamed: each chunk has the entries of its text; together they are the plain reply's
    tokens, logprobs, offsets = [], [], []
    for chunk in openai_client.completions.create(
        model="tiny", prompt=PROMPT, max_tokens=12, temperature=0, logprobs=3, stream=True
    ):
        c = chunk.choices[0]
        if c.logprobs is not None:
            tokens += c.logprobs.tokens
            logprobs += c.logprobs.token_logprobs
            offsets += c.logprobs.text_offset
    assert tokens == lp.tokens and offsets == lp.text_offset
    assert logprobs == pytest.approx(lp.token_logprobs, abs=TOL)  # (the prompt's KV is reused)


def test_completions_of_several_prompts_each_have_their_own(openai_client, reference):
    prompts = [PROMPT, "a b c d"]
    r = openai_client.completions.create(
        model="tiny", prompt=prompts, max_tokens=8, temperature=0, logprobs=1
    )
    for choice, prompt in zip(r.choices, prompts, strict=True):
        ref = reference(prompt, 8, 1)
        assert choice.logprobs.tokens == [e.text for e in ref]
        _same(choice.logprobs.token_logprobs, ref)


def test_chat_logprobs_plain_streamed_and_for_each_choice(openai_client):
    kw = dict(model="tiny", messages=USER, max_tokens=10, temperature=0, logprobs=True, top_logprobs=4)
    r = openai_client.chat.completions.create(**kw)
    content = r.choices[0].logprobs.content
    assert _joined([e.token for e in content]) == r.choices[0].message.content and len(content) == 10
    _well_formed(content, 4)
    streamed = []
    for chunk in openai_client.chat.completions.create(**kw, stream=True):
        c = chunk.choices[0] if chunk.choices else None
        if c is not None and c.logprobs is not None:
            streamed += c.logprobs.content
    assert [e.token for e in streamed] == [e.token for e in content]
    assert [e.logprob for e in streamed] == pytest.approx([e.logprob for e in content], abs=TOL)
    # n choices (batched in the server's slots): each its own, the same as one alone
    many = openai_client.chat.completions.create(**kw, n=2)
    for choice in many.choices:
        got = choice.logprobs.content
        assert [e.token for e in got] == [e.token for e in content]
        assert [e.logprob for e in got] == pytest.approx([e.logprob for e in content], abs=TOL)
    # without top_logprobs: the tokens alone; without logprobs: none (greedy, as above: the random
    # model's sampled reply may end at any token, its greedy one is the reply above)
    bare = openai_client.chat.completions.create(
        model="tiny", messages=USER, max_tokens=4, temperature=0, logprobs=True
    )
    got = bare.choices[0].logprobs.content
    assert [e.token for e in got] == [e.token for e in content[:4]]
    assert all(e.top_logprobs == [] for e in got)
    off = openai_client.chat.completions.create(model="tiny", messages=USER, max_tokens=4, temperature=0)
    assert off.choices[0].logprobs is None and off.choices[0].message.content


def test_chat_logprobs_are_the_contents_not_the_reasoning_or_the_calls_markup(openai_client):
    kw = dict(
        model="caller",
        messages=USER,
        tools=TOOLS,
        max_tokens=20,
        temperature=0,
        logprobs=True,
        top_logprobs=2,
    )
    r = openai_client.chat.completions.create(**kw)
    msg = r.choices[0].message
    assert msg.content.strip() == "A" and msg.tool_calls[0].function.name == "calculator"
    assert (msg.model_extra or {}).get("reasoning_content") == "x"
    content = r.choices[0].logprobs.content
    # the token that closed the reasoning also wrote the content's first characters; not "x", not the call
    assert [e.token for e in content] == ["</think>\n\n", "A"]
    assert all(e.logprob > -0.5 for e in content)  # the script's token: what the model is all but sure of
    _well_formed(content, 2)
    streamed = [
        e
        for chunk in openai_client.chat.completions.create(**kw, stream=True)
        if chunk.choices and chunk.choices[0].logprobs is not None
        for e in chunk.choices[0].logprobs.content
    ]
    assert [e.token for e in streamed] == ["</think>\n\n", "A"]


def test_echo_with_logprobs_scores_the_prompt_as_an_eval_harness_asks(openai_client, engines):
    """``echo`` with ``logprobs`` and ``max_tokens`` 0: the prompt's tokens and their log
    probabilities (the first none), the engine's own; with a BOS the model adds, it comes first and
    writes none of the echoed text."""
    for name in ("tiny", "tiny-bos"):
        m = engines[name]
        ids = m.tokenize(PROMPT)
        ref = (
            generate(m, PROMPT, max_tokens=0, stop=(), options=TokenOptions(logprobs=2, prompt_logprobs=True))
            .run()
            .prompt_logprobs
        )
        r = openai_client.completions.create(model=name, prompt=PROMPT, max_tokens=0, echo=True, logprobs=2)
        c = r.choices[0]
        assert c.text == PROMPT and r.usage.completion_tokens == 0
        lp = c.logprobs
        assert lp.tokens == [e.text for e in ref] and len(lp.tokens) == len(ids)
        assert lp.token_logprobs[0] is None and lp.top_logprobs[0] is None
        _same(lp.token_logprobs[1:], ref[1:])
        assert all(len(t) == 2 for t in lp.top_logprobs[1:])
        bos = name == "tiny-bos"
        assert (lp.tokens[0] == "<s>") == bos
        assert lp.text_offset[0] == 0 and lp.text_offset[1] == (0 if bos else len(lp.tokens[0]))


def test_token_id_prompts_are_read_as_sent_and_echoed_as_their_text(openai_client, engines, reference):
    """lm-eval-harness sends token ids, several prompts at once, one token to generate, echo and
    logprobs: each choice's token_logprobs are its prompt's, then the reply's token."""
    m = engines["tiny"]
    texts = [PROMPT, "a b c d"]
    ids = [m.tokenize(t) for t in texts]
    r = openai_client.completions.create(
        model="tiny", prompt=ids, max_tokens=1, temperature=0, echo=True, logprobs=1
    )
    for choice, prompt_ids, text in zip(r.choices, ids, texts, strict=True):
        lp = choice.logprobs
        assert len(lp.token_logprobs) == len(prompt_ids) + 1 and lp.token_logprobs[0] is None
        assert choice.text.startswith(text) and lp.tokens[-1] == reference(text, 1, 0)[0].text
        want = generate(
            m, prompt_ids, max_tokens=0, stop=(), options=TokenOptions(logprobs=1, prompt_logprobs=True)
        ).run()
        _same(lp.token_logprobs[1:-1], want.prompt_logprobs[1:])
    # one token-id prompt, no echo: the reply to the same tokens as the text's
    one = openai_client.completions.create(model="tiny", prompt=ids[0], max_tokens=6, temperature=0)
    same = openai_client.completions.create(model="tiny", prompt=PROMPT, max_tokens=6, temperature=0)
    assert one.choices[0].text == same.choices[0].text
    # echo of token ids, streamed: the prompt's text first
    chunks = list(
        openai_client.completions.create(model="tiny", prompt=ids[1], max_tokens=3, echo=True, stream=True)
    )
    assert chunks[0].choices[0].text == texts[1]


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"prompt": [5, 1_000_000]}, "prompt"),
        ({"prompt": [5, 1_000_000], "echo": True}, "prompt"),  # (echoed before it is generated)
        ({"prompt": [-1]}, "prompt"),
        ({"prompt": []}, "prompt"),
        ({"prompt": [[]]}, "prompt"),
        ({"prompt": [[1, 2], "text"], "max_tokens": 1}, None),  # a text beside token ids is fine
        ({"prompt": [1, "a"]}, "prompt"),
        ({"prompt": {"ids": [1]}}, "prompt"),
        ({"prompt": "hi", "max_tokens": 0}, "max_tokens"),
        ({"prompt": "hi", "best_of": 3}, "best_of"),
        ({"prompt": [1, 2], "suffix": "x"}, "suffix"),
        ({"prompt": "hi", "echo": True, "logprobs": 1, "stream": True}, "stream"),
    ],
)
def test_completion_prompts_that_cannot_be_read_are_a_400(server, body, param):
    r = httpx.post(
        server.url + "/v1/completions", json={"model": "tiny", "max_tokens": 2, **body}, timeout=60
    )
    if param is None:
        assert r.status_code == 200, r.text
        return
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == param


@pytest.mark.parametrize(
    ("path", "extra", "param"),
    [
        ("/v1/chat/completions", {"top_logprobs": 2}, "top_logprobs"),
        ("/v1/chat/completions", {"logprobs": True, "top_logprobs": 21}, "top_logprobs"),
        ("/v1/chat/completions", {"logprobs": "yes"}, "logprobs"),
        ("/v1/completions", {"logprobs": 21}, "logprobs"),
    ],
)
def test_what_cannot_be_given_is_a_400_that_names_its_field(server, path, extra, param):
    body = {"model": "tiny", "max_tokens": 2, **extra}
    body.update({"messages": USER} if "chat" in path else {"prompt": PROMPT})
    r = httpx.post(server.url + path, json=body, timeout=60)
    assert r.status_code == 400, r.text
    assert r.json()["error"]["param"] == param


# -- Ollama --------------------------------------------------------------------------------------


def test_ollama_chat_and_generate_give_logprobs_plain_and_streamed(ollama_client, reference):
    r = ollama_client.chat(
        model="tiny",
        messages=USER,
        options={"num_predict": 8, "temperature": 0},
        logprobs=True,
        top_logprobs=2,
    )
    assert _joined([e.token for e in r.logprobs]) == r.message.content and len(r.logprobs) == 8
    assert all(len(e.top_logprobs) == 2 and e.top_logprobs[0].token == e.token for e in r.logprobs)
    streamed = [
        e
        for part in ollama_client.chat(
            model="tiny",
            messages=USER,
            options={"num_predict": 8, "temperature": 0},
            logprobs=True,
            top_logprobs=2,
            stream=True,
        )
        for e in part.logprobs or []
    ]
    assert [e.token for e in streamed] == [e.token for e in r.logprobs]
    assert [e.logprob for e in streamed] == pytest.approx([e.logprob for e in r.logprobs], abs=TOL)
    # a raw prompt: the engine's entries
    ref = reference(PROMPT, 8, 0)
    g = ollama_client.generate(
        model="tiny", prompt=PROMPT, raw=True, options={"num_predict": 8, "temperature": 0}, logprobs=True
    )
    assert [e.token for e in g.logprobs] == [e.text for e in ref]
    assert _joined([e.token for e in g.logprobs]) == g.response
    _same([e.logprob for e in g.logprobs], ref)
    assert all(not e.top_logprobs for e in g.logprobs)
    plain = ollama_client.generate(model="tiny", prompt=PROMPT, raw=True, options={"num_predict": 4})
    assert plain.logprobs is None


def test_ollama_shows_the_thinking_and_contents_tokens_not_the_markup(ollama_client):
    r = ollama_client.chat(
        model="caller",
        messages=USER,
        tools=TOOLS,
        options={"num_predict": 20, "temperature": 0},
        logprobs=True,
    )
    assert r.message.thinking == "x" and r.message.content.strip() == "A" and r.message.tool_calls
    assert [e.token for e in r.logprobs] == ["x", "</think>\n\n", "A"]


# -- llama-server --------------------------------------------------------------------------------


def test_llama_server_completion_n_probs_plain_and_streamed(server, reference):
    ref = reference(PROMPT, 10, 3)
    body = {"model": "tiny", "prompt": PROMPT, "n_predict": 10, "temperature": 0, "n_probs": 3}
    r = httpx.post(server.url + "/completion", json=body, timeout=60)
    assert r.status_code == 200, r.text
    probs = r.json()["completion_probabilities"]
    assert [p["id"] for p in probs] == [e.token for e in ref]
    assert b"".join(bytes(p["bytes"]) for p in probs).decode(errors="replace") == r.json()["content"]
    _same([p["logprob"] for p in probs], ref)
    assert all(len(p["top_logprobs"]) == 3 and p["top_logprobs"][0]["id"] == p["id"] for p in probs)
    streamed = []
    with httpx.stream("POST", server.url + "/completion", json={**body, "stream": True}, timeout=60) as s:
        for line in s.iter_lines():
            if line.startswith("data: "):
                data = json.loads(line[6:])
                got = data.get("completion_probabilities", [])
                streamed += got
    assert [p["id"] for p in streamed] == [p["id"] for p in probs]
    bad = httpx.post(server.url + "/completion", json={**body, "post_sampling_probs": True}, timeout=60)
    assert bad.status_code == 400 and "post_sampling_probs" in bad.text


# -- Responses -----------------------------------------------------------------------------------


def test_responses_give_the_texts_logprobs_plain_and_streamed(openai_client):
    kw = dict(
        model="tiny",
        input="Hi",
        max_output_tokens=8,
        temperature=0,
        include=["message.output_text.logprobs"],
        top_logprobs=2,
    )
    r = openai_client.responses.create(**kw)
    part = r.output[0].content[0]
    assert len(part.logprobs) == 8 and _joined([e.token for e in part.logprobs]) == part.text
    assert all(len(e.top_logprobs) == 2 and e.top_logprobs[0].token == e.token for e in part.logprobs)
    deltas, final = [], None
    for ev in openai_client.responses.create(**kw, stream=True):
        if ev.type == "response.output_text.delta":
            deltas += ev.logprobs
        elif ev.type == "response.incomplete":
            final = ev.response
    assert [e.token for e in deltas] == [e.token for e in part.logprobs]
    assert [e.logprob for e in deltas] == pytest.approx([e.logprob for e in part.logprobs], abs=TOL)
    assert [e.token for e in final.output[0].content[0].logprobs] == [e.token for e in deltas]
    plain = openai_client.responses.create(model="tiny", input="Hi", max_output_tokens=4)
    assert plain.output[0].content[0].logprobs == []


def test_responses_logprobs_are_the_messages_not_the_reasoning_or_the_call(openai_client):
    r = openai_client.responses.create(
        model="caller",
        input="Hi",
        tools=[{"type": "function", **t["function"]} for t in TOOLS],
        temperature=0,
        include=["message.output_text.logprobs"],
    )
    assert [o.type for o in r.output] == ["reasoning", "message", "function_call"]
    assert [e.token for e in r.output[1].content[0].logprobs] == ["</think>\n\n", "A"]


# -- logit_bias ----------------------------------------------------------------------------------


def test_logit_bias_raises_and_bans_tokens_on_openai_and_llama_server(openai_client, server, reference):
    x = ord("x")  # the tiny model's byte vocabulary: "x" is token 120
    r = openai_client.chat.completions.create(
        model="tiny", messages=USER, max_tokens=6, temperature=0, logit_bias={str(x): 100}, logprobs=True
    )
    assert r.choices[0].message.content == "x" * 6
    assert all(e.logprob < 0 for e in r.choices[0].logprobs.content)  # still the model's own
    first = reference(PROMPT, 8, 0)[0].token
    c = openai_client.completions.create(
        model="tiny", prompt=PROMPT, max_tokens=8, temperature=0, logit_bias={str(first): -100}
    )
    assert c.choices[0].text and not c.choices[0].text.startswith(reference(PROMPT, 8, 0)[0].text)
    body = {"model": "tiny", "prompt": PROMPT, "n_predict": 5, "temperature": 0, "logit_bias": [[x, 100]]}
    assert httpx.post(server.url + "/completion", json=body, timeout=60).json()["content"] == "x" * 5
    body["logit_bias"] = [[x, 100], [x, False]]  # the later entry wins: banned
    assert "x" not in httpx.post(server.url + "/completion", json=body, timeout=60).json()["content"]
