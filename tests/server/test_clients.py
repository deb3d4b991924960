"""The official openai, anthropic and ollama packages against a real server on a loopback port.

Scripted GGUFs of several families (real templates; the reply is a call, or two) show that each
API returns the calls the family's parser reads, that streaming gives the same calls as a plain
request, in each API's own stream shape, and that the SDKs' stream accumulators accept every
stream. The loop model answers a tool result with text: a whole call -> result -> answer loop per API.
"""

from __future__ import annotations

import json

import httpx
import pytest

from tests.server.conftest import ANSWER, FAMILIES, ONE_CALL, PARALLEL, THOUGHT, TOOLS, TWO_CALLS

CASES = [(fam, ONE_CALL) for fam in FAMILIES] + [(f"{fam}-parallel", TWO_CALLS) for fam in PARALLEL]
ANTHROPIC_TOOLS = [
    {
        "name": t["function"]["name"],
        "description": t["function"]["description"],
        "input_schema": t["function"]["parameters"],
    }
    for t in TOOLS
]
OLLAMA_TOOLS = TOOLS
USER = [{"role": "user", "content": "What is the weather in Oslo?"}]


def model_id(key: str) -> str:
    return "loop-hermes" if key == "loop" else f"call-{key}"


@pytest.fixture(scope="module")
def openai_client(family_server):
    from openai import OpenAI

    return OpenAI(base_url=family_server.url + "/v1", api_key="unused", max_retries=0, timeout=60)


@pytest.fixture(scope="module")
def anthropic_client(family_server):
    from anthropic import Anthropic

    return Anthropic(base_url=family_server.url, api_key="unused", max_retries=0, timeout=60)


@pytest.fixture(scope="module")
def ollama_client(family_server):
    import ollama

    return ollama.Client(host=family_server.url, timeout=60)


# -- OpenAI -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("key", "expected"), CASES)
def test_openai_calls_stream_and_accumulate_alike(openai_client, key, expected):
    plain = openai_client.chat.completions.create(model=model_id(key), messages=USER, tools=TOOLS)
    choice = plain.choices[0]
    assert choice.finish_reason == "tool_calls"
    got = [(c.function.name, json.loads(c.function.arguments)) for c in choice.message.tool_calls]
    assert got == expected
    assert all(c.id.startswith("call_") for c in choice.message.tool_calls)

    # the raw stream: each call's first delta has index, id, type and name once; then only arguments
    seen: dict[int, dict] = {}
    finish = None
    for chunk in openai_client.chat.completions.create(
        model=model_id(key), messages=USER, tools=TOOLS, stream=True
    ):
        if not chunk.choices:
            continue
        delta = chunk.choices[0].delta
        for tc in delta.tool_calls or []:
            if tc.index not in seen:
                assert tc.id and tc.type == "function" and tc.function.name
                seen[tc.index] = {"name": tc.function.name, "args": tc.function.arguments or ""}
            else:
                assert tc.id is None and tc.type is None and tc.function.name is None
                seen[tc.index]["args"] += tc.function.arguments
        finish = chunk.choices[0].finish_reason or finish
    assert finish == "tool_calls"
    assert [(v["name"], json.loads(v["args"])) for _, v in sorted(seen.items())] == expected
    streamed_args = [v["args"] for _, v in sorted(seen.items())]
    assert streamed_args == [c.function.arguments for c in choice.message.tool_calls]

    with openai_client.chat.completions.stream(model=model_id(key), messages=USER, tools=TOOLS) as stream:
        final = stream.get_final_completion()
    acc = [(c.function.name, json.loads(c.function.arguments)) for c in final.choices[0].message.tool_calls]
    assert acc == expected


def test_openai_tool_choice_none_sends_no_calls(openai_client):
    reply = openai_client.chat.completions.create(
        model="call-hermes", messages=USER, tools=TOOLS, tool_choice="none", max_tokens=8
    )
    assert not reply.choices[0].message.tool_calls
    assert reply.choices[0].finish_reason in ("stop", "length")


