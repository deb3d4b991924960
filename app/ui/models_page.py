"""The Models page: search Hugging Face, pick a GGUF (with a memory-fit badge), download it, and
manage the local library (metadata, Load, import, delete).

All network and disk work runs on a thread pool or on the download queue's own threads; results
reach the widgets through Qt signals (queued to the UI thread).
"""

from __future__ import annotations

import html
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtGui import QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFileDialog,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QListWidget,
    QListWidgetItem,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTabWidget,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

from app.ui.tasks import BackgroundTasks

__all__ = ["PREFERRED_QUANTS", "recommended_file", "ModelsPage", "format_bytes"]

FIT_COLORS = {"fits": "#2e7d32", "tight": "#ef6c00", "too large": "#c62828"}


#: The quantisations a newcomer should take first, best balance of quality and size first.
PREFERRED_QUANTS = ("Q4_K_M", "Q5_K_M", "Q4_K_S", "Q5_K_S", "Q6_K", "Q8_0", "Q4_0", "IQ4_XS", "Q3_K_M")
NO_RESULTS_YET = "Search for a model family (e.g. “qwen3”), or pick one in Recommended for tool calling."


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


def format_bytes(n: float | None) -> str:
    if n is None:
        return "?"
    for unit in ("B", "KB", "MB", "GB", "TB"):
        if abs(n) < 1024 or unit == "TB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n:.1f} TB"


def _format_eta(s: float | None) -> str:
    if s is None:
        return ""
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def _check_score(model: Any) -> str:
    """The model's last "Will it call?" score (``check 9/63``), or "" when it was never checked."""
    from app.check.scores import score_label

    try:
        return score_label(model.path.name, model.size)
    except Exception:  # noqa: BLE001 - a damaged scores file must not hide the library
        return ""


