"""The conversation view: one widget per message in a scroll area.

Streaming stays cheap: text deltas only append to a Python string; a throttled timer
(whose interval grows with the cost of the previous render) renders what changed. A run
of reply text is a ``TextRun``: one small view per finished Markdown block, rendered once
(``IncrementalMarkdown``), plus a view of the open tail block, the only thing re-rendered
on each flush. So the work of one flush is bounded by the tail, not by the reply's length,
and a long, code-heavy reply never stalls the UI thread.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

from PySide6.QtCore import QEvent, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import QGuiApplication, QKeyEvent, QPalette, QTextDocumentFragment, QTextOption
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSizePolicy,
    QTextBrowser,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.ui.markdown_render import WARM_LANGUAGES, IncrementalMarkdown, is_warm, render_markdown, warm_up
from app.ui.theme import is_dark

__all__ = [
    "AssistantMessage",
    "ChatView",
    "ComposeEdit",
    "MarkdownView",
    "NoticeBanner",
    "TextRun",
    "ThinkingBlock",
    "ToolChip",
    "UserMessage",
]


class ComposeEdit(QPlainTextEdit):
    """The message box: Enter sends, Shift+Enter inserts a new line."""

    sig_submit = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("compose")
        self.setPlaceholderText("Message the model…  (Enter sends, Shift+Enter new line)")
        self.setTabChangesFocus(True)
        self.setFixedHeight(76)

    #: the window's shortcuts a text box would otherwise take (Ctrl+K deletes to the end of the line)
    WINDOW_KEYS = (Qt.Key.Key_K, Qt.Key.Key_N, Qt.Key.Key_Q, Qt.Key.Key_T, Qt.Key.Key_B)

    def event(self, e) -> bool:
        if (
            e.type() == e.Type.ShortcutOverride
            and e.modifiers() == Qt.KeyboardModifier.ControlModifier
            and e.key() in self.WINDOW_KEYS
        ):
            e.ignore()  # the window's shortcut runs
            return True
        return super().event(e)

    def keyPressEvent(self, e: QKeyEvent) -> None:  # noqa: N802 (Qt API)
        if e.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            if e.modifiers() & Qt.KeyboardModifier.ShiftModifier:
                self.insertPlainText("\n")
                return
            if not (e.modifiers() & Qt.KeyboardModifier.AltModifier):  # Enter or Ctrl+Enter
                self.sig_submit.emit()
                return
        super().keyPressEvent(e)


class EditBox(ComposeEdit):
    """Editing a sent message: as the compose box (Enter sends, Shift+Enter new line), and Esc cancels."""

    sig_cancel = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("editBox")
        self.setPlaceholderText("")
        self.setFixedHeight(90)

    def event(self, e) -> bool:
        # Esc belongs to this box while it has the focus (the window's Esc stops a reply)
        if e.type() == e.Type.ShortcutOverride and e.key() == Qt.Key.Key_Escape:
            e.accept()
            return True
        return super().event(e)

    def keyPressEvent(self, e: QKeyEvent) -> None:  # noqa: N802 (Qt API)
        if e.key() == Qt.Key.Key_Escape:
            self.sig_cancel.emit()
            return
        super().keyPressEvent(e)


class MarkdownView(QTextBrowser):
    """Read-only rich text that grows to fit its content; ``copy:N`` links copy code blocks."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("markdown")
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
        self.anchorClicked.connect(self._on_view_anchor)
        self.raw = ""
        self.code_blocks: list[str] = []
        self.code_source: Callable[[], list[str]] | None = None  # set by a TextRun: its numbering
        self.render_count = 0
        self.from_markdown = False  # set_markdown_text rendered it (re-rendered when the theme changes)
        self._in_set = False
        self.document().documentLayout().documentSizeChanged.connect(self._on_doc_size_changed)
        self.setFixedHeight(24)

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

    def _on_doc_size_changed(self, _size) -> None:
        if not self._in_set:
            self._fit()

    def _fit(self) -> None:
        doc = self.document()
        w = self.viewport().width()
        if w > 0 and doc.textWidth() != w:
            doc.setTextWidth(w)
        h = int(doc.size().height()) + 4
        if h != self.height():
            self.setFixedHeight(max(h, 20))

    def resizeEvent(self, e) -> None:  # noqa: N802
        super().resizeEvent(e)
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

    def rebuild(self, dark: bool) -> None:
        """Render the whole run again in the ``dark`` (or light) theme's colours (a theme change)."""
        text, final = self.md.text, self.md.final
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


#: What a notice's link says for the setting it opens (plain words, never the setting's key).
SETTING_LINKS = {
    "chat.tool_format": "Choose a format",
    "tools.workspace": "Set a workspace folder",
    "tools.mcp_servers_path": "Open the MCP settings",
}

