"""The Models page: search Hugging Face, pick a GGUF (with a memory-fit badge), download it, and
manage the local library (metadata, Load, import, delete).

All network and disk work runs on a thread pool or on the download queue's own threads; results
reach the widgets through Qt signals (queued to the UI thread).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QObject, QRunnable, Qt, QThreadPool, Signal
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
    QVBoxLayout,
    QWidget,
)

__all__ = ["ModelsPage", "format_bytes"]

FIT_COLORS = {"fits": "#2e7d32", "tight": "#ef6c00", "too large": "#c62828"}


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


class _Call(QObject):
    ok = Signal(object)
    failed = Signal(str)


class _Runnable(QRunnable):
    def __init__(self, fn: Callable[[], Any], call: _Call):
        super().__init__()
        self.fn = fn
        self.call = call

    def run(self) -> None:
        try:
            result = self.fn()
        except Exception as exc:  # noqa: BLE001 - shown to the user, never crashes the app
            self.call.failed.emit(str(exc) or type(exc).__name__)
        else:
            self.call.ok.emit(result)


class ModelsPage(QWidget):
    """Search, file list with fit badges, download queue, local library. Emits ``sig_load_requested(path)``."""

    sig_load_requested = Signal(str)
    sig_status = Signal(str)  # every message shown in the status line
    sig_search_done = Signal()
    sig_files_done = Signal()
    sig_library_done = Signal()
    _sig_progress = Signal(object)
    _sig_finished = Signal(object)

    def __init__(self, manager: Any | None = None, parent: QWidget | None = None, *, n_ctx: int = 4096):
        super().__init__(parent)
        self.setObjectName("ModelsPage")
        self._pool = QThreadPool(self)
        self._pool.setMaxThreadCount(2)
        self._calls: set[_Call] = set()
        self._manager = manager
        self._remote: list[Any] = []
        self._local: list[Any] = []
        self._rows: dict[int, int] = {}  # task id -> download table row
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

    def _background(self, fn: Callable[[], Any], ok: Callable[[Any], None], failed: Callable[[str], None]) -> None:
        call = _Call(self)
        self._calls.add(call)

        def done_ok(result: Any) -> None:
            self._calls.discard(call)
            ok(result)

        def done_failed(message: str) -> None:
            self._calls.discard(call)
            failed(message)

        call.ok.connect(done_ok)
        call.failed.connect(done_failed)
        self._pool.start(_Runnable(fn, call))

    def _status(self, text: str, error: bool = False) -> None:
        self.status_label.setText(text)
        self.status_label.setStyleSheet("color: #c62828;" if error else "")
        self.sig_status.emit(text)

    def _confirm_dialog(self, title: str, text: str) -> bool:
        return QMessageBox.question(self, title, text) == QMessageBox.StandardButton.Yes

    # -- layout ---------------------------------------------------------------------------------
    def _build(self, n_ctx: int) -> None:
        root = QVBoxLayout(self)
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
        self.status_label = QLabel("")
        self.status_label.setWordWrap(True)
        root.addWidget(self.status_label)

        split = QSplitter(Qt.Orientation.Vertical)
        top = QSplitter(Qt.Orientation.Horizontal)
        self.results_list = QListWidget()
        self.results_list.currentRowChanged.connect(self._on_repo_selected)
        top.addWidget(self.results_list)
        self.files_table = QTableWidget(0, 6)
        self.files_table.setHorizontalHeaderLabels(["File", "Size", "Quant", "Memory", "Fit", ""])
        self._setup_table(self.files_table)
        top.addWidget(self.files_table)
        top.setSizes([300, 700])
        split.addWidget(top)

        downloads = QWidget()
        dl = QVBoxLayout(downloads)
        dl.setContentsMargins(0, 0, 0, 0)
        dl.addWidget(QLabel("<b>Downloads</b>"))
        self.downloads_table = QTableWidget(0, 5)
        self.downloads_table.setHorizontalHeaderLabels(["File", "Progress", "Status", "", ""])
        self._setup_table(self.downloads_table)
        self.downloads_table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Fixed)
        self.downloads_table.setColumnWidth(1, 260)
        dl.addWidget(self.downloads_table)
        split.addWidget(downloads)

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
        self.library_table = QTableWidget(0, 11)
        self.library_table.setHorizontalHeaderLabels(
            ["Model", "Architecture", "Params", "Quant", "Context", "Size", "Template", "Tools", "Source", "", ""]
        )
        self._setup_table(self.library_table)
        ll.addWidget(self.library_table)
        split.addWidget(library)
        split.setSizes([300, 150, 300])
        root.addWidget(split, 1)

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

    def _on_results(self, results: list[Any]) -> None:
        self.search_button.setEnabled(True)
        self.results_list.clear()
        for r in results:
            item = QListWidgetItem(f"{r.repo_id}\n⬇ {r.downloads:,}   ♥ {r.likes:,}")
            item.setData(Qt.ItemDataRole.UserRole, r.repo_id)
            self.results_list.addItem(item)
        self._status(f"{len(results)} GGUF repositories found." if results else "No GGUF repositories found.")
        self.sig_search_done.emit()

    def _on_repo_selected(self, row: int) -> None:
        item = self.results_list.item(row)
        if item is None:
            return
        repo_id = item.data(Qt.ItemDataRole.UserRole)
        self.files_table.setRowCount(0)
        self._status(f"Listing the GGUF files of {repo_id}…")
        n_ctx = self.ctx_spin.value()
        self._background(
            lambda: self.manager.hub.list_ggufs(repo_id, n_ctx=n_ctx), self._on_files, self._on_files_failed
        )

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
        for i, f in enumerate(self._remote):
            est = estimate_remote(f.size, f.quantization, n_ctx)
            label = f.name + (f"  ({len(f.parts)} parts)" if f.is_split else "")
            self.files_table.setItem(i, 0, QTableWidgetItem(label))
            self.files_table.setItem(i, 1, QTableWidgetItem(format_bytes(f.size)))
            self.files_table.setItem(i, 2, QTableWidgetItem(f.quantization or "?"))
            mem = QTableWidgetItem(format_bytes(est.total_bytes))
            mem.setToolTip(est.describe())
            self.files_table.setItem(i, 3, mem)
            badge = QTableWidgetItem(est.fit)
            badge.setForeground(QColor("white"))
            badge.setBackground(QColor(FIT_COLORS[est.fit]))
            badge.setToolTip(est.describe())
            self.files_table.setItem(i, 4, badge)
            button = QPushButton("Download")
            button.clicked.connect(lambda _c=False, f=f: self.download(f))
            self.files_table.setCellWidget(i, 5, button)

    # -- downloads ------------------------------------------------------------------------------
    def download(self, remote: Any) -> None:
        try:
            queued = self.manager.download(remote)
        except Exception as exc:  # noqa: BLE001
            self._status(str(exc), error=True)
            return
        if queued.reused is not None:
            self._status(f"{remote.name} is already in the Hugging Face cache: added to the library without downloading.")
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

    # -- library --------------------------------------------------------------------------------
    def refresh_library(self) -> None:
        self._background(lambda: self.manager.library.scan(), self._on_library, self._on_library_failed)

    def _on_library_failed(self, message: str) -> None:
        self._status(message, error=True)
        self.sig_library_done.emit()

    def _on_library(self, models: list[Any]) -> None:
        from app.engine.models.metadata import format_parameter_count

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
                s.tool_format if s else "",
                m.source,
            ]
            for col, text in enumerate(cells):
                item = QTableWidgetItem(text)
                item.setToolTip(m.error or str(m.path))
                if m.error:
                    item.setForeground(QColor("#c62828"))
                t.setItem(i, col, item)
            if m.error:
                t.item(i, 1).setText(m.error)
            load = QPushButton("Load")
            load.setEnabled(m.usable)
            load.clicked.connect(lambda _c=False, p=str(m.path): self.sig_load_requested.emit(p))
            delete = QPushButton("Delete")
            delete.setEnabled(m.source != "hf-cache")
            delete.clicked.connect(lambda _c=False, m=m: self.delete_model(m))
            t.setCellWidget(i, 9, load)
            t.setCellWidget(i, 10, delete)
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

    def delete_model(self, model: Any) -> None:
        owned = model.deletable_without_confirmation
        text = (
            f"Delete {model.name} ({format_bytes(model.size)})?"
            if owned
            else f"Callisto did not download {model.name}. Delete your file {model.path} from disk?"
        )
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
            copy = QMessageBox.question(
                self, "Import", "Copy the file into Callisto's models folder?\n(No: use it where it is.)"
            ) == QMessageBox.StandardButton.Yes
            self.import_file(path, copy=copy)

    def _folder_dialog(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Add a folder of models")
        if folder:
            try:
                self.manager.library.add_folder(folder)
            except Exception as exc:  # noqa: BLE001
                self._status(str(exc), error=True)
                return
            self.refresh_library()

    def running_downloads(self) -> list[Any]:
        """The downloads that are queued or running now."""
        if self._manager is None:
            return []
        return [p for p in self._manager.queue.tasks() if p.state in ("queued", "downloading", "verifying")]

    def confirm_quit(self) -> bool:
        """Quitting during a download: ask (the download is paused and resumes next time)."""
        running = self.running_downloads()
        if not running:
            return True
        names = ", ".join(p.job.dest.name for p in running)
        return self.confirm("Quit during a download?",
                            f"{names} is still downloading. Quit anyway? The download is paused and can be "
                            "resumed next time.")

    def shutdown(self) -> None:
        """Pause running downloads (kept for next time) and wait for background work."""
        if self._manager is not None:
            self._manager.shutdown()
        self._pool.waitForDone(5000)
