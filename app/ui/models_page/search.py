"""The Models page's "Search Hugging Face" pane: a search for GGUF repositories, the selected
repository's files (size, quantisation, memory, fit badge, the file recommended for this machine)
and its model card, shown as a preview."""

from __future__ import annotations

import html
from functools import partial
from typing import TYPE_CHECKING, Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from app.ui.models_page._common import fit_badge, model_button, setup_table
from app.units import format_bytes

if TYPE_CHECKING:
    from app.ui.models_page.page import ModelsPage

__all__ = ["NO_RESULTS_YET", "PREFERRED_QUANTS", "SearchPane", "kv_type_setting", "recommended_file"]

#: The quantisations a newcomer should take first, best balance of quality and size first.
PREFERRED_QUANTS = ("Q4_K_M", "Q5_K_M", "Q4_K_S", "Q5_K_S", "Q6_K", "Q8_0", "Q4_0", "IQ4_XS", "Q3_K_M")
NO_RESULTS_YET = "Search for a model family (e.g. “qwen3”), or pick one in Recommended for tool calling."


def kv_type_setting() -> str:
    """The KV cache type of Settings -> Model (what a model loads with, so what the memory
    estimates count); f16 when the settings cannot be read."""
    try:
        from app.storage.settings import load_settings

        return str(load_settings()[0].model.kv_type or "f16")
    except Exception:  # noqa: BLE001 - an estimate must not fail on the settings file
        return "f16"


def recommended_file(files: list[tuple[str | None, int, str]]) -> int | None:
    """Index of the file to recommend among (quantisation, size, fit) rows: the preferred quantisation
    that fits this machine, else the largest file that fits; None when none fits."""
    fitting = [i for i, (_q, _s, fit) in enumerate(files) if fit == "fits"]
    if not fitting:
        return None
    for quant in PREFERRED_QUANTS:
        for i in fitting:
            if (files[i][0] or "").upper() == quant:
                return i
    return max(fitting, key=lambda i: files[i][1])


