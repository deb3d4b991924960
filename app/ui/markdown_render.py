"""Markdown -> Qt rich-text HTML, with highlighted code blocks that carry a copy link.

Qt-free on purpose (only python-markdown and pygments): the chat view calls it on
the UI thread at a throttled rate, so it must stay cheap and never raise.

Fenced code blocks are cut out before python-markdown sees the text, so an
unclosed fence while a reply is still streaming renders as code, not as prose.
Each code block gets a ``copy:N`` link; ``RenderedMarkdown.code_blocks[N]`` is
its raw text.

While a reply streams, ``IncrementalMarkdown`` splits the text into finished blocks
(a paragraph, list or heading followed by a blank line and a new unindented block; a
closed code fence) whose HTML is rendered once and kept, and an open *tail* block that
is re-rendered on each update. So the work of one update is bounded by the tail and the
blocks that just finished, never by the length of the whole reply.
"""

from __future__ import annotations

import html
import re
import threading
from dataclasses import dataclass, field

__all__ = [
    "WARM_LANGUAGES",
    "IncrementalMarkdown",
    "MarkdownBlock",
    "MarkdownUpdate",
    "RenderedMarkdown",
    "render_markdown",
    "is_warm",
    "split_fences",
    "warm_up",
]

_FENCE = re.compile(r"^(?P<indent>[ \t]{0,3})(?P<fence>`{3,}|~{3,})[ \t]*(?P<lang>[^\s`]*)[^\n]*$", re.M)


@dataclass
class RenderedMarkdown:
    html: str
    code_blocks: list[str] = field(default_factory=list)


def split_fences(text: str) -> list[tuple[str, str, str]]:
    """Split into ("text", chunk, "") and ("code", code, lang) segments; an unclosed fence runs to the end."""
    out: list[tuple[str, str, str]] = []
    pos = 0
    while True:
        m = _FENCE.search(text, pos)
        if m is None:
            out.append(("text", text[pos:], ""))
            return out
        out.append(("text", text[pos : m.start()], ""))
        fence = m.group("fence")
        body_start = m.end() + 1 if m.end() < len(text) else m.end()
        closer = re.compile(r"^[ \t]{0,3}" + re.escape(fence[0]) + "{" + str(len(fence)) + r",}[ \t]*$", re.M)
        c = closer.search(text, body_start)
        if c is None:
            out.append(("code", text[body_start:], m.group("lang")))
            return out
        code = text[body_start : c.start()]
        if code.endswith("\n"):
            code = code[:-1]
        out.append(("code", code, m.group("lang")))
        pos = c.end()


_LEXERS: dict[str, object] = {}
_FORMATTERS: dict[bool, object] = {}


def _lexer(lang: str):
    """The pygments lexer of ``lang`` (plain text when unknown), built once per name."""
    lx = _LEXERS.get(lang)
    if lx is None:
        from pygments.lexers import TextLexer, get_lexer_by_name

        try:
            lx = get_lexer_by_name(lang) if lang else TextLexer()
        except Exception:  # noqa: BLE001 - an unknown or broken lexer: plain text
            lx = TextLexer()
        _LEXERS[lang] = lx
    return lx


def _formatter(dark: bool):
    fmt = _FORMATTERS.get(dark)
    if fmt is None:
        from pygments.formatters import HtmlFormatter

        fmt = _FORMATTERS[dark] = HtmlFormatter(
            noclasses=True, nowrap=True, style="monokai" if dark else "default"
        )
    return fmt


def _highlight(code: str, lang: str, dark: bool) -> str:
    try:
        from pygments import highlight

        return highlight(code, _lexer(lang), _formatter(dark))
    except Exception:  # noqa: BLE001 - a highlighter bug must not lose the code: shown escaped
        return html.escape(code)


WARM_LANGUAGES = (
    "python",
    "bash",
    "javascript",
    "typescript",
    "json",
    "c",
    "cpp",
    "rust",
    "go",
    "java",
    "html",
    "css",
    "sql",
    "yaml",
    "toml",
    "diff",
)


def warm_up(langs: tuple[str, ...] = WARM_LANGUAGES, *, dark: bool = False) -> None:
    """Import python-markdown and pygments and build the lexers of ``langs`` now (compiling a lexer's
    rules costs ~0.1 s the first time), so a reply's code block does not pay for it mid-stream.

    Call it on the UI thread while nothing streams: a CPU-bound background thread would take the
    GIL from a streaming UI thread far longer than the work itself."""
    _markdown()
    for lang in langs:
        _highlight("x", lang, dark)


