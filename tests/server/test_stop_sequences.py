"""Which stop string ended a reply: Anthropic's ``stop_reason: "stop_sequence"`` with the
``stop_sequence`` that ended it, llama-server's ``stop_type: "word"`` with its ``stopping_word``.
A model's own end (its end-of-turn token, or a stop string of the model's, not the request's) is
``end_turn`` / ``eos``. A real server on a free loopback port, a scripted GGUF that says a known
sentence, the official anthropic client and plain HTTP for llama-server's own endpoint."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from tests.server.conftest import FAMILIES
from tests.server.test_idle_ttl import FakeClock, _server
from tests.ui.scripted_gguf import CHATML, write_scripted_gguf

anthropic = pytest.importorskip("anthropic")

WORDS = ["Hello", " there", " friend", "."]


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[object]:
    model = write_scripted_gguf(
        tmp_path_factory.mktemp("stops") / "words.gguf",
        chat_template=CHATML,
        control_tokens=FAMILIES["hermes"].control,
        user_tokens=WORDS,
        script={"\n": WORDS[0], **dict(zip(WORDS, WORDS[1:], strict=False)), WORDS[-1]: "<|im_end|>"},
        default_next="<|im_end|>",
        name="words",
    )
    yield from _server({"words": model}, FakeClock())


def test_anthropic_names_the_stop_sequence_that_ended_the_reply(server):
    client = anthropic.Anthropic(base_url=server.url, api_key="x", max_retries=0, timeout=120)
    user = [{"role": "user", "content": "Hi"}]
    whole = client.messages.create(model="words", max_tokens=16, messages=user, stop_sequences=["nowhere"])
    assert whole.content[0].text == "Hello there friend."
    assert whole.stop_reason == "end_turn" and whole.stop_sequence is None

    cut = client.messages.create(
        model="words", max_tokens=16, messages=user, stop_sequences=["nowhere", " fri"]
    )
    assert cut.content[0].text == "Hello there"
    assert cut.stop_reason == "stop_sequence" and cut.stop_sequence == " fri"

    with client.messages.stream(
        model="words", max_tokens=16, messages=user, stop_sequences=[" fri"]
    ) as stream:
        assert "".join(stream.text_stream) == "Hello there"
        final = stream.get_final_message()
    assert final.stop_reason == "stop_sequence" and final.stop_sequence == " fri"


def test_llama_server_completion_says_its_stopping_word(server):
    url = server.url + "/completion"
    prompt = "<|im_start|>assistant\n"
    r = httpx.post(
        url, json={"model": "words", "prompt": prompt, "n_predict": 16, "stop": ["ere"]}, timeout=120
    )
    answer = r.json()
    assert (
        answer["content"] == "Hello th" and answer["stop_type"] == "word" and answer["stopping_word"] == "ere"
    )

    r = httpx.post(url, json={"model": "words", "prompt": prompt, "n_predict": 16}, timeout=120)
    assert r.json()["stop_type"] == "eos" and r.json()["stopping_word"] == ""

    body = {"model": "words", "prompt": prompt, "n_predict": 16, "stop": ["ere"], "stream": True}
    with httpx.stream("POST", url, json=body, timeout=120) as s:
        lines = [json.loads(x[5:]) for x in s.iter_lines() if x.startswith("data:")]
    assert "".join(x["content"] for x in lines) == "Hello th"
    assert lines[-1]["stop"] and lines[-1]["stop_type"] == "word" and lines[-1]["stopping_word"] == "ere"
