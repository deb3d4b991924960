"""Remote sessions against Callisto's own API server on loopback, in each of the three APIs and in both
tool modes: the calls are read (from the API's tool calls, or by Callisto's parser from raw text), run
here through the local dispatcher, their results sent back, and the follow-up answer streamed."""

from __future__ import annotations

import pytest

from app.engine.events import (
    DoneEvent,
    ReasoningEvent,
    TextEvent,
    ToolCallFinishedEvent,
    ToolCallStartedEvent,
)
from app.engine.remote import Provider, RemoteChatSession, list_models
from tests.engine.remote.conftest import THOUGHT, make_tools
from tests.server.conftest import ANSWER

KINDS = ["openai", "anthropic", "ollama"]


def _run(session, text="What is the weather in Oslo?"):
    events = list(session.send(text))
    done = events[-1]
    assert isinstance(done, DoneEvent), events
    return events, done


def _calls(events):
    return [(e.call.name, e.call.arguments) for e in events if isinstance(e, ToolCallStartedEvent)]


def _session(server, kind, model, parser, **kw):
    registry, dispatcher, ran = make_tools()
    provider = Provider(server.url, kind=kind)
    return RemoteChatSession(
        provider, model, parser=parser, registry=registry, dispatcher=dispatcher, max_tokens=64, **kw
    ), ran


def test_models_are_listed_in_each_api(callisto_server):
    for kind in KINDS:
        names = list_models(Provider(callisto_server.url, kind=kind))
        assert "loop-hermes" in names and "think-hermes" in names, (kind, names)


@pytest.mark.parametrize("kind", KINDS)
def test_api_tools_call_runs_locally_and_the_answer_follows(callisto_server, kind):
    session, ran = _session(callisto_server, kind, "loop-hermes", "api")
    events, done = _run(session)
    assert done.finish_reason == "stop", done
    assert _calls(events) == [("get_weather", {"city": "Oslo"})]
    assert ran == [("get_weather", {"city": "Oslo"})]
    finished = [e for e in events if isinstance(e, ToolCallFinishedEvent)]
    assert finished[0].outcome.content == "Sunny, 21 C in Oslo"
    assert "".join(e.text for e in events if isinstance(e, TextEvent)) == ANSWER
    assert done.rounds == 2 and done.ttft_s is not None and done.generated_tokens > 0
    assert done.parser == "api" and set(done.call_parsers.values()) == {f"api:{kind}"}
    roles = [m.role for m in session.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert session.messages[2].content == "Sunny, 21 C in Oslo"
    assert session.messages[2].tool_call_id == session.messages[1].tool_calls[0].id
    assert session.messages[3].content == ANSWER


@pytest.mark.parametrize("kind", ["openai", "ollama"])
def test_callisto_parsing_reads_the_same_calls_as_the_api_and_the_local_loop(
    callisto_server, remote_models, kind
):
    from app.engine.llm import load_model
    from app.engine.session import build_session

    session, ran = _session(callisto_server, kind, "loop-hermes", "callisto", template=remote_models["loop"])
    events, done = _run(session)
    assert done.finish_reason == "stop", done
    assert done.parser == "callisto" and done.tool_format == "hermes"
    assert set(done.call_parsers.values()) == {"callisto:hermes"}
    assert done.template_source == str(remote_models["loop"])
    remote_calls = _calls(events)
    assert "".join(e.text for e in events if isinstance(e, TextEvent)) == ANSWER

    api, _ = _session(callisto_server, kind, "loop-hermes", "api")
    assert _calls(_run(api)[0]) == remote_calls

    registry, dispatcher, _ = make_tools()
    model = load_model(str(remote_models["loop"]), n_ctx=2048, n_threads=1)
    try:
        local = build_session(model, tools=None, max_tokens=64, registry=registry, dispatcher=dispatcher)
        local_events = list(local.send("What is the weather in Oslo?"))
    finally:
        model.close()
    assert _calls(local_events) == remote_calls == [("get_weather", {"city": "Oslo"})]
    assert ran == [("get_weather", {"city": "Oslo"})]
    assert [m.role for m in session.messages] == [m.role for m in local.messages]


@pytest.mark.parametrize("kind", KINDS)
def test_reasoning_is_shown_in_each_api(callisto_server, kind):
    session, ran = _session(callisto_server, kind, "think-hermes", "api", max_rounds=1)
    events, done = _run(session)
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningEvent))
    assert THOUGHT in reasoning, events
    assert session.messages[1].reasoning.strip() == reasoning.strip()
    assert done.finish_reason == "rounds" and ran == []  # one round: the call is shown, not run


