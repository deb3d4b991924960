"""LM Studio's native REST APIs on a real server: ``POST /api/v1/chat`` (stateful chats, reasoning,
LM Studio's stats and its named stream events) and ``/api/v0`` (its models list and the OpenAI
endpoints with its stats). Also the counts these brought to the other APIs: the reasoning's tokens
(OpenAI's and the Responses API's usage) and the model's load time (Ollama's ``load_duration``).

The model is ``tests.support.thinker`` (Qwen3's template): it thinks ``x`` until stopped unless
reasoning is off, when it answers ``A``; so each reply shows what the request asked."""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from tests.server.conftest import _start
from tests.support.slot_server import until
from tests.support.thinker import ANSWER, THOUGHT, write_thinker

MODEL = "thinker"


@pytest.fixture(scope="module")
def server(tmp_path_factory) -> Iterator[object]:
    from app.server import ServerConfig

    path = write_thinker(tmp_path_factory.mktemp("lmstudio") / "thinker.gguf")
    yield from _start(ServerConfig(port=0, models=[str(path)], use_library=False, n_ctx=2048, n_threads=1))


@pytest.fixture(scope="module")
def http(server) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.url, timeout=60) as client:
        yield client


@pytest.fixture(scope="module")
def openai_client(server):
    from openai import OpenAI

    return OpenAI(base_url=server.url + "/v1", api_key="unused", max_retries=0, timeout=60)


def _chat(http: httpx.Client, **body) -> dict:
    r = http.post("/api/v1/chat", json={"model": MODEL, **body})
    assert r.status_code == 200, r.text
    return r.json()


def _unload(http: httpx.Client) -> None:
    r = http.post("/api/v1/models/unload", json={"instance_id": MODEL})
    assert r.status_code in (200, 404), r.text  # 404: it was not loaded


def _events(http: httpx.Client, **body) -> list[tuple[str, dict]]:
    """The stream's events: (the SSE event name, its data)."""
    out = []
    with http.stream("POST", "/api/v1/chat", json={"model": MODEL, "stream": True, **body}) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        name = None
        for line in r.iter_lines():
            if line.startswith("event: "):
                name = line.removeprefix("event: ")
            elif line.startswith("data: "):
                data = json.loads(line.removeprefix("data: "))
                assert data["type"] == name  # each event's data names it
                out.append((name, data))
    return out


def _tokens(http: httpx.Client, text: str) -> int:
    r = http.post("/tokenize", json={"content": text})
    assert r.status_code == 200, r.text
    return len(r.json()["tokens"])


# -- /api/v1/chat ----------------------------------------------------------------------------------


def test_a_chat_thinks_or_answers_as_reasoning_says(http):
    thought = _chat(http, input="Hi", max_output_tokens=8)
    assert [o["type"] for o in thought["output"]] == ["reasoning"]
    reasoning = thought["output"][0]["content"]
    assert reasoning.count(THOUGHT) >= 4 and thought["model_instance_id"] == MODEL
    stats = thought["stats"]
    assert stats["total_output_tokens"] == 8 and stats["input_tokens"] > 0
    # the reasoning's tokens: its text as the model's vocabulary reads it
    assert stats["reasoning_output_tokens"] == _tokens(http, reasoning) <= 8
    assert stats["tokens_per_second"] > 0 and stats["time_to_first_token_seconds"] >= 0
    assert thought["response_id"].startswith("resp_")

    answer = _chat(http, input="Hi", max_output_tokens=8, reasoning="off")
    assert answer["output"] == [{"type": "message", "content": ANSWER}]
    assert answer["stats"]["reasoning_output_tokens"] == 0
    # a level turns it on, as "on" does
    for level in ("on", "high"):
        on = _chat(http, input="Hi", max_output_tokens=8, reasoning=level)
        assert [o["type"] for o in on["output"]] == ["reasoning"], level


