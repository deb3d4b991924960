"""The Check page: "Will it call?" in the window.

Pick a model file (in process, through Callisto's chat loop) or an OpenAI-compatible endpoint (through
Callisto's remote client, as ``check --endpoint``), run the check off the UI thread (scenario n of N,
category, elapsed, Stop), and read the matrix: one row per result (model and stack), one column per
category, each cell coloured by its pass ratio. A cell opens its scenarios (outcome, failure class,
message), a scenario its transcript and the forensics findings that explain its category. Results are
saved under the data folder (the Models page shows each model's last score); Export copies one with its
transcripts, Compare puts two side by side.

The page is the form and the run; the run itself is :class:`~app.ui.check_page.runner.CheckRunner`
and the matrix with its details is :class:`~app.ui.check_page.results.ResultsView`.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import QTimer, Signal
from PySide6.QtWidgets import (
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QRadioButton,
    QVBoxLayout,
    QWidget,
)

from app.ui.check_page.results import ResultsView, findings_for, row_label
from app.ui.check_page.runner import QUICK, CheckRunner
from app.ui.labels import wrapped_label

__all__ = ["CheckPage"]


class CheckPage(QWidget):
    sig_run_finished = Signal(object)

    def __init__(
        self,
        *,
        model_path: Callable[[], str | None] | None = None,
        load_saved: bool = True,
        host: Any = None,
        chat_format: Callable[[], str] | None = None,
        parent: QWidget | None = None,
    ):
        """``chat_format``: the chat's tool format (the setting), which the format box shows until
        the person picks another on this page (U20)."""
        from app.check.corpus import CATEGORIES

        super().__init__(parent)
        self.setObjectName("checkPage")
        self.categories = list(CATEGORIES)
        self._model_path = model_path or (lambda: None)
        self.host = host  # the window's engine: in-process checks run their scenarios on it
        self.runner: CheckRunner | None = None
        self._started = 0.0
        self._progress_text = ""
        self._chat_format = chat_format
        self._format_picked = False  # the person chose a format here: it no longer follows the chat's
        self._build()
        self.follow_chat_format()
        if load_saved:
            self.load_saved_results()

    def follow_chat_format(self) -> None:
        """Show the chat's tool format (unless the person picked one on this page)."""
        if self._chat_format is None or self._format_picked:
            return
        i = self.format_combo.findData(self._chat_format())
        if i >= 0:
            self.format_combo.setCurrentIndex(i)

    def _on_format_picked(self, _index: int) -> None:
        self._format_picked = True

    def showEvent(self, event: Any) -> None:  # noqa: N802 - Qt's name
        self.follow_chat_format()
        super().showEvent(event)

    # -- layout -------------------------------------------------------------------------------------
    def _build(self) -> None:
        from app.engine.formats import tool_format_choices

        root = QVBoxLayout(self)
        root.addWidget(
            wrapped_label(
                "<b>Will it call?</b> A tool-calling check: single, parallel and streamed calls, multi-turn "
                "loops, tool_choice, no-call cases and reasoning, scored without a model judge."
            )
        )

        form = QFormLayout()
        src = QHBoxLayout()
        self.radio_model = QRadioButton("Model file")
        self.radio_endpoint = QRadioButton("Endpoint")
        self.radio_model.setChecked(True)
        src.addWidget(self.radio_model)
        src.addWidget(self.radio_endpoint)
        src.addStretch(1)
        form.addRow("Target", src)
        row = QHBoxLayout()
        self.model_edit = QLineEdit(self._model_path() or "")
        self.model_edit.setPlaceholderText("path of a .gguf file")
        browse = QPushButton("Browse…")
        browse.clicked.connect(self._browse_model)
        row.addWidget(self.model_edit, 1)
        row.addWidget(browse)
        self.format_combo = QComboBox()
        for value, label in tool_format_choices():
            self.format_combo.addItem(label, value)
        self.format_combo.activated.connect(self._on_format_picked)
        self.format_combo.setToolTip(
            "The tool-call format to check with; the chat's format until you pick another"
        )
        row.addWidget(self.format_combo)
        form.addRow("Model", row)
        ep = QHBoxLayout()
        self.endpoint_edit = QLineEdit()
        self.endpoint_edit.setPlaceholderText("http://127.0.0.1:8080/v1")
        self.endpoint_model_edit = QLineEdit()
        self.endpoint_model_edit.setPlaceholderText("model name")
        self.api_key_edit = QLineEdit()
        self.api_key_edit.setPlaceholderText("API key (optional)")
        self.api_key_edit.setEchoMode(QLineEdit.EchoMode.Password)
        for w in (self.endpoint_edit, self.endpoint_model_edit, self.api_key_edit):
            ep.addWidget(w, 1)
        form.addRow("Endpoint", ep)
        self.selection_combo = QComboBox()
        self.selection_combo.addItem("Every scenario", "all")
        self.selection_combo.addItem("Quick: one scenario per category", QUICK)
        for c in self.categories:
            self.selection_combo.addItem(f"Only {c}", c)
        form.addRow("Scenarios", self.selection_combo)
        root.addLayout(form)

        bar = QHBoxLayout()
        self.run_button = QPushButton("Run check")
        self.run_button.clicked.connect(self.start)
        self.stop_button = QPushButton("Stop")
        self.stop_button.setEnabled(False)
        self.stop_button.clicked.connect(self.stop)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.status = QLabel("")
        self.status.setObjectName("checkStatus")
        bar.addWidget(self.run_button)
        bar.addWidget(self.stop_button)
        bar.addWidget(self.progress, 1)
        root.addLayout(bar)
        root.addWidget(self.status)

        tools = QHBoxLayout()
        self.open_button = QPushButton("Open result…")
        self.open_button.clicked.connect(self._open_dialog)
        self.export_button = QPushButton("Export…")
        self.export_button.clicked.connect(self._export_dialog)
        self.compare_button = QPushButton("Compare two")
        self.compare_button.setToolTip("Select two rows of the matrix to compare them scenario by scenario")
        self.compare_button.clicked.connect(self.compare_selected)
        for b in (self.open_button, self.export_button, self.compare_button):
            tools.addWidget(b)
        tools.addStretch(1)
        root.addLayout(tools)

        self.view = ResultsView(self.categories)
        root.addWidget(self.view, 1)
        self.matrix, self.scenario_table, self.detail = (
            self.view.matrix,
            self.view.scenario_table,
            self.view.detail,
        )
        self.results = self.view.results  # the same list
        self._timer = QTimer(self)
        self._timer.setInterval(1000)
        self._timer.timeout.connect(self._tick)

    # -- running ------------------------------------------------------------------------------------
    def _browse_model(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Model to check", "", "GGUF models (*.gguf)")
        if path:
            self.model_edit.setText(path)
            self.radio_model.setChecked(True)

    def spec(self) -> dict[str, Any]:
        selection = self.selection_combo.currentData()
        if self.radio_endpoint.isChecked():
            return {
                "kind": "endpoint",
                "endpoint": self.endpoint_edit.text().strip(),
                "model": self.endpoint_model_edit.text().strip(),
                "api_key": self.api_key_edit.text(),
                "selection": selection,
            }
        return {
            "kind": "in_process",
            "path": self.model_edit.text().strip(),
            "tool_format": self.format_combo.currentData(),
            "selection": selection,
        }

    def start(self, spec: dict[str, Any] | None = None) -> bool:
        """Start a run (``spec`` as :meth:`spec` gives, plus optional max_tokens/out_dir); False when the
        form is incomplete or a run is going."""
        if self.runner is not None:
            return False
        if isinstance(spec, dict):
            spec = dict(spec)
            self._show_spec(spec)
        else:
            spec = self.spec()
        if spec["kind"] == "endpoint" and not (spec.get("endpoint") and spec.get("model")):
            self.status.setText("Give the endpoint's URL and the model name.")
            return False
        if spec["kind"] == "in_process" and not Path(spec.get("path") or "").is_file():
            self.status.setText("Choose a .gguf model file to check.")
            return False
        self.runner = CheckRunner(spec, self, host=self.host)
        self.runner.sig_progress.connect(self._on_progress)
        self.runner.sig_finished.connect(self._on_finished)
        self.runner.sig_failed.connect(self._on_failed)
        self.runner.finished.connect(self._on_thread_done)
        self.run_button.setEnabled(False)
        self.stop_button.setEnabled(True)
        self.progress.setRange(0, 0)
        self._started = time.monotonic()
        self._progress_text = "Starting (loading the model)…" if spec["kind"] == "in_process" else "Starting…"
        self._tick()
        self._timer.start()
        self.runner.start()
        return True

    def _show_spec(self, spec: dict[str, Any]) -> None:
        """Let the form show what a programmatic run checks."""
        endpoint = spec.get("kind") == "endpoint"
        (self.radio_endpoint if endpoint else self.radio_model).setChecked(True)
        if endpoint:
            self.endpoint_edit.setText(spec.get("endpoint") or "")
            self.endpoint_model_edit.setText(spec.get("model") or "")
        else:
            self.model_edit.setText(spec.get("path") or "")
            i = self.format_combo.findData(spec.get("tool_format", "auto"))
            if i >= 0:
                self.format_combo.setCurrentIndex(i)
        i = self.selection_combo.findData(spec.get("selection") or "all")
        if i >= 0:
            self.selection_combo.setCurrentIndex(i)

    def stop(self) -> None:
        if self.runner is not None:
            self.runner.stop()
            self._progress_text = "Stopping after this scenario…"
            self._tick()

    @property
    def running(self) -> bool:
        return self.runner is not None

    def _elapsed(self) -> str:
        s = int(time.monotonic() - self._started)
        return f"{s // 60}:{s % 60:02d}"

    def _tick(self) -> None:
        self.status.setText(f"{self._progress_text} · {self._elapsed()} elapsed")

    def _on_progress(self, i: int, n: int, category: str, sid: str) -> None:
        self.progress.setRange(0, n)
        self.progress.setValue(i)
        self._progress_text = f"Scenario {i + 1} of {n} · {category} · {sid}"
        self._tick()

    def _on_finished(self, result: dict[str, Any]) -> None:
        s = result["summary"]
        self.progress.setRange(0, max(1, s["total"]))
        self.progress.setValue(s["total"])
        done = "" if result.get("complete", True) else " (stopped early)"
        self._progress_text = f"Done{done}: {s['passed']} of {s['total']} passed ({s['score']:.0%})"
        self.add_result(result)
        self.sig_run_finished.emit(result)

    def _on_failed(self, message: str) -> None:
        self._progress_text = f"The check failed: {message}"

    def _on_thread_done(self) -> None:
        self._timer.stop()
        self._tick()
        self.status.setText(self._progress_text)
        self.runner = None
        self.run_button.setEnabled(True)
        self.stop_button.setEnabled(False)
        if self.progress.maximum() == 0:
            self.progress.setRange(0, 1)

    # -- the results -------------------------------------------------------------------------------
    row_label = staticmethod(row_label)
    findings_for = staticmethod(findings_for)

    def add_result(self, result: dict[str, Any]) -> int:
        return self.view.add_result(result)

    def cell_ratio(self, row: int, category: str) -> float | None:
        return self.view.cell_ratio(row, category)

    def open_cell(self, row: int, col: int) -> None:
        self.view.open_cell(row, col)

    def open_scenario(self, i: int, _col: int = 0) -> None:
        self.view.open_scenario(i, _col)

    def load_saved_results(self) -> None:
        from app.check.runner import load_result
        from app.check.scores import saved_results

        for p in saved_results():
            try:
                self.add_result(load_result(p))
            except ValueError:
                continue

    def open_result(self, path: str | Path) -> int | None:
        from app.check.runner import load_result

        try:
            result = load_result(path)
        except ValueError as exc:
            self.status.setText(str(exc))
            return None
        return self.add_result(result)

    def _open_dialog(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open a check result", "", "Check results (*.json)")
        if path:
            self.open_result(path)

    def export_result(self, row: int, path: str | Path) -> Path:
        """Copy a result file and its transcripts folder to ``path``."""
        return self.view.export_result(row, path)

    def _export_dialog(self) -> None:
        rows = self.view.selected_rows() or ([self.matrix.rowCount() - 1] if self.matrix.rowCount() else [])
        if not rows:
            self.status.setText("There is no result to export yet.")
            return
        path, _ = QFileDialog.getSaveFileName(
            self, "Export the check result", "check-result.json", "Check results (*.json)"
        )
        if path:
            self.export_result(rows[0], path)
            self.status.setText(f"Exported to {path}")

    def compare_selected(self) -> bool:
        rows = self.view.selected_rows()
        if len(rows) != 2:
            self.status.setText("Select two rows of the matrix to compare them.")
            return False
        self.compare(rows[0], rows[1])
        return True

    def compare(self, a: int, b: int) -> int:
        """Side by side, scenario by scenario; returns how many scenarios differ."""
        return self.view.compare(a, b)
