"""TeX math in replies reads as Unicode text (``app.ui.math_text``), in the Markdown renderer the
chat uses: the spans models write are found (money and code are left alone), the common commands
are written with Unicode, Markdown does not mangle what is inside, and no input raises."""

from __future__ import annotations

import html
import re

import pytest

from app.ui.markdown_render import IncrementalMarkdown, render_markdown
from app.ui.math_text import MAX_DEPTH, math_html, math_spans


def _text(rendered: str) -> str:
    """The rendered HTML's text, as the chat shows it."""
    return html.unescape(re.sub(r"<[^>]+>", "", rendered))


@pytest.mark.parametrize(
    "tex, shown",
    [
        (r"17 \times 23 = 391", "17 × 23 = 391"),
        (r"\frac{a+b}{2}", "(a+b)/2"),
        (r"\frac{1}{3}", "1/3"),
        (r"\frac{(a)+(b)}{(c)}", "((a)+(b))/(c)"),
        (r"x^2 + y_1 = \alpha", "x² + y₁ = α"),
        (r"x^{10} - x_{n+1}", "x¹⁰ - xₙ₊₁"),
        (r"e^{i\pi}", "e^(iπ)"),
        (r"\sqrt{x+1} \le \infty", "√(x+1) ≤ ∞"),
        (r"\sqrt[3]{8} = 2", "³√8 = 2"),
        (r"\mathbb{R}^n \to \mathbb{R}", "ℝⁿ → ℝ"),
        (r"\text{speed} = \frac{d}{t}", "speed = d/t"),
        (r"\left( \frac{1}{2} \right)^2", "( 1/2 )²"),
        (r"\int_0^1 x^2 \, dx = \tfrac{1}{3}", "∫₀¹ x² dx = 1/3"),
        (r"\sin^2 x + \cos^2 x = 1", "sin² x + cos² x = 1"),
        (r"\vec{v} \cdot \hat{n}", "v\u20d7 · n\u0302"),
        (r"a \equiv b \pmod{n}", "a ≡ b (mod n)"),
        (r"\forall x \in A, \exists y \notin B", "∀ x ∈ A, ∃ y ∉ B"),
        (r"\binom{n}{k}", "C(n, k)"),
        (r"\sum_{i=1}^{n} i", "∑ᵢ₌₁ⁿ i"),
        (r"\foo{x} + 1", r"\foo{x} + 1"),  # a command it does not know stays as written
        (r"\$5 \% 3", "$5 % 3"),
    ],
)
def test_common_tex_reads_as_unicode(tex, shown):
    assert _text(math_html(tex)) == shown


def test_boxed_answers_are_bold_and_environments_keep_their_lines():
    assert math_html(r"\boxed{391}") == "<b>391</b>"
    aligned = math_html(r"\begin{aligned} a &= b \\ c &= d \end{aligned}")
    assert [line.strip() for line in aligned.split("<br>")] == ["a = b", "c = d"]


@pytest.mark.parametrize(
    "text, spans",
    [
        (r"so \(x\) and \[y\]", [("x", False), ("y", True)]),
        ("$$a$$ then $b$", [("a", True), ("b", False)]),
        ("It costs $5 and $10.", []),  # money, as pandoc reads it
        ("$x$5 and $ y $", []),  # a digit after the close, spaces inside the dollars
        ("Set $HOME/$USER and $PATH:$HOME", []),  # shell words in a sentence: no math in them
        ("$x, y$ and $f(x)$ and $n$", [("x, y", False), ("f(x)", False), ("n", False)]),
        (r"a \$ sign and $c$", [("c", False)]),
        ("$$\nx = 1\n$$", [("\nx = 1\n", True)]),
    ],
)
def test_spans_are_found_as_pandoc_finds_them(text, spans):
    assert [(s.tex, s.display) for s in math_spans(text)] == spans


def test_a_reply_shows_its_math_and_markdown_leaves_it_whole():
    reply = (
        "The product is \\(17 \\times 23 = 391\\), so $a_1 + b_1$ stays *plain*.\n\n"
        "$$\\frac{n(n+1)}{2}$$\n\n"
        "Code keeps it: `$x_1$` and\n\n```python\nprint('$$a_b$$')\n```\n"
    )
    out = render_markdown(reply)
    text = _text(out.html)
    assert "17 × 23 = 391" in text and "a₁ + b₁" in text and "(n(n+1))/2" in text
    assert "\\(" not in text and "\\times" not in text
    assert "<em>plain</em>" in out.html and "<em>1" not in out.html  # "_" in math is no emphasis
    assert '<p align="center">' in out.html  # display math on its own line
    assert "<code>$x_1$</code>" in out.html and out.code_blocks == ["print('$$a_b$$')"]


def test_a_streamed_reply_renders_its_math_as_the_whole_does():
    reply = "First \\(x^2\\).\n\nThen $$\\alpha + \\beta$$\n\nDone, $y_2$."
    inc = IncrementalMarkdown()
    for c in reply:
        inc.append(c)
        inc.update()
    inc.update(final=True)
    streamed = _text("".join(b.html for b in inc.blocks))
    whole = _text(render_markdown(reply).html)
    assert "".join(streamed.split()) == "".join(whole.split())  # (the blocks: no newline between)
    assert "x²" in streamed and "α + β" in streamed and "y₂" in streamed


@pytest.mark.parametrize(
    "tex",
    [
        r"\frac{a",
        "^",
        "_",
        r"\sqrt",
        "}}}{{",
        "{" * 5000 + "x" + "}" * 5000,
        "\\",
        r"\begin{",
        r"\sqrt[",
        "&&\\\\",
    ],
)
def test_no_input_raises_and_deep_nesting_is_bounded(tex):
    out = math_html(tex)
    assert isinstance(out, str)
    if tex.startswith("{" * (MAX_DEPTH + 5)):
        assert "x" in out


def test_an_unclosed_span_is_text():
    assert math_spans(r"see \(x and $$y") == []
