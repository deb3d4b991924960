"""The Models page's "Recommended for tool calling" pane: the curated models with this machine's
memory fit, each one click from a download (or Load now when the library has it)."""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import QHeaderView, QPushButton, QTableWidget, QTableWidgetItem, QVBoxLayout, QWidget

from app.ui.models_page._common import fit_badge, model_button, setup_table
from app.units import format_bytes

if TYPE_CHECKING:
    from app.ui.models_page.page import ModelsPage

__all__ = ["RecommendedPane"]


class RecommendedPane(QWidget):
    """The recommended models, their tool format, fit and why; Download or Load now."""

    def __init__(self, page: ModelsPage) -> None:
        super().__init__()
        self.page = page
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 4, 0, 0)
        self.table = QTableWidget(0, 6)
        self.table.setObjectName("recommendedTable")
        self.table.setHorizontalHeaderLabels(["Model", "Size", "Tools", "Fit", "Why", ""])
        setup_table(self.table)
        self.table.horizontalHeader().setSectionResizeMode(4, QHeaderView.ResizeMode.Stretch)
        self.table.horizontalHeader().setSectionResizeMode(0, QHeaderView.ResizeMode.ResizeToContents)
        # "Why" wraps and its rows grow to show it whole at any width (cut at its end, never in
        # the middle, where there is no room left)
        self.table.setWordWrap(True)
        self.table.setTextElideMode(Qt.TextElideMode.ElideRight)
        # once the header has laid every column out (during its resize one column is new, the others old)
        self._fit_rows = QTimer(self, singleShot=True, interval=0)
        self._fit_rows.timeout.connect(self.table.resizeRowsToContents)
        self.table.horizontalHeader().sectionResized.connect(lambda *_: self._fit_rows.start())
        layout.addWidget(self.table)

    def fill(self) -> None:
        """One row per recommended model, with its fit at the context chosen on the search pane."""
        from app.engine.models.estimate import estimate_remote
        from app.engine.models.recommended import recommended_models
        from app.ui.engine_types import format_label

        t = self.table
        models = recommended_models()
        t.setRowCount(len(models))
        from app.ui.models_page.search import kv_type_setting

        n_ctx, kv_type = self.page.ctx_spin.value(), kv_type_setting()
        for i, r in enumerate(models):
            est = estimate_remote(r.size_bytes, r.quantization, n_ctx, kv_type=kv_type)
            name = QTableWidgetItem(f"{r.name}  ·  {r.quantization}")
            name.setToolTip(f"{r.repo_id}/{r.file}")
            t.setItem(i, 0, name)
            t.setItem(i, 1, QTableWidgetItem(format_bytes(r.size_bytes)))
            label = format_label(r.tool_format) or r.tool_format
            tools = QTableWidgetItem(label.split(" (", 1)[0])
            tools.setToolTip(f"Callisto reads this model's tool calls as {label}.")
            t.setItem(i, 2, tools)
            t.setItem(i, 3, fit_badge(est))
            why = QTableWidgetItem(r.why)
            why.setToolTip(r.why)
            t.setItem(i, 4, why)
            t.setCellWidget(i, 5, model_button(self.page, r.repo_id, r.file, partial(self.download, r)))
        t.resizeRowsToContents()

    def button(self, name: str) -> QPushButton:
        """The Download / Load now button of the recommended model called ``name``."""
        from app.engine.models.recommended import recommended_models

        row = next(i for i, r in enumerate(recommended_models()) if r.name == name)
        return cast(QPushButton, self.table.cellWidget(row, 5))

    def download(self, model: Any) -> None:
        """One click: find the recommended file in its repo, then download it as any other."""
        page = self.page
        from app.ui.models_page.search import kv_type_setting

        page.show_status(f"Looking up {model.name} on Hugging Face…")
        n_ctx, kv_type = page.ctx_spin.value(), kv_type_setting()

        def found(files: list[Any]) -> None:
            match = next((f for f in files if Path(f.filename).name == model.file), None)
            if match is None:
                page.show_status(
                    f"{model.repo_id} no longer has {model.file}; search for {model.name} instead.",
                    error=True,
                )
                return
            page.downloads.enqueue(match)

        page.background(
            lambda: page.manager.hub.list_ggufs(model.repo_id, n_ctx=n_ctx, kv_type=kv_type),
            found,
            page.search_pane.on_files_failed,
        )
