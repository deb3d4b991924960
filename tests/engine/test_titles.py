"""A conversation's title: the first words of its first message, or a few words the model writes
for it. What models put around a title is taken off; the real llama.cpp path (scripted GGUFs, in
this process and in an engine process) holds the model to one line of a title's length."""

from __future__ import annotations

import pytest

from app.engine.errors import GenerationError
from app.engine.generation import complete
from app.engine.llm import load_model
from app.engine.titles import (
    FIRST_WORDS,
    MAX_TITLE,
    QUOTE,
    TITLE_GRAMMAR,
    clean_title,
    model_title,
    remote_title,
    title_from_message,
    title_prompt,
)
from tests.ui.scripted_gguf import CHATML, write_scripted_gguf


@pytest.mark.parametrize(
    ("written", "title"),
    [
        ("Roses in spring", "Roses in spring"),
        ('Title: "Roses in spring."', "Roses in spring"),
        ("conversation title - Tax return help", "Tax return help"),
        ("  **Garden   planning**  ", "Garden planning"),
        ("“Trip to Rome”", "Trip to Rome"),
        ("\n\nPlanning a trip\nand more lines", "Planning a trip"),
        ("Name tags for the party", "Name tags for the party"),  # a title that starts with "Name"
        ("load_model fails on Windows", "load_model fails on Windows"),
        (
            "Evil \u202etitle\u200b\x1b[31m",
            "Evil title[31m",
        ),  # a bidi override, a zero-width space, an escape
        ("\u202e\u200b", None),
        ("...", None),
        ("  ", None),
        ("", None),
    ],
)
def test_what_models_write_around_a_title_is_taken_off(written, title):
    assert clean_title(written) == title


def test_a_long_title_is_cut_at_a_word_and_one_word_where_there_is_none():
    words = clean_title("word " * 30)
    assert words is not None and len(words) <= MAX_TITLE and words.endswith("word")
    assert words.split() == ["word"] * len(words.split())
    assert clean_title("x" * 100) == "x" * MAX_TITLE


def test_a_new_chat_is_called_by_its_first_message_s_first_words():
    assert title_from_message("  How do I\n\nprune   roses? ") == "How do I prune roses?"
    assert title_from_message("a" * 100) == "a" * FIRST_WORDS
    assert title_from_message(" \n") == "New chat"  # an image alone


def test_the_prompt_quotes_the_start_of_the_question_and_of_the_answer():
    prompt = title_prompt("How do I prune roses?\n\nThey are old.", "Cut in **March**.")
    assert "User: How do I prune roses? They are old." in prompt
    assert "Assistant: Cut in **March**." in prompt
    long = title_prompt("q" * 5000, "")
    assert "q" * QUOTE + "…" in long and "q" * (QUOTE + 1) not in long
    assert "Assistant:" not in long  # no answer yet: none quoted


def _title_gguf(folder):
    """A ChatML GGUF that answers any prompt with "Title: Roses in spring." and its end."""
    words = ["Title:", " Roses", " in", " spring", "."]
    script = dict(zip(["\n", *words], [*words, "<|im_end|>"], strict=True))
    return write_scripted_gguf(
        folder / "titles.gguf", chat_template=CHATML, script=script, default_next="a", user_tokens=words
    )


def _title_model(folder, *, isolate: bool):
    return load_model(_title_gguf(folder), n_ctx=512, isolate=isolate)


@pytest.mark.parametrize("isolate", [False, True], ids=["in-process", "engine-process"])
def test_the_model_s_title_is_read_and_cleaned(tmp_path, isolate):
    model = _title_model(tmp_path, isolate=isolate)
    try:
        assert model_title(model, "How do I prune old roses?", "Cut them in March.") == "Roses in spring"
    finally:
        model.close()
    with pytest.raises(GenerationError):
        model_title(model, "again?", "")


def test_the_grammar_holds_a_model_that_never_stops_to_one_line_of_a_title_s_length(alphabet_model):
    """The alphabet model writes "abc…z abc…" and never ends by itself: held to the title's grammar
    it stops at MAX_TITLE characters (or at the token budget, first)."""
    long = complete(alphabet_model, title_prompt("hi", ""), grammar=TITLE_GRAMMAR, max_tokens=200)
    assert long.text == ("abcdefghijklmnopqrstuvwxyz " * 3)[:MAX_TITLE] and long.finish_reason == "stop"
    assert model_title(alphabet_model, "hi", "hello") == "abcdefghijklmnopqrstuvwx"  # 24 tokens


@pytest.fixture(scope="module")
def title_server(tmp_path_factory):
    """Callisto's own API server on a free loopback port, serving the title model as "titles"."""
    from app.server import ApiServer, ServerConfig

    path = _title_gguf(tmp_path_factory.mktemp("title-server"))
    server = ApiServer(ServerConfig(port=0, models=[str(path)], use_library=False, n_ctx=512, n_threads=1))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.parametrize("kind", ["openai", "anthropic", "ollama"])
def test_a_remote_engine_s_model_names_the_chat_through_its_api(title_server, kind):
    from app.engine.remote import Provider

    provider = Provider(title_server.url, kind=kind)
    assert (
        remote_title(provider, "titles", "How do I prune old roses?", "Cut them in March.")
        == "Roses in spring"
    )


def test_a_remote_engine_s_error_is_raised_with_its_words(title_server):
    from app.engine.remote import Provider

    with pytest.raises(RuntimeError, match="nothing-here"):
        remote_title(Provider(title_server.url, kind="openai"), "nothing-here", "Roses?", "")
