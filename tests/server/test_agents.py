"""Issue 32, Must show 3: the agent frameworks people use, unchanged, against ``python -m app
serve``'s server (the same ``ApiServer``, on a free loopback port) with the demo model,
SmolLM2-135M-Instruct (hermes calls). Each scenario runs to a final answer with the tool invoked
the number of times it needs (not more), with the settings the README gives for a small model:

* openai-agents: the first step forced (``tool_choice="required"``), the tool's result is the
  answer (``tool_use_behavior="stop_on_first_tool"``), plain and streamed, on Chat Completions
  and on the Responses API (its default model);
* pydantic-ai: a function tool and a structured output type (output tools): the function tool is
  offered until it is answered, the output tool once it is;
* langchain-openai: ``bind_tools`` with a named tool, the ``ToolMessage`` round trip answered with
  ``tool_choice="none"``, ``with_structured_output``, on both APIs (``use_responses_api``);
* simonw's ``llm``: a model configured as OpenAI-compatible in ``extra-openai-models.yaml``, a
  prompt with a function tool (``llm`` has no ``tool_choice``: the model's entry sends the
  ``X-Callisto-Tool-Choice: once`` header);
* the official openai (``parse`` with a pydantic model), anthropic (a tool_use / tool_result round
  trip, streamed) and ollama (tools, streaming, ``format`` with a schema) clients;
* retrieval: langchain's ``OpenAIEmbeddings`` and pydantic-ai's ``Embedder`` find each query's
  matching text by the model's embeddings.

The model's own arguments are not asserted (a 135M model's numbers are its own): what the tool got
is what the answer must carry.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import BaseModel

pytestmark = pytest.mark.live

MODEL = "SmolLM2-135M-Instruct.Q4_1"
QUESTION = "What is 2 + 3?"
ADD = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two whole numbers.",
        "parameters": {
            "type": "object",
            "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            "required": ["a", "b"],
        },
    },
}


class Total(BaseModel):
    total: int


class Weather(BaseModel):
    city: str
    sunny: bool


def _adder(calls: list[tuple[int, int]]):
    def add(a: int, b: int) -> int:
        """Add two whole numbers."""
        calls.append((a, b))
        return a + b

    return add


# -- openai-agents ------------------------------------------------------------------------------


def _agent(url: str, calls: list[tuple[int, int]], *, responses: bool = False) -> Any:
    """``responses``: the Responses API model, openai-agents' default for an OpenAI client."""
    from agents import (
        Agent,
        ModelSettings,
        OpenAIChatCompletionsModel,
        OpenAIResponsesModel,
        function_tool,
        set_tracing_disabled,
    )
    from openai import AsyncOpenAI

    set_tracing_disabled(True)
    client = AsyncOpenAI(base_url=url + "/v1", api_key="unused", max_retries=0, timeout=120)
    kind = OpenAIResponsesModel if responses else OpenAIChatCompletionsModel
    return Agent(
        name="calculator",
        instructions="You add numbers with the add tool.",
        model=kind(model=MODEL, openai_client=client),
        tools=[function_tool(_adder(calls))],
        model_settings=ModelSettings(tool_choice="required", temperature=0, max_tokens=96),
        tool_use_behavior="stop_on_first_tool",
    )


@pytest.mark.parametrize("responses", [False, True], ids=["chat-completions", "responses"])
def test_openai_agents_function_tool_forced_first_step(smol_server, responses):
    from agents import Runner

    calls: list[tuple[int, int]] = []
    result = Runner.run_sync(_agent(smol_server.url, calls, responses=responses), QUESTION, max_turns=3)
    assert len(calls) == 1
    assert str(result.final_output) == str(sum(calls[0]))


@pytest.mark.parametrize("responses", [False, True], ids=["chat-completions", "responses"])
def test_openai_agents_streamed_run(smol_server, responses):
    from agents import Runner

    calls: list[tuple[int, int]] = []

    async def run() -> tuple[Any, set[str]]:
        streamed = Runner.run_streamed(
            _agent(smol_server.url, calls, responses=responses), QUESTION, max_turns=3
        )
        kinds = {event.type async for event in streamed.stream_events()}
        return streamed.final_output, kinds

    output, kinds = asyncio.run(run())
    assert len(calls) == 1 and str(output) == str(sum(calls[0]))
    assert {"raw_response_event", "run_item_stream_event"} <= kinds


# -- pydantic-ai --------------------------------------------------------------------------------


