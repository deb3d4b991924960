"""Editing a reply's text in place (the reply's ⋯ → *Edit reply text*): a box over the reply's
text with Save and Cancel. The edited text is what the model reads from now on; nothing is
generated again. The window decides which stored message the reply's text is and saves it
(``window_reply_edit``); this is only the box."""

from __future__ import annotations

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QKeyEvent
from PySide6.QtWidgets import QFrame, QHBoxLayout, QLabel, QPushButton, QVBoxLayout, QWidget

from app.ui.chat.compose import EditBox

__all__ = ["ReplyEditor"]


class _ReplyEditBox(EditBox):
    """A reply's text is Markdown of many lines: Enter is a new line, Ctrl+Enter saves, Esc cancels."""

    def keyPressEvent(self, e: QKeyEvent) -> None:  # noqa: N802 (Qt API)
        if e.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            if e.modifiers() & Qt.KeyboardModifier.ControlModifier:
                self.sig_submit.emit()
            else:
                self.insertPlainText("\n")
            return
        super().keyPressEvent(e)


class ReplyEditor(QFrame):
    """The box that edits ``text`` (a reply's), shown in place of ``run`` (the reply's text,
    hidden meanwhile): ``sig_save(new text)`` or ``sig_cancel``; :meth:`close_editor` takes it away
    and shows the text again."""

    sig_save = Signal(str)
    sig_cancel = Signal()

    def __init__(self, text: str, run: QWidget) -> None:
        super().__init__()
        self.setObjectName("replyEditor")
        self.run = run
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 4, 0, 4)
        self.box = _ReplyEditBox()
        self.box.setObjectName("replyEditBox")
        self.box.setPlainText(text)
        lines = max(4, min(16, text.count("\n") + 2))
        self.box.setFixedHeight(lines * self.box.fontMetrics().lineSpacing() + 16)
        self.box.sig_submit.connect(self._save)
        self.box.sig_cancel.connect(self.sig_cancel.emit)
        lay.addWidget(self.box)
        note = QLabel("The model reads your text as its reply from now on. Nothing is generated again.")
        note.setObjectName("msgStats")
        note.setWordWrap(True)
        lay.addWidget(note)
        row = QHBoxLayout()
        row.addStretch(1)
        self.btn_cancel = QPushButton("Cancel")
        self.btn_cancel.clicked.connect(self.sig_cancel.emit)
        self.btn_save = QPushButton("Save")
        self.btn_save.setToolTip("Save the reply's text (Ctrl+Enter)")
        self.btn_save.clicked.connect(self._save)
        row.addWidget(self.btn_cancel)
        row.addWidget(self.btn_save)
        lay.addLayout(row)
        holder = run.parentWidget()
        parent_layout = holder.layout() if holder is not None else None
        assert isinstance(parent_layout, QVBoxLayout)  # the reply's column of blocks
        parent_layout.insertWidget(parent_layout.indexOf(run) + 1, self)
        run.setVisible(False)
        self.show()  # (a widget added to a shown layout is shown a moment later otherwise)
        self.box.setFocus()
        self.box.moveCursor(self.box.textCursor().MoveOperation.End)

    def _save(self) -> None:
        text = self.box.toPlainText()
        if text.strip():
            self.sig_save.emit(text)

    def close_editor(self) -> None:
        self.run.setVisible(True)
        self.hide()
        self.deleteLater()
