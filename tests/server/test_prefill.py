"""A final assistant message is the reply's start (a prefill), as Anthropic's and Ollama's APIs and
llama-server read one: the model goes on from its text, the reply holds only what follows, and it
does not think first. On the OpenAI API vLLM's ``continue_final_message: false`` keeps it an
answered turn. Real servers on free loopback ports, scripted GGUFs (each reply is known from the
prompt's last token), the official openai, anthropic and ollama clients."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.server.conftest import FAMILIES, TEMPLATES, WEATHER
from tests.server.test_idle_ttl import FakeClock, _server
from tests.ui.scripted_gguf import CHATML, write_scripted_gguf

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
ollama = pytest.importorskip("ollama")

START, REST, NEW = "Sure", " thing.", "Nope."
CALL_REST = '\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
# after the generation prompt's "\n": a new answer; after the prefill's start: its rest
SCRIPT = {"\n": NEW, NEW: "<|im_end|>", START: REST, REST: "<|im_end|>"}
# a template that opens a reasoning block in every generation prompt, with no switch
ALWAYS_THINKS = CHATML.replace("'<|im_start|>assistant\\n'", "'<|im_start|>assistant\\n<think>\\n'")


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[object]:
    folder = tmp_path_factory.mktemp("prefill")
    hermes = FAMILIES["hermes"]
    qwen3 = (TEMPLATES / "Qwen-Qwen3-0.6B.jinja").read_text(encoding="utf-8")
    models: dict[str, Path] = {}
    for name, template, extra in (
        ("plain", CHATML, {}),
        ("opens-think", ALWAYS_THINKS, {}),
        # Qwen3: thinks by default ("\n" -> a block of x), answers NEW after a closed block
        ("qwen3", qwen3, {"\n": "<think>", "<think>": "x", "x": "x", "</think>\n\n": NEW}),
        # Qwen 2.5 (Hermes calls): the rest of a call after its opener
        ("hermes", (TEMPLATES / hermes.template).read_text(encoding="utf-8"), {"<tool_call>": CALL_REST}),
    ):
        script = {**SCRIPT, **extra, CALL_REST: "<|im_end|>"}
        models[name] = write_scripted_gguf(
            folder / f"{name}.gguf",
            chat_template=template,
            control_tokens=hermes.control,
            user_tokens=[START, REST, NEW, "<think>", "</think>\n\n", "<tool_call>", CALL_REST],
            script=script,
            default_next="<|im_end|>",
            name=name,
        )
    yield from _server(models, FakeClock())


def _openai(server):
    return openai.OpenAI(base_url=server.url + "/v1", api_key="x", max_retries=0, timeout=120)


def _conversation(start: str = START) -> list[dict]:
    return [{"role": "user", "content": "Say it"}, {"role": "assistant", "content": start}]


def _reasoning(message) -> str:
    return (message.model_extra or {}).get("reasoning_content") or ""


@pytest.mark.parametrize("model", ["plain", "opens-think", "qwen3"])
def test_openai_goes_on_from_a_final_assistant_message(server, model):
    client = _openai(server)
    reply = client.chat.completions.create(model=model, messages=_conversation(), max_tokens=16)
    message = reply.choices[0].message
    # only what follows the prefill, never read as reasoning (a block the template opened is closed)
    assert message.content == REST and not _reasoning(message)
    assert reply.choices[0].finish_reason == "stop"
    chunks = list(
        client.chat.completions.create(model=model, messages=_conversation(), max_tokens=16, stream=True)
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == REST
    # vLLM's flags: the same prefill, asked for by name
    named = client.chat.completions.create(
        model=model,
        messages=_conversation(),
        max_tokens=16,
        extra_body={"continue_final_message": True, "add_generation_prompt": False},
    )
    assert named.choices[0].message.content == REST


def test_every_choice_goes_on_from_it(server):
    client = _openai(server)
    reply = client.chat.completions.create(model="plain", messages=_conversation(), max_tokens=16, n=3)
    assert [c.message.content for c in reply.choices] == [REST] * 3
    chunks = client.chat.completions.create(
        model="plain", messages=_conversation(), max_tokens=16, n=2, stream=True
    )
    said: dict[int, str] = {}
    for chunk in chunks:
        for c in chunk.choices:
            said[c.index] = said.get(c.index, "") + (c.delta.content or "")
    assert said == {0: REST, 1: REST}


def test_openai_continue_final_message_false_answers_a_new_turn(server):
    reply = _openai(server).chat.completions.create(
        model="plain", messages=_conversation(), max_tokens=16, extra_body={"continue_final_message": False}
    )
    assert reply.choices[0].message.content == NEW
    # an empty final assistant message is an answered turn too: there is no text to go on from
    empty = _openai(server).chat.completions.create(model="plain", messages=_conversation(""), max_tokens=16)
    assert empty.choices[0].message.content == NEW


def test_anthropic_and_ollama_go_on_from_it(server):
    client = anthropic.Anthropic(base_url=server.url, api_key="x", max_retries=0, timeout=120)
    reply = client.messages.create(model="plain", max_tokens=16, messages=_conversation())
    assert [b.type for b in reply.content] == ["text"] and reply.content[0].text == REST
    assert reply.stop_reason == "end_turn"
    with client.messages.stream(model="qwen3", max_tokens=16, messages=_conversation()) as stream:
        assert "".join(stream.text_stream) == REST
    count = client.messages.count_tokens(model="plain", messages=_conversation())
    # the prompt ends with the prefill, not a closed turn and a new generation prompt
    alone = client.messages.count_tokens(model="plain", messages=_conversation()[:1])
    assert count.input_tokens == alone.input_tokens + 1  # START is one token

    local = ollama.Client(host=server.url, timeout=120)
    said = local.chat(model="qwen3", messages=_conversation(), stream=False)
    assert said.message.content == REST and not said.message.thinking
    parts = list(local.chat(model="plain", messages=_conversation(), stream=True))
    assert "".join(p.message.content for p in parts) == REST


def test_a_prefilled_call_opener_gives_a_call(server):
    reply = _openai(server).chat.completions.create(
        model="hermes", messages=_conversation("<tool_call>"), tools=[WEATHER], max_tokens=32
    )
    choice = reply.choices[0]
    assert choice.finish_reason == "tool_calls" and not (choice.message.content or "").strip()
    [call] = choice.message.tool_calls
    assert (
        call.function.name == "get_weather" and call.function.arguments.replace(" ", "") == '{"city":"Oslo"}'
    )


def test_what_a_prefill_cannot_be_sent_with(server):
    url = server.url + "/v1/chat/completions"
    user_last = [{"role": "user", "content": "Say it"}]
    cases = [
        ({"messages": user_last, "continue_final_message": True}, "continue_final_message"),
        ({"messages": user_last, "add_generation_prompt": False}, "add_generation_prompt"),
        ({"messages": _conversation(""), "continue_final_message": True}, "continue_final_message"),
        ({"messages": _conversation(), "continue_final_message": "yes"}, "continue_final_message"),
        ({"messages": _conversation(), "reasoning_effort": "high"}, "messages"),
        ({"messages": _conversation(), "response_format": {"type": "json_object"}}, "messages"),
        ({"messages": _conversation(), "tools": [WEATHER], "tool_choice": "required"}, "messages"),
        (
            {"messages": [*user_last, {"role": "assistant", "content": START, "reasoning_content": "hm"}]},
            "messages",
        ),
    ]
    for extra, param in cases:
        for stream in (False, True):
            r = httpx.post(
                url, json={"model": "qwen3", "max_tokens": 8, "stream": stream, **extra}, timeout=120
            )
            assert r.status_code == 400, (extra, r.text)
            assert r.json()["error"]["param"] == param, (extra, r.text)
    # Anthropic: a budget with a prefill
    r = httpx.post(
        server.url + "/v1/messages",
        json={
            "model": "qwen3",
            "max_tokens": 64,
            "messages": _conversation(),
            "thinking": {"type": "enabled", "budget_tokens": 16},
        },
        timeout=120,
    )
    assert r.status_code == 400 and "think" in r.text
    # a final assistant message with calls is an answered turn, as before
    answered = [
        *user_last,
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}
            ],
        },
    ]
    ok = httpx.post(url, json={"model": "plain", "max_tokens": 8, "messages": answered}, timeout=120)
    assert ok.status_code == 200 and ok.json()["choices"][0]["message"]["content"] == NEW
