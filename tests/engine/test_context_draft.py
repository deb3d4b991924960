"""``measure_draft``: the context the next prompt takes with the message being written, on a real
scripted GGUF and its ChatML template: it is what ``measure`` counts with that message appended,
its ``draft_tokens`` what the message adds (as many as the model's tokenizer makes of it, and its
wrapping), nothing for blank text, and the conversation itself is not changed."""

from __future__ import annotations

import pytest

from app.engine.chat import ChatSession
from app.engine.context import measure, measure_draft
from app.engine.messages import Message


@pytest.fixture(scope="module")
def model(alphabet_model):
    return alphabet_model


def test_the_message_being_written_is_counted_on_top_of_the_conversation(model):
    session = ChatSession(model, system_prompt="Be brief.", max_tokens=3)
    list(session.send("Hi"))
    before = list(session.messages)
    base = measure(session)
    assert measure_draft(session, "") == base and measure_draft(session, " \n ").draft_tokens == 0
    short = measure_draft(session, "abc")
    longer = measure_draft(session, "abc " * 20)
    with_message = measure(session, [*session.messages, Message(role="user", content="abc " * 20)])
    assert longer.prompt_tokens == with_message.prompt_tokens and longer.n_ctx == base.n_ctx
    assert longer.draft_tokens == longer.prompt_tokens - base.prompt_tokens
    assert 0 < short.draft_tokens < longer.draft_tokens
    assert longer.draft_tokens >= len(model.tokenize_text("abc " * 20, special=False))
    assert session.messages == before  # only measured

    # a message too long for the context: the usage says it does not fit
    huge = measure_draft(session, "abc " * 400)
    assert not huge.fits and huge.draft_tokens > 400


def test_a_new_chat_counts_the_message_against_the_system_prompt_alone(model):
    session = ChatSession(model, system_prompt="Be brief.", max_tokens=3)
    usage = measure_draft(session, "hello there")
    alone = measure(session, [Message(role="user", content="hello there")])
    assert usage.prompt_tokens == alone.prompt_tokens
    # (an empty chat is measured with an empty message in place of the first: the words are the difference)
    assert usage.draft_tokens == alone.prompt_tokens - measure(session).prompt_tokens > 0
