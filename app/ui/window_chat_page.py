"""The chat page's widgets: the window's banners, the chat view and the compose row (text, the
image button, tool choice, thinking, Send; the attached images under it). Built once by the window; :class:`~app.ui.window_chat.ChatController` and
:class:`~app.ui.window_conversations.ConversationsController` act on them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import QEvent, QObject, Qt
from PySide6.QtWidgets import (
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.ui.chat import ChatView, ComposeEdit
from app.ui.chat.attachments import PendingFiles, PendingImages
from app.ui.chat.find import FindBar
from app.ui.chat_model_hint import ChatModelHint
from app.ui.chat_system import SystemPromptBar
from app.ui.icons import icon
from app.ui.thinking_control import ThinkingBox
from app.ui.tool_choice import ToolChoiceBox

if TYPE_CHECKING:
    from PySide6.QtWidgets import QLayout

__all__ = ["NARROW_PX", "ChatPage"]

#: Narrower than this, the tool choice and Send go under the message box, which keeps the width (U17).
NARROW_PX = 560
COMPOSE_MIN_PX = 360  # the narrowest the message box gets beside the controls


class _ComposeLayout(QObject):
    """Lays out the compose row: one line when wide; when narrow the controls go under the text,
    on as many lines as they need (right-aligned, Send last), so none is squeezed."""

    def __init__(self, page: QWidget, grid: QGridLayout, compose: QWidget, controls: list[QWidget]) -> None:
        super().__init__(page)
        self.grid, self.compose, self.controls = grid, compose, controls
        self.narrow: bool | None = None
        self.lines: tuple[int, ...] = ()  # when narrow: how many controls each line under the box holds
        self._rows: list[QHBoxLayout] = []
        page.installEventFilter(self)

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:  # noqa: N802 - Qt's name
        if event.type() == QEvent.Type.Resize and isinstance(obj, QWidget):
            narrow = obj.width() < self.one_line_px()
            self.arrange(narrow, self._lines(obj.width()) if narrow else ())
        return False

    def _spacing(self) -> int:
        return max(0, self.grid.horizontalSpacing())

    def one_line_px(self) -> int:
        """The width the row needs on one line: the controls as wide as they ask, and the text box
        at least :data:`COMPOSE_MIN_PX` (the tool choice, the thinking control and its budget take
        most of a narrow page: the box beside them would be a strip)."""
        controls = sum(w.sizeHint().width() + self._spacing() for w in self.controls if not w.isHidden())
        margins = self.grid.contentsMargins()
        return max(NARROW_PX, controls + COMPOSE_MIN_PX + margins.left() + margins.right())

    def _lines(self, width: int) -> tuple[int, ...]:
        """How many controls each line under the box takes at ``width``, filled in order."""
        margins = self.grid.contentsMargins()
        room = width - margins.left() - margins.right()
        lines: list[int] = []
        used, n = 0, 0
        for w in self.controls:
            need = 0 if w.isHidden() else w.sizeHint().width() + self._spacing()
            if n and used + need > room:
                lines.append(n)
                used, n = 0, 0
            used += need
            n += 1
        lines.append(n)
        return tuple(lines)

    def _clear(self) -> None:
        for w in (self.compose, *self.controls):
            self.grid.removeWidget(w)
        for row in self._rows:
            while row.count():
                row.takeAt(0)
            self.grid.removeItem(row)
            row.deleteLater()
        self._rows = []

    def arrange(self, narrow: bool, lines: tuple[int, ...] = ()) -> None:
        if (narrow, lines) == (self.narrow, self.lines):
            return
        self.narrow, self.lines = narrow, lines
        self._clear()
        n = len(self.controls)
        if narrow:
            self.grid.addWidget(self.compose, 0, 0, 1, n + 1)
            at = 0
            for r, count in enumerate(lines or (n,), start=1):
                row = QHBoxLayout()
                row.addStretch(1)
                for w in self.controls[at : at + count]:
                    row.addWidget(w)
                at += count
                self.grid.addLayout(row, r, 0, 1, n + 1)
                self._rows.append(row)
            self.grid.setColumnStretch(0, 1)
        else:
            self.grid.addWidget(self.compose, 0, 0)
            for i, w in enumerate(self.controls, start=1):
                self.grid.addWidget(w, 0, i, Qt.AlignmentFlag.AlignBottom)
            self.grid.setColumnStretch(0, 1)


@dataclass
class ChatPage:
    """The chat page and the widgets on it."""

    widget: QWidget
    chat: ChatView
    compose: ComposeEdit
    compose_row: QGridLayout
    tool_choice_box: ToolChoiceBox
    send_button: QPushButton
    #: first contact (U16): shown while no model is loaded, it points to the recommended models and Import
    no_model: QFrame | None = None
    recommended_button: QPushButton | None = None
    import_button: QPushButton | None = None

    #: the thinking control beside the tool choice (issue 30)
    thinking_box: ThinkingBox | None = None
    #: images (issue 30): the button that attaches one, and those attached to the message being written
    attach_button: QToolButton | None = None
    pending_images: PendingImages | None = None
    #: the line above the chat that says which system prompt it uses, with Edit…
    system_bar: SystemPromptBar | None = None
    #: "This chat was with …" and Load, above a reopened chat written with another model
    model_hint: ChatModelHint | None = None
    #: Find in the chat (Ctrl+F), above the conversation
    find_bar: FindBar | None = None
    #: text files: the button that attaches them, and those attached to the message being written
    file_button: QToolButton | None = None
    pending_files: PendingFiles | None = None

    @property
    def others_button(self) -> QPushButton:
        """The first-contact hint's offer of the models other apps keep (hidden when none)."""
        assert self.no_model is not None
        button = self.no_model.findChild(QPushButton, "noModelOthers")
        assert button is not None
        return button

    @classmethod
    def build(cls, *, banners: QLayout, tool_choice: str) -> ChatPage:
        """``banners`` (the window's notices) above the chat, the compose row below it."""
        page = QWidget()
        page.setObjectName("centralArea")
        v = QVBoxLayout(page)
        v.setContentsMargins(0, 0, 0, 0)
        v.addLayout(banners)
        no_model, recommended, import_ = cls._build_no_model()
        v.addWidget(no_model)
        system_bar = SystemPromptBar()
        v.addWidget(system_bar)
        model_hint = ChatModelHint()
        v.addWidget(model_hint)
        chat = ChatView()
        find_bar = FindBar(chat)
        v.addWidget(find_bar)
        v.addWidget(chat, 1)
        row = QGridLayout()
        row.setContentsMargins(12, 6, 12, 10)
        compose = ComposeEdit()
        box = ToolChoiceBox(tool_choice)
        thinking = ThinkingBox()
        send = QPushButton("Send")
        send.setObjectName("sendButton")
        attach = QToolButton()
        attach.setObjectName("attachImage")
        attach.setText("Image…")
        attach.setToolTip("Attach an image (or paste one, or drop image files on the window)")
        attach_file = QToolButton()  # an icon: the compose row keeps its room at 800×600
        attach_file.setObjectName("attachFile")
        attach_file.setIcon(icon("attach"))
        attach_file.setAccessibleName("Attach text files")
        attach_file.setToolTip(
            "Attach text files (code, notes, data): their text goes with the message "
            "(or drop them on the window)"
        )
        _ComposeLayout(page, row, compose, [attach, attach_file, box, thinking, send]).arrange(False)
        v.addLayout(row)
        pending = PendingImages()
        pending.setContentsMargins(12, 0, 12, 8)
        v.addWidget(pending)
        pending_files = PendingFiles()
        pending_files.setContentsMargins(12, 0, 12, 8)
        v.addWidget(pending_files)
        return cls(
            page,
            chat,
            compose,
            row,
            box,
            send,
            no_model,
            recommended,
            import_,
            thinking_box=thinking,
            attach_button=attach,
            pending_images=pending,
            system_bar=system_bar,
            find_bar=find_bar,
            model_hint=model_hint,
            file_button=attach_file,
            pending_files=pending_files,
        )

    @staticmethod
    def _build_no_model() -> tuple[QFrame, QPushButton, QPushButton]:
        frame = QFrame()
        frame.setObjectName("noModelHint")
        lay = QVBoxLayout(frame)
        lay.setContentsMargins(16, 16, 16, 8)
        text = QLabel(
            "<b>No model yet.</b> Download one of the recommended models (small ones that call tools "
            "well, each with its size and whether it fits this computer), or import a GGUF file you have."
        )
        text.setWordWrap(True)
        text.setObjectName("hint")
        lay.addWidget(text)
        row = QHBoxLayout()
        recommended = QPushButton("Recommended models")
        recommended.setObjectName("noModelRecommended")
        import_ = QPushButton("Import GGUF…")
        import_.setObjectName("noModelImport")
        row.addWidget(recommended)
        row.addWidget(import_)
        others = QPushButton("Use your LM Studio and Ollama models")  # (shown when they keep some)
        others.setObjectName("noModelOthers")
        others.setToolTip(
            "List the models those apps downloaded, where they are: nothing copied or downloaded again"
        )
        others.hide()
        others.clicked.connect(others.hide)  # (taken: nothing more to offer)
        row.addWidget(others)
        row.addStretch(1)
        lay.addLayout(row)
        frame.setVisible(False)
        return frame, recommended, import_

    def show_no_model(self, shown: bool, library: Any = None) -> None:
        """Show the first-contact hint (no model loaded or loading) or hide it; with it, the offer
        of the models other apps keep that ``library`` does not list, when there are some."""
        from app.ui.models_page.other_apps import other_apps_offer

        others = other_apps_offer(library) if shown and library is not None else None
        if self.no_model is not None:
            self.no_model.setVisible(shown)
            self.others_button.setText(others or "")
            self.others_button.setVisible(bool(shown and others))
