"""The tool-call side panel: every call of the conversation, in order, with its details."""

from __future__ import annotations

import html
import json
from dataclasses import dataclass
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QListWidget,
    QListWidgetItem,
    QSplitter,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

__all__ = ["APPROVAL_WORDS", "ToolCallEntry", "ToolCallPanel"]


@dataclass
class ToolCallEntry:
    call_id: str
    name: str
    arguments: Any
    raw: str = ""
    result: str | None = None
    error: str | None = None
    duration_s: float | None = None
    approval: str | None = None
    finished: bool = False
    constrained: str | None = None  # the constraint that held the call while it was decoded, or None (free)
    parser: str | None = None  # which parser read the call (``DoneEvent.extra["call_parsers"]``), or None

    @property
    def status(self) -> str:
        if not self.finished:
            return "running"
        if self.error is not None:
            return "denied" if self.approval in ("denied", "timeout", "deny") else "error"
        return "ok"


#: The approval outcomes in plain words (the dispatcher's values are internal).
APPROVAL_WORDS = {
    "auto": "not needed",
    "always": "always allowed",
    "allowed_once": "allowed once",
    "denied": "denied by you",
    "deny": "denied by you",
    "timeout": "no answer in time",
}


def _pretty(value: Any) -> str:
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            return value
    try:
        return json.dumps(value, indent=2, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return repr(value)


class ToolCallPanel(QWidget):
    """A list of calls (name, status) above the selected call's details."""

    sig_selected = Signal(str)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setObjectName("toolPanel")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(6, 6, 6, 6)
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
        self.entries: dict[str, ToolCallEntry] = {}
        self._show_empty()

    def _show_empty(self) -> None:
        self.detail.setHtml(
            "<p><i>No tool calls in this conversation yet.</i></p>"
            "<p>The model can use the calculator and the clock; set a workspace folder in "
            "Settings → Tools to let it read and write files there.</p>"
        )

    def clear(self) -> None:
        # the list first: clearing it reports a current-item change for items that must still have entries
        self.list.clear()
        self.entries = {}
        self._show_empty()

    def add_call(
        self, call_id: str, name: str, arguments: Any, raw: str = "", *, constrained: str | None = None
    ) -> ToolCallEntry:
        e = self.entries.get(call_id)
        if e is None:
            e = ToolCallEntry(call_id, name, arguments, raw, constrained=constrained)
            self.entries[call_id] = e
            item = QListWidgetItem()
            item.setData(Qt.ItemDataRole.UserRole, call_id)
            self.list.addItem(item)
            self.list.setCurrentItem(item)  # the newest call is the one shown
        self._refresh_item(call_id)
        return e

    def remove_call(self, call_id: str) -> None:
        """Forget a call of a reply that was thrown away (regenerated, or edited away)."""
        it = self._item(call_id)
        if it is not None:
            self.list.takeItem(self.list.row(it))
        self.entries.pop(call_id, None)
        if not self.entries:
            self._show_empty()

    def finish_call(
        self,
        call_id: str,
        name: str,
        arguments: Any,
        raw: str,
        result: str | None,
        error: str | None,
        duration_s: float | None,
        approval: str | None,
    ) -> ToolCallEntry:
        e = self.add_call(call_id, name, arguments, raw)
        e.raw = raw or e.raw
        e.result, e.error, e.duration_s, e.approval, e.finished = result, error, duration_s, approval, True
        self._refresh_item(call_id)
        if self.selected_call_id() == call_id:
            self._render(e)
        return e

    def set_parser(self, call_id: str, parser: str) -> bool:
        """Say which parser read the call (``api:openai``, ``callisto:hermes``...); False if unknown."""
        e = self.entries.get(call_id)
        if e is None:
            return False
        e.parser = parser
        if self.selected_call_id() == call_id:
            self._render(e)
        return True

    def _item(self, call_id: str) -> QListWidgetItem | None:
        for i in range(self.list.count()):
            it = self.list.item(i)
            if it.data(Qt.ItemDataRole.UserRole) == call_id:
                return it
        return None

    def _refresh_item(self, call_id: str) -> None:
        e, it = self.entries[call_id], self._item(call_id)
        if it is None:
            return
        from app.ui.chat_view import call_summary, format_duration

        mark = {"running": "…", "ok": "✓", "error": "✗", "denied": "✗"}[e.status]
        dur = f" · {format_duration(e.duration_s)}" if e.duration_s is not None else ""
        it.setText(f"{mark} {call_summary(e.name, e.arguments, 36)}{dur}")
        it.setToolTip(f"{e.name} — {e.status}{dur}")

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
        entry = self.entries.get(cid)
        if entry is None:
            return
        self._render(entry)
        self.sig_selected.emit(cid)

    def detail_text(self) -> str:
        return self.detail.toPlainText()

    def _render(self, e: ToolCallEntry) -> None:
        def pre(s: str) -> str:
            return f'<pre style="white-space:pre-wrap;margin:2px 0 8px 0;">{html.escape(s)}</pre>'

        rows = [
            f"<h3 style='margin:2px 0;'>{html.escape(e.name)}</h3>",
            f"<p><b>Status:</b> {e.status}"
            + (f" &nbsp; <b>Time:</b> {e.duration_s * 1000:.1f} ms" if e.duration_s is not None else "")
            + f" &nbsp; <b>Approval:</b> {html.escape(APPROVAL_WORDS.get(e.approval or '', e.approval or '—'))}"
            + "</p>",
            "<p><b>Decoding:</b> "
            + (
                f"held to its schema ({html.escape(e.constrained)})"
                if e.constrained
                else "free (parsed after the fact)"
            )
            + "</p>",
            "<p><b>Arguments</b></p>",
            pre(_pretty(e.arguments)),
        ]
        if e.parser:
            from app.ui.remote_models import parser_words

            rows.insert(3, f"<p><b>Read by:</b> {html.escape(parser_words(e.parser) or e.parser)}</p>")
        if e.error is not None:
            rows += ["<p><b>Error</b></p>", pre(e.error)]
        elif e.result is not None:
            rows += ["<p><b>Result</b></p>", pre(_pretty(e.result))]
        rows += ["<p><b>Raw text the model wrote</b></p>", pre(e.raw or "(not available)")]
        self.detail.setHtml("".join(rows))
