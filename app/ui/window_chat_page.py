"""The chat page's widgets: the window's banners, the chat view and the compose row (text, tool
choice, Send). Built once by the window; :class:`~app.ui.window_chat.ChatController` and
:class:`~app.ui.window_conversations.ConversationsController` act on them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from app.ui.chat import ChatView, ComposeEdit
from app.ui.tool_choice import ToolChoiceBox

if TYPE_CHECKING:
    from PySide6.QtWidgets import QLayout

__all__ = ["ChatPage"]


@dataclass
class ChatPage:
    """The chat page and the widgets on it."""

    widget: QWidget
    chat: ChatView
    compose: ComposeEdit
    compose_row: QHBoxLayout
    tool_choice_box: ToolChoiceBox
    send_button: QPushButton

    @classmethod
    def build(cls, *, banners: QLayout, tool_choice: str) -> ChatPage:
        """``banners`` (the window's notices) above the chat, the compose row below it."""
        page = QWidget()
        page.setObjectName("centralArea")
        v = QVBoxLayout(page)
        v.setContentsMargins(0, 0, 0, 0)
        v.addLayout(banners)
        chat = ChatView()
        v.addWidget(chat, 1)
        row = QHBoxLayout()
        row.setContentsMargins(12, 6, 12, 10)
        compose = ComposeEdit()
        row.addWidget(compose, 1)
        box = ToolChoiceBox(tool_choice)
        row.addWidget(box, 0, Qt.AlignmentFlag.AlignBottom)
        send = QPushButton("Send")
        send.setObjectName("sendButton")
        row.addWidget(send, 0, Qt.AlignmentFlag.AlignBottom)
        v.addLayout(row)
        return cls(page, chat, compose, row, box, send)