def test_a_chat_goes_on_from_its_response_id(http, openai_client):
    """The next request sends only its input; the prompt is the whole chat's, as if the client
    had sent every message (its token count equals the OpenAI request's that does)."""
    first = _chat(http, input="Hi", system_prompt="Be brief.", reasoning="off", max_output_tokens=8)
    second = _chat(
        http, input="Again", previous_response_id=first["response_id"], reasoning="off", max_output_tokens=8
    )
    assert second["output"] == [{"type": "message", "content": ANSWER}]
    assert second["response_id"] != first["response_id"]
    whole = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": ANSWER},
        {"role": "user", "content": "Again"},
    ]

    def prompt_tokens(messages) -> int:
        reply = openai_client.chat.completions.create(
            model=MODEL, messages=messages, max_tokens=8, reasoning_effort="none"
        )
        return reply.usage.prompt_tokens

    assert second["stats"]["input_tokens"] == prompt_tokens(whole)
    # the system prompt stays with the chat; a new one replaces it
    third = _chat(
        http, input="More", previous_response_id=second["response_id"], reasoning="off", max_output_tokens=8
    )
    longer = [*whole, {"role": "assistant", "content": ANSWER}, {"role": "user", "content": "More"}]
    assert third["stats"]["input_tokens"] == prompt_tokens(longer)
    other = _chat(
        http,
        input="More",
        previous_response_id=second["response_id"],
        system_prompt="Answer in one word, always.",
        reasoning="off",
        max_output_tokens=8,
    )
    renamed = [{"role": "system", "content": "Answer in one word, always."}, *longer[1:]]
    assert other["stats"]["input_tokens"] == prompt_tokens(renamed)


def test_store_false_keeps_nothing_and_unknown_ids_are_clear_errors(http):
    lone = _chat(http, input="Hi", reasoning="off", store=False, max_output_tokens=8)
    assert "response_id" not in lone and lone["output"][0]["content"] == ANSWER
    gone = http.post(
        "/api/v1/chat", json={"model": MODEL, "input": "Hi", "previous_response_id": "resp_" + "0" * 32}
    )
    assert gone.status_code == 404 and gone.json()["error"]["param"] == "previous_response_id"
    wrong = http.post("/api/v1/chat", json={"model": MODEL, "input": "Hi", "previous_response_id": "chat_1"})
    assert wrong.status_code == 400 and "resp_" in wrong.json()["error"]["message"]


def test_the_stream_has_lm_studios_events_in_order(http):
    events = _events(http, input="Hi", reasoning="off", max_output_tokens=8)
    names = [n for n, _ in events]
    deltas = [d["content"] for n, d in events if n == "message.delta"]
    assert names[0] == "chat.start" and events[0][1]["model_instance_id"] == MODEL
    assert names[-1] == "chat.end"
    body = [n for n in names[1:-1] if not n.startswith("model_load.") and n != "message.delta"]
    assert body == ["prompt_processing.start", "prompt_processing.end", "message.start", "message.end"]
    assert "".join(deltas) == ANSWER and deltas
    result = events[-1][1]["result"]
    assert result["output"] == [{"type": "message", "content": ANSWER}]
    assert result["stats"]["total_output_tokens"] >= 1 and result["response_id"].startswith("resp_")
    # the streamed chat is kept as a plain one is: it can be continued
    after = _chat(
        http, input="Again", previous_response_id=result["response_id"], reasoning="off", max_output_tokens=8
    )
    assert after["stats"]["input_tokens"] > result["stats"]["input_tokens"]

    thinking = _events(http, input="Hi", max_output_tokens=6)
    names = [n for n, _ in thinking if not n.endswith(".delta")]
    assert names[-3:] == ["reasoning.start", "reasoning.end", "chat.end"]
    text = "".join(d["content"] for n, d in thinking if n == "reasoning.delta")
    assert thinking[-1][1]["result"]["output"] == [{"type": "reasoning", "content": text}]