def is_warm(lang: str) -> bool:
    return lang in _LEXERS


_LOCAL = threading.local()


def _markdown():
    """A reusable converter with raw HTML switched off (model output is shown as text, never as markup).

    One per thread: a converter keeps state while it converts."""
    md = getattr(_LOCAL, "md", None)
    if md is None:
        import markdown

        md = markdown.Markdown(extensions=["tables", "sane_lists", "nl2br"], output_format="html")
        for name in ("html_block",):
            if name in md.preprocessors:
                md.preprocessors.deregister(name)
        for name in ("html", "entity"):
            if name in md.inlinePatterns:
                md.inlinePatterns.deregister(name)
        _LOCAL.md = md
    return md


_CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.S)
_MATH_FONT = "font-family:'Cambria Math','STIX Two Math','Latin Modern Math','DejaVu Serif',serif"


def _with_math(text: str) -> tuple[str, list[tuple[str, bool]]]:
    """``text`` with each math span outside code spans (:mod:`app.ui.math_text`) replaced by a
    placeholder Markdown leaves alone, and the spans' HTML with whether each is set on its own."""
    from app.ui.math_text import math_html, math_spans

    code = [(m.start(), m.end()) for m in _CODE_SPAN.finditer(text)] if "`" in text else []
    out: list[str] = []
    found: list[tuple[str, bool]] = []
    pos = 0
    k = 0
    for span in math_spans(text):
        while k < len(code) and code[k][1] <= span.start:
            k += 1
        if span.start < pos or (k < len(code) and code[k][0] < span.end):
            continue  # (in or across a code span: the code's text)
        out.append(text[pos : span.start])
        out.append(f"\ue000{len(found)}\ue001")
        found.append((math_html(span.tex), span.display))
        pos = span.end
    out.append(text[pos:])
    return "".join(out), found


_PLACED = re.compile(r"(<p>)?\ue000(\d+)\ue001(</p>)?")


def _place_math(rendered: str, found: list[tuple[str, bool]]) -> str:
    def one(m: re.Match[str]) -> str:
        tex_html, display = found[int(m.group(2))]
        if display and m.group(1) and m.group(3):  # alone in its paragraph: set on its own line
            return f'<p align="center"><span style="{_MATH_FONT}">{tex_html}</span></p>'
        inline = f'<span style="{_MATH_FONT}">{tex_html}</span>'
        return (m.group(1) or "") + inline + (m.group(3) or "")

    return _PLACED.sub(one, rendered)


def _prose(text: str) -> str:
    if not text.strip():
        return ""
    try:
        marked, found = _with_math(text) if ("$" in text or "\\" in text) else (text, [])
        md = _markdown()
        md.reset()
        rendered = md.convert(marked)
        return _place_math(rendered, found) if found else rendered
    except Exception:  # noqa: BLE001 - a Markdown bug must not lose the reply: shown as plain text
        return "<p>" + html.escape(text).replace("\n", "<br>") + "</p>"


def render_markdown(text: str, *, dark: bool = False, first_code_index: int = 0) -> RenderedMarkdown:
    """Render ``text``; code blocks are highlighted and numbered for ``copy:N`` links from ``first_code_index``."""
    parts: list[str] = []
    blocks: list[str] = []
    code_bg = "#272822" if dark else "#f4f4f4"
    head_bg = "#3a3a3a" if dark else "#e4e4e4"
    head_fg = "#dddddd" if dark else "#333333"
    for kind, chunk, lang in split_fences(text):
        if kind == "text":
            parts.append(_prose(chunk))
            continue
        n = first_code_index + len(blocks)
        blocks.append(chunk)
        label = html.escape(lang or "code")
        parts.append(
            f'<table width="100%" cellspacing="0" cellpadding="6" style="margin-top:4px;margin-bottom:4px;">'
            f'<tr><td style="background:{head_bg};color:{head_fg};font-size:small;">{label}'
            f'&nbsp;&nbsp;<a href="copy:{n}">Copy</a></td></tr>'
            f'<tr><td style="background:{code_bg};"><pre style="margin:0;">{_highlight(chunk, lang, dark)}</pre>'
            f"</td></tr></table>"
        )
    return RenderedMarkdown(html="".join(parts), code_blocks=blocks)