#: Notices shown as one quiet line (``code -> text``) instead of the engine's longer wording.
QUIET_NOTICES = {
    "no_tool_format": "This model can't call tools here.",
}


class NoticeBanner(QFrame):
    """An inline notice above a reply; its link opens the setting it names.

    ``kind`` is "info" (a quiet line), "warning" or "error" (see :class:`ErrorBox` for errors
    inside a reply). A notice whose code is in ``QUIET_NOTICES`` is one quiet line with a
    "Don't show again" link (``sig_dismiss_forever``)."""

    sig_open_setting = Signal(str)
    sig_dismiss_forever = Signal(str)  # the notice's code

    def __init__(
        self,
        code: str,
        message: str,
        setting: str | None,
        parent: QWidget | None = None,
        *,
        kind: str | None = None,
    ) -> None:
        super().__init__(parent)
        import html as _html

        quiet = QUIET_NOTICES.get(code)
        self.kind = kind or ("info" if quiet is not None else "warning")
        self.setObjectName("noticeBanner")
        self.setProperty("kind", self.kind)
        self.code, self.message, self.setting = code, message, setting
        lay = QHBoxLayout(self)
        lay.setContentsMargins(10, 4 if quiet else 6, 10, 4 if quiet else 6)
        from app.ui.icons import icon as line_icon

        icon = QLabel()
        pic = line_icon("help" if self.kind == "info" else "error").pixmap(16, 16)
        if pic.isNull():  # no icon set (or no application yet): a character every font has
            icon.setText("i" if self.kind == "info" else "!")
        else:
            icon.setPixmap(pic)
        icon.setObjectName("noticeIcon")
        lay.addWidget(icon, 0, Qt.AlignmentFlag.AlignTop)
        self.label = QLabel()
        self.label.setWordWrap(True)
        self.label.setTextFormat(Qt.TextFormat.RichText)
        self.label.setToolTip(message if quiet else "")
        parts = [_html.escape(quiet or message)]
        if setting:
            words = SETTING_LINKS.get(setting, "Open settings")
            parts.append(f'<a href="setting:{_html.escape(setting)}">{_html.escape(words)}</a>')
        if quiet is not None:
            parts.append('<a href="dismiss:">Don\'t show again</a>')
        self.text = " · ".join(p for p in parts)
        self.label.setText(self.text)
        self.label.linkActivated.connect(self._on_label_link)
        lay.addWidget(self.label, 1)

    def plain_text(self) -> str:
        """What a person reads in the banner."""
        return QTextDocumentFragment.fromHtml(self.text).toPlainText()

    def _on_label_link(self, href: str) -> None:
        if href.startswith("setting:"):
            self.sig_open_setting.emit(href[len("setting:") :])
        elif href.startswith("dismiss:"):
            self.sig_dismiss_forever.emit(self.code)
            self.hide()

    def activate_link(self) -> None:
        """What a click on the link does (tests and keyboard users call it)."""
        if self.setting:
            self.sig_open_setting.emit(self.setting)


class ErrorBox(QFrame):
    """A failure (``kind="error"``) or a mark such as "max tokens reached" (``kind="info"``) inside a
    reply, with the actions that fix it (e.g. "New chat", "Increase context", "Continue")."""

    def __init__(
        self,
        message: str,
        actions: list[tuple[str, Callable[[], None]]],
        *,
        kind: str = "error",
        parent: QWidget | None = None,
    ) -> None:
        super().__init__(parent)
        self.setObjectName("errorBox")
        self.setProperty("kind", kind)
        self.message = message
        lay = QVBoxLayout(self)
        lay.setContentsMargins(10, 6, 10, 6)
        self.label = QLabel(message)
        self.label.setObjectName("errorText")
        self.label.setWordWrap(True)
        self.label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.label)
        self.buttons: dict[str, QPushButton] = {}
        if actions:
            row = QHBoxLayout()
            for text, fn in actions:
                b = QPushButton(text)
                b.setObjectName("errorAction")
                b.clicked.connect(fn)
                self.buttons[text] = b
                row.addWidget(b)
            row.addStretch(1)
            lay.addLayout(row)


def _short(value: Any, limit: int) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def call_summary(name: str, arguments: Any, limit: int = 60) -> str:
    """``calculator(expression="6*7")``: the call in one line, long values cut."""
    if isinstance(arguments, dict):
        args = ", ".join(
            f"{k}={json.dumps(v, ensure_ascii=False) if isinstance(v, str) else _short(v, 30)}"
            for k, v in arguments.items()
        )
    else:
        args = str(arguments or "")
    return f"{name}({_short(args, limit)})"


def format_duration(seconds: float | None) -> str:
    if seconds is None:
        return ""
    ms = seconds * 1000
    return f"{ms:.1f} ms" if ms < 10 else f"{ms:.0f} ms" if ms < 10_000 else f"{seconds:.1f} s"


