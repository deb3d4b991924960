"""Approval of a side-effecting tool call: Allow once / Always allow / Deny, with the arguments.

The dialog speaks to the person, not to the model: a built-in tool's action in plain words (for a
file write: the full destination path, and whether a file there is overwritten or created), the
exact arguments below it, and a countdown to the automatic Deny.

For a tool from an MCP server it also shows what the server claims (its annotations, as hints:
they never skip this question), what Callisto's checks found in the tool (hidden characters,
text aimed at the model), and, when the server now offers a different definition than the one
allowed before, what changed (a diff).

Deny is the default button: Enter (or Return) never allows anything, whatever has the focus; only
a click, Space on a focused button or the buttons' shortcuts do (a person typing their next
message when the dialog appears must not approve an overwrite).
"""

from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QFont, QKeyEvent
from PySide6.QtWidgets import QDialog, QHBoxLayout, QLabel, QPlainTextEdit, QPushButton, QVBoxLayout, QWidget

from app.calls import ApprovalDecision, ToolTrust
from app.tools.types import pretty_json
from app.units import format_bytes

__all__ = ["ApprovalDialog", "write_target"]


def write_target(workspace: str | None, path: Any) -> tuple[str, str]:
    """(full path, what happens there) for a write_file call into ``workspace``.

    The path is resolved by the same rules the tool applies; one it will refuse says why instead.
    """
    from app.tools import ToolError, Workspace, WorkspaceError

    if not workspace:
        return "", "No workspace folder is set, so the file tools will refuse this call."
    try:
        real = Workspace(workspace).resolve(path if isinstance(path, str) else "")
    except (ToolError, WorkspaceError) as exc:
        return "", f"The write will be refused: {exc}"
    if real.is_dir():
        return str(real), "This is a folder; the write will be refused."
    if real.exists():
        try:
            size = format_bytes(real.stat().st_size)
        except OSError:
            size = "unknown size"
        return str(real), f"This file already exists ({size}) and will be OVERWRITTEN."
    return str(real), "No file is there yet: a new file will be created."


def _countdown_text(remaining_s: float) -> str:
    s = max(0, int(remaining_s + 0.999))
    return f"Denied automatically in {s // 60}:{s % 60:02d} if you don't answer."


