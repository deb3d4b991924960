"""Issue 30: the thinking control through the three APIs (official clients against a real server
on a loopback port) and through a remote session that talks to that server.

The model is ``tests.support.thinker``: it thinks (``x`` until stopped) unless the prompt ends
in a closed reasoning block, after which it answers ``A``. So *off* must render the template's
switch (not only hide the reasoning), and a budget must close the block for the answer to come."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from app.engine.events import DoneEvent, ReasoningEvent, TextEvent
from tests.support.thinker import ANSWER, THOUGHT, write_thinker

USER = [{"role": "user", "content": "Hi"}]
MODEL = "thinker"


@pytest.fixture(scope="module")
def thinker_path(tmp_path_factory):
    return write_thinker(tmp_path_factory.mktemp("thinker") / "thinker.gguf")


@pytest.fixture(scope="module")
def server(thinker_path) -> Iterator[object]:
    from app.server import ApiServer, ServerConfig

    srv = ApiServer(
        ServerConfig(port=0, models=[str(thinker_path)], use_library=False, n_ctx=2048, n_threads=1)
    )
    srv.start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(scope="module")
def openai_client(server):
    from openai import OpenAI

    return OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60)


@pytest.fixture(scope="module")
def anthropic_client(server):
    from anthropic import Anthropic

    return Anthropic(base_url=server.url, api_key="unused", max_retries=0, timeout=60)


@pytest.fixture(scope="module")
def ollama_client(server):
    import ollama

    return ollama.Client(host=server.url, timeout=60)


def _reasoning(message) -> str:
    return (message.model_extra or {}).get("reasoning_content") or ""


def test_openai_reasoning_effort_and_template_kwargs_turn_thinking_off(openai_client):
    default = openai_client.chat.completions.create(model=MODEL, messages=USER, max_tokens=8)
    assert _reasoning(default.choices[0].message).count(THOUGHT) >= 4
    assert not (default.choices[0].message.content or "").strip()

    off = openai_client.chat.completions.create(
        model=MODEL, messages=USER, max_tokens=8, reasoning_effort="none"
    )
    assert off.choices[0].message.content.strip() == ANSWER and not _reasoning(off.choices[0].message)
    assert off.choices[0].finish_reason == "stop"

    kw = openai_client.chat.completions.create(
        model=MODEL,
        messages=USER,
        max_tokens=8,
        extra_body={"chat_template_kwargs": {"enable_thinking": False}},
    )
    assert kw.choices[0].message.content.strip() == ANSWER and not _reasoning(kw.choices[0].message)

    # chat_template_kwargs win over reasoning_effort (the client named the variable itself)
    both = openai_client.chat.completions.create(
        model=MODEL,
        messages=USER,
        max_tokens=8,
        reasoning_effort="high",
        extra_body={"chat_template_kwargs": {"enable_thinking": False}},
    )
    assert both.choices[0].message.content.strip() == ANSWER


def test_openai_refuses_a_bad_thinking_choice(openai_client):
    import openai

    with pytest.raises(openai.BadRequestError) as err:
        openai_client.chat.completions.create(model=MODEL, messages=USER, reasoning_effort="sometimes")
    assert "sometimes" in str(err.value)
    with pytest.raises(openai.BadRequestError):
        openai_client.chat.completions.create(
            model=MODEL, messages=USER, extra_body={"chat_template_kwargs": ["enable_thinking"]}
        )


def test_ollama_think_false_keeps_the_model_from_thinking(ollama_client):
    on = ollama_client.chat(model=MODEL, messages=USER, think=True, options={"num_predict": 8}, stream=False)
    assert (on.message.thinking or "").count(THOUGHT) >= 4 and not on.message.content.strip()
    off = ollama_client.chat(
        model=MODEL, messages=USER, think=False, options={"num_predict": 8}, stream=False
    )
    assert off.message.content.strip() == ANSWER and not off.message.thinking
    assert off.done_reason == "stop"


def test_ollama_generate_takes_think_and_a_context_keeps_it(server, ollama_client):
    on = ollama_client.generate(
        model=MODEL, prompt="Hi", think=True, options={"num_predict": 8}, stream=False
    )
    assert (on.thinking or "").count(THOUGHT) >= 4 and not on.response.strip()
    streamed = list(
        ollama_client.generate(model=MODEL, prompt="Hi", think=True, options={"num_predict": 8}, stream=True)
    )
    assert "".join(p.thinking or "" for p in streamed).count(THOUGHT) >= 4

    off = ollama_client.generate(
        model=MODEL, prompt="Hi", think=False, options={"num_predict": 8}, stream=False
    )
    assert off.response.strip() == ANSWER and not off.thinking and off.done_reason == "stop"
    # a context goes on with the switch off: its generation prompt is the template's, closed block and all
    again = ollama_client.generate(
        model=MODEL,
        prompt="Again",
        think=False,
        context=off.context,
        options={"num_predict": 8},
        stream=False,
    )
    assert again.response.strip() == ANSWER and not again.thinking
    assert list(again.context[: len(off.context)]) == list(off.context)

    # a raw prompt is never read for reasoning: false holds, true or a level cannot
    raw = {"model": MODEL, "prompt": "Hi", "raw": True, "stream": False, "options": {"num_predict": 2}}
    assert (
        httpx.post(server.url + "/api/generate", json={**raw, "think": False}, timeout=60).status_code == 200
    )
    for think in (True, "high"):
        r = httpx.post(server.url + "/api/generate", json={**raw, "think": think}, timeout=60)
        assert r.status_code == 400 and "think" in r.json()["error"]
    for think in ("lots", 3):
        r = httpx.post(
            server.url + "/api/generate", json={"model": MODEL, "prompt": "Hi", "think": think}, timeout=60
        )
        assert r.status_code == 400 and "think" in r.json()["error"]


def test_ollama_refuses_an_unknown_level(server):
    import httpx

    r = httpx.post(
        server.url + "/api/chat", json={"model": MODEL, "messages": USER, "think": "lots"}, timeout=60
    )
    assert r.status_code == 400 and "lots" in r.text


def test_anthropic_thinking_disabled_and_a_budget(anthropic_client):
    off = anthropic_client.messages.create(
        model=MODEL, max_tokens=16, messages=USER, thinking={"type": "disabled"}
    )
    assert [b.type for b in off.content] == ["text"] and off.content[0].text.strip() == ANSWER

    budget = 5
    capped = anthropic_client.messages.create(
        model=MODEL,
        max_tokens=40,
        messages=USER,
        thinking={"type": "enabled", "budget_tokens": budget},
    )
    kinds = [b.type for b in capped.content]
    assert kinds == ["thinking", "text"], capped.content
    thought = capped.content[0].thinking
    # the opening marker and budget - 1 tokens of thought, closed with the closing message
    assert thought.count(THOUGHT) == budget - 1 and "Time to answer." in thought, thought
    assert capped.content[1].text.strip() == ANSWER and capped.stop_reason == "end_turn"

    # without the budget the model thinks to the token limit and never answers
    free = anthropic_client.messages.create(
        model=MODEL, max_tokens=40, messages=USER, thinking={"type": "enabled"}
    )
    assert [b.type for b in free.content] == ["thinking"] and free.stop_reason == "max_tokens"


def test_anthropic_refuses_a_bad_thinking_parameter(anthropic_client):
    import anthropic

    with pytest.raises(anthropic.BadRequestError):
        anthropic_client.messages.create(
            model=MODEL, max_tokens=16, messages=USER, thinking={"type": "enabled", "budget_tokens": -3}
        )


def _turn(session, **kw) -> tuple[str, str, DoneEvent]:
    events = list(session.send("Hi", **kw))
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningEvent))
    text = "".join(e.text for e in events if isinstance(e, TextEvent))
    assert isinstance(events[-1], DoneEvent)
    return reasoning, text, events[-1]


@pytest.mark.parametrize("kind", ["openai", "ollama", "anthropic"])
def test_a_remote_session_sends_the_choice_in_each_api_s_shape(server, kind):
    from app.engine.remote import Provider, RemoteChatSession

    session = RemoteChatSession(
        Provider(server.url, kind=kind), MODEL, parser="api", max_tokens=12, thinking="off"
    )
    reasoning, text, done = _turn(session)
    assert text.strip() == ANSWER and not reasoning, (kind, reasoning, text, done)
    # one turn's choice wins over the session's
    reasoning, text, done = _turn(session, thinking="on")
    assert reasoning.count(THOUGHT) >= 4 and not text.strip(), (kind, reasoning, text)


def test_a_remote_session_with_callisto_parsing_renders_the_switch(server, thinker_path):
    from app.engine.remote import Provider, RemoteChatSession

    session = RemoteChatSession(
        Provider(server.url, kind="openai"),
        MODEL,
        parser="callisto",
        template=str(thinker_path),
        max_tokens=12,
        thinking="off",
    )
    reasoning, text, _done = _turn(session)
    assert session.last_raw_prompt is not None and session.last_raw_prompt.endswith("</think>\n\n")
    assert text.strip() == ANSWER and not reasoning
