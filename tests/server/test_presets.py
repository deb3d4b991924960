"""Models made over Ollama's API (``/api/create``, ``/api/copy``, ``/api/delete``) on a real server
with the official ollama client, and what every API does with one: its system prompt, messages,
template and parameters apply where a request sets nothing. The made models are kept in a file
that a new server reads.

The model is ``tests.support.thinker`` (Qwen3's template): it thinks ``x`` until stopped unless
its prompt ends in a closed reasoning block, when it answers ``A``. A prompt's token count (and
``/apply-template``'s text) shows what the model read."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.server.conftest import _start
from tests.support.thinker import ANSWER, write_thinker

BASE = "thinker"
HI = [{"role": "user", "content": "Hi"}]
#: a Jinja template that closes the reasoning block itself: the thinker then answers at once
NO_THINK = (
    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}"
    "{{ '<|im_start|>assistant\n<think>\n\n</think>\n\n' }}"
)


@pytest.fixture(scope="module")
def thinker(tmp_path_factory) -> Path:
    return write_thinker(tmp_path_factory.mktemp("presets") / "thinker.gguf")


def _serve(thinker: Path, presets: Path) -> Iterator[object]:
    from app.server import ServerConfig

    config = ServerConfig(
        port=0, models=[str(thinker)], use_library=False, n_ctx=2048, n_threads=1, presets_path=str(presets)
    )
    yield from _start(config)


@pytest.fixture(scope="module")
def presets_file(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("presets-file") / "presets.json"


@pytest.fixture(scope="module")
def server(thinker, presets_file) -> Iterator[object]:
    yield from _serve(thinker, presets_file)


@pytest.fixture(scope="module")
def ollama_client(server):
    import ollama

    return ollama.Client(host=server.url, timeout=60)


@pytest.fixture(scope="module")
def openai_client(server):
    from openai import OpenAI

    return OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60)


@pytest.fixture(scope="module")
def http(server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


def _prompt(http: httpx.Client, model: str, messages: list[dict]) -> str:
    r = http.post("/apply-template", json={"model": model, "messages": messages})
    assert r.status_code == 200, r.text
    return r.json()["prompt"]


def _system(http: httpx.Client, model: str) -> str:
    """``/api/show``'s ``system`` (the ollama client's ShowResponse leaves it out)."""
    r = http.post("/api/show", json={"model": model})
    assert r.status_code == 200, r.text
    return r.json()["system"]


def _names(ollama_client) -> set[str]:
    return {m.model for m in ollama_client.list().models}


def test_a_made_model_s_system_prompt_and_messages_reach_every_api(
    ollama_client, openai_client, http, server
):
    from anthropic import Anthropic

    greeting = [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi there."}]
    status = ollama_client.create(
        model="brief", from_=BASE, system="Be brief.", messages=greeting, stream=False
    )
    assert status.status == "success"
    whole = [{"role": "system", "content": "Be brief."}, *greeting, *HI]
    # the prompt is the base model's with the system prompt and the messages before the request's
    assert _prompt(http, "brief", HI) == _prompt(http, BASE, whole)
    # a request's own system prompt wins
    own = [{"role": "system", "content": "Be long."}, *HI]
    assert _prompt(http, "brief", own) == _prompt(http, BASE, [own[0], *greeting, *HI])

    expected = openai_client.chat.completions.create(
        model=BASE, messages=whole, max_tokens=2, reasoning_effort="none"
    ).usage.prompt_tokens
    made = openai_client.chat.completions.create(
        model="brief", messages=HI, max_tokens=2, reasoning_effort="none"
    )
    assert made.usage.prompt_tokens == expected and made.model == "brief"
    anthropic = Anthropic(base_url=server.url, api_key="unused", max_retries=0, timeout=60)
    counted = anthropic.messages.count_tokens(model="brief", messages=HI)
    direct = anthropic.messages.count_tokens(model=BASE, system="Be brief.", messages=[*greeting, *HI])
    assert counted.input_tokens == direct.input_tokens
    reply = ollama_client.chat(model="brief", messages=HI, think=False, options={"num_predict": 2})
    assert reply.prompt_eval_count == expected
    lm = http.post(
        "/api/v1/chat", json={"model": "brief", "input": "Hi", "reasoning": "off", "max_output_tokens": 2}
    )
    assert lm.json()["stats"]["input_tokens"] == expected
    response = openai_client.responses.create(
        model="brief", input="Hi", max_output_tokens=2, reasoning={"effort": "none"}
    )
    assert response.usage.input_tokens == expected


def test_a_made_model_s_template_and_parameters_apply(ollama_client, openai_client):
    ollama_client.create(
        model="quick",
        from_=BASE,
        template=NO_THINK,
        parameters={"num_predict": 3, "temperature": 0.0, "stop": ["never-said"]},
        stream=False,
    )
    # its template closes the reasoning block: the thinker answers
    answer = openai_client.chat.completions.create(model="quick", messages=HI)
    assert answer.choices[0].message.content == ANSWER
    # num_predict bounds a reply whose request sets no length; a request's own wins
    ollama_client.create(model="short", from_=BASE, parameters={"num_predict": 3}, stream=False)
    short = openai_client.chat.completions.create(model="short", messages=HI)
    assert short.usage.completion_tokens == 3 and short.choices[0].finish_reason == "length"
    longer = openai_client.chat.completions.create(model="short", messages=HI, max_tokens=5)
    assert longer.usage.completion_tokens == 5
    ollama_reply = ollama_client.chat(model="short", messages=HI)
    assert ollama_reply.eval_count == 3
    # a model made from a made model takes its settings and changes what it gives
    ollama_client.create(model="shorter", from_="short", parameters={"num_predict": 2}, stream=False)
    assert openai_client.chat.completions.create(model="shorter", messages=HI).usage.completion_tokens == 2
    ollama_client.create(model="quick-brief", from_="quick", system="Be brief.", stream=False)
    assert (
        openai_client.chat.completions.create(model="quick-brief", messages=HI).choices[0].message.content
        == ANSWER
    )


def test_show_tags_copy_and_delete(ollama_client, openai_client, http, thinker):
    ollama_client.create(
        model="shown:latest",
        from_=BASE,
        system="Be kind.",
        parameters={"temperature": 0.5, "stop": ["x", "y"]},
    )
    shown = ollama_client.show("shown")
    assert _system(http, "shown") == "Be kind." and shown.details.parent_model == BASE
    assert shown.modelfile.startswith(f"FROM {BASE}\n") and 'SYSTEM """Be kind."""' in shown.modelfile
    assert "temperature" in shown.parameters and shown.parameters.count("stop") == 2
    listed = {m.model: m for m in ollama_client.list().models}
    assert listed["shown"].details.parent_model == BASE and listed["shown"].digest != listed[BASE].digest
    assert "shown" in {m.id for m in openai_client.models.list().data}
    assert "shown" in {m["key"] for m in http.get("/api/v1/models").json()["models"]}

    assert ollama_client.copy("shown", "shown-copy").status == "success"
    assert _system(http, "shown-copy") == "Be kind."
    ollama_client.copy(BASE, "alias")  # a file's copy: a second name, nothing set
    assert _prompt(http, "alias", HI) == _prompt(http, BASE, HI)

    ollama_client.delete("shown-copy")
    ollama_client.delete("alias")
    names = _names(ollama_client)
    assert "shown-copy" not in names and "alias" not in names and {"shown", BASE} <= names
    assert thinker.is_file()  # deleting a made model never touches its base's file


def test_made_models_last_across_a_restart(thinker, presets_file, ollama_client):
    ollama_client.create(model="kept", from_=BASE, system="Remember me.", stream=False)
    kept = json.loads(presets_file.read_text(encoding="utf-8"))
    assert "kept" in {p["name"] for p in kept["presets"]}
    for again in _serve(thinker, presets_file):
        with httpx.Client(base_url=again.url, timeout=60) as http:
            assert _system(http, "kept") == "Remember me."


def test_a_made_model_deleted_elsewhere_is_gone_at_once(presets_file, thinker, openai_client, ollama_client):
    """The window's Models page (or another server) deletes from the same file: the next request
    no longer finds the model, with no listing in between."""
    import openai

    from app.server import Preset, PresetStore

    ollama_client.create(model="ephemeral", from_=BASE, stream=False)
    assert (
        openai_client.chat.completions.create(model="ephemeral", messages=HI, max_tokens=1).model
        == "ephemeral"
    )
    assert PresetStore(presets_file).delete("ephemeral")
    with pytest.raises(openai.NotFoundError):
        openai_client.chat.completions.create(model="ephemeral", messages=HI, max_tokens=1)
    # and one made elsewhere is found at once
    PresetStore(presets_file).put(Preset(name="elsewhere", base=str(thinker.resolve())))
    assert (
        openai_client.chat.completions.create(model="elsewhere", messages=HI, max_tokens=1).model
        == "elsewhere"
    )


def test_create_streams_its_steps(http):
    with http.stream("POST", "/api/create", json={"model": "streamed", "from": BASE}) as r:
        assert r.status_code == 200
        lines = [json.loads(line) for line in r.iter_lines() if line]
    assert lines[-1] == {"status": "success"} and len(lines) > 1


@pytest.mark.parametrize(
    ("body", "status", "param"),
    [
        ({"model": "x1"}, 400, "from"),
        ({"model": "x1", "from": "no-such-model"}, 404, "model"),
        ({"model": BASE, "from": BASE}, 400, "model"),
        ({"model": "bad name!", "from": BASE}, 400, "model"),
        ({"model": "x1", "from": BASE, "files": {"a.gguf": "sha256:00"}}, 400, "files"),
        ({"model": "x1", "from": BASE, "quantize": "q4_K_M"}, 400, "quantize"),
        ({"model": "x1", "from": BASE, "modelfile": "FROM thinker"}, 400, "modelfile"),
        ({"model": "x1", "from": BASE, "template": "{{ .Prompt }}"}, 400, "template"),
        ({"model": "x1", "from": BASE, "parameters": {"temperature": "hot"}}, 400, "parameters.temperature"),
        ({"model": "x1", "from": BASE, "parameters": {"num_ctx": 0}}, 400, "parameters.num_ctx"),
        ({"model": "x1", "from": BASE, "messages": [{"role": "tool", "content": "x"}]}, 400, "messages[0]"),
        ({"model": "x1", "from": BASE, "colour": "blue"}, 400, "colour"),
    ],
)
def test_create_refuses_what_it_cannot_make(http, ollama_client, body, status, param):
    r = http.post("/api/create", json={"stream": False, **body})
    assert r.status_code == status, r.text
    assert set(r.json()) == {"error"} and r.json()["error"]
    assert param.split(".")[0].split("[")[0] in r.json()["error"] or status == 404
    assert "x1" not in _names(ollama_client)


def test_what_a_client_may_keep_is_bounded(http, ollama_client, monkeypatch):
    from app.server import _presets

    big = http.post(
        "/api/create", json={"model": "big", "from": BASE, "system": "x" * (1 << 20), "stream": False}
    )
    assert big.status_code == 400 and "1 MiB" in big.json()["error"]
    ollama_client.create(model="bounded", from_=BASE, stream=False)
    monkeypatch.setattr(_presets, "MAX_MADE", len(ollama_client.list().models) - 1)  # the file is a model too
    full = http.post("/api/create", json={"model": "one-more", "from": BASE, "stream": False})
    assert full.status_code == 400 and "delete one" in full.json()["error"]
    copied = http.post("/api/copy", json={"source": BASE, "destination": "one-more"})
    assert copied.status_code == 400
    # one already made may be made again
    again = http.post("/api/create", json={"model": "bounded", "from": BASE, "stream": False})
    assert again.status_code == 200, again.text
    assert {"big", "one-more"}.isdisjoint(_names(ollama_client))


def test_copy_refuses_a_file_s_name_and_an_unknown_source(http):
    taken = http.post("/api/copy", json={"source": BASE, "destination": BASE})
    assert taken.status_code == 400 and "file" in taken.json()["error"]
    missing = http.post("/api/copy", json={"source": "no-such-model", "destination": "y1"})
    assert missing.status_code == 404


def test_a_file_that_cannot_be_written_changes_nothing(thinker, tmp_path):
    """The presets file's folder is a file: the create is a clear error and nothing is made."""
    import ollama

    blocker = tmp_path / "not-a-folder"
    blocker.write_text("x")
    for srv in _serve(thinker, blocker / "presets.json"):
        client = ollama.Client(host=srv.url, timeout=60)
        with pytest.raises(ollama.ResponseError) as err:
            client.create(model="lost", from_=BASE, system="x", stream=False)
        assert err.value.status_code == 500 and "could not be saved" in err.value.error
        assert "lost" not in {m.model for m in client.list().models}


