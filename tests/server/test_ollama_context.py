"""Ollama's ``context`` on ``/api/generate`` (``app.server._ollama``): the older way to go on with a
conversation. A reply's last answer carries the token ids of its prompt and its reply; a request
that sends them back is read as those ids, then what the model's template writes after a reply.
A real server on a free loopback port, scripted GGUFs (ChatML: after the generation prompt's
``\\n`` the model answers one known token), the official ollama client; the ids are read back
through the server's own ``/detokenize``."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.server.test_idle_ttl import FakeClock, _server
from tests.server.test_metrics import _metrics
from tests.ui.scripted_gguf import CHATML, write_scripted_gguf

ollama = pytest.importorskip("ollama")

ANSWER = "Noted."
# a template that never writes an assistant message: nothing can come after a reply
FORGETFUL = (
    "{%- for m in messages -%}{%- if m['role'] != 'assistant' -%}"
    "{{ '<|im_start|>' + m['role'] + '\\n' + m['content'] + '<|im_end|>\\n' }}"
    "{%- endif -%}{%- endfor -%}"
    "{%- if add_generation_prompt -%}{{ '<|im_start|>assistant\\n' }}{%- endif -%}"
)


def _turn(role: str, text: str) -> str:
    return f"<|im_start|>{role}\n{text}<|im_end|>\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[object]:
    folder = tmp_path_factory.mktemp("context")
    models: dict[str, Path] = {}
    for name, template in (("notes", CHATML), ("forgetful", FORGETFUL)):
        models[name] = write_scripted_gguf(
            folder / f"{name}.gguf",
            chat_template=template,
            script={"\n": ANSWER, ANSWER: "<|im_end|>"},
            default_next="a",
            user_tokens=[ANSWER],
            name=name,
        )
    yield from _server(models, FakeClock())


@pytest.fixture(scope="module")
def client(server):
    return ollama.Client(host=server.url, timeout=120)


def _text(server, ids: list[int]) -> str:
    r = httpx.post(server.url + "/detokenize", json={"model": "notes", "tokens": ids}, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()["content"]


def test_a_reply_carries_its_context_and_the_next_request_continues_it(server, client):
    first = client.generate(model="notes", prompt="Hi", stream=False)
    assert first.response == ANSWER and first.done
    said = _turn("user", "Hi") + "<|im_start|>assistant\n" + ANSWER
    assert _text(server, list(first.context)) == said  # the prompt, and the reply without its end

    before = _metrics(server)
    second = client.generate(model="notes", prompt="And now?", context=first.context, stream=False)
    after = _metrics(server)
    assert second.response == ANSWER
    # the reply's turn is closed, the new prompt written as the template writes one
    whole = said + "<|im_end|>\n" + _turn("user", "And now?") + "<|im_start|>assistant\n" + ANSWER
    assert _text(server, list(second.context)) == whole
    assert list(second.context[: len(first.context)]) == list(first.context)
    # the ids the engine read and wrote are the ids sent back: the KV cache holds them
    assert (
        after["prompt_tokens_cached_total"] - before["prompt_tokens_cached_total"] >= len(first.context) - 1
    )

    # streamed, the last line carries it; the others do not
    lines = list(client.generate(model="notes", prompt="And now?", context=first.context, stream=True))
    assert [x.context is not None for x in lines] == [False] * (len(lines) - 1) + [True]
    assert list(lines[-1].context) == list(second.context)


def test_the_system_prompt_sent_with_a_context_is_the_conversations(server, client):
    first = client.generate(model="notes", prompt="Hi", system="Be brief.", stream=False)
    assert _text(server, list(first.context)).startswith(_turn("system", "Be brief.") + _turn("user", "Hi"))
    second = client.generate(
        model="notes", prompt="More?", system="Be brief.", context=first.context, stream=False
    )
    text = _text(server, list(second.context))
    assert text.count("Be brief.") == 1 and text.endswith(
        _turn("user", "More?") + "<|im_start|>assistant\n" + ANSWER
    )


def test_what_carries_no_context_and_what_cannot_take_one(server, client):
    r = httpx.post(
        server.url + "/api/generate",
        json={"model": "notes", "prompt": "<|im_start|>assistant\n", "raw": True, "stream": False},
        timeout=60,
    )
    assert r.status_code == 200 and r.json()["response"] == ANSWER and "context" not in r.json()

    ctx = client.generate(model="notes", prompt="Hi", stream=False).context
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n").decode()
    cases = [
        ({"prompt": "x", "context": "1 2 3"}, "context"),
        ({"prompt": "x", "context": [1, "2"]}, "context"),
        ({"prompt": "x", "context": [1, True]}, "context"),
        ({"prompt": "x", "context": [3, -1]}, "context"),
        ({"prompt": "x", "context": [3, 10**9]}, "context"),  # past the vocabulary: the engine's check
        ({"prompt": "x", "context": ctx, "raw": True}, "context"),
        ({"prompt": "x", "context": ctx, "suffix": "y"}, "context"),
        ({"prompt": "x", "context": ctx, "images": [png]}, "images"),
    ]
    for extra, named in cases:
        for stream in (False, True):
            r = httpx.post(
                server.url + "/api/generate", json={"model": "notes", "stream": stream, **extra}, timeout=60
            )
            assert r.status_code == 400, (extra, r.text)
            assert named in r.json()["error"], (extra, r.text)
    # an empty context is none
    fresh = client.generate(model="notes", prompt="Hi", context=[], stream=False)
    assert list(fresh.context) == list(ctx)
    # the model answers the next request
    assert client.generate(model="notes", prompt="Hi", stream=False).response == ANSWER


def test_a_template_that_never_writes_a_reply_cannot_continue_one(server, client):
    first = client.generate(model="forgetful", prompt="Hi", stream=False)
    assert first.response == ANSWER and first.context
    with pytest.raises(ollama.ResponseError) as err:
        client.generate(model="forgetful", prompt="And now?", context=first.context, stream=False)
    assert err.value.status_code == 400 and "context" in str(err.value) and "/api/chat" in str(err.value)