def test_a_client_that_leaves_the_stream_stops_the_generation(http, server):
    body = {"model": MODEL, "input": "Hi", "stream": True, "max_output_tokens": 1900, "store": False}
    earlier = list(server.state.finished)
    with http.stream("POST", "/api/v1/chat", json=body) as r:
        seen = 0
        for line in r.iter_lines():
            seen += "reasoning.delta" in line
            if seen == 2:  # the model is writing: leave
                break

    def cut() -> list:  # the turns ended, cancelled, since the stream began
        return [
            e
            for e in list(server.state.finished)
            if e.finish_reason == "cancelled" and not any(e is old for old in earlier)
        ]

    # the cut turn ends early, cancelled; the scheduler may finish another request before it is
    # recorded, so its own record is waited for, not the next reply
    assert until(lambda: cut()), "the left stream's turn was never cancelled"
    assert cut()[0].completion_tokens < 1900
    # and the engine answers the next request
    assert _chat(http, input="Hi", reasoning="off", max_output_tokens=2, store=False)["output"]


def test_a_chat_that_loads_its_model_says_so_and_how_long_it_took(http):
    _unload(http)
    events = _events(http, input="Hi", reasoning="off", max_output_tokens=4)
    names = [n for n, _ in events]
    assert names[1:3] == ["model_load.start", "model_load.end"]
    took = events[2][1]["load_time_seconds"]
    assert took > 0 and events[-1][1]["result"]["stats"]["model_load_time_seconds"] == took
    # loaded now: no load events, no load time
    again = _chat(http, input="Hi", reasoning="off", max_output_tokens=4)
    assert "model_load_time_seconds" not in again["stats"]
    _unload(http)
    assert (
        _chat(http, input="Hi", reasoning="off", max_output_tokens=4)["stats"]["model_load_time_seconds"] > 0
    )


@pytest.mark.parametrize(
    ("body", "param", "words"),
    [
        ({"input": "Hi", "integrations": ["mcp/playwright"]}, "integrations", "not served"),
        ({"input": "Hi", "max_tokens": 5}, "max_tokens", "unknown field"),
        ({"input": "Hi", "reasoning": "sometimes"}, "reasoning", "sometimes"),
        ({}, "input", "required"),
        ({"input": []}, "input", "non-empty"),
        ({"input": [{"type": "video", "content": "x"}]}, "input[0].type", "video"),
        ({"input": [{"type": "text", "content": 3}]}, "input[0].content", "string"),
        ({"input": [{"type": "image", "data_url": "not a data url"}]}, "input[0].data_url", "data_url"),
        ({"input": "Hi", "max_output_tokens": 0}, "max_output_tokens", "max_output_tokens"),
        ({"input": "Hi", "store": "yes"}, "store", "store"),
    ],
)
def test_a_bad_request_is_a_400_naming_the_field(http, body, param, words):
    r = http.post("/api/v1/chat", json={"model": MODEL, **body})
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["param"] == param and words in error["message"], error


def test_an_unknown_model_is_a_404(http):
    r = http.post("/api/v1/chat", json={"model": "no-such-model", "input": "Hi"})
    assert r.status_code == 404 and "no-such-model" in r.json()["error"]["message"]


# -- the counts the other APIs gained ----------------------------------------------------------------


def test_openai_and_responses_usage_count_the_reasoning(http, openai_client):
    reply = openai_client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Hi"}], max_tokens=8
    )
    reasoning = (reply.choices[0].message.model_extra or {}).get("reasoning_content") or ""
    details = reply.usage.completion_tokens_details
    assert reasoning and details.reasoning_tokens == _tokens(http, reasoning) <= reply.usage.completion_tokens
    off = openai_client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Hi"}], max_tokens=8, reasoning_effort="none"
    )
    assert off.usage.completion_tokens_details.reasoning_tokens == 0

    response = openai_client.responses.create(model=MODEL, input="Hi", max_output_tokens=8)
    (item,) = [o for o in response.output if o.type == "reasoning"]
    text = "".join(c.text for c in item.content or [])
    assert response.usage.output_tokens_details.reasoning_tokens == _tokens(http, text) > 0


