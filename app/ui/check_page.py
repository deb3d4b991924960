"""The Check page: "Will it call?" in the window.

Pick a model file (in process, through Callisto's chat loop) or an OpenAI-compatible endpoint (through
Callisto's remote client, as ``check --endpoint``), run the check off the UI thread (scenario n of N,
category, elapsed, Stop), and read the matrix: one row per result (model and stack), one column per
category, each cell coloured by its pass ratio. A cell opens its scenarios (outcome, failure class,
message), a scenario its transcript and the forensics findings that explain its category. Results are
saved under the data folder (the Models page shows each model's last score); Export copies one with its
transcripts, Compare puts two side by side.
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from PySide6.QtCore import Qt, QThread, QTimer, Signal
from PySide6.QtGui import QBrush, QColor
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QHBoxLayout,
    QHeaderView,
    QLabel,
    QLineEdit,
    QProgressBar,
    QPushButton,
    QRadioButton,
    QSplitter,
    QTableWidget,
    QTableWidgetItem,
    QTextBrowser,
    QVBoxLayout,
    QWidget,
)

__all__ = ["CheckPage", "CheckRunner", "HostedTarget", "cell_colour"]

QUICK = "quick"


def cell_colour(ratio: float | None) -> QColor:
    """Red at 0, amber at one half, green at 1; grey where nothing ran."""
    if ratio is None:
        return QColor("#9e9e9e")
    red, amber, green = (0xD9, 0x53, 0x4F), (0xF0, 0xAD, 0x4E), (0x5C, 0xB8, 0x5C)
    a, b, t = (red, amber, ratio * 2) if ratio < 0.5 else (amber, green, (ratio - 0.5) * 2)
    return QColor(*(round(x + (y - x) * t) for x, y in zip(a, b, strict=True)))


class HostedTarget:
    """An in-process target whose every scenario runs as a job on the window's engine (``host``):
    the model is the engine's (loaded there if it is not), never a copy of the check's own, and
    the check's scenarios wait in the same queue as the window's turns and the server's requests."""

    kind = "in_process"

    def __init__(self, host: Any, path: str, settings: Any, **target: Any):
        from app.check.targets import InProcessTarget

        self.host, self.path, self.settings = host, path, settings
        model = host.call(lambda m: m, model=path, owner="check", settings=settings)
        self.inner = InProcessTarget(model, **target)

    def identity(self) -> dict[str, Any]:
        return self.inner.identity()

    def run(self, scenario: Any, *, cancel: threading.Event | None = None) -> Any:
        def job(model: Any) -> Any:
            self.inner.model = model  # the engine's current object for the file (it may have reloaded it)
            return self.inner.run(scenario, cancel=cancel)

        return self.host.call(job, model=self.path, owner="check", settings=self.settings)

    def stop(self) -> None:
        self.inner.stop()

    def close(self) -> None:
        """The model is the engine's: it stays loaded for whoever uses it next."""