class ModelsPage(QWidget):
    """Search, file list with fit badges, download queue, local library. Emits ``sig_load_requested(path)``."""

    sig_load_requested = Signal(str)
    sig_status = Signal(str)  # every message shown in the status line
    sig_search_done = Signal()
    sig_files_done = Signal()
    sig_card_shown = Signal(str)  # the repository whose model card is shown
    sig_library_done = Signal()
    sig_downloads = Signal(int, float)  # downloads running or queued, their overall fraction (<0: unknown)
    _sig_progress = Signal(object)
    _sig_finished = Signal(object)

    recommended_row: int | None = None  # the search result file recommended for this machine

    def __init__(self, manager: Any | None = None, parent: QWidget | None = None, *, n_ctx: int = 4096):
        super().__init__(parent)
        self.setObjectName("ModelsPage")
        self.tasks = BackgroundTasks(self, threads=2)
        self._manager = manager
        self._remote: list[Any] = []
        self._local: list[Any] = []
        self._rows: dict[int, int] = {}  # task id -> download table row
        self._progress: dict[int, Any] = {}  # task id -> its latest DownloadProgress
        self.loaded_path: str | None = None  # the model the chat uses now ("Loaded" in the library)
        self.confirm: Callable[[str, str], bool] = self._confirm_dialog
        self._sig_progress.connect(self._on_progress)
        self._sig_finished.connect(self._on_finished)
        self._build(n_ctx)
        _ = self.manager  # created now, on the UI thread (cheap: no network, one idle worker thread)
        self._background(self.manager.restore_interrupted, self._on_restored, self._on_library_failed)
        self.refresh_library()

    def _on_restored(self, task_ids: list[int]) -> None:
        for tid in task_ids:
            self._on_progress(self.manager.queue.get(tid))
        if task_ids:
            self._status(f"{len(task_ids)} unfinished download(s) from last time: press Resume to continue.")

    # -- wiring ---------------------------------------------------------------------------------
    @property
    def manager(self) -> Any:
        if self._manager is None:
            from app.engine.models.manager import ModelManager

            self._manager = ModelManager()
        if self._manager.queue.on_progress is None:
            self._manager.queue.on_progress = self._sig_progress.emit
            self._manager.queue.on_finished = self._sig_finished.emit
        return self._manager

    def _background(
        self, fn: Callable[[], Any], ok: Callable[[Any], None], failed: Callable[[str], None]
    ) -> None:
        self.tasks.run(fn, ok, failed)

    @property
    def _calls(self) -> int:
        """Background look-ups still running (0 when the page is idle)."""
        return self.tasks.pending

    def _status(self, text: str, error: bool = False) -> None:
        self.status_label.setText(text)
        self.status_label.setStyleSheet("color: #c62828;" if error else "")
        self.sig_status.emit(text)

    def _confirm_dialog(self, title: str, text: str) -> bool:
        """Yes / Cancel, with Cancel the default (Enter never deletes or downloads by accident)."""
        box = QMessageBox(
            QMessageBox.Icon.Question,
            title,
            text,
            QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.Cancel,
            self,
        )
        box.setDefaultButton(QMessageBox.StandardButton.Cancel)
        return box.exec() == QMessageBox.StandardButton.Yes

    # -- layout ---------------------------------------------------------------------------------
    def _build(self, n_ctx: int) -> None:
        root = QVBoxLayout(self)
        self.sources = QTabWidget()  # where models come from: the recommended list, or a search
        self.sources.setObjectName("modelSources")
        rec = QWidget()
        rl = QVBoxLayout(rec)
        rl.setContentsMargins(0, 4, 0, 0)
        self.recommended_table = QTableWidget(0, 6)
        self.recommended_table.setObjectName("recommendedTable")
        self.recommended_table.setHorizontalHeaderLabels(["Model", "Size", "Tools", "Fit", "Why", ""])
        self._setup_table(self.recommended_table)
        self.recommended_table.horizontalHeader().setSectionResizeMode(4, QHeaderView.ResizeMode.Stretch)
        self.recommended_table.horizontalHeader().setSectionResizeMode(
            0, QHeaderView.ResizeMode.ResizeToContents
        )
        self.recommended_table.setWordWrap(True)
        rl.addWidget(self.recommended_table)
        self.sources.addTab(rec, "Recommended for tool calling")
        search_tab = QWidget()
        self.sources.addTab(search_tab, "Search Hugging Face")
        root.addWidget(self.sources, 3)
        root = QVBoxLayout(search_tab)
        root.setContentsMargins(0, 4, 0, 0)
        row = QHBoxLayout()
        self.search_edit = QLineEdit(placeholderText="Search Hugging Face for GGUF models…")
        self.search_edit.returnPressed.connect(self.search)
        self.search_button = QPushButton("Search")
        self.search_button.clicked.connect(self.search)
        self.ctx_spin = QSpinBox(minimum=512, maximum=1_048_576, singleStep=1024, value=n_ctx)
        self.ctx_spin.setPrefix("Context ")
        self.ctx_spin.valueChanged.connect(lambda _v: self._show_files())
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
        self._setup_table(self.files_table)
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
        self.card_repo: str | None = None
        fb.addWidget(self.card_view)
        top.addWidget(files_box)
        top.setSizes([300, 700])
        root.addWidget(top, 1)
        root = self.layout()
        self.status_label = QLabel("")
        self.status_label.setObjectName("modelsStatus")
        self.status_label.setWordWrap(True)
        root.addWidget(self.status_label)

        split = QSplitter(Qt.Orientation.Vertical)

        downloads = QWidget()
        dl = QVBoxLayout(downloads)
        dl.setContentsMargins(0, 0, 0, 0)
        dl_head = QHBoxLayout()
        dl_head.addWidget(QLabel("<b>Downloads</b>"))
        dl_head.addStretch(1)
        self.clear_button = QPushButton("Clear finished")
        self.clear_button.clicked.connect(self.clear_finished)
        dl_head.addWidget(self.clear_button)
        dl.addLayout(dl_head)
        self.downloads_table = QTableWidget(0, 5)
        self.downloads_table.setHorizontalHeaderLabels(["File", "Progress", "Status", "", ""])
        self._setup_table(self.downloads_table)
        self.downloads_table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Fixed)
        self.downloads_table.setColumnWidth(1, 260)
        dl.addWidget(self.downloads_table)

        library = QWidget()
        ll = QVBoxLayout(library)
        ll.setContentsMargins(0, 0, 0, 0)
        head = QHBoxLayout()
        head.addWidget(QLabel("<b>Library</b>"))
        head.addStretch(1)
        self.import_button = QPushButton("Import GGUF…")
        self.import_button.clicked.connect(self._import_dialog)
        self.folder_button = QPushButton("Add folder…")
        self.folder_button.clicked.connect(self._folder_dialog)
        self.refresh_button = QPushButton("Refresh")
        self.refresh_button.clicked.connect(self.refresh_library)
        for b in (self.import_button, self.folder_button, self.refresh_button):
            head.addWidget(b)
        ll.addLayout(head)
        self.library_table = QTableWidget(0, 12)
        self.library_table.setObjectName("libraryTable")
        self.library_table.setHorizontalHeaderLabels(
            [
                "Model",
                "Architecture",
                "Params",
                "Quant",
                "Context",
                "Size",
                "Template",
                "Tools",
                "Source",
                "",
                "",
                "",
            ]
        )
        self._setup_table(self.library_table)
        ll.addWidget(self.library_table)
        split.addWidget(downloads)
        split.addWidget(library)
        split.setSizes([120, 300])
        root.addWidget(split, 4)
        self._fill_recommended()

    @staticmethod
    def _setup_table(table: QTableWidget) -> None:
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

    # the library's columns a narrow window leaves out first (the name and the buttons always stay)
    SECONDARY_COLUMNS = (6, 4, 1, 8, 2, 7, 3, 5)
    NAME_MIN_WIDTH = 200

    def resizeEvent(self, e) -> None:  # noqa: N802 (Qt API)
        super().resizeEvent(e)
        self._fit_library_columns()

    def _fit_library_columns(self) -> None:
        """Hide secondary columns until the name column has room: it is never squeezed to "Sm…"."""
        t = self.library_table
        header = t.horizontalHeader()

        def width(i: int) -> int:
            return max(t.sizeHintForColumn(i), header.sectionSizeHint(i))

        shown = set(range(1, t.columnCount()))
        for c in (None, *self.SECONDARY_COLUMNS):
            if c is not None:
                shown.discard(c)
            if t.viewport().width() - sum(width(i) for i in shown) >= self.NAME_MIN_WIDTH:
                break
        for i in range(1, t.columnCount()):
            t.setColumnHidden(i, i not in shown)

    # -- search and files -----------------------------------------------------------------------
    def search(self) -> None:
        query = self.search_edit.text()
        self.search_button.setEnabled(False)
        self._status(f"Searching Hugging Face for “{query}”…")
        self._background(lambda: self.manager.hub.search(query), self._on_results, self._on_search_failed)

    def _on_search_failed(self, message: str) -> None:
        self.search_button.setEnabled(True)
        self._status(message, error=True)
        self.sig_search_done.emit()

    def _placeholder(self, text: str) -> None:
        """An empty results list says why it is empty (a grey line that cannot be selected)."""
        item = QListWidgetItem(text)
        item.setFlags(Qt.ItemFlag.NoItemFlags)
        item.setToolTip(text)
        self.results_list.addItem(item)

    def _on_results(self, results: list[Any]) -> None:
        self.search_button.setEnabled(True)
        self.sources.setCurrentIndex(1)
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
        self._status(f"{len(results)} GGUF repositories found." if results else "No GGUF repositories found.")
        self.sig_search_done.emit()

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
        self._background(
            lambda: self.manager.hub.model_card(repo_id),
            lambda text, r=repo_id: self._on_card(r, text),
            lambda _m: None,
        )
        self._status(f"Listing the GGUF files of {repo_id}…")
        n_ctx = self.ctx_spin.value()
        self._background(
            lambda: self.manager.hub.list_ggufs(repo_id, n_ctx=n_ctx), self._on_files, self._on_files_failed
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
        self.sig_card_shown.emit(repo_id)

    def _on_card_link(self, url: Any) -> None:
        if url.scheme() in ("http", "https"):
            from PySide6.QtGui import QDesktopServices

            QDesktopServices.openUrl(url)

    def _on_files_failed(self, message: str) -> None:
        self._status(message, error=True)
        self.sig_files_done.emit()

    def _on_files(self, files: list[Any]) -> None:
        self._remote = files
        self._show_files()
        self._status(f"{len(files)} GGUF files." if files else "This repository has no GGUF files.")
        self.sig_files_done.emit()

    def _show_files(self) -> None:
        from app.engine.models.estimate import estimate_remote

        n_ctx = self.ctx_spin.value()
        self.files_table.setRowCount(len(self._remote))
        self.files_hint.setVisible(bool(self._remote))
        estimates = [estimate_remote(f.size, f.quantization, n_ctx) for f in self._remote]
        self.recommended_row = recommended_file(
            [(f.quantization, f.size, e.fit) for f, e in zip(self._remote, estimates, strict=True)]
        )
        if self.recommended_row is not None:
            best = self._remote[self.recommended_row]
            self.files_hint.setText(
                f"★ Recommended for this machine: {best.name} ({best.quantization or '?'}, "
                f"{format_bytes(best.size)}), the best balance of quality and size that fits."
            )
        else:
            self.files_hint.setText(
                "None of these files fits this machine's memory comfortably; a smaller "
                "model or quantisation will run faster."
            )
        for i, f in enumerate(self._remote):
            est = estimates[i]
            label = f.name + (f"  ({len(f.parts)} parts)" if f.is_split else "")
            self.files_table.setItem(i, 0, QTableWidgetItem(label))
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
            badge = QTableWidgetItem(est.fit)
            badge.setForeground(QColor("white"))
            badge.setBackground(QColor(FIT_COLORS[est.fit]))
            badge.setToolTip(est.describe())
            self.files_table.setItem(i, 4, badge)
            have = self.local_model_for(f.repo_id, f.filename)
            if have is not None:  # already in the library: no second download
                button = QPushButton("Loaded" if self._is_loaded(have) else "Load now")
                button.setEnabled(not self._is_loaded(have))
                button.setToolTip(f"Downloaded: {have.path}")
                button.clicked.connect(lambda _c=False, p=str(have.path): self.sig_load_requested.emit(p))
            else:
                button = QPushButton("Download")
                button.clicked.connect(lambda _c=False, f=f: self.download(f))
            self.files_table.setCellWidget(i, 5, button)

    # -- downloads ------------------------------------------------------------------------------
    def local_model_for(self, repo_id: str, filename: str) -> Any | None:
        """The library's model downloaded from ``repo_id``/``filename`` (None if it has none)."""
        name = Path(filename).name
        for m in self._local:
            if m.usable and m.path.name == name and (not m.repo_id or m.repo_id == repo_id):
                return m
        return None

    def _is_loaded(self, model: Any) -> bool:
        return self.loaded_path is not None and Path(self.loaded_path) == Path(model.path)

    def set_loaded_path(self, path: str | None) -> None:
        """The model the chat uses now: its library row says "Loaded"."""
        self.loaded_path = path
        if self._local:
            self._on_library(self._local, quiet=True)

    def download(self, remote: Any) -> None:
        from app.engine.models.estimate import estimate_remote

        est = estimate_remote(remote.size, remote.quantization, self.ctx_spin.value())
        if est.fit == "too large" and not self.confirm(
            "Download a model that is too large?",
            f"{remote.name} ({format_bytes(remote.size)}) needs about {format_bytes(est.total_bytes)} of "
            "memory, more than this computer has. It would download but not load. Download anyway?",
        ):
            return
        try:
            queued = self.manager.download(remote)
        except Exception as exc:  # noqa: BLE001
            self._status(str(exc), error=True)
            return
        if queued.reused is not None:
            self._status(
                f"{remote.name} is already in the Hugging Face cache: added to the library without downloading."
            )
            self.refresh_library()
            return
        self._status(f"Queued {remote.name}.")

    def _download_row(self, progress: Any) -> int:
        row = self._rows.get(progress.task_id)
        if row is not None:
            return row
        row = self.downloads_table.rowCount()
        self.downloads_table.insertRow(row)
        self._rows[progress.task_id] = row
        self.downloads_table.setItem(row, 0, QTableWidgetItem(progress.job.dest.name))
        bar = QProgressBar()
        bar.setRange(0, 1000)
        self.downloads_table.setCellWidget(row, 1, bar)
        self.downloads_table.setItem(row, 2, QTableWidgetItem(""))
        pause = QPushButton("Pause")
        pause.clicked.connect(lambda _c=False, t=progress.task_id: self._toggle_pause(t))
        cancel = QPushButton("Cancel")
        cancel.clicked.connect(lambda _c=False, t=progress.task_id: self.manager.queue.cancel(t))
        self.downloads_table.setCellWidget(row, 3, pause)
        self.downloads_table.setCellWidget(row, 4, cancel)
        return row

    def _toggle_pause(self, task_id: int) -> None:
        q = self.manager.queue
        state = q.get(task_id).state
        if state in ("paused", "failed"):
            q.resume(task_id)
        else:
            q.pause(task_id)

    def download_bar(self, task_id: int) -> QProgressBar:
        return self.downloads_table.cellWidget(self._rows[task_id], 1)

    def download_button(self, task_id: int, which: str) -> QPushButton:
        return self.downloads_table.cellWidget(self._rows[task_id], 3 if which == "pause" else 4)

    def download_status(self, task_id: int) -> str:
        return self.downloads_table.item(self._rows[task_id], 2).text()

    def _on_progress(self, p: Any) -> None:
        self._progress[p.task_id] = p
        self._emit_downloads()
        row = self._download_row(p)
        bar: QProgressBar = self.downloads_table.cellWidget(row, 1)
        frac = p.fraction
        if frac is not None:
            bar.setValue(int(frac * 1000))
        bar.setFormat(f"{format_bytes(p.downloaded)} / {format_bytes(p.total)}")
        if p.state == "downloading":
            text = f"{format_bytes(p.speed_bps)}/s"
            if p.eta_s:
                text += f", {_format_eta(p.eta_s)} left"
            if p.attempt:
                text += f" (retry {p.attempt})"
        elif p.state == "failed":
            text = f"failed: {p.error}"
        else:
            text = p.state
        item = self.downloads_table.item(row, 2)
        item.setText(text)
        item.setToolTip(text)
        pause: QPushButton = self.downloads_table.cellWidget(row, 3)
        pause.setText("Resume" if p.state in ("paused", "failed") else "Pause")
        active = p.state not in ("done", "cancelled")
        pause.setEnabled(active and (p.state != "failed" or p.resumable))
        self.downloads_table.cellWidget(row, 4).setEnabled(active)

    def _on_finished(self, p: Any) -> None:
        self._on_progress(p)
        if p.state == "done":
            self._status(f"Downloaded and verified {p.job.dest.name}.")
            self.refresh_library()
        elif p.state == "failed":
            self._status(p.error or "The download failed.", error=True)

    def running_downloads(self) -> list[Any]:
        """The downloads that are queued, running or being verified now."""
        return [p for p in self._progress.values() if p.state in ("queued", "downloading", "verifying")]

    def _emit_downloads(self) -> None:
        running = self.running_downloads()
        total = sum(p.total or 0 for p in running)
        done = sum(p.downloaded or 0 for p in running)
        self.sig_downloads.emit(len(running), done / total if total else -1.0)

    def clear_finished(self) -> None:
        """Drop the finished and cancelled rows from the Downloads table."""
        keep = [p for tid, p in sorted(self._progress.items()) if p.state not in ("done", "cancelled")]
        self.downloads_table.setRowCount(0)
        self._rows = {}
        self._progress = {}
        for p in keep:
            self._on_progress(p)
        self._status("")

    # -- recommended ------------------------------------------------------------------------------
    def _fill_recommended(self) -> None:
        from app.engine.models.estimate import estimate_remote
        from app.engine.models.recommended import recommended_models
        from app.ui.engine_types import format_label

        t = self.recommended_table
        models = recommended_models()
        t.setRowCount(len(models))
        n_ctx = self.ctx_spin.value()
        for i, r in enumerate(models):
            est = estimate_remote(r.size_bytes, r.quantization, n_ctx)
            name = QTableWidgetItem(f"{r.name}  ·  {r.quantization}")
            name.setToolTip(f"{r.repo_id}/{r.file}")
            t.setItem(i, 0, name)
            t.setItem(i, 1, QTableWidgetItem(format_bytes(r.size_bytes)))
            label = format_label(r.tool_format) or r.tool_format
            tools = QTableWidgetItem(label.split(" (", 1)[0])
            tools.setToolTip(f"Callisto reads this model's tool calls as {label}.")
            t.setItem(i, 2, tools)
            badge = QTableWidgetItem(est.fit)
            badge.setForeground(QColor("white"))
            badge.setBackground(QColor(FIT_COLORS[est.fit]))
            badge.setToolTip(est.describe())
            t.setItem(i, 3, badge)
            why = QTableWidgetItem(r.why)
            why.setToolTip(r.why)
            t.setItem(i, 4, why)
            have = self.local_model_for(r.repo_id, r.file)
            if have is not None:
                button = QPushButton("Loaded" if self._is_loaded(have) else "Load now")
                button.setEnabled(not self._is_loaded(have))
                button.clicked.connect(lambda _c=False, p=str(have.path): self.sig_load_requested.emit(p))
            else:
                button = QPushButton("Download")
                button.clicked.connect(lambda _c=False, r=r: self.download_recommended(r))
            t.setCellWidget(i, 5, button)

    def recommended_button(self, name: str) -> QPushButton:
        from app.engine.models.recommended import recommended_models

        row = next(i for i, r in enumerate(recommended_models()) if r.name == name)
        return self.recommended_table.cellWidget(row, 5)

    def download_recommended(self, model: Any) -> None:
        """One click: find the recommended file in its repo, then download it as any other."""
        self._status(f"Looking up {model.name} on Hugging Face…")
        n_ctx = self.ctx_spin.value()

        def found(files: list[Any]) -> None:
            match = next((f for f in files if Path(f.filename).name == model.file), None)
            if match is None:
                self._status(
                    f"{model.repo_id} no longer has {model.file}; search for {model.name} instead.",
                    error=True,
                )
                return
            self.download(match)

        self._background(
            lambda: self.manager.hub.list_ggufs(model.repo_id, n_ctx=n_ctx), found, self._on_files_failed
        )

    # -- library --------------------------------------------------------------------------------
    def refresh_library(self) -> None:
        self._background(lambda: self.manager.library.scan(), self._on_library, self._on_library_failed)

    def _on_library_failed(self, message: str) -> None:
        self._status(message, error=True)
        self.sig_library_done.emit()

    SOURCE_WORDS = {
        "downloaded": "downloaded",
        "imported": "imported",
        "copied": "copied in",
        "folder": "in your folder",
        "hf-cache": "Hugging Face cache",
    }

    def _on_library(self, models: list[Any], *, quiet: bool = False) -> None:
        from app.engine.models.metadata import format_parameter_count
        from app.ui.icons import icon

        self._local = models
        t = self.library_table
        t.setRowCount(len(models))
        for i, m in enumerate(models):
            s = m.summary
            cells = [
                m.name,
                s.architecture if s else "",
                format_parameter_count(s.parameter_count) if s and s.parameter_count else "",
                (s.quantization or "") if s else "",
                str(s.context_length or "") if s else "",
                format_bytes(m.size),
                ("yes" if s.has_chat_template else "no") if s else "",
                " · ".join(x for x in (s.tool_format if s else "", _check_score(m)) if x),
                self.SOURCE_WORDS.get(m.source, m.source),
            ]
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(m.error or str(m.path))
                t.setItem(i, col, item)
            if m.error:  # an icon and a tooltip on the name, never text that widens a column
                t.item(i, 0).setIcon(icon("error"))
                t.item(i, 0).setToolTip(f"{m.path}\n{m.error}")
            loaded = self._is_loaded(m)
            load = QPushButton("Loaded" if loaded else "Load now")
            load.setEnabled(m.usable and not loaded)
            load.setToolTip(
                m.error or ("The chat uses this model now." if loaded else "Chat with this model")
            )
            load.clicked.connect(lambda _c=False, p=str(m.path): self.sig_load_requested.emit(p))
            delete = QPushButton("Delete file")
            delete.setEnabled(m.source != "hf-cache")
            delete.clicked.connect(lambda _c=False, m=m: self.delete_model(m))
            t.setCellWidget(i, 9, load)
            t.setCellWidget(i, 10, delete)
            if m.source in ("imported", "folder"):
                remove = QPushButton("Remove")
                remove.setToolTip(
                    "Remove from library: Callisto stops listing it; the file stays where it is."
                )
                remove.clicked.connect(lambda _c=False, m=m: self.remove_model(m))
                t.setCellWidget(i, 11, remove)
            else:
                t.removeCellWidget(i, 11)
        self._fit_library_columns()
        if not quiet:
            self._fill_recommended()
            if self._remote:
                self._show_files()
        self.sig_library_done.emit()

    def library_row(self, name: str) -> int:
        for i, m in enumerate(self._local):
            if m.name == name or m.path.name == name:
                return i
        raise KeyError(name)

    def load_button(self, row: int) -> QPushButton:
        return self.library_table.cellWidget(row, 9)

    def delete_button(self, row: int) -> QPushButton:
        return self.library_table.cellWidget(row, 10)

    def remove_button(self, row: int) -> QPushButton | None:
        return self.library_table.cellWidget(row, 11)

    def remove_model(self, model: Any) -> None:
        """Stop listing a model (an import, or the added folder it is in); no file is touched."""
        lib = self.manager.library
        if model.source == "folder":
            folder = next((f for f in lib.folders() if Path(f) in Path(model.path).parents), None)
            if folder is None:
                return
            if not self.confirm(
                "Remove folder from library",
                f"{model.name} is in the folder {folder}, which you added. Stop listing every "
                "model in that folder? No file is deleted.",
            ):
                return
            lib.remove_folder(folder)
        else:
            lib.forget(model.path)
        self._status(f"Removed {model.name} from the library; the file is still at {model.path}.")
        self.refresh_library()

    def delete_model(self, model: Any) -> None:
        owned = model.deletable_without_confirmation
        text = (
            f"Delete {model.name} ({format_bytes(model.size)}) from disk?"
            if owned
            else f"Callisto did not download {model.name}. Delete your file {model.path} from disk? "
            "(Remove from library keeps the file.)"
        )
        if self._is_loaded(model):
            text = f"{model.name} is the model the chat uses now. " + text
        if not self.confirm("Delete model", text):
            return
        try:
            self.manager.library.delete(model, confirm_foreign=not owned)
        except Exception as exc:  # noqa: BLE001
            self._status(str(exc), error=True)
            return
        self._status(f"Deleted {model.name}.")
        self.refresh_library()

    def import_file(self, path: str | Path, *, copy: bool = False) -> None:
        lib = self.manager.library

        def run() -> Any:
            return lib.import_copy(path) if copy else lib.import_in_place(path)

        def ok(model: Any) -> None:
            self._status(f"Imported {model.name}.")
            self.refresh_library()

        self._background(run, ok, self._on_library_failed)

    def _import_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import a GGUF model", "", "GGUF models (*.gguf)")
        if path:
            box = QMessageBox(
                QMessageBox.Icon.Question,
                "Import a model",
                f"Use {Path(path).name} where it is, or copy it into Callisto's models folder?",
                QMessageBox.StandardButton.Cancel,
                self,
            )
            in_place = box.addButton("Use it where it is", QMessageBox.ButtonRole.AcceptRole)
            copy = box.addButton("Copy it", QMessageBox.ButtonRole.AcceptRole)
            box.setDefaultButton(in_place)
            box.exec()
            if box.clickedButton() in (in_place, copy):
                self.import_file(path, copy=box.clickedButton() is copy)

    def _folder_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Add a folder of models")
        if folder:
            try:
                self.manager.library.add_folder(folder)
            except Exception as exc:  # noqa: BLE001
                self._status(str(exc), error=True)
                return
            self.refresh_library()

    def confirm_quit(self) -> bool:
        """Quitting during a download: ask (the download is paused and resumes next time)."""
        running = self.running_downloads()
        if not running:
            return True
        names = ", ".join(p.job.dest.name for p in running)
        return self.confirm(
            "Quit during a download?",
            f"{names} is still downloading. Quit anyway? The download is paused and can be "
            "resumed next time.",
        )

    def shutdown(self) -> None:
        """Pause running downloads (kept for next time) and wait for background work."""
        if self._manager is not None:
            self._manager.shutdown()
        self.tasks.close(5000)