@dataclass
class MarkdownBlock:
    """One finished block: its source text and its HTML (rendered once)."""

    text: str
    html: str
    code_blocks: list[str]


@dataclass
class MarkdownUpdate:
    """What changed since the last update: blocks that just finished, and the open tail re-rendered."""

    new_blocks: list[MarkdownBlock]
    tail_text: str
    tail: RenderedMarkdown
    rendered_chars: int  # characters of Markdown source rendered by this update


class IncrementalMarkdown:
    """Streamed Markdown rendered block by block; see the module docstring.

    ``append(delta)`` is O(len(delta)); ``update()`` scans only the lines that arrived since
    the previous update and renders only the blocks that finished plus the open tail.
    """

    def __init__(self, *, dark: bool = False) -> None:
        self.dark = dark
        self._parts: list[str] = []
        self._text = ""
        self.blocks: list[MarkdownBlock] = []
        self._tail_start = 0  # where the open block starts in the text
        self._scan = 0  # start of the first line not classified yet (lines are classified when complete)
        self._fence: str | None = None  # the opening fence while inside a code block
        self._blank = False  # a blank line was seen since the last non-blank line
        self._n_codes = 0
        self._tail_codes: list[str] = []
        self.final = False

    @property
    def text(self) -> str:
        if self._parts:
            self._text += "".join(self._parts)
            self._parts = []
        return self._text

    @property
    def code_blocks(self) -> list[str]:
        """Every code block's raw text, numbered as the ``copy:N`` links are."""
        return [c for b in self.blocks for c in b.code_blocks] + self._tail_codes

    def append(self, delta: str) -> None:
        if self.final:
            raise ValueError("this Markdown stream is finished")
        self._parts.append(delta)

    def _finish_block(self, end: int, text: str) -> MarkdownBlock:
        src = text[self._tail_start : end]
        r = render_markdown(src, dark=self.dark, first_code_index=self._n_codes)
        self._n_codes += len(r.code_blocks)
        self._tail_start = end
        block = MarkdownBlock(src, r.html, r.code_blocks)
        self.blocks.append(block)
        return block

    def update(self, *, final: bool = False, render_tail: bool = True) -> MarkdownUpdate:
        """Classify the new complete lines, render what finished and (``render_tail``) the tail.

        ``final``: the stream ended; the tail becomes the last finished block.
        """
        text = self.text
        new: list[MarkdownBlock] = []
        while True:
            nl = text.find("\n", self._scan)
            if nl < 0:
                break
            start, end = self._scan, nl + 1
            line = text[start:nl]
            self._scan = end
            if self._fence is not None:
                if _closes(line, self._fence):
                    self._fence = None
                    self._blank = False
                    new.append(self._finish_block(end, text))
                continue
            m = _FENCE.match(line)
            if m is not None:
                if text[self._tail_start : start].strip():
                    new.append(self._finish_block(start, text))
                self._fence = m.group("fence")
                self._blank = False
            elif not line.strip():
                self._blank = True
            else:
                if self._blank and line[0] not in " \t" and text[self._tail_start : start].strip():
                    new.append(self._finish_block(start, text))
                self._blank = False
        tail_text = text[self._tail_start :]
        rendered = sum(len(b.text) for b in new)
        if final:
            self.final = True
            if tail_text.strip():
                new.append(self._finish_block(len(text), text))
                rendered += len(tail_text)
            tail_text = ""
            self._tail_start = len(text)
        if tail_text and render_tail:
            tail = self.render_tail()
            rendered += len(tail_text)
        else:
            tail = RenderedMarkdown(html="")
            self._tail_codes = []
        return MarkdownUpdate(new, tail_text, tail, rendered)

    @property
    def tail_text(self) -> str:
        return self.text[self._tail_start :]

    def render_tail(self) -> RenderedMarkdown:
        """Render the open tail block as it is now."""
        tail = render_markdown(self.text[self._tail_start :], dark=self.dark, first_code_index=self._n_codes)
        self._tail_codes = tail.code_blocks
        return tail


def _closes(line: str, fence: str) -> bool:
    s = line.rstrip(" \t")
    stripped = s.lstrip(" ")
    if len(s) - len(stripped) > 3:
        return False
    return len(stripped) >= len(fence) and set(stripped) == {fence[0]}
