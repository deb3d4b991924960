"""Markdown -> Qt rich-text HTML, with highlighted code blocks that carry a copy link.

Qt-free on purpose (only python-markdown and pygments): the chat view calls it on
the UI thread at a throttled rate, so it must stay cheap and never raise.

Fenced code blocks are cut out before python-markdown sees the text, so an
unclosed fence while a reply is still streaming renders as code, not as prose.
Each code block gets a ``copy:N`` link; ``RenderedMarkdown.code_blocks[N]`` is
its raw text.
"""

from __future__ import annotations

import html
import re
from dataclasses import dataclass, field

__all__ = ["RenderedMarkdown", "render_markdown", "split_fences"]

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


def _highlight(code: str, lang: str, dark: bool) -> str:
    try:
        from pygments import highlight
        from pygments.formatters import HtmlFormatter
        from pygments.lexers import TextLexer, get_lexer_by_name

        try:
            lexer = get_lexer_by_name(lang) if lang else TextLexer()
        except Exception:
            lexer = TextLexer()
        fmt = HtmlFormatter(noclasses=True, nowrap=True, style="monokai" if dark else "default")
        return highlight(code, lexer, fmt)
    except Exception:
        return html.escape(code)


_MD = None


def _markdown():
    """One reusable converter with raw HTML switched off (model output is shown as text, never as markup)."""
    global _MD
    if _MD is None:
        import markdown

        md = markdown.Markdown(extensions=["tables", "sane_lists", "nl2br"], output_format="html")
        for name in ("html_block",):
            if name in md.preprocessors:
                md.preprocessors.deregister(name)
        for name in ("html", "entity"):
            if name in md.inlinePatterns:
                md.inlinePatterns.deregister(name)
        _MD = md
    return _MD


def _prose(text: str) -> str:
    if not text.strip():
        return ""
    try:
        md = _markdown()
        md.reset()
        return md.convert(text)
    except Exception:
        return "<p>" + html.escape(text).replace("\n", "<br>") + "</p>"


def render_markdown(text: str, *, dark: bool = False) -> RenderedMarkdown:
    """Render ``text``; code blocks are highlighted and numbered for ``copy:N`` links."""
    parts: list[str] = []
    blocks: list[str] = []
    code_bg = "#272822" if dark else "#f4f4f4"
    head_bg = "#3a3a3a" if dark else "#e4e4e4"
    head_fg = "#dddddd" if dark else "#333333"
    for kind, chunk, lang in split_fences(text):
        if kind == "text":
            parts.append(_prose(chunk))
            continue
        n = len(blocks)
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
