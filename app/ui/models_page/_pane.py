"""The frame of a Models page pane: its title and buttons over its table (Library, Downloads)."""

from __future__ import annotations

from collections.abc import Sequence

from PySide6.QtWidgets import QHBoxLayout, QLabel, QPushButton, QTableWidget, QVBoxLayout, QWidget

from app.ui.models_page._common import setup_table

__all__ = ["pane_table"]


def pane_table(
    pane: QWidget, title: str, buttons: Sequence[QPushButton], columns: Sequence[str]
) -> QTableWidget:
    """A pane's body: its bold ``title`` with ``buttons`` on the right, over a read-only table of
    ``columns`` (see :func:`~app.ui.models_page._common.setup_table`), which is returned."""
    layout = QVBoxLayout(pane)
    layout.setContentsMargins(0, 0, 0, 0)
    head = QHBoxLayout()
    head.addWidget(QLabel(f"<b>{title}</b>"))
    head.addStretch(1)
    for b in buttons:
        head.addWidget(b)
    layout.addLayout(head)
    table = QTableWidget(0, len(columns))
    table.setHorizontalHeaderLabels(list(columns))
    setup_table(table)
    layout.addWidget(table)
    return table
