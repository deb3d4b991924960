"""Text in the chat: views that grow to fit (rendered Markdown; plain text), and a run of reply text
rendered by blocks.

Streaming stays cheap: a run of reply text is a ``TextRun``: one small view per finished Markdown
block, rendered once (``IncrementalMarkdown``), plus a view of the open tail block, the only thing
re-rendered on each flush. So the work of one flush is bounded by the tail, not by the reply's
length, and a long, code-heavy reply never stalls the UI thread.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import Qt, QTimer, QUrl
from PySide6.QtGui import QGuiApplication, QPalette, QTextCursor, QTextOption
from PySide6.QtWidgets import QFrame, QSizePolicy, QTextBrowser, QVBoxLayout, QWidget

from app.ui.markdown_render import IncrementalMarkdown, render_markdown
from app.ui.theme import is_dark

__all__ = ["FittedView", "MarkdownView", "PlainView", "TextRun"]


class FittedView(QTextBrowser):
    """Read-only text that grows to fit its content (no scroll bars: the chat scrolls)."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setOpenLinks(False)
        self.setOpenExternalLinks(False)
        self.setFrameShape(QFrame.Shape.NoFrame)
        self.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.setWordWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere)
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.viewport().setAutoFillBackground(False)
        pal = self.palette()  # transparent without a per-widget style sheet (cheaper to create)
        pal.setColor(QPalette.ColorRole.Base, Qt.GlobalColor.transparent)
        self.setPalette(pal)
        self.raw = ""  # the text it shows (its Markdown source, for a MarkdownView)
        self._in_set = False
        #: the most height it shows (a long message folded: its start); None: all of it
        self.cap: int | None = None
        self.content_height = 0  # the height all of its text takes at its width
        #: called after each fit (the owner of a fold decides whether to fold)
        self.on_fit: Callable[[], None] | None = None
        #: shows all of a view that a ``cap`` cuts (Find in chat opens the fold of a match there)
        self.uncap: Callable[[], None] | None = None
        self.document().documentLayout().documentSizeChanged.connect(self._on_doc_size_changed)
        self.setFixedHeight(24)

    def _on_doc_size_changed(self, _size) -> None:
        if not self._in_set:
            self._fit()

    def _fit(self) -> None:
        doc = self.document()
        w = self.viewport().width()
        if w > 0 and doc.textWidth() != w:
            doc.setTextWidth(w)
        h = int(doc.size().height()) + 4
        self.content_height = h
        shown = h if self.cap is None else min(h, self.cap)
        if shown != self.height():
            self.setFixedHeight(max(shown, 20))
        if self.on_fit is not None:
            self.on_fit()

    def cut_at(self, y: int) -> bool:
        """Whether the text at height ``y`` (in the view) is below what a ``cap`` shows."""
        return self.cap is not None and y >= self.cap

    def resizeEvent(self, e) -> None:  # noqa: N802
        super().resizeEvent(e)
        self._fit()