class ToolChip(QPushButton):
    """The header of a tool-call card: the call in one line and its outcome; clicking selects it in
    the side panel (the card's arrow opens the details inline)."""

    MARKS = {"running": "…", "ok": "✓", "error": "✗", "denied": "✗ denied"}

    def __init__(self, call_id: str, name: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("toolChip")
        self.call_id, self.name = call_id, name
        self.state = "running"
        self.summary = name
        self.outcome = ""
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setFlat(True)
        self.setToolTip("Show this call in the tool-call panel")
        self._update()

    def set_finished(self, ok: bool, approval: str | None) -> None:
        self.state = "ok" if ok else ("denied" if approval in ("denied", "timeout") else "error")
        self._update()

    def _update(self) -> None:
        tail = f" → {self.outcome}" if self.outcome else ""
        self.setText(f"⚙ {self.summary} {self.MARKS[self.state]}{tail}")
        self.setProperty("state", self.state)
        self.style().unpolish(self)
        self.style().polish(self)


class ToolCard(QFrame):
    """A tool call inline in the reply: the one-line chip, and behind its arrow the arguments, the
    result or error, the time, and the raw text the model wrote behind "Show raw"."""

    def __init__(
        self, call_id: str, name: str, arguments: Any = None, raw: str = "", parent: QWidget | None = None
    ) -> None:
        super().__init__(parent)
        self.setObjectName("toolCard")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.setSpacing(2)
        head = QHBoxLayout()
        self.toggle = QToolButton()
        self.toggle.setObjectName("toolCardToggle")
        self.toggle.setArrowType(Qt.ArrowType.RightArrow)
        self.toggle.setCheckable(True)
        self.toggle.setAutoRaise(True)
        self.toggle.setToolTip("Show the call's details here")
        self.toggle.toggled.connect(self._on_toggle_toggled)
        head.addWidget(self.toggle)
        self.chip = ToolChip(call_id, name)
        head.addWidget(self.chip)
        head.addStretch(1)
        lay.addLayout(head)
        self.body = QLabel()
        self.body.setObjectName("toolCardBody")
        self.body.setWordWrap(True)
        self.body.setTextFormat(Qt.TextFormat.PlainText)
        self.body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.body.setVisible(False)
        lay.addWidget(self.body)
        self.btn_raw = QToolButton()
        self.btn_raw.setObjectName("msgAction")
        self.btn_raw.setText("Show raw")
        self.btn_raw.setCheckable(True)
        self.btn_raw.setAutoRaise(True)
        self.btn_raw.setVisible(False)
        self.btn_raw.toggled.connect(self._on_raw_toggled)
        lay.addWidget(self.btn_raw, 0, Qt.AlignmentFlag.AlignLeft)
        self.raw_view = QLabel()
        self.raw_view.setObjectName("toolCardRaw")
        self.raw_view.setWordWrap(True)
        self.raw_view.setTextFormat(Qt.TextFormat.PlainText)
        self.raw_view.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.raw_view.setVisible(False)
        lay.addWidget(self.raw_view)
        self.fix_button: QPushButton | None = None
        self.arguments, self.raw = arguments, raw
        self.result: str | None = None
        self.error: str | None = None
        self.duration_s: float | None = None
        self._refresh()

    def set_call(self, arguments: Any, raw: str) -> None:
        self.arguments, self.raw = arguments, raw or self.raw
        self._refresh()

    def set_outcome(self, result: str | None, error: str | None, duration_s: float | None) -> None:
        self.result, self.error, self.duration_s = result, error, duration_s
        if error is not None:
            self.chip.outcome = _short(error, 60)
        elif result is not None:
            self.chip.outcome = _short(result, 40) + (
                f" · {format_duration(duration_s)}" if duration_s else ""
            )
        self._refresh()

    def set_fix(self, text: str, action: Callable[[], None]) -> QPushButton:
        """A button under the chip that fixes why the call failed (e.g. opens the setting it needs)."""
        if self.fix_button is None:
            self.fix_button = QPushButton()
            self.fix_button.setObjectName("errorAction")
            self.fix_button.setFlat(True)
            self.fix_button.setCursor(Qt.CursorShape.PointingHandCursor)
            self.layout().insertWidget(1, self.fix_button, 0, Qt.AlignmentFlag.AlignLeft)
        else:
            self.fix_button.clicked.disconnect()
        self.fix_button.setText(text)
        self.fix_button.clicked.connect(action)
        self.fix_button.show()  # a child added after the card was shown
        return self.fix_button

    def failed(self) -> bool:
        """The call did not do its work (an error, a denial or a timeout)."""
        return self.chip.state in ("error", "denied")

    def details_text(self) -> str:
        parts = [f"Arguments:\n{pretty_json(self.arguments)}"]
        if self.error is not None:
            parts.append(f"Error:\n{self.error}")
        elif self.result is not None:
            parts.append(f"Result:\n{self.result}")
        if self.duration_s is not None:
            parts.append(f"Time: {format_duration(self.duration_s)}")
        return "\n\n".join(parts)

    def _refresh(self) -> None:
        self.chip.summary = (
            call_summary(self.chip.name, self.arguments) if self.arguments is not None else self.chip.name
        )
        self.chip._update()
        self.body.setText(self.details_text())
        self.raw_view.setText(self.raw or "(not available)")

    def _on_toggle_toggled(self, on: bool) -> None:
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)
        self.body.setVisible(on)
        self.btn_raw.setVisible(on)
        self.raw_view.setVisible(on and self.btn_raw.isChecked())

    def _on_raw_toggled(self, on: bool) -> None:
        self.btn_raw.setText("Hide raw" if on else "Show raw")
        self.raw_view.setVisible(on)


