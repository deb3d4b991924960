"""GLM-4's wire beyond its cases: what the chat loop asks of a family without a marker."""

from __future__ import annotations

from app.engine.formats import FORMATS

FMT = FORMATS["glm4"]


def test_a_call_may_have_begun_once_a_word_is_written():
    """A thinking budget's end compiles ``auto``'s grammar again only for an answer not begun:
    GLM-4's call opens with a tool's name, so any word may be one (the parser still reads it)."""
    assert not FMT.call_begun("") and not FMT.call_begun("\n ")
    assert FMT.call_begun("get_wea") and FMT.call_begun("\nParis") and FMT.call_begun("<|assistant|>")


def test_the_call_being_written_shows_its_tool():
    """The window shows the call a model is writing, by its tool's name (read from its first
    word: the shared hints look for markup this wire has not)."""
    from tests.engine.formats.harness import TOOLS

    for head in ("", "\n", "<|assistant|>"):
        stream = FMT.stream(TOOLS, orphan_close=False)
        stream.feed(head + 'get_time\n{"zo')
        raw = stream.writing_call()
        assert raw is not None and FMT.call_name(raw) == "get_time", head
