"""The tool-call side panel: every call of the conversation, in order, with its details.

Each row shows a :class:`~app.ui.call_view.CallView`, the shape the card inline in the reply shows
too (one ``status`` rule for both).
"""

from __future__ import annotations

import html

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QListWidget,
    QListWidgetItem,
    QSplitter,
    QTextBrowser,
    QWidget,
)

from app.calls import APPROVAL_WORDS
from app.tools.types import pretty_json
from app.ui.call_view import CallView, call_summary, format_duration
from app.ui.labels import side_panel_layout

__all__ = ["ToolCallPanel"]


class ToolCallPanel(QWidget):
    """A list of calls (name, status) above the selected call's details."""

    sig_selected = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        lay = side_panel_layout(self, "toolPanel")
        split = QSplitter(Qt.Orientation.Vertical)
        self.list = QListWidget()
        self.list.setObjectName("toolList")
        self.list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.list.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.list.currentItemChanged.connect(self._on_list_current_changed)
        self.detail = QTextBrowser()
        self.detail.setObjectName("toolDetail")
        self.detail.setOpenLinks(False)
        split.addWidget(self.list)
        split.addWidget(self.detail)
        split.setSizes([160, 400])
        lay.addWidget(split, 1)
        self.entries: dict[str, CallView] = {}  # call id -> what the panel shows of it
        self._tools: tuple[str, ...] | None = None  # the tools the session declares (None: not known yet)
        self._workspace: str | None = None
        self._show_empty()

    def set_setup(self, tools: tuple[str, ...] | list[str] | None, workspace: str | None) -> None:
        """The tools on now and the workspace folder: the hint of an empty panel says them (U13)."""
        self._tools = tuple(tools) if tools is not None else None
        self._workspace = workspace
        if not self.entries:
            self._show_empty()

    def empty_hint(self) -> str:
        """What the panel says while the conversation has no calls, for the setup it was given."""
        from html import escape

        tools = self._tools
        if tools is not None and not tools:
            return (
                "Tools are off for this model (its tool format is None, or it has none Callisto can "
                "read): it will not call any. Choose a format in Settings → Chat."
            )
        names = ", ".join(tools) if tools else "the calculator and the clock"
        text = f"The model can use {escape(names)}."
        if self._workspace:
            text += f" File tools work in {escape(self._workspace)}."
        else:
            text += " Set a workspace folder in Settings → Tools to let it read and write files there."
        return text

    def _show_empty(self) -> None:
        self.detail.setHtml(
            f"<p><i>No tool calls in this conversation yet.</i></p><p>{self.empty_hint()}</p>"
        )

    def clear(self) -> None:
        # the list first: clearing it reports a current-item change for items that must still have entries
        self.list.clear()
        self.entries = {}
        self._show_empty()

    def show_call(self, view: CallView) -> None:
        """Show ``view``: a new call is added and selected (the newest call is the one shown); a call
        already listed is shown as ``view`` now tells it (finished, or read by a named parser)."""
        call_id = view.call.id
        known = call_id in self.entries
        self.entries[call_id] = view
        if not known:
            item = QListWidgetItem()
            item.setData(Qt.ItemDataRole.UserRole, call_id)
            self.list.addItem(item)
            self.list.setCurrentItem(item)
        self._refresh_item(call_id)
        if known and self.selected_call_id() == call_id:
            self._render(view)

    def remove_call(self, call_id: str) -> None:
        """Forget a call of a reply that was thrown away (regenerated, or edited away)."""
        it = self._item(call_id)
        if it is not None:
            self.list.takeItem(self.list.row(it))
        self.entries.pop(call_id, None)
        if not self.entries:
            self._show_empty()

    def _item(self, call_id: str) -> QListWidgetItem | None:
        for i in range(self.list.count()):
            it = self.list.item(i)
            if it.data(Qt.ItemDataRole.UserRole) == call_id:
                return it
        return None

    def _refresh_item(self, call_id: str) -> None:
        view, it = self.entries[call_id], self._item(call_id)
        if it is None:
            return
        mark = {"running": "…", "ok": "✓", "error": "✗", "denied": "✗"}.get(view.status, "…")
        outcome = view.outcome
        took = outcome.duration_s if outcome is not None else None
        dur = f" · {format_duration(took)}" if took else ""
        it.setText(f"{mark} {call_summary(view.call, 36)}{dur}")
        it.setToolTip(f"{view.call.name} — {view.status}{dur}")

    def select_call(self, call_id: str) -> bool:
        it = self._item(call_id)
        if it is None:
            return False
        self.list.setCurrentItem(it)
        self._render(self.entries[call_id])
        return True

    def selected_call_id(self) -> str | None:
        it = self.list.currentItem()
        return it.data(Qt.ItemDataRole.UserRole) if it is not None else None

    def _on_list_current_changed(self, cur: QListWidgetItem | None, _prev: QListWidgetItem | None) -> None:
        if cur is None:
            return
        cid = cur.data(Qt.ItemDataRole.UserRole)
        view = self.entries.get(cid)
        if view is None:
            return
        self._render(view)
        self.sig_selected.emit(cid)

    def detail_text(self) -> str:
        return self.detail.toPlainText()

    def _render(self, view: CallView) -> None:
        def pre(s: str) -> str:
            return f'<pre style="white-space:pre-wrap;margin:2px 0 8px 0;">{html.escape(s)}</pre>'

        def pair(label: str, value: str) -> str:  # kept on one line: a narrow panel wraps between pairs
            return f'<span style="white-space:nowrap"><b>{label}:</b> {html.escape(value)}</span>'

        call, outcome = view.call, view.outcome
        approval = APPROVAL_WORDS.get(outcome.approval, outcome.approval) if outcome is not None else "—"
        took = outcome.duration_s if outcome is not None else None
        rows = [
            f"<h3 style='margin:2px 0;'>{html.escape(call.name)}</h3>",
            "<p>"
            + " &nbsp; ".join(
                [
                    pair("Status", view.status),
                    *([pair("Time", format_duration(took))] if took else []),
                    pair("Approval", approval),
                ]
            )
            + "</p>",
            f"<p><b>Decoding:</b> {html.escape(view.decoding)}</p>",
            "<p><b>Arguments</b></p>",
            pre(pretty_json(call.arguments)),
        ]
        if view.parser:
            from app.engine.remote.keys import parser_words

            rows.insert(3, f"<p><b>Read by:</b> {html.escape(parser_words(view.parser) or view.parser)}</p>")
        if outcome is not None and outcome.error is not None:
            rows += ["<p><b>Error</b></p>", pre(outcome.error)]
        elif outcome is not None and outcome.content is not None:
            rows += ["<p><b>Result</b></p>", pre(pretty_json(outcome.content))]
        rows += ["<p><b>Raw text the model wrote</b></p>", pre(call.raw or "(not available)")]
        self.detail.setHtml("".join(rows))
