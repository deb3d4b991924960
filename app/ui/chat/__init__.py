"""The chat column of the window, one part per file.

- :mod:`~app.ui.chat.view`: :class:`ChatView`, every message of the open conversation in a scroll
  area, with the throttled rendering of a streaming reply;
- :mod:`~app.ui.chat.messages`: a reply (banners, Thinking, text runs and tool-call cards in order;
  its versions pager ‹ 2/3 ›; its live tokens and tok/s and the card of a call being written;
  Continue in place);
- :mod:`~app.ui.chat.bubble`: a user message (copy, edit and resend), the Thinking block and the
  small action buttons of a message;
- :mod:`~app.ui.chat.live`: the running token count and tok/s of a reply being written, and the
  statistics line under a reply;
- :mod:`~app.ui.chat.markdown`: rendered Markdown (a view that fits its text, a run rendered by blocks);
- :mod:`~app.ui.chat.tool_card`: a tool call inline in a reply, showing a
  :class:`~app.ui.call_view.CallView` (the shape the side panel shows too);
- :mod:`~app.ui.chat.records`: a stored reply shown as it looked live (stats, cut-off mark and
  Continue, stopped, each call's decoding), and the end every reply shows, live or reopened;
- :mod:`~app.ui.chat.turn_settings`: the settings a turn was sent with, which Regenerate and
  Continue send again (a user message keeps them);
- :mod:`~app.ui.chat.notices`: banners above a reply and the error box inside it;
- :mod:`~app.ui.chat.compose`: the message box and the box that edits a sent message.
"""

from app.ui.chat.compose import ComposeEdit, EditBox
from app.ui.chat.markdown import MarkdownView, TextRun
from app.ui.chat.messages import AssistantMessage, ThinkingBlock, UserMessage
from app.ui.chat.notices import ErrorBox, NoticeBanner
from app.ui.chat.tool_card import ToolCard, ToolChip
from app.ui.chat.view import ChatView

__all__ = [
    "AssistantMessage",
    "ChatView",
    "ComposeEdit",
    "EditBox",
    "ErrorBox",
    "MarkdownView",
    "NoticeBanner",
    "TextRun",
    "ThinkingBlock",
    "ToolCard",
    "ToolChip",
    "UserMessage",
]