def test_pydantic_ai_tool_and_structured_output(smol_server):
    from pydantic_ai import Agent, RunContext, Tool
    from pydantic_ai.capabilities import PrepareOutputTools
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider
    from pydantic_ai.tools import ToolDefinition

    def answered(ctx: RunContext, name: str) -> bool:
        return any(
            getattr(part, "part_kind", "") == "tool-return" and part.tool_name == name
            for message in ctx.messages
            for part in message.parts
        )

    async def until_answered(ctx: RunContext, tool_def: ToolDefinition) -> ToolDefinition | None:
        return None if answered(ctx, tool_def.name) else tool_def

    async def once_answered(ctx: RunContext, tool_defs: list[ToolDefinition]) -> list[ToolDefinition]:
        return tool_defs if answered(ctx, "add") else []

    calls: list[tuple[int, int]] = []
    model = OpenAIChatModel(
        MODEL, provider=OpenAIProvider(base_url=smol_server.url + "/v1", api_key="unused")
    )
    agent = Agent(
        model,
        output_type=Total,
        tools=[Tool(_adder(calls), prepare=until_answered)],
        capabilities=[PrepareOutputTools(once_answered)],
        instructions="Add the numbers with the add tool, then give the total.",
        model_settings={"temperature": 0, "max_tokens": 96},
    )
    result = agent.run_sync(QUESTION)
    assert len(calls) == 1
    assert isinstance(result.output, Total)


# -- langchain-openai ---------------------------------------------------------------------------


def _chat(url: str, *, responses: bool = False) -> Any:
    """``responses``: langchain's ``use_responses_api`` (the Responses API, ``/v1/responses``)."""
    from langchain_openai import ChatOpenAI

    return ChatOpenAI(
        model=MODEL,
        base_url=url + "/v1",
        api_key="unused",
        temperature=0,
        max_tokens=96,
        max_retries=0,
        use_responses_api=responses,
    )


@pytest.mark.parametrize("responses", [False, True], ids=["chat-completions", "responses"])
def test_langchain_named_tool_and_tool_message_round_trip(smol_server, responses):
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import tool

    calls: list[tuple[int, int]] = []
    add = tool(_adder(calls))
    llm = _chat(smol_server.url, responses=responses)
    messages: list[Any] = [HumanMessage(QUESTION)]
    asked = llm.bind_tools([add], tool_choice="add").invoke(messages)
    assert [c["name"] for c in asked.tool_calls] == ["add"]
    if not responses:  # the Responses API has no finish reason: a call is an item
        assert asked.response_metadata["finish_reason"] == "tool_calls"
    messages.append(asked)
    messages.extend(add.invoke(call) for call in asked.tool_calls)  # ToolMessages
    answer = llm.bind_tools([add], tool_choice="none").invoke(messages)
    assert not answer.tool_calls and answer.text.strip()  # content is blocks with the Responses API
    assert len(calls) == 1


@pytest.mark.parametrize("responses", [False, True], ids=["chat-completions", "responses"])
def test_langchain_with_structured_output(smol_server, responses):
    llm = _chat(smol_server.url, responses=responses)
    weather = llm.with_structured_output(Weather).invoke("Is it sunny in Paris?")
    assert isinstance(weather, Weather)


# -- simonw's llm -------------------------------------------------------------------------------


def test_llm_openai_compatible_model_with_a_function_tool(smol_server, tmp_path, monkeypatch):
    import yaml

    entry = {
        "model_id": "callisto-smollm2",
        "model_name": MODEL,
        "api_base": smol_server.url + "/v1",
        "supports_tools": True,
        "headers": {"X-Callisto-Tool-Choice": "once"},  # llm sends no tool_choice
    }
    (tmp_path / "extra-openai-models.yaml").write_text(yaml.safe_dump([entry]), encoding="utf-8")
    monkeypatch.setenv("LLM_USER_PATH", str(tmp_path))
    import llm

    model = llm.get_model("callisto-smollm2")
    calls: list[tuple[int, int]] = []
    chain = model.conversation().chain(
        QUESTION,
        tools=[_adder(calls)],
        options={"temperature": 0, "max_tokens": 64},
        key="unused",
        chain_limit=4,
    )
    text = chain.text()
    assert len(calls) == 1 and text.strip()


# -- the official clients -----------------------------------------------------------------------


def test_openai_parse_with_a_pydantic_model(smol_server):
    from openai import OpenAI

    client = OpenAI(base_url=smol_server.url + "/v1", api_key="unused", max_retries=0, timeout=120)
    reply = client.chat.completions.parse(
        model=MODEL,
        messages=[{"role": "user", "content": "Is it sunny in Paris?"}],
        response_format=Weather,
        max_tokens=96,
        temperature=0,
    )
    choice = reply.choices[0]
    assert choice.finish_reason == "stop" and isinstance(choice.message.parsed, Weather)


