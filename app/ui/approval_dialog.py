"""Approval of a side-effecting tool call: Allow once / Always allow / Deny, with the arguments."""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QFont
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

__all__ = ["ApprovalDialog"]


class ApprovalDialog(QDialog):
    """Non-modal to the worker: ``decision`` is set when a button is pressed (closing = deny)."""

    def __init__(self, request: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("approvalDialog")
        self.request = request
        self.call_id = str(getattr(request, "call_id", ""))
        self.tool_name = str(getattr(request, "tool_name", getattr(request, "name", "tool")))
        self.decision = "deny"
        self.setWindowTitle(f"Allow {self.tool_name}?")
        self.setModal(True)
        lay = QVBoxLayout(self)
        head = QLabel(f"The model wants to run <b>{self.tool_name}</b>.")
        head.setTextFormat(Qt.TextFormat.RichText)
        lay.addWidget(head)
        desc = str(getattr(request, "description", "") or "")
        if desc:
            d = QLabel(desc)
            d.setWordWrap(True)
            lay.addWidget(d)
        lay.addWidget(QLabel("Arguments:"))
        self.args_view = QPlainTextEdit()
        self.args_view.setReadOnly(True)
        self.args_view.setFont(QFont("monospace"))
        args_text = getattr(request, "arguments_text", None)
        if not isinstance(args_text, str):
            args_text = json.dumps(getattr(request, "arguments", {}), indent=2, ensure_ascii=False, default=str)
        self.args_view.setPlainText(args_text)
        lay.addWidget(self.args_view, 1)
        timeout = getattr(request, "timeout_s", None)
        if timeout:
            note = QLabel(f"No answer within {int(timeout)} s counts as Deny.")
            note.setObjectName("approvalNote")
            lay.addWidget(note)
            QTimer.singleShot(int(timeout * 1000), self.reject)
        row = QHBoxLayout()
        row.addStretch(1)
        self.btn_deny = QPushButton("Deny")
        self.btn_always = QPushButton("Always allow")
        self.btn_once = QPushButton("Allow once")
        self.btn_once.setDefault(True)
        for b, dec in ((self.btn_deny, "deny"), (self.btn_always, "always"), (self.btn_once, "allow_once")):
            b.clicked.connect(lambda _=False, d=dec: self._answer(d))
            row.addWidget(b)
        lay.addLayout(row)
        self.resize(480, 340)

    def _answer(self, decision: str) -> None:
        self.decision = decision
        if decision == "deny":
            self.reject()
        else:
            self.accept()