def test_callisto_parsing_finds_the_models_template_in_the_servers_props(callisto_server):
    """Callisto's server answers llama-server's ``/props`` for the model a request names
    (``?model=``): Callisto parsing needs no template given, and reads the same calls as the API."""
    session, ran = _session(callisto_server, "openai", "loop-hermes", "callisto")
    events, done = _run(session)
    assert done.finish_reason == "stop", done.error
    assert done.parser == "callisto" and done.template_source.endswith("/props")
    assert _calls(events) == [("get_weather", {"city": "Oslo"})] and ran == [
        ("get_weather", {"city": "Oslo"})
    ]
    # another model of the same server: its own template (Qwen3's), not the first one offered
    think, _ = _session(callisto_server, "openai", "think-hermes", "callisto", max_rounds=1)
    _run(think)
    assert "enable_thinking" in think.template.chat_template
    assert "enable_thinking" not in session.template.chat_template


def test_callisto_parsing_without_a_template_says_how_to_give_one():
    """An endpoint with no ``/props`` (an OpenAI-compatible server that is not llama-server's)."""
    from tests.engine.remote.misbehaving import MisbehavingServer

    with MisbehavingServer(lambda req: req.status(404)) as srv:
        session, _ = _session(srv, "openai", "some-model", "callisto")
        events, done = _run(session)
    assert done.finish_reason == "error"
    assert "chat template" in done.error and "a Hugging Face repository id (org/name)" in done.error
    assert [m.role for m in session.messages] == ["user"]


@pytest.mark.parametrize("shape", ["string", "named list"])
def test_callisto_parsing_takes_the_template_from_a_tokenizer_config(
    callisto_server, remote_models, tmp_path, shape
):
    import json

    from app.engine.models.metadata import read_metadata

    meta = read_metadata(remote_models["loop"])
    template = (
        meta.chat_template if shape == "string" else [{"name": "default", "template": meta.chat_template}]
    )
    config = tmp_path / "tokenizer_config.json"
    config.write_text(json.dumps({"chat_template": template, "eos_token": {"content": "<|im_end|>"}}))
    session, ran = _session(callisto_server, "openai", "loop-hermes", "callisto", template=config)
    events, done = _run(session)
    assert done.finish_reason == "stop" and done.template_source == str(config)
    assert _calls(events) == [("get_weather", {"city": "Oslo"})] and ran == [
        ("get_weather", {"city": "Oslo"})
    ]


def test_reasoning_and_a_call_read_by_callistos_parser(callisto_server, remote_models):
    session, ran = _session(
        callisto_server, "openai", "think-hermes", "callisto", template=remote_models["think"], max_rounds=1
    )
    events, done = _run(session)
    assert THOUGHT in "".join(e.text for e in events if isinstance(e, ReasoningEvent))
    assert "<think>" not in "".join(e.text for e in events if isinstance(e, TextEvent))
    assert done.finish_reason == "rounds" and ran == []  # read as a call, not run past the round limit
    assert list(done.call_parsers.values()) == ["callisto:hermes"]
    assert session.messages[-1].reasoning.strip() == THOUGHT


def test_bad_choices_are_clear_errors(tmp_path):
    with pytest.raises(ValueError, match="http:// or https://"):
        Provider("localhost:8080")
    with pytest.raises(ValueError, match="unknown remote kind"):
        Provider("http://127.0.0.1:1", kind="grpc")
    with pytest.raises(ValueError, match="Anthropic API"):
        RemoteChatSession(Provider("http://127.0.0.1:1", kind="anthropic"), "m", parser="callisto")
    with pytest.raises(ValueError, match="unknown parser"):
        RemoteChatSession(Provider("http://127.0.0.1:1"), "m", parser="magic")
    broken = tmp_path / "tokenizer_config.json"
    broken.write_text("{not json")
    with pytest.raises(ValueError, match="cannot read the template file"):
        RemoteChatSession(Provider("http://127.0.0.1:1"), "m", parser="callisto", template=broken)


def test_a_forced_tool_choice_under_callisto_parsing_goes_with_a_grammar(callisto_server, remote_models):
    from app.engine.events import NoticeEvent

    session, _ = _session(
        callisto_server, "openai", "loop-hermes", "callisto", template=remote_models["loop"]
    )
    events = list(session.send("Weather?", tool_choice="required"))
    assert [e.code for e in events if isinstance(e, NoticeEvent)] == []  # the call came: nothing broke
    assert session.last_grammar is None  # the second round (after the tool result) is free
    assert _calls(events) == [("get_weather", {"city": "Oslo"})]