def test_anthropic_tool_use_round_trip_streamed(smol_server):
    from anthropic import Anthropic

    client = Anthropic(base_url=smol_server.url, api_key="unused", max_retries=0, timeout=120)
    fn = ADD["function"]
    tools = [{"name": fn["name"], "description": fn["description"], "input_schema": fn["parameters"]}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    with client.messages.stream(
        model=MODEL,
        max_tokens=96,
        messages=messages,
        tools=tools,
        tool_choice={"type": "tool", "name": "add", "disable_parallel_tool_use": True},
    ) as stream:
        kinds = {event.type for event in stream}
        asked = stream.get_final_message()
    assert asked.stop_reason == "tool_use" and "input_json" in kinds
    (use,) = [b for b in asked.content if b.type == "tool_use"]
    calls: list[tuple[int, int]] = []
    result = _adder(calls)(**use.input)
    messages += [
        {"role": "assistant", "content": [b.model_dump(exclude_none=True) for b in asked.content]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": use.id, "content": str(result)}]},
    ]
    answer = client.messages.create(
        model=MODEL,
        max_tokens=64,
        messages=messages,
        tools=tools,
        tool_choice={"type": "none"},
    )
    assert answer.stop_reason in ("end_turn", "max_tokens")
    assert [b.type for b in answer.content] == ["text"] and len(calls) == 1


def test_ollama_tools_streaming_and_format(smol_server):
    import ollama

    # Ollama's API has no tool choice: the client sends Callisto's header (one round of calls, then
    # an answer)
    client = ollama.Client(host=smol_server.url, timeout=120, headers={"X-Callisto-Tool-Choice": "once"})
    messages: list[dict[str, Any]] = [{"role": "user", "content": QUESTION}]
    options = {"temperature": 0, "num_predict": 64}
    parts = list(client.chat(model=MODEL, messages=messages, tools=[ADD], stream=True, options=options))
    assert parts[-1].done
    (call,) = [c for p in parts for c in p.message.tool_calls or []]
    assert call.function.name == "add"
    calls: list[tuple[int, int]] = []
    result = _adder(calls)(**call.function.arguments)
    messages += [
        {"role": "assistant", "content": "", "tool_calls": [call.model_dump()]},
        {"role": "tool", "content": str(result), "tool_name": "add"},
    ]
    parts = list(client.chat(model=MODEL, messages=messages, tools=[ADD], stream=True, options=options))
    assert parts[-1].done and not [c for p in parts for c in p.message.tool_calls or []]
    assert "".join(p.message.content or "" for p in parts).strip() and len(calls) == 1

    reply = client.chat(
        model=MODEL,
        messages=[{"role": "user", "content": "Is it sunny in Paris?"}],
        format=Weather.model_json_schema(),
        options={"temperature": 0, "num_predict": 96},
    )
    assert reply.done_reason == "stop"
    Weather.model_validate(json.loads(reply.message.content))


# -- embeddings: a retrieval step as the frameworks write it --------------------------------------

DOCS = [
    "The cat sat on the mat.",
    "Stock markets fell sharply today.",
    "A simple recipe for homemade bread.",
]
QUERIES = [
    "A cat is sitting on a rug.",
    "Share prices dropped on Wall Street.",
    "How do I bake bread at home?",
]


def _nearest(query: list[float], docs: list[list[float]]) -> int:
    return max(range(len(docs)), key=lambda i: sum(a * b for a, b in zip(query, docs[i], strict=True)))


def test_langchain_openai_embeddings_retrieve_the_matching_text(smol_server):
    """langchain's ``OpenAIEmbeddings`` as its docs set it for an OpenAI-compatible server: text,
    not tiktoken's token ids (``check_embedding_ctx_length=False``)."""
    from langchain_openai import OpenAIEmbeddings

    emb = OpenAIEmbeddings(
        model=MODEL,
        base_url=smol_server.url + "/v1",
        api_key="unused",
        check_embedding_ctx_length=False,
        max_retries=0,
    )
    docs = emb.embed_documents(DOCS)
    assert [_nearest(emb.embed_query(q), docs) for q in QUERIES] == [0, 1, 2]


def test_pydantic_ai_embedder_retrieves_the_matching_text(smol_server):
    from pydantic_ai.embeddings import Embedder
    from pydantic_ai.embeddings.openai import OpenAIEmbeddingModel
    from pydantic_ai.providers.openai import OpenAIProvider

    model = OpenAIEmbeddingModel(
        MODEL, provider=OpenAIProvider(base_url=smol_server.url + "/v1", api_key="unused")
    )
    embedder = Embedder(model)
    docs = embedder.embed_documents_sync(DOCS).embeddings
    hits = [
        _nearest(list(embedder.embed_query_sync(q).embeddings[0]), [list(d) for d in docs]) for q in QUERIES
    ]
    assert hits == [0, 1, 2]
