"""The Models page's Downloads pane: one row per download (progress bar, speed and time left or
its state, Pause/Resume, Cancel), fed by the download queue's progress reports."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from PySide6.QtWidgets import (
    QHeaderView,
    QProgressBar,
    QPushButton,
    QTableWidgetItem,
    QWidget,
)

from app.ui.models_page._pane import pane_table
from app.units import format_bytes

if TYPE_CHECKING:
    from app.ui.models_page.page import ModelsPage

__all__ = ["DownloadsPane", "format_eta"]

RUNNING = ("queued", "downloading", "verifying")


def format_eta(s: float | None) -> str:
    """Time left as ``4m05s`` or ``1h02m``; "" when unknown."""
    if s is None:
        return ""
    s = int(s)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def _progress_text(p: Any) -> str:
    if p.state == "downloading":
        text = f"{format_bytes(p.speed_bps)}/s"
        if p.eta_s:
            text += f", {format_eta(p.eta_s)} left"
        if p.attempt:
            text += f" (retry {p.attempt})"
        return text
    if p.state == "failed":
        return f"failed: {p.error}"
    return str(p.state)


class DownloadsPane(QWidget):
    """The download queue as a table; emits the page's ``sig_downloads`` on every change."""

    def __init__(self, page: ModelsPage) -> None:
        super().__init__()
        self.page = page
        self.rows: dict[int, int] = {}  # task id -> table row
        self.progress: dict[int, Any] = {}  # task id -> its latest DownloadProgress
        self.clear_button = QPushButton("Clear finished")
        self.clear_button.clicked.connect(self.clear_finished)
        self.table = pane_table(
            self, "Downloads", [self.clear_button], ["File", "Progress", "Status", "", ""]
        )
        self.table.horizontalHeader().setSectionResizeMode(1, QHeaderView.ResizeMode.Fixed)
        self.table.setColumnWidth(1, 260)

    def enqueue(self, remote: Any) -> None:
        """Queue ``remote`` (asking first when it is too large for this machine)."""
        from app.engine.models.estimate import estimate_remote

        page = self.page
        from app.ui.models_page.search import kv_type_setting

        est = estimate_remote(
            remote.size, remote.quantization, page.ctx_spin.value(), kv_type=kv_type_setting()
        )
        if est.fit == "too large" and not page.confirm(
            "Download a model that is too large?",
            f"{remote.name} ({format_bytes(remote.size)}) needs about {format_bytes(est.total_bytes)} of "
            "memory, more than this computer has. It would download but not load. Download anyway?",
        ):
            return
        try:
            queued = page.manager.download(remote)
        except Exception as exc:  # noqa: BLE001
            page.show_status(str(exc), error=True)
            return
        proj = queued.projector_path.name if queued.projector_task_ids and queued.projector_path else None
        if queued.reused is not None:
            page.show_status(
                f"{remote.name} is already in the Hugging Face cache: added to the library without downloading"
                + (f"; downloading its projector {proj}." if proj else ".")
            )
            page.refresh_library()
            return
        with_proj = f" with its projector {proj}" if proj else ""
        page.show_status(f"Queued {remote.name}{with_proj}.")

    def on_restored(self, task_ids: list[int]) -> None:
        """Downloads left unfinished last time: shown paused, ready to resume."""
        for tid in task_ids:
            self.on_progress(self.page.manager.queue.get(tid))
        if task_ids:
            self.page.show_status(
                f"{len(task_ids)} unfinished download(s) from last time: press Resume to continue."
            )

    def _row(self, progress: Any) -> int:
        row = self.rows.get(progress.task_id)
        if row is not None:
            return row
        row = self.table.rowCount()
        self.table.insertRow(row)
        self.rows[progress.task_id] = row
        self.table.setItem(row, 0, QTableWidgetItem(progress.job.dest.name))
        bar = QProgressBar()
        bar.setRange(0, 1000)
        self.table.setCellWidget(row, 1, bar)
        self.table.setItem(row, 2, QTableWidgetItem(""))
        pause = QPushButton("Pause")
        pause.clicked.connect(lambda _c=False, t=progress.task_id: self._toggle_pause(t))
        cancel = QPushButton("Cancel")
        cancel.clicked.connect(lambda _c=False, t=progress.task_id: self.page.manager.queue.cancel(t))
        self.table.setCellWidget(row, 3, pause)
        self.table.setCellWidget(row, 4, cancel)
        return row

    def _item(self, row: int) -> QTableWidgetItem:
        """The Status cell of ``row`` (set when the row was made)."""
        return cast(QTableWidgetItem, self.table.item(row, 2))

    def _toggle_pause(self, task_id: int) -> None:
        q = self.page.manager.queue
        state = q.get(task_id).state
        if state in ("paused", "failed"):
            q.resume(task_id)
        else:
            q.pause(task_id)

    def bar(self, task_id: int) -> QProgressBar:
        return cast(QProgressBar, self.table.cellWidget(self.rows[task_id], 1))

    def button(self, task_id: int, which: str) -> QPushButton:
        return cast(QPushButton, self.table.cellWidget(self.rows[task_id], 3 if which == "pause" else 4))

    def status(self, task_id: int) -> str:
        return self._item(self.rows[task_id]).text()

    def on_progress(self, p: Any) -> None:
        self.progress[p.task_id] = p
        self._emit_downloads()
        row = self._row(p)
        bar = cast(QProgressBar, self.table.cellWidget(row, 1))
        frac = p.fraction
        if frac is not None:
            bar.setValue(int(frac * 1000))
        bar.setFormat(f"{format_bytes(p.downloaded)} / {format_bytes(p.total)}")
        text = _progress_text(p)
        item = self._item(row)
        item.setText(text)
        item.setToolTip(text)
        pause = cast(QPushButton, self.table.cellWidget(row, 3))
        pause.setText("Resume" if p.state in ("paused", "failed") else "Pause")
        active = p.state not in ("done", "cancelled")
        pause.setEnabled(active and (p.state != "failed" or p.resumable))
        cast(QPushButton, self.table.cellWidget(row, 4)).setEnabled(active)

    def on_finished(self, p: Any) -> None:
        self.on_progress(p)
        if p.state == "done":
            self.page.show_status(f"Downloaded and verified {p.job.dest.name}.")
            self.page.refresh_library()
        elif p.state == "failed":
            self.page.show_status(p.error or "The download failed.", error=True)

    def running(self) -> list[Any]:
        """The downloads that are queued, running or being verified now."""
        return [p for p in self.progress.values() if p.state in RUNNING]

    def _emit_downloads(self) -> None:
        running = self.running()
        total = sum(p.total or 0 for p in running)
        done = sum(p.downloaded or 0 for p in running)
        self.page.sig_downloads.emit(len(running), done / total if total else -1.0)

    def clear_finished(self) -> None:
        """Drop the finished and cancelled rows from the table."""
        keep = [p for _tid, p in sorted(self.progress.items()) if p.state not in ("done", "cancelled")]
        self.table.setRowCount(0)
        self.rows.clear()  # the same dicts (the page shows them): emptied, never replaced
        self.progress.clear()
        for p in keep:
            self.on_progress(p)
        self.page.show_status("")