class PlainView(FittedView):
    """Plain text the person may select, hidden until there is something to show: a reasoning
    block, a tool card's details or raw text. Such a view may be folded (hidden behind its owner's
    toggle): ``fold_owner`` is then the widget that stays shown and ``unfold`` opens the fold, so
    Find in chat finds the text inside and opens it when a match there is the current one."""

    def __init__(self, object_name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName(object_name)
        self.fold_owner: QWidget | None = None
        self.unfold: Callable[[], None] | None = None
        self.setVisible(False)

    def text(self) -> str:
        return self.raw

    def set_text(self, text: str) -> None:
        """Show ``text``; text that only grew (reasoning being written) is appended, so a long one
        streamed costs its length once, not once per piece."""
        if text == self.raw:
            return
        if self.raw and text.startswith(self.raw):
            cursor = QTextCursor(self.document())
            cursor.movePosition(QTextCursor.MoveOperation.End)
            cursor.insertText(text[len(self.raw) :])
        else:
            self.setPlainText(text)
        self.raw = text


class MarkdownView(FittedView):
    """Rendered Markdown that grows to fit its content; ``copy:N`` links copy code blocks."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("markdown")
        self.anchorClicked.connect(self._on_view_anchor)
        self.code_blocks: list[str] = []
        self.code_source: Callable[[], list[str]] | None = None  # set by a TextRun: its numbering
        self.render_count = 0
        self.from_markdown = False  # set_markdown_text rendered it (re-rendered when the theme changes)

    def set_markdown_text(self, text: str) -> None:
        self.raw = text
        self.from_markdown = True
        rendered = render_markdown(text, dark=is_dark())
        self.code_blocks = rendered.code_blocks
        self.set_html(rendered.html)

    def set_html(self, html: str) -> None:
        self._in_set = True  # setHtml changes the size several times: fit once, after it
        try:
            self.setHtml(html)
        finally:
            self._in_set = False
        self.render_count += 1
        self._fit()

    def _on_view_anchor(self, url: QUrl) -> None:
        s = url.toString()
        if s.startswith("copy:"):
            codes = self.code_source() if self.code_source is not None else self.code_blocks
            try:
                code = codes[int(s[5:])]
            except (ValueError, IndexError):
                return
            QGuiApplication.clipboard().setText(code)
        elif url.scheme() in ("http", "https"):
            from PySide6.QtGui import QDesktopServices

            QDesktopServices.openUrl(url)


class TextRun(QWidget):
    """A run of reply text between tool chips: a view per finished block, then the open tail's view."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("textRun")
        self._lay = QVBoxLayout(self)
        self._lay.setContentsMargins(0, 0, 0, 0)
        self._lay.setSpacing(0)
        self.md = IncrementalMarkdown(dark=is_dark())
        self.views: list[MarkdownView] = []  # finished blocks, in order
        self.tail_view: MarkdownView | None = None
        self.render_count = 0  # flushes that rendered something
        self.rendered_chars: list[int] = []  # Markdown source characters rendered by each flush

    @property
    def raw(self) -> str:
        return self.md.text

    @property
    def code_blocks(self) -> list[str]:
        return self.md.code_blocks

    def append(self, text: str) -> None:
        self.md.append(text)

    def _view(self) -> MarkdownView:
        v = MarkdownView()
        v.code_source = lambda: self.md.code_blocks
        return v

    def flush(self, *, final: bool = False) -> None:
        """Render the blocks that finished and the open tail (``final``: the run is complete).

        When blocks finished, the tail is rendered on the next turn of the event loop, so one
        slice of UI-thread work is the new blocks *or* the tail, never both."""
        if self.md.final:
            return
        up = self.md.update(final=final, render_tail=False)
        for b in up.new_blocks:
            v = self._view()
            v.raw = b.text
            v.set_html(b.html)
            self.views.append(v)
            self._lay.insertWidget(len(self.views) - 1, v)
        if up.new_blocks:
            self.render_count += 1
            self.rendered_chars.append(up.rendered_chars)
        if final:
            self._show_tail("", "")
        elif up.new_blocks:
            QTimer.singleShot(0, self._render_tail)
        else:
            self._render_tail()

    def rebuild(self, dark: bool, text: str | None = None) -> None:
        """Render the whole run again in the ``dark`` (or light) theme's colours (a theme change),
        or with ``text`` in place of its own (a reply whose text was edited)."""
        text, final = (self.md.text if text is None else text), self.md.final
        for v in [*self.views, *([self.tail_view] if self.tail_view else [])]:
            self._lay.removeWidget(v)
            v.hide()
            v.deleteLater()
        self.views, self.tail_view = [], None
        self.md = IncrementalMarkdown(dark=dark)
        self.md.append(text)
        self.flush(final=final)
        if not final:
            self._render_tail()

    def render_pending(self) -> None:
        """Render the open tail now, when a flush left it for the next turn of the event loop (a
        search reads every word shown)."""
        self._render_tail()

    def _render_tail(self) -> None:
        if self.md.final:
            return
        tail_text = self.md.tail_text
        if tail_text == (self.tail_view.raw if self.tail_view else ""):
            return
        self._show_tail(tail_text, self.md.render_tail().html if tail_text else "")
        self.render_count += 1
        self.rendered_chars.append(len(tail_text))

    def _show_tail(self, tail_text: str, html: str) -> None:
        if tail_text:
            if self.tail_view is None:
                self.tail_view = self._view()
                self._lay.addWidget(self.tail_view)
            if self.tail_view.raw != tail_text:
                self.tail_view.raw = tail_text
                self.tail_view.set_html(html)
        elif self.tail_view is not None:
            self._lay.removeWidget(self.tail_view)
            self.tail_view.deleteLater()
            self.tail_view = None