class CheckRunner(QThread):
    """Runs one check on its own thread and reports by signals. With the window's engine
    (``host``) the model's scenarios run there; without one the model is loaded on this thread."""

    sig_progress = Signal(int, int, str, str)  # index (0-based), total, category, scenario id
    sig_scenario = Signal(object)  # a finished scenario's row
    sig_finished = Signal(object)  # the written result (with "_path")
    sig_failed = Signal(str)

    def __init__(self, spec: dict[str, Any], parent: Any = None, *, host: Any = None):
        super().__init__(parent)
        self.spec = spec
        self.host = host
        self._stop = threading.Event()
        self._target: Any = None

    def stop(self) -> None:
        self._stop.set()
        t = self._target
        if t is not None and hasattr(t, "stop"):
            t.stop()

    def _scenarios(self) -> tuple[Any, list[Any]]:
        from app.check.corpus import load_corpus

        corpus = load_corpus(self.spec.get("scenarios_dir"))
        which = self.spec.get("selection") or "all"
        if which == QUICK:
            return corpus, corpus.quick()
        if which == "all":
            return corpus, list(corpus.scenarios)
        return corpus, corpus.select([which])

    def run(self) -> None:  # noqa: D401 - QThread API
        from app.check.runner import run_check, write_result
        from app.check.scores import record_score, results_dir

        model = None
        try:
            corpus, scenarios = self._scenarios()
            spec = self.spec
            forensics: list[dict[str, Any]] = []
            if spec["kind"] == "endpoint":
                from app.check.remote_target import RemoteTarget
                from app.engine.remote import Provider

                # the remote client chat --endpoint and check --endpoint use; API tools by default
                provider = Provider(
                    spec["endpoint"], kind=spec.get("api") or "openai", api_key=spec.get("api_key") or None
                )
                self._target = RemoteTarget(
                    provider,
                    spec["model"],
                    parser=spec.get("parser") or "api",
                    max_tokens=spec.get("max_tokens", 256),
                    model_file=spec.get("model_file"),
                    stack_name=spec.get("stack"),
                )
                lint = spec.get("model_file")
            elif self.host is not None:
                from app.engine.llm import LoadSettings

                self._target = HostedTarget(
                    self.host,
                    spec["path"],
                    LoadSettings(n_ctx=spec.get("n_ctx", 4096)) if spec.get("n_ctx") else None,
                    tool_format=spec.get("tool_format", "auto"),
                    max_tokens=spec.get("max_tokens", 256),
                    grammar=spec.get("grammar"),
                )
                lint = spec["path"]
            else:
                from app.check.targets import InProcessTarget
                from app.engine.llm import load_model

                model = load_model(spec["path"], n_ctx=spec.get("n_ctx", 4096))
                self._target = InProcessTarget(
                    model,
                    tool_format=spec.get("tool_format", "auto"),
                    max_tokens=spec.get("max_tokens", 256),
                    grammar=spec.get("grammar"),
                )
                lint = spec["path"]
            if lint:
                try:
                    from app.check.forensics import lint_gguf

                    forensics = lint_gguf(lint)["findings"]
                except Exception:  # noqa: BLE001 - forensics never stops a check
                    forensics = []

            def progress(i: int, n: int, sc: Any, res: Any) -> None:
                if res is None:
                    self.sig_progress.emit(i, n, sc.category, sc.id)
                else:
                    self.sig_scenario.emit(res.to_dict("", ""))

            result = run_check(
                self._target,
                scenarios,
                corpus_sha256=corpus.sha256,
                corpus_dir=str(corpus.directory),
                progress=progress,
                stop=self._stop,
                forensics=forensics,
                settings={
                    "max_tokens": spec.get("max_tokens", 256),
                    "temperature": 0.0,
                    "seed": 0,
                    "selection": spec.get("selection") or "all",
                },
            )
            out = Path(spec.get("out_dir") or results_dir()) / f"{result['run_id']}.json"
            write_result(result, out)
            record_score(result, out)
            result["_path"] = str(out)
            self.sig_finished.emit(result)
        except Exception as exc:  # noqa: BLE001 - any failure is the run's, shown on the page
            self.sig_failed.emit(f"{type(exc).__name__}: {exc}")
        finally:
            if self._target is not None:
                self._target.close()
            if model is not None:
                model.close()


