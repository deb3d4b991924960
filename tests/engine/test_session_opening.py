"""A session's opening messages and stop strings (what a made model gives the window's chat,
``app.server._presets.Preset.chat_values``): the model reads the opening after the system prompt
and before the conversation, every turn, and it is never part of the conversation; a stop string
ends a reply where it begins. On the real llama.cpp path with a scripted GGUF (its next token is
known from the current one: after the prompt it writes the alphabet)."""

from __future__ import annotations

import pytest

from app.engine.chat import ChatSession, lead_messages
from app.engine.context import measure
from app.engine.events import DoneEvent
from app.engine.messages import Message

OPENING = [Message(role="user", content="Remember: blue."), Message(role="assistant", content="Noted.")]


@pytest.fixture(scope="module")
def model(alphabet_model):
    return alphabet_model


def _reply(events) -> tuple[str, str | None]:
    done = [e for e in events if isinstance(e, DoneEvent)]
    return "".join(e.text for e in events if type(e).__name__ in ("TextDelta", "TextEvent")), (
        done[-1].finish_reason if done else None
    )


def test_the_opening_is_read_every_turn_and_never_joins_the_conversation(model):
    session = ChatSession(model, system_prompt="Be brief.", opening=OPENING, max_tokens=3)
    list(session.send("Hi"))
    prompt = session.last_prompt.text
    order = [prompt.index(t) for t in ("Be brief.", "Remember: blue.", "Noted.", "Hi")]
    assert order == sorted(order), prompt
    assert [m.role for m in session.messages] == ["user", "assistant"]  # the opening is not kept in it
    list(session.send("Again"))
    assert session.last_prompt.text.count("Remember: blue.") == 1
    assert [m.content for m in session.messages if m.role == "user"] == ["Hi", "Again"]
    assert lead_messages(session)[1:] == OPENING
    # the context meter counts it
    plain = ChatSession(model, system_prompt="Be brief.", messages=list(session.messages), max_tokens=3)
    assert measure(session).prompt_tokens > measure(plain).prompt_tokens


def test_a_stop_string_ends_the_reply_where_it_begins(model):
    text, finish = _reply(list(ChatSession(model, max_tokens=10).send("Hi")))
    assert text == "abcdefghij" and finish == "length"
    session = ChatSession(model, max_tokens=10, stop=("de",))
    text, finish = _reply(list(session.send("Hi")))
    assert text == "abc" and finish == "stop"
    assert session.messages[-1].content == "abc"
