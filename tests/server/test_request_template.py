"""A request's own chat template (vLLM's ``chat_template`` on ``/v1/chat/completions``, Ollama's
``template`` on ``/api/generate``): it renders in place of the model's, in the same sandbox, and
the tool-call family is detected from it. Real servers on free loopback ports, a scripted GGUF
whose reply is known from the prompt's last token, the official openai and ollama clients."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.server.conftest import FAMILIES, TEMPLATES, WEATHER, call_text
from tests.server.test_idle_ttl import FakeClock, _server
from tests.ui.scripted_gguf import CHATML, write_scripted_gguf

openai = pytest.importorskip("openai")
ollama = pytest.importorskip("ollama")

NEW, OTHER = "Nope.", "Other."
CALL = call_text("hermes", [("get_weather", {"city": "Oslo"})])
# the model's own template ends its prompt in "\n"; this one in "GO"
GO = CHATML.replace("'<|im_start|>assistant\\n'", "'<|im_start|>assistant\\nGO'")
# a generation prompt ending in CALLGO: the model answers with a Hermes call
CALLS = CHATML.replace("'<|im_start|>assistant\\n'", "'<|im_start|>assistant\\nCALLGO'")


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[object]:
    folder = tmp_path_factory.mktemp("request-template")
    model = write_scripted_gguf(
        folder / "plain.gguf",
        chat_template=CHATML,
        control_tokens=FAMILIES["hermes"].control,
        user_tokens=[NEW, OTHER, "GO", "CALLGO", CALL],
        # after "\n": an answer; after GO: another; after CALLGO: a Hermes call
        script={
            "\n": NEW,
            "GO": OTHER,
            "CALLGO": CALL,
            NEW: "<|im_end|>",
            OTHER: "<|im_end|>",
            CALL: "<|im_end|>",
        },
        default_next="<|im_end|>",
        name="plain",
    )
    yield from _server({"plain": model}, FakeClock())


def test_the_requests_template_renders_the_prompt(server):
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=120)
    user = [{"role": "user", "content": "Hi"}]
    own = client.chat.completions.create(model="plain", messages=user, max_tokens=8)
    assert own.choices[0].message.content == NEW
    theirs = client.chat.completions.create(
        model="plain", messages=user, max_tokens=8, extra_body={"chat_template": GO}
    )
    assert theirs.choices[0].message.content == OTHER

    local = ollama.Client(host=server.url, timeout=120)
    assert local.generate(model="plain", prompt="Hi", stream=False).response == NEW
    assert local.generate(model="plain", prompt="Hi", template=GO, stream=False).response == OTHER
    assert (
        local.generate(model="plain", prompt="Hi", template="", stream=False).response == NEW
    )  # the model's


def test_the_family_is_read_from_the_requests_template(server):
    """The model's own template (ChatML) writes no calls, so a call the model writes is text; Qwen
    2.5's template, sent with the request, makes it a Hermes call."""
    client = openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=120)
    hermes = (TEMPLATES / FAMILIES["hermes"].template).read_text(encoding="utf-8")
    calling = hermes.replace("{{- '<|im_start|>assistant\\n' }}", "{{- '<|im_start|>assistant\\nCALLGO' }}")
    assert calling != hermes
    user = [{"role": "user", "content": "Weather?"}]
    theirs = client.chat.completions.create(
        model="plain", messages=user, tools=[WEATHER], max_tokens=32, extra_body={"chat_template": calling}
    )
    choice = theirs.choices[0]
    assert choice.finish_reason == "tool_calls"
    [call] = choice.message.tool_calls
    assert (
        call.function.name == "get_weather" and call.function.arguments.replace(" ", "") == '{"city":"Oslo"}'
    )
    # the same reply through a template that writes no calls: it is text
    text = client.chat.completions.create(
        model="plain", messages=user, tools=[WEATHER], max_tokens=32, extra_body={"chat_template": CALLS}
    )
    assert not text.choices[0].message.tool_calls and "get_weather" in (text.choices[0].message.content or "")


def test_templates_that_cannot_be_used_are_400s(server):
    go = "{{ if .System }}<|im_start|>system\n{{ .System }}<|im_end|>\n{{ end }}{{ .Prompt }}"
    broken = "{% for m in messages %}{{ m.content }}"  # no endfor
    raises = "{{ raise_exception('this template takes no user messages') }}"
    chat = server.url + "/v1/chat/completions"
    gen = server.url + "/api/generate"
    user = [{"role": "user", "content": "Hi"}]
    cases = [
        (chat, {"messages": user, "chat_template": go}, "chat_template", "Go template"),
        (chat, {"messages": user, "chat_template": broken}, "chat_template", "cannot be read"),
        (chat, {"messages": user, "chat_template": raises}, "chat_template", "takes no user messages"),
        (chat, {"messages": user, "chat_template": 3}, "chat_template", "chat_template"),
        (gen, {"prompt": "Hi", "template": go}, None, "Go template"),
        (gen, {"prompt": "Hi", "template": raises}, None, "takes no user messages"),
        (gen, {"prompt": "Hi", "template": GO, "raw": True}, None, "template cannot be sent with raw"),
    ]
    for url, extra, param, words in cases:
        for stream in (False, True):
            r = httpx.post(
                url, json={"model": "plain", "stream": stream, "max_tokens": 8, **extra}, timeout=120
            )
            assert r.status_code == 400, (extra, r.text)
            body = r.json()
            message = body["error"]["message"] if param else body["error"]
            assert words in message, (extra, r.text)
            if param:
                assert body["error"]["param"] == param
    # the model answers the next request with its own template
    assert (
        ollama.Client(host=server.url, timeout=120)
        .generate(model="plain", prompt="Hi", stream=False)
        .response
        == NEW
    )