class CheckPage(QWidget):
    sig_run_finished = Signal(object)

    def __init__(
        self,
        *,
        model_path: Callable[[], str | None] | None = None,
        load_saved: bool = True,
        host: Any = None,
        parent: QWidget | None = None,
    ):
        from app.check.corpus import CATEGORIES

        super().__init__(parent)
        self.setObjectName("checkPage")
        self.categories = list(CATEGORIES)
        self._model_path = model_path or (lambda: None)
        self.host = host  # the window's engine: in-process checks run their scenarios on it
        self.results: list[dict[str, Any]] = []
        self.runner: CheckRunner | None = None
        self._started = 0.0
        self._progress_text = ""
        self._build()
        if load_saved:
            self.load_saved_results()

    # -- layout -------------------------------------------------------------------------------------
    def _build(self) -> None:
        from app.engine.formats import tool_format_choices

        root = QVBoxLayout(self)
        title = QLabel(
            "<b>Will it call?</b> A tool-calling check: single, parallel and streamed calls, multi-turn "
            "loops, tool_choice, no-call cases and reasoning, scored without a model judge."
        )
        title.setWordWrap(True)
        root.addWidget(title)

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

        split = QSplitter(Qt.Orientation.Vertical)
        self.matrix = QTableWidget(0, len(self.categories) + 1)
        self.matrix.setObjectName("checkMatrix")
        self.matrix.setHorizontalHeaderLabels([*self.categories, "all"])
        self.matrix.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.matrix.setSelectionMode(QAbstractItemView.SelectionMode.ExtendedSelection)
        self.matrix.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.matrix.horizontalHeader().setMinimumSectionSize(64)
        self.matrix.cellClicked.connect(self.open_cell)
        split.addWidget(self.matrix)
        lower = QSplitter()
        self.scenario_table = QTableWidget(0, 4)
        self.scenario_table.setObjectName("checkScenarios")
        self.scenario_table.setHorizontalHeaderLabels(["Scenario", "Outcome", "Failure class", "Why"])
        self.scenario_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.scenario_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.scenario_table.horizontalHeader().setStretchLastSection(True)
        self.scenario_table.cellClicked.connect(self.open_scenario)
        self.detail = QTextBrowser()
        self.detail.setObjectName("checkDetail")
        lower.addWidget(self.scenario_table)
        lower.addWidget(self.detail)
        lower.setSizes([420, 420])
        split.addWidget(lower)
        split.setSizes([180, 320])
        root.addWidget(split, 1)
        self._timer = QTimer(self)
        self._timer.setInterval(1000)
        self._timer.timeout.connect(self._tick)
        self._cell: tuple[int, str] | None = None
        self._rows_shown: list[dict[str, Any]] = []

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

    # -- the matrix ---------------------------------------------------------------------------------
    @staticmethod
    def row_label(result: dict[str, Any]) -> str:
        m, st = result.get("model") or {}, result.get("stack") or {}
        name = m.get("file_name") or m.get("name") or "?"
        fmt = m.get("tool_format")
        return f"{name} · {st.get('name', '?')}" + (f" ({fmt})" if fmt else "")

    def add_result(self, result: dict[str, Any]) -> int:
        self.results.append(result)
        r = self.matrix.rowCount()
        self.matrix.insertRow(r)
        self.matrix.setVerticalHeaderItem(r, QTableWidgetItem(self.row_label(result)))
        by_cat = result["summary"]["by_category"]
        for c, cat in enumerate([*self.categories, "all"]):
            if cat == "all":
                s = result["summary"]
                passed, total = s["passed"], s["total"]
            else:
                passed, total = (by_cat[cat]["passed"], by_cat[cat]["total"]) if cat in by_cat else (0, 0)
            ratio = passed / total if total else None
            item = QTableWidgetItem(f"{passed}/{total}" if total else "–")
            item.setBackground(QBrush(cell_colour(ratio)))
            item.setForeground(QBrush(QColor("#111111")))
            item.setToolTip(
                f"{cat}: {passed} of {total} passed — click to see the scenarios"
                if total
                else f"{cat}: not run"
            )
            self.matrix.setItem(r, c, item)
        self.matrix.resizeRowsToContents()
        return r

    def cell_ratio(self, row: int, category: str) -> float | None:
        s = self.results[row]["summary"]
        if category == "all":
            return s["score"] if s["total"] else None
        c = s["by_category"].get(category)
        return None if not c else c["passed"] / c["total"]

    def open_cell(self, row: int, col: int) -> None:
        """Show the scenarios of one cell (a category of one result, or every scenario of the row)."""
        cat = ([*self.categories, "all"])[col]
        result = self.results[row]
        rows = [x for x in result["results"] if cat == "all" or x["category"] == cat]
        self._cell = (row, cat)
        self._rows_shown = rows
        t = self.scenario_table
        t.setColumnCount(4)
        t.setHorizontalHeaderLabels(["Scenario", "Outcome", "Failure class", "Why"])
        t.setRowCount(len(rows))
        for i, x in enumerate(rows):
            cells = [x["id"], x["outcome"], x["failure_class"] or "", x.get("message", "")]
            for j, text in enumerate(cells):
                item = QTableWidgetItem(text)
                if j == 1:
                    item.setBackground(QBrush(cell_colour(1.0 if x["outcome"] == "pass" else 0.0)))
                    item.setForeground(QBrush(QColor("#111111")))
                t.setItem(i, j, item)
        t.resizeColumnsToContents()
        findings = self.findings_for(result, cat)
        lines = [
            f"<h3>{self.row_label(result)} — {cat}</h3>",
            f"<p>{sum(x['outcome'] == 'pass' for x in rows)} of {len(rows)} passed. "
            "Click a scenario for its transcript.</p>",
        ]
        lines += self._findings_html(findings)
        self.detail.setHtml("\n".join(lines))
        if rows:
            failing = next((i for i, x in enumerate(rows) if x["outcome"] != "pass"), None)
            if failing is not None:
                t.selectRow(failing)

    @staticmethod
    def findings_for(result: dict[str, Any], category: str) -> list[dict[str, Any]]:
        return [
            f
            for f in result.get("forensics") or []
            if category == "all" or category in (f.get("categories") or [])
        ]

    @staticmethod
    def _findings_html(findings: list[dict[str, Any]]) -> list[str]:
        import html

        if not findings:
            return ["<p><i>No template finding explains this cell.</i></p>"]
        out = ["<p><b>Template forensics behind this cell</b></p><ul>"]
        for f in findings:
            where = f" (line {f['line']})" if f.get("line") else ""
            out.append(
                f"<li><b>[{f['severity']}] {html.escape(f['id'])}</b>{where}: {html.escape(f['title'])}. "
                f"{html.escape(f['explanation'])}<br><i>Callisto:</i> {html.escape(f['callisto'])}</li>"
            )
        out.append("</ul>")
        return out

    def open_scenario(self, i: int, _col: int = 0) -> None:
        """Show one scenario's failure, its transcript (checked against its sha256) and the findings."""
        import html

        from app.check.runner import read_transcript

        if self._cell is None or i >= len(self._rows_shown):
            return
        row, cat = self._cell
        result = self.results[row]
        x = self._rows_shown[i]
        transcript, intact = read_transcript(result, x) if result.get("_path") else (None, False)
        parts = [
            f"<h3>{html.escape(x['id'])}: {x['outcome']}"
            + (f" — {x['failure_class']}" if x["failure_class"] else "")
            + "</h3>"
        ]
        if x.get("message"):
            parts.append(f"<p>{html.escape(x['message'])}</p>")
        if x.get("detail"):
            parts.append(
                "<pre>" + html.escape(json.dumps(x["detail"], ensure_ascii=False, indent=1)[:4000]) + "</pre>"
            )
        parts += self._findings_html(self.findings_for(result, x["category"]))
        if transcript is None:
            parts.append("<p><i>The transcript file is missing.</i></p>")
        else:
            if not intact:
                parts.append(
                    "<p><b>The transcript was edited: its sha256 no longer matches the result.</b></p>"
                )
            parts.append(
                "<p><b>Transcript</b> (sha256 "
                + x["transcript_sha256"][:16]
                + "…)</p><pre>"
                + html.escape(json.dumps(transcript, ensure_ascii=False, indent=1)[:20000])
                + "</pre>"
            )
        self.detail.setHtml("\n".join(parts))

    # -- files and comparison -------------------------------------------------------------------------
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
        result = self.results[row]
        src = Path(result["_path"])
        dest = Path(path)
        dest.parent.mkdir(parents=True, exist_ok=True)
        data = {k: v for k, v in result.items() if not k.startswith("_")}
        folder = dest.with_name(dest.stem + ".transcripts")
        src_folder = src.parent / result.get("transcripts_dir", src.stem + ".transcripts")
        if src_folder.is_dir():
            shutil.copytree(src_folder, folder, dirs_exist_ok=True)
        data["transcripts_dir"] = folder.name
        dest.write_text(json.dumps(data, ensure_ascii=False, indent=1), encoding="utf-8")
        return dest

    def _export_dialog(self) -> None:
        rows = sorted({i.row() for i in self.matrix.selectedIndexes()}) or (
            [self.matrix.rowCount() - 1] if self.matrix.rowCount() else []
        )
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
        rows = sorted({i.row() for i in self.matrix.selectedIndexes()})
        if len(rows) != 2:
            self.status.setText("Select two rows of the matrix to compare them.")
            return False
        self.compare(rows[0], rows[1])
        return True

    def compare(self, a: int, b: int) -> int:
        """Side by side, scenario by scenario; returns how many scenarios differ."""
        ra, rb = self.results[a], self.results[b]
        ma = {x["id"]: x for x in ra["results"]}
        mb = {x["id"]: x for x in rb["results"]}
        ids = [x["id"] for x in ra["results"]] + [i for i in mb if i not in ma]
        t = self.scenario_table
        t.setColumnCount(3)
        t.setHorizontalHeaderLabels(["Scenario", self.row_label(ra), self.row_label(rb)])
        t.setRowCount(len(ids))
        differ = 0
        for i, sid in enumerate(ids):
            t.setItem(i, 0, QTableWidgetItem(sid))
            outs = []
            for j, m in ((1, ma), (2, mb)):
                x = m.get(sid)
                text = (
                    "—"
                    if x is None
                    else (x["outcome"] + (f" ({x['failure_class']})" if x["failure_class"] else ""))
                )
                item = QTableWidgetItem(text)
                if x is not None:
                    item.setBackground(QBrush(cell_colour(1.0 if x["outcome"] == "pass" else 0.0)))
                    item.setForeground(QBrush(QColor("#111111")))
                t.setItem(i, j, item)
                outs.append(None if x is None else x["outcome"])
            if outs[0] != outs[1]:
                differ += 1
                t.item(i, 0).setText(f"≠ {sid}")
        t.resizeColumnsToContents()
        self._cell = None
        self.detail.setHtml(
            f"<h3>Comparison</h3><p>{differ} of {len(ids)} scenarios differ between "
            f"<b>{self.row_label(ra)}</b> ({ra['summary']['passed']}/{ra['summary']['total']}) and "
            f"<b>{self.row_label(rb)}</b> ({rb['summary']['passed']}/{rb['summary']['total']}).</p>"
        )
        return differ