class SearchPane(QWidget):
    """Search, the repositories found, the selected one's files and model card."""

    def __init__(self, page: ModelsPage, n_ctx: int) -> None:
        super().__init__()
        self.page = page
        self.remote: list[Any] = []  # the selected repository's GGUF files
        self.recommended_row: int | None = None  # the file recommended for this machine
        self.card_repo: str | None = None  # the repository whose model card is shown
        root = QVBoxLayout(self)
        root.setContentsMargins(0, 4, 0, 0)
        row = QHBoxLayout()
        self.search_edit = QLineEdit(placeholderText="Search Hugging Face for GGUF models…")
        self.search_edit.returnPressed.connect(self.search)
        self.search_button = QPushButton("Search")
        self.search_button.clicked.connect(self.search)
        self.ctx_spin = QSpinBox(minimum=512, maximum=1_048_576, singleStep=1024, value=n_ctx)
        self.ctx_spin.setPrefix("Context ")
        self.ctx_spin.valueChanged.connect(lambda _v: self.show_files())
        row.addWidget(self.search_edit, 1)
        row.addWidget(self.search_button)
        row.addWidget(self.ctx_spin)
        root.addLayout(row)
        top = QSplitter(Qt.Orientation.Horizontal)
        self.results_list = QListWidget()
        self.results_list.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        self.results_list.setTextElideMode(Qt.TextElideMode.ElideMiddle)
        self.results_list.currentRowChanged.connect(self._on_repo_selected)
        self.results_list.setToolTip(NO_RESULTS_YET)
        top.addWidget(self.results_list)
        self.files_table = QTableWidget(0, 6)
        self.files_table.setHorizontalHeaderLabels(["File", "Size", "Quant", "Memory", "Fit", ""])
        setup_table(self.files_table)
        files_box = QWidget()
        fb = QVBoxLayout(files_box)
        fb.setContentsMargins(0, 0, 0, 0)
        fb.addWidget(self.files_table, 1)
        self.files_hint = QLabel("")  # which file to take: the recommended quantisation for this machine
        self.files_hint.setObjectName("hint")
        self.files_hint.setWordWrap(True)
        self.files_hint.setVisible(False)
        fb.addWidget(self.files_hint)
        self.card_view = QTextBrowser()  # the selected repository's model card (README), as a preview
        self.card_view.setObjectName("modelCard")
        self.card_view.setOpenLinks(False)
        self.card_view.anchorClicked.connect(self._on_card_link)
        self.card_view.setMaximumHeight(220)
        self.card_view.setVisible(False)
        fb.addWidget(self.card_view)
        top.addWidget(files_box)
        top.setSizes([300, 700])
        root.addWidget(top, 1)

    # -- search ---------------------------------------------------------------------------------
    def search(self) -> None:
        query = self.search_edit.text()
        self.search_button.setEnabled(False)
        self.page.show_status(f"Searching Hugging Face for “{query}”…")
        self.page.background(
            lambda: self.page.manager.hub.search(query), self._on_results, self._on_search_failed
        )

    def _on_search_failed(self, message: str) -> None:
        self.search_button.setEnabled(True)
        self.page.show_status(message, error=True)
        self.page.sig_search_done.emit()

    def _placeholder(self, text: str) -> None:
        """An empty results list says why it is empty (a grey line that cannot be selected)."""
        item = QListWidgetItem(text)
        item.setFlags(Qt.ItemFlag.NoItemFlags)
        item.setToolTip(text)
        self.results_list.addItem(item)

    def _on_results(self, results: list[Any]) -> None:
        self.search_button.setEnabled(True)
        self.page.sources.setCurrentWidget(self)
        self.results_list.clear()
        if not results:
            self._placeholder(
                f"No GGUF models match “{self.search_edit.text().strip()}”: try a family "
                "name such as “qwen3” or “llama 3.2”."
            )
        for r in results:
            item = QListWidgetItem(f"{r.repo_id}\n⬇ {r.downloads:,}   ♥ {r.likes:,}")
            item.setData(Qt.ItemDataRole.UserRole, r.repo_id)
            item.setToolTip(r.repo_id)
            self.results_list.addItem(item)
        self.page.show_status(
            f"{len(results)} GGUF repositories found." if results else "No GGUF repositories found."
        )
        self.page.sig_search_done.emit()

    # -- the selected repository: its files and its model card ---------------------------------------
    def _on_repo_selected(self, row: int) -> None:
        item = self.results_list.item(row)
        if item is None:
            return
        repo_id = item.data(Qt.ItemDataRole.UserRole)
        if not repo_id:
            return  # the placeholder line
        self.files_table.setRowCount(0)
        self.card_view.setVisible(False)
        self.card_repo = None
        hub = self.page.manager.hub
        self.page.background(
            lambda: hub.model_card(repo_id), partial(self._on_card, repo_id), lambda _m: None
        )
        self.page.show_status(f"Listing the GGUF files of {repo_id}…")
        n_ctx, kv_type = self.ctx_spin.value(), kv_type_setting()
        self.page.background(
            lambda: hub.list_ggufs(repo_id, n_ctx=n_ctx, kv_type=kv_type),
            self._on_files,
            self.on_files_failed,
        )

    def _on_card(self, repo_id: str, text: str) -> None:
        """Show the model card of ``repo_id`` if it is still the selected repository."""
        item = self.results_list.currentItem()
        if item is None or item.data(Qt.ItemDataRole.UserRole) != repo_id or not text.strip():
            return
        from app.ui.markdown_render import render_markdown
        from app.ui.theme import is_dark

        self.card_repo = repo_id
        self.card_view.setHtml(
            f"<p><b>Model card of {html.escape(repo_id)}</b></p>" + render_markdown(text, dark=is_dark()).html
        )
        self.card_view.setVisible(True)
        self.page.sig_card_shown.emit(repo_id)

    @staticmethod
    def _on_card_link(url: Any) -> None:
        if url.scheme() in ("http", "https"):
            from PySide6.QtGui import QDesktopServices

            QDesktopServices.openUrl(url)

    def on_files_failed(self, message: str) -> None:
        self.page.show_status(message, error=True)
        self.page.sig_files_done.emit()

    def _on_files(self, files: list[Any]) -> None:
        self.remote = files
        self.show_files()
        self.page.show_status(f"{len(files)} GGUF files." if files else "This repository has no GGUF files.")
        self.page.sig_files_done.emit()

    def show_files(self) -> None:
        """Fill the files table (memory and fit for the context chosen) and say which file to take."""
        from app.engine.models.estimate import estimate_remote

        n_ctx = self.ctx_spin.value()
        self.files_table.setRowCount(len(self.remote))
        self.files_hint.setVisible(bool(self.remote))
        kv_type = kv_type_setting()
        estimates = [estimate_remote(f.size, f.quantization, n_ctx, kv_type=kv_type) for f in self.remote]
        self.recommended_row = recommended_file(  # never a projector: it is downloaded with its model
            [
                (f.quantization, f.size, "projector" if f.is_projector else e.fit)
                for f, e in zip(self.remote, estimates, strict=True)
            ]
        )
        if self.recommended_row is not None:
            best = self.remote[self.recommended_row]
            self.files_hint.setText(
                f"★ Recommended for this machine: {best.name} ({best.quantization or '?'}, "
                f"{format_bytes(best.size)}), the best balance of quality and size that fits."
            )
        else:
            self.files_hint.setText(
                "None of these files fits this machine's memory comfortably; a smaller "
                "model or quantisation will run faster."
            )
        for i, (f, est) in enumerate(zip(self.remote, estimates, strict=True)):
            self._file_row(i, f, est)

    def _file_row(self, i: int, f: Any, est: Any) -> None:
        if f.is_projector:
            self._projector_row(i, f)
            return
        label = f.name + (f"  ({len(f.parts)} parts)" if f.is_split else "")
        name = QTableWidgetItem(label + ("  · vision" if f.projector is not None else ""))
        if f.projector is not None:
            name.setToolTip(
                f"Reads images: its projector {f.projector.filename} ({format_bytes(f.projector.size)}) "
                "is downloaded with it."
            )
        self.files_table.setItem(i, 0, name)
        self.files_table.setItem(i, 1, QTableWidgetItem(format_bytes(f.size)))
        quant = QTableWidgetItem(f.quantization or "?")
        if i == self.recommended_row:
            font = quant.font()
            font.setBold(True)
            quant.setFont(font)
            quant.setToolTip(
                "Recommended: the best balance of quality and size among these files "
                "that fits this machine's memory."
            )
        self.files_table.setItem(i, 2, quant)
        mem = QTableWidgetItem(format_bytes(est.total_bytes))
        mem.setToolTip(est.describe())
        self.files_table.setItem(i, 3, mem)
        self.files_table.setItem(i, 4, fit_badge(est))
        button = model_button(
            self.page, f.repo_id, f.filename, partial(self.page.downloads.enqueue, f), tooltip=True
        )
        self.files_table.setCellWidget(i, 5, button)

    def _projector_row(self, i: int, f: Any) -> None:
        """A projector (mmproj) file: marked as one, no memory fit (it loads beside a model)."""
        t = self.files_table
        name = QTableWidgetItem(f.name)
        name.setToolTip(
            "A vision projector for this repository's models: downloaded with the model it matches."
        )
        t.setItem(i, 0, name)
        t.setItem(i, 1, QTableWidgetItem(format_bytes(f.size)))
        t.setItem(i, 2, QTableWidgetItem(f.quantization or "?"))
        t.setItem(i, 3, QTableWidgetItem(""))
        badge = QTableWidgetItem("projector")
        badge.setToolTip(name.toolTip())
        t.setItem(i, 4, badge)
        here = self.page.local_model_for(f.repo_id, f.filename)
        if here is not None:
            button = QPushButton("Downloaded")
            button.setEnabled(False)
            button.setToolTip(str(here.path))
        else:
            button = QPushButton("Download")
            button.clicked.connect(lambda _c=False, f=f: self.page.downloads.enqueue(f))
        t.setCellWidget(i, 5, button)
