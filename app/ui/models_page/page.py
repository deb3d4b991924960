"""The Models page: search Hugging Face, pick a GGUF (with a memory-fit badge), download it, and
manage the local library (metadata, Load, import, delete).

The page composes five panes, each in its own module: :class:`RecommendedPane` and
:class:`SearchPane` (the sources, as two tabs), :class:`DownloadsPane`, :class:`LibraryPane` and
:class:`MadePane` (the models made over the API).
The page owns what they share: the model manager, the background tasks, the status line, the
confirmation question and which model the chat uses now; the panes reach it through ``page``.

All network and disk work runs on a thread pool or on the download queue's own threads; results
reach the widgets through Qt signals (queued to the UI thread).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, cast

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QLabel,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QSplitter,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from app.ui.models_page.downloads import DownloadsPane
from app.ui.models_page.library import DELETE, LOAD, REMOVE, LibraryPane
from app.ui.models_page.made import MadePane
from app.ui.models_page.recommended import RecommendedPane
from app.ui.models_page.search import SearchPane
from app.ui.tasks import BackgroundTasks

__all__ = ["ModelsPage"]


class ModelsPage(QWidget):
    """Search, file list with fit badges, download queue, local library. Emits ``sig_load_requested(path)``."""

    sig_load_requested = Signal(str)
    sig_status = Signal(str)  # every message shown in the status line
    sig_search_done = Signal()
    sig_files_done = Signal()
    sig_card_shown = Signal(str)  # the repository whose model card is shown
    sig_library_done = Signal()
    sig_imported = Signal(str)  # the path of a model just imported (the window loads it when it has none: U4)
    sig_downloads = Signal(int, float)  # downloads running or queued, their overall fraction (<0: unknown)
    _sig_progress = Signal(object)
    _sig_finished = Signal(object)

    NAME_MIN_WIDTH = LibraryPane.NAME_MIN_WIDTH

    def __init__(self, manager: Any | None = None, parent: QWidget | None = None, *, n_ctx: int = 4096):
        super().__init__(parent)
        self.setObjectName("ModelsPage")
        self.tasks = BackgroundTasks(self, threads=2)
        self._scans = 0  # library scans asked for: only the latest one's result is shown
        self._manager = manager
        self.loaded_path: str | None = None  # the model the chat uses now ("Loaded" in the library)
        self.loading_path: str | None = None  # the model being loaded ("Loading…", not Load now)
        self.confirm: Callable[[str, str], bool] = self._confirm_dialog
        self._build(n_ctx)
        self._sig_progress.connect(self.downloads.on_progress)
        self._sig_finished.connect(self.downloads.on_finished)
        self.recommended.fill()
        _ = self.manager  # created now, on the UI thread (cheap: no network, one idle worker thread)
        self.background(self.manager.restore_interrupted, self.downloads.on_restored, self.library.on_failed)
        self.refresh_library()

    def _build(self, n_ctx: int) -> None:
        root = QVBoxLayout(self)
        self.sources = QTabWidget()  # where models come from: the recommended list, or a search
        self.sources.setObjectName("modelSources")
        self.recommended = RecommendedPane(self)
        self.search_pane = SearchPane(self, n_ctx)
        self.sources.addTab(self.recommended, "Recommended for tool calling")
        self.sources.addTab(self.search_pane, "Search Hugging Face")
        root.addWidget(self.sources, 3)
        self.status_label = QLabel("")
        self.status_label.setObjectName("modelsStatus")
        self.status_label.setWordWrap(True)
        root.addWidget(self.status_label)
        split = QSplitter(Qt.Orientation.Vertical)
        self.downloads = DownloadsPane(self)
        self.library = LibraryPane(self)
        self.made = MadePane(self)  # the models made over the API (shown while there are some)
        split.addWidget(self.downloads)
        split.addWidget(self.library)
        split.addWidget(self.made)
        split.setSizes([120, 300, 100])
        root.addWidget(split, 4)
        # the panes' widgets, by the names the window and the tests know
        s = self.search_pane
        self.search_edit, self.search_button, self.ctx_spin = s.search_edit, s.search_button, s.ctx_spin
        self.results_list, self.files_table, self.files_hint = s.results_list, s.files_table, s.files_hint
        self.card_view = s.card_view
        self.recommended_table = self.recommended.table
        self.downloads_table, self.clear_button = self.downloads.table, self.downloads.clear_button
        self._rows = self.downloads.rows  # the same dict: task id -> row of the downloads table
        self.library_table = self.library.table
        self.import_button, self.folder_button = self.library.import_button, self.library.folder_button
        self.refresh_button = self.library.refresh_button

    def showEvent(self, e: Any) -> None:  # noqa: N802 (Qt API)
        super().showEvent(e)
        self.made.refresh()  # a client may have made or deleted models over the API meanwhile

    # -- what the panes share ------------------------------------------------------------------
    @property
    def manager(self) -> Any:
        if self._manager is None:
            from app.engine.models.manager import ModelManager

            self._manager = ModelManager()
        if self._manager.queue.on_progress is None:
            self._manager.queue.on_progress = self._sig_progress.emit
            self._manager.queue.on_finished = self._sig_finished.emit
        return self._manager

    def background(
        self, fn: Callable[[], Any], ok: Callable[[Any], None], failed: Callable[[str], None]
    ) -> None:
        self.tasks.run(fn, ok, failed)

    @property
    def _calls(self) -> int:
        """Background look-ups still running (0 when the page is idle)."""
        return self.tasks.pending

    def show_status(self, text: str, error: bool = False) -> None:
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

    @property
    def _local(self) -> list[Any]:
        """The library as last scanned."""
        return self.library.models

    @property
    def recommended_row(self) -> int | None:
        """The search result file recommended for this machine."""
        return self.search_pane.recommended_row

    @property
    def card_repo(self) -> str | None:
        """The repository whose model card is shown."""
        return self.search_pane.card_repo

    def local_model_for(self, repo_id: str, filename: str) -> Any | None:
        """The library's model (or projector) downloaded from ``repo_id``/``filename`` (None if it has none)."""
        name = Path(filename).name
        for m in [*self.library.models, *self.library.projectors]:
            if m.usable and m.path.name == name and (not m.repo_id or m.repo_id == repo_id):
                return m
        return None

    def is_loaded(self, model: Any, *, loading: bool = False) -> bool:
        """Whether ``model`` is the one the chat uses now (``loading``: the one being loaded)."""
        path = self.loading_path if loading else self.loaded_path
        return path is not None and Path(path) == Path(model.path)

    def set_loaded_path(self, path: str | None, loading: str | None = None) -> None:
        """The model the chat uses now (its row says "Loaded") and the one being loaded, if any
        ("Loading…": a second click would only load it again)."""
        if (path, loading) == (self.loaded_path, self.loading_path):
            return
        self.loaded_path, self.loading_path = path, loading
        if self.library.models:
            self.library.show_models(self.library.models, quiet=True)
        self.models_changed()

    def models_changed(self) -> None:
        """The library changed: the recommended list and the files shown say Load now where they can."""
        self.recommended.fill()
        if self.search_pane.remote:
            self.search_pane.show_files()

    # -- downloads -------------------------------------------------------------------------------
    def download_bar(self, task_id: int) -> QProgressBar:
        return self.downloads.bar(task_id)

    def download_button(self, task_id: int, which: str) -> QPushButton:
        return self.downloads.button(task_id, which)

    def download_status(self, task_id: int) -> str:
        return self.downloads.status(task_id)

    def running_downloads(self) -> list[Any]:
        """The downloads that are queued, running or being verified now."""
        return self.downloads.running()

    def recommended_button(self, name: str) -> QPushButton:
        return self.recommended.button(name)

    # -- library ---------------------------------------------------------------------------------
    def refresh_library(self) -> None:
        lib = self.manager.library
        self._scans += 1
        scan = self._scans

        def show(result: Any) -> None:
            # two scans may run at once (two threads) and end in either order: an older one that
            # ends last would show the library as it was before the newer one (a model just added
            # missing from the list)
            if scan == self._scans:
                self.library.show_scan(result)

        self.background(lambda: (lib.scan(), lib.projectors()), show, self.library.on_failed)
        self.made.refresh()

    def _fit_library_columns(self) -> None:
        self.library.fit_columns()

    def library_row(self, name: str) -> int:
        return self.library.row(name)

    def load_button(self, row: int) -> QPushButton:
        return cast(QPushButton, self.library.button(row, LOAD))

    def delete_button(self, row: int) -> QPushButton:
        return cast(QPushButton, self.library.button(row, DELETE))

    def remove_button(self, row: int) -> QPushButton | None:
        return self.library.button(row, REMOVE)

    def projector_choice(self, row: int) -> Any:
        """The Projector combo box of library ``row``."""
        return self.library.projector_choice(row)

    def import_file(self, path: str | Path, *, copy: bool = False) -> None:
        self.library.import_file(path, copy=copy)

    # -- quitting --------------------------------------------------------------------------------
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
