"""Live: held calls on real models with no tool training. SmolLM2-135M-Instruct and the Gemma 3
270M base model (ChatML fallback), both with the hermes format forced, call the built-in tools
and an MCP server's tools (nested objects, arrays, enums, integers, optional fields) under
``required`` and a named tool choice: every one of 20 fixed prompts gives a call that parses and
validates. ``none`` offers no tools and gives no call.

Each prompt is its own test (one held generation of at most 320 tokens): the work of a test is
bounded by that count, so a busy machine that runs it three times slower is still far from the
per-test time limit (one test of 20 generations hit it twice)."""

from __future__ import annotations

import jsonschema
import pytest

from app.engine import generate, load_model
from app.engine.chat import ChatSession
from app.engine.constraints import compile_constraint
from app.engine.events import ToolCallStartedEvent
from app.engine.formats import FORMATS
from app.engine.messages import Message
from app.engine.render import render_prompt
from app.tools import ToolRegistry
from app.tools.builtins import register_builtin_tools
from app.tools.mcp import McpManager, McpServerConfig
from tests.support.mcp_servers import server_argv

pytestmark = pytest.mark.live

PROMPTS = [
    "What is 17 times 23?",
    "Book a trip to Lisbon for Ana, who is 34, in business class.",
    "What time is it in Tokyo right now?",
    "Tag apples and pears green.",
    "Compute the square root of 1764.",
    "I need three nights in Oslo, Norway for me (Bo, 41) and Kim (39), economy please.",
    "Which day of the week is it today?",
    "Mark the items cups, plates and forks as blue, at most two of them.",
    "How much is 2 to the power of 20?",
    "Plan a weekend in Rome for the Smith twins, both 12 years old.",
    "Tell me the current date in UTC.",
    "Colour the tasks 'write report' and 'call mum' red.",
    "Subtract 389 from 1000.",
    "Get me to Nairobi with my colleague Ada (29) in business, note: window seats.",
    "What's the time in New York?",
    "Label every fruit in this list as green: kiwi, lime, grape.",
    "Divide 144 by 12 and add 7.",
    "A single traveller, Li (55), wants four nights in Kyoto.",
    "Is it morning or evening in London now?",
    "Put a blue tag on the folders inbox and archive.",
]


@pytest.fixture(scope="module")
def tools():
    registry = ToolRegistry()
    register_builtin_tools(registry)
    argv = server_argv("schemas")
    with McpManager([McpServerConfig(name="trips", command=argv[0], args=tuple(argv[1:]))]) as mcp:
        mcp.start()
        mcp.register_tools(registry)
        yield registry.openai_tools()


@pytest.fixture(scope="module", params=["smollm2", "gemma3"])
def model(request, smollm2_path, gemma3_path):
    # One thread: on a busy 2-core machine two llama.cpp threads wait on each other at every step of
    # the graph while the other is descheduled, and a token takes seconds instead of milliseconds.
    # Drafting on, as a user runs it: a verified draft keeps the sampled distribution but not the
    # exact path (a batched decode's logits may differ in the last bits), and with it Gemma's seed 1
    # wrote zeros up to the limit on the first named-tool prompt until held numbers were bounded
    # (tests/engine/test_constraints_digits.py).
    m = load_model(
        smollm2_path if request.param == "smollm2" else gemma3_path,
        n_ctx=4096,
        n_threads=1,
        ngram_draft=True,
    )
    yield m
    m.close()


def _schemas(tools):
    return {t["function"]["name"]: t["function"]["parameters"] for t in tools}


def _held_call(model, tools, prompt: str, choice) -> tuple[str, dict]:
    rendered = render_prompt(model, [Message(role="user", content=prompt)], tools=tools, tool_format="hermes")
    c = compile_constraint(model, family="hermes", tools=tools, tool_choice=choice, parallel_tool_calls=False)
    # a light repetition penalty: these small models otherwise repeat a value until the token limit
    res = generate(
        model,
        rendered.text,
        max_tokens=320,
        constraint=c,
        sampling={"temperature": 0.2, "seed": 1, "repeat_penalty": 1.2},
    ).run()
    reply = FORMATS["hermes"].parse(res.text, tools)
    assert res.finish_reason == "stop", (prompt, res.text)
    assert len(reply.tool_calls) == 1 and reply.content.strip() == "", (prompt, res.text)
    call = reply.tool_calls[0]
    return call.name, dict(call.arguments)


EVERY_PROMPT = pytest.mark.parametrize("i", range(len(PROMPTS)))


@EVERY_PROMPT
def test_required_gives_a_valid_call_for_every_prompt(model, tools, i):
    assert {"book_trip", "tag_items", "calculator", "current_datetime"} <= set(_schemas(tools))
    schemas = _schemas(tools)
    name, args = _held_call(model, tools, PROMPTS[i], "required")
    jsonschema.validate(args, schemas[name])


@EVERY_PROMPT
def test_a_named_tool_gives_a_valid_call_to_it_for_every_prompt(model, tools, i):
    schemas = _schemas(tools)
    names = sorted(schemas)
    forced = names[i % len(names)]
    name, args = _held_call(model, tools, PROMPTS[i], {"type": "function", "function": {"name": forced}})
    assert name == forced
    jsonschema.validate(args, schemas[name])


def test_none_never_calls_and_the_prompt_holds_no_schema(model, tools):
    registry = ToolRegistry()
    register_builtin_tools(registry)
    session = ChatSession(
        model,
        tool_format="hermes",
        registry=registry,
        tool_choice="none",
        max_tokens=48,
        sampling={"temperature": 0.2, "seed": 1},
    )
    for prompt in PROMPTS[:4]:
        events = list(session.send(prompt))
        assert not [e for e in events if isinstance(e, ToolCallStartedEvent)]
        text = session.last_prompt.text
        assert "calculator" not in text and "<tool_call>" not in text and '"parameters"' not in text
        assert session.last_prompt.tools_sent is False or not session.last_prompt.tools_sent


@EVERY_PROMPT
def test_i32_required_with_parallel_calls_ends_by_itself_within_the_limit(model, tools, i):
    """Issue 32: under ``required`` with parallel calls allowed (the default ``max_calls``), the
    reply (through the chat loop, as the server and the window run it) ends by itself within the
    token limit: finish ``stop`` (the server's ``tool_calls``), at most ``max_calls`` distinct calls,
    each valid. Before, a small model wrote call after call until the limit."""
    from app.engine.chat import DEFAULT_MAX_CALLS, LocalReplies
    from app.engine.formats.events import ToolCallDone
    from app.engine.loop import CallIds, call_key, run_rounds

    replies = LocalReplies(
        model,
        lambda: [Message(role="user", content=PROMPTS[i])],
        family="hermes",
        tools=tools,
        ids=CallIds(),
        max_tokens=320,
        sampling={"temperature": 0.2, "seed": 1, "repeat_penalty": 1.2},
        tool_choice="required",
    )
    messages: list[Message] = []
    events = list(run_rounds(replies, messages, dispatcher=None, max_rounds=1, max_calls=DEFAULT_MAX_CALLS))
    done = events[-1]
    calls = [e.call for e in events if isinstance(e, ToolCallDone)]
    assert done.finish_reason == "stop" and done.generated_tokens < 320, (PROMPTS[i], done, messages)
    assert 1 <= len(calls) <= DEFAULT_MAX_CALLS and len({call_key(c) for c in calls}) == len(calls)
    schemas = _schemas(tools)
    for call in calls:
        jsonschema.validate(dict(call.arguments), schemas[call.name])
    assert messages[0].tool_calls == calls and messages[0].content.strip() == ""
