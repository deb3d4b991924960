"""Streamed Markdown is rendered block by block: the work of one flush is bounded by the open
tail block (plus the blocks that just finished), never by the reply's length. Qt-free: it counts
the Markdown characters each update renders; it does not time anything."""

from __future__ import annotations

from app.ui.markdown_render import IncrementalMarkdown, render_markdown
from tests.ui.scripted_gguf import code_heavy_section, unique_chunks


def _stream(text: str, tokens_per_flush: int) -> tuple[IncrementalMarkdown, list[tuple[int, int, int]]]:
    md = IncrementalMarkdown()
    pieces = unique_chunks(text)
    log: list[tuple[int, int, int]] = []  # (rendered chars, tail chars, chars of blocks that just finished)
    for i, piece in enumerate(pieces, 1):
        md.append(piece)
        if i % tokens_per_flush == 0:
            up = md.update()
            log.append((up.rendered_chars, len(up.tail_text), sum(len(b.text) for b in up.new_blocks)))
    up = md.update(final=True)
    log.append((up.rendered_chars, len(up.tail_text), sum(len(b.text) for b in up.new_blocks)))
    return md, log


def test_each_flush_renders_only_the_tail_and_newly_finished_blocks():
    section = code_heavy_section()
    text = section * 8  # ~17,000 characters: paragraphs, lists, headings, 24 fenced python blocks
    md, log = _stream(text, tokens_per_flush=3)
    assert md.text == text
    assert "".join(b.text for b in md.blocks) == text  # nothing lost, nothing rendered twice as a block
    biggest_block = max(len(b.text) for b in md.blocks)
    assert biggest_block < 700, biggest_block
    for rendered, tail, finished in log:
        assert rendered == tail + finished
    # one flush never renders more than a block or two plus a few tokens, whatever has streamed before
    assert max(r for r, _, _ in log) <= 2 * biggest_block + 40
    assert max(r for r, _, _ in log) < len(text) / 10
    # and the work per flush does not grow as the reply grows: the last quarter costs what the first did
    n = len(log) // 4
    assert max(r for r, _, _ in log[-n:]) <= max(r for r, _, _ in log[:n]) + 40


def test_blocks_render_like_the_whole_text_and_copy_numbers_are_global():
    section = code_heavy_section()
    md, _ = _stream(section * 2, tokens_per_flush=5)
    whole = render_markdown(section * 2)
    assert md.code_blocks == whole.code_blocks and len(md.code_blocks) == 6
    html = "".join(b.html for b in md.blocks)
    assert all(f'href="copy:{i}"' in html for i in range(6))
    # the same headings, lists, links and highlighted code as one render of the whole text
    for tag in ("<h3>", "<ul>", "<ol>", '<a href="https://example.org/doc2">', "<strong>loader</strong>"):
        assert html.count(tag) == whole.html.count(tag), tag


def test_unclosed_fence_is_the_tail_and_a_closing_fence_finishes_it():
    md = IncrementalMarkdown()
    md.append("Intro line\n\n```python\nx = 1\n")
    up = md.update()
    assert [b.text for b in up.new_blocks] == ["Intro line\n\n"]
    assert up.tail_text == "```python\nx = 1\n" and up.tail.code_blocks == ["x = 1\n"]
    md.append("\ny = 2\n```\nafter")
    up = md.update()
    assert [b.text for b in up.new_blocks] == ["```python\nx = 1\n\ny = 2\n```\n"]
    assert up.tail_text == "after" and md.code_blocks == ["x = 1\n\ny = 2"]
    up = md.update()  # nothing new: only the tail again
    assert up.new_blocks == [] and up.rendered_chars == len("after")


def test_indented_continuation_stays_in_its_list_item():
    md = IncrementalMarkdown()
    md.append("- item one\n\n  more of item one\n- item two\n\nNext paragraph\n")
    up = md.update(final=True)
    assert [b.text for b in up.new_blocks] == [
        "- item one\n\n  more of item one\n- item two\n\n",
        "Next paragraph\n",
    ]
    assert md.final and up.tail_text == ""
