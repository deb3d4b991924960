"""Continue with a remote engine (``RemoteChatSession.continue_reply``): a reply cut by its token
limit goes on in that same message where the endpoint reads the cut text as the reply's start:
Callisto parsing (the cut text after the rendered prompt), the Anthropic and Ollama APIs, and an
OpenAI-compatible endpoint whose ``/props`` answered (llama-server, Callisto). Against Callisto's
own server on a free loopback port, with scripted GGUFs whose next token is known from the
current one, so the reply shows what the model read. Also the one join rule (``app.engine.loop``):
a continued reply that ends in a call is one message before the call runs, so the next round
reads the whole reply, locally as remotely."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from app.engine.events import DoneEvent, TextEvent
from app.engine.remote import Provider, RemoteChatSession
from tests.engine.remote.conftest import make_tools
from tests.server.conftest import ANSWER, FAMILIES, ONE_CALL, call_text
from tests.server.test_idle_ttl import FakeClock, _server
from tests.support.tool_done import tool_done_template
from tests.ui.scripted_gguf import CHATML, write_scripted_gguf

QWEN3 = Path(__file__).resolve().parents[2] / "fixtures" / "chat_templates" / "Qwen-Qwen3-0.6B.jinja"
# "Hello there " is cut after 3 tokens; the rest is "friend."
WORDS = ["Hello", " there", " ", "friend", "."]
WHOLE = "".join(WORDS)
CALL = call_text("hermes", ONE_CALL)


def _words_model(path: Path, template: str, name: str) -> Path:
    return write_scripted_gguf(
        path,
        chat_template=template,
        control_tokens=("<|im_start|>", "<|im_end|>", "<|endoftext|>"),
        user_tokens=WORDS,
        script={"\n": WORDS[0], **dict(zip(WORDS, WORDS[1:], strict=False)), WORDS[-1]: "<|im_end|>"},
        default_next="<|im_end|>",
        name=name,
    )


def _cut_then_call_model(path: Path) -> Path:
    """Qwen 2.5's template (Hermes), marked after a tool result: "Let me" " check." then a call;
    after the call's result, ``ANSWER``."""
    return write_scripted_gguf(
        path,
        chat_template=tool_done_template(),
        control_tokens=FAMILIES["hermes"].control,
        user_tokens=["Let me", " check.", CALL, "<|tool_done|>", ANSWER],
        script={
            "\n": "Let me",
            "Let me": " check.",
            " check.": CALL,
            CALL: "<|im_end|>",
            "<|tool_done|>": ANSWER,
            ANSWER: "<|im_end|>",
        },
        default_next="<|im_end|>",
        name="cut-call",
    )


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("remote-continue")
    return {
        "words": _words_model(folder / "words.gguf", CHATML, "words"),
        "qwen3-words": _words_model(folder / "qwen3-words.gguf", QWEN3.read_text(encoding="utf-8"), "qwen3"),
        "cut-call": _cut_then_call_model(folder / "cut-call.gguf"),
    }


@pytest.fixture(scope="module")
def server(models) -> Iterator[object]:
    yield from _server(models, FakeClock(), max_loaded=3)


def _done(events) -> DoneEvent:
    done = events[-1]
    assert isinstance(done, DoneEvent), events
    return done


def _cut(server, kind: str, model: str, parser: str = "auto", **kw) -> RemoteChatSession:
    """A session whose first reply was cut after 3 tokens ("Hello there ")."""
    session = RemoteChatSession(Provider(server.url, kind=kind, mode=parser), model, max_tokens=3, **kw)
    done = _done(list(session.send("Hi")))
    assert done.finish_reason == "length", done
    assert session.messages[-1].content == "Hello there "
    return session


CASES = [
    ("openai", "words", "auto", "api"),  # its /props answered: llama-server's reading, a prefill
    ("openai", "words", "api", "api"),  # asked of /props once its reply was cut
    ("openai", "qwen3-words", "auto", "callisto"),  # Qwen3's template: Callisto parses, thinking on
    ("anthropic", "words", "api", "api"),  # sent without its trailing space, as that API asks
    ("anthropic", "qwen3-words", "api", "api"),
    ("ollama", "words", "api", "api"),
    ("ollama", "qwen3-words", "callisto", "callisto"),
]


@pytest.mark.parametrize(("kind", "model", "parser", "resolved"), CASES)
def test_a_cut_reply_goes_on_in_the_same_message(server, models, kind, model, parser, resolved):
    template = models[model] if parser == "callisto" and kind == "ollama" else None
    session = _cut(server, kind, model, parser, template=template)
    assert session.parser == resolved and session.continues_in_place()
    events = list(session.continue_reply(max_tokens=10))
    done = _done(events)
    assert done.finish_reason == "stop", done
    # what follows the cut, and one message: the cut text, then the rest, once
    assert "".join(e.text for e in events if isinstance(e, TextEvent)).lstrip() == "friend."
    assert [m.role for m in session.messages] == ["user", "assistant"]
    assert session.messages[-1].content == WHOLE and not session.messages[-1].reasoning
    if resolved == "callisto":  # the cut text follows the rendered prompt
        assert session.last_raw_prompt.endswith("<|im_start|>assistant\nHello there ")


def test_an_openai_endpoint_without_props_is_asked_by_message(server, monkeypatch):
    """An OpenAI endpoint whose /props does not answer may be OpenAI's own or vLLM, which answer
    a final assistant message as a finished turn: no Continue in place there."""
    from app.engine.remote import _session

    asked = []

    def no_props(provider, model=None):
        asked.append(model)
        return None  # what fetch_props says of an endpoint whose /props is a 404

    monkeypatch.setattr(_session, "fetch_props", no_props)
    session = _cut(server, "openai", "words", "api")
    assert asked == ["words"] and not session.continues_in_place()
    with pytest.raises(ValueError, match="cannot go on from a reply in place"):
        session.continue_reply()
    assert session.messages[-1].content == "Hello there "  # nothing taken
    session.messages.pop()
    list(session.regenerate())
    assert asked == ["words"]  # asked once a session