def test_a_call_to_an_undeclared_tool_comes_back_as_text(openai_client, anthropic_client):
    reply = openai_client.chat.completions.create(model="call-hermes", messages=USER, tools=[TOOLS[1]])
    c = reply.choices[0]
    assert not c.message.tool_calls and c.finish_reason == "stop"
    assert '"name": "get_weather"' in c.message.content  # what the model wrote is not lost
    msg = anthropic_client.messages.create(
        model="call-hermes", max_tokens=64, messages=USER, tools=ANTHROPIC_TOOLS[1:]
    )
    assert msg.stop_reason == "end_turn" and [b.type for b in msg.content] == ["text"]


def test_openai_parallel_off_returns_one_call(openai_client):
    reply = openai_client.chat.completions.create(
        model="call-hermes-parallel", messages=USER, tools=TOOLS, parallel_tool_calls=False
    )
    assert [c.function.name for c in reply.choices[0].message.tool_calls] == ["get_weather"]
    assert reply.choices[0].finish_reason == "tool_calls"


def test_openai_loop_call_result_answer_with_usage(openai_client):
    msgs = [{"role": "system", "content": "Be brief."}, *USER]
    first = openai_client.chat.completions.create(model="loop-hermes", messages=msgs, tools=TOOLS)
    call = first.choices[0].message.tool_calls[0]
    msgs += [
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "sunny, 21 C"},
    ]
    chunks = list(
        openai_client.chat.completions.create(
            model="loop-hermes",
            messages=msgs,
            tools=TOOLS,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == ANSWER
    usage = chunks[-1].usage
    assert usage.completion_tokens >= 1 and usage.prompt_tokens > usage.completion_tokens
    # the second turn repeats the first one's prompt: llama.cpp reuses it from the KV cache
    assert usage.prompt_tokens_details.cached_tokens > 0


def test_openai_client_ids_reach_a_mistral_template(openai_client):
    """Mistral's template accepts only 9-alphanumeric call ids and strictly alternating turns: the
    client's own ids and two user turns in a row still render."""
    msgs = [
        {"role": "user", "content": "Hi."},
        {"role": "user", "content": "Weather in Oslo?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_client-chosen-id-1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_client-chosen-id-1", "content": "sunny"},
    ]
    reply = openai_client.chat.completions.create(model="call-mistral", messages=msgs, tools=TOOLS)
    assert reply.choices[0].message.tool_calls[0].function.name == "get_weather"


def test_a_past_call_s_arguments_with_a_raw_newline_are_taken(family_server, openai_client):
    """A client gives back a past call as the model wrote it, a raw newline inside a string of
    its arguments (kimi-cli and others store them so): the conversation renders with that text,
    where strict JSON would refuse the request and every later one of the conversation."""
    import httpx

    raw = '{"city": "Oslo\nNorway"}'  # a raw newline, not the two characters of an escape
    msgs = [
        {"role": "user", "content": "Weather in Oslo?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": raw}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
    ]
    reply = openai_client.chat.completions.create(model="call-hermes", messages=msgs, tools=TOOLS)
    assert reply.choices[0].message.tool_calls[0].function.name == "get_weather"
    r = httpx.post(
        family_server.url + "/apply-template",
        json={"model": "call-hermes", "messages": msgs, "tools": TOOLS},
        timeout=60,
    )
    assert r.status_code == 200, r.text
    assert '"city": "Oslo\\nNorway"' in r.json()["prompt"]  # rendered as the JSON it is
    ollama_msgs = [dict(m) for m in msgs]
    ollama_msgs[1] = {**msgs[1], "tool_calls": [{"function": {"name": "get_weather", "arguments": raw}}]}
    r = httpx.post(
        family_server.url + "/api/chat",
        json={"model": "call-hermes", "messages": ollama_msgs, "tools": TOOLS, "stream": False},
        timeout=60,
    )
    assert r.status_code == 200, r.text


def test_openai_completions_and_models(openai_client):
    ids = [m.id for m in openai_client.models.list()]
    assert "call-hermes" in ids and "loop-hermes" in ids
    done = openai_client.completions.create(
        model="loop-hermes", prompt="<|im_start|>assistant\n", max_tokens=4
    )
    assert done.choices[0].text.startswith("<tool_call>")
    streamed = "".join(
        c.choices[0].text
        for c in openai_client.completions.create(
            model="loop-hermes", prompt="<|im_start|>assistant\n", max_tokens=4, stream=True
        )
    )
    assert streamed == done.choices[0].text


def test_openai_n_choices_plain_and_streamed(family_server, openai_client):
    """n choices are n generations of one request (batched on a model with slots): each its own
    reply, the prompt counted once, the completions summed; streamed, interleaved by index."""
    import openai

    one = openai_client.chat.completions.create(model="call-hermes-parallel", messages=USER, tools=TOOLS)
    three = openai_client.chat.completions.create(
        model="call-hermes-parallel", messages=USER, tools=TOOLS, n=3
    )
    assert [c.index for c in three.choices] == [0, 1, 2]
    want = [(t.function.name, t.function.arguments) for t in one.choices[0].message.tool_calls]
    ids = set()
    for c in three.choices:
        assert c.finish_reason == "tool_calls"
        assert [(t.function.name, t.function.arguments) for t in c.message.tool_calls] == want
        ids.update(t.id for t in c.message.tool_calls)
    assert len(ids) == 3 * len(want)  # every call its own id
    assert three.usage.prompt_tokens == one.usage.prompt_tokens
    assert three.usage.completion_tokens == 3 * one.usage.completion_tokens
    chunks = list(
        openai_client.chat.completions.create(
            model="loop-hermes",
            messages=USER,
            n=2,
            max_tokens=6,
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    texts = {0: "", 1: ""}
    finishes = {}
    for ch in chunks:
        for c in ch.choices:
            texts[c.index] += c.delta.content or ""
            if c.finish_reason:
                finishes[c.index] = c.finish_reason
    plain = openai_client.chat.completions.create(model="loop-hermes", messages=USER, max_tokens=6)
    want_text = plain.choices[0].message.content or ""
    assert set(finishes) == {0, 1}
    assert chunks[-1].usage.completion_tokens == 2 * plain.usage.completion_tokens
    assert want_text and texts == {0: want_text, 1: want_text}  # the scripted model's one reply
    for bad in (0, 17):
        with pytest.raises(openai.BadRequestError, match="n must be"):
            openai_client.chat.completions.create(model="loop-hermes", messages=USER, n=bad)
    with pytest.raises(openai.BadRequestError, match="n must be 1 here"):
        openai_client.completions.create(model="loop-hermes", prompt="hi", n=2)


def test_openai_completions_of_several_prompts_at_once(openai_client):
    """A list of prompts (langchain's OpenAI.generate batches so): a completion each, choice i for
    prompt i, each the same as that prompt sent alone; the usage summed."""
    import openai

    prompts = ["<|im_start|>assistant\n", "hello", "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n"]
    alone = [openai_client.completions.create(model="loop-hermes", prompt=p, max_tokens=4) for p in prompts]
    batch = openai_client.completions.create(model="loop-hermes", prompt=prompts, max_tokens=4)
    assert [c.index for c in batch.choices] == [0, 1, 2]
    assert [c.text for c in batch.choices] == [a.choices[0].text for a in alone]
    assert batch.usage.prompt_tokens == sum(a.usage.prompt_tokens for a in alone)
    assert batch.usage.completion_tokens == sum(a.usage.completion_tokens for a in alone)
    for bad, words in (
        ({"stream": True}, "stream takes one prompt"),
        ({"suffix": "x"}, "suffix takes one prompt"),
    ):
        with pytest.raises(openai.BadRequestError, match=words):
            openai_client.completions.create(model="loop-hermes", prompt=prompts, max_tokens=4, **bad)
    with pytest.raises(openai.BadRequestError, match=r"prompt\[1\] is empty"):
        openai_client.completions.create(model="loop-hermes", prompt=["a", ""], max_tokens=4)
    with pytest.raises(openai.BadRequestError, match="at most 16"):
        openai_client.completions.create(model="loop-hermes", prompt=["a"] * 17, max_tokens=4)


def test_openai_retrieves_one_model_and_the_server_says_it_is_healthy(family_server, openai_client):
    import openai

    listed = {m.id: m for m in openai_client.models.list()}
    one = openai_client.models.retrieve("loop-hermes")
    assert one.id == "loop-hermes" and one.object == "model"
    assert one.model_extra["callisto"] == listed["loop-hermes"].model_extra["callisto"]
    assert openai_client.models.retrieve("loop-hermes.gguf").id == "loop-hermes"  # as a request names it
    with pytest.raises(openai.NotFoundError, match="available models: .*loop-hermes"):
        openai_client.models.retrieve("no-such-model")
    r = httpx.get(family_server.url + "/health", timeout=30)
    assert r.status_code == 200 and r.json() == {"status": "ok"}


def test_a_base_url_without_v1_reaches_the_same_endpoints_as_on_llama_server(family_server, openai_client):
    """A client set up with the server's address alone sends ``/chat/completions``, ``/models``...;
    llama-server answers those paths, and so does Callisto, in OpenAI's shapes."""
    from openai import NotFoundError, OpenAI

    bare = OpenAI(base_url=family_server.url, api_key="unused", max_retries=0, timeout=60)
    assert [m.id for m in bare.models.list()] == [m.id for m in openai_client.models.list()]
    ask = {"model": "loop-hermes", "messages": USER, "tools": TOOLS, "temperature": 0}

    def calls(client) -> tuple[str, list[tuple[str, str]]]:
        choice = client.chat.completions.create(**ask).choices[0]
        return choice.finish_reason, [
            (c.function.name, c.function.arguments) for c in choice.message.tool_calls
        ]

    assert calls(bare) == calls(openai_client) == ("tool_calls", [("get_weather", '{"city": "Oslo"}')])
    text = bare.completions.create(model="loop-hermes", prompt="hi", max_tokens=3, temperature=0)
    again = openai_client.completions.create(model="loop-hermes", prompt="hi", max_tokens=3, temperature=0)
    assert text.choices[0].text == again.choices[0].text and text.usage.completion_tokens > 0
    with pytest.raises(NotFoundError, match="no-such-model"):
        bare.chat.completions.create(model="no-such-model", messages=USER)
    ask_rerank = {"model": "loop-hermes", "query": "hi", "documents": ["a", "b"]}
    ours, theirs = (
        httpx.post(family_server.url + p, json=ask_rerank, timeout=60) for p in ("/reranking", "/rerank")
    )
    assert ours.status_code != 404 and (ours.status_code, ours.json()) == (theirs.status_code, theirs.json())


# -- Anthropic -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("key", "expected"), CASES)
def test_anthropic_calls_stream_in_order_and_accumulate(anthropic_client, key, expected):
    plain = anthropic_client.messages.create(
        model=model_id(key), max_tokens=256, messages=USER, tools=ANTHROPIC_TOOLS
    )
    assert plain.stop_reason == "tool_use"
    got = [(b.name, b.input) for b in plain.content if b.type == "tool_use"]
    assert got == expected

    events = list(
        anthropic_client.messages.create(
            model=model_id(key), max_tokens=256, messages=USER, tools=ANTHROPIC_TOOLS, stream=True
        )
    )
    kinds = [e.type for e in events]
    assert kinds[0] == "message_start" and kinds[-2:] == ["message_delta", "message_stop"]
    opened = [e.index for e in events if e.type == "content_block_start"]
    assert opened == list(range(len(opened)))  # contiguous indices, in order
    stack = None
    for e in events:  # each block: start, deltas of its own index, stop
        if e.type == "content_block_start":
            assert stack is None
            stack = e.index
        elif e.type == "content_block_delta":
            assert e.index == stack
        elif e.type == "content_block_stop":
            assert e.index == stack
            stack = None
    assert events[-2].delta.stop_reason == "tool_use"

    with anthropic_client.messages.stream(
        model=model_id(key), max_tokens=256, messages=USER, tools=ANTHROPIC_TOOLS
    ) as stream:
        final = stream.get_final_message()
    assert [(b.name, b.input) for b in final.content if b.type == "tool_use"] == expected


def test_anthropic_loop_with_block_system_and_beta_query(family_server, anthropic_client):
    first = anthropic_client.messages.create(
        model="loop-hermes",
        max_tokens=64,
        messages=USER,
        tools=ANTHROPIC_TOOLS,
        system=[{"type": "text", "text": "Be brief."}],
    )
    use = next(b for b in first.content if b.type == "tool_use")
    assert use.id.startswith("toolu_")
    msgs = [
        *USER,
        {"role": "assistant", "content": [b.model_dump() for b in first.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": "sunny"}]},
    ]
    second = anthropic_client.beta.messages.create(
        model="loop-hermes", max_tokens=64, messages=msgs, tools=ANTHROPIC_TOOLS, system="Be brief."
    )
    assert second.stop_reason == "end_turn"
    assert [b.text for b in second.content if b.type == "text"] == [ANSWER]
    counted = anthropic_client.messages.count_tokens(
        model="loop-hermes", messages=msgs, tools=ANTHROPIC_TOOLS
    )
    assert counted.input_tokens > 10


def test_anthropic_lists_and_retrieves_the_models(anthropic_client):
    models = {m.id: m for m in anthropic_client.models.list()}
    one = models["loop-hermes"]
    assert one.type == "model" and one.display_name == "loop-hermes" and one.created_at is not None
    assert one.max_input_tokens == one.model_extra["callisto"]["n_ctx"]
    assert anthropic_client.models.retrieve("loop-hermes").id == "loop-hermes"


def test_anthropic_single_tool_choice(anthropic_client):
    reply = anthropic_client.messages.create(
        model="call-harmony-parallel",
        max_tokens=256,
        messages=USER,
        tools=ANTHROPIC_TOOLS,
        tool_choice={"type": "auto", "disable_parallel_tool_use": True},
    )
    assert [b.name for b in reply.content if b.type == "tool_use"] == ["get_weather"]


# -- Ollama ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("key", "expected"), CASES)
def test_ollama_calls_stream_alike(ollama_client, key, expected):
    plain = ollama_client.chat(model=model_id(key), messages=USER, tools=OLLAMA_TOOLS, stream=False)
    got = [(c.function.name, dict(c.function.arguments)) for c in plain.message.tool_calls]
    assert got == expected
    streamed = []
    parts = list(ollama_client.chat(model=model_id(key), messages=USER, tools=OLLAMA_TOOLS, stream=True))
    for part in parts:
        streamed += [(c.function.name, dict(c.function.arguments)) for c in part.message.tool_calls or []]
    assert streamed == expected
    assert parts[-1].done and not any(p.done for p in parts[:-1])


def test_ollama_loop_and_model_listing(ollama_client):
    first = ollama_client.chat(model="loop-hermes", messages=USER, tools=OLLAMA_TOOLS, stream=False)
    msgs = [*USER, first.message, {"role": "tool", "content": "sunny", "tool_name": "get_weather"}]
    # (Ollama's default tag, as its clients may name a model)
    second = ollama_client.chat(model="loop-hermes:latest", messages=msgs, tools=OLLAMA_TOOLS, stream=False)
    assert second.message.content == ANSWER and not second.message.tool_calls
    names = [m.model for m in ollama_client.list().models]
    assert "loop-hermes" in names
    shown = ollama_client.show("call-hermes")
    assert "tools" in (shown.capabilities or [])
    gen = ollama_client.generate(
        model="loop-hermes",
        prompt="<|im_start|>assistant\n",
        raw=True,
        options={"num_predict": 3},
        stream=False,
    )
    assert gen.response.startswith("<tool_call>") and gen.done


def test_ollama_sampler_options_reach_the_engine(family_server, ollama_client):
    """Every sampler option of Ollama's that the engine has is read (before: typical_p, the
    penalties and mirostat were dropped without a word), each within its range."""
    import ollama

    from app.engine.sampling import resolve_sampling
    from app.server._ollama import _generation

    options = {
        "temperature": 0.7,
        "top_k": 20,
        "top_p": 0.9,
        "min_p": 0.02,
        "typical_p": 0.95,
        "repeat_penalty": 1.1,
        "presence_penalty": 0.5,
        "frequency_penalty": -0.5,
        "mirostat": 2,
        "mirostat_tau": 4.0,
        "mirostat_eta": 0.2,
        "seed": 7,
        "num_predict": 3,
    }
    read = _generation({"options": options}, family_server, None)
    sampling, max_tokens = read["sampling"], read["max_tokens"]
    assert read["max_tokens_given"]
    params = resolve_sampling(None, sampling)  # the engine's own settings, each one as asked
    assert (params.typical_p, params.presence_penalty, params.frequency_penalty) == (0.95, 0.5, -0.5)
    assert (params.mirostat_mode, params.mirostat_tau, params.mirostat_eta) == (2, 4.0, 0.2)
    assert (params.temperature, params.top_k, params.top_p, params.min_p) == (0.7, 20, 0.9, 0.02)
    assert (params.repeat_penalty, params.seed, max_tokens) == (1.1, 7, 3)
    # and a request with them all is served by the engine's sampler chain
    reply = ollama_client.chat(model="loop-hermes", messages=USER, options=options, stream=False)
    assert reply.done and reply.eval_count <= 3
    for bad in ({"mirostat": 3}, {"typical_p": 1.5}, {"presence_penalty": -3}):
        with pytest.raises(ollama.ResponseError) as err:
            ollama_client.chat(model="loop-hermes", messages=USER, options=bad, stream=False)
        assert err.value.status_code == 400 and f"options.{next(iter(bad))}" in str(err.value)


def test_openai_takes_llama_servers_sampler_fields(family_server, openai_client):
    """top_k, min_p, typical_p, repeat_penalty (vLLM's repetition_penalty) and mirostat, as
    llama-server, LM Studio and vLLM take them beside OpenAI's fields (before: ignored)."""
    import openai

    from app.engine.sampling import resolve_sampling
    from app.server._openai import _sampling

    extra = {"top_k": 20, "min_p": 0.02, "typical_p": 0.95, "repetition_penalty": 1.1, "mirostat": 1}
    extra |= {"mirostat_tau": 4.0, "mirostat_eta": 0.2}
    params = resolve_sampling(None, _sampling(extra))
    assert (params.top_k, params.min_p, params.typical_p, params.repeat_penalty) == (20, 0.02, 0.95, 1.1)
    assert (params.mirostat_mode, params.mirostat_tau, params.mirostat_eta) == (1, 4.0, 0.2)
    assert (
        resolve_sampling(None, _sampling({"repeat_penalty": 1.3, "repetition_penalty": 1.1})).repeat_penalty
        == 1.3
    )
    reply = openai_client.chat.completions.create(
        model="loop-hermes", messages=USER, max_tokens=3, extra_body=extra
    )
    assert reply.choices[0].finish_reason in ("stop", "length", "tool_calls")
    for bad in ({"mirostat": 3}, {"min_p": 2}, {"top_k": -1}):
        with pytest.raises(openai.BadRequestError) as err:
            openai_client.chat.completions.create(
                model="loop-hermes", messages=USER, max_tokens=3, extra_body=bad
            )
        assert next(iter(bad)) in str(err.value)


# -- reasoning and stop sequences ------------------------------------------------------------------


def test_reasoning_comes_back_in_each_api_and_is_accepted_back(
    openai_client, anthropic_client, ollama_client
):
    reply = openai_client.chat.completions.create(model="think-hermes", messages=USER, tools=TOOLS)
    message = reply.choices[0].message
    assert message.model_extra["reasoning_content"].strip() == THOUGHT
    assert message.tool_calls[0].function.name == "get_weather" and not (message.content or "").strip()
    chunks = list(
        openai_client.chat.completions.create(model="think-hermes", messages=USER, tools=TOOLS, stream=True)
    )
    streamed = "".join(
        (c.choices[0].delta.model_extra or {}).get("reasoning_content") or "" for c in chunks if c.choices
    )
    assert streamed == message.model_extra["reasoning_content"]
    # the assistant turn goes back with its reasoning (Qwen3's template reads reasoning_content)
    again = openai_client.chat.completions.create(
        model="think-hermes",
        tools=TOOLS,
        messages=[
            *USER,
            message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": message.tool_calls[0].id, "content": "sunny"},
        ],
    )
    assert again.choices[0].finish_reason == "tool_calls"

    with anthropic_client.messages.stream(
        model="think-hermes", max_tokens=256, messages=USER, tools=ANTHROPIC_TOOLS
    ) as stream:
        final = stream.get_final_message()
    assert [b.type for b in final.content] == ["thinking", "tool_use"]
    assert final.content[0].thinking.strip() == THOUGHT

    chat = ollama_client.chat(
        model="think-hermes", messages=USER, tools=OLLAMA_TOOLS, stream=False, think=True
    )
    assert chat.message.thinking.strip() == THOUGHT and chat.message.tool_calls


def test_stop_sequences_cut_the_reply(openai_client, anthropic_client):
    first = openai_client.chat.completions.create(model="loop-hermes", messages=USER, tools=TOOLS)
    call = first.choices[0].message.tool_calls[0]
    msgs = [
        *USER,
        first.choices[0].message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "sunny"},
    ]
    cut = openai_client.chat.completions.create(
        model="loop-hermes", messages=msgs, tools=TOOLS, stop=["sunny"]
    )
    assert cut.choices[0].message.content == ANSWER[: ANSWER.index("sunny")]
    assert cut.choices[0].finish_reason == "stop"


def test_n_choices_are_batched_on_a_model_with_slots(tmp_path):
    """On a model with slots, a request's choices stream in one decode a step, as several clients'
    requests do (the scheduler's counts say so, not a clock)."""
    import contextlib

    from openai import OpenAI

    from tests.server.test_idle_ttl import FakeClock, _server
    from tests.ui.scripted_gguf import CHATML, write_scripted_gguf

    # a model that writes "a" until its budget ends: each choice lasts 200 tokens, so the four,
    # queued at once, overlap whatever the machine's load
    path = write_scripted_gguf(tmp_path / "slots.gguf", chat_template=CHATML, script={}, default_next="a")
    with contextlib.contextmanager(_server)({"slots": path}, FakeClock(), n_ctx=512, parallel=4) as srv:
        client = OpenAI(base_url=srv.url + "/v1", api_key="unused", max_retries=0, timeout=120)
        reply = client.chat.completions.create(model="slots", messages=USER, n=4, max_tokens=200)
        assert [c.index for c in reply.choices] == [0, 1, 2, 3]
        assert all(c.finish_reason == "length" and c.message.content == "a" * 200 for c in reply.choices)
        stats = srv.host.model(path.resolve()).backend.scheduler_stats()
        assert stats["slots"] == 4 and stats["max_seqs_in_batch"] >= 2


def test_n_choices_refused_whole_leave_nothing_running(family_server, openai_client):
    """A request the engine refuses (here: past the context) is one 400 for all its choices, and
    none of them is left generating: the next request is served at once."""
    import openai

    long = [{"role": "user", "content": "word " * 20000}]
    for stream in (False, True):
        with pytest.raises(openai.BadRequestError):
            openai_client.chat.completions.create(model="loop-hermes", messages=long, n=3, stream=stream)
    reply = openai_client.chat.completions.create(model="loop-hermes", messages=USER, max_tokens=4)
    assert reply.choices[0].finish_reason in ("stop", "length", "tool_calls")
