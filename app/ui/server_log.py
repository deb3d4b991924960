"""The Server page's log of requests: one row per request the local API server answered.

A row says when, what (method, path, model), how much (tokens in and out, tool calls), how long,
and how it ended. A request that failed says why, in the words its client was told, so the person
running an agent against the server sees in the window what the agent saw. A failed status stands
out in a red cell; its tooltip names the status ("422 Unprocessable Entity"). Everything stays on
one line: a long model name is cut in the middle and an error at its end, each with "…" and the
whole text in the cell's tooltip. Copy (Ctrl+C, or the rows' menu) puts the chosen rows on the
clipboard as tab-separated lines under the column names, every text whole: an error to paste
into a bug report or an agent's issue.
"""

from __future__ import annotations

import time
from http import HTTPStatus
from typing import Any

from PySide6.QtCore import QPoint, Qt
from PySide6.QtGui import QAction, QColor, QGuiApplication, QKeySequence
from PySide6.QtWidgets import QHeaderView, QMenu, QStyledItemDelegate, QTableWidget, QTableWidgetItem, QWidget

from app.ui.chat.live import elapsed_text

__all__ = ["LOG_COLUMNS", "MAX_ROWS", "RequestLog", "status_text"]

LOG_COLUMNS = ("Time", "Method", "Path", "Model", "Tokens", "Duration", "Tool calls", "Status", "Error")
#: the oldest rows go first past this many
MAX_ROWS = 500
#: a failed request's status cell (white text on it), the same red as a model that does not fit
FAILED_COLOR = "#c62828"

_HEADER_TIPS = {
    "Tokens": "Tokens read from the prompt + tokens written in the reply",
    "Duration": "From the request's arrival to the end of its response",
    "Error": "Why the request failed, as its client was told",
}


def status_text(status: int) -> str:
    """An HTTP status with its name: "200 OK", "429 Too Many Requests", "499 Client Closed Request"."""
    if status == 499:  # nginx's name for a client that left before the response ended
        return "499 Client Closed Request"
    try:
        return f"{status} {HTTPStatus(status).phrase}"
    except ValueError:
        return str(status)


class _CutAtTheEnd(QStyledItemDelegate):
    """An error's cell keeps its start, which says what went wrong, and cuts its end."""

    def initStyleOption(self, option, index) -> None:  # noqa: N802 - Qt's name
        super().initStyleOption(option, index)
        option.textElideMode = Qt.TextElideMode.ElideRight


class RequestLog(QTableWidget):
    """The rows of served requests (:class:`app.server.RequestLogEntry`), newest at the bottom."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(0, len(LOG_COLUMNS), parent)
        self.setObjectName("serverLog")
        self.setHorizontalHeaderLabels(list(LOG_COLUMNS))
        for name, tip in _HEADER_TIPS.items():
            header_item = self.horizontalHeaderItem(LOG_COLUMNS.index(name))
            if header_item is not None:
                header_item.setToolTip(tip)
        self.verticalHeader().setVisible(False)
        self.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectRows)
        self.setWordWrap(False)
        self.setTextElideMode(Qt.TextElideMode.ElideMiddle)  # a model's name: both ends matter
        self._cut_at_the_end = _CutAtTheEnd(self)
        self.setItemDelegateForColumn(LOG_COLUMNS.index("Error"), self._cut_at_the_end)
        header = self.horizontalHeader()
        header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        # fitted to the rows in view only: measuring all 500 rows on every new one cost the UI
        # thread milliseconds per request (a client polling fast would make the window lag)
        header.setResizeContentsPrecision(0)
        header.setSectionResizeMode(LOG_COLUMNS.index("Model"), QHeaderView.ResizeMode.Interactive)
        header.resizeSection(LOG_COLUMNS.index("Model"), 200)
        header.setSectionResizeMode(LOG_COLUMNS.index("Error"), QHeaderView.ResizeMode.Stretch)
        self.copy_action = QAction("Copy", self)
        self.copy_action.setShortcut(QKeySequence.StandardKey.Copy)
        self.copy_action.setShortcutContext(Qt.ShortcutContext.WidgetShortcut)
        self.copy_action.triggered.connect(self.copy_selected)
        self.addAction(self.copy_action)
        self.setContextMenuPolicy(Qt.ContextMenuPolicy.CustomContextMenu)
        self.customContextMenuRequested.connect(self._menu)
        # Whether the log follows its newest row: it does until the person scrolls away from the
        # bottom, and again once they scroll back. (The scroll bar's range grows a moment after a
        # row is added, so "at the bottom now" cannot be asked when the next row comes.)
        self._following = True
        self.verticalScrollBar().valueChanged.connect(self._on_scrolled)

    def _on_scrolled(self, value: int) -> None:
        self._following = value >= self.verticalScrollBar().maximum()

    def selected_text(self) -> str:
        """The chosen rows as tab-separated lines under the column names (each text whole)."""
        rows = sorted({i.row() for i in self.selectedIndexes()})
        lines = ["\t".join(LOG_COLUMNS)]
        for r in rows:  # (a cell's text is whole: only its painting cuts it)
            cells = [self.item(r, c) for c in range(len(LOG_COLUMNS))]
            lines.append("\t".join(c.text() if c is not None else "" for c in cells))
        return "\n".join(lines) if rows else ""

    def copy_selected(self) -> None:
        text = self.selected_text()
        if text:
            QGuiApplication.clipboard().setText(text)

    def _menu(self, pos: QPoint) -> None:
        if not self.selectedIndexes():
            return
        menu = QMenu(self)
        menu.addAction(self.copy_action)
        menu.exec(self.viewport().mapToGlobal(pos))

    def add(self, entry: Any) -> None:
        """A row for ``entry``; the oldest row goes when there are :data:`MAX_ROWS`. The log
        follows its newest row while it shows the bottom; a person who scrolled up to read a row
        stays where they are."""
        if self.rowCount() >= MAX_ROWS:
            self.removeRow(0)
        r = self.rowCount()
        self.insertRow(r)
        tokens = (
            f"{entry.prompt_tokens} + {entry.completion_tokens}"
            if entry.prompt_tokens or entry.completion_tokens
            else ""
        )
        error = getattr(entry, "error", "") or ""
        values = {
            "Time": time.strftime("%H:%M:%S", time.localtime(entry.time)),
            "Method": entry.method,
            "Path": entry.path,
            "Model": entry.model,
            "Tokens": tokens,
            "Duration": elapsed_text(entry.duration_s),
            "Tool calls": str(entry.tool_calls) if entry.tool_calls else "",
            "Status": str(entry.status),
            "Error": " ".join(error.split()),  # one line: a message's line breaks would hide its end
        }
        for c, name in enumerate(LOG_COLUMNS):
            item = QTableWidgetItem(values[name])
            if name in ("Path", "Model", "Error") and values[name]:
                item.setToolTip(error if name == "Error" else values[name])
            if name == "Status":
                item.setToolTip(status_text(entry.status))
                if entry.status >= 400 or error:
                    item.setForeground(QColor("white"))
                    item.setBackground(QColor(FAILED_COLOR))
            self.setItem(r, c, item)
        if self._following:
            self.scrollToBottom()