def test_a_session_with_nothing_to_continue_cannot(server):
    session = RemoteChatSession(Provider(server.url, kind="anthropic"), "words", parser="api")
    assert not session.continues_in_place()
    session = _cut(server, "anthropic", "words", "api")
    session.messages.append(session.messages[0])  # ends with a user message
    assert not session.continues_in_place()


def test_nothing_written_leaves_the_cut_reply_as_it_was(server):
    session = _cut(server, "ollama", "words", "api")
    before = list(session.messages)
    events = list(session.continue_reply(max_tokens=10, sampling={"temperature": -1}))  # refused
    assert _done(events).finish_reason == "error"
    assert session.messages == before


@pytest.mark.parametrize(("kind", "parser"), [("openai", "auto"), ("anthropic", "api"), ("ollama", "api")])
def test_a_continued_reply_that_ends_in_a_call_is_whole_before_the_call_runs(server, kind, parser):
    registry, dispatcher, ran = make_tools()
    session = RemoteChatSession(
        Provider(server.url, kind=kind, mode=parser),
        "cut-call",
        registry=registry,
        dispatcher=dispatcher,
        max_tokens=1,
    )
    assert _done(list(session.send("Weather?"))).finish_reason == "length"
    assert session.messages[-1].content == "Let me"
    done = _done(list(session.continue_reply(max_tokens=20)))
    assert done.finish_reason == "stop" and done.rounds == 2, done
    assert ran == [("get_weather", {"city": "Oslo"})]
    roles = [m.role for m in session.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert session.messages[1].content.strip() == "Let me check." and session.messages[1].tool_calls
    assert session.messages[3].content == ANSWER
    if session.parser == "callisto":  # the second round read the whole reply
        assert "Let me check." in session.last_raw_prompt


def test_the_local_engine_reads_the_whole_continued_reply_in_its_next_round(models):
    """Before, a continued reply was joined to its cut text only when the turn ended: a call it
    made was answered in a round whose prompt showed the reply without the cut text."""
    from app.engine.chat import ChatSession
    from app.engine.llm import load_model

    registry, dispatcher, ran = make_tools()
    model = load_model(models["cut-call"], n_ctx=2048, isolate=False)
    try:
        session = ChatSession(model, registry=registry, dispatcher=dispatcher, max_tokens=1)
        assert _done(list(session.send("Weather?"))).finish_reason == "length"
        done = _done(list(session.continue_reply(max_tokens=20)))
        assert done.finish_reason == "stop" and done.rounds == 2, done.error
        assert ran == [("get_weather", {"city": "Oslo"})]
        assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]
        assert (
            session.messages[1].content.strip() == "Let me check." and session.messages[3].content == ANSWER
        )
        assert "Let me check." in session._replies.last_prompt.text  # the second round's prompt
    finally:
        model.close()


def test_white_space_the_anthropic_api_was_sent_without_is_not_shown_twice():
    """The cut text keeps its trailing white space on screen; sent without it, the model writes
    it again, and that start of the rest is dropped, in whatever pieces it comes."""
    from app.engine.formats.events import TextDelta
    from app.engine.remote._session import _after_rewritten

    def rest(pieces: list[str], rewritten: str) -> str:
        out = []
        for piece in pieces:
            ev, rewritten = (
                (_after_rewritten(TextDelta(piece), rewritten)) if rewritten else (TextDelta(piece), "")
            )
            out.append(ev.text)
        return "".join(out)

    assert rest([" friend."], " ") == "friend."
    assert rest(["\n", "\nNext", " line"], "\n\n") == "Next line"
    assert rest(["friend."], " ") == "friend."  # not written again: nothing dropped
    assert rest(["\n", "x\n\n"], "\n\n") == "x\n\n"  # only the start; later white space is the reply's


@pytest.mark.parametrize(
    ("kind", "mode", "in_place"),
    [
        ("anthropic", "api", True),
        ("ollama", "api", True),
        ("openai", "callisto", True),
        ("openai", "api", False),
    ],
)
def test_a_conversation_opened_again_knows_without_asking_and_goes_on(server, kind, mode, in_place):
    """A session made for a saved conversation has not replied yet: whether it continues in place
    is known without a request (the window asks on its own thread), and Continue then learns the
    endpoint's mode on the engine's thread."""
    from app.engine.messages import Message

    cut = [Message(role="user", content="Hi"), Message(role="assistant", content="Hello there ")]
    session = RemoteChatSession(
        Provider(server.url, kind=kind, mode=mode), "words", messages=list(cut), max_tokens=10
    )
    assert session.parser is None and session.continues_in_place() is in_place
    if not in_place:
        return
    done = _done(list(session.continue_reply()))
    assert done.finish_reason == "stop", done
    assert [m.content for m in session.messages] == ["Hi", WHOLE]


def test_an_endpoint_that_cannot_be_reached_keeps_the_cut_reply():
    import socket

    from app.engine.messages import Message

    with socket.socket() as s:  # a port no one listens on
        s.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{s.getsockname()[1]}"
    cut = [Message(role="user", content="Hi"), Message(role="assistant", content="Hello there ")]
    session = RemoteChatSession(
        Provider(url, kind="openai", mode="callisto", max_retries=0), "words", messages=list(cut)
    )
    assert session.continues_in_place()
    with pytest.raises(ValueError):
        session.continue_reply()
    assert session.messages == cut
