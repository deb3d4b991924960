"""Speculative decoding on the server (issue 31): the models it loads get its draft settings
(``ServerConfig.ngram_draft`` / ``draft_model``, ``serve --ngram-draft`` / ``--draft-model``), and
OpenAI replies count the drafted tokens in ``usage.completion_tokens_details`` as OpenAI counts
predicted outputs (accepted / rejected), non-streamed and on a stream's usage chunk, through the
official openai SDK; the rounds of a turn add up."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from app.engine.messages import Message
from tests.engine.test_loop import _add_dispatcher, _Script
from tests.support.load_spy import spy_on_loads
from tests.support.ports import free_port


@pytest.fixture
def drafting(tiny_gguf, monkeypatch) -> Iterator[tuple[object, list, str]]:
    """(a server with n-gram drafting off and a draft model, the settings its models loaded with,
    the served model's id)."""
    from app.server import ApiServer, ServerConfig

    model, draft = tiny_gguf(), tiny_gguf()  # the same vocabulary: a draft model for it
    loads = spy_on_loads(monkeypatch)
    server = ApiServer(
        ServerConfig(
            port=free_port(),
            models=[str(model)],
            use_library=False,
            n_ctx=512,
            n_threads=1,
            ngram_draft=False,
            draft_model=str(draft),
        )
    )
    server.start()
    try:
        yield server, loads, model.stem
    finally:
        server.stop()


def _drafts(usage) -> tuple[int, int]:
    """(accepted, rejected) of an SDK usage object, checked to be counts that can be true."""
    assert usage is not None and usage.completion_tokens_details is not None
    details = usage.completion_tokens_details
    accepted, rejected = details.accepted_prediction_tokens, details.rejected_prediction_tokens
    assert isinstance(accepted, int) and isinstance(rejected, int)
    assert accepted >= 0 and rejected >= 0
    assert accepted <= usage.completion_tokens  # accepted drafted tokens are tokens of the reply
    return accepted, rejected


def test_openai_usage_counts_the_drafted_tokens_and_the_models_load_with_the_draft_settings(drafting):
    from openai import OpenAI

    server, loads, model = drafting
    client = OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
    ask = {"model": model, "max_tokens": 8, "temperature": 0}
    messages = [{"role": "user", "content": "Repeat: one two three one two three"}]

    reply = client.chat.completions.create(messages=messages, **ask)
    _drafts(reply.usage)
    assert reply.usage.prompt_tokens_details.cached_tokens >= 0  # the other fields stay

    chunks = list(
        client.chat.completions.create(
            messages=messages, stream=True, stream_options={"include_usage": True}, **ask
        )
    )
    assert chunks[-1].choices == [] and all(c.usage is None for c in chunks[:-1])
    _drafts(chunks[-1].usage)

    done = client.completions.create(prompt="one two three one two three", **ask)
    _drafts(done.usage)
    parts = list(
        client.completions.create(
            prompt="one two three", stream=True, stream_options={"include_usage": True}, **ask
        )
    )
    assert parts[-1].choices == [] and parts[-1].usage is not None
    _drafts(parts[-1].usage)
    plain = list(client.completions.create(prompt="one two", stream=True, **ask))
    assert all(p.usage is None for p in plain)  # only when asked for

    assert loads and all(s.ngram_draft is False and s.draft_model for s in loads)
    assert server.host.settings.ngram_draft is False


def test_usage_says_accepted_and_rejected_from_the_turns_counts():
    from app.server._engine import TurnEnd
    from app.server._openai import _usage

    usage = _usage(
        TurnEnd(
            "stop",
            prompt_tokens=10,
            completion_tokens=70,
            draft_tokens=60,
            draft_accepted=42,
            reasoning_tokens=9,
        )
    )
    assert usage["completion_tokens_details"] == {
        "reasoning_tokens": 9,
        "accepted_prediction_tokens": 42,
        "rejected_prediction_tokens": 18,
    }
    assert (usage["prompt_tokens"], usage["completion_tokens"], usage["total_tokens"]) == (10, 70, 80)
    none = _usage(TurnEnd("stop", completion_tokens=5))
    assert none["completion_tokens_details"] == {
        "reasoning_tokens": 0,
        "accepted_prediction_tokens": 0,
        "rejected_prediction_tokens": 0,
    }


def test_the_rounds_of_a_turn_add_their_drafted_tokens_up():
    from app.calls import ToolCall
    from app.engine.formats.events import TextDelta, ToolCallDone
    from app.engine.loop import RoundEnd, run_rounds

    call = ToolCall("call00000", "add", {"a": 2, "b": 3}, raw="<call>")
    source = _Script(
        ([ToolCallDone(0, call)], RoundEnd(generated_tokens=9, draft_tokens=12, draft_accepted=8)),
        ([TextDelta("It is 5.")], RoundEnd(generated_tokens=4, draft_tokens=3, draft_accepted=1)),
    )
    events = list(
        run_rounds(source, [Message(role="user", content="2+3?")], dispatcher=_add_dispatcher(), max_rounds=4)
    )
    done = events[-1]
    assert done.rounds == 2 and (done.draft_tokens, done.draft_accepted) == (15, 9)


@pytest.fixture
def alphabet(tmp_path, monkeypatch) -> Iterator[object]:
    """A server with n-gram drafting off, serving a scripted model that writes the alphabet and a
    space, round and round. The draft policy's cost is fixed (the CPU's default): measured on a
    loaded machine it could say no draft pays, and the counts would follow the load."""
    from app.server import ApiServer, ServerConfig

    monkeypatch.setenv("CALLISTO_DRAFT_ALPHA", "0.35")  # (the engine process inherits it)
    from tests.ui.scripted_gguf import CHATML, streaming_script, write_scripted_gguf

    path = write_scripted_gguf(
        tmp_path / "abc.gguf", chat_template=CHATML, script=streaming_script(), default_next="a"
    )
    server = ApiServer(
        ServerConfig(
            port=free_port(), models=[str(path)], use_library=False, n_ctx=512, n_threads=1, ngram_draft=False
        )
    )
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_a_predicted_output_is_drafted_from_and_counted_as_openai_counts_it(alphabet):
    """OpenAI's ``prediction``: with n-gram drafting off, the prediction alone drafts; the reply is
    the same with it, with a wrong one and without, and usage says what was accepted and rejected."""
    import httpx
    from openai import OpenAI

    client = OpenAI(base_url=f"{alphabet.url}/v1", api_key="unused", max_retries=0)
    kw = dict(model="abc", messages=[{"role": "user", "content": "go"}], max_tokens=40, temperature=0)
    plain = client.chat.completions.create(**kw)
    text = plain.choices[0].message.content
    assert text.startswith("abcdefghij") and _drafts(plain.usage) == (0, 0)
    right = client.chat.completions.create(**kw, prediction={"type": "content", "content": text})
    assert right.choices[0].message.content == text
    accepted, _rejected = _drafts(right.usage)
    assert accepted > 10
    parts = {
        "type": "content",
        "content": [{"type": "text", "text": "zyx wvu "}, {"type": "text", "text": "tsr"}],
    }
    wrong = client.chat.completions.create(**kw, prediction=parts)
    assert wrong.choices[0].message.content == text
    stream = client.chat.completions.create(
        **kw,
        prediction={"type": "content", "content": text},
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == text
    assert _drafts(chunks[-1].usage)[0] > 10
    for bad in ({"type": "text", "content": "x"}, {"type": "content", "content": 5}, "x"):
        r = httpx.post(f"{alphabet.url}/v1/chat/completions", json={**kw, "prediction": bad}, timeout=60)
        assert r.status_code == 400 and r.json()["error"]["param"] == "prediction"
