"""A tool call inline in a reply: a one-line chip and, behind its arrow, the call's details.

Both show a :class:`~app.ui.call_view.CallView`, the one shape the side panel shows too; the card
keeps no state of its own about the call.
"""

from __future__ import annotations

from collections.abc import Callable

from PySide6.QtCore import QSize, Qt
from PySide6.QtWidgets import (
    QFrame,
    QHBoxLayout,
    QPushButton,
    QSizePolicy,
    QToolButton,
    QVBoxLayout,
    QWidget,
)

from app.tools.types import pretty_json
from app.ui.call_view import CallView, call_summary, format_duration, short
from app.ui.chat.markdown import PlainView

__all__ = ["ToolCard", "ToolChip"]


class ToolChip(QPushButton):
    """The header of a tool-call card: the call in one line and its outcome; clicking selects it in
    the side panel (the card's arrow opens the details inline).

    A long line is cut to the width the reply gives it ("…" at the end; the whole line is the
    tooltip), so a card never makes the conversation wider than the window (U5)."""

    MARKS = {"writing": "✎ writing…", "running": "…", "ok": "✓", "error": "✗", "denied": "✗ denied"}
    MIN_CHARS = 12  # the narrowest a chip gets, in average characters

    def __init__(self, view: CallView, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("toolChip")
        self.setCursor(Qt.CursorShape.PointingHandCursor)
        self.setFlat(True)
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Fixed)
        self.full_text = ""
        self.set_view(view)

    def sizeHint(self) -> QSize:  # noqa: N802 (Qt API): as wide as the whole line
        hint = super().sizeHint()
        fm = self.fontMetrics()
        return QSize(fm.horizontalAdvance(self.full_text) + 24, hint.height())

    def minimumSizeHint(self) -> QSize:  # noqa: N802 (Qt API): it may be cut to a few characters
        return QSize(
            self.fontMetrics().averageCharWidth() * self.MIN_CHARS, super().minimumSizeHint().height()
        )

    def resizeEvent(self, e) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(e)
        self._fit()

    def _fit(self) -> None:
        shown = self.fontMetrics().elidedText(
            self.full_text, Qt.TextElideMode.ElideRight, max(0, self.width() - 20)
        )
        if shown != self.text():
            self.setText(shown)

    def set_view(self, view: CallView) -> None:
        self.view = view
        summary = call_summary(view.call)
        outcome = view.outcome
        tail = ""
        if outcome is not None and outcome.error is not None:
            tail = f" → {short(outcome.error, 60)}"
        elif outcome is not None and outcome.content is not None:
            took = f" · {format_duration(outcome.duration_s)}" if outcome.duration_s else ""
            tail = f" → {short(outcome.content, 40)}{took}"
        self.full_text = f"⚙ {summary} {self.MARKS[view.status]}{tail}"
        self.setText(self.full_text)
        self._fit()
        self.updateGeometry()
        self.setToolTip(f"{self.full_text}\n\nShow this call in the tool-call panel")
        self.setProperty("state", "running" if view.status == "writing" else view.status)
        self.style().unpolish(self)
        self.style().polish(self)


class ToolCard(QFrame):
    """A tool call inline in the reply: the one-line chip, and behind its arrow the arguments, the
    result or error, the time, and the raw text the model wrote behind "Show raw"."""

    def __init__(self, view: CallView, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("toolCard")
        self._lay = lay = QVBoxLayout(self)
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
        self.chip = ToolChip(view)
        head.addWidget(self.chip)  # it may narrow: its line is cut to fit
        head.addStretch(1)
        lay.addLayout(head)
        self.body = self._folded(PlainView("toolCardBody"), raw=False)
        lay.addWidget(self.body)
        self.btn_raw = QToolButton()
        self.btn_raw.setObjectName("msgAction")
        self.btn_raw.setText("Show raw")
        self.btn_raw.setCheckable(True)
        self.btn_raw.setAutoRaise(True)
        self.btn_raw.setVisible(False)
        self.btn_raw.toggled.connect(self._on_raw_toggled)
        lay.addWidget(self.btn_raw, 0, Qt.AlignmentFlag.AlignLeft)
        self.raw_view = self._folded(PlainView("toolCardRaw"), raw=True)
        lay.addWidget(self.raw_view)
        self.fix_button: QPushButton | None = None
        self.set_view(view)

    def _folded(self, view: PlainView, *, raw: bool) -> PlainView:
        """``view`` folded behind the card's arrow (and the raw text behind "Show raw" too)."""
        view.fold_owner = self

        def unfold() -> None:
            self.toggle.setChecked(True)
            if raw:
                self.btn_raw.setChecked(True)

        view.unfold = unfold
        return view

    @property
    def view(self) -> CallView:
        return self.chip.view

    def set_view(self, view: CallView) -> None:
        """Show ``view`` (the same call, now known better: finished, or read by a named parser)."""
        self.chip.set_view(view)
        self.body.set_text(self.details_text())
        self.raw_view.set_text(view.call.raw or "(not available)")

    def set_fix(self, text: str, action: Callable[[], object]) -> QPushButton:
        """A button under the chip that fixes why the call failed (e.g. opens the setting it needs)."""
        if self.fix_button is None:
            self.fix_button = QPushButton()
            self.fix_button.setObjectName("errorAction")
            self.fix_button.setFlat(True)
            self.fix_button.setCursor(Qt.CursorShape.PointingHandCursor)
            self._lay.insertWidget(1, self.fix_button, 0, Qt.AlignmentFlag.AlignLeft)
        else:
            self.fix_button.clicked.disconnect()
        self.fix_button.setText(text)
        self.fix_button.clicked.connect(action)
        self.fix_button.show()  # a child added after the card was shown
        return self.fix_button

    def failed(self) -> bool:
        """The call did not do its work (an error, a denial or a timeout)."""
        return self.view.failed

    def details_text(self) -> str:
        view = self.view
        parts = [f"Arguments:\n{pretty_json(view.call.arguments)}"]
        outcome = view.outcome
        if outcome is not None:
            if outcome.error is not None:
                parts.append(f"Error:\n{outcome.error}")
            elif outcome.content is not None:
                parts.append(f"Result:\n{outcome.content}")
            if outcome.duration_s:
                parts.append(f"Time: {format_duration(outcome.duration_s)}")
        return "\n\n".join(parts)

    def _on_toggle_toggled(self, on: bool) -> None:
        self.toggle.setArrowType(Qt.ArrowType.DownArrow if on else Qt.ArrowType.RightArrow)
        self.body.setVisible(on)
        self.btn_raw.setVisible(on)
        self.raw_view.setVisible(on and self.btn_raw.isChecked())

    def _on_raw_toggled(self, on: bool) -> None:
        self.btn_raw.setText("Hide raw" if on else "Show raw")
        self.raw_view.setVisible(on)