def test_ollama_load_duration_is_the_models_load(server, http):
    import ollama

    client = ollama.Client(host=server.url, timeout=60)
    _unload(http)
    first = client.chat(model=MODEL, messages=[{"role": "user", "content": "Hi"}], think=False, stream=False)
    assert first.load_duration > 0 and first.total_duration >= first.load_duration
    second = client.chat(model=MODEL, messages=[{"role": "user", "content": "Hi"}], think=False, stream=False)
    assert second.load_duration == 0
    _unload(http)
    streamed = list(
        client.chat(model=MODEL, messages=[{"role": "user", "content": "Hi"}], think=False, stream=True)
    )
    assert streamed[-1].done and streamed[-1].load_duration > 0


# -- /api/v0 ---------------------------------------------------------------------------------------


def test_v0_lists_the_models_and_whether_they_are_loaded(http):
    v1 = {m["key"]: m for m in http.get("/api/v1/models").json()["models"]}
    _unload(http)
    listed = http.get("/api/v0/models").json()
    assert listed["object"] == "list"
    (model,) = [m for m in listed["data"] if m["id"] == MODEL]
    assert model["state"] == "not-loaded" and model["type"] == "llm" and model["object"] == "model"
    assert model["arch"] == v1[MODEL]["architecture"] and model["compatibility_type"] == "gguf"
    assert model["quantization"] == (v1[MODEL]["quantization"] or {}).get("name")
    _chat(http, input="Hi", reasoning="off", max_output_tokens=2, store=False)
    one = http.get(f"/api/v0/models/{MODEL}").json()
    assert one == {**model, "state": "loaded", "max_context_length": one["max_context_length"]}
    missing = http.get("/api/v0/models/no-such-model")
    assert missing.status_code == 404 and "no-such-model" in missing.json()["error"]["message"]


def test_v0_chat_and_completions_add_lm_studios_stats(server, http):
    from openai import OpenAI

    client = OpenAI(base_url=server.url + "/api/v0", api_key="unused", max_retries=0, timeout=60)
    reply = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Hi"}], max_tokens=8, reasoning_effort="none"
    )
    assert reply.choices[0].message.content == ANSWER
    extra = reply.model_extra or {}
    assert extra["stats"]["stop_reason"] == "eosFound" and extra["stats"]["tokens_per_second"] > 0
    assert extra["model_info"]["format"] == "gguf" and extra["model_info"]["context_length"] == 2048
    assert extra["runtime"]["supported_formats"] == ["gguf"]
    cut = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Hi"}], max_tokens=3
    )
    assert (cut.model_extra or {})["stats"]["stop_reason"] == "maxPredictedTokensReached"
    # a reply that a stop string ends, and a raw completion
    done = client.chat.completions.create(
        model=MODEL,
        messages=[{"role": "user", "content": "Hi"}],
        max_tokens=8,
        reasoning_effort="none",
        stop=[ANSWER],
    )
    assert (done.model_extra or {})["stats"]["stop_reason"] == "stopStringFound"
    raw = client.completions.create(model=MODEL, prompt="Hi", max_tokens=2)
    assert (raw.model_extra or {})["stats"]["stop_reason"] in ("eosFound", "maxPredictedTokensReached")
    assert (raw.model_extra or {})["model_info"]["arch"] == reply.model_extra["model_info"]["arch"]
    # a stream is OpenAI's, as it is on /v1
    chunks = list(
        client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "Hi"}],
            max_tokens=8,
            reasoning_effort="none",
            stream=True,
        )
    )
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == ANSWER
    # an error keeps OpenAI's shape
    bad = http.post("/api/v0/chat/completions", json={"model": MODEL, "messages": "Hi"})
    assert bad.status_code == 400 and "messages" in bad.json()["error"]["message"]
