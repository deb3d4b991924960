"""Fill in the middle: a completion's ``suffix`` (Ollama's ``/api/generate``, OpenAI's
``/v1/completions``), what a code editor asks for when the cursor has code after it. The prompt is
llama.cpp's (its server's ``/infill``): FIM-prefix, the text before, FIM-suffix, the text after,
FIM-middle, with the model's own FIM tokens. Real servers on free loopback ports, real engine
processes, scripted GGUFs: one with FIM tokens that answers "Z" after FIM-middle, one without."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.server.test_idle_ttl import FakeClock, _server
from tests.ui.scripted_gguf import CHATML, streaming_script, write_scripted_gguf

FIM = ("<|fim_prefix|>", "<|fim_suffix|>", "<|fim_middle|>")
PREFIX = "def area(r):\n    return "
SUFFIX = "\n\nprint(area(2))\n"


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[object]:
    folder = tmp_path_factory.mktemp("infill")
    coder = write_scripted_gguf(
        folder / "coder.gguf",
        chat_template=CHATML,
        script={FIM[2]: "Z", "Z": "<|im_end|>"},  # after FIM-middle: the middle, then the end
        default_next="a",
        control_tokens=("<|im_start|>", "<|im_end|>", *FIM),
    )
    chat = write_scripted_gguf(
        folder / "chat.gguf", chat_template=CHATML, script=streaming_script(), default_next="a"
    )
    models: dict[str, Path] = {"coder": coder, "chat": chat}
    yield from _server(models, FakeClock())


def _post(server, path: str, **body) -> httpx.Response:
    return httpx.post(server.url + path, json=body, timeout=120)


def test_ollama_generate_with_a_suffix_fills_in_the_middle(server):
    import ollama

    client = ollama.Client(host=server.url, timeout=120)
    reply = client.generate(model="coder", prompt=PREFIX, suffix=SUFFIX, stream=False)
    assert reply.response == "Z" and reply.done_reason == "stop"
    # FIM-prefix, the prefix's bytes, FIM-suffix, the suffix's bytes, FIM-middle (a byte vocabulary)
    assert reply.prompt_eval_count == 3 + len(PREFIX.encode()) + len(SUFFIX.encode())
    streamed = list(client.generate(model="coder", prompt=PREFIX, suffix=SUFFIX, stream=True))
    assert "".join(p.response for p in streamed) == "Z" and streamed[-1].done
    # the cursor at the start of the file: no prefix at all
    assert client.generate(model="coder", prompt="", suffix=SUFFIX, stream=False).response == "Z"


def test_a_special_tokens_text_in_the_code_stays_text(server):
    """Code that writes a FIM marker (a FIM tool's own source) is read as its characters: it
    cannot end the prefix early or move the middle (llama-server tokenizes it so too)."""
    prefix = f"MARK = '{FIM[2]}'\n"
    r = _post(server, "/api/generate", model="coder", prompt=prefix, suffix=FIM[1], stream=False)
    assert r.status_code == 200, r.text
    assert r.json()["prompt_eval_count"] == 3 + len(prefix.encode()) + len(FIM[1].encode())


def test_openai_completions_with_a_suffix_fill_in_the_middle(server):
    from openai import OpenAI

    client = OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0)
    done = client.completions.create(model="coder", prompt=PREFIX, suffix=SUFFIX, max_tokens=8)
    assert done.choices[0].text == "Z" and done.choices[0].finish_reason == "stop"
    assert done.usage.prompt_tokens == 3 + len(PREFIX.encode()) + len(SUFFIX.encode())
    chunks = list(client.completions.create(model="coder", prompt=PREFIX, suffix=SUFFIX, stream=True))
    assert "".join(c.choices[0].text for c in chunks if c.choices) == "Z"


def test_a_model_without_fim_tokens_says_so_and_bad_combinations_are_400(server):
    for path, body in (
        ("/api/generate", {"prompt": PREFIX, "suffix": SUFFIX, "stream": False}),
        ("/api/generate", {"prompt": PREFIX, "suffix": SUFFIX, "stream": True}),
        ("/v1/completions", {"prompt": PREFIX, "suffix": SUFFIX}),
    ):
        r = _post(server, path, model="chat", **body)
        assert r.status_code == 400 and "cannot fill in the middle" in r.text, (path, r.text)
    for path, body, word in (
        ("/api/generate", {"prompt": PREFIX, "suffix": SUFFIX, "raw": True}, "raw"),
        ("/api/generate", {"prompt": PREFIX, "suffix": SUFFIX, "format": "json"}, "format"),
        ("/api/generate", {"prompt": PREFIX, "raw": True, "format": "json"}, "format"),
        ("/v1/completions", {"prompt": PREFIX, "suffix": SUFFIX, "echo": True}, "echo"),
    ):
        r = _post(server, path, model="coder", stream=False, **body)
        assert r.status_code == 400 and word in r.text, (path, r.text)
    # an empty suffix is no suffix: the prompt is completed as it is (Ollama: through the template)
    r = _post(server, "/api/generate", model="chat", prompt="hi", suffix="", stream=False)
    assert r.status_code == 200, r.text