def test_chat_values_are_what_the_windows_chat_takes():
    from app.server._presets import Preset

    preset = Preset(
        name="p",
        base="/x.gguf",
        system="S",
        template="T",
        parameters={"temperature": 0.2, "top_k": 5, "stop": ["end"], "num_ctx": 4096.0, "num_predict": 7},
        messages=[{"role": "user", "content": "U0"}, {"role": "assistant", "content": "A0"}],
    )
    assert preset.chat_values() == {
        "system_prompt": "S",
        "sampling": {"temperature": 0.2, "top_k": 5},
        "max_tokens": 7,
        "n_ctx": 4096,
        "stop": ("end",),
        "chat_template": "T",
        "opening": (("user", "U0"), ("assistant", "A0")),
    }
    assert Preset(name="e", base="/x.gguf").chat_values() == {}
    assert Preset(name="s", base="/x.gguf", parameters={"num_ctx": 16}).chat_values() == {"n_ctx": 256}
    # Ollama's "no limit" (-1) sets no length; values a hand-edited file broke are left out
    broken = Preset(name="b", base="/x.gguf", parameters={"num_predict": -1, "temperature": "hot", "stop": 3})
    assert broken.chat_values() == {}


def test_applied_to_fills_in_what_the_request_left_out():
    from app.server._engine import TurnRequest
    from app.server._presets import Preset

    preset = Preset(
        name="p",
        base="/x.gguf",
        system="S",
        template="T",
        parameters={"temperature": 0.2, "top_k": 5, "stop": ["end"], "num_ctx": 4096, "num_predict": 7},
        messages=[{"role": "user", "content": "U0"}],
    )
    req = TurnRequest(model="p", messages=HI, sampling={"temperature": 0.9})
    out = preset.applied_to(req, max_tokens_limit=100)
    assert out.sampling == {"temperature": 0.9, "top_k": 5} and out.stop == ["end"]
    assert (out.n_ctx, out.max_tokens, out.chat_template) == (4096, 7, "T")
    assert [m["content"] for m in out.messages] == ["S", "U0", "Hi"]
    given = preset.applied_to(
        TurnRequest(model="p", messages=HI, max_tokens=9, max_tokens_given=True, stop=["s"], n_ctx=512), 100
    )
    assert (given.max_tokens, given.stop, given.n_ctx) == (9, ["s"], 512)
    raw = preset.applied_to(TurnRequest(model="p", raw_prompt="Hi"), 100)
    assert raw.messages == [] and raw.raw_prompt == "Hi" and raw.sampling["top_k"] == 5
    # a conversation that goes on from Ollama's context has its system prompt and messages there
    going_on = preset.applied_to(TurnRequest(model="p", messages=HI, context=[1, 2, 3]), 100)
    assert going_on.messages == HI and going_on.stop == ["end"]
    # whole numbers written as floats (JSON has one kind of number)
    floats = Preset(name="f", base="/x.gguf", parameters={"num_ctx": 2048.0, "num_predict": 4.0})
    out = floats.applied_to(TurnRequest(model="f", messages=HI), 100)
    assert (out.n_ctx, out.max_tokens) == (2048, 4) and isinstance(out.n_ctx, int)