class ThinkingBlock(QFrame):
    """The model's reasoning, collapsed by default behind a "Thinking" toggle."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("thinking")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 2, 6, 2)
        self.toggle = QToolButton()
        self.toggle.setObjectName("thinkingToggle")
        self.toggle.setText("Thinking")
        self.toggle.setCheckable(True)
        self.toggle.setChecked(False)
        self.toggle.setToolButtonStyle(Qt.ToolButtonStyle.ToolButtonTextBesideIcon)
        self.toggle.setArrowType(Qt.ArrowType.RightArrow)
        self.toggle.toggled.connect(self._on_toggle_toggled)
        lay.addWidget(self.toggle)
        self.body = QLabel()
        self.body.setObjectName("thinkingBody")
        self.body.setWordWrap(True)
        self.body.setTextFormat(Qt.TextFormat.PlainText)
        self.body.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.body.setVisible(False)
        lay.addWidget(self.body)
        self.text = ""

    def set_text(self, text: str) -> None:
        self.text = text
        if self.body.isVisible():
            self.body.setText(text)

    def _on_toggle_toggled(self, on: bool) -> None:
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)
        if on:
            self.body.setText(self.text)
        self.body.setVisible(on)


def _small_button(text: str, tip: str) -> QToolButton:
    b = QToolButton()
    b.setObjectName("msgAction")
    b.setText(text)
    b.setToolTip(tip)
    b.setAutoRaise(True)
    b.setFocusPolicy(Qt.FocusPolicy.ClickFocus)  # Tab goes compose -> send -> lists, not every message button
    return b


COPIED_MS = 1500


def copy_with_feedback(button: QToolButton, text: str) -> None:
    """Put ``text`` on the clipboard and say "Copied ✓" on the button for a moment."""
    QGuiApplication.clipboard().setText(text)
    label = button.property("idleText") or button.text()
    button.setProperty("idleText", label)
    button.setText("Copied ✓")
    QTimer.singleShot(COPIED_MS, button, lambda: button.setText(label))


class UserMessage(QFrame):
    """A user message: copy, and edit-and-resend."""

    sig_edit_resend = Signal(object, str)  # (self, new text)
    sig_edit_requested = Signal(object)  # self: the view starts the edit, saying what it discards

    def __init__(self, text: str, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("userMessage")
        self.role = "user"
        self.text = text
        lay = QVBoxLayout(self)
        lay.setContentsMargins(12, 8, 12, 8)
        head = QHBoxLayout()
        who = QLabel("You")
        who.setObjectName("roleLabel")
        head.addWidget(who)
        head.addStretch(1)
        self.btn_copy = _small_button("Copy", "Copy this message")
        self.btn_copy.clicked.connect(lambda: copy_with_feedback(self.btn_copy, self.text))
        self.btn_edit = _small_button("Edit", "Edit this message and send it again")
        self.btn_edit.clicked.connect(lambda: self.sig_edit_requested.emit(self))
        head.addWidget(self.btn_copy)
        head.addWidget(self.btn_edit)
        lay.addLayout(head)
        self.view = MarkdownView()
        self.view.set_markdown_text(text)
        lay.addWidget(self.view)
        self.editor = EditBox()
        self.editor.setVisible(False)
        self.editor.sig_submit.connect(self._on_resend_clicked)
        self.editor.sig_cancel.connect(self.cancel_edit)
        lay.addWidget(self.editor)
        self.discard_note = QLabel("")
        self.discard_note.setObjectName("msgStats")
        self.discard_note.setWordWrap(True)
        self.discard_note.setVisible(False)
        lay.addWidget(self.discard_note)
        row = QHBoxLayout()
        self.btn_resend = QPushButton("Send")
        self.btn_cancel_edit = QPushButton("Cancel")
        self.btn_resend.clicked.connect(self._on_resend_clicked)
        self.btn_cancel_edit.clicked.connect(self.cancel_edit)
        row.addStretch(1)
        row.addWidget(self.btn_cancel_edit)
        row.addWidget(self.btn_resend)
        self.edit_row = QWidget()
        self.edit_row.setLayout(row)
        self.edit_row.setVisible(False)
        lay.addWidget(self.edit_row)

    def start_edit(self, later_messages: int = 0) -> None:
        """Edit in place; ``later_messages``: how many messages after this one sending it discards."""
        self.editor.setPlainText(self.text)
        self.view.setVisible(False)
        self.editor.setVisible(True)
        self.edit_row.setVisible(True)
        self.discard_note.setText(
            f"Sending replaces the reply and discards the {later_messages} later message(s) of this chat."
            if later_messages
            else ""
        )
        self.discard_note.setVisible(bool(later_messages))
        self.editor.setFocus()

    def cancel_edit(self) -> None:
        self.view.setVisible(True)
        self.editor.setVisible(False)
        self.edit_row.setVisible(False)
        self.discard_note.setVisible(False)

    def _on_resend_clicked(self) -> None:
        new = self.editor.toPlainText().strip()
        if not new:
            return
        self.cancel_edit()
        self.sig_edit_resend.emit(self, new)

    def set_actions_enabled(self, on: bool) -> None:
        self.btn_edit.setEnabled(on)


class AssistantMessage(QFrame):
    """A reply: notice banners, a Thinking block, then text blocks and tool-call chips in order."""

    sig_chip_clicked = Signal(str)
    sig_open_setting = Signal(str)
    sig_dismiss_notice = Signal(str)  # a notice code the user does not want to see again
    sig_regenerate = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("assistantMessage")
        self.role = "assistant"
        self.status = "streaming"
        self._lay = QVBoxLayout(self)
        self._lay.setContentsMargins(12, 8, 12, 8)
        self._lay.setSpacing(4)
        head = QHBoxLayout()
        self.who = QLabel("Assistant")
        self.who.setObjectName("roleLabel")
        head.addWidget(self.who)
        self.status_label = QLabel("Processing prompt…")
        self.status_label.setObjectName("msgStatus")
        head.addWidget(self.status_label)
        self.progress = QProgressBar()  # until the first token: the prompt is being read
        self.progress.setObjectName("promptProgress")
        self.progress.setRange(0, 0)
        self.progress.setMaximumSize(90, 8)
        self.progress.setTextVisible(False)
        head.addWidget(self.progress)
        head.addStretch(1)
        self.btn_copy = _small_button("Copy", "Copy this reply")
        self.btn_copy.clicked.connect(lambda: copy_with_feedback(self.btn_copy, self.text()))
        self.btn_regen = _small_button("Regenerate", "Generate this reply again")
        self.btn_regen.clicked.connect(self.sig_regenerate.emit)
        head.addWidget(self.btn_copy)
        head.addWidget(self.btn_regen)
        self._lay.addLayout(head)
        self.banners: list[NoticeBanner] = []
        self._banner_box = QVBoxLayout()
        self._lay.addLayout(self._banner_box)
        self.thinking = ThinkingBlock()
        self.thinking.setVisible(False)
        self._lay.addWidget(self.thinking)
        self.blocks: list[QWidget] = []
        self.chips: dict[str, ToolChip] = {}
        self.incomplete: list[QLabel] = []  # calls the model did not finish (or not offered): never run
        self.cards: dict[str, ToolCard] = {}
        self._cur: TextRun | None = None
        self._chip_row: QHBoxLayout | None = None
        self.dirty = False
        self.reasoning = ""
        self.error_box: ErrorBox | None = None
        self.stats = QLabel("")
        self.stats.setObjectName("msgStats")
        self.stats.setVisible(False)
        self._lay.addWidget(self.stats)
        self.started = False  # the first token (or call) arrived
        self.prompt_source: Callable[[], tuple[int, int] | None] | None = None
        self._prompt_timer: QTimer | None = None

    def watch_prompt(self, source: Callable[[], tuple[int, int] | None], interval_ms: int = 150) -> None:
        """Until the first token, show how much of the prompt is read: ``source()`` gives (done, total)
        or None (the engine's ``LoadedModel.prompt_progress``, written by the generating thread)."""
        self.prompt_source = source
        if self._prompt_timer is None:
            self._prompt_timer = QTimer(self)
            self._prompt_timer.timeout.connect(self._poll_prompt)
        self._prompt_timer.start(interval_ms)

    def _poll_prompt(self) -> None:
        if self.started or self.status != "streaming" or self.prompt_source is None:
            if self._prompt_timer is not None:
                self._prompt_timer.stop()
            return
        p = self.prompt_source()
        if p and p[1] > 0:
            pct = max(0, min(99, int(100 * p[0] / p[1])))
            if self.progress.maximum() != 100:
                self.progress.setRange(0, 100)
            self.progress.setValue(pct)
            self.status_label.setText(f"Processing prompt… {pct}%")

    # -- content -------------------------------------------------------------------------
    def _started(self) -> None:
        if not self.started:
            self.started = True
            self.progress.setVisible(False)
            if self._prompt_timer is not None:
                self._prompt_timer.stop()
            if self.status == "streaming":
                self.status_label.setText("…")

    def _add_block(self, w: QWidget) -> None:
        """Content goes above the stats line and the error box."""
        self._lay.insertWidget(self._lay.indexOf(self.stats), w)

    def set_error(
        self, message: str, actions: list[tuple[str, Callable[[], None]]] = (), *, kind: str = "error"
    ) -> ErrorBox:
        """Show ``message`` inside the reply in the error style (or ``kind="info"``), with actions."""
        if self.error_box is not None:
            self._lay.removeWidget(self.error_box)
            self.error_box.hide()  # not drawn until it is deleted
            self.error_box.deleteLater()
        self._started()
        self.error_box = ErrorBox(message, list(actions), kind=kind)
        self._lay.addWidget(self.error_box)
        return self.error_box

    def set_stats(self, text: str) -> None:
        self.stats.setText(text)
        self.stats.setVisible(bool(text))

    def add_banner(self, code: str, message: str, setting: str | None) -> NoticeBanner:
        b = NoticeBanner(code, message, setting)
        b.sig_open_setting.connect(self.sig_open_setting.emit)
        b.sig_dismiss_forever.connect(self.sig_dismiss_notice.emit)
        self.banners.append(b)
        self._banner_box.addWidget(b)
        return b

    def append_text(self, text: str) -> None:
        if self._cur is None or self._cur.md.final:
            self._cur = TextRun()
            self.blocks.append(self._cur)
            self._add_block(self._cur)
            self._chip_row = None
        self._started()
        self._cur.append(text)
        self.dirty = True

    def append_reasoning(self, text: str) -> None:
        self._started()
        self.reasoning += text
        self.thinking.setVisible(True)
        self.thinking.set_text(self.reasoning)

    def add_chip(self, call_id: str, name: str, arguments: Any = None, raw: str = "") -> ToolChip:
        """A tool-call card (its chip is returned); consecutive calls share one block."""
        self.flush(final=True)
        self._cur = None
        if self._chip_row is None:
            row = QWidget()
            row.setObjectName("chipRow")
            self._chip_row = QVBoxLayout(row)
            self._chip_row.setContentsMargins(0, 0, 0, 0)
            self._chip_row.setSpacing(2)
            self.blocks.append(row)
            self._add_block(row)
        self._started()
        card = ToolCard(call_id, name, arguments, raw)
        chip = card.chip
        chip.clicked.connect(lambda: self.sig_chip_clicked.emit(chip.call_id))
        self._chip_row.addWidget(card)
        self.chips[call_id] = chip
        self.cards[call_id] = card
        return chip

    def add_incomplete(self, name: str | None, raw: str, reason: str = "truncated") -> QLabel:
        """A chip for a call that was not run: cut off by the token limit (\"cut off while writing a
        call to NAME\") or addressed to a tool that was not offered; its raw text is the tooltip."""
        self.flush(final=True)
        self._cur = None
        self._chip_row = None
        self._started()
        what = name or "a tool"
        chip = QLabel(
            f"cut off while writing a call to {what}"
            if reason == "truncated"
            else f"not run: {what} was not offered to the model"
        )
        chip.setObjectName("incompleteChip")
        chip.setToolTip(raw[:2000])
        self.incomplete.append(chip)
        self._add_block(chip)
        return chip

    def flush(self, *, final: bool = False) -> float:
        """Render what changed in the current text run (``final``: the run is complete); returns seconds spent."""
        if self._cur is None or not (self.dirty or final):
            self.dirty = False
            return 0.0
        t0 = time.perf_counter()
        self._cur.flush(final=final)
        self.dirty = False
        return time.perf_counter() - t0

    def text(self) -> str:
        return "".join(b.raw for b in self.blocks if isinstance(b, TextRun))

    def set_status(self, status: str) -> None:
        self.status = status
        if status != "streaming":
            self.progress.setVisible(False)
        self.status_label.setText(
            {
                "streaming": "…" if self.started else "Processing prompt…",
                "done": "",
                "interrupted": "(interrupted)",
                "cancelled": "(stopped)",
                "error": "(error)",
                "length": "(max tokens reached)",
            }.get(status, f"({status})")
        )

    def set_actions_enabled(self, on: bool) -> None:
        self.btn_regen.setEnabled(on)


class ChatView(QScrollArea):
    """All messages of the open conversation, newest at the bottom."""

    sig_chip_clicked = Signal(str)
    sig_open_setting = Signal(str)
    sig_dismiss_notice = Signal(str)
    sig_regenerate = Signal(int)  # index of the user message (among user messages) whose reply it is, or -1
    sig_edit_resend = Signal(int, str)  # (index of the user message among user messages, new text)

    READING_WIDTH = 860  # px: long lines stay readable on a wide window
    MIN_INTERVAL_MS = 40
    MAX_INTERVAL_MS = 400

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("chatView")
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self._inner = QWidget()
        self._inner.setObjectName("chatInner")
        outer = QHBoxLayout(self._inner)
        outer.setContentsMargins(0, 0, 0, 0)
        self.column = QWidget()  # the reading column: bounded width, centred
        self.column.setObjectName("chatColumn")
        self.column.setMaximumWidth(self.READING_WIDTH)
        outer.addStretch(1)
        outer.addWidget(self.column, 100)
        outer.addStretch(1)
        self._col = QVBoxLayout(self.column)
        self._col.setContentsMargins(16, 12, 16, 12)
        self._col.setSpacing(10)
        self._empty = QLabel("Start a conversation: type a message below and press Enter.")
        self._empty.setObjectName("emptyHint")
        self._empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self._col.addWidget(self._empty)
        self._col.addStretch(1)
        self.setWidget(self._inner)
        self.messages: list[QWidget] = []
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.timeout.connect(self._on_timer_timeout)
        self._interval = self.MIN_INTERVAL_MS
        self._stick_to_bottom = True
        self.verticalScrollBar().rangeChanged.connect(self._on_scroll_range_changed)
        self.verticalScrollBar().valueChanged.connect(self._on_scroll_value_changed)
        self.seen_notice_codes: set[str] = set()
        self.suppress_notice_codes: set[str] = set()
        self.rendered_dark = is_dark()  # the theme the messages' colours were rendered for
        # Markdown and the python lexer now (start-up); the other common lexers one at a time
        # while nothing streams, so no reply pays ~0.1 s for its first code block of a language.
        warm_up(WARM_LANGUAGES[:1], dark=is_dark())
        self._warm_timer = QTimer(self)
        self._warm_timer.setInterval(250)
        self._warm_timer.timeout.connect(self._on_warm_timer_timeout)
        self._warm_timer.start()

    def changeEvent(self, e) -> None:  # noqa: N802 (Qt API)
        super().changeEvent(e)
        # apply_theme sets the application palette (Settings → Appearance, or the OS switching for
        # "System"): rendered Markdown carries its colours inline, so it is rendered again.
        if e.type() == QEvent.Type.PaletteChange and is_dark() != self.rendered_dark:
            self.retheme()

    def retheme(self) -> None:
        """Render every message's Markdown again in the current theme's colours."""
        self.rendered_dark = dark = is_dark()
        for run in self._inner.findChildren(TextRun):
            run.rebuild(dark)
        for view in self._inner.findChildren(MarkdownView):
            if view.from_markdown:
                view.set_markdown_text(view.raw)

    def _on_warm_timer_timeout(self) -> None:
        m = self.current_assistant()
        if m is not None and m.status == "streaming":
            return
        todo = [lang for lang in WARM_LANGUAGES if not is_warm(lang)]
        if not todo:
            self._warm_timer.stop()
            return
        warm_up((todo[0],), dark=is_dark())

    # -- building ------------------------------------------------------------------------
    def clear(self) -> None:
        self._timer.stop()
        for w in self.messages:
            self._col.removeWidget(w)
            w.deleteLater()
        self.messages = []
        self.seen_notice_codes = set()
        self._empty.setVisible(True)

    def _insert(self, w: QWidget) -> None:
        self._empty.setVisible(False)
        self._col.insertWidget(self._col.count() - 1, w)
        self.messages.append(w)
        self._stick_to_bottom = True

    def add_user(self, text: str) -> UserMessage:
        m = UserMessage(text)
        m.sig_edit_resend.connect(self._on_user_edit_resend)
        m.sig_edit_requested.connect(self._on_user_edit_requested)
        self._insert(m)
        return m

    def begin_assistant(self) -> AssistantMessage:
        m = AssistantMessage()
        m.sig_chip_clicked.connect(self.sig_chip_clicked.emit)
        m.sig_open_setting.connect(self.sig_open_setting.emit)
        m.sig_dismiss_notice.connect(self._on_dismiss_notice)
        m.sig_regenerate.connect(lambda: self.sig_regenerate.emit(self.user_index_of(m)))
        self._insert(m)
        return m

    def current_assistant(self) -> AssistantMessage | None:
        if self.messages and isinstance(self.messages[-1], AssistantMessage):
            return self.messages[-1]
        return None

    def _ensure_assistant(self) -> AssistantMessage:
        return self.current_assistant() or self.begin_assistant()

    def truncate_from(self, widget: QWidget) -> None:
        """Remove ``widget`` and every message after it."""
        if widget not in self.messages:
            return
        i = self.messages.index(widget)
        for w in self.messages[i:]:
            self._col.removeWidget(w)
            w.hide()
            w.deleteLater()
        self.messages = self.messages[:i]
        self._empty.setVisible(not self.messages)

    def user_index_of(self, reply: QWidget) -> int:
        """The index (among user messages) of the user message ``reply`` answers; -1 if none."""
        if reply not in self.messages:
            return -1
        before = self.messages[: self.messages.index(reply)]
        return sum(1 for m in before if isinstance(m, UserMessage)) - 1

    def user_messages(self) -> list[UserMessage]:
        return [m for m in self.messages if isinstance(m, UserMessage)]

    def assistant_messages(self) -> list[AssistantMessage]:
        return [m for m in self.messages if isinstance(m, AssistantMessage)]

    # -- streaming -----------------------------------------------------------------------
    def append_text(self, text: str) -> None:
        self._ensure_assistant().append_text(text)
        self._schedule()

    def append_reasoning(self, text: str) -> None:
        self._ensure_assistant().append_reasoning(text)

    def add_tool_call(self, call_id: str, name: str, arguments: Any = None, raw: str = "") -> ToolChip:
        chip = self._ensure_assistant().add_chip(call_id, name, arguments, raw)
        return chip

    def add_incomplete_call(self, name: str | None, raw: str, reason: str = "truncated") -> QLabel:
        return self._ensure_assistant().add_incomplete(name, raw, reason)

    def finish_tool_call(
        self,
        call_id: str,
        ok: bool,
        approval: str | None,
        *,
        result: str | None = None,
        error: str | None = None,
        duration_s: float | None = None,
    ) -> None:
        for m in reversed(self.assistant_messages()):
            if call_id in m.chips:
                m.chips[call_id].set_finished(ok, approval)
                m.cards[call_id].set_outcome(result, error, duration_s)
                return

    def find_card(self, call_id: str) -> ToolCard | None:
        for m in self.assistant_messages():
            if call_id in m.cards:
                return m.cards[call_id]
        return None

    def add_notice(self, code: str, message: str, setting: str | None) -> NoticeBanner | None:
        """A banner above the current reply, once per conversation for each notice code."""
        if code in self.seen_notice_codes or code in self.suppress_notice_codes:
            return None
        self.seen_notice_codes.add(code)
        return self._ensure_assistant().add_banner(code, message, setting)

    def end_assistant(self, status: str) -> None:
        m = self.current_assistant()
        if m is None:
            return
        self._timer.stop()
        m.flush(final=True)
        m.set_status(status)

    def banners(self) -> list[NoticeBanner]:
        return [b for m in self.assistant_messages() for b in m.banners]

    def find_chip(self, call_id: str) -> ToolChip | None:
        for m in self.assistant_messages():
            if call_id in m.chips:
                return m.chips[call_id]
        return None

    def set_busy(self, busy: bool) -> None:
        for m in self.messages:
            m.set_actions_enabled(not busy)

    # -- throttled rendering -------------------------------------------------------------
    def _schedule(self) -> None:
        if not self._timer.isActive():
            self._timer.start(self._interval)

    def _on_timer_timeout(self) -> None:
        m = self.current_assistant()
        if m is None:
            return
        spent = m.flush()
        # Keep rendering to a small share of the UI thread: wait ~4x what the last render cost.
        self._interval = int(min(self.MAX_INTERVAL_MS, max(self.MIN_INTERVAL_MS, 4000 * spent)))

    def _on_scroll_range_changed(self, _lo: int, hi: int) -> None:
        if self._stick_to_bottom:
            self.verticalScrollBar().setValue(hi)

    def _on_scroll_value_changed(self, v: int) -> None:
        self._stick_to_bottom = v >= self.verticalScrollBar().maximum() - 8

    def _on_user_edit_requested(self, msg: UserMessage) -> None:
        later = len(self.messages) - self.messages.index(msg) - 2 if msg in self.messages else 0
        msg.start_edit(max(0, later))

    def _on_dismiss_notice(self, code: str) -> None:
        self.suppress_notice_codes.add(code)
        self.sig_dismiss_notice.emit(code)

    def _on_user_edit_resend(self, msg: UserMessage, text: str) -> None:
        users = self.user_messages()
        if msg in users:
            self.sig_edit_resend.emit(users.index(msg), text)


def pretty_json(value: Any) -> str:
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, sort_keys=False)
    except (TypeError, ValueError):
        return repr(value)