class ApprovalDialog(QDialog):
    """Non-modal to the worker: ``decision`` is set when a button is pressed (closing = deny).

    ``workspace`` is the file tools' folder (Settings → Tools), so that a write shows its full path.
    """

    def __init__(self, request: Any, parent: QWidget | None = None, *, workspace: str | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("approvalDialog")
        self.request = request
        self.call_id = str(getattr(request, "call_id", ""))
        self.tool_name = str(getattr(request, "tool_name", getattr(request, "name", "tool")))
        self.decision: ApprovalDecision = "deny"
        trust = getattr(request, "trust", None)
        self.trust: ToolTrust | None = trust if isinstance(trust, ToolTrust) else None
        self.warnings_label: QLabel | None = None
        self.hints_label: QLabel | None = None
        self.diff_view: QPlainTextEdit | None = None
        self.target_path = ""
        self.setWindowTitle(f"Allow {self.tool_name}?")
        self.setModal(True)
        lay = QVBoxLayout(self)
        arguments = getattr(request, "arguments", {})
        arguments = arguments if isinstance(arguments, dict) else {}
        builtin = str(getattr(request, "source", "builtin")) == "builtin"
        if builtin and self.tool_name == "write_file":
            content = arguments.get("content")
            n = len(content) if isinstance(content, str) else 0
            head = QLabel(f"The model wants to <b>write a file</b> ({n:,} characters).")
            head.setTextFormat(Qt.TextFormat.RichText)
            lay.addWidget(head)
            self.target_path, effect = write_target(workspace, arguments.get("path"))
            self.path_label = QLabel(self.target_path or str(arguments.get("path", "")))
            self.path_label.setObjectName("approvalPath")
            self.path_label.setFont(QFont("monospace"))
            self.path_label.setWordWrap(True)
            self.path_label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
            lay.addWidget(self.path_label)
            self.effect_label = QLabel(effect)
            self.effect_label.setObjectName("approvalEffect")
            self.effect_label.setWordWrap(True)
            self.effect_label.setProperty("warn", "true" if "OVERWRITTEN" in effect else "false")
            lay.addWidget(self.effect_label)
        else:
            head = QLabel(f"The model wants to run <b>{self.tool_name}</b>.")
            head.setTextFormat(Qt.TextFormat.RichText)
            lay.addWidget(head)
            desc = str(getattr(request, "description", "") or "")
            if desc:
                where = (
                    "" if builtin else f" (from {str(getattr(request, 'source', '')).removeprefix('mcp:')})"
                )
                d = QLabel(f"The tool describes itself{where} as: {desc}")
                d.setTextFormat(Qt.TextFormat.PlainText)
                d.setWordWrap(True)
                lay.addWidget(d)
            if self.trust is not None:
                self._add_trust(lay, self.trust, getattr(request, "previous", None))
        lay.addWidget(QLabel("Exactly what it sends:"))
        self.args_view = QPlainTextEdit()
        self.args_view.setReadOnly(True)
        self.args_view.setFont(QFont("monospace"))
        args_text = getattr(request, "arguments_text", None)
        if not isinstance(args_text, str):
            args_text = pretty_json(arguments)
        self.args_view.setPlainText(args_text)
        lay.addWidget(self.args_view, 1)
        timeout = getattr(request, "timeout_s", None)
        self.countdown: QLabel | None = None
        self._deadline: float | None = None
        if timeout:
            self._deadline = time.monotonic() + float(timeout)
            self.countdown = QLabel(_countdown_text(float(timeout)))
            self.countdown.setObjectName("approvalNote")
            lay.addWidget(self.countdown)
            self._tick_timer = QTimer(self)
            self._tick_timer.setInterval(1000)
            self._tick_timer.timeout.connect(self._tick)
            self._tick_timer.start()
        row = QHBoxLayout()
        row.addStretch(1)
        self.btn_deny = QPushButton("Deny")
        self.btn_always = QPushButton("Always allow")
        self.btn_once = QPushButton("Allow once")
        # U6: Deny is the default; no allowing button takes Enter even when it has the focus
        for b in (self.btn_always, self.btn_once):
            b.setAutoDefault(False)
            b.setDefault(False)
        self.btn_deny.setAutoDefault(True)
        self.btn_deny.setDefault(True)
        answers: tuple[tuple[QPushButton, ApprovalDecision], ...] = (
            (self.btn_deny, "deny"),
            (self.btn_always, "always"),
            (self.btn_once, "allow_once"),
        )
        for b, dec in answers:
            b.clicked.connect(lambda _=False, d=dec: self._answer(d))
            row.addWidget(b)
        lay.addLayout(row)
        self.btn_deny.setFocus(Qt.FocusReason.OtherFocusReason)
        self.resize(600, 580 if self.diff_view is not None else 360)

    def _add_trust(self, lay: QVBoxLayout, trust: ToolTrust, previous: Any) -> None:
        """What the server claims, what the checks found, and what changed since it was allowed."""
        if trust.hints:
            self.hints_label = QLabel(
                "The server says this tool " + "; ".join(trust.hints) + ". That is its own claim, not a "
                "promise: Callisto asks anyway."
            )
            self.hints_label.setObjectName("approvalHints")
            self.hints_label.setWordWrap(True)
            lay.addWidget(self.hints_label)
        if trust.warnings:
            self.warnings_label = QLabel("⚠ Careful: " + "; ".join(trust.warnings) + ".")
            self.warnings_label.setObjectName("approvalWarnings")
            self.warnings_label.setProperty("warn", "true")
            self.warnings_label.setTextFormat(Qt.TextFormat.PlainText)
            self.warnings_label.setWordWrap(True)
            lay.addWidget(self.warnings_label)
        if isinstance(previous, dict):
            from app.tools.mcp_trust import definition_diff

            changed = QLabel(
                "⚠ This tool CHANGED since you allowed it: the server now offers a different definition. "
                "Read what changed before you allow it again."
            )
            changed.setObjectName("approvalChanged")
            changed.setProperty("warn", "true")
            changed.setWordWrap(True)
            lay.addWidget(changed)
            self.diff_view = QPlainTextEdit()
            self.diff_view.setObjectName("approvalDiff")
            self.diff_view.setReadOnly(True)
            self.diff_view.setFont(QFont("monospace"))
            self.diff_view.setPlainText(definition_diff(previous, trust.definition))
            lay.addWidget(self.diff_view, 2)

    def keyPressEvent(self, event: QKeyEvent) -> None:  # noqa: N802 - Qt's name
        """Enter and Return answer Deny, whatever has the focus (U6)."""
        if event.key() in (Qt.Key.Key_Return, Qt.Key.Key_Enter):
            event.accept()
            self._answer("deny")
            return
        super().keyPressEvent(event)

    def remaining_s(self) -> float | None:
        """Seconds until the automatic Deny (None: no time limit)."""
        return None if self._deadline is None else max(0.0, self._deadline - time.monotonic())

    def _tick(self) -> None:
        remaining = self.remaining_s()
        if remaining is None or self.countdown is None:
            return
        self.countdown.setText(_countdown_text(remaining))
        if remaining <= 0:
            self._tick_timer.stop()
            self.reject()

    def _answer(self, decision: ApprovalDecision) -> None:
        self.decision = decision
        if decision == "deny":
            self.reject()
        else:
            self.accept()
