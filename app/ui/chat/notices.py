"""Notices inside the chat: a banner above a reply (its link opens the setting it names) and the
error (or "max tokens reached") box inside a reply, with the actions that fix it."""

from __future__ import annotations

import html
from collections.abc import Callable

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QTextDocumentFragment
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

__all__ = ["QUIET_NOTICES", "SETTING_LINKS", "ErrorBox", "NoticeBanner"]


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
        parts = [html.escape(quiet or message)]
        if setting:
            words = SETTING_LINKS.get(setting, "Open settings")
            parts.append(f'<a href="setting:{html.escape(setting)}">{html.escape(words)}</a>')
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
