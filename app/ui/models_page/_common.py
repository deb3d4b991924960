"""What the Models page's panes share: the fit colours, the table set-up, the fit badge and the
button a model row ends with (Download, or Load now / Loaded when the library has the file)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtGui import QColor
from PySide6.QtWidgets import QAbstractItemView, QHeaderView, QPushButton, QTableWidget, QTableWidgetItem

if TYPE_CHECKING:
    from app.ui.models_page.page import ModelsPage

__all__ = ["FIT_COLORS", "fit_badge", "load_action", "model_button", "setup_table"]

FIT_COLORS = {"fits": "#2e7d32", "tight": "#ef6c00", "too large": "#c62828"}


def setup_table(table: QTableWidget) -> None:
    """Read-only rows; the name column takes the room left, every other column fits its contents."""
    table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    table.verticalHeader().setVisible(False)
    header = table.horizontalHeader()
    # The name takes the room left; every other column (badges, buttons) fits its contents,
    # so the Load / Delete buttons never end up behind a horizontal scroll bar.
    header.setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
    header.setSectionResizeMode(0, QHeaderView.ResizeMode.Stretch)
    header.setMinimumSectionSize(40)
    table.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
    table.setTextElideMode(Qt.TextElideMode.ElideMiddle)
    table.setWordWrap(False)


def load_action(page: ModelsPage, model: Any) -> tuple[str, bool, str]:
    """A library model's load button or menu action: its text, whether it may load the model, and
    its tooltip. Loaded (the chat uses it), Loading… (the chat is loading it: a second click would
    only load it again), else Load now."""
    if page.is_loaded(model):
        return "Loaded", False, "The chat uses this model now."
    if page.is_loaded(model, loading=True):
        return "Loading…", False, "The chat is loading this model."
    return "Load now", True, "Chat with this model"


def fit_badge(estimate: Any) -> QTableWidgetItem:
    """The memory-fit cell: "fits" / "tight" / "too large", coloured, the estimate as its tooltip."""
    badge = QTableWidgetItem(estimate.fit)
    badge.setForeground(QColor("white"))
    badge.setBackground(QColor(FIT_COLORS[estimate.fit]))
    badge.setToolTip(estimate.describe())
    return badge


def model_button(
    page: ModelsPage, repo_id: str, filename: str, download: Callable[[], None], *, tooltip: bool = False
) -> QPushButton:
    """Load now / Loaded when the library already has ``repo_id``/``filename`` (no second download),
    else Download (which calls ``download``)."""
    have = page.local_model_for(repo_id, filename)
    if have is None:
        button = QPushButton("Download")
        button.clicked.connect(lambda _c=False: download())
        return button
    text, can_load, _tip = load_action(page, have)
    button = QPushButton(text)
    button.setEnabled(can_load)
    if tooltip:
        button.setToolTip(f"Downloaded: {have.path}")
    button.clicked.connect(lambda _c=False, p=str(have.path): page.sig_load_requested.emit(p))
    return button
